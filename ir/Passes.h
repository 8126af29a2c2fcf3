#pragma once
/// \file IR passes. Each pass is a function over one Function.

#include "ir/Function.h"

namespace tsl {

/// Whether \p op of \p fn must run even if its results are unused (it may
/// fail, binds sizes or delimits a loop body): the op table's hasEffect,
/// except a float division, which gives inf or NaN where an integer one
/// fails.
bool hasEffect(const Function &fn, const Operation &op);

/// Removes operations whose results are never used and that have no other
/// effect (assertions and ops that bind unbacked sizes stay). Returns the
/// number of operations removed.
size_t eliminateDeadCode(Function &fn);

} // namespace tsl
