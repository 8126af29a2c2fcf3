#pragma once
/// \file The attention fusion pass.

#include "ir/Function.h"

namespace tsl {

/// Replaces each scaled dot-product attention written as separate ops,
///
///   p = softmax([cut](q @ permute(k, ..., -1, -2) [* s | / s] [+ mask]))
///   p @ v
///
/// with softmax spelled as nn.softmax spells it (reduce_max, sub, exp,
/// reduce_sum, div over the last axis, each with keepdim), by one
/// `attention(q, k, v, scale, mask?) {causal}` op that never stores the S x T
/// scores. It fires only when the intermediate values have no other use,
/// q, k and v have one rank and the same batch dims, the scale is a 0-d
/// tensor (or absent: 1) and the mask (either side of the add) has no dim
/// the scores lack. A division by the scale becomes a multiplication by its
/// reciprocal, computed by a new 0-d op. The assertion that the softmax axis
/// is not empty stays. The optional causal cut, as nn.attention's causal=1
/// writes it, is where(j <= i, x, -inf) or where(j > i, -inf, x) (also
/// spelt i >= j, i < j) with j an i64 arange(T) as [T] or [1, T] and i
/// an arange(S) as [S, 1], S and T the scores' last two dims; it sets
/// `causal` (any other where is left unfused). Returns the number of attentions
/// formed; the ops they replace are left dead for eliminateDeadCode.
size_t fuseAttention(Function &fn);

} // namespace tsl
