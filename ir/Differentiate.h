#pragma once
/// \file Reverse-mode differentiation of the IR (`grad`, `vjp`): from the ops
/// a value depends on, the ops that compute its vector-Jacobian product with
/// respect to chosen values, appended after them in the same Function and
/// typed by the same ShapeEnv. The backward asks no new size question: each
/// rule reads what the forward's types already say (a broadcast axis is one
/// whose operand dim the forward proved, guarded or asserted to be 1), so
/// every requirement of a backward op is proven from the forward's facts.
///
/// How each op differentiates is the op table's Diff column (ir/Ops.def,
/// diffRuleOf in ir/OpInfo.h): a VJP rule (ir/VjpRules.cpp's rule table is
/// built from that column), no gradient (comparisons, argmax, creation), not
/// differentiable (unique, item) or not supported yet, with the reason.

#include "ir/Function.h"

#include <functional>
#include <set>
#include <string>
#include <vector>

namespace tsl {

/// Emits one op after the function's last: the result types from the op's
/// shape rule. False after reporting an error.
using DiffEmitFn =
    std::function<bool(OpCode code, std::vector<ValueId> operands,
                       AttrMap attrs, std::vector<ValueId> &results)>;

/// What to differentiate.
struct DiffRequest {
  /// The value differentiated (0-d float for grad).
  ValueId y = 0;
  /// The cotangent of y (vjp); absent: ones (grad of a 0-d y).
  std::optional<ValueId> cotangent;
  /// The values the gradients are taken with respect to.
  std::vector<ValueId> wrt;
  /// Values made by stop_gradient: no gradient flows through them.
  std::set<ValueId> stopped;
  /// The forward: ops [0, endOp) of the function.
  size_t endOp = 0;
  /// Groups of values that play one role in repeated calls (the k-th input
  /// of each inlined call of one function): where one member gets a
  /// gradient, each member y depends on does, so that the calls' backwards
  /// are alike and outline as one callee (the first layer of a stack
  /// computes its input's gradient as the others do).
  std::vector<std::vector<ValueId>> roles;
};

/// The gradients, or where differentiation stopped.
struct DiffResult {
  /// One per wrt value, of its type; for a value y does not depend on
  /// (through differentiable ops), zeros.
  std::vector<ValueId> grads;
  /// Per wrt value: whether a gradient reached it (false: zeros).
  std::vector<bool> reached;
  /// On failure: the index of the forward op refused (or SIZE_MAX when the
  /// failure is the emitter's own, already reported) and the message
  /// ("not differentiable: 'unique'").
  size_t failedOp = SIZE_MAX;
  std::string message;
  /// For each i in [0, endOp]: the function's op count once the reverse
  /// sweep has passed the forward ops [i, endOp). The backward of the ops
  /// [b, e) is the ops [sweep[e], sweep[b]): one run per forward run, which
  /// outlining can make one callee (ir/OutlineCalls.h).
  std::vector<size_t> sweep;
};

/// Appends to \p fn the backward of \p req through \p emit (which must
/// append to \p fn and type with \p env). A `for` loop is reversed by a
/// replay loop and a reverse loop, each with a loop symbol of its own
/// added to \p env (its range a fact only while its body is emitted).
/// False on failure, with \p out.failedOp and \p out.message set (a
/// refused op) or after the emitter reported.
bool differentiate(const Function &fn, ShapeEnv &env, const DiffRequest &req,
                   const DiffEmitFn &emit, DiffResult &out);

} // namespace tsl
