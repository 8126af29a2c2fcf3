// The emulator's memory counters through the runtime: a call of a GPU
// variant on the emulator records its kernels' counters for
// rt::gpuCountersOfLastCall (FunctionTable starts and ends the record
// around each call), and each call starts a new record.
#include "runtime/GpuCounters.h"
#include "tsl/tsl.h"

#include <fstream>
#include <gtest/gtest.h>

namespace {

TEST(GpuCountersCall, EachCallRecordsItsKernels) {
  tsl::rt::setGpuCountersForced(true);
  std::string path = ::testing::TempDir() + "/gpu_counters_call_model.tsl";
  std::ofstream(path) << "dim N: dynamic;\n"
                         "fn axpy(a: f32[N], b: f32[N]) -> f32[N] { "
                         "return a * 2.0 + b; }\n";
  tsl::Runtime rt;
  ASSERT_TRUE(
      tsl::Runtime::create(rt, true, 8, {TSL_DEVICE_GPU_EMULATOR, 0}).ok());
  tsl::Module module;
  ASSERT_TRUE(rt.loadSource(path, module).ok());
  tsl::Function axpy;
  ASSERT_TRUE(module.function("axpy", axpy).ok());
  std::vector<float> a(1000, 1.f), b(1000, 2.f);
  constexpr tsl_device kEmulator{TSL_DEVICE_GPU_EMULATOR, 0};
  for (int call = 0; call < 2; ++call) {
    std::vector<tsl::Output> out;
    tsl::Status s = axpy.call({tsl::Arg::f32(a.data(), {1000}, kEmulator),
                               tsl::Arg::f32(b.data(), {1000}, kEmulator)},
                              out);
    ASSERT_TRUE(s.ok()) << s.message;
    std::vector<tsl::rt::GpuKernelCounters> c =
        tsl::rt::gpuCountersOfLastCall();
    ASSERT_EQ(c.size(), 1u) << "call " << call;
    EXPECT_EQ(c[0].launches, 1) << "call " << call; // not the sum of both
    EXPECT_GT(c[0].globalRequests, 0);
    EXPECT_GE(c[0].globalSectors, c[0].globalIdeal);
  }
  tsl::rt::setGpuCountersForced(false);
}

} // namespace
