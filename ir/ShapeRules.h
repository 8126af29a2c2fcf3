#pragma once
/// \file Shape and dtype rules: for each op, the result types from the
/// operand types and attributes, asking the ShapeEnv every size question
/// (LANGUAGE.md §6). One rule per op of the op table (ir/Ops.def).

#include "ir/Function.h"
#include "support/Error.h"

#include <string>
#include <vector>

namespace tsl {

/// What a shape rule sees and how it asks questions. Requirements that
/// cannot be decided at compile time become guards or assertions in the
/// environment; `newAssertions` collects the assertions this op added so the
/// builder can emit them before the op.
class ShapeContext {
public:
  ShapeContext(ShapeEnv &env, const Operation &op,
               std::vector<TensorType> operands, SourceRange range);

  const Operation &op;
  const std::vector<TensorType> operands;
  ShapeEnv &env;
  SourceRange range;
  /// The first failure's message, and its kind: Shape for size rules, Type
  /// for element types (failType), Internal for a misused attribute.
  std::string error;
  ErrorKind errorKind = ErrorKind::Shape;
  std::vector<ShapeFact> newAssertions;
  /// When set, fresh unbacked symbols are taken from here in order instead
  /// of being created (the verifier replays an existing function).
  const std::vector<SymExpr> *replayFresh = nullptr;
  size_t replayIndex = 0;

  /// A requirement; false (with `error` set to \p message) when it is
  /// violated.
  bool require(const SymCond &cond, const std::string &reason,
               const std::string &message);
  /// A choice; see ShapeEnv::choose.
  Truth choose(const SymCond &cond, const std::string &reason);
  /// A fresh unbacked size in [lo, hi].
  SymExpr fresh(int64_t lo, std::optional<SymExpr> hi,
                const std::string &description);
  /// Records \p message as the error (unless one is recorded); false.
  bool fail(std::string message);
  /// fail() for an element type the op does not accept (kind Type).
  bool failType(std::string message);
  /// The broadcast of two dims (NumPy rules, decided per LANGUAGE.md §6).
  bool broadcastDim(SymExpr a, SymExpr b, SymExpr &out,
                    const std::string &what);
  /// The broadcast shape of several types.
  bool broadcastShapes(const std::vector<TensorType> &types,
                       std::vector<SymExpr> &out);
};

/// Computes the result types of \p ctx.op. Returns false with ctx.error set
/// when the operand types are invalid for the op.
bool inferResultTypes(ShapeContext &ctx, std::vector<TensorType> &results);

} // namespace tsl
