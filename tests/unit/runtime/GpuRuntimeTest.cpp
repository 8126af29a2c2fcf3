// The embedding API on a GPU: without a CUDA driver, asking for one fails
// clearly; on the GPU emulator (CI has no GPU) GPU variants are compiled,
// dispatched, called from several threads with device tensors, and report
// bad calls and failed checks as on the CPU.
#include "tsl/tsl.h"

#include <atomic>
#include <dlfcn.h>
#include <fstream>
#include <gtest/gtest.h>
#include <thread>

namespace {

constexpr tsl_device kEmulator{TSL_DEVICE_GPU_EMULATOR, 0};

std::string writeModel() {
  std::string path = ::testing::TempDir() + "/gpu_runtime_test_model.tsl";
  std::ofstream(path) << "dim N: dynamic;\n"
                         "fn axpy(a: f32[N], b: f32[N], k: int) -> f32[N] { "
                         "return a * 2.0 + b + k; }\n"
                         "fn need_even(a: f32[N]) -> f32[N] { check(N % 2 == "
                         "0, \"N must be even\"); return a; }\n"
                         "fn rowsum(x: f32[N, 3]) -> (f32[N], f32[N, 3]) { "
                         "return (sum(x, axis=1), x); }\n";
  return path;
}

bool cudaDriverPresent() {
  void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (h)
    dlclose(h);
  return h != nullptr;
}

TEST(GpuRuntime, CudaWithoutADriverIsUnsupported) {
  if (cudaDriverPresent())
    GTEST_SKIP() << "a CUDA driver is present";
  tsl::Runtime rt;
  tsl::Status s = tsl::Runtime::create(rt, true, 8, {2, 0});
  EXPECT_EQ(s.code, TSL_UNSUPPORTED);
  EXPECT_NE(s.message.find("no CUDA driver"), std::string::npos) << s.message;
  // The same process still runs CPU code.
  ASSERT_TRUE(tsl::Runtime::create(rt).ok());
}

struct EmulatorFixture : ::testing::Test {
  tsl::Runtime rt;
  tsl::Module module;
  void SetUp() override {
    ASSERT_TRUE(tsl::Runtime::create(rt, true, 8, kEmulator).ok());
    tsl::Status s = rt.loadSource(writeModel(), module);
    ASSERT_TRUE(s.ok()) << s.message;
  }
};

TEST_F(EmulatorFixture, ConcurrentCallsWithDeviceTensors) {
  tsl::Function axpy;
  ASSERT_TRUE(module.function("axpy", axpy).ok());
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 20; ++i) {
        int64_t n = 1 + (t * 7 + i) % 23;
        std::vector<float> a(n), b(n);
        for (int64_t j = 0; j < n; ++j) {
          a[j] = static_cast<float>(j);
          b[j] = static_cast<float>(t);
        }
        std::vector<tsl::Output> out;
        tsl::Status s = axpy.call({tsl::Arg::f32(a.data(), {n}, kEmulator),
                                   tsl::Arg::f32(b.data(), {n}, kEmulator),
                                   tsl::Arg::integer(i)},
                                  out);
        if (!s.ok() || out.size() != 1 ||
            out[0].shape() != std::vector<int64_t>{n} ||
            out[0].raw().device.device_type != TSL_DEVICE_GPU_EMULATOR) {
          ++wrong;
          continue;
        }
        for (int64_t j = 0; j < n; ++j)
          if (out[0].data<float>()[j] != 2.0f * j + t + i)
            ++wrong;
      }
    });
  for (auto &th : threads)
    th.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_LE(axpy.compiles(), 2);
}

TEST_F(EmulatorFixture, ReductionsAndResultsThatAreArguments) {
  tsl::Function rowsum;
  ASSERT_TRUE(module.function("rowsum", rowsum).ok());
  std::vector<float> x = {1, 2, 3, 4, 5, 6};
  std::vector<tsl::Output> out;
  tsl::Status s =
      rowsum.call({tsl::Arg::f32(x.data(), {2, 3}, kEmulator)}, out);
  ASSERT_TRUE(s.ok()) << s.message;
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].data<float>()[0], 6.0f);
  EXPECT_EQ(out[0].data<float>()[1], 15.0f);
  // The second result is the argument itself: a copy the caller owns.
  EXPECT_NE(out[1].data<float>(), x.data());
  EXPECT_EQ(out[1].data<float>()[5], 6.0f);
}

TEST_F(EmulatorFixture, BadCallsAndFailedChecks) {
  tsl::Function axpy, needEven;
  ASSERT_TRUE(module.function("axpy", axpy).ok());
  ASSERT_TRUE(module.function("need_even", needEven).ok());
  std::vector<float> a(4), b(4);
  std::vector<tsl::Output> out;
  // A CPU tensor passed to a GPU runtime names the argument and devices.
  tsl::Status s =
      axpy.call({tsl::Arg::f32(a.data(), {4}),
                 tsl::Arg::f32(b.data(), {4}, kEmulator), tsl::Arg::integer(1)},
                out);
  EXPECT_EQ(s.code, TSL_INVALID_ARGUMENT);
  EXPECT_NE(s.message.find("argument 0 is on device 1:0"), std::string::npos)
      << s.message;
  s = axpy.call({tsl::Arg::f32(a.data(), {4}, kEmulator),
                 tsl::Arg::f32(b.data(), {5}, kEmulator), tsl::Arg::integer(1)},
                out);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message.find("'b'"), std::string::npos) << s.message;
  std::vector<float> odd(3);
  s = needEven.call({tsl::Arg::f32(odd.data(), {3}, kEmulator)}, out);
  EXPECT_EQ(s.code, TSL_RUNTIME_ERROR);
  EXPECT_NE(s.message.find("gpu_runtime_test_model.tsl:3:"), std::string::npos)
      << s.message;
  EXPECT_NE(s.message.find("N must be even"), std::string::npos) << s.message;
}

TEST(GpuRuntime, StreamsNeedACudaRuntime) {
  tsl_runtime *rt = nullptr;
  ASSERT_EQ(tsl_runtime_create(nullptr, &rt), TSL_OK);
  ASSERT_EQ(tsl_runtime_enable_jit(rt), TSL_OK);
  tsl_module *module = nullptr;
  ASSERT_EQ(tsl_module_load_source(rt, writeModel().c_str(), &module), TSL_OK);
  tsl_function *fn = nullptr;
  ASSERT_EQ(tsl_module_get_function(module, "need_even", &fn), TSL_OK);
  float data[2] = {1, 2};
  int64_t shape[1] = {2};
  tsl_arg arg{};
  arg.tensor = {data, {1, 0}, 1, {2, 32, 1}, shape, nullptr, 0};
  tsl_tensor *out = nullptr;
  int32_t n = 0;
  int stream = 0; // any non-null pointer
  EXPECT_EQ(tsl_function_call_on_stream(fn, &arg, 1, &stream, &out, &n),
            TSL_INVALID_ARGUMENT);
  EXPECT_NE(std::string(tsl_last_error()).find("needs a CUDA runtime"),
            std::string::npos);
  ASSERT_EQ(tsl_function_call_on_stream(fn, &arg, 1, nullptr, &out, &n),
            TSL_OK);
  EXPECT_EQ(n, 1);
  tsl_outputs_free(out, n);
  tsl_runtime_destroy(rt);
}

} // namespace
