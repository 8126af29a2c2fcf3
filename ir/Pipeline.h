#pragma once
/// \file The IR pipeline: every pass over elaborated IR, registered by name
/// with a one-line description, run from one place in one documented order
/// (docs/design.md, "IR pipeline"):
///
///   1. outline-calls     repeated calls become one callee (CPU only)
///   2. dce               ops whose results nobody reads go
///   3. fuse-attention    softmax(q k^T s) v becomes one attention op
///   4. hoist-assertions  loop-invariant assertions move before their loop
///   5. hoist-ops         loop-invariant ops move before their loop (LICM)
///   6. minimize-guards   the shape environment drops implied guards
///
/// Differentiation is not a pass of it: grad() differentiates while the
/// elaborator builds the function, so its backward ops are there before
/// step 1 (and outlining sees each inlined call's backward as a run too).
/// `inline-calls` (undo outlining) is registered for `tslc opt` only.

#include "ir/Function.h"
#include "ir/OutlineCalls.h"
#include "support/Error.h"

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace tsl {

class ShapeEnv;

/// The choices a target makes about the pipeline.
struct PipelineOptions {
  /// Outline repeated calls into callees (the CPU). False keeps every call
  /// inlined: the GPU's host code launches kernels and has no calls.
  bool outlineCalls = true;
  /// Called after each pass that ran, with its name and the function as the
  /// pass left it (`tslc emit --print-after`). Unset: nothing is called.
  std::function<void(std::string_view pass, const Function &fn)> afterPass;
};

/// What passes read besides the function they transform.
struct PassContext {
  /// The elaboration's shape environment (its facts prove loops run, and
  /// minimize-guards prunes it); null for IR text, where the passes that
  /// use it do without.
  ShapeEnv *env = nullptr;
  /// The runs of ops each inlined call produced (outline-calls); null or
  /// empty for IR text, where outline-calls finds nothing to outline.
  const std::vector<InlinedCall> *calls = nullptr;
  PipelineOptions options;
};

/// One registered pass.
struct PassInfo {
  const char *name;
  /// One line: what the pass does.
  const char *description;
  /// False for passes `tslc opt` runs by name but the pipeline does not.
  bool inPipeline;
  /// Runs the pass on \p fn (and its callees where it applies).
  void (*run)(Function &fn, PassContext &ctx);
};

/// Every pass, in pipeline order (passes not in the pipeline last).
const std::vector<PassInfo> &registeredPasses();

/// The pass named \p name, or null.
const PassInfo *findPass(std::string_view name);

/// The registered names, comma-separated, in pipeline order.
std::string passNames();

/// Runs the pipeline on \p fn in its order, skipping what ctx.options
/// turns off, calling ctx.options.afterPass after each pass that ran.
void runPipeline(Function &fn, PassContext &ctx);

/// Runs the passes \p names (comma-separated) on \p fn in the order given
/// (`tslc opt`), calling ctx.options.afterPass after each. An
/// InvalidArgument error listing the known passes when a name is unknown
/// (then nothing ran).
Expected<void> runPasses(Function &fn, std::string_view names,
                         PassContext &ctx);

/// Splits \p names (comma-separated) and checks each is registered ("all"
/// too when \p allowAll). An InvalidArgument error listing the passes on an
/// unknown or empty name.
Expected<std::vector<std::string>> parsePassList(std::string_view names,
                                                 bool allowAll);

} // namespace tsl
