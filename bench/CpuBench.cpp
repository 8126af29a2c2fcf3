// CPU benchmarks of compiled TSL through the runtime (variant table, native
// dispatch, JIT-compiled kernels). Prints one line per measurement;
// bench/cpu.sh runs the NumPy/PyTorch peers in the same run and prints
// ratios. Runs on the runtime's thread pool as the environment sizes it
// (TSL_NUM_THREADS, else the affinity mask; bench/cpu.sh runs it with 1 and
// with every core) and prints that size first. Optional arguments after the
// models file pick groups of rows (dispatch ew mm encoder rows conv
// attention); none runs them all.
#include "runtime/FunctionTable.h"
#include "runtime/ThreadPool.h"
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

struct Buffer {
  std::vector<int64_t> shape;
  std::vector<float> data;
};

Buffer randomBuffer(std::vector<int64_t> shape, std::mt19937 &rng) {
  Buffer b{shape, {}};
  size_t n = 1;
  for (int64_t d : shape)
    n *= static_cast<size_t>(d);
  b.data.resize(n);
  std::normal_distribution<float> normal(0.f, 0.05f);
  for (float &v : b.data)
    v = normal(rng);
  return b;
}

std::vector<rt::CallArg> argsOf(const std::vector<Buffer> &bufs) {
  std::vector<rt::CallArg> args;
  for (const Buffer &b : bufs) {
    rt::CallArg a;
    a.dtype = 6; // f32
    a.shape = b.shape;
    a.data = b.data.data();
    args.push_back(a);
  }
  return args;
}

/// Median seconds of \p fn over \p reps runs after one warm-up.
template <typename F> double median(int reps, F fn) {
  fn();
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    auto start = Clock::now();
    fn();
    t.push_back(std::chrono::duration<double>(Clock::now() - start).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

double timeCall(rt::FunctionTable &table, const std::vector<rt::CallArg> &args,
                int reps) {
  return median(reps, [&] {
    std::vector<rt::Output> out;
    int variant;
    std::string error;
    if (!table.call(args, out, variant, error)) {
      std::fprintf(stderr, "bench call failed: %s\n", error.c_str());
      std::exit(1);
    }
    for (rt::Output &o : out)
      std::free(o.data);
  });
}

/// The encoder layer's weights for width \p d (feed-forward 4d), in
/// nn.encoder_layer's argument order after x.
std::vector<Buffer> encoderWeights(int64_t d, std::mt19937 &rng) {
  std::vector<Buffer> w;
  for (auto shape : std::vector<std::vector<int64_t>>{{d, d},
                                                      {d, d},
                                                      {d, d},
                                                      {d, d},
                                                      {d},
                                                      {d},
                                                      {d, 4 * d},
                                                      {4 * d},
                                                      {4 * d, d},
                                                      {d},
                                                      {d},
                                                      {d}})
    w.push_back(randomBuffer(shape, rng));
  return w;
}

/// Dispatch: choosing the variant of a function with ten guards.
void benchDispatch(JitCompiler &jit, std::mt19937 &rng) {
  rt::FunctionTable table("guarded", &jit);
  std::vector<Buffer> bufs;
  for (int i = 0; i < 11; ++i)
    bufs.push_back(randomBuffer({4}, rng));
  std::vector<rt::CallArg> args = argsOf(bufs);
  timeCall(table, args, 1); // compile
  std::vector<int64_t> syms;
  const int n = 1000000;
  auto start = Clock::now();
  int sink = 0;
  for (int i = 0; i < n; ++i)
    sink += table.dispatch(args, syms);
  double ns =
      std::chrono::duration<double, std::nano>(Clock::now() - start).count() /
      n;
  std::printf("dispatch (10 guards): %.1f ns per call%s\n", ns,
              sink ? " (miss?)" : "");
}

/// Elementwise over 16M floats vs a plain copy.
void benchElementwise(JitCompiler &jit, std::mt19937 &rng) {
  rt::FunctionTable table("ew", &jit);
  std::vector<Buffer> bufs{randomBuffer({1 << 24}, rng)};
  double t = timeCall(table, argsOf(bufs), 15);
  std::vector<float> dst(bufs[0].data.size());
  double copy = median(15, [&] {
    std::memcpy(dst.data(), bufs[0].data.data(), dst.size() * 4);
  });
  std::printf(
      "relu(x*1.5+0.5)*2.0 16M f32: %.2f ms (copy %.2f ms, %.2fx the copy)\n",
      t * 1e3, copy * 1e3, t / copy);
}

/// Matmul 1024^3 and 4096^3.
void benchMatmul(JitCompiler &jit, std::mt19937 &rng) {
  rt::FunctionTable table("mm", &jit);
  for (int64_t n : {1024, 4096}) {
    std::vector<Buffer> bufs{randomBuffer({n, n}, rng),
                             randomBuffer({n, n}, rng)};
    double t = timeCall(table, argsOf(bufs), n > 1024 ? 3 : 5);
    std::printf("matmul %lld^3 f32: %.2f ms = %.1f GFLOP/s\n",
                static_cast<long long>(n), t * 1e3, 2.0 * n * n * n / t / 1e9);
  }
}

/// Softmax and the encoder layer (D=256) at the (B, S), the static
/// variant at B=4 S=128, and the layer at D=768 (B=1, S=256).
void benchEncoder(JitCompiler &jit, std::mt19937 &rng) {
  rt::FunctionTable softmax("softmax", &jit);
  rt::FunctionTable encoder("encoder", &jit);
  std::vector<Buffer> weights = encoderWeights(256, rng);
  for (auto [B, S] : std::vector<std::pair<int64_t, int64_t>>{
           {1, 128}, {4, 128}, {1, 512}, {8, 64}}) {
    std::vector<Buffer> x{randomBuffer({B, S, 256}, rng)};
    double ts = timeCall(softmax, argsOf(x), 500);
    std::vector<Buffer> e{x[0]};
    e.insert(e.end(), weights.begin(), weights.end());
    double te = timeCall(encoder, argsOf(e), 5);
    if (B == 4) {
      // The same shapes through a variant specialized to them (static).
      rt::FunctionTable specialized("encoder_static", &jit);
      double tstatic = timeCall(specialized, argsOf(e), 5);
      std::printf("encoder_layer B=4 S=128 static variant: %.2f ms; dynamic: "
                  "%.2f ms (dynamic/static speed %.2fx)\n",
                  tstatic * 1e3, te * 1e3, tstatic / te);
    }
    std::printf("softmax B=%lld S=%lld: %.3f ms; encoder_layer: %.2f ms\n",
                static_cast<long long>(B), static_cast<long long>(S), ts * 1e3,
                te * 1e3);
  }
  rt::FunctionTable wide("encoder768", &jit);
  std::vector<Buffer> e{randomBuffer({1, 256, 768}, rng)};
  std::vector<Buffer> w = encoderWeights(768, rng);
  e.insert(e.end(), w.begin(), w.end());
  std::printf("encoder_layer D=768 B=1 S=256: %.2f ms\n",
              timeCall(wide, argsOf(e), 5) * 1e3);
}

/// Softmax and layer_norm over rows of 768, [64, 512, 768].
void benchRows(JitCompiler &jit, std::mt19937 &rng) {
  rt::FunctionTable softmax("softmax768", &jit);
  rt::FunctionTable layerNorm("layer_norm768", &jit);
  std::vector<Buffer> x{randomBuffer({64, 512, 768}, rng)};
  double ts = timeCall(softmax, argsOf(x), 10);
  std::vector<Buffer> ln{x[0], randomBuffer({768}, rng),
                         randomBuffer({768}, rng)};
  double tl = timeCall(layerNorm, argsOf(ln), 10);
  std::printf("softmax [64,512,768]: %.2f ms; layer_norm: %.2f ms\n", ts * 1e3,
              tl * 1e3);
}

/// \p bufs as arguments of element type \p dtype (4 f16, 5 bf16, 6 f32):
/// the 16-bit ones converted into \p storage, which must outlive the call.
std::vector<rt::CallArg>
typedArgs(const std::vector<Buffer> &bufs, int32_t dtype,
          std::vector<std::vector<uint16_t>> &storage) {
  std::vector<rt::CallArg> args = argsOf(bufs);
  if (dtype == 6)
    return args;
  storage.clear();
  for (const Buffer &b : bufs) {
    std::vector<uint16_t> bits(b.data.size());
    for (size_t i = 0; i < bits.size(); ++i)
      bits[i] = dtype == 4 ? floatToHalf(b.data[i]) : floatToBF16(b.data[i]);
    storage.push_back(std::move(bits));
  }
  for (size_t i = 0; i < args.size(); ++i) {
    args[i].dtype = dtype;
    args[i].data = storage[i].data();
  }
  return args;
}

/// The elementwise chain, softmax and layer_norm over [64, 512, 768] in f32,
/// f16 and bf16 (the same values, rounded): 16-bit types should not be slower
/// than f32 (they move half the bytes and compute in f32).
void benchHalf(JitCompiler &jit, std::mt19937 &rng) {
  std::vector<Buffer> x{randomBuffer({64, 512, 768}, rng)};
  std::vector<Buffer> xy{x[0], randomBuffer({64, 512, 768}, rng)};
  std::vector<Buffer> ln{x[0], randomBuffer({768}, rng),
                         randomBuffer({768}, rng)};
  const std::pair<const char *, const std::vector<Buffer> *> cases[] = {
      {"ew_t", &xy}, {"softmax_t", &x}, {"layer_norm_t", &ln}};
  for (auto [name, bufs] : cases) {
    rt::FunctionTable table(name, &jit);
    double t[3];
    std::vector<std::vector<uint16_t>> storage;
    const int32_t dtypes[] = {6, 4, 5};
    for (int i = 0; i < 3; ++i)
      t[i] = timeCall(table, typedArgs(*bufs, dtypes[i], storage), 10);
    std::printf("%s [64,512,768]: f32 %.2f ms; f16 %.2f ms (f32/f16 %.2f); "
                "bf16 %.2f ms (f32/bf16 %.2f)\n",
                name, t[0] * 1e3, t[1] * 1e3, t[0] / t[1], t[2] * 1e3,
                t[0] / t[2]);
  }
}

/// ResNet's 3x3 conv (64 channels, N=4, 56 x 56, bias) alone and in the
/// basic block (bench/models.tsl).
void benchConv(JitCompiler &jit, std::mt19937 &rng) {
  rt::FunctionTable conv("conv3x3", &jit);
  std::vector<Buffer> c{randomBuffer({4, 64, 56, 56}, rng),
                        randomBuffer({64, 64, 3, 3}, rng),
                        randomBuffer({64}, rng)};
  double tc = timeCall(conv, argsOf(c), 10);
  rt::FunctionTable block("resnet_block", &jit);
  std::vector<Buffer> r{c[0]};
  for (int i = 0; i < 2; ++i) {
    r.push_back(randomBuffer({64, 64, 3, 3}, rng));
    r.push_back(randomBuffer({64, 1, 1}, rng));
    r.push_back(randomBuffer({64, 1, 1}, rng));
  }
  double tb = timeCall(block, argsOf(r), 10);
  std::printf("conv3x3 64ch N=4 56x56: %.2f ms = %.1f GFLOP/s; resnet_block: "
              "%.2f ms\n",
              tc * 1e3, 2.0 * 4 * 64 * 56 * 56 * 64 * 9 / tc / 1e9, tb * 1e3);
}

/// Attention alone: 8 heads of 64 over S = T = 1024 (the fused op).
void benchAttention(JitCompiler &jit, std::mt19937 &rng) {
  rt::FunctionTable attention("attention", &jit);
  std::vector<Buffer> a;
  for (int i = 0; i < 3; ++i)
    a.push_back(randomBuffer({1, 8, 1024, 64}, rng));
  double ta = timeCall(attention, argsOf(a), 5);
  std::printf("attention B=1 H=8 S=T=1024 D=64: %.2f ms = %.1f GFLOP/s\n",
              ta * 1e3, 4.0 * 8 * 1024 * 1024 * 64 / ta / 1e9);
}

} // namespace

int main(int argc, char **argv) {
  if (argc < 2) {
    std::fprintf(stderr,
                 "usage: %s bench/models.tsl "
                 "[dispatch|ew|mm|encoder|rows|conv|attention|half]...\n",
                 argv[0]);
    return 2;
  }
  JitCompiler jit(argv[1]);
  std::mt19937 rng(1);
  auto want = [&](const char *group) {
    for (int i = 2; i < argc; ++i)
      if (std::strcmp(argv[i], group) == 0)
        return true;
    return argc == 2;
  };
  std::printf("threads: %d\n", rt::ThreadPool::instance().size());
  using Bench = void (*)(JitCompiler &, std::mt19937 &);
  const std::pair<const char *, Bench> groups[] = {
      {"dispatch", benchDispatch},   {"ew", benchElementwise},
      {"mm", benchMatmul},           {"encoder", benchEncoder},
      {"rows", benchRows},           {"conv", benchConv},
      {"attention", benchAttention}, {"half", benchHalf}};
  for (auto [name, bench] : groups)
    if (want(name))
      bench(jit, rng);
  return 0;
}
