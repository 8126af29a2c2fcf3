// The per-call cost of the runtime (issue 15, "Per-call cost"): one function
// with ten guards (bench/callcost.tsl) called three ways in the same run,
//   kernel          its compiled kernel called directly (a reused context,
//                   the kernel's own allocations freed after each call),
//   FunctionTable   rt::FunctionTable::call (argument checks, dispatch
//                   through the guards, stats, the context, the outputs),
//   C API           tsl_function_call + tsl_outputs_free,
// then prints the CPU model and each way's cost above the kernel. Google
// Benchmark flags apply (--benchmark_repetitions=N, default 5; the summary
// uses the median and the minimum of the repetitions; --benchmark_filter
// leaves rows out).
//   tsl_bench_callcost [bench/callcost.tsl] [--benchmark_...]
#include "runtime/FunctionTable.h"
#include "tools/driver/JitCompiler.h"
#include "tsl/tsl_c.h"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <string>
#include <vector>

using namespace tsl;

namespace {

constexpr int kArgs = 11;    // a0 .. a10
constexpr int64_t kSize = 4; // elements per argument
const char *kFunction = "guarded";

/// The CPU model /proc/cpuinfo names, with its widest vector ISA.
std::string cpuModel() {
  std::ifstream in("/proc/cpuinfo");
  std::string line, model = "unknown", isa = "no AVX2";
  while (std::getline(in, line)) {
    size_t colon = line.find(':');
    if (colon == std::string::npos)
      continue;
    if (line.rfind("model name", 0) == 0 && model == "unknown")
      model = line.substr(colon + 2);
    if (line.rfind("flags", 0) == 0) {
      std::string flags = line.substr(colon) + " ";
      isa = flags.find(" avx512f ") != std::string::npos ? "AVX-512"
            : flags.find(" avx2 ") != std::string::npos  ? "AVX2"
                                                         : "no AVX2";
      break;
    }
  }
  return model + " (" + isa + ")";
}

[[noreturn]] void die(const std::string &what) {
  std::fprintf(stderr, "tsl_bench_callcost: %s\n", what.c_str());
  std::exit(1);
}

/// The arguments, shared by the three ways of calling.
struct Inputs {
  std::vector<std::vector<float>> data;
  std::vector<int64_t> shape{kSize};
  std::vector<rt::CallArg> callArgs;
  std::vector<tsl_arg> capiArgs;

  Inputs() {
    data.assign(kArgs, std::vector<float>(kSize, 1.0f));
    for (int i = 0; i < kArgs; ++i) {
      rt::CallArg a;
      a.dtype = 6; // f32
      a.shape = shape;
      a.data = data[i].data();
      callArgs.push_back(a);
      tsl_arg c{};
      c.tensor.data = data[i].data();
      c.tensor.device = {1, 0};
      c.tensor.ndim = 1;
      c.tensor.dtype = {2, 32, 1};
      c.tensor.shape = shape.data();
      capiArgs.push_back(c);
    }
  }
};

/// The kernel called directly: the variant the JIT compiles for the call,
/// its symbols bound once by its matcher.
void benchKernel(benchmark::State &state, JitCompiler &jit, const Inputs &in) {
  rt::VariantCode code;
  Error error;
  if (!jit.compile(kFunction, in.callArgs, {}, false, code, error))
    die("compile: " + error.message);
  std::vector<int64_t> sizes(kArgs, kSize), syms(code.numSymbols + 1, 0);
  if (code.match(sizes.data(), nullptr, syms.data()) != 0)
    die("the variant rejects the call");
  std::vector<void *> buffers(code.numValues + 1, nullptr);
  for (int i = 0; i < kArgs; ++i)
    buffers[code.params[i].value] = const_cast<float *>(in.data[i].data());
  tsl_rt_context *ctx = tsl_rt_context_create();
  for (auto _ : state) {
    int32_t status = code.kernel(buffers.data(), syms.data(), ctx);
    tsl_rt_context_release(ctx, nullptr, 0); // frees the result
    benchmark::DoNotOptimize(status);
  }
  tsl_rt_context_destroy(ctx);
}

void benchTable(benchmark::State &state, JitCompiler &jit, const Inputs &in) {
  rt::FunctionTable table(kFunction, &jit);
  std::vector<rt::Output> outputs;
  int variant = -1;
  Error error;
  if (!table.call(in.callArgs, outputs, variant, error)) // compiles
    die("FunctionTable::call: " + error.message);
  for (rt::Output &o : outputs)
    std::free(o.data);
  for (auto _ : state) {
    bool ok = table.call(in.callArgs, outputs, variant, error);
    for (rt::Output &o : outputs)
      std::free(o.data);
    benchmark::DoNotOptimize(ok);
  }
}

void benchCApi(benchmark::State &state, tsl_function *fn, const Inputs &in) {
  for (auto _ : state) {
    tsl_tensor *outputs = nullptr;
    int32_t n = 0;
    tsl_status s =
        tsl_function_call(fn, in.capiArgs.data(), kArgs, &outputs, &n);
    tsl_outputs_free(outputs, n);
    benchmark::DoNotOptimize(s);
  }
}

/// Prints the table as the console reporter does and keeps each
/// benchmark's median and minimum real and CPU time (ns) for the summary.
class Collector : public benchmark::ConsoleReporter {
public:
  Collector() : ConsoleReporter(OO_Tabular) {}
  /// times[benchmark]["real median"], ["cpu min"], ...
  std::map<std::string, std::map<std::string, double>> times;
  void ReportRuns(const std::vector<Run> &runs) override {
    for (const Run &r : runs) {
      auto &t = times[r.run_name.function_name];
      for (auto [clock, ns] : {std::pair{"real ", r.GetAdjustedRealTime()},
                               std::pair{"cpu ", r.GetAdjustedCPUTime()}}) {
        if (r.run_type == Run::RT_Aggregate)
          t[clock + r.aggregate_name] = ns;
        else // one repetition: no aggregates
          t[clock + std::string("median")] = t[clock + std::string("min")] = ns;
      }
    }
    ConsoleReporter::ReportRuns(runs);
  }
};

double minimum(const std::vector<double> &v) {
  return *std::min_element(v.begin(), v.end());
}

} // namespace

int main(int argc, char **argv) {
  // Five repetitions unless the command line says otherwise (later flags
  // win).
  std::vector<char *> args{argv[0],
                           const_cast<char *>("--benchmark_repetitions=5")};
  args.insert(args.end(), argv + 1, argv + argc);
  argc = static_cast<int>(args.size());
  argv = args.data();
  benchmark::Initialize(&argc, argv);
  std::string path = argc > 1 ? argv[1] : TSL_BENCH_DIR "/callcost.tsl";
  std::printf("CPU: %s\n", cpuModel().c_str());
  JitCompiler jit(path);
  Inputs in;
  tsl_runtime *rt = nullptr;
  tsl_module *module = nullptr;
  tsl_function *fn = nullptr;
  if (tsl_runtime_create(nullptr, &rt) != TSL_OK ||
      tsl_runtime_enable_jit(rt) != TSL_OK ||
      tsl_module_load_source(rt, path.c_str(), &module) != TSL_OK ||
      tsl_module_get_function(module, kFunction, &fn) != TSL_OK)
    die(tsl_last_error());
  tsl_tensor *outputs = nullptr;
  int32_t n = 0;
  if (tsl_function_call(fn, in.capiArgs.data(), kArgs, &outputs, &n) !=
      TSL_OK) // compiles
    die(tsl_last_error());
  tsl_outputs_free(outputs, n);
  {
    rt::VariantCode code;
    Error error;
    if (!jit.compile(kFunction, in.callArgs, {}, false, code, error))
      die("compile: " + error.message);
    size_t guards = 0;
    for (const std::string &c : code.checks)
      guards += c.rfind("guard ", 0) == 0;
    std::printf("%s: %zu guards in its matcher, %d arguments of %lld f32, "
                "%zu values\n",
                kFunction, guards, kArgs, static_cast<long long>(kSize),
                code.numValues);
  }

  auto add = [](benchmark::internal::Benchmark *b) {
    b->Unit(benchmark::kNanosecond)
        ->ComputeStatistics("min", minimum)
        ->ReportAggregatesOnly(true);
  };
  add(benchmark::RegisterBenchmark("kernel", benchKernel, std::ref(jit),
                                   std::cref(in)));
  add(benchmark::RegisterBenchmark("FunctionTable::call", benchTable,
                                   std::ref(jit), std::cref(in)));
  add(benchmark::RegisterBenchmark("tsl_function_call", benchCApi, fn,
                                   std::cref(in)));
  Collector collector;
  benchmark::RunSpecifiedBenchmarks(&collector);
  tsl_runtime_destroy(rt);

  auto &t = collector.times;
  if (!t.count("kernel"))
    return 0; // filtered out: nothing to compare with
  for (const char *stat :
       {"real median", "real min", "cpu median", "cpu min"}) {
    double kernel = t["kernel"][stat];
    std::printf("per call (%s of the repetitions): kernel %.1f ns", stat,
                kernel);
    for (const char *way : {"FunctionTable::call", "tsl_function_call"})
      if (t.count(way))
        std::printf("; %s %.1f ns (+%.1f ns)", way, t[way][stat],
                    t[way][stat] - kernel);
    std::printf("\n");
  }
  if (t.count("tsl_function_call"))
    std::printf(
        "C API overhead above the kernel: %.1f ns real, %.1f ns CPU "
        "(medians; target <= 150 ns)\n",
        t["tsl_function_call"]["real median"] - t["kernel"]["real median"],
        t["tsl_function_call"]["cpu median"] - t["kernel"]["cpu median"]);
  return 0;
}
