#pragma once
/// \file The op table (ir/Ops.def) as constexpr data: for every op what its
/// users would otherwise re-derive with a switch on OpCode — its category
/// (which shape-rule family and lowering it takes), the element types its
/// operands accept and its result has, its effects, the builtin that
/// spells it and how it differentiates. Deliberately light (standard headers
/// only), so passes, backends and the frontend can include it anywhere.
///
/// The attribute specs and docs of each op are in Function.h (OpInfo), which
/// includes this header.

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace tsl {

enum class DType : uint8_t; // ir/Type.h

/// Every op of the op table, in table order.
enum class OpCode : uint16_t {
#define TSL_OP(Id, ...) Id,
#include "ir/Ops.def"
};

/// What kind of computation an op is. Shape rules are chosen by category,
/// and a category says which ops a consumer's loop may recompute (fusion).
enum class OpCategory : uint8_t {
  /// One operand; result element i comes from operand element i (neg, exp,
  /// ..., cast).
  ElementwiseUnary,
  /// Two operands of one element type, broadcast NumPy-style (add, lt, and).
  ElementwiseBinary,
  /// where(c, a, b): three operands broadcast together.
  ElementwiseSelect,
  /// A 0-d value without operands (constant, sym_scalar).
  Scalar,
  /// A tensor without operands, sized by its attributes (full, arange).
  Creation,
  /// Reduces axes of one operand (reduce_sum, ..., argmax, argmin).
  Reduction,
  /// Matrix product with batch broadcasting.
  Matmul,
  /// Moves or copies elements without arithmetic (reshape, permute, expand,
  /// concat, slice, pad).
  Layout,
  /// Computed by a library kernel with its own shape rule (conv2d,
  /// max_pool2d, index_select, topk).
  Library,
  /// Result sizes depend on operand values (nonzero, masked_select, unique,
  /// item).
  DataDependent,
  /// Delimits a loop body (loop, end_loop): results have their operands'
  /// types.
  Control,
  /// Runs an outlined function (call): results have its result types.
  Call,
  /// A runtime assertion on sizes (assert).
  Check,
};

/// The element types an op's operands accept (see acceptsDType).
enum class DTypeRule : uint8_t {
  None,           ///< the op has no operands
  Any,            ///< every element type
  Numeric,        ///< every type but bool
  Float,          ///< f16, bf16, f32, f64
  Bool,           ///< bool only
  NotFloat,       ///< bool or an integer type
  CondThenAny,    ///< operand 0 bool, the others any type (where)
  AnyThenBool,    ///< operand 1 bool, the others any type (masked_select)
  AnyThenInteger, ///< operand 1 an integer type, the others any type
};

/// The element type of an op's result(s).
enum class ResultDType : uint8_t {
  None,         ///< the op has no results
  SameAsData,   ///< the data operands' type (operand 0; where: operand 1)
  Bool,         ///< bool (comparisons)
  I64,          ///< i64 (indices)
  FromAttr,     ///< the op's `dtype` attribute
  ValuesAndI64, ///< result 0 as the operand, result 1 i64 (topk)
  PerOperand,   ///< one result per operand, of its type (loop, end_loop)
  FromCallee,   ///< the callee's result types (call)
};

/// What an op does besides computing its results (a bit set).
enum class OpEffects : uint8_t {
  None = 0,
  /// May fail at run time on a check of values that no assertion emitted
  /// before it covers (integer division by zero, index bounds, item's
  /// range, the assertion itself).
  MayFail = 1,
  /// Defines an unbacked size from the values it computes.
  BindsSizes = 2,
  MayFailAndBindsSizes = 3,
  /// Delimits a loop body (loop, end_loop): always kept, never moved.
  Structure = 4,
};

/// How an op takes part in reverse-mode differentiation (ir/Differentiate.h).
enum class DiffKind : uint8_t {
  /// A VJP rule gives the gradients of its float operands (ir/VjpRules.cpp;
  /// loop and end_loop: the loop is reversed as a whole, ir/VjpLoops.cpp).
  Rule,
  /// No gradient flows to its operands (its results are integer, bool or a
  /// piecewise-constant function of them, or it has no operands).
  NoGradient,
  /// Refused: its result is not a differentiable function of its operands
  /// (unique, item).
  NotDifferentiable,
  /// Refused: differentiable, but no rule yet.
  NotSupported,
};

/// An op's differentiation column.
struct DiffRule {
  DiffKind kind;
  /// For NoGradient and the refusals: why, in a few words (a refusal's
  /// error message ends with it); "" for a rule.
  const char *reason;
};

/// One row of the op table.
struct OpTraits {
  OpCode code;
  std::string_view name; ///< the IR name ("reduce_sum")
  int minOperands;
  int maxOperands; ///< -1: variadic
  int numResults;  ///< -1: one per operand (loop, end_loop); -2: the callee's
  OpCategory category;
  DTypeRule operands;
  /// The operands share one element type (where: its two branches; for
  /// AnyThenBool and AnyThenInteger this is false).
  bool sameDType;
  ResultDType result;
  OpEffects effects;
  /// The builtin that is exactly this op with its operands as tensor
  /// arguments named x (and y); empty when there is none.
  std::string_view builtin;
  /// How it differentiates.
  DiffRule diff;
};

namespace detail {
constexpr std::string_view spelling(const char *s) {
  return s ? std::string_view(s) : std::string_view();
}
} // namespace detail

// The reason of a row's differentiation column: its How for a refusal or
// NoGradient; a Rule's How names its VJP rule, unknown here.
#define TSL_DIFF_REASON_Rule(How) ""
#define TSL_DIFF_REASON_NoGradient(How) How
#define TSL_DIFF_REASON_NotDifferentiable(How) How
#define TSL_DIFF_REASON_NotSupported(How) How

/// The op table, indexed by OpCode.
inline constexpr OpTraits kOpTable[] = {
#define TSL_OP(Id, Name, MinOps, MaxOps, Results, Attrs, Category, Operands,   \
               Same, Result, Effects, Builtin, Diff, How, Doc)                 \
  {OpCode::Id,                                                                 \
   Name,                                                                       \
   MinOps,                                                                     \
   MaxOps,                                                                     \
   Results,                                                                    \
   OpCategory::Category,                                                       \
   DTypeRule::Operands,                                                        \
   (Same) != 0,                                                                \
   ResultDType::Result,                                                        \
   OpEffects::Effects,                                                         \
   detail::spelling(Builtin),                                                  \
   {DiffKind::Diff, TSL_DIFF_REASON_##Diff(How)}},
#include "ir/Ops.def"
};

#undef TSL_DIFF_REASON_Rule
#undef TSL_DIFF_REASON_NoGradient
#undef TSL_DIFF_REASON_NotDifferentiable
#undef TSL_DIFF_REASON_NotSupported

/// The number of ops.
inline constexpr size_t kNumOps = sizeof(kOpTable) / sizeof(kOpTable[0]);

namespace detail {
constexpr bool tableInOrder() {
  for (size_t i = 0; i < kNumOps; ++i)
    if (static_cast<size_t>(kOpTable[i].code) != i)
      return false;
  return true;
}
} // namespace detail
static_assert(detail::tableInOrder(), "kOpTable is indexed by OpCode");

/// The table row of \p c.
constexpr const OpTraits &opTraits(OpCode c) {
  return kOpTable[static_cast<size_t>(c)];
}
/// The category of \p c.
constexpr OpCategory categoryOf(OpCode c) { return opTraits(c).category; }
/// The IR name of \p c ("reduce_sum").
constexpr std::string_view opName(OpCode c) { return opTraits(c).name; }

/// Elementwise unary, binary and where: result element i is computed from
/// operand elements at the same (broadcast) position, so a consumer's loop
/// can recompute it. Scalars (constant, sym_scalar) are not included; see
/// isElementwiseOrScalar.
constexpr bool isElementwise(OpCode c) {
  OpCategory k = categoryOf(c);
  return k == OpCategory::ElementwiseUnary ||
         k == OpCategory::ElementwiseBinary ||
         k == OpCategory::ElementwiseSelect;
}
/// isElementwise, or a 0-d value without operands: every op whose value at
/// an index a consumer's loop can compute in place (what the CPU backend
/// fuses).
constexpr bool isElementwiseOrScalar(OpCode c) {
  return isElementwise(c) || categoryOf(c) == OpCategory::Scalar;
}
/// reduce_sum, reduce_mean, reduce_max, reduce_min, argmax and argmin.
constexpr bool isReduction(OpCode c) {
  return categoryOf(c) == OpCategory::Reduction;
}
/// Ops that only move or copy elements (reshape, permute, expand, concat,
/// slice, pad).
constexpr bool isLayout(OpCode c) {
  return categoryOf(c) == OpCategory::Layout;
}
/// True when \p c makes a check on values at run time that no assertion
/// emitted before it covers (see OpEffects::MayFail).
constexpr bool mayFail(OpCode c) {
  return (static_cast<unsigned>(opTraits(c).effects) &
          static_cast<unsigned>(OpEffects::MayFail)) != 0;
}
/// True when \p c defines an unbacked size (nonzero, masked_select, unique,
/// item).
constexpr bool bindsSizes(OpCode c) {
  return (static_cast<unsigned>(opTraits(c).effects) &
          static_cast<unsigned>(OpEffects::BindsSizes)) != 0;
}
/// True for loop and end_loop, which delimit a loop body.
constexpr bool isLoopMarker(OpCode c) {
  return opTraits(c).effects == OpEffects::Structure;
}
/// True when \p c must run even if its results are unused: it may fail,
/// binds sizes or delimits a loop body (dead-code elimination keeps it).
constexpr bool hasEffect(OpCode c) {
  return mayFail(c) || bindsSizes(c) || isLoopMarker(c);
}
/// The builtin that is exactly \p c (its operands passed as tensors), or
/// an empty view.
constexpr std::string_view builtinSpelling(OpCode c) {
  return opTraits(c).builtin;
}
/// How \p c differentiates (its Diff column): every op has a row, so an op
/// added without deciding its gradient does not compile.
constexpr DiffRule diffRuleOf(OpCode c) { return opTraits(c).diff; }

/// Whether operand \p operand of \p c may have element type \p t (by the
/// op's DTypeRule; an operand index past the op's operands is false). Says
/// nothing about whether operands must share a type (OpTraits::sameDType).
bool acceptsDType(OpCode c, size_t operand, DType t);

} // namespace tsl
