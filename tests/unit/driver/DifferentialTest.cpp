// The backends against the reference interpreter (the oracle) on random
// programs: each random program is elaborated once with dynamic dims,
// compiled once per backend variant (CPU, CPU as one LLVM function, GPU
// kernels under the emulator, and the runtime variant whose native matcher
// checks the guards), then run at many shapes: 0, 1 and random sizes, and
// now and then a shape that breaks a parameter's agreement. For every
// program x shape pair the interpreter's binding (ranges, divisibility,
// guards) must agree with the native matcher, every backend must succeed
// exactly when the interpreter does, and the results must agree.
//
// TSL_DIFF_PAIRS (default 10000, the CI count) sets how many program x shape
// pairs run and TSL_DIFF_SEED (default 1) the seed; scripts/soak.sh runs a
// million. TSL_DIFF_GRAD=1 runs the gradient programs only. A mismatch prints
// the program, the seed, its index and the sizes.
//
// The programs come from DifferentialGenerator.h. Coverage of ir/Ops.def
// is the generator's by construction: every even program probes one op of
// the table in turn, so the first kCoveragePeriod (2 x the table's size)
// programs of any seed use every op (attention formed by the fusion pass
// from softmax(e @ b^T * 0.5) @ e, call by outlining a helper called three
// times); GeneratorCoversEveryOpWithinAPeriod checks it for three seeds,
// 777 included, and fails for an op of the table without a probe.
// Gradients are compared the same way: every program 4j + 1 is a gradient
// program (DifferentialGenerator.h's gradProgram) whose results are the
// gradients (grad of a sum, or vjp with a cotangent of the values) with
// respect to one or two parameters or `let` values, through two gradient
// probes; the first gradCoveragePeriod() programs differentiate every op
// with a VJP rule (GeneratorDifferentiatesEveryRuleOpWithinAPeriod). The
// soak (more than 10,000 pairs, or TSL_DIFF_PROGRESS=n) prints progress to
// stderr every 1,000 (n) pairs. No case is left out: the two mismatches
// this test found (casts to f16/bf16 fused into their consumer did not
// round; the GPU index_select with no result elements checked no index) are
// fixed and generated again.
// Limits, by design:
//   - ops whose result is discontinuous in their operands (comparisons,
//     casts to integers, f16/bf16 rounding, argmax, argmin, topk, unique,
//     nonzero, masked_select's mask, where's condition) only see "exact"
//     operands (data, +, -, neg, abs, relu, max, min, scaling by powers of
//     two), which every backend computes bit for bit alike: a value one ulp
//     apart (fast exp/tanh polynomials) would flip them without a bug;
//     likewise the kinks of derivatives (max, min, abs, relu, sort, topk)
//     in the gradient probes, and no gradient flows through the f16/bf16
//     casts of random gradient programs (their backward rounds an inexact
//     cotangent);
//   - transcendental arguments are bounded (exp(tanh(x) * 3), sin(tanh(x) *
//     3), log(|x| + 0.5)) so ulp differences are not amplified past the
//     tolerance; in gradient programs tanh and sigmoid take erf of their
//     operand and sqrt an argument >= 0.25, as derivatives computed from a
//     saturated result (1 - y^2) lose their relative accuracy, which the
//     chain amplifies (the backends' fast tanh now saturates to exactly 1
//     where f32 tanh does, lit ops/tanh-saturates.tsl; these bounds are
//     about rounding, not that old difference);
//   - integer programs keep values small (no overflow), and i8 casts are
//     clamped: wrap-around is not what these programs test.
#include "backend/cpu/CpuKernel.h"
#include "backend/nvptx/GpuKernel.h"
#include "frontend/Elaborator.h"
#include "ir/Differentiate.h"
#include "ir/Pipeline.h"
#include "ir/Verifier.h"
#include "runtime/Variant.h"

#include "DifferentialGenerator.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <gtest/gtest.h>
#include <optional>
#include <random>
#include <set>
#include <sstream>

using namespace tsl;
using namespace tsl::diff;

namespace {

/// The generator's parameter (not ir/Function.h's).
using diff::Param;

/// Elaborates `f` of \p source; with \p unchecked, whatever it returns
/// (its declared result type not checked).
bool compile(const std::string &source,
             const std::map<std::string, ExampleArg> &examples, Function &fn,
             std::string &errors, bool unchecked = false) {
  SourceManager sm;
  std::ostringstream sink;
  DiagnosticEngine diags(sm, sink);
  ModuleLoader loader(sm, diags);
  loader.setStdlibDir(std::string(TSL_SOURCE_DIR) + "/stdlib");
  const LoadedModule *m = loader.loadText("d.tsl", source);
  ElaborateOptions options;
  options.examples = examples;
  if (unchecked)
    options.probe = [](const ShapeEnv &, const ProbeResult &) {};
  bool ok = m && elaborateFunction(*m, "f", options, diags, fn);
  errors = sink.str();
  return ok;
}

int64_t envInt(const char *name, int64_t fallback) {
  const char *v = std::getenv(name);
  if (!v || !*v)
    return fallback;
  char *end = nullptr;
  long long x = std::strtoll(v, &end, 10);
  return end && *end == 0 && x > 0 ? x : fallback;
}

// --- Running ---------------------------------------------------------------

/// A size for one dim: 0, 1, the example's, or random up to \p max.
int64_t randomSize(std::mt19937 &rng, int64_t example, int64_t max) {
  uint32_t r = rng() % 20;
  if (r < 2)
    return 0;
  if (r < 5)
    return 1;
  if (r < 7)
    return example;
  return 2 + static_cast<int64_t>(rng() % static_cast<uint32_t>(max - 1));
}

std::vector<ArgValue> makeArgs(const Program &p,
                               const std::vector<int64_t> &dims,
                               int64_t intValue, bool perturb,
                               std::mt19937 &rng) {
  std::vector<ArgValue> args(p.params.size());
  std::normal_distribution<double> normal;
  // A broken shape: one extent of one tensor parameter off by one.
  size_t broken = perturb ? rng() % (p.params.size() - 1) : SIZE_MAX;
  for (size_t i = 0; i < p.params.size(); ++i) {
    const Param &param = p.params[i];
    if (param.isInt) {
      args[i].isInt = true;
      args[i].intValue = intValue;
      continue;
    }
    std::vector<int64_t> shape;
    for (const Extent &x : param.shape)
      shape.push_back(x.dim >= 0 ? dims[x.dim] : x.value);
    if (i == broken && !shape.empty())
      ++shape[rng() % shape.size()];
    args[i].tensor = Tensor::zeros(param.dtype, shape);
    Tensor &t = args[i].tensor;
    int64_t bound = dims[param.indexDim];
    bool wild = rng() % 8 == 0; // an index out of range now and then
    for (size_t k = 0; k < t.numel(); ++k) {
      switch (param.data) {
      case Param::Data::Normal:
        t.setF(k, rng() % 16 == 0 ? 0.0 : normal(rng));
        break;
      case Param::Data::SmallInt:
        t.setI(k, static_cast<int64_t>(rng() % 9) - 4);
        break;
      case Param::Data::Bool:
        t.setI(k, rng() % 2);
        break;
      case Param::Data::Index:
        t.setI(k, wild || bound == 0
                      ? static_cast<int64_t>(rng() % 5) - 2 + bound / 2
                      : static_cast<int64_t>(rng() % bound));
        break;
      }
    }
  }
  return args;
}

/// Equal results: types and shapes exactly, integers and bools exactly,
/// floats within a tolerance (NaN equal to NaN, infinities by sign).
bool sameResults(const std::vector<Tensor> &want,
                 const std::vector<Tensor> &got, std::string &why) {
  if (want.size() != got.size()) {
    why = "result count " + std::to_string(got.size()) + ", want " +
          std::to_string(want.size());
    return false;
  }
  for (size_t r = 0; r < want.size(); ++r) {
    const Tensor &w = want[r], &g = got[r];
    if (w.typeString() != g.typeString()) {
      why = "result " + std::to_string(r) + " is " + g.typeString() +
            ", want " + w.typeString();
      return false;
    }
    double scale = 0;
    for (size_t k = 0; k < w.numel(); ++k)
      if (std::isfinite(w.getF(k)))
        scale = std::max(scale, std::fabs(w.getF(k)));
    for (size_t k = 0; k < w.numel(); ++k) {
      bool equal;
      double a = w.getF(k), b = g.getF(k);
      if (!isFloat(w.dtype()))
        equal = w.getI(k) == g.getI(k);
      else if (std::isnan(a) || std::isnan(b) || std::isinf(a) || std::isinf(b))
        equal = (std::isnan(a) && std::isnan(b)) || a == b;
      else
        equal = std::fabs(a - b) <= 1e-4 * (1 + std::fabs(a)) + 1e-5 * scale;
      if (!equal) {
        std::ostringstream s;
        s.precision(9);
        s << "result " << r << " element " << k << ": got " << b << ", want "
          << a;
        why = s.str();
        return false;
      }
    }
  }
  return true;
}

using RunFn = std::function<bool(const std::vector<ArgValue> &,
                                 std::vector<Tensor> &, RunError &)>;

struct Stats {
  int64_t pairs = 0, ran = 0, rejected = 0, failed = 0, programs = 0;
  int64_t mismatches = 0;
  /// Gradient programs compiled, their program x shape pairs, and the
  /// pairs whose gradients ran (and were compared).
  int64_t gradPrograms = 0, gradPairs = 0, gradRan = 0;
  std::map<std::string, int64_t> byFamily;
  std::map<OpCode, int64_t> ops; ///< programs each op of the table is in
};

struct Reporter {
  Stats &stats;
  uint32_t seed;
  int shown = 0;
  void mismatch(const Program &p, int64_t index,
                const std::vector<int64_t> &dims, int64_t k, bool perturbed,
                const std::string &what) {
    ++stats.mismatches;
    if (shown++ >= envInt("TSL_DIFF_SHOW", 10))
      return;
    std::ostringstream s;
    s << "differential mismatch (TSL_DIFF_SEED=" << seed << ", program "
      << index << ", " << p.family << "): " << what << "\n  sizes:";
    for (size_t i = 0; i < dims.size(); ++i)
      s << " " << p.dims[i] << "=" << dims[i];
    s << " k=" << k << (perturbed ? " (one argument extent + 1)" : "") << "\n"
      << p.source;
    ADD_FAILURE() << s.str();
  }
};

/// Compiles one program for every variant and runs it at \p shapes sizes.
void runProgram(const Program &p, int64_t index, int64_t shapes,
                std::mt19937 &rng, Reporter &report) {
  std::map<std::string, ExampleArg> ex;
  std::vector<int64_t> none;
  for (const Param &param : p.params) {
    if (param.isInt) {
      ex[param.name] = ExampleArg{true, p.exampleInt, DType::I64, {}};
      continue;
    }
    std::vector<int64_t> shape;
    for (const Extent &x : param.shape)
      shape.push_back(x.dim >= 0 ? p.exampleDims[x.dim] : x.value);
    ex[param.name] = ExampleArg{false, 0, param.dtype, shape};
  }
  Function fn;
  std::string errors;
  if (!compile(p.source, ex, fn, errors)) {
    report.mismatch(p, index, p.exampleDims, p.exampleInt, false,
                    "the generated program does not compile:\n" + errors);
    return;
  }
  if (Expected<void> verified = verifyFunction(fn); !verified) {
    errors = verified.error().message;
    report.mismatch(p, index, p.exampleDims, p.exampleInt, false,
                    "the generated program does not compile:\n" + errors);
    return;
  }
  std::string error;
  // Each backend's result, or its message in error.
  auto take = [&](auto compiled) {
    using Kernel = std::remove_reference_t<decltype(*compiled)>;
    if (compiled)
      return std::move(*compiled);
    error = compiled.error().message;
    return Kernel();
  };
  std::unique_ptr<CpuKernel> cpu = take(CpuKernel::compile(fn));
  // The default lowers each kernel into its own LLVM function; the other
  // CPU variant lowers the whole function as one (as GPU host code does).
  std::unique_ptr<CpuKernel> oneFunction;
  std::unique_ptr<GpuKernel> gpu;
  rt::VariantCode variant;
  if (cpu)
    oneFunction = take(CpuKernel::compile(fn, SIZE_MAX));
  if (oneFunction) {
    // The GPU takes functions without calls (ir/Pipeline.h: its pipeline
    // keeps them inlined); this one was elaborated for the host.
    Function flat = fn;
    PassContext ctx;
    if (Expected<void> inlined = runPasses(flat, "inline-calls", ctx); !inlined)
      error = inlined.error().message;
    gpu = take(GpuKernel::compile(flat, GpuTarget::Emulator));
  }
  if (gpu) {
    if (Expected<void> compiled = CpuKernel::compileVariant(fn, variant);
        !compiled) {
      error = compiled.error().message;
      gpu.reset();
    }
  }
  if (!gpu) {
    report.mismatch(p, index, p.exampleDims, p.exampleInt, false,
                    "a backend cannot compile it: " + error);
    return;
  }
  ++report.stats.programs;
  ++report.stats.byFamily[p.family];
  bool grad = p.family.size() > 5 &&
              p.family.compare(p.family.size() - 5, 5, "-grad") == 0;
  report.stats.gradPrograms += grad;
  std::set<OpCode> used;
  for (const Operation &op : fn.ops)
    used.insert(op.code);
  for (OpCode code : used)
    ++report.stats.ops[code];
  std::vector<std::pair<const char *, RunFn>> backends = {
      {"cpu",
       [&](auto &args, auto &out, auto &e) { return cpu->run(args, out, e); }},
      {"cpu-one-function",
       [&](auto &args, auto &out, auto &e) {
         return oneFunction->run(args, out, e);
       }},
      {"gpu-emulator",
       [&](auto &args, auto &out, auto &e) { return gpu->run(args, out, e); }}};
  std::vector<int64_t> syms(variant.numSymbols + 1), sizes, ints;
  for (int64_t s = 0; s < shapes; ++s) {
    std::vector<int64_t> dims(p.dims.size());
    for (size_t i = 0; i < dims.size(); ++i)
      dims[i] = randomSize(rng, p.exampleDims[i], p.maxDims[i]);
    int64_t k = rng() % 12 == 0 ? -1 : static_cast<int64_t>(rng() % 4);
    bool perturb = rng() % 32 == 0;
    std::vector<ArgValue> args = makeArgs(p, dims, k, perturb, rng);
    ++report.stats.pairs;
    report.stats.gradPairs += grad;
    // The guard set: the native matcher accepts exactly the sizes the
    // interpreter's binding does.
    std::map<std::string, int64_t> values;
    RunError bindError;
    bool bound = bindArguments(fn, args, values, bindError);
    sizes.clear();
    ints.clear();
    for (const ArgValue &a : args) {
      if (a.isInt)
        ints.push_back(a.intValue);
      else
        sizes.insert(sizes.end(), a.tensor.shape().begin(),
                     a.tensor.shape().end());
    }
    std::fill(syms.begin(), syms.end(), 0);
    int32_t code = variant.match(sizes.data(), ints.data(), syms.data());
    if (bound != (code == 0)) {
      report.mismatch(
          p, index, dims, k, perturb,
          "the native matcher returns " + std::to_string(code) +
              ", the interpreter's binding " +
              (bound ? "accepts" : "rejects: " + bindError.message));
      continue;
    }
    std::vector<Tensor> want;
    RunError wantError;
    bool ok = interpret(fn, args, want, wantError);
    if (!bound)
      ++report.stats.rejected;
    else if (!ok)
      ++report.stats.failed;
    else
      ++report.stats.ran;
    report.stats.gradRan += grad && bound && ok;
    for (auto &[name, run] : backends) {
      std::vector<Tensor> got;
      RunError gotError;
      bool gotOk = run(args, got, gotError);
      std::string why;
      if (gotOk != ok)
        report.mismatch(p, index, dims, k, perturb,
                        std::string(name) + (gotOk ? " succeeds" : " fails") +
                            ", the interpreter " + (ok ? "succeeds" : "fails") +
                            "\n  interpreter: " + wantError.message + "\n  " +
                            name + ": " + gotError.message);
      else if (ok && !sameResults(want, got, why))
        report.mismatch(p, index, dims, k, perturb,
                        std::string(name) + ": " + why);
    }
  }
}

/// Prints a progress line to stderr: pairs, programs, ops of the table
/// covered, mismatches and seconds so far.
void printProgress(const Stats &stats,
                   std::chrono::steady_clock::time_point start) {
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  std::fprintf(stderr,
               "differential: %lld pairs, %lld programs, %zu of %zu ops, "
               "%lld mismatches, %.0f s\n",
               static_cast<long long>(stats.pairs),
               static_cast<long long>(stats.programs), stats.ops.size(),
               allOps().size(), static_cast<long long>(stats.mismatches),
               seconds);
}

// Random programs x shapes: TSL_DIFF_PAIRS pairs (10,000 in CI). With more
// pairs than that (the soak) or TSL_DIFF_PROGRESS=n, a progress line every
// n pairs (1,000 by default) goes to stderr.
TEST(Differential, RandomProgramsAtManyShapes) {
  int64_t pairs = envInt("TSL_DIFF_PAIRS", 10000);
  uint32_t seed = static_cast<uint32_t>(envInt("TSL_DIFF_SEED", 1));
  int64_t progress = envInt("TSL_DIFF_PROGRESS", pairs > 10000 ? 1000 : 0);
  // TSL_DIFF_GRAD=1 (a soak of gradients): the gradient programs only.
  bool gradOnly = envInt("TSL_DIFF_GRAD", 0) == 1;
  const int64_t shapesPerProgram = 64;
  Stats stats;
  Reporter report{stats, seed};
  auto start = std::chrono::steady_clock::now();
  int64_t programs = 0; // generated, compiled or not
  for (int64_t index = 0; stats.pairs < pairs; ++index, ++programs) {
    if (gradOnly && !isGradProgram(index))
      continue;
    // Each program has its own seed: (seed, index) reproduces it.
    Generator gen(seed * 1000003u + static_cast<uint32_t>(index));
    Program p = gen.next(index);
    std::mt19937 rng(seed * 7919u + static_cast<uint32_t>(index));
    int64_t before = stats.pairs;
    runProgram(p, index, std::min(shapesPerProgram, pairs - stats.pairs), rng,
               report);
    if (stats.pairs == before)
      ++stats.pairs; // a program that does not compile counts as one pair
    if (progress > 0 && stats.pairs / progress != before / progress)
      printProgress(stats, start);
  }
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  std::printf("differential: %lld program x shape pairs, %lld mismatches "
              "(seed %u; %lld programs:",
              static_cast<long long>(stats.pairs),
              static_cast<long long>(stats.mismatches), seed,
              static_cast<long long>(stats.programs));
  for (const auto &[family, n] : stats.byFamily)
    std::printf(" %s %lld", family.c_str(), static_cast<long long>(n));
  std::printf("; %zu of the %zu ops of the table", stats.ops.size(),
              allOps().size());
  std::printf("; gradients: %lld programs, %lld pairs, %lld ran",
              static_cast<long long>(stats.gradPrograms),
              static_cast<long long>(stats.gradPairs),
              static_cast<long long>(stats.gradRan));
  std::printf("; %lld ran, %lld rejected by guards, %lld failed at run time "
              "in every backend; %.1f s)\n",
              static_cast<long long>(stats.ran),
              static_cast<long long>(stats.rejected),
              static_cast<long long>(stats.failed), seconds);
  EXPECT_EQ(stats.mismatches, 0);
  EXPECT_GE(stats.pairs, pairs);
  // Every op of the table is in one of the first kCoveragePeriod programs
  // (the generator's probes; 8,704 pairs, under the CI count).
  if (!gradOnly && programs >= kCoveragePeriod) {
    for (const OpInfo &op : allOps())
      EXPECT_GT(stats.ops.count(op.code) ? stats.ops[op.code] : 0, 0)
          << "no program used " << op.name;
  }
  // Most pairs must run: the sizes are not all rejected.
  EXPECT_GT(stats.ran * 2, stats.pairs);
  // Gradient programs ran and most of their pairs compared gradients.
  if (programs > 1) {
    EXPECT_GT(stats.gradPrograms, 0);
    EXPECT_GT(stats.gradRan * 2, stats.gradPairs);
  }
}

// Coverage is a property of the generator, not of a seed's luck: every op
// of the table has a probe that uses it, and the first kCoveragePeriod
// programs of any seed (777 included, whose random programs at the CI count
// used no cumsum before the probes) use every op.
TEST(Differential, GeneratorCoversEveryOpWithinAPeriod) {
  for (const OpInfo &op : allOps())
    EXPECT_NE(probeFor(op.name), nullptr)
        << "no probe in DifferentialGenerator.h's kProbes for " << op.name;
  for (uint32_t seed : {1u, 777u, 20261127u}) {
    std::set<OpCode> used;
    for (int64_t index = 0; index < kCoveragePeriod; ++index) {
      Generator gen(seed * 1000003u + static_cast<uint32_t>(index));
      Program p = gen.next(index);
      std::map<std::string, ExampleArg> ex;
      for (const Param &param : p.params) {
        std::vector<int64_t> shape;
        for (const Extent &x : param.shape)
          shape.push_back(x.dim >= 0 ? p.exampleDims[x.dim] : x.value);
        ex[param.name] =
            ExampleArg{param.isInt, p.exampleInt, param.dtype,
                       param.isInt ? std::vector<int64_t>{} : shape};
      }
      Function fn;
      std::string errors;
      ASSERT_TRUE(compile(p.source, ex, fn, errors))
          << "seed " << seed << ", program " << index << ":\n"
          << p.source << errors;
      for (const Operation &op : fn.ops)
        used.insert(op.code);
      // A probe's op is in its own program.
      if (index % 2 == 0) {
        const OpInfo &op = allOps()[(index / 2) % allOps().size()];
        EXPECT_TRUE(
            std::any_of(fn.ops.begin(), fn.ops.end(),
                        [&](const Operation &o) { return o.code == op.code; }))
            << "the probe of " << op.name << " does not use it:\n"
            << p.source;
      }
    }
    for (const OpInfo &op : allOps())
      EXPECT_TRUE(used.count(op.code))
          << "seed " << seed << ": no program of the first " << kCoveragePeriod
          << " used " << op.name;
  }
}

// The gradient programs differentiate every op with a VJP rule within
// gradCoveragePeriod() programs of any seed: every such op has a gradient
// probe, each gradient program compiles (grad and vjp elaborated: its
// results are gradients, one per `wrt` value), differentiates with respect
// to the root its probes depend on (x0 or x), and its probes' values (the
// forward twin) use their ops. (The gradient program itself need not
// contain them: mean's or log's gradient does not read its forward.)
TEST(Differential, GeneratorDifferentiatesEveryRuleOpWithinAPeriod) {
  std::set<std::string> probed;
  for (const GradProbe &g : kGradProbes) {
    EXPECT_TRUE(probed.insert(g.op).second)
        << "two gradient probes of " << g.op;
    const OpInfo *op = nullptr;
    for (const OpInfo &o : allOps())
      if (o.name == std::string(g.op))
        op = &o;
    ASSERT_NE(op, nullptr) << "a gradient probe of no op: " << g.op;
    if (diffRuleOf(op->code).kind == DiffKind::Rule)
      continue;
    // A probe waiting for its op's rule: its values compile today.
    Program p = Generator(1).gradProgramOf(g, g, 0);
    Function forward;
    std::string errors;
    std::map<std::string, ExampleArg> ex;
    for (const Param &param : p.params) {
      std::vector<int64_t> shape;
      for (const Extent &x : param.shape)
        shape.push_back(x.dim >= 0 ? p.exampleDims[x.dim] : x.value);
      ex[param.name] = ExampleArg{param.isInt, p.exampleInt, param.dtype,
                                  param.isInt ? std::vector<int64_t>{} : shape};
    }
    EXPECT_TRUE(compile(p.forward, ex, forward, errors, true))
        << p.forward << errors;
  }
  for (const OpInfo &op : allOps())
    if (diffRuleOf(op.code).kind == DiffKind::Rule) {
      EXPECT_NE(gradProbeFor(op.name), nullptr)
          << "no gradient probe in DifferentialGenerator.h's kGradProbes for "
          << op.name;
    }
  for (uint32_t seed : {1u, 777u, 20261127u}) {
    std::set<OpCode> used;
    int64_t gradPrograms = 0, vjps = 0;
    for (int64_t index = 0; index < gradCoveragePeriod(); ++index) {
      if (!isGradProgram(index))
        continue;
      Generator gen(seed * 1000003u + static_cast<uint32_t>(index));
      Program p = gen.next(index);
      ++gradPrograms;
      vjps += p.source.find("= vjp(") != std::string::npos;
      EXPECT_NE(p.source.find("= grad("), std::string::npos) << p.source;
      std::map<std::string, ExampleArg> ex;
      size_t wrt = 0;
      for (const Param &param : p.params) {
        std::vector<int64_t> shape;
        for (const Extent &x : param.shape)
          shape.push_back(x.dim >= 0 ? p.exampleDims[x.dim] : x.value);
        ex[param.name] =
            ExampleArg{param.isInt, p.exampleInt, param.dtype,
                       param.isInt ? std::vector<int64_t>{} : shape};
      }
      for (size_t at = p.source.find("wrt="); at != std::string::npos;
           at = p.source.find("wrt=", at + 1))
        wrt +=
            p.source[at + 4] == '('
                ? 1 + std::count(p.source.begin() + at,
                                 p.source.begin() + p.source.find(')', at), ',')
                : 1;
      Function fn, forward;
      std::string errors;
      ASSERT_TRUE(compile(p.source, ex, fn, errors))
          << "seed " << seed << ", program " << index << ":\n"
          << p.source << errors;
      EXPECT_EQ(fn.results.size(), wrt) << p.source;
      std::string root = p.family == "conv-grad" ? "x" : "x0";
      for (size_t at = p.source.find("wrt="); at != std::string::npos;
           at = p.source.find("wrt=", at + 1)) {
        // "wrt=x0);" or "wrt=(x1, x0));": the names between.
        std::string list =
            p.source.substr(at + 4, p.source.find(";\n", at) - at - 5);
        std::set<std::string> names;
        std::string name;
        for (char c : list + ",")
          if (c == ',') {
            names.insert(name);
            name.clear();
          } else if (c != '(' && c != ')' && c != ' ') {
            name += c;
          }
        EXPECT_TRUE(names.count(root))
            << "not with respect to " << root << ": " << list;
      }
      ASSERT_TRUE(compile(p.forward, ex, forward, errors, true))
          << p.forward << errors;
      for (const Operation &op : forward.ops)
        used.insert(op.code);
    }
    EXPECT_EQ(gradPrograms, gradCoveragePeriod() / 4);
    EXPECT_GT(vjps, 0) << "seed " << seed;
    for (const GradProbe *g : activeGradProbes())
      for (const OpInfo &op : allOps())
        if (op.name == std::string(g->op)) {
          EXPECT_TRUE(used.count(op.code))
              << "seed " << seed << ": no gradient program of the first "
              << gradCoveragePeriod() << " used " << g->op;
        }
  }
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
    Expected<std::unique_ptr<CpuKernel>> compiled = CpuKernel::compile(fn);
    ASSERT_TRUE(compiled) << compiled.error().message << "\n" << source;
    std::unique_ptr<CpuKernel> kernel = std::move(*compiled);
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
