#pragma once
/// \file The merge-replay-loops pass: a gradient through a `for` loop
/// replays the loop to stack the carried values its backward reads
/// (ir/VjpLoops.cpp); the replay computes the forward loop's own carried
/// values from the same initial values, so when the forward loop's results
/// are also used (a train step returns the loss), the forward runs twice.
/// This pass finds such pairs and drops the forward loop, its results read
/// from the replay's instead.

#include "ir/Function.h"

namespace tsl {

/// For each top-level loop P with a later top-level loop R over the same
/// range whose first carried values start from P's initial values and are
/// computed by the same ops (compared structurally, P's loop symbol read as
/// R's): P's results are replaced by R's, P is removed, and the ops between
/// them that read P's results move to after R (R and its inputs must not
/// depend on them). A P whose body holds an op with an effect (an
/// assertion, a size binding, an inner loop) is kept, so no runtime check
/// is lost. Returns the number of loops removed.
size_t mergeReplayLoops(Function &fn);

} // namespace tsl
