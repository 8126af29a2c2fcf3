#include "ir/OpInfo.h"

#include "ir/Type.h"

namespace tsl {

/// Whether \p t satisfies a rule that applies to one operand.
static bool satisfies(DTypeRule rule, DType t) {
  switch (rule) {
  case DTypeRule::Any:
    return true;
  case DTypeRule::Numeric:
    return t != DType::Bool;
  case DTypeRule::Float:
    return isFloat(t);
  case DTypeRule::Bool:
    return t == DType::Bool;
  case DTypeRule::NotFloat:
    return !isFloat(t);
  default:
    return false;
  }
}

bool acceptsDType(OpCode c, size_t operand, DType t) {
  const OpTraits &traits = opTraits(c);
  if (traits.maxOperands >= 0 &&
      operand >= static_cast<size_t>(traits.maxOperands))
    return false;
  switch (traits.operands) {
  case DTypeRule::None:
    return false;
  case DTypeRule::CondThenAny:
    return operand == 0 ? t == DType::Bool : true;
  case DTypeRule::AnyThenBool:
    return operand == 1 ? t == DType::Bool : true;
  case DTypeRule::AnyThenInteger:
    return operand == 1 ? isInteger(t) : true;
  default:
    return satisfies(traits.operands, t);
  }
}

} // namespace tsl
