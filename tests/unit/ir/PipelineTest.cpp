// The IR pipeline (ir/Pipeline.h): the registry's order, what the per-target
// options turn off, the after-pass hook, and running passes by name.
#include "ir/Pipeline.h"
#include "ir/IrText.h"

#include <gtest/gtest.h>

using namespace tsl;

namespace {

/// f(x) = g(g(x)) inlined, g being 16 tanh ops, plus one dead op; \p runs
/// gets the two calls' runs as the elaborator records them.
Function twoCalls(std::vector<InlinedCall> &runs) {
  std::string text = "func @f(%x: f32[N]) -> (f32[N]) {\n  symbol N: dynamic\n";
  int v = 0;
  std::string last = "%x";
  for (int call = 0; call < 2; ++call) {
    runs.push_back(
        {static_cast<size_t>(v), static_cast<size_t>(v + 16), "g", {}});
    for (int i = 0; i < 16; ++i, ++v) {
      text += "  %" + std::to_string(v) + " = tanh(" + last + ") : f32[N]\n";
      last = "%" + std::to_string(v);
    }
  }
  text += "  %" + std::to_string(v) + " = exp(%x) : f32[N]\n";
  text += "  return " + last + "\n}\n";
  Module m;
  std::string error;
  EXPECT_TRUE(parseModule(text, m, error)) << error;
  return m.functions.empty() ? Function() : m.functions[0];
}

std::vector<std::string> run(Function &fn, const std::vector<InlinedCall> &runs,
                             PipelineOptions options) {
  std::vector<std::string> seen;
  options.afterPass = [&](std::string_view pass, const Function &) {
    seen.emplace_back(pass);
  };
  PassContext ctx;
  ctx.calls = &runs;
  ctx.options = options;
  runPipeline(fn, ctx);
  return seen;
}

TEST(Pipeline, PassesAreRegisteredInPipelineOrder) {
  std::vector<std::string> names;
  for (const PassInfo &p : registeredPasses()) {
    names.push_back(p.name);
    EXPECT_NE(std::string(p.description), "") << p.name;
    EXPECT_EQ(p.inPipeline, names.back() != "inline-calls") << p.name;
  }
  EXPECT_EQ(names, (std::vector<std::string>{
                       "outline-calls", "merge-replay-loops", "fold-broadcasts",
                       "factor-reductions", "dce", "fuse-attention",
                       "hoist-assertions", "hoist-ops", "minimize-guards",
                       "inline-calls"}));
  EXPECT_NE(findPass("dce"), nullptr);
  EXPECT_EQ(findPass("nope"), nullptr);
}

TEST(Pipeline, TheHostOutlinesAndTheGpuKeepsCallsInlined) {
  std::vector<InlinedCall> runs;
  Function host = twoCalls(runs);
  Function gpu = host;
  PipelineOptions outline, keepInlined;
  keepInlined.outlineCalls = false; // the GPU's (Target::pipelineOptions)
  EXPECT_EQ(run(host, runs, outline),
            (std::vector<std::string>{
                "outline-calls", "merge-replay-loops", "fold-broadcasts",
                "factor-reductions", "dce", "fuse-attention",
                "hoist-assertions", "hoist-ops", "minimize-guards"}));
  ASSERT_EQ(host.callees.size(), 1u);
  EXPECT_EQ(host.ops.size(), 2u); // two calls; the dead exp is gone
  EXPECT_EQ(run(gpu, runs, keepInlined),
            (std::vector<std::string>{"merge-replay-loops", "fold-broadcasts",
                                      "factor-reductions", "dce",
                                      "fuse-attention", "hoist-assertions",
                                      "hoist-ops", "minimize-guards"}));
  EXPECT_TRUE(gpu.callees.empty());
  EXPECT_EQ(gpu.ops.size(), 32u);
}

TEST(Pipeline, RunsPassesByNameOrNoneOnAnUnknownName) {
  std::vector<InlinedCall> runs;
  Function fn = twoCalls(runs);
  PassContext ctx;
  Expected<void> unknown = runPasses(fn, "dce,nope", ctx);
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().kind, ErrorKind::InvalidArgument);
  EXPECT_EQ(unknown.error().message,
            "unknown pass 'nope' (passes: " + passNames() + ")");
  EXPECT_EQ(fn.ops.size(), 33u); // dce did not run either
  Expected<void> dce = runPasses(fn, "dce", ctx);
  EXPECT_TRUE(dce) << dce.error().message;
  EXPECT_EQ(fn.ops.size(), 32u);
  EXPECT_FALSE(runPasses(fn, "", ctx));
}

} // namespace
