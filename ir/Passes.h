#pragma once
/// \file IR passes. Each pass is a function over one Function.

#include "ir/Function.h"

#include <optional>

namespace tsl {

/// Whether \p op of \p fn must run even if its results are unused (it may
/// fail, binds sizes or delimits a loop body): the op table's hasEffect,
/// except a float division, which gives inf or NaN where an integer one
/// fails.
bool hasEffect(const Function &fn, const Operation &op);

/// The NumPy broadcast of dims \p a and \p b when it needs no size question:
/// per axis (aligned to the right) the dims are equal expressions or one is
/// the constant 1; nullopt otherwise (passes that run without a shape
/// environment leave such ops alone).
std::optional<std::vector<SymExpr>>
broadcastDims(const std::vector<SymExpr> &a, const std::vector<SymExpr> &b);

/// Removes operations whose results are never used and that have no other
/// effect (assertions and ops that bind unbacked sizes stay). Returns the
/// number of operations removed.
size_t eliminateDeadCode(Function &fn);

} // namespace tsl
