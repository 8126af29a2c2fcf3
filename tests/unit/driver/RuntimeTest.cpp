// The embedding API, on the CPU and on the GPU emulator (GPU variants with
// device tensors; CI has no GPU): calls from several threads on one
// function, results that are arguments, bad calls returning statuses with
// messages, failed checks; and a runtime without a compiler.
#include "tsl/tsl.h"

#include <atomic>
#include <cstdio>
#include <fstream>
#include <gtest/gtest.h>
#include <thread>

namespace {

std::string writeModel() {
  std::string path = ::testing::TempDir() + "/runtime_test_model.tsl";
  std::ofstream(path) << "dim N: dynamic;\n"
                         "fn axpy(a: f32[N], b: f32[N], k: int) -> f32[N] { "
                         "return a * 2.0 + b + k; }\n"
                         "fn need_even(a: f32[N]) -> f32[N] { check(N % 2 == "
                         "0, \"N must be even\"); return a; }\n"
                         "fn rowsum(x: f32[N, 3]) -> (f32[N], f32[N, 3]) { "
                         "return (sum(x, axis=1), x); }\n";
  return path;
}

/// Runs on the device of the parameter; tensors live in its memory (the
/// emulator's device memory is host memory).
struct Fixture : ::testing::TestWithParam<tsl_device> {
  tsl::Runtime rt;
  tsl::Module module;
  tsl_device dev() const { return GetParam(); }
  void SetUp() override {
    ASSERT_TRUE(tsl::Runtime::create(rt, true, 8, dev()).ok());
    tsl::Status s = rt.loadSource(writeModel(), module);
    ASSERT_TRUE(s.ok()) << s.message;
  }
};

TEST_P(Fixture, ConcurrentCallsOnOneFunction) {
  tsl::Function axpy;
  ASSERT_TRUE(module.function("axpy", axpy).ok());
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 40; ++i) {
        int64_t n = 1 + (t * 7 + i) % 23;
        std::vector<float> a(n), b(n);
        for (int64_t j = 0; j < n; ++j) {
          a[j] = static_cast<float>(j);
          b[j] = static_cast<float>(t);
        }
        std::vector<tsl::Output> out;
        tsl::Status s = axpy.call({tsl::Arg::f32(a.data(), {n}, dev()),
                                   tsl::Arg::f32(b.data(), {n}, dev()),
                                   tsl::Arg::integer(i)},
                                  out);
        if (!s.ok() || out.size() != 1 ||
            out[0].shape() != std::vector<int64_t>{n} ||
            out[0].raw().device.device_type != dev().device_type) {
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
  // `N` is dynamic and `k` auto: at most a static-k and a dynamic-k variant.
  EXPECT_LE(axpy.compiles(), 2);
}

TEST_P(Fixture, BadCallsReturnErrorsNamingTheArgument) {
  tsl::Function axpy;
  ASSERT_TRUE(module.function("axpy", axpy).ok());
  std::vector<float> a(4), b(5);
  std::vector<tsl::Output> out;
  tsl::Status s =
      axpy.call({tsl::Arg::f32(a.data(), {4}, dev()),
                 tsl::Arg::f32(b.data(), {5}, dev()), tsl::Arg::integer(1)},
                out);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message.find("'b'"), std::string::npos) << s.message;
  s = axpy.call({tsl::Arg::f32(nullptr, {4}, dev()),
                 tsl::Arg::f32(b.data(), {4}, dev()), tsl::Arg::integer(1)},
                out);
  EXPECT_EQ(s.code, TSL_INVALID_ARGUMENT);
  EXPECT_NE(s.message.find("has no data"), std::string::npos) << s.message;
  s = axpy.call({tsl::Arg::f32(a.data(), {4}, dev())}, out);
  EXPECT_FALSE(s.ok());
  std::vector<int32_t> ints(4);
  s = axpy.call({tsl::Arg::tensor(ints.data(), {0, 32, 1}, {4}, dev()),
                 tsl::Arg::f32(a.data(), {4}, dev()), tsl::Arg::integer(1)},
                out);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message.find("element type f32"), std::string::npos) << s.message;
}

TEST_P(Fixture, ReductionsAndResultsThatAreArguments) {
  tsl::Function rowsum;
  ASSERT_TRUE(module.function("rowsum", rowsum).ok());
  std::vector<float> x = {1, 2, 3, 4, 5, 6};
  std::vector<tsl::Output> out;
  tsl::Status s = rowsum.call({tsl::Arg::f32(x.data(), {2, 3}, dev())}, out);
  ASSERT_TRUE(s.ok()) << s.message;
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].data<float>()[0], 6.0f);
  EXPECT_EQ(out[0].data<float>()[1], 15.0f);
  // The second result is the argument itself: a copy the caller owns.
  EXPECT_NE(out[1].data<float>(), x.data());
  EXPECT_EQ(out[1].data<float>()[5], 6.0f);
}

TEST_P(Fixture, FailedCheckIsARuntimeErrorWithItsLine) {
  tsl::Function needEven;
  ASSERT_TRUE(module.function("need_even", needEven).ok());
  std::vector<float> a(3);
  std::vector<tsl::Output> out;
  tsl::Status s = needEven.call({tsl::Arg::f32(a.data(), {3}, dev())}, out);
  EXPECT_EQ(s.code, TSL_RUNTIME_ERROR);
  EXPECT_NE(s.message.find("runtime_test_model.tsl:3:"), std::string::npos)
      << s.message;
  EXPECT_NE(s.message.find("N must be even"), std::string::npos) << s.message;
}

INSTANTIATE_TEST_SUITE_P(
    Devices, Fixture,
    ::testing::Values(tsl_device{1, 0}, tsl_device{TSL_DEVICE_GPU_EMULATOR, 0}),
    [](const ::testing::TestParamInfo<tsl_device> &info) {
      return std::string(info.param.device_type == 1 ? "Cpu" : "GpuEmulator");
    });

TEST(Runtime, WithoutACompilerSourceModulesAreUnsupported) {
  tsl::Runtime rt;
  ASSERT_TRUE(tsl::Runtime::create(rt, /*jit=*/false).ok());
  tsl::Module module;
  tsl::Status s = rt.loadSource(writeModel(), module);
  EXPECT_EQ(s.code, TSL_UNSUPPORTED);
  EXPECT_NE(s.message.find("no compiler"), std::string::npos);
  s = rt.loadSource("/no/such/file.tsl", module);
  EXPECT_EQ(s.code, TSL_NOT_FOUND);
}

TEST(Runtime, BrokenSourceFailsAtLoad) {
  std::string path = ::testing::TempDir() + "/broken.tsl";
  std::ofstream(path) << "fn f(x: f32[N]) -> f32[N] { return x + ; }\n";
  tsl::Runtime rt;
  ASSERT_TRUE(tsl::Runtime::create(rt).ok());
  tsl::Module module;
  tsl::Status s = rt.loadSource(path, module);
  EXPECT_EQ(s.code, TSL_COMPILE_ERROR);
  EXPECT_NE(s.message.find("broken.tsl:1:"), std::string::npos) << s.message;
}

} // namespace
