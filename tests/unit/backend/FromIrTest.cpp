// The backends from IR text, without the frontend: each function below is
// parsed, compiled for the CPU and for the GPU emulator, and run at several
// shapes against the reference interpreter. Both backends must succeed
// exactly when the interpreter does (division by zero, an index out of
// bounds) and agree with it: integers exactly, floats within 1e-5 relative.
#include "backend/cpu/CpuKernel.h"
#include "backend/nvptx/GpuKernel.h"
#include "ir/IrText.h"
#include "ir/Verifier.h"

#include <cmath>
#include <gtest/gtest.h>
#include <random>

using namespace tsl;

namespace {

const char *kModule = R"IR(
func @f(%x: f32[N, M], %b: f32[M]) -> (f32[N, M], f32[N]) {
  symbol N: dynamic
  symbol M: dynamic
  %0 = sub(%x, %b) : f32[N, M]
  %1 = exp(%0) : f32[N, M]
  %2 = constant() {dtype = f32, value = 0.5} : f32[]
  %3 = mul(%1, %2) : f32[N, M]
  %4 = reduce_sum(%3) {axes = [1], keepdim = false} : f32[N]
  return %3, %4
}

func @g(%a: f32[N, 4], %w: f32[4, 3]) -> (f32[N, 3]) {
  symbol N: dynamic
  %0 = matmul(%a, %w) : f32[N, 3]
  %1 = relu(%0) : f32[N, 3]
  return %1
}

func @h(%m: bool[N], %x: f32[N]) -> (f32[u0]) {
  symbol N: dynamic
  symbol u0: unbacked desc="the element count of masked_select(...)"
  %0 = masked_select(%x, %m) : f32[u0]
  return %0
}

func @k(%x: f32[N], %i: i64[K]) -> (f32[K]) {
  symbol N: dynamic
  symbol K: dynamic
  %0 = index_select(%x, %i) {axis = 0} : f32[K]
  return %0
}

func @d(%a: i32[N], %b: i32[N]) -> (i32[N]) {
  symbol N: dynamic
  %0 = div(%a, %b) : i32[N]
  return %0
}
)IR";

/// A tensor of \p shape with values from \p rng: floats normal, bools 50%,
/// ints uniform in [lo, hi].
Tensor randomTensor(DType dtype, std::vector<int64_t> shape, std::mt19937 &rng,
                    int64_t lo = -4, int64_t hi = 4) {
  Tensor t = Tensor::zeros(dtype, std::move(shape));
  std::normal_distribution<double> normal;
  std::uniform_int_distribution<int64_t> ints(lo, hi);
  for (size_t i = 0; i < t.numel(); ++i) {
    if (isFloat(dtype))
      t.setF(i, normal(rng));
    else
      t.setI(i, dtype == DType::Bool ? ints(rng) > 0 : ints(rng));
  }
  return t;
}

ArgValue arg(Tensor t) {
  ArgValue a;
  a.tensor = std::move(t);
  return a;
}

/// Empty when \p got matches \p want, else what differs.
std::string compare(const std::vector<Tensor> &want,
                    const std::vector<Tensor> &got) {
  if (want.size() != got.size())
    return "result count " + std::to_string(got.size());
  for (size_t r = 0; r < want.size(); ++r) {
    if (want[r].typeString() != got[r].typeString())
      return "result " + std::to_string(r) + " is " + got[r].typeString() +
             ", want " + want[r].typeString();
    for (size_t i = 0; i < want[r].numel(); ++i) {
      double a = want[r].getF(i), b = got[r].getF(i);
      if (std::fabs(a - b) > 1e-5 * std::fabs(a) + 1e-6)
        return "result " + std::to_string(r) + " element " + std::to_string(i) +
               ": " + std::to_string(b) + ", want " + std::to_string(a);
    }
  }
  return {};
}

class FromIr : public ::testing::Test {
protected:
  void SetUp() override {
    std::string error;
    ASSERT_TRUE(parseModule(kModule, module, error)) << error;
    for (const Function &fn : module.functions) {
      Expected<void> verified = verifyFunction(fn);
      ASSERT_TRUE(verified) << fn.name << ": " << verified.error().message;
    }
  }
  const Function &fn(const std::string &name) {
    for (const Function &f : module.functions)
      if (f.name == name)
        return f;
    ADD_FAILURE() << "no function " << name;
    return module.functions.front();
  }
  /// Runs \p name on each argument list with the interpreter, the CPU
  /// kernel and the GPU kernels under the emulator; returns how many of the
  /// calls the interpreter rejected.
  int agree(const std::string &name,
            const std::vector<std::vector<ArgValue>> &calls) {
    const Function &f = fn(name);
    Expected<std::unique_ptr<CpuKernel>> cpuCompiled = CpuKernel::compile(f);
    EXPECT_TRUE(cpuCompiled) << name << ": " << cpuCompiled.error().message;
    Expected<std::unique_ptr<GpuKernel>> gpuCompiled =
        GpuKernel::compile(f, GpuTarget::Emulator);
    EXPECT_TRUE(gpuCompiled) << name << ": " << gpuCompiled.error().message;
    if (!cpuCompiled || !gpuCompiled)
      return -1;
    std::unique_ptr<CpuKernel> cpu = std::move(*cpuCompiled);
    std::unique_ptr<GpuKernel> gpu = std::move(*gpuCompiled);
    int rejected = 0;
    for (size_t c = 0; c < calls.size(); ++c) {
      std::vector<Tensor> want, onCpu, onGpu;
      RunError e0, e1, e2;
      bool ok = interpret(f, calls[c], want, e0);
      rejected += !ok;
      EXPECT_EQ(cpu->run(calls[c], onCpu, e1), ok)
          << name << " call " << c << ": " << e0.message << " / " << e1.message;
      EXPECT_EQ(gpu->run(calls[c], onGpu, e2), ok)
          << name << " call " << c << ": " << e0.message << " / " << e2.message;
      if (!ok)
        continue;
      EXPECT_EQ(compare(want, onCpu), "") << name << " call " << c << " (cpu)";
      EXPECT_EQ(compare(want, onGpu), "") << name << " call " << c << " (gpu)";
    }
    return rejected;
  }
  Module module;
  std::mt19937 rng{7};
};

TEST_F(FromIr, ElementwiseAndReductionWithBroadcast) {
  std::vector<std::vector<ArgValue>> calls;
  for (auto [n, m] :
       {std::pair<int64_t, int64_t>{1, 1}, {3, 5}, {0, 4}, {17, 33}, {4, 0}})
    calls.push_back({arg(randomTensor(DType::F32, {n, m}, rng)),
                     arg(randomTensor(DType::F32, {m}, rng))});
  EXPECT_EQ(agree("f", calls), 0);
}

TEST_F(FromIr, Matmul) {
  std::vector<std::vector<ArgValue>> calls;
  for (int64_t n : {0, 1, 9, 64})
    calls.push_back({arg(randomTensor(DType::F32, {n, 4}, rng)),
                     arg(randomTensor(DType::F32, {4, 3}, rng))});
  EXPECT_EQ(agree("g", calls), 0);
}

TEST_F(FromIr, UnbackedResultSize) {
  std::vector<std::vector<ArgValue>> calls;
  for (int64_t n : {0, 1, 10, 100})
    calls.push_back({arg(randomTensor(DType::Bool, {n}, rng)),
                     arg(randomTensor(DType::F32, {n}, rng))});
  EXPECT_EQ(agree("h", calls), 0);
}

TEST_F(FromIr, IndexOutOfBoundsFailsEverywhere) {
  std::vector<std::vector<ArgValue>> calls;
  calls.push_back({arg(randomTensor(DType::F32, {5}, rng)),
                   arg(randomTensor(DType::I64, {8}, rng, 0, 4))});
  calls.push_back({arg(randomTensor(DType::F32, {5}, rng)),
                   arg(randomTensor(DType::I64, {3}, rng, 5, 5))});
  calls.push_back({arg(randomTensor(DType::F32, {5}, rng)),
                   arg(randomTensor(DType::I64, {0}, rng))});
  EXPECT_EQ(agree("k", calls), 1);
}

TEST_F(FromIr, IntegerDivisionByZeroFailsEverywhere) {
  std::vector<std::vector<ArgValue>> calls;
  calls.push_back({arg(randomTensor(DType::I32, {6}, rng, -9, 9)),
                   arg(randomTensor(DType::I32, {6}, rng, 1, 3))});
  calls.push_back({arg(randomTensor(DType::I32, {6}, rng, -9, 9)),
                   arg(randomTensor(DType::I32, {6}, rng, 0, 0))});
  EXPECT_EQ(agree("d", calls), 1);
}

} // namespace
