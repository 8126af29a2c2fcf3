#pragma once
/// \file Private to ir/Differentiate.cpp, ir/VjpRules.cpp and
/// ir/VjpLoops.cpp: the builder the VJP rules emit the backward with, and
/// the rule entry points (the rule table is ir/VjpRules.cpp's, built from
/// the op table's Diff column).

#include "ir/Differentiate.h"

#include <unordered_map>
#include <unordered_set>

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
  ValueId op(OpCode code, std::vector<ValueId> operands, AttrMap attrs = {});
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

/// Cotangents by value: the sum of the gradients reaching each value.
using CtMap = std::unordered_map<ValueId, ValueId>;

/// Whether op \p op's VJP rule reads the run-time values of its operands
/// (a mul's, a matmul's), not only their types: an add's, a slice's or an
/// update_slice's does not; false for an op without a rule. A loop's
/// backward saves or recomputes only what some rule reads
/// (ir/VjpLoops.cpp). Each rule says which (ir/VjpRules.cpp).
bool ruleReadsOperands(const Operation &op);
/// Whether op \p op's VJP rule reads the run-time values of its results
/// (an exp's, a tanh's), as ruleReadsOperands.
bool ruleReadsResults(const Operation &op);

/// The reverse sweep over a list of ops (the forward's, or a loop body
/// recomputed inside a reverse loop), with loops reversed by recursion.
struct Sweep {
  Builder &b;
  ShapeEnv &env;
  const DiffRequest &req;
  /// Per forward value: a gradient flows through it (depends on a wrt
  /// value, reaches y, float, not stopped), or its role group's does.
  std::vector<char> activeFwd, alikeFwd;
  /// For each value a reverse loop recomputes: the forward value it is.
  std::unordered_map<ValueId, ValueId> origin;
  /// Cotangents that are loop-carried accumulators: a slice's gradient is
  /// added into them in place (update_slice) rather than padded.
  std::unordered_set<ValueId> accumulators;
  DiffResult &out;

  ValueId fwd(ValueId v) const {
    auto it = origin.find(v);
    return it == origin.end() ? v : it->second;
  }
  bool active(ValueId v) const {
    ValueId f = fwd(v);
    return f < activeFwd.size() && activeFwd[f];
  }
  bool wanted(ValueId v) const {
    ValueId f = fwd(v);
    return f < activeFwd.size() && (activeFwd[f] || alikeFwd[f]);
  }
  /// Adds \p g (fitted to v's type) to v's cotangent.
  void accumulate(CtMap &ct, ValueId v, ValueId g);
  /// Sweeps ops [begin, end) of \p ops backwards; \p fwdIndex gives each
  /// op's index in the forward (for errors); \p marks (top level only)
  /// receives DiffResult::sweep. False on a refusal or a failed emit.
  bool run(const std::vector<Operation> &ops,
           const std::vector<size_t> &fwdIndex, size_t begin, size_t end,
           CtMap &ct, std::vector<size_t> *marks);
  /// The backward of the loop ops[l] .. ops[e] (its end_loop): a replay
  /// loop stacking the carried values the body's backward reads, then a
  /// reverse loop (ir/VjpLoops.cpp).
  bool loop(const std::vector<Operation> &ops,
            const std::vector<size_t> &fwdIndex, size_t l, size_t e, CtMap &ct);
  /// Records a refusal of forward op \p index; returns false.
  bool fail(size_t index, std::string message) {
    out.failedOp = index;
    out.message = std::move(message);
    return false;
  }
};

/// For each op of \p ops: the index of the end_loop of a loop op, the
/// loop op of an end_loop, SIZE_MAX otherwise (and for unmatched ones).
std::vector<size_t> loopPartners(const std::vector<Operation> &ops,
                                 size_t begin, size_t end);

} // namespace tsl::vjp
