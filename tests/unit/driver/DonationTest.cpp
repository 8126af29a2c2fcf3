// Donated arguments through the C API (tsl_module_get_function_donating):
// the call takes over each donated malloc'd block, returning it as an
// output (written in place) or freeing it; on failure it stays the
// caller's. Run under ASan, a block freed twice or never is a failure.
#include "tsl/tsl_c.h"

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <gtest/gtest.h>
#include <malloc.h>
#include <string>
#include <vector>

namespace {

struct Donation : ::testing::Test {
  tsl_runtime *rt = nullptr;
  tsl_module *module = nullptr;
  void SetUp() override {
    std::string path = ::testing::TempDir() + "/donation_model.tsl";
    std::ofstream(path)
        << "dim N: dynamic;\n"
           "fn sgd(w: f32[N], g: f32[N]) -> f32[N] { return w - 0.5 * g; }\n"
           "fn total(w: f32[N], g: f32[N]) -> f32 { return sum(w * g); }\n"
           "fn checked(w: f32[N], k: int dynamic) -> f32[N] {\n"
           "  check(k > 0, \"k must be positive\");\n"
           "  return w + 1.0;\n"
           "}\n";
    tsl_runtime_options options{};
    ASSERT_EQ(tsl_runtime_create(&options, &rt), TSL_OK);
    ASSERT_EQ(tsl_runtime_enable_jit(rt), TSL_OK);
    ASSERT_EQ(tsl_module_load_source(rt, path.c_str(), &module), TSL_OK)
        << tsl_last_error();
  }
  void TearDown() override { tsl_runtime_destroy(rt); }

  tsl_function *donating(const char *name, std::vector<int32_t> params) {
    tsl_function *fn = nullptr;
    EXPECT_EQ(tsl_module_get_function_donating(
                  module, name, params.data(),
                  static_cast<int32_t>(params.size()), &fn),
              TSL_OK)
        << tsl_last_error();
    return fn;
  }

  /// A malloc'd f32 vector (what a donated argument must be).
  static float *block(std::vector<float> values) {
    auto *p = static_cast<float *>(std::malloc(values.size() * sizeof(float)));
    std::memcpy(p, values.data(), values.size() * sizeof(float));
    return p;
  }

  int64_t n = 4;
  tsl_arg tensor(float *data) {
    tsl_arg a{};
    a.tensor.data = data;
    a.tensor.device = {1, 0};
    a.tensor.ndim = 1;
    a.tensor.dtype = {2, 32, 1};
    a.tensor.shape = &n;
    return a;
  }
};

TEST_F(Donation, TheResultIsWrittenIntoTheDonatedBlock) {
  tsl_function *sgd = donating("sgd", {0});
  float *w = block({1, 2, 3, 4});
  std::vector<float> g = {2, 2, 2, 2};
  for (int step = 1; step <= 3; ++step) {
    tsl_arg args[2] = {tensor(w), tensor(g.data())};
    tsl_tensor *out = nullptr;
    int32_t count = 0;
    ASSERT_EQ(tsl_function_call(sgd, args, 2, &out, &count), TSL_OK)
        << tsl_last_error();
    ASSERT_EQ(count, 1);
    EXPECT_EQ(out[0].data, w); // in place: no new weights
    auto *r = static_cast<float *>(out[0].data);
    EXPECT_EQ(r[0], 1.0f - step);
    EXPECT_EQ(r[3], 4.0f - step);
    // The output owns the block now; the next step donates it again.
    w = r;
    out[0].data = nullptr;
    tsl_outputs_free(out, count);
  }
  std::free(w);
}

TEST_F(Donation, ABlockNoResultTakesIsFreed) {
  tsl_function *total = donating("total", {0, 1});
  auto call = [&](int64_t size) {
    n = size;
    float *w = block(std::vector<float>(size, 1.0f));
    float *g = block(std::vector<float>(size, 2.0f));
    tsl_arg args[2] = {tensor(w), tensor(g)};
    tsl_tensor *out = nullptr;
    int32_t count = 0;
    ASSERT_EQ(tsl_function_call(total, args, 2, &out, &count), TSL_OK)
        << tsl_last_error();
    EXPECT_EQ(*static_cast<float *>(out[0].data), 2.0f * size);
    tsl_outputs_free(out, count);
  };
  call(4); // compiles
  // Two 4 MiB blocks donated to a call whose result is a scalar: both are
  // freed (glibc's count of bytes in use does not grow by them; ASan's
  // allocator reports none, and its leak check covers it there).
  size_t before = mallinfo2().uordblks;
  call(1 << 20);
  size_t after = mallinfo2().uordblks;
  EXPECT_LT(after, before + (size_t(1) << 20)) << before << " -> " << after;
}

TEST_F(Donation, AFailedCallLeavesTheBlockToTheCaller) {
  tsl_function *checked = donating("checked", {0});
  float *w = block({1, 2, 3, 4});
  tsl_arg args[2] = {tensor(w), {}};
  args[1].is_int = 1;
  args[1].int_value = 0;
  tsl_tensor *out = nullptr;
  int32_t count = 0;
  EXPECT_EQ(tsl_function_call(checked, args, 2, &out, &count),
            TSL_RUNTIME_ERROR);
  EXPECT_NE(std::string(tsl_last_error()).find("k must be positive"),
            std::string::npos);
  EXPECT_EQ(w[3], 4.0f);
  std::free(w);
}

TEST_F(Donation, ADonatedBlockSharedWithAnotherArgumentIsRejected) {
  tsl_function *sgd = donating("sgd", {0});
  float *w = block({1, 2, 3, 4});
  tsl_arg args[2] = {tensor(w), tensor(w + 2)};
  tsl_tensor *out = nullptr;
  int32_t count = 0;
  EXPECT_EQ(tsl_function_call(sgd, args, 2, &out, &count),
            TSL_INVALID_ARGUMENT);
  EXPECT_NE(std::string(tsl_last_error())
                .find("argument 'w' is donated, but its memory is also "
                      "argument 'g'"),
            std::string::npos)
      << tsl_last_error();
  std::free(w);
}

TEST_F(Donation, BadRequestsAreErrors) {
  tsl_function *fn = nullptr;
  int32_t outside = 2, negative = -1, intParam = 1;
  EXPECT_EQ(tsl_module_get_function_donating(module, "sgd", &outside, 1, &fn),
            TSL_INVALID_ARGUMENT);
  EXPECT_NE(std::string(tsl_last_error()).find("'sgd' has no parameter 2"),
            std::string::npos);
  EXPECT_EQ(tsl_module_get_function_donating(module, "sgd", &negative, 1, &fn),
            TSL_INVALID_ARGUMENT);
  EXPECT_EQ(tsl_module_get_function_donating(module, "nope", &intParam, 1, &fn),
            TSL_NOT_FOUND);
  // An int parameter: the compile says so at the first call.
  ASSERT_EQ(
      tsl_module_get_function_donating(module, "checked", &intParam, 1, &fn),
      TSL_OK);
  float w[4] = {};
  tsl_arg args[2] = {tensor(w), {}};
  args[1].is_int = 1;
  args[1].int_value = 1;
  tsl_tensor *out = nullptr;
  int32_t count = 0;
  EXPECT_EQ(tsl_function_call(fn, args, 2, &out, &count), TSL_COMPILE_ERROR);
  EXPECT_NE(std::string(tsl_last_error())
                .find("parameter 'k' of 'checked' is an int: only tensor "
                      "buffers can be donated"),
            std::string::npos)
      << tsl_last_error();
}

TEST(DonationDevices, AGpuRuntimeDoesNotDonate) {
  tsl_runtime_options options{};
  options.device = {TSL_DEVICE_GPU_EMULATOR, 0};
  tsl_runtime *rt = nullptr;
  ASSERT_EQ(tsl_runtime_create(&options, &rt), TSL_OK);
  ASSERT_EQ(tsl_runtime_enable_jit(rt), TSL_OK);
  std::string path = ::testing::TempDir() + "/donation_gpu_model.tsl";
  std::ofstream(path) << "fn f(w: f32[4]) -> f32[4] { return w * 2.0; }\n";
  tsl_module *module = nullptr;
  ASSERT_EQ(tsl_module_load_source(rt, path.c_str(), &module), TSL_OK);
  tsl_function *fn = nullptr;
  int32_t first = 0;
  EXPECT_EQ(tsl_module_get_function_donating(module, "f", &first, 1, &fn),
            TSL_UNSUPPORTED);
  EXPECT_NE(std::string(tsl_last_error()).find("not supported: donated"),
            std::string::npos);
  tsl_runtime_destroy(rt);
}

} // namespace
