#pragma once
/// \file IR verification: structure (SSA, operand and result counts,
/// attributes) and types (every op's result types re-derived by its shape
/// rule and compared with the recorded ones).

#include "ir/Function.h"

#include "support/Error.h"

#include <string>

namespace tsl {

/// Verifies \p fn. An Internal error whose message names the op of the
/// first problem (IR a pass made is the compiler's bug; a caller reading
/// IR text reports it as that file's error).
Expected<void> verifyFunction(const Function &fn);

} // namespace tsl
