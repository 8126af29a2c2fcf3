// GPU benchmarks of compiled TSL through the runtime (variant table, native
// dispatch on the host, GPU variants). Prints one line per measurement;
// bench/gpu.sh runs the PyTorch peers in the same run and prints ratios.
//
//   tsl_bench_gpu bench/gpu_models.tsl [--emulator] [--small]
//
// --emulator runs on the GPU emulator and --small shrinks every size: a
// smoke test of this program on machines without a GPU (not a benchmark).
//
// Timing: inputs are allocated and copied once; every measurement warms up
// with two calls, then takes the median over reps of (`inner` calls back to
// back + one stream synchronization) / inner, wall clock. inner is 1 for the
// tiny call (a synchronized call's latency) and the long runs, 10 for
// kernels of tens of microseconds; a slow function gets fewer reps (about
// two seconds each). The peers time the same way.
// A function that fails prints "NAME: not run: ERROR" and the program goes
// on; the exit status is then 1.
#include "runtime/FunctionTable.h"
#include "runtime/GpuDevice.h"
#include "support/Float16.h"
#include "tools/driver/JitCompiler.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <random>
#include <string>
#include <vector>

using namespace tsl;
using Clock = std::chrono::steady_clock;

namespace {

constexpr int32_t kBool = 0, kF16 = 4, kBF16 = 5, kF32 = 6;

const char *dtypeName(int32_t dtype) {
  return dtype == kF32 ? "f32" : dtype == kF16 ? "f16" : "bf16";
}

/// A tensor in device memory (random values, copied once).
struct DeviceTensor {
  std::vector<int64_t> shape;
  int32_t dtype = kF32;
  void *data = nullptr;
};

class Bench {
public:
  Bench(std::shared_ptr<rt::GpuDevice> device, const char *models)
      : device_(std::move(device)), jit_(models) {
    jit_.setDevice(device_);
  }
  rt::GpuDevice &device() { return *device_; }
  ~Bench() {
    for (DeviceTensor &t : tensors_)
      device_->release(t.data);
  }

  /// A random tensor on the device: floats from N(0, 0.05), or for bool a
  /// mask that is true with probability 1/2 (\p trues counts them).
  rt::CallArg tensor(std::vector<int64_t> shape, int32_t dtype = kF32,
                     int64_t *trues = nullptr) {
    size_t n = 1;
    for (int64_t d : shape)
      n *= static_cast<size_t>(d);
    std::normal_distribution<float> normal(0.f, 0.05f);
    std::vector<uint8_t> host(n * rt::elementBytes(dtype));
    int64_t count = 0;
    for (size_t i = 0; i < n; ++i) {
      float v = normal(rng_);
      if (dtype == kBool) {
        host[i] = v > 0;
        count += host[i];
      } else if (dtype == kBF16 || dtype == kF16) {
        uint16_t h = dtype == kBF16 ? floatToBF16(v) : floatToHalf(v);
        std::memcpy(host.data() + 2 * i, &h, 2);
      } else {
        std::memcpy(host.data() + 4 * i, &v, 4);
      }
    }
    if (trues)
      *trues = count;
    DeviceTensor t{shape, dtype, nullptr};
    std::string error;
    t.data = device_->allocate(host.size(), error);
    if (!t.data || !device_->copy(rt::GpuDevice::Copy::ToDevice, t.data,
                                  host.data(), host.size(), error))
      die(error);
    tensors_.push_back(t);
    rt::CallArg a;
    a.dtype = dtype;
    a.shape = shape;
    a.data = t.data;
    return a;
  }
  static rt::CallArg integer(int64_t v) {
    rt::CallArg a;
    a.isInt = true;
    a.intValue = v;
    return a;
  }

  /// Waits for everything launched on the device's stream (a no-op on the
  /// emulator, whose launches run on the calling thread).
  void sync() {
    if (device_->isEmulator())
      return;
    const rt::CudaDevice &cuda = *device_->cuda();
    if (cuda.driver().api().cuStreamSynchronize(cuda.stream()) != 0)
      die("cuStreamSynchronize failed");
  }

  /// \p inner calls back to back, then one synchronization; seconds per
  /// call, or nullopt with \p error. The outputs of the last call stay in
  /// \p last (the caller releases them); the others are released.
  std::optional<double> calls(rt::FunctionTable &table,
                              const std::vector<rt::CallArg> &args, int inner,
                              std::vector<rt::Output> &last,
                              std::string &error) {
    std::vector<std::vector<rt::Output>> outs(inner);
    auto start = Clock::now();
    for (auto &out : outs) {
      int variant;
      if (!table.call(args, out, variant, error)) {
        release(outs);
        return std::nullopt;
      }
    }
    sync();
    double s = std::chrono::duration<double>(Clock::now() - start).count();
    last = std::move(outs.back());
    outs.pop_back();
    release(outs);
    return s / inner;
  }
  /// Two warm-up calls (the first compiles, the second estimates the time
  /// of one call), then the median over \p reps of calls(). Where reps *
  /// inner calls would take longer than kBudgetSeconds, inner becomes 1 and
  /// reps as many as fit (at least 3). Nullopt (after printing "LABEL: not
  /// run: ERROR") when a call fails. \p last gets the last call's outputs
  /// when given.
  std::optional<double> median(const std::string &label,
                               rt::FunctionTable &table,
                               const std::vector<rt::CallArg> &args, int reps,
                               int inner = 1,
                               std::vector<rt::Output> *last = nullptr) {
    constexpr double kBudgetSeconds = 2.0;
    std::vector<double> t;
    std::vector<rt::Output> out;
    std::string error;
    for (int i = 0; i < reps + 2; ++i) {
      release(out);
      std::optional<double> s =
          calls(table, args, i < 2 ? 1 : inner, out, error);
      if (!s) {
        notRun(label, error);
        return std::nullopt;
      }
      if (i == 1 && *s * reps * inner > kBudgetSeconds) {
        inner = 1;
        reps = std::clamp(static_cast<int>(kBudgetSeconds / *s), 3, reps);
      }
      if (i >= 2)
        t.push_back(*s);
    }
    if (last)
      *last = std::move(out);
    else
      release(out);
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
  }
  static void release(std::vector<rt::Output> &out) {
    for (rt::Output &o : out)
      rt::GpuDevice::releaseHandedOver(o.data);
    out.clear();
  }
  static void release(std::vector<std::vector<rt::Output>> &outs) {
    for (auto &out : outs)
      release(out);
  }
  rt::FunctionTable table(const char *name) {
    rt::TableOptions options;
    options.device = device_;
    return rt::FunctionTable(name, &jit_, options);
  }
  /// Prints "LABEL: not run: ERROR"; the program's exit status becomes 1.
  void notRun(const std::string &label, const std::string &error) {
    std::printf("%s: not run: %s\n", label.c_str(), error.c_str());
    failed_ = true;
  }
  bool failed() const { return failed_; }
  [[noreturn]] static void die(const std::string &message) {
    std::fprintf(stderr, "tsl_bench_gpu: %s\n", message.c_str());
    std::exit(1);
  }

private:
  std::shared_ptr<rt::GpuDevice> device_;
  JitCompiler jit_;
  std::mt19937 rng_{1};
  std::vector<DeviceTensor> tensors_;
  bool failed_ = false;
};

std::string dims(const std::vector<int64_t> &shape) {
  std::string s;
  for (int64_t d : shape)
    s += (s.empty() ? "" : "x") + std::to_string(d);
  return s;
}

/// relu(x*1.5+0.5)*2.0 (bytes read + written per second) and matmul in f32
/// and bf16.
void benchElementwiseAndMatmul(Bench &bench, bool small) {
  int64_t n = small ? 1 << 16 : int64_t(1) << 28; // 256M floats
  rt::FunctionTable ew = bench.table("ew");
  std::string label = "ew " + std::to_string(n) + " f32";
  if (auto t = bench.median(label, ew, {bench.tensor({n})}, small ? 3 : 20))
    std::printf("%s: %.4f ms = %.1f GB/s\n", label.c_str(), *t * 1e3,
                8.0 * n / *t / 1e9);
  for (int32_t dtype : {kF32, kBF16}) {
    int64_t m = small ? 64 : 4096;
    rt::FunctionTable mm = bench.table(dtype == kF32 ? "mm" : "mm_bf16");
    label = "matmul " + std::to_string(m) + "^3 " + dtypeName(dtype);
    std::vector<rt::CallArg> args{bench.tensor({m, m}, dtype),
                                  bench.tensor({m, m}, dtype)};
    // The device's default path (cuBLASLt where it loads), then TSL's own
    // kernel with the library switched off.
    for (bool library : {true, false}) {
      bench.device().setLibraryGemm(library);
      std::string path = bench.device().gemmPath();
      std::string name = label + (library ? "" : " own kernel");
      if (auto t = bench.median(name, mm, args, small ? 2 : 5))
        std::printf("%s: %.3f ms = %.2f TFLOP/s via %s\n", name.c_str(),
                    *t * 1e3, 2.0 * m * m * m / *t / 1e12, path.c_str());
    }
    bench.device().setLibraryGemm(true);
  }
}

/// softmax, log_softmax and layer_norm over the rows of [R, C] in f32 and
/// f16, and sums over a non-last axis; each with its bytes read + written
/// once per second.
void benchRowsAndReductions(Bench &bench, bool small) {
  int64_t r = small ? 48 : 8192, c = small ? 1100 : 1024;
  int reps = small ? 2 : 50, inner = small ? 1 : 10;
  for (int32_t dtype : {kF32, kF16}) {
    for (const char *op : {"softmax", "log_softmax", "layer_norm"}) {
      std::string fn = std::string(op) + "_" + dtypeName(dtype);
      rt::FunctionTable table = bench.table(fn.c_str());
      std::vector<rt::CallArg> args{bench.tensor({r, c}, dtype)};
      if (std::strcmp(op, "layer_norm") == 0) {
        args.push_back(bench.tensor({c}, dtype));
        args.push_back(bench.tensor({c}, dtype));
      }
      std::string label =
          std::string(op) + " " + dims({r, c}) + " " + dtypeName(dtype);
      double bytes = 2.0 * r * c * rt::elementBytes(dtype);
      if (auto t = bench.median(label, table, args, reps, inner))
        std::printf("%s: %.4f ms = %.1f GB/s\n", label.c_str(), *t * 1e3,
                    bytes / *t / 1e9);
    }
  }
  struct Sum {
    const char *fn;
    std::vector<int64_t> shape;
    int axis;
  };
  for (const Sum &s :
       {Sum{"sum_axis0", {r, c}, 0},
        Sum{"sum_axis1",
            {small ? 4 : 64, small ? 33 : 4096, small ? 20 : 256},
            1}}) {
    rt::FunctionTable table = bench.table(s.fn);
    std::string label =
        "sum axis " + std::to_string(s.axis) + " " + dims(s.shape) + " f32";
    double in = 1, out = 1;
    for (size_t i = 0; i < s.shape.size(); ++i) {
      in *= s.shape[i];
      out *= i == size_t(s.axis) ? 1 : s.shape[i];
    }
    if (auto t =
            bench.median(label, table, {bench.tensor(s.shape)}, reps, inner))
      std::printf("%s: %.4f ms = %.1f GB/s\n", label.c_str(), *t * 1e3,
                  4.0 * (in + out) / *t / 1e9);
  }
}

/// nonzero of a [R, C] bool mask and masked_select over N floats (each
/// mask true with probability 1/2); checks the number of results.
void benchCompaction(Bench &bench, bool small) {
  int64_t side = small ? 100 : 4096, n = side * side, trues = 0;
  int reps = small ? 2 : 20, inner = small ? 1 : 10;
  std::vector<rt::Output> out;
  rt::FunctionTable nz = bench.table("nonzero_2d");
  std::string label = "nonzero " + dims({side, side}) + " bool";
  std::vector<rt::CallArg> args{bench.tensor({side, side}, kBool, &trues)};
  if (auto t = bench.median(label, nz, args, reps, inner, &out)) {
    int64_t got = out.empty() ? -1 : out[0].shape[0];
    std::printf("%s: %.4f ms (%lld of %lld true%s)\n", label.c_str(), *t * 1e3,
                static_cast<long long>(got), static_cast<long long>(n),
                got == trues ? "" : ", WRONG COUNT");
  }
  Bench::release(out);
  rt::FunctionTable ms = bench.table("masked_select_1d");
  label = "masked_select " + std::to_string(n) + " f32";
  args = {bench.tensor({n}), bench.tensor({n}, kBool, &trues)};
  if (auto t = bench.median(label, ms, args, reps, inner, &out)) {
    int64_t got = out.empty() ? -1 : out[0].shape[0];
    std::printf("%s: %.4f ms (%lld selected%s)\n", label.c_str(), *t * 1e3,
                static_cast<long long>(got),
                got == trues ? "" : ", WRONG COUNT");
  }
  Bench::release(out);
}

/// exp(x)+1 on 1,000 floats: the latency of one synchronized call.
void benchTinyCall(Bench &bench, bool small) {
  rt::FunctionTable tiny = bench.table("tiny");
  if (auto t = bench.median("tiny 1000 f32", tiny, {bench.tensor({1000})},
                            small ? 20 : 2000))
    std::printf("tiny 1000 f32: %.2f us\n", *t * 1e6);
}

/// Attention over S = T = 4096 keys, 16 heads of 64, bf16 (the fused op):
/// latency and TFLOP/s (4 B H S T D flops: two GEMMs' worth).
void benchAttention(Bench &bench, bool small) {
  int64_t s = small ? 70 : 4096, heads = small ? 2 : 16, d = 64;
  rt::FunctionTable attn = bench.table("attention_bf16");
  std::string label = "attention S=T=" + std::to_string(s) + " heads=" +
                      std::to_string(heads) + "x" + std::to_string(d) + " bf16";
  std::vector<rt::CallArg> args;
  for (int i = 0; i < 3; ++i)
    args.push_back(bench.tensor({1, heads, s, d}, kBF16));
  if (auto t = bench.median(label, attn, args, small ? 2 : 10))
    std::printf("%s: %.4f ms = %.1f TFLOP/s\n", label.c_str(), *t * 1e3,
                4.0 * heads * s * s * d / *t / 1e12);
}

/// The encoder layer across 20 sequence lengths: compiles, compile time
/// (first call of a new length minus its steady time), steady latency.
void benchEncoder(Bench &bench, bool small) {
  int64_t d = small ? 64 : 1024, f = 4 * d, heads = d / 64;
  rt::FunctionTable enc = bench.table("encoder");
  std::vector<rt::CallArg> weights{bench.integer(heads)};
  for (auto shape : std::vector<std::vector<int64_t>>{{d, d},
                                                      {d, d},
                                                      {d, d},
                                                      {d, d},
                                                      {d},
                                                      {d},
                                                      {d, f},
                                                      {f},
                                                      {f, d},
                                                      {d},
                                                      {d},
                                                      {d}})
    weights.push_back(bench.tensor(shape));
  double compileSeconds = 0, steadySum = 0;
  for (int i = 0; i < 20; ++i) {
    int64_t s = small ? 4 + 3 * i : 64 + 48 * i;
    std::vector<rt::CallArg> args{bench.tensor({1, s, d})};
    args.insert(args.end(), weights.begin(), weights.end());
    size_t before = enc.stats().compiles;
    std::vector<rt::Output> out;
    std::string error;
    std::string label = "encoder S=" + std::to_string(s);
    std::optional<double> first = bench.calls(enc, args, 1, out, error);
    Bench::release(out);
    std::optional<double> steady =
        first ? bench.median(label, enc, args, small ? 2 : 5) : std::nullopt;
    if (!first)
      bench.notRun(label, error);
    if (!steady)
      return;
    if (enc.stats().compiles > before)
      compileSeconds += std::max(0.0, *first - *steady);
    steadySum += *steady;
    std::printf("%s: %.3f ms\n", label.c_str(), *steady * 1e3);
  }
  std::printf("encoder D=%lld x20 lengths: compiles %zu, compile time "
              "%.1f ms, mean latency %.3f ms\n",
              static_cast<long long>(d), enc.stats().compiles,
              compileSeconds * 1e3, steadySum / 20 * 1e3);
}

} // namespace

int main(int argc, char **argv) {
  if (argc < 2) {
    std::fprintf(stderr,
                 "usage: %s bench/gpu_models.tsl [--emulator] [--small]\n",
                 argv[0]);
    return 2;
  }
  // Line by line, so that what ran survives a crash or bench/gpu.sh's
  // time limit.
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  bool emulator = false, small = false;
  for (int i = 2; i < argc; ++i) {
    emulator |= std::strcmp(argv[i], "--emulator") == 0;
    small |= std::strcmp(argv[i], "--small") == 0;
  }
  std::string error;
  std::shared_ptr<rt::GpuDevice> device =
      emulator ? rt::GpuDevice::emulator() : rt::GpuDevice::openCuda(0, error);
  if (!device)
    Bench::die(error);
  std::printf("device: %s\n", device->name().c_str());
  Bench bench(device, argv[1]);
  benchElementwiseAndMatmul(bench, small);
  benchRowsAndReductions(bench, small);
  benchCompaction(bench, small);
  benchTinyCall(bench, small);
  benchAttention(bench, small);
  benchEncoder(bench, small);
  return bench.failed() ? 1 : 0;
}
