#pragma once
/// \file The pass that moves loop-invariant ops out of loop bodies (LICM).

#include "ir/Function.h"

namespace tsl {

/// Moves each op of a loop body that computes the same value in every
/// iteration to just before the loop, so it runs once: its operands are
/// defined before the loop (or by ops moved with it) and its attributes and
/// result type mention no size the loop binds (not the loop's variable, not
/// an unbacked size of the body). Ops that bind sizes, assertions and loop
/// markers stay. An op that may fail on values (an index out of bounds, an
/// integer division by zero) moves only where \p env proves the loop runs
/// at least once: a loop that runs no iteration must not fail. Nested loops
/// hoist as far out as their operands allow. Returns the number of moves
/// (one per loop level an op leaves).
size_t hoistLoopInvariantOps(Function &fn, const ShapeEnv *env = nullptr);

} // namespace tsl
