// The CPU backend against the reference interpreter (the oracle) on random
// programs: elementwise chains with broadcasting (fused), reductions,
// matmul, layout ops, over several sizes per compiled variant.
#include "backend/cpu/CpuKernel.h"
#include "backend/nvptx/GpuKernel.h"
#include "frontend/Elaborator.h"
#include "ir/Verifier.h"

#include <cmath>
#include <functional>
#include <gtest/gtest.h>
#include <random>
#include <sstream>

using namespace tsl;

namespace {

bool compile(const std::string &source,
             const std::map<std::string, ExampleArg> &examples, Function &fn,
             std::string &errors) {
  SourceManager sm;
  std::ostringstream sink;
  DiagnosticEngine diags(sm, sink);
  ModuleLoader loader(sm, diags);
  loader.setStdlibDir(std::string(TSL_SOURCE_DIR) + "/stdlib");
  const LoadedModule *m = loader.loadText("d.tsl", source);
  ElaborateOptions options;
  options.examples = examples;
  bool ok = m && elaborateFunction(*m, "f", options, diags, fn);
  errors = sink.str();
  return ok;
}

/// Random expression over the tensors x0..x2 (f32[N, M], f32[M], f32[N, 1]).
std::string randomExpr(std::mt19937 &rng, int depth) {
  static const char *leaves[] = {"x0", "x1", "x2", "(x2 * 1.5)", "x0", "x1"};
  if (depth == 0)
    return leaves[rng() % 6];
  switch (rng() % 9) {
  case 0:
    return "(" + randomExpr(rng, depth - 1) + " + " +
           randomExpr(rng, depth - 1) + ")";
  case 1:
    return "(" + randomExpr(rng, depth - 1) + " * " +
           randomExpr(rng, depth - 1) + ")";
  case 2:
    return "(" + randomExpr(rng, depth - 1) + " - " +
           randomExpr(rng, depth - 1) + ")";
  case 3:
    return "relu(" + randomExpr(rng, depth - 1) + ")";
  case 4:
    return "tanh(" + randomExpr(rng, depth - 1) + ")";
  case 5:
    return "exp(" + randomExpr(rng, depth - 1) + " * 0.1)";
  case 6:
    return "where(" + randomExpr(rng, depth - 1) + " > 0.0, x0, " +
           randomExpr(rng, depth - 1) + ")";
  case 7:
    return "max(" + randomExpr(rng, depth - 1) + ", x1)";
  default:
    return "sigmoid(" + randomExpr(rng, depth - 1) + ")";
  }
}

const char *kReductions[] = {"sum(e, axis=1)",
                             "mean(e, axis=0, keepdim=true)",
                             "max(e, axis=-1)",
                             "transpose(e, 0, 1) @ e",
                             "concat([e, e * 2.0], axis=0)",
                             "e[1:, :]",
                             "reshape(e, [-1])",
                             "pad(e, [1, 2])",
                             "e"};

/// Compiles \p fn for the backend under test; runs one call.
using Runner = std::function<bool(
    const Function &fn, const std::vector<ArgValue> &args,
    std::vector<Tensor> &out, RunError &error, std::string &compileError)>;

void compareRandomPrograms(const Runner &runOn) {
  std::mt19937 rng(99);
  int compared = 0;
  for (int trial = 0; trial < 40; ++trial) {
    std::string body = randomExpr(rng, 1 + static_cast<int>(rng() % 3));
    std::string tail = kReductions[rng() % 9];
    std::string source =
        "dim N: dynamic;\ndim M: dynamic;\n"
        "fn f(x0: f32[N, M], x1: f32[M], x2: f32[N, 1]) -> f32[?, ?] {\n"
        "  let e = " +
        body +
        " + x0 * 0.0;\n"
        "  let r = " +
        tail +
        ";\n"
        "  return reshape(r, [1, -1]);\n}\n";
    std::map<std::string, ExampleArg> ex;
    ex["x0"] = ExampleArg{false, 0, DType::F32, {3, 4}};
    ex["x1"] = ExampleArg{false, 0, DType::F32, {4}};
    ex["x2"] = ExampleArg{false, 0, DType::F32, {3, 1}};
    Function fn;
    std::string errors;
    ASSERT_TRUE(compile(source, ex, fn, errors)) << source << errors;
    std::string error;
    ASSERT_TRUE(verifyFunction(fn, error)) << error;
    // One variant serves every size (N and M are dynamic).
    for (auto [n, m] : std::vector<std::pair<int64_t, int64_t>>{
             {3, 4}, {5, 7}, {2, 9}, {6, 4}}) {
      std::vector<ArgValue> args(3);
      std::normal_distribution<double> normal;
      std::vector<std::vector<int64_t>> shapes{{n, m}, {m}, {n, 1}};
      for (size_t i = 0; i < 3; ++i) {
        args[i].tensor = Tensor::zeros(DType::F32, shapes[i]);
        for (size_t k = 0; k < args[i].tensor.numel(); ++k)
          args[i].tensor.setF(k, normal(rng));
      }
      std::vector<Tensor> expected, actual;
      RunError e1, e2;
      bool okInterp = interpret(fn, args, expected, e1);
      bool okCpu = runOn(fn, args, actual, e2, error);
      ASSERT_TRUE(error.empty()) << error << "\n" << source;
      ASSERT_EQ(okInterp, okCpu)
          << source << "\ninterp: " << e1.message << "\ncpu: " << e2.message;
      if (!okInterp)
        continue;
      ASSERT_EQ(expected[0].shape(), actual[0].shape()) << source;
      for (size_t k = 0; k < expected[0].numel(); ++k) {
        double want = expected[0].getF(k), got = actual[0].getF(k);
        ASSERT_NEAR(got, want, 1e-4 + 1e-4 * std::fabs(want))
            << source << " at " << k << " (N=" << n << ", M=" << m << ")";
      }
      ++compared;
    }
  }
  EXPECT_GT(compared, 100);
}

/// The CPU backend, with every op outlined above \p outlineOpsAbove ops.
Runner cpuRunner(size_t outlineOpsAbove) {
  return
      [outlineOpsAbove](const Function &fn, const std::vector<ArgValue> &args,
                        std::vector<Tensor> &out, RunError &error,
                        std::string &compileError) {
        std::unique_ptr<CpuKernel> kernel =
            CpuKernel::compile(fn, compileError, outlineOpsAbove);
        return kernel && kernel->run(args, out, error);
      };
}

TEST(Differential, CpuBackendMatchesTheInterpreter) {
  compareRandomPrograms(cpuRunner(kOutlineOpsAbove));
}

// Every op in its own LLVM function (what functions of more than 256 ops
// get): the buffer array carries the values between them.
TEST(Differential, OutlinedCpuOpsMatchTheInterpreter) {
  compareRandomPrograms(cpuRunner(0));
}

// The GPU kernels (grid-stride loops, one launch per op, device memory and
// the launch protocol) under the emulator: CI has no GPU.
TEST(Differential, GpuKernelsMatchTheInterpreter) {
  compareRandomPrograms(
      [](const Function &fn, const std::vector<ArgValue> &args,
         std::vector<Tensor> &out, RunError &error, std::string &compileError) {
        std::unique_ptr<GpuKernel> kernel =
            GpuKernel::compile(fn, GpuTarget::Emulator, compileError);
        return kernel && kernel->run(args, out, error);
      });
}

// Runs of elementwise ops and last-axis reductions over the same rows are
// lowered as one loop over the rows (backend/cpu/CodegenRows.cpp): values
// read after the run stay full tensors, the rest live in per-row scratch.
TEST(Differential, RowFusedRunsMatchTheInterpreter) {
  const char *header = "import nn;\ndim B: dynamic;\ndim S: dynamic;\n"
                       "dim N: dynamic;\n";
  std::vector<std::string> bodies = {
      // softmax with its exp also returned (read after the run)
      "fn f(x: f32[B, S, N], w: f32[N], c: f32[B, S, 1]) -> (f32[B, S, N], "
      "f32[B, S, N]) {\n  let m = max(x, axis=-1, keepdim=true);\n"
      "  let e = exp(x - m);\n"
      "  return (e / sum(e, axis=-1, keepdim=true), e);\n}\n",
      // layer_norm: a rank-1 scale and shift, the same for every row
      "fn f(x: f32[B, S, N], w: f32[N], c: f32[B, S, 1]) -> f32[B, S, N] {\n"
      "  return nn.layer_norm(x + 1.0, w, w * 0.5);\n}\n",
      // the run's result feeds a matmul; per-row [B, S, 1] operands
      "fn f(x: f32[B, S, N], w: f32[N], c: f32[B, S, 1]) -> f32[B, S, S] {\n"
      "  let s = sum(x * c, axis=-1, keepdim=true) + c;\n"
      "  let p = (x - s) / (max(x, axis=-1, keepdim=true) + 10.0);\n"
      "  return p @ transpose(x, -1, -2);\n}\n",
      // log_softmax, then a reduction of the result over another axis
      "fn f(x: f32[B, S, N], w: f32[N], c: f32[B, S, 1]) -> f32[B, 1, N] {\n"
      "  return sum(nn.log_softmax(x * w), axis=1, keepdim=true);\n}\n",
  };
  std::mt19937 rng(7);
  int compared = 0;
  for (const std::string &body : bodies) {
    std::string source = header + body;
    std::map<std::string, ExampleArg> ex;
    ex["x"] = ExampleArg{false, 0, DType::F32, {2, 3, 5}};
    ex["w"] = ExampleArg{false, 0, DType::F32, {5}};
    ex["c"] = ExampleArg{false, 0, DType::F32, {2, 3, 1}};
    Function fn;
    std::string errors;
    ASSERT_TRUE(compile(source, ex, fn, errors)) << source << errors;
    std::string error;
    std::unique_ptr<CpuKernel> kernel = CpuKernel::compile(fn, error);
    ASSERT_NE(kernel, nullptr) << error << "\n" << source;
    // Empty batches, single rows and a row of one element included.
    for (std::vector<int64_t> bsn : std::vector<std::vector<int64_t>>{
             {2, 3, 5}, {0, 3, 5}, {1, 1, 1}, {3, 7, 33}, {4, 2, 130}}) {
      std::vector<ArgValue> args(3);
      std::normal_distribution<double> normal;
      std::vector<std::vector<int64_t>> shapes{
          bsn, {bsn[2]}, {bsn[0], bsn[1], 1}};
      for (size_t i = 0; i < 3; ++i) {
        args[i].tensor = Tensor::zeros(DType::F32, shapes[i]);
        for (size_t k = 0; k < args[i].tensor.numel(); ++k)
          args[i].tensor.setF(k, normal(rng));
      }
      std::vector<Tensor> expected, actual;
      RunError e1, e2;
      ASSERT_TRUE(interpret(fn, args, expected, e1)) << e1.message;
      ASSERT_TRUE(kernel->run(args, actual, e2)) << e2.message;
      ASSERT_EQ(expected.size(), actual.size());
      for (size_t r = 0; r < expected.size(); ++r) {
        ASSERT_EQ(expected[r].shape(), actual[r].shape()) << source;
        for (size_t k = 0; k < expected[r].numel(); ++k) {
          double want = expected[r].getF(k), got = actual[r].getF(k);
          ASSERT_NEAR(got, want, 1e-4 + 1e-4 * std::fabs(want))
              << source << " result " << r << " at " << k;
        }
      }
      ++compared;
    }
  }
  EXPECT_EQ(compared, 20);
}

} // namespace
