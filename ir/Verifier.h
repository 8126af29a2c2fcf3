#pragma once
/// \file IR verification: structure (SSA, operand and result counts,
/// attributes) and types (every op's result types re-derived by its shape
/// rule and compared with the recorded ones).

#include "ir/Function.h"

#include <string>

namespace tsl {

/// Verifies \p fn. Returns false with a message naming the op on the first
/// problem.
bool verifyFunction(const Function &fn, std::string &error);

} // namespace tsl
