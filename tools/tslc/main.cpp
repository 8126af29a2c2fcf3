// tslc: the TSL compiler driver. Exit status: 0 on success, 1 on any error
// (bad input, bad arguments, failed run-time checks).
#include "tools/tslc/Tslc.h"

#include "backend/cpu/CpuKernel.h"
#include "backend/cpu/CpuTarget.h"
#include "backend/nvptx/GpuKernel.h"
#include "ir/TensorIO.h"
#include "runtime/FunctionTable.h"
#include "runtime/GpuCounters.h"
#include "runtime/GpuDevice.h"
#include "tools/driver/JitCompiler.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include <cstring>
#include <iostream>

using namespace tsl;

namespace {

const char *kUsage = R"(usage: tslc <command> [options]

FILE is TSL source (.tsl) or IR text (.tslir, as emit --emit=ir prints it); check,
run, emit, build and guards take either (IR text is already a variant: --arg gives
only the values to run it on).

commands:
  check FILE...                     parse and check every function (exit 0 when clean)
  run FILE --fn NAME --arg NAME=VALUE... [--backend B] [-o OUT.npy]
                                    run a function and print (or save) its results; B is
                                    cpu (default), interp (the reference interpreter), cuda
                                    (the first NVIDIA GPU) or gpu-emulator (the GPU kernels
                                    run on the CPU, threads simulated: a test device)
  run FILE.tsl --fn NAME --calls CALLS [--stats]
                                    one call per line of CALLS (NAME=VALUE...) through the
                                    runtime's variant table; --stats prints compiles as JSON
  emit FILE --emit=STAGE[,STAGE...] [--fn NAME] [--arg NAME=VALUE...] [-o OUT]
                                    print stages in pipeline order (a "==== STAGE ===="
                                    line before each when several): ast, ir (symbolic
                                    without --arg), plan (the kernel plan: fusion, frees,
                                    row groups; --target nvptx: the GPU's), llvm, asm
                                    (the host's), ptx (or --target nvptx --emit=asm: the
                                    GPU kernels for --arch sm_90, the default, or sm_80);
                                    -o writes a file; --print-after=PASS[,PASS...]|all
                                    prints the IR after those passes of the IR pipeline
                                    to stderr (of the --target's pipeline); --donate=P[,P...]
                                    (with --fn) plans as calls donating those parameters'
                                    buffers do (results written into them)
  opt FILE.tslir --pass=PASS[,PASS...] [--fn NAME] [--print-after=...] [-o OUT]
                                    run IR passes in the order given on IR text and print
                                    the IR; opt --list-passes lists the passes
  build FILE --fn NAME --arg NAME=TYPE... -o OUT.so [--all-dynamic]
                                    compile ahead of time into a shared library the runtime
                                    loads without a compiler (tsl_module_load_aot);
                                    --target nvptx [--arch sm_80|sm_90] -o OUT.ptx: the GPU
                                    kernels as PTX
  bench FILE.tsl --fn NAME --arg NAME=VALUE... [--backend cpu|cuda|gpu-emulator]
                                    compile, warm up, then latency min/mean/median/p90/p99
                                    (GPU: arguments copied to the device once; each call
                                    ends synchronized)
  guards FILE --fn NAME --arg NAME=TYPE... [--json] [--all-dynamic]
                                    print a variant's guards, runtime assertions and result types

VALUE: an integer (int parameters), a .npy file, or TYPE[:INIT[:SEED]] such as
f32[4,8] or i64[10]:arange (INIT: rand randn zeros ones arange; default randn, seed 0).

options:
  -I DIR        file imports may also read .tsl files under DIR (by default only
                under the importing file's directory, the input file's directory
                and the standard library)
  --json        diagnostics (and guards) as JSON, one object per line
  --help        this text
  --version     the compiler version
)";

int cmdCheck(const Options &o, SourceManager &sm, DiagnosticEngine &diags) {
  if (o.files.empty())
    return usageError("check needs at least one file");
  bool ok = true;
  for (const std::string &f : o.files) {
    if (isIrFile(f)) {
      Module module;
      ok &= loadIrFile(f, sm, diags, module);
      continue;
    }
    ModuleLoader loader(sm, diags);
    configure(loader, o);
    const LoadedModule *m = loader.load(f);
    if (!m) {
      ok = false;
      continue;
    }
    ok &= checkModule(*m, diags);
  }
  diags.finish();
  return ok && !diags.hasErrors() ? 0 : 1;
}

/// The runtime's arguments for the parameters \p names, in order, each from
/// the last spec of that name in \p specs (tensor data is borrowed). Fails
/// with "missing argument 'N'" in \p error when a parameter has no spec.
bool callArgsFor(const std::vector<std::string> &names,
                 std::vector<ArgSpec> &specs, std::vector<rt::CallArg> &out,
                 std::string &error) {
  for (const std::string &n : names) {
    auto spec = std::find_if(specs.rbegin(), specs.rend(),
                             [&](const ArgSpec &a) { return a.name == n; });
    if (spec == specs.rend()) {
      error = "missing argument '" + n + "'";
      return false;
    }
    rt::CallArg a;
    a.isInt = spec->isInt;
    a.intValue = spec->intValue;
    a.dtype = static_cast<int32_t>(spec->dtype);
    a.shape = spec->shape;
    if (!a.isInt)
      a.data = spec->tensor.raw();
    out.push_back(a);
  }
  return true;
}

/// `tslc run FILE --fn F --calls CALLS [--stats]`: every line of CALLS is
/// one call (NAME=VALUE...) through one runtime function table, compiling
/// variants on dispatch misses as an embedding program would.
int cmdRunCalls(const Options &o) {
  JitCompiler jit(o.files[0]);
  std::vector<std::string> names = jit.parameterNames(o.fn);
  if (names.empty()) {
    std::string error;
    rt::VariantCode probe;
    if (!jit.compile(o.fn, {}, {}, false, probe, error)) {
      std::cerr << error << "\n";
      return 1;
    }
  }
  std::ifstream in(o.calls);
  if (!in)
    return usageError("cannot read '" + o.calls + "'");
  rt::FunctionTable table(o.fn, &jit);
  std::string line;
  int lineNo = 0;
  while (std::getline(in, line)) {
    ++lineNo;
    std::stringstream words(line);
    std::string word;
    std::vector<ArgSpec> specs;
    std::string error;
    while (words >> word) {
      if (word[0] == '#')
        break;
      ArgSpec spec;
      if (!parseArgSpec(word, true, spec, error))
        return usageError(o.calls + ":" + std::to_string(lineNo) + ": " +
                          error);
      specs.push_back(std::move(spec));
    }
    if (specs.empty())
      continue;
    std::vector<rt::CallArg> args;
    if (!callArgsFor(names, specs, args, error))
      return usageError(o.calls + ":" + std::to_string(lineNo) + ": " + error);
    std::vector<rt::Output> outputs;
    int variant = -1;
    if (!table.call(args, outputs, variant, error)) {
      std::cerr << o.calls << ":" << lineNo << ": error: " << error << "\n";
      return 1;
    }
    std::vector<Tensor> tensors;
    for (rt::Output &out : outputs) {
      Tensor t = Tensor::zeros(static_cast<DType>(out.dtype), out.shape);
      if (t.valid() && t.byteSize())
        std::memcpy(t.raw(), out.data, t.byteSize());
      std::free(out.data);
      tensors.push_back(t);
    }
    if (!o.stats)
      std::cout << "call " << lineNo << " (variant " << variant
                << "): " << formatResults(tensors);
  }
  if (o.stats) {
    rt::Stats st = table.stats();
    std::cout << "{\"compiles\": " << st.compiles << ", \"calls\": [";
    for (size_t i = 0; i < st.callVariants.size(); ++i)
      std::cout << (i ? ", " : "") << "{\"variant\": " << st.callVariants[i]
                << "}";
    std::cout << "], \"recompiles\": [";
    for (size_t i = 0; i < st.recompileReasons.size(); ++i)
      std::cout << (i ? ", " : "") << "{\"reason\": \""
                << jsonEscape(st.recompileReasons[i]) << "\"}";
    std::cout << "], \"cache_hits\": " << st.cacheHits << "}\n";
  }
  return 0;
}

/// Prints the latency statistics of `tslc bench` (\p ms: each call's time,
/// at least one) and the throughput over \p totalSeconds.
void printLatency(const std::vector<double> &ms, double totalSeconds) {
  std::vector<double> sorted = ms;
  std::sort(sorted.begin(), sorted.end());
  auto pct = [&](double p) {
    return sorted[std::min(sorted.size() - 1,
                           static_cast<size_t>(p * sorted.size()))];
  };
  double mean = 0;
  for (double v : ms)
    mean += v / ms.size();
  std::printf("[tsl] Latency: min = %.4f ms, mean = %.4f ms, median = %.4f ms, "
              "p90 = %.4f ms, p99 = %.4f ms (%zu calls)\n",
              sorted.front(), mean, pct(0.5), pct(0.9), pct(0.99), ms.size());
  std::printf("[tsl] Throughput: %.1f qps\n", ms.size() / totalSeconds);
}

/// `tslc bench`: compile through the runtime (the first call), warm up,
/// then time calls; prints latency statistics the way trtexec does.
int cmdBench(const Options &o) {
  if (o.files.size() != 1 || o.fn.empty())
    return usageError("bench needs exactly one file and --fn NAME");
  if (isIrFile(o.files[0]))
    return usageError("bench needs a .tsl file (the runtime compiles variants "
                      "from source)");
  std::vector<ArgSpec> specs;
  if (!parseArgs(o, true, specs))
    return 1;
  JitCompiler jit(o.files[0]);
  std::vector<std::string> names = jit.parameterNames(o.fn);
  std::vector<rt::CallArg> args;
  std::string missing;
  if (!callArgsFor(names, specs, args, missing))
    return usageError(missing);
  if (names.empty())
    return usageError("no function named '" + o.fn + "' in " + o.files[0]);
  if (o.backend != "cpu" && o.backend != "cuda" && o.backend != "gpu-emulator")
    return usageError("not supported: backend '" + o.backend +
                      "' for bench (available: cpu, cuda, gpu-emulator)");
  std::string error;
  rt::TableOptions options;
  std::vector<void *> onDevice;
  if (o.backend != "cpu") {
    // GPU variants; the arguments copied to device memory once.
    options.device = o.backend == "cuda" ? rt::GpuDevice::openCuda(0, error)
                                         : rt::GpuDevice::emulator();
    if (!options.device) {
      std::cerr << "tslc: error: " << error << "\n";
      return 1;
    }
    jit.setDevice(options.device);
    for (rt::CallArg &a : args) {
      if (a.isInt)
        continue;
      size_t bytes = rt::elementBytes(a.dtype);
      for (int64_t d : a.shape)
        bytes *= static_cast<size_t>(d);
      void *p = options.device->allocate(bytes, error);
      if (!p || !options.device->copy(rt::GpuDevice::Copy::ToDevice, p, a.data,
                                      bytes, error)) {
        std::cerr << "tslc: error: " << error << "\n";
        return 1;
      }
      onDevice.push_back(p);
      a.data = p;
    }
  }
  rt::FunctionTable table(o.fn, &jit, options);
  auto once = [&](std::string &error) {
    std::vector<rt::Output> out;
    int variant;
    bool ok = table.call(args, out, variant, error);
    for (rt::Output &x : out) {
      if (x.onDevice)
        rt::GpuDevice::releaseHandedOver(x.data);
      else
        std::free(x.data);
    }
    return ok;
  };
  auto t0 = std::chrono::steady_clock::now();
  if (!once(error)) {
    std::cerr << "tslc: error: " << error << "\n";
    return 1;
  }
  double compileMs = std::chrono::duration<double, std::milli>(
                         std::chrono::steady_clock::now() - t0)
                         .count();
  // Warm up for 200 ms, then measure for about a second (at least 10 calls).
  auto until =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(200);
  while (std::chrono::steady_clock::now() < until)
    once(error);
  std::vector<double> ms;
  auto start = std::chrono::steady_clock::now();
  while (ms.size() < 10 ||
         (std::chrono::steady_clock::now() - start < std::chrono::seconds(1) &&
          ms.size() < 100000)) {
    auto a = std::chrono::steady_clock::now();
    once(error);
    ms.push_back(std::chrono::duration<double, std::milli>(
                     std::chrono::steady_clock::now() - a)
                     .count());
  }
  double total =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  std::printf("[tsl] first call (compile + run): %.2f ms, variants: %zu\n",
              compileMs, table.numVariants());
  printLatency(ms, total);
  for (void *p : onDevice)
    options.device->release(p);
  return 0;
}

/// `tslc build FILE --fn F --arg ... -o OUT.so`: compile ahead of time into
/// a shared library the runtime loads without a compiler.
int cmdBuild(const Options &o, SourceManager &sm, DiagnosticEngine &diags) {
  if (o.files.size() != 1 || o.fn.empty() || o.output.empty())
    return usageError(
        "build needs one file, --fn NAME, --arg ... and -o OUT.so");
  std::vector<ArgSpec> args;
  Function fn;
  if (!compileSelected(o, false, sm, diags, args, fn))
    return 1;
  if (o.target == "nvptx") {
    // The device kernels as PTX (the host part is compiled when loaded).
    Expected<std::string> ptx = lowerToPtx(fn, o.arch);
    if (!ptx) {
      std::cerr << "tslc: error: " << ptx.error().message << "\n";
      return 1;
    }
    std::ofstream out(o.output, std::ios::binary);
    if (!(out << *ptx)) {
      std::cerr << "tslc: error: cannot write '" << o.output << "'\n";
      return 1;
    }
    return 0;
  }
  if (!o.target.empty() && o.target != "host")
    return usageError("not supported: --target " + o.target +
                      " (available: host, nvptx)");
  if (Expected<void> built = buildSharedLibrary({fn}, o.output); !built) {
    std::cerr << "tslc: error: " << built.error().message << "\n";
    return 1;
  }
  return 0;
}

int cmdRun(const Options &o, SourceManager &sm, DiagnosticEngine &diags) {
  if (!o.calls.empty()) {
    if (o.files.size() != 1 || o.fn.empty())
      return usageError("run --calls needs exactly one file and --fn NAME");
    if (isIrFile(o.files[0]))
      return usageError("run --calls needs a .tsl file (the runtime compiles "
                        "variants from source)");
    return cmdRunCalls(o);
  }
  if (o.files.size() != 1)
    return usageError("run needs exactly one file");
  if (o.fn.empty())
    return usageError("run needs --fn NAME");
  if (o.backend != "interp" && o.backend != "cpu" && o.backend != "cuda" &&
      o.backend != "gpu-emulator")
    return usageError("not supported: backend '" + o.backend +
                      "' (available: cpu, interp, cuda, gpu-emulator)");
  std::vector<ArgSpec> args;
  Function fn;
  if (!compileSelected(o, true, sm, diags, args, fn))
    return 1;
  std::vector<ArgValue> values;
  std::string error;
  if (!orderArgs(fn, args, values, error))
    return usageError(error);
  std::vector<Tensor> outputs;
  RunError runError;
  bool ran;
  if (o.backend == "cpu") {
    std::unique_ptr<KernelObjectCache> cache = JitCompiler::openKernelCache();
    Expected<std::unique_ptr<CpuKernel>> kernel =
        CpuKernel::compile(fn, kOutlineOpsAbove, cache.get());
    if (!kernel) {
      std::cerr << "tslc: error: " << kernel.error().message << "\n";
      return 1;
    }
    ran = (*kernel)->run(values, outputs, runError);
  } else if (o.backend == "cuda" || o.backend == "gpu-emulator") {
    Expected<std::unique_ptr<GpuKernel>> kernel = GpuKernel::compile(
        fn, o.backend == "cuda" ? GpuTarget::Cuda : GpuTarget::Emulator);
    if (!kernel) {
      std::cerr << "tslc: error: " << kernel.error().message << "\n";
      return 1;
    }
    rt::beginGpuCounters();
    ran = (*kernel)->run(values, outputs, runError);
    rt::logGpuCounters(o.fn);
  } else {
    ran = interpret(fn, values, outputs, runError);
  }
  if (!ran) {
    reportRunError(runError, sm, diags);
    return 1;
  }
  if (!o.output.empty()) {
    for (size_t i = 0; i < outputs.size(); ++i) {
      std::string path = o.output;
      if (outputs.size() > 1) {
        std::string stem =
            path.size() > 4 && path.substr(path.size() - 4) == ".npy"
                ? path.substr(0, path.size() - 4)
                : path;
        path = stem + "." + std::to_string(i) + ".npy";
      }
      if (!writeNpy(path, outputs[i], error)) {
        std::cerr << "tslc: error: " << error << "\n";
        return 1;
      }
    }
    return 0;
  }
  std::cout << formatResults(outputs);
  return 0;
}

int cmdGuards(const Options &o, SourceManager &sm, DiagnosticEngine &diags) {
  if (o.files.size() != 1 || o.fn.empty())
    return usageError("guards needs one file and --fn NAME");
  std::vector<ArgSpec> args;
  Function fn;
  if (!compileSelected(o, false, sm, diags, args, fn))
    return 1;
  std::cout << formatGuardReport(fn, o.json);
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  if (argc >= 2 &&
      (std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0 ||
       std::strcmp(argv[1], "help") == 0)) {
    std::cout << kUsage;
    return 0;
  }
  if (argc >= 2 && std::strcmp(argv[1], "--version") == 0) {
    std::cout << "tslc 0.1.0\n";
    return 0;
  }
  Options o;
  std::string error;
  if (!parseOptions(argc, argv, o, error))
    return usageError(error);
  SourceManager sm;
  DiagnosticEngine diags(sm, std::cerr);
  diags.setJson(o.json && o.command != "guards");
  if (o.json && o.command == "guards")
    diags.setJson(true);
  if (o.command == "check")
    return cmdCheck(o, sm, diags);
  if (o.command == "run")
    return cmdRun(o, sm, diags);
  if (o.command == "emit")
    return cmdEmit(o, sm, diags);
  if (o.command == "opt")
    return cmdOpt(o, sm, diags);
  if (o.command == "guards")
    return cmdGuards(o, sm, diags);
  if (o.command == "bench")
    return cmdBench(o);
  if (o.command == "build")
    return cmdBuild(o, sm, diags);
  return usageError("unknown command '" + o.command + "'");
}
