// Loop-invariant ops moved before their loop (HoistInvariantOps.h).
#include "ir/HoistInvariantOps.h"
#include "ir/LoopHoisting.h"
#include "ir/OpInfo.h"

#include <memory>
#include <set>

namespace tsl {
namespace {

/// Whether \p op, in the body of the loop op at index \p loopAt, computes
/// the same value in every iteration (its operands defined before the loop
/// or \p hoisted, its sizes known before the loop).
bool isInvariant(const Function &fn, const Operation &op, size_t loopAt,
                 const std::vector<size_t> &definedAt,
                 const std::set<ValueId> &hoisted,
                 const std::map<std::string, size_t> &first) {
  for (ValueId o : op.operands)
    if (definedAt[o] > loopAt && !hoisted.count(o))
      return false;
  for (const auto &[name, attr] : op.attrs)
    if (!knownBefore(attrSymbols(attr), loopAt, first))
      return false;
  for (ValueId r : op.results)
    for (const SymExpr &d : fn.type(r).dims)
      if (!knownBefore(d.symbols(), loopAt, first))
        return false;
  return true;
}

/// The rule of one round: what isInvariant says, for ops that bind no
/// sizes, and for ops that may fail only in loops that run.
HoistRule invariantOpsRule(const Function &fn, const ShapeEnv *env) {
  // 1 + the index of the op defining each value, 0 for parameters: a
  // value is defined before op i when this is at most i.
  std::vector<size_t> definedAt(fn.values.size(), 0);
  for (size_t i = 0; i < fn.ops.size(); ++i)
    for (ValueId r : fn.ops[i].results)
      definedAt[r] = i + 1;
  auto hoisted = std::make_shared<std::set<ValueId>>(); // this round's
  return [&fn, env, definedAt, hoisted, first = firstMentions(fn)](
             size_t i, size_t loopAt) -> std::optional<Operation> {
    const Operation &op = fn.ops[i];
    if (op.code == OpCode::Assert || bindsSizes(op.code) ||
        !isInvariant(fn, op, loopAt, definedAt, *hoisted, first))
      return std::nullopt;
    if (mayFail(op.code)) {
      const Operation &loop = fn.ops[loopAt];
      if (!env || env->prove(SymCond::lt(loop.exprAttr("lo"),
                                         loop.exprAttr("hi"))) != Truth::True)
        return std::nullopt;
    }
    hoisted->insert(op.results.begin(), op.results.end());
    return op;
  };
}

} // namespace

size_t hoistLoopInvariantOps(Function &fn, const ShapeEnv *env) {
  return hoistOutOfLoops(
      fn, [env](const Function &f) { return invariantOpsRule(f, env); });
}

} // namespace tsl
