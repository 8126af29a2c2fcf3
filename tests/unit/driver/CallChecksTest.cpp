// The C API's checks of caller tensors: shapes whose byte size leaves int64
// or exceeds the per-tensor limit, and misaligned data, are rejected with a
// message naming the argument; they were accepted (a {1, 2^62} shape made
// the kernel read and write out of bounds; byte_offset 1 on f32 was used).
#include "support/SizeLimits.h"
#include "tsl/tsl_c.h"

#include <climits>
#include <cstring>
#include <fstream>
#include <gtest/gtest.h>
#include <string>
#include <vector>

namespace {

struct CallChecks : ::testing::Test {
  tsl_runtime *rt = nullptr;
  tsl_function *fn = nullptr;
  void SetUp() override {
    std::string path = ::testing::TempDir() + "/call_checks_model.tsl";
    std::ofstream(path) << "dim A: dynamic;\ndim B: dynamic;\n"
                           "fn twice(x: f32[A, B]) -> f32[A, B] { return x * "
                           "2.0; }\n";
    tsl_runtime_options options{};
    ASSERT_EQ(tsl_runtime_create(&options, &rt), TSL_OK);
    ASSERT_EQ(tsl_runtime_enable_jit(rt), TSL_OK);
    tsl_module *module = nullptr;
    ASSERT_EQ(tsl_module_load_source(rt, path.c_str(), &module), TSL_OK)
        << tsl_last_error();
    ASSERT_EQ(tsl_module_get_function(module, "twice", &fn), TSL_OK);
  }
  void TearDown() override { tsl_runtime_destroy(rt); }

  /// Calls `twice` with \p shape over \p data at \p byteOffset.
  tsl_status call(std::vector<int64_t> shape, void *data,
                  uint64_t byteOffset = 0) {
    tsl_arg arg{};
    arg.tensor.data = data;
    arg.tensor.device = {1, 0};
    arg.tensor.ndim = static_cast<int32_t>(shape.size());
    arg.tensor.dtype = {2, 32, 1};
    arg.tensor.shape = shape.data();
    arg.tensor.byte_offset = byteOffset;
    tsl_tensor *outputs = nullptr;
    int32_t n = 0;
    tsl_status s = tsl_function_call(fn, &arg, 1, &outputs, &n);
    if (s == TSL_OK) {
      EXPECT_EQ(n, 1);
      if (n == 1)
        result.assign(static_cast<float *>(outputs[0].data),
                      static_cast<float *>(outputs[0].data) + 4);
      tsl_outputs_free(outputs, n);
    }
    return s;
  }
  std::vector<float> result;
};

// nargs is checked against the function's arity before anything is sized by
// it (or any tsl_arg past the caller's array is read): INT32_MAX threw
// std::bad_alloc out of the C API. Before the first compile the arity is
// the source's, after it the variants'.
TEST_F(CallChecks, AnArgumentCountOtherThanTheArityIsRejected) {
  std::vector<float> data(4, 1.0f);
  int64_t shape[2] = {2, 2};
  tsl_arg args[2] = {};
  for (tsl_arg &a : args) {
    a.tensor.data = data.data();
    a.tensor.device = {1, 0};
    a.tensor.ndim = 2;
    a.tensor.dtype = {2, 32, 1};
    a.tensor.shape = shape;
  }
  tsl_tensor *outputs = nullptr;
  int32_t n = 0;
  for (int round = 0; round < 2; ++round) {
    for (int32_t nargs : {INT32_MAX, 2, 0}) {
      EXPECT_EQ(tsl_function_call(fn, args, nargs, &outputs, &n),
                TSL_INVALID_ARGUMENT);
      EXPECT_EQ(std::string(tsl_last_error()),
                "'twice' takes 1 arguments, got " + std::to_string(nargs));
    }
    ASSERT_EQ(tsl_function_call(fn, args, 1, &outputs, &n), TSL_OK)
        << tsl_last_error();
    tsl_outputs_free(outputs, n);
  }
}

TEST_F(CallChecks, AShapeWhoseByteSizeLeavesInt64IsRejected) {
  std::vector<float> data(4, 1.0f);
  for (std::vector<int64_t> shape :
       {std::vector<int64_t>{1, int64_t(1) << 62},
        std::vector<int64_t>{int64_t(1) << 32, int64_t(1) << 32},
        std::vector<int64_t>{int64_t(1) << 61, 2}}) {
    EXPECT_EQ(call(shape, data.data()), TSL_INVALID_ARGUMENT);
    EXPECT_NE(std::strstr(tsl_last_error(), "does not fit in 64 bits"), nullptr)
        << tsl_last_error();
  }
}

TEST_F(CallChecks, AShapeOverThePerTensorLimitIsRejected) {
  std::vector<float> data(4, 1.0f);
  EXPECT_EQ(call({1, int64_t(1) << 40}, data.data()), TSL_INVALID_ARGUMENT);
  EXPECT_NE(std::strstr(tsl_last_error(), "larger than the limit"), nullptr)
      << tsl_last_error();
  tsl::setMaxTensorBytes(8);
  EXPECT_EQ(call({1, 4}, data.data()), TSL_INVALID_ARGUMENT);
  EXPECT_NE(std::strstr(tsl_last_error(), "TSL_MAX_TENSOR_BYTES"), nullptr)
      << tsl_last_error();
  tsl::setMaxTensorBytes(0);
  EXPECT_EQ(call({1, 4}, data.data()), TSL_OK) << tsl_last_error();
  EXPECT_EQ(result, std::vector<float>(4, 2.0f));
}

TEST_F(CallChecks, MisalignedDataIsRejected) {
  alignas(16) float data[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  for (uint64_t offset : {1, 2, 3, 6}) {
    EXPECT_EQ(call({1, 4}, data, offset), TSL_INVALID_ARGUMENT);
    EXPECT_NE(std::strstr(tsl_last_error(), "argument 0 is misaligned"),
              nullptr)
        << tsl_last_error();
  }
  // An aligned offset is a view into the buffer.
  EXPECT_EQ(call({1, 4}, data, 16), TSL_OK) << tsl_last_error();
  EXPECT_EQ(result, (std::vector<float>{10, 12, 14, 16}));
}

TEST_F(CallChecks, AByteOffsetPastTheEndOfMemoryIsRejected) {
  alignas(16) float data[4] = {1, 2, 3, 4};
  EXPECT_EQ(call({1, 4}, data, UINT64_MAX - 3), TSL_INVALID_ARGUMENT);
  EXPECT_NE(std::strstr(tsl_last_error(), "past the end of memory"), nullptr)
      << tsl_last_error();
}

TEST_F(CallChecks, StridesOfAnOverflowingShapeAreRejected) {
  std::vector<float> data(4, 1.0f);
  std::vector<int64_t> shape{int64_t(1) << 40, int64_t(1) << 40};
  std::vector<int64_t> strides{int64_t(1) << 40, 1};
  tsl_arg arg{};
  arg.tensor.data = data.data();
  arg.tensor.device = {1, 0};
  arg.tensor.ndim = 2;
  arg.tensor.dtype = {2, 32, 1};
  arg.tensor.shape = shape.data();
  arg.tensor.strides = strides.data();
  tsl_tensor *outputs = nullptr;
  int32_t n = 0;
  EXPECT_EQ(tsl_function_call(fn, &arg, 1, &outputs, &n), TSL_INVALID_ARGUMENT);
  EXPECT_NE(std::strstr(tsl_last_error(), "does not fit in 64 bits"), nullptr)
      << tsl_last_error();
}

} // namespace
