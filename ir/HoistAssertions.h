#pragma once
/// \file The pass that moves loop-invariant assertions out of loop bodies.

#include "ir/Function.h"

namespace tsl {

/// Moves each `assert` inside a loop body whose condition mentions only
/// symbols known before the loop (not the loop's variable, not a size bound
/// by an op of the body) to just before the loop, so it is checked once
/// instead of once per iteration. The hoisted condition is
/// `hi <= lo || cond`: a loop that runs no iteration asserts nothing, as
/// before. Nested loops hoist as far out as the symbols allow. An input
/// that violates such an assertion still fails with the assertion's
/// message and location; only which of several failures is reported first
/// may change. With \p env, a loop its facts prove runs at least once
/// keeps the plain condition. Returns the number of moves (one per loop
/// level an assertion leaves).
size_t hoistLoopInvariantAssertions(Function &fn,
                                    const ShapeEnv *env = nullptr);

} // namespace tsl
