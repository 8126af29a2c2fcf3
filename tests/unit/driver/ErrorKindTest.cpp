// The C API's status codes come from the kind of the error (support/Error.h),
// not from searching its message: every kind maps to one status, and calls
// that fail for each reason get the status of their kind. Integer division
// by zero in a kernel was TSL_INVALID_ARGUMENT (its message has neither
// "runtime check failed" nor "out of bounds"); a missing function was
// TSL_INVALID_ARGUMENT too.
#include "runtime/Runtime.h"
#include "support/Error.h"
#include "tsl/tsl_c.h"

#include <fstream>
#include <gtest/gtest.h>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace {

using tsl::ErrorKind;

const std::map<ErrorKind, tsl_status> kExpected = {
    {ErrorKind::Syntax, TSL_COMPILE_ERROR},
    {ErrorKind::Type, TSL_COMPILE_ERROR},
    {ErrorKind::Shape, TSL_COMPILE_ERROR},
    {ErrorKind::Io, TSL_NOT_FOUND},
    {ErrorKind::NotFound, TSL_NOT_FOUND},
    {ErrorKind::InvalidArgument, TSL_INVALID_ARGUMENT},
    {ErrorKind::NoVariant, TSL_NO_VARIANT},
    {ErrorKind::CacheLimit, TSL_NO_VARIANT},
    {ErrorKind::RuntimeCheck, TSL_RUNTIME_ERROR},
    {ErrorKind::Resource, TSL_RUNTIME_ERROR},
    {ErrorKind::Unsupported, TSL_UNSUPPORTED},
    {ErrorKind::Internal, TSL_COMPILE_ERROR},
};

TEST(ErrorKind, EachKindMapsToItsStatus) {
  ASSERT_EQ(kExpected.size(), std::size(tsl::kAllErrorKinds));
  std::set<std::string> names;
  for (ErrorKind k : tsl::kAllErrorKinds) {
    ASSERT_TRUE(kExpected.count(k)) << tsl::errorKindName(k);
    EXPECT_EQ(tsl::rt::statusFor(k), kExpected.at(k)) << tsl::errorKindName(k);
    EXPECT_NE(tsl::rt::statusFor(k), TSL_OK);
    names.insert(tsl::errorKindName(k));
  }
  EXPECT_EQ(names.size(), std::size(tsl::kAllErrorKinds)); // distinct names
}

/// A JIT runtime over a small module, called through the C API.
struct CallsThatFail : ::testing::Test {
  tsl_runtime *rt = nullptr;
  tsl_module *module = nullptr;

  void SetUp() override {
    std::string path = ::testing::TempDir() + "/error_kind_model.tsl";
    std::ofstream(path)
        << "fn quot(x: i64[N], y: i64[N]) -> i64[N] { return x / y; }\n"
           "dim E: dynamic;\n"
           "fn need_even(x: f32[E]) -> f32[E] { check(E % 2 == 0, \"E must "
           "be even\"); return x; }\n"
           "fn big(x: f32[N]) -> f32[N] { if N > 3 { return x * 2.0; } else "
           "{ return x; } }\n";
    tsl_runtime_options options{};
    options.cache_limit = 1;
    ASSERT_EQ(tsl_runtime_create(&options, &rt), TSL_OK);
    ASSERT_EQ(tsl_runtime_enable_jit(rt), TSL_OK);
    ASSERT_EQ(tsl_module_load_source(rt, path.c_str(), &module), TSL_OK)
        << tsl_last_error();
  }
  void TearDown() override { tsl_runtime_destroy(rt); }

  /// Calls \p name with one tensor argument per entry of \p data, each 1-d
  /// of its length (i64 when \p ints, else f32).
  tsl_status call(const char *name, std::vector<std::vector<int64_t>> data,
                  bool ints) {
    tsl_function *fn = nullptr;
    tsl_status s = tsl_module_get_function(module, name, &fn);
    if (s != TSL_OK)
      return s;
    std::vector<std::vector<float>> floats;
    floats.reserve(data.size());
    std::vector<int64_t> shapes(data.size());
    std::vector<tsl_arg> args(data.size());
    for (size_t i = 0; i < data.size(); ++i) {
      shapes[i] = static_cast<int64_t>(data[i].size());
      floats.emplace_back(data[i].begin(), data[i].end());
      tsl_tensor &t = args[i].tensor;
      t.data = ints ? static_cast<void *>(data[i].data())
                    : static_cast<void *>(floats.back().data());
      t.device = {1, 0};
      t.ndim = 1;
      t.dtype = ints ? tsl_dtype{0, 64, 1} : tsl_dtype{2, 32, 1};
      t.shape = &shapes[i];
    }
    tsl_tensor *out = nullptr;
    int32_t n = 0;
    s = tsl_function_call(fn, args.data(), static_cast<int32_t>(args.size()),
                          &out, &n);
    if (s == TSL_OK)
      tsl_outputs_free(out, n);
    return s;
  }
};

TEST_F(CallsThatFail, IntegerDivisionByZeroIsARuntimeError) {
  EXPECT_EQ(call("quot", {{6, 7}, {3, 2}}, true), TSL_OK) << tsl_last_error();
  EXPECT_EQ(call("quot", {{6, 7}, {3, 0}}, true), TSL_RUNTIME_ERROR);
  EXPECT_NE(std::string(tsl_last_error()).find("integer division by zero"),
            std::string::npos)
      << tsl_last_error();
}

TEST_F(CallsThatFail, AFailedCheckIsARuntimeError) {
  EXPECT_EQ(call("need_even", {{1, 2, 3}}, false), TSL_RUNTIME_ERROR);
  EXPECT_NE(std::string(tsl_last_error()).find("E must be even"),
            std::string::npos)
      << tsl_last_error();
}

TEST_F(CallsThatFail, ATypeErrorIsACompileError) {
  // i64 tensors for f32 parameters: the elaborator's error.
  EXPECT_EQ(call("need_even", {{1, 2}}, true), TSL_COMPILE_ERROR);
  EXPECT_NE(std::string(tsl_last_error()).find("must have element type f32"),
            std::string::npos)
      << tsl_last_error();
}

TEST_F(CallsThatFail, AMissingFunctionIsNotFound) {
  EXPECT_EQ(call("nope", {{1}}, false), TSL_NOT_FOUND);
  EXPECT_NE(std::string(tsl_last_error()).find("no function named 'nope'"),
            std::string::npos)
      << tsl_last_error();
}

TEST_F(CallsThatFail, WrongArityIsAnInvalidArgument) {
  EXPECT_EQ(call("need_even", {{1, 2}, {3, 4}}, false), TSL_INVALID_ARGUMENT);
}

TEST_F(CallsThatFail, PastTheCacheLimitIsNoVariant) {
  // Cache limit 1: N = 5 specializes, N = 6 compiles the all-dynamic
  // variant (guard N > 3), N = 2 is served by neither.
  EXPECT_EQ(call("big", {{1, 2, 3, 4, 5}}, false), TSL_OK) << tsl_last_error();
  EXPECT_EQ(call("big", {{1, 2, 3, 4, 5, 6}}, false), TSL_OK)
      << tsl_last_error();
  EXPECT_EQ(call("big", {{1, 2}}, false), TSL_NO_VARIANT);
  EXPECT_NE(std::string(tsl_last_error()).find("the cache limit"),
            std::string::npos)
      << tsl_last_error();
}

} // namespace

namespace {

/// Loads \p source (written to a temporary file) into a JIT runtime on
/// \p device; the status of tsl_module_load_source.
tsl_status loadSource(const std::string &name, const std::string &source,
                      tsl_device device, tsl_runtime **rt,
                      tsl_module **module) {
  std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream(path) << source;
  tsl_runtime_options options{};
  options.device = device;
  EXPECT_EQ(tsl_runtime_create(&options, rt), TSL_OK) << tsl_last_error();
  EXPECT_EQ(tsl_runtime_enable_jit(*rt), TSL_OK);
  return tsl_module_load_source(*rt, path.c_str(), module);
}

TEST(LoadsThatFail, AMissingImportIsNotFound) {
  tsl_runtime *rt = nullptr;
  tsl_module *module = nullptr;
  EXPECT_EQ(loadSource("missing_import.tsl",
                       "import \"no_such_block.tsl\" as b;\n"
                       "fn f(x: f32[N]) -> f32[N] { return x; }\n",
                       {1, 0}, &rt, &module),
            TSL_NOT_FOUND)
      << tsl_last_error();
  EXPECT_NE(std::string(tsl_last_error()).find("no_such_block.tsl"),
            std::string::npos)
      << tsl_last_error();
  tsl_runtime_destroy(rt);
}

TEST(LoadsThatFail, ASyntaxErrorIsACompileError) {
  tsl_runtime *rt = nullptr;
  tsl_module *module = nullptr;
  EXPECT_EQ(loadSource("syntax_error.tsl", "fn f(x: f32[N]) -> { return x; }\n",
                       {1, 0}, &rt, &module),
            TSL_COMPILE_ERROR)
      << tsl_last_error();
  tsl_runtime_destroy(rt);
}

} // namespace
