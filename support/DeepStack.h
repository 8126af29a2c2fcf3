#pragma once
/// \file Running deeply recursive work (elaboration of deeply nested or
/// deeply inlined expressions) on a stack of known size, so the nesting
/// limits the frontend enforces hold whatever the caller's stack is (a
/// sanitizer build's frames are several times larger; a JIT caller's thread
/// may have a small stack).

#include <cstddef>
#include <functional>

namespace tsl {

/// The stack size runOnDeepStack gives its work: enough for the frontend's
/// nesting limits (kMaxEvalDepth levels) in an ASan build.
constexpr size_t kDeepStackBytes = size_t(256) << 20;

/// Runs \p work to completion on a fresh thread whose stack has
/// kDeepStackBytes (address space only; pages are touched as used) and
/// returns once it has finished. If that thread cannot be created (address
/// space exhausted), \p work runs on the calling thread instead.
void runOnDeepStack(const std::function<void()> &work);

} // namespace tsl
