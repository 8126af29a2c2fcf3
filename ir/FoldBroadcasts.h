#pragma once
/// \file The fold-broadcasts pass: an elementwise op reads an `expand`'s
/// operand directly when its other operands give the result's shape anyway
/// (NumPy broadcasting does the expand). Reverse mode broadcasts each
/// reduction's cotangent back with an explicit expand (a batch norm's
/// per-channel terms to [N, C, H, W]); read through, those expands are no
/// buffers the size of the activations, written and read once each.

#include "ir/Function.h"

namespace tsl {

/// Replaces each operand `expand(x)` of an elementwise op (unary ops
/// excepted: their operand is their shape) by `x` when the broadcast of the
/// op's operands, so replaced, is still the op's result dims (compared as
/// expressions: a dim that is 1 only by a runtime guard is left expanded).
/// Returns the number of operands replaced; the expands that lose their
/// last reader are left dead for eliminateDeadCode.
size_t foldBroadcasts(Function &fn);

} // namespace tsl
