// A table's call statistics under concurrent calls: the counts (kept with
// relaxed atomics, no lock) add up exactly once the threads are done, per
// variant and in the call log (the first 100,000 calls), through
// FunctionTable::call and through the C API; and a call made from inside a
// kernel gets a context of its own; the peak host memory of a call.
#include "FakeVariants.h"
#include "runtime/Context.h"
#include "runtime/Runtime.h"

#include <gtest/gtest.h>
#include <thread>

using namespace tsl;
using namespace tsl::rt;

namespace {

/// Variant 0 serves N <= 100, variant 1 (compiled for the first larger N)
/// every N.
void twoVariants(fake::Compiler &compiler) {
  compiler.make = [](const std::vector<CallArg> &args, bool, VariantCode &out,
                     Error &) {
    out = fake::scaleVariant(args[0].shape[0] <= 100 ? fake::matchAtMost100
                                                     : fake::matchAny);
    return true;
  };
}

/// One call with N = 4, then one with N = 200: variants 0 and 1, in order.
void warmUp(FunctionTable &table) {
  std::vector<float> small(4, 1.0f), large(200, 1.0f);
  for (std::vector<float> *x : {&small, &large}) {
    std::vector<Output> out;
    int variant;
    Error error;
    ASSERT_TRUE(table.call({fake::vectorArg(*x)}, out, variant, error))
        << error.message;
    std::free(out[0].data);
  }
}

/// Runs \p calls calls of \p table on each of \p threads threads, the even
/// threads with N = 4 (variant 0), the odd ones with N = 200 (variant 1).
/// False when any call failed or returned a wrong result.
bool hammer(FunctionTable &table, int threads, int calls) {
  std::atomic<bool> ok{true};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      std::vector<float> x(t % 2 ? 200 : 4, float(t));
      std::vector<CallArg> args{fake::vectorArg(x)};
      std::vector<Output> outputs;
      int variant = -1;
      Error error;
      for (int i = 0; i < calls; ++i) {
        bool good = table.call(args, outputs, variant, error) &&
                    variant == t % 2 && outputs.size() == 1 &&
                    static_cast<const float *>(outputs[0].data)[3] == 2 * t;
        if (!good)
          ok = false;
        for (Output &o : outputs)
          std::free(o.data);
        outputs.clear();
      }
    });
  for (std::thread &t : pool)
    t.join();
  return ok;
}

/// Checks \p st against \p perVariant calls of variants 0 and 1.
void expectCounts(const Stats &st, size_t perVariant) {
  EXPECT_EQ(st.calls, 2 * perVariant);
  ASSERT_EQ(st.variantCalls.size(), 2u);
  EXPECT_EQ(st.variantCalls[0], perVariant);
  EXPECT_EQ(st.variantCalls[1], perVariant);
  size_t logged = std::min<size_t>(st.calls, 100000);
  ASSERT_EQ(st.callVariants.size(), logged);
  size_t zeros = 0;
  for (int v : st.callVariants) {
    ASSERT_TRUE(v == 0 || v == 1) << v;
    zeros += v == 0;
  }
  if (logged == st.calls) { // every call logged: the log agrees per variant
    EXPECT_EQ(zeros, perVariant);
  }
}

TEST(CallStats, CountsAddUpUnderConcurrentCalls) {
  fake::Compiler compiler;
  twoVariants(compiler);
  FunctionTable table("scale", &compiler);
  warmUp(table); // then 4 threads, 2 per variant
  ASSERT_TRUE(hammer(table, 4, 5000));
  expectCounts(table.stats(), 10001);
  EXPECT_EQ(table.stats().compiles, 2u);
  EXPECT_EQ(table.stats().callVariants[0], 0); // the first calls, in order
  EXPECT_EQ(table.stats().callVariants[1], 1);
}

TEST(CallStats, TheCallLogStopsAtItsLimitWhileCountsGoOn) {
  fake::Compiler compiler;
  twoVariants(compiler);
  FunctionTable table("scale", &compiler);
  warmUp(table);
  // 104,002 calls: the log's last chunk fills while threads race for it.
  ASSERT_TRUE(hammer(table, 4, 26000));
  Stats st = table.stats();
  expectCounts(st, 52001);
  EXPECT_EQ(st.callVariants.size(), 100000u);
  EXPECT_EQ(compiler.compiles, 2); // each variant compiled once
}

TEST(CallStats, TheNativeDispatcherPathCountsToo) {
  fake::Compiler compiler;
  compiler.nativeDispatcher = true;
  FunctionTable table("scale", &compiler);
  std::vector<float> x(4, 1.0f);
  std::vector<Output> out;
  int variant;
  Error error;
  ASSERT_TRUE(table.call({fake::vectorArg(x)}, out, variant, error));
  std::free(out[0].data);
  ASSERT_EQ(table.dispatcherCoverage(), 1u);
  std::vector<std::thread> pool;
  for (int t = 0; t < 3; ++t)
    pool.emplace_back([&] {
      std::vector<Output> o;
      int v;
      Error e;
      for (int i = 0; i < 3000; ++i) {
        if (table.call({fake::vectorArg(x)}, o, v, e))
          std::free(o[0].data);
      }
    });
  for (std::thread &t : pool)
    t.join();
  Stats st = table.stats();
  EXPECT_EQ(st.calls, 9001u);
  EXPECT_EQ(st.variantCalls, std::vector<size_t>{9001});
  EXPECT_EQ(st.callVariants.size(), 9001u);
}

TEST(CallStats, CApiCallsFromSeveralThreadsAreAllCounted) {
  fake::Compiler compiler;
  tsl_function fn;
  fn.table = std::make_unique<FunctionTable>("scale", &compiler);
  std::vector<std::thread> pool;
  std::atomic<int> failures{0};
  for (int t = 0; t < 4; ++t)
    pool.emplace_back([&] {
      float x[4] = {1, 2, 3, 4};
      int64_t shape[1] = {4};
      tsl_arg a = fake::hostF32Arg(x, shape);
      for (int i = 0; i < 2500; ++i) {
        tsl_tensor *outs = nullptr;
        int32_t n = 0;
        if (tsl_function_call(&fn, &a, 1, &outs, &n) != TSL_OK ||
            static_cast<const float *>(outs[0].data)[3] != 8)
          ++failures;
        else
          tsl_outputs_free(outs, n);
      }
    });
  for (std::thread &t : pool)
    t.join();
  EXPECT_EQ(failures, 0);
  int32_t compiles = 0, calls = 0;
  ASSERT_EQ(tsl_function_stats(&fn, &compiles, &calls), TSL_OK);
  EXPECT_EQ(calls, 10000);
  EXPECT_EQ(compiles, 1); // the threads that missed waited for one compile
}

// A kernel that calls another table: the inner call must not share (and
// reset) the outer call's context.
FunctionTable *innerTable = nullptr;
tsl_rt_context *innerContext = nullptr, *outerContext = nullptr;

int32_t kernelRecordingContext(void **buffers, int64_t *syms,
                               tsl_rt_context *ctx) {
  innerContext = ctx;
  return fake::kernelDouble(buffers, syms, ctx);
}

int32_t kernelCallingAnotherTable(void **buffers, int64_t *syms,
                                  tsl_rt_context *ctx) {
  outerContext = ctx;
  int64_t n = syms[1];
  auto *out = static_cast<float *>(tsl_rt_alloc(ctx, n * 4));
  std::vector<float> x(static_cast<const float *>(buffers[0]),
                       static_cast<const float *>(buffers[0]) + n);
  std::vector<Output> inner;
  int variant;
  Error error;
  buffers[499] = out; // a buffer of its own, which the inner call must keep
  if (!out || !innerTable->call({fake::vectorArg(x)}, inner, variant, error) ||
      buffers[499] != out)
    return 1;
  for (int64_t i = 0; i < n; ++i) // 4x: the inner call doubled it
    out[i] = 2 * static_cast<const float *>(inner[0].data)[i];
  std::free(inner[0].data);
  buffers[1] = out;
  return 0;
}

TEST(CallStats, ACallFromInsideAKernelGetsItsOwnContext) {
  // Both kernels have more buffers than a call keeps on its stack: the
  // inner call must not take the outer call's array either.
  fake::Compiler innerCompiler, outerCompiler;
  innerCompiler.make = [](const std::vector<CallArg> &, bool, VariantCode &out,
                          Error &) {
    out = fake::scaleVariant(fake::matchAny, kernelRecordingContext);
    out.numValues = 500;
    return true;
  };
  outerCompiler.make = [](const std::vector<CallArg> &, bool, VariantCode &out,
                          Error &) {
    out = fake::scaleVariant(fake::matchAny, kernelCallingAnotherTable);
    out.numValues = 500;
    return true;
  };
  FunctionTable inner("inner", &innerCompiler), outer("outer", &outerCompiler);
  innerTable = &inner;
  std::vector<float> x{1, 2, 3};
  for (int i = 0; i < 3; ++i) {
    std::vector<Output> out;
    int variant;
    Error error;
    ASSERT_TRUE(outer.call({fake::vectorArg(x)}, out, variant, error))
        << error.message;
    EXPECT_NE(innerContext, outerContext);
    EXPECT_EQ(static_cast<const float *>(out[0].data)[2], 12);
    std::free(out[0].data);
  }
  innerTable = nullptr;
}

TEST(CallStats, PeakBytesIsTheLargestCallsHostMemory) {
  fake::Compiler compiler;
  twoVariants(compiler);
  FunctionTable table("scale", &compiler);
  EXPECT_EQ(table.stats().peakBytes, 0); // no call yet
  // N = 4: a 16-byte result (allocations round to 64 bytes); N = 200: 800
  // bytes, 832 rounded. The peak is the larger call's, not their sum.
  warmUp(table);
  EXPECT_EQ(table.stats().peakBytes, 832);
  std::vector<float> small(4, 1.0f);
  std::vector<Output> out;
  int variant;
  Error error;
  ASSERT_TRUE(table.call({fake::vectorArg(small)}, out, variant, error));
  std::free(out[0].data);
  EXPECT_EQ(table.stats().peakBytes, 832);
}

/// The context's accounting itself: live bytes go up with each allocation
/// and down with each free or hand-over, the peak stays the most at once.
TEST(CallStats, AContextCountsItsLiveAndPeakBytes) {
  tsl_rt_context *ctx = tsl_rt_context_create();
  void *a = tsl_rt_alloc(ctx, 1000); // 1024 rounded
  void *b = tsl_rt_alloc(ctx, 64);
  EXPECT_EQ(ctx->liveBytes, 1088);
  tsl_rt_free(ctx, a);
  EXPECT_EQ(ctx->liveBytes, 64);
  void *c = tsl_rt_alloc(ctx, 10); // 64
  EXPECT_EQ(ctx->liveBytes, 128);
  EXPECT_EQ(ctx->peakBytes, 1088);
  ASSERT_EQ(tsl_rt_context_take(ctx, b), 1); // a result handed over
  EXPECT_EQ(ctx->liveBytes, 64);
  std::free(b);
  tsl_rt_context_release(ctx, &c, 1); // c kept
  EXPECT_EQ(ctx->liveBytes, 64);
  resetContext(ctx); // c freed: the next call starts from nothing
  EXPECT_EQ(ctx->liveBytes, 0);
  EXPECT_EQ(ctx->peakBytes, 0);
  tsl_rt_context_destroy(ctx);
}

} // namespace
