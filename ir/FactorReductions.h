#pragma once
/// \file The factor-reductions pass: a sum or mean over some axes of a
/// product takes the factors that are constant along those axes out of the
/// reduction. Reverse mode writes a normalization's backward as several
/// reductions of products of the same activations with per-channel factors
/// (a batch norm's sum(g * w * d) and sum(g * xhat), xhat = d * rstd);
/// with the factors outside, they are one reduction, read once.

#include "ir/Function.h"

namespace tsl {

/// Rewrites each float `reduce_sum` / `reduce_mean` over axes A of a product
/// (a tree of `mul` and `neg` ops) that has a factor constant along A (a
/// value whose dims, aligned to the right, are 1 on every axis of A, or an
/// `expand` of one) into the reduction of the other factors, in a canonical
/// order, times the constant ones:
///
///   reduce_sum(mul(mul(g, w[C,1,1]), d), axes=[0,2,3])
///     -> mul(reduce_sum(mul(g, d), axes=[0,2,3], keepdim), w)
///
/// A sum of such products (add, sub, neg) is distributed when each product
/// has one varying factor: sum(g * w * rstd + k * d) is sum(g) * w * rstd +
/// sum(d) * k, two reductions of stored values instead of one of a buffer
/// that must then be stored. Reductions of the same kind that read a
/// reduction used nowhere else are folded into one first (reduce_sum over
/// [0] then over [1, 2] is one reduce_sum over [0, 2, 3]).
/// A reduction (or product) the function already computes in scope is
/// reused, so two reductions that differ only in their constant factors
/// become one. The factored form rounds differently in the last bits (the
/// factor multiplies the sum, not each term). A product whose other factors
/// do not have the reduced operand's shape is left alone; so are integer
/// reductions and reductions whose value the function returns. Returns the
/// number of reductions rewritten; the ops they replace are left dead for
/// eliminateDeadCode.
size_t factorReductions(Function &fn);

} // namespace tsl
