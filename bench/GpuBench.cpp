// GPU benchmarks of compiled TSL through the runtime (variant table, native
// dispatch on the host, GPU variants). Prints one line per measurement;
// bench/gpu.sh runs the PyTorch peers in the same run and prints ratios.
//
//   tsl_bench_gpu bench/gpu_models.tsl [--emulator] [--small]
//
// --emulator runs on the GPU emulator and --small shrinks every size: a
// smoke test of this program on machines without a GPU (not a benchmark).
#include "runtime/FunctionTable.h"
#include "runtime/GpuDevice.h"
#include "support/Float16.h"
#include "tools/driver/JitCompiler.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

using namespace tsl;
using Clock = std::chrono::steady_clock;

namespace {

/// A tensor in device memory (random values, copied once).
struct DeviceTensor {
  std::vector<int64_t> shape;
  int32_t dtype = 6;
  void *data = nullptr;
};

class Bench {
public:
  Bench(std::shared_ptr<rt::GpuDevice> device, const char *models)
      : device_(std::move(device)), jit_(models) {
    jit_.setDevice(device_);
  }
  ~Bench() {
    for (DeviceTensor &t : tensors_)
      device_->release(t.data);
  }

  rt::CallArg tensor(std::vector<int64_t> shape, int32_t dtype = 6) {
    size_t n = 1;
    for (int64_t d : shape)
      n *= static_cast<size_t>(d);
    std::normal_distribution<float> normal(0.f, 0.05f);
    std::vector<uint8_t> host(n * rt::elementBytes(dtype));
    for (size_t i = 0; i < n; ++i) {
      float v = normal(rng_);
      if (dtype == 5) {
        uint16_t h = floatToBF16(v);
        std::memcpy(host.data() + 2 * i, &h, 2);
      } else {
        std::memcpy(host.data() + 4 * i, &v, 4);
      }
    }
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

  /// One synchronized call (the runtime reads the symbols back after the
  /// last launch); seconds.
  double call(rt::FunctionTable &table, const std::vector<rt::CallArg> &args) {
    auto start = Clock::now();
    std::vector<rt::Output> out;
    int variant;
    std::string error;
    if (!table.call(args, out, variant, error))
      die(error);
    double s = std::chrono::duration<double>(Clock::now() - start).count();
    for (rt::Output &o : out)
      rt::GpuDevice::releaseHandedOver(o.data);
    return s;
  }
  double median(rt::FunctionTable &table, const std::vector<rt::CallArg> &args,
                int reps) {
    call(table, args);
    std::vector<double> t;
    for (int i = 0; i < reps; ++i)
      t.push_back(call(table, args));
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
  }
  rt::FunctionTable table(const char *name) {
    rt::TableOptions options;
    options.device = device_;
    return rt::FunctionTable(name, &jit_, options);
  }
  [[noreturn]] static void die(const std::string &message) {
    std::fprintf(stderr, "tsl_bench_gpu: %s\n", message.c_str());
    std::exit(1);
  }

private:
  std::shared_ptr<rt::GpuDevice> device_;
  JitCompiler jit_;
  std::mt19937 rng_{1};
  std::vector<DeviceTensor> tensors_;
};

} // namespace

int main(int argc, char **argv) {
  if (argc < 2) {
    std::fprintf(stderr,
                 "usage: %s bench/gpu_models.tsl [--emulator] [--small]\n",
                 argv[0]);
    return 2;
  }
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

  // relu(x*1.5+0.5)*2.0: bytes read + written per second.
  {
    int64_t n = small ? 1 << 16 : int64_t(1) << 28; // 256M floats
    rt::FunctionTable ew = bench.table("ew");
    std::vector<rt::CallArg> args{bench.tensor({n})};
    double t = bench.median(ew, args, small ? 3 : 20);
    std::printf("ew %lld f32: %.4f ms = %.1f GB/s\n", static_cast<long long>(n),
                t * 1e3, 8.0 * n / t / 1e9);
  }
  // Matmul, f32 and bf16.
  for (int32_t dtype : {6, 5}) {
    int64_t n = small ? 64 : 4096;
    rt::FunctionTable mm = bench.table(dtype == 6 ? "mm" : "mm_bf16");
    std::vector<rt::CallArg> args{bench.tensor({n, n}, dtype),
                                  bench.tensor({n, n}, dtype)};
    double t = bench.median(mm, args, small ? 2 : 5);
    std::printf("matmul %lld^3 %s: %.3f ms = %.2f TFLOP/s\n",
                static_cast<long long>(n), dtype == 6 ? "f32" : "bf16", t * 1e3,
                2.0 * n * n * n / t / 1e12);
  }
  // The encoder layer across 20 sequence lengths: compiles, compile time
  // (first call of a new length minus its steady time), steady latency.
  {
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
      double first = bench.call(enc, args);
      double steady = bench.median(enc, args, small ? 2 : 5);
      if (enc.stats().compiles > before)
        compileSeconds += std::max(0.0, first - steady);
      steadySum += steady;
      std::printf("encoder S=%lld: %.3f ms\n", static_cast<long long>(s),
                  steady * 1e3);
    }
    std::printf("encoder D=%lld x20 lengths: compiles %zu, compile time "
                "%.1f ms, mean latency %.3f ms\n",
                static_cast<long long>(d), enc.stats().compiles,
                compileSeconds * 1e3, steadySum / 20 * 1e3);
  }
  return 0;
}
