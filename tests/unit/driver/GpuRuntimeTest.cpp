// What only GPU runtimes have (RuntimeTest runs the common calls on the
// CPU and the GPU emulator): without a CUDA driver, asking for one fails
// clearly; tensors on another device are errors naming the argument;
// streams need a CUDA runtime.
#include "tsl/tsl.h"

#include <dlfcn.h>
#include <fstream>
#include <gtest/gtest.h>

namespace {

constexpr tsl_device kEmulator{TSL_DEVICE_GPU_EMULATOR, 0};

std::string writeModel() {
  std::string path = ::testing::TempDir() + "/gpu_runtime_test_model.tsl";
  std::ofstream(path) << "dim N: dynamic;\n"
                         "fn axpy(a: f32[N], b: f32[N], k: int) -> f32[N] { "
                         "return a * 2.0 + b + k; }\n"
                         "fn need_even(a: f32[N]) -> f32[N] { check(N % 2 == "
                         "0, \"N must be even\"); return a; }\n";
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

TEST(GpuRuntime, ArgumentsOnAnotherDeviceAreErrors) {
  tsl::Runtime rt;
  ASSERT_TRUE(tsl::Runtime::create(rt, true, 8, kEmulator).ok());
  tsl::Module module;
  ASSERT_TRUE(rt.loadSource(writeModel(), module).ok());
  tsl::Function axpy;
  ASSERT_TRUE(module.function("axpy", axpy).ok());
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
