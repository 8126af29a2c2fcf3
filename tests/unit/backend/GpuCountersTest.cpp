// The GPU emulator's memory counters (runtime/GpuCounters.h) on generated
// kernels: kernels compiled while counters are on count their warps'
// shared and global accesses. These pin the layouts of TSL's own GEMM
// kernel (CodegenDeviceMatmul.cpp): its shared stores and fragment loads
// hit 32 banks (no replay), and its staging loads are coalesced; an
// elementwise kernel's 128-bit accesses are coalesced; attention's (f16,
// bf16) shared stores and loads hit 32 banks too.
#include "runtime/GpuCounters.h"
#include "backend/nvptx/GpuKernel.h"
#include "ir/IrText.h"

#include <gtest/gtest.h>

using namespace tsl;

namespace {

const char *kModule = R"IR(
func @mm(%a: f32[M, K], %b: f32[K, N]) -> (f32[M, N]) {
  symbol M: dynamic
  symbol K: dynamic
  symbol N: dynamic
  %0 = matmul(%a, %b) : f32[M, N]
  return %0
}

func @half(%a: f16[M, K], %b: f16[K, N]) -> (f16[M, N]) {
  symbol M: dynamic
  symbol K: dynamic
  symbol N: dynamic
  %0 = matmul(%a, %b) : f16[M, N]
  return %0
}

func @brain(%a: bf16[M, K], %b: bf16[K, N]) -> (bf16[M, N]) {
  symbol M: dynamic
  symbol K: dynamic
  symbol N: dynamic
  %0 = matmul(%a, %b) : bf16[M, N]
  return %0
}

func @add(%a: f32[N], %b: f32[N]) -> (f32[N]) {
  symbol N: dynamic
  %0 = add(%a, %b) : f32[N]
  return %0
}

func @attnh(%q: f16[B, S, D], %k: f16[B, T, D], %v: f16[B, T, E]) -> (f16[B, S, E]) {
  symbol B: dynamic
  symbol S: dynamic
  symbol T: dynamic
  symbol D: dynamic
  symbol E: dynamic
  %s = constant() {dtype = f32, value = 0.125} : f32[]
  %r = attention(%q, %k, %v, %s) {causal = false} : f16[B, S, E]
  return %r
}

func @attnb(%q: bf16[B, S, D], %k: bf16[B, T, D], %v: bf16[B, T, E]) -> (bf16[B, S, E]) {
  symbol B: dynamic
  symbol S: dynamic
  symbol T: dynamic
  symbol D: dynamic
  symbol E: dynamic
  %s = constant() {dtype = f32, value = 0.125} : f32[]
  %r = attention(%q, %k, %v, %s) {causal = false} : bf16[B, S, E]
  return %r
}
)IR";

ArgValue zeros(DType t, std::vector<int64_t> shape) {
  ArgValue a;
  a.tensor = Tensor::zeros(t, std::move(shape));
  return a;
}

class GpuCounters : public ::testing::Test {
protected:
  void SetUp() override {
    std::string error;
    ASSERT_TRUE(parseModule(kModule, module, error)) << error;
    rt::setGpuCountersForced(true);
  }
  void TearDown() override { rt::setGpuCountersForced(false); }

  /// Compiles \p name for the emulator with counters on, runs it once on
  /// \p args and returns the counters of its kernels.
  std::vector<rt::GpuKernelCounters>
  measure(const std::string &name, const std::vector<ArgValue> &args) {
    const Function *fn = nullptr;
    for (const Function &f : module.functions)
      if (f.name == name)
        fn = &f;
    EXPECT_TRUE(fn) << name;
    if (!fn)
      return {};
    Expected<std::unique_ptr<GpuKernel>> compiled =
        GpuKernel::compile(*fn, GpuTarget::Emulator);
    EXPECT_TRUE(compiled) << compiled.error().message;
    if (!compiled)
      return {};
    std::unique_ptr<GpuKernel> kernel = std::move(*compiled);
    std::vector<Tensor> out;
    RunError e;
    rt::beginGpuCounters();
    EXPECT_TRUE(kernel->run(args, out, e)) << e.message;
    std::vector<rt::GpuKernelCounters> all = rt::gpuCountersOfLastCall();
    for (const rt::GpuKernelCounters &c : all)
      ::testing::Test::RecordProperty(name + "_kernel" +
                                          std::to_string(c.kernel),
                                      rt::formatGpuCounters(c));
    return all;
  }

  /// The counters of the kernel with the most shared accesses.
  static rt::GpuKernelCounters
  busiest(const std::vector<rt::GpuKernelCounters> &all) {
    rt::GpuKernelCounters best;
    for (const rt::GpuKernelCounters &c : all)
      if (c.sharedLoads + c.sharedStores >=
          best.sharedLoads + best.sharedStores)
        best = c;
    return best;
  }

  Module module;
};

TEST_F(GpuCounters, ElementwiseAccessesAreCoalesced) {
  auto all =
      measure("add", {zeros(DType::F32, {4096}), zeros(DType::F32, {4096})});
  ASSERT_EQ(all.size(), 1u);
  EXPECT_GT(all[0].globalRequests, 0);
  EXPECT_EQ(all[0].globalSectors, all[0].globalIdeal)
      << rt::formatGpuCounters(all[0]);
  EXPECT_EQ(all[0].sharedLoads + all[0].sharedStores, 0);
}

// The tensor-core GEMM, both staging paths: 128-bit copies (K and N
// multiples of 8) and element copies (K = 62). A tile of 128 x 128 and two
// k slices: every shared store and fragment load is conflict-free (before
// the swizzled layout: the transposed B store conflicted 16 ways, 3,968
// replays on the wide path and 768 on the narrow one).
TEST_F(GpuCounters, TensorCoreGemmHasNoBankConflicts) {
  for (const char *name : {"half", "brain"}) {
    DType t = std::string(name) == "half" ? DType::F16 : DType::BF16;
    for (int64_t k : {64, 62}) {
      SCOPED_TRACE(std::string(name) + " K=" + std::to_string(k));
      rt::GpuKernelCounters c =
          busiest(measure(name, {zeros(t, {128, k}), zeros(t, {k, 128})}));
      EXPECT_EQ(c.barriers, 4); // two slices, two barriers each
      EXPECT_GT(c.sharedStores, 0);
      EXPECT_EQ(c.storeReplays, 0) << rt::formatGpuCounters(c);
      EXPECT_EQ(c.loadReplays, 0) << rt::formatGpuCounters(c);
    }
  }
}

TEST_F(GpuCounters, SimtGemmHasNoBankConflicts) {
  rt::GpuKernelCounters c = busiest(measure(
      "mm", {zeros(DType::F32, {128, 64}), zeros(DType::F32, {64, 128})}));
  EXPECT_EQ(c.barriers, 16); // eight slices of 8
  EXPECT_EQ(c.storeReplays, 0) << rt::formatGpuCounters(c);
  EXPECT_EQ(c.loadReplays, 0) << rt::formatGpuCounters(c);
}

// Attention (f16, bf16) at D = E = 64 and 128 (two E slices), two key
// tiles: full tiles (T = 128: 128-bit staging) and a partial last tile
// (T = 100: element staging). No shared access conflicts: the q/k stores
// and fragment loads never did; v's transposed 16-bit stores conflicted 8
// ways on the 128-bit path (896 replays per key tile) and 4 ways on the
// element path until v^T's rows were skewed (AttentionConfig::kVSkew in
// CodegenDeviceAttention.cpp). Two barriers per key tile at D = 64, four at
// D = 128 (a second D slice), per E slice.
TEST_F(GpuCounters, AttentionHasNoBankConflicts) {
  for (const char *name : {"attnh", "attnb"}) {
    DType t = std::string(name) == "attnh" ? DType::F16 : DType::BF16;
    for (int64_t d : {64, 128})
      for (int64_t keys : {128, 100}) {
        SCOPED_TRACE(std::string(name) + " D=E=" + std::to_string(d) +
                     " T=" + std::to_string(keys));
        rt::GpuKernelCounters c = busiest(
            measure(name, {zeros(t, {1, 128, d}), zeros(t, {1, keys, d}),
                           zeros(t, {1, keys, d})}));
        EXPECT_EQ(c.barriers, d == 64 ? 4 : 16);
        EXPECT_GT(c.sharedLoads, 0);
        EXPECT_GT(c.sharedStores, 0);
        EXPECT_EQ(c.loadReplays, 0) << rt::formatGpuCounters(c);
        EXPECT_EQ(c.storeReplays, 0) << rt::formatGpuCounters(c);
      }
  }
}

} // namespace
