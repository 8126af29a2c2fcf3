#pragma once
/// \file Calls of a function compiled once: the elaborator inlines every
/// call, and outlineRepeatedCalls turns the runs of ops that repeated calls
/// left into one callee (Function::callees) and `call` ops; inlineCalls
/// undoes it for targets that do not call (the GPU, which launches kernels
/// from its host code).

#include "ir/Function.h"

#include <string>
#include <vector>

namespace tsl {

/// The ops [begin, end) of a function that one inlined call of \p callee
/// produced, as the elaborator recorded them; \p loc is the call's.
struct InlinedCall {
  size_t begin = 0, end = 0;
  std::string callee;
  Location loc;
};

/// Outlining pays from this many ops per call and this many calls: below
/// it, the callee's host code and the call's argument array cost about what
/// inlining its few kernel calls does (kernels of equal text are compiled
/// once either way).
inline constexpr size_t kOutlineMinOps = 16;
inline constexpr size_t kOutlineMinCalls = 2;

/// Replaces the runs of \p calls whose ops print the same (operands
/// renumbered, types, attributes and source locations included) by `call`
/// ops of one callee each, where at least \p minCalls runs of at least
/// \p minOps ops match. Longer runs go first; a run is skipped when it
/// overlaps one already outlined, sits inside a loop body or holds one,
/// binds an unbacked size (its text names a size of its own anyway), or
/// reads a donated parameter (Param::donated: the plan may write a result
/// into its buffer, which a callee's parameter never is). A
/// value of the run that later ops read after any run of its kind is a
/// result of each call of that kind (unread after some), except one a
/// layout op made (a view, maybe of a buffer the callee frees): the caller
/// runs that op again after the call, on the call's results (its operands
/// given in turn), so the caller keeps the viewed buffer alive. The
/// backward of each inlined call that grad records is such a run too.
/// Returns the number of calls outlined. The recorded indices must be those of
/// \p fn as the elaborator left it (run it before passes that move ops).
size_t outlineRepeatedCalls(Function &fn, const std::vector<InlinedCall> &calls,
                            size_t minOps = kOutlineMinOps,
                            size_t minCalls = kOutlineMinCalls);

/// Replaces every `call` op of \p fn by a copy of its callee's ops (fresh
/// values; the callee's parameters read the call's operands and its results
/// are the call's) and drops the callees. A no-op without callees.
void inlineCalls(Function &fn);

} // namespace tsl
