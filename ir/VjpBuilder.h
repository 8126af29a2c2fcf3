#pragma once
/// \file Private to ir/Differentiate.cpp and ir/VjpRules.cpp: the builder the
/// VJP rules emit the backward with, and the rule entry point.

#include "ir/Differentiate.h"

namespace tsl::vjp {

/// A value that failed to be emitted: every builder call given one returns
/// it again, so a rule is written without checking each step.
constexpr ValueId kFailed = UINT32_MAX;

/// Emits backward ops and accumulates cotangents.
class Builder {
public:
  Builder(const Function &fn, const ShapeEnv &env, const DiffEmitFn &emit)
      : fn(fn), env(env), emitFn(emit) {}

  const Function &fn;
  const ShapeEnv &env;
  const DiffEmitFn &emitFn;
  /// Set when an emit failed (the emitter reported it).
  bool failed = false;

  /// A copy of the type of \p v (the function grows while rules run).
  TensorType type(ValueId v) const { return fn.type(v); }
  /// One op with one result; kFailed when an operand is or the emit fails.
  ValueId op(OpCode code, std::vector<ValueId> operands,
             std::map<std::string, Attr> attrs = {});
  /// A 0-d constant.
  ValueId constant(double value, DType dtype);
  /// A tensor of \p dims filled with \p value.
  ValueId full(const std::vector<SymExpr> &dims, double value, DType dtype);
  /// The run-time value of a size expression as a 0-d float.
  ValueId size(SymExpr e, DType dtype);
  ValueId add(ValueId a, ValueId b) { return op(OpCode::Add, {a, b}); }
  ValueId sub(ValueId a, ValueId b) { return op(OpCode::Sub, {a, b}); }
  ValueId mul(ValueId a, ValueId b) { return op(OpCode::Mul, {a, b}); }
  ValueId div(ValueId a, ValueId b) { return op(OpCode::Div, {a, b}); }
  ValueId neg(ValueId a) { return op(OpCode::Neg, {a}); }
  ValueId reshape(ValueId a, const std::vector<SymExpr> &dims);
  /// \p g (a broadcast of a value of \p dims) summed back to \p dims: its
  /// extra leading axes and every axis where \p dims is 1 (literally, or
  /// proven from the forward's facts) and g's is not; then reshaped when
  /// the dims differ only in spelling (proven equal: an expand). No size
  /// question is left undecided: the forward's broadcast decided each axis.
  ValueId fit(ValueId g, const std::vector<SymExpr> &dims);
  /// \p dims with the reduced \p axes (all when empty) set to 1.
  static std::vector<SymExpr> keptDims(const std::vector<SymExpr> &dims,
                                       const std::vector<int64_t> &axes);
};

/// The gradients of op \p op's operands from the cotangents \p cts of its
/// results (kFailed where a result has none): \p grads receives one value
/// per operand, kFailed for an operand that gets none; only operands with
/// \p want set need one. False with \p message set when the op (or this use
/// of it) is refused.
bool applyRule(Builder &b, const Operation &op, const std::vector<ValueId> &cts,
               const std::vector<bool> &want, std::vector<ValueId> &grads,
               std::string &message);

} // namespace tsl::vjp
