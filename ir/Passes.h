#pragma once
/// \file IR passes. Each pass is a function over one Function.

#include "ir/Function.h"

namespace tsl {

/// Removes operations whose results are never used and that have no other
/// effect (assertions and ops that bind unbacked sizes stay). Returns the
/// number of operations removed.
size_t eliminateDeadCode(Function &fn);

} // namespace tsl
