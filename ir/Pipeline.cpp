#include "ir/Pipeline.h"

#include "ir/FactorReductions.h"
#include "ir/FoldBroadcasts.h"
#include "ir/FuseAttention.h"
#include "ir/HoistAssertions.h"
#include "ir/HoistInvariantOps.h"
#include "ir/MergeReplayLoops.h"
#include "ir/Passes.h"
#include "shapes/ShapeEnv.h"

#include <sstream>

namespace tsl {

namespace {

/// Applies \p pass to \p fn and each of its callees.
template <typename Pass> void eachBody(Function &fn, Pass pass) {
  pass(fn);
  for (Function &callee : fn.callees)
    pass(callee);
}

void runOutline(Function &fn, PassContext &ctx) {
  if (ctx.calls)
    outlineRepeatedCalls(fn, *ctx.calls);
}

void runInline(Function &fn, PassContext &) { inlineCalls(fn); }

// Callees hold no loops: the caller only.
void runMergeReplayLoops(Function &fn, PassContext &) { mergeReplayLoops(fn); }

void runFoldBroadcasts(Function &fn, PassContext &) {
  eachBody(fn, [](Function &f) { foldBroadcasts(f); });
}

void runFactorReductions(Function &fn, PassContext &) {
  eachBody(fn, [](Function &f) { factorReductions(f); });
}

void runDce(Function &fn, PassContext &) {
  eachBody(fn, [](Function &f) { eliminateDeadCode(f); });
}

void runFuseAttention(Function &fn, PassContext &) {
  eachBody(fn, [](Function &f) {
    if (fuseAttention(f)) // the ops it replaced are dead now
      eliminateDeadCode(f);
  });
}

// Callees hold no loops (outlining skips runs that hold one or sit in one):
// the hoisting passes look at the caller only.
void runHoistAssertions(Function &fn, PassContext &ctx) {
  hoistLoopInvariantAssertions(fn, ctx.env);
}

void runHoistOps(Function &fn, PassContext &ctx) {
  hoistLoopInvariantOps(fn, ctx.env);
}

void runMinimizeGuards(Function &, PassContext &ctx) {
  if (ctx.env)
    ctx.env->minimizeGuards();
}

} // namespace

const std::vector<PassInfo> &registeredPasses() {
  static const std::vector<PassInfo> passes = {
      {"outline-calls",
       "repeated inlined calls become one callee and call ops (not on the GPU)",
       true, runOutline},
      {"merge-replay-loops",
       "a forward loop a gradient's replay recomputes goes; its results are "
       "the replay's",
       true, runMergeReplayLoops},
      {"fold-broadcasts",
       "an elementwise op reads an expand's operand when its other operands "
       "give the result's shape",
       true, runFoldBroadcasts},
      {"factor-reductions",
       "a sum or mean of a product takes out the factors constant along its "
       "axes; equal reductions are shared",
       true, runFactorReductions},
      {"dce",
       "removes ops whose results are never read and that have no effect", true,
       runDce},
      {"fuse-attention",
       "softmax(q @ k^T * s [+ mask]) @ v becomes one attention op; dead ops "
       "go",
       true, runFuseAttention},
      {"hoist-assertions",
       "moves loop-invariant assertions to just before their loop", true,
       runHoistAssertions},
      {"hoist-ops", "moves loop-invariant ops to just before their loop (LICM)",
       true, runHoistOps},
      {"minimize-guards",
       "drops guards the other guards and facts imply (needs the elaborator's "
       "shape environment: nothing on IR text)",
       true, runMinimizeGuards},
      {"inline-calls",
       "replaces each call op by its callee's ops and drops the callees", false,
       runInline},
  };
  return passes;
}

const PassInfo *findPass(std::string_view name) {
  for (const PassInfo &p : registeredPasses())
    if (name == p.name)
      return &p;
  return nullptr;
}

std::string passNames() {
  std::string s;
  for (const PassInfo &p : registeredPasses())
    s += std::string(s.empty() ? "" : ", ") + p.name;
  return s;
}

void runPipeline(Function &fn, PassContext &ctx) {
  for (const PassInfo &p : registeredPasses()) {
    if (!p.inPipeline)
      continue;
    if (p.run == runOutline && !ctx.options.outlineCalls)
      continue;
    p.run(fn, ctx);
    if (ctx.options.afterPass)
      ctx.options.afterPass(p.name, fn);
  }
}

Expected<std::vector<std::string>> parsePassList(std::string_view names,
                                                 bool allowAll) {
  std::stringstream list{std::string(names)};
  std::string name;
  std::vector<std::string> out;
  while (std::getline(list, name, ',')) {
    if ((allowAll && name == "all") || findPass(name)) {
      out.push_back(name);
      continue;
    }
    return makeError(ErrorKind::InvalidArgument,
                     (name.empty() ? std::string("empty pass name")
                                   : "unknown pass '" + name + "'") +
                         " (passes: " + passNames() +
                         (allowAll ? ", all" : "") + ")");
  }
  if (out.empty())
    return makeError(ErrorKind::InvalidArgument,
                     "no pass named (passes: " + passNames() + ")");
  return out;
}

Expected<void> runPasses(Function &fn, std::string_view names,
                         PassContext &ctx) {
  Expected<std::vector<std::string>> list = parsePassList(names, false);
  if (!list)
    return list.error();
  for (const std::string &name : *list) {
    findPass(name)->run(fn, ctx);
    if (ctx.options.afterPass)
      ctx.options.afterPass(name, fn);
  }
  return {};
}

} // namespace tsl
