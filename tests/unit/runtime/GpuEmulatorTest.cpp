// The GPU emulator (runtime/GpuEmulator.h) with kernels written in C++
// against the device primitives: cooperative reductions through shared
// memory, barriers and warp shuffles; grid striding over a clamped grid;
// deadlocks and bad launches reported as errors (never a hang); shared
// memory garbage; launches from several host threads; libm in a fiber.
#include "runtime/GpuEmulator.h"

#include <cmath>
#include <cstring>
#include <gtest/gtest.h>
#include <string>
#include <thread>
#include <vector>

using namespace tsl::rt;

namespace {

/// Launches \p kernel with \p args; "" on success, else the error.
template <typename Args>
std::string launch(void (*kernel)(void *), Args &args, int64_t blocks,
                   int32_t threads, int32_t shared = 0) {
  std::string error;
  bool ok = emulateLaunch(kernel, &args, {blocks, threads, shared}, error);
  EXPECT_EQ(ok, error.empty()) << error;
  return ok ? "" : error;
}

struct SumArgs {
  const int32_t *in;
  int64_t n;
  int64_t *partial; // one per block
  int32_t *gridDim;
};

/// Grid-stride partial sums, then a tree reduction in shared memory.
void blockSum(void *p) {
  auto &a = *static_cast<SumArgs *>(p);
  int32_t tid = tsl_gpu_thread_idx(), dim = tsl_gpu_block_dim();
  int64_t stride = int64_t(tsl_gpu_grid_dim()) * dim;
  int64_t sum = 0;
  for (int64_t i = int64_t(tsl_gpu_block_idx()) * dim + tid; i < a.n;
       i += stride)
    sum += a.in[i];
  auto *shared = static_cast<int64_t *>(tsl_gpu_shared());
  shared[tid] = sum;
  tsl_gpu_barrier();
  for (int32_t half = dim / 2; half > 0; half /= 2) {
    if (tid < half)
      shared[tid] += shared[tid + half];
    tsl_gpu_barrier();
  }
  if (tid == 0) {
    a.partial[tsl_gpu_block_idx()] = shared[0];
    *a.gridDim = tsl_gpu_grid_dim();
  }
}

std::vector<int32_t> iota(int64_t n, int32_t salt = 0) {
  std::vector<int32_t> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    v[static_cast<size_t>(i)] = int32_t((i * 7919 + salt) % 1001) - 500;
  return v;
}

int64_t reference(const std::vector<int32_t> &v) {
  int64_t s = 0;
  for (int32_t x : v)
    s += x;
  return s;
}

/// Sums \p in with blockSum over \p blocks blocks; the total of the
/// partial sums of the blocks that ran.
int64_t runBlockSum(const std::vector<int32_t> &in, int64_t blocks,
                    int32_t threads) {
  std::vector<int64_t> partial(kEmulatedBlocks, 0);
  int32_t grid = 0;
  SumArgs args{in.data(), int64_t(in.size()), partial.data(), &grid};
  EXPECT_EQ(launch(blockSum, args, blocks, threads, threads * 8), "");
  EXPECT_EQ(grid, std::min<int64_t>(blocks, kEmulatedBlocks));
  int64_t total = 0;
  for (int32_t b = 0; b < grid; ++b)
    total += partial[static_cast<size_t>(b)];
  return total;
}

} // namespace

TEST(GpuEmulator, BlockSumThroughSharedMemory) {
  struct Case {
    int64_t n, blocks;
  };
  for (int32_t threads : {256, 1024})
    for (Case c : {Case{0, 1}, Case{1, 2}, Case{threads - 1, 1},
                   Case{threads, 2}, Case{10007, 5}}) {
      auto in = iota(c.n, threads);
      EXPECT_EQ(runBlockSum(in, c.blocks, threads), reference(in))
          << threads << " threads, n=" << c.n << ", blocks=" << c.blocks;
    }
}

namespace {

struct WarpArgs {
  int32_t *out; // one per thread
};

/// Every lane gets its warp's sum through an xor butterfly.
void warpSum(void *p) {
  auto &a = *static_cast<WarpArgs *>(p);
  int32_t tid = tsl_gpu_thread_idx();
  int32_t v = tid * tid % 97;
  for (int32_t mask = 16; mask > 0; mask /= 2)
    v += tsl_gpu_shfl_xor(v, mask);
  a.out[tid] = v;
}

/// Lane 5's value to all lanes; src 37 is lane 5 too (src & 31).
void broadcast(void *p) {
  auto &a = *static_cast<WarpArgs *>(p);
  int32_t tid = tsl_gpu_thread_idx();
  int32_t lane = tid % 32;
  int32_t v = tsl_gpu_shfl_idx(tid * 3, lane % 2 ? 37 : 5);
  int32_t rotated = tsl_gpu_shfl_idx(tid, lane + 1); // per-lane sources
  int32_t outside = tsl_gpu_shfl_xor(tid, 32);       // no such lane: own
  a.out[tid] = v == (tid - lane + 5) * 3 &&
               rotated == tid - lane + (lane + 1) % 32 && outside == tid;
}

/// A block sum in the usual CUDA shape: shuffles within each warp, warp
/// sums through shared memory, the first warp sums those.
void warpThenBlockSum(void *p) {
  auto &a = *static_cast<WarpArgs *>(p);
  int32_t tid = tsl_gpu_thread_idx(), lane = tid % 32, warp = tid / 32;
  auto *sums = static_cast<int32_t *>(tsl_gpu_shared());
  int32_t v = tid;
  for (int32_t mask = 16; mask > 0; mask /= 2)
    v += tsl_gpu_shfl_xor(v, mask);
  if (lane == 0)
    sums[warp] = v;
  tsl_gpu_barrier();
  if (warp == 0) {
    v = lane < tsl_gpu_block_dim() / 32 ? sums[lane] : 0;
    for (int32_t mask = 16; mask > 0; mask /= 2)
      v += tsl_gpu_shfl_xor(v, mask);
    if (lane == 0)
      a.out[0] = v;
  }
}

} // namespace

TEST(GpuEmulator, WarpShuffles) {
  for (int32_t threads : {32, 96, 1024}) {
    std::vector<int32_t> out(static_cast<size_t>(threads), -1);
    WarpArgs args{out.data()};
    ASSERT_EQ(launch(warpSum, args, 1, threads), "");
    for (int32_t t = 0; t < threads; ++t) {
      int32_t expected = 0;
      for (int32_t l = t - t % 32; l < t - t % 32 + 32; ++l)
        expected += l * l % 97;
      EXPECT_EQ(out[static_cast<size_t>(t)], expected) << "thread " << t;
    }
    std::fill(out.begin(), out.end(), -1);
    ASSERT_EQ(launch(broadcast, args, 1, threads), "");
    for (int32_t t = 0; t < threads; ++t)
      EXPECT_EQ(out[static_cast<size_t>(t)], 1) << "thread " << t;
    out[0] = -1;
    ASSERT_EQ(launch(warpThenBlockSum, args, 1, threads, 128), "");
    EXPECT_EQ(out[0], threads * (threads - 1) / 2);
  }
}

namespace {

struct StrideArgs {
  const float *in;
  float *out;
  int64_t n;
};

/// out[i] = in[i] * 2 + 1 over a grid stride.
void affine(void *p) {
  auto &a = *static_cast<StrideArgs *>(p);
  int64_t stride = int64_t(tsl_gpu_grid_dim()) * tsl_gpu_block_dim();
  for (int64_t i = int64_t(tsl_gpu_block_idx()) * tsl_gpu_block_dim() +
                   tsl_gpu_thread_idx();
       i < a.n; i += stride)
    a.out[i] = a.in[i] * 2 + 1;
}

/// out[i] = expf(in[i]) + tanhf(in[i]): libm on a fiber stack.
void expTanh(void *p) {
  auto &a = *static_cast<StrideArgs *>(p);
  int64_t stride = int64_t(tsl_gpu_grid_dim()) * tsl_gpu_block_dim();
  for (int64_t i = int64_t(tsl_gpu_block_idx()) * tsl_gpu_block_dim() +
                   tsl_gpu_thread_idx();
       i < a.n; i += stride) {
    a.out[i] = expf(a.in[i]) + tanhf(a.in[i]);
    tsl_gpu_barrier(); // switch fibers between libm calls
  }
}

} // namespace

TEST(GpuEmulator, GridStrideOverAClampedGrid) {
  const int64_t n = 10000;
  std::vector<float> in(n), out(n, -7.f);
  for (int64_t i = 0; i < n; ++i)
    in[static_cast<size_t>(i)] = float(i) * 0.5f;
  StrideArgs args{in.data(), out.data(), n};
  EXPECT_EQ(launch(affine, args, 0, 64), ""); // no blocks: nothing runs
  EXPECT_EQ(launch(affine, args, -3, 64), "");
  EXPECT_EQ(out[0], -7.f);
  ASSERT_EQ(launch(affine, args, 1000, 64), "");
  for (int64_t i = 0; i < n; ++i)
    ASSERT_EQ(out[static_cast<size_t>(i)], float(i) + 1) << i;
}

TEST(GpuEmulator, LibmInsideFibers) {
  const int64_t n = 32 * 3 * 4; // every thread runs 4 times
  std::vector<float> in(n), out(n);
  for (int64_t i = 0; i < n; ++i)
    in[static_cast<size_t>(i)] = float(i % 41) * 0.25f - 5;
  StrideArgs args{in.data(), out.data(), n};
  ASSERT_EQ(launch(expTanh, args, 3, 32), "");
  for (int64_t i = 0; i < n; ++i) {
    float x = in[static_cast<size_t>(i)];
    EXPECT_EQ(out[static_cast<size_t>(i)], expf(x) + tanhf(x)) << i;
  }
}

namespace {

void barrierInBranch(void *) {
  if (tsl_gpu_thread_idx() < 32)
    tsl_gpu_barrier();
}

void barrierAfterReturn(void *) {
  if (tsl_gpu_thread_idx() >= 32)
    tsl_gpu_barrier();
}

void laneReturnsWhileWarpShuffles(void *) {
  if (tsl_gpu_thread_idx() % 32 == 7)
    return;
  tsl_gpu_shfl_xor(1, 1);
}

void laneAtBarrierWhileWarpShuffles(void *) {
  if (tsl_gpu_thread_idx() == 33)
    tsl_gpu_barrier();
  else
    tsl_gpu_shfl_idx(1, 0);
}

void shuffleWhileLaneAtBarrier(void *) {
  if (tsl_gpu_thread_idx() == 0)
    tsl_gpu_barrier();
  tsl_gpu_shfl_idx(1, 0);
  tsl_gpu_barrier();
}

void divergentShuffles(void *) {
  if (tsl_gpu_thread_idx() < 16)
    tsl_gpu_shfl_xor(1, 1);
  else
    tsl_gpu_shfl_idx(1, 1);
}

/// Block 1 deadlocks; block 0 completes.
void deadlockInSecondBlock(void *) {
  if (tsl_gpu_block_idx() == 1 && tsl_gpu_thread_idx() == 5)
    return;
  tsl_gpu_barrier();
}

} // namespace

TEST(GpuEmulator, DeadlocksAreErrors) {
  int unused = 0;
  EXPECT_EQ(launch(barrierInBranch, unused, 1, 64),
            "emulator: deadlock: thread 32 of block 0 returned while 32 "
            "threads wait at a barrier");
  EXPECT_EQ(launch(barrierAfterReturn, unused, 1, 64),
            "emulator: deadlock: thread 32 of block 0 waits at a barrier "
            "that thread 0 never reaches (it returned)");
  EXPECT_EQ(launch(laneReturnsWhileWarpShuffles, unused, 1, 64),
            "emulator: deadlock: thread 7 of block 0 returned while 7 lanes "
            "of its warp wait at a shuffle");
  EXPECT_EQ(launch(laneAtBarrierWhileWarpShuffles, unused, 1, 64),
            "emulator: deadlock: thread 33 of block 0 waits at a barrier "
            "while 1 lanes of its warp wait at a shuffle");
  EXPECT_EQ(launch(shuffleWhileLaneAtBarrier, unused, 1, 32),
            "emulator: deadlock: thread 1 of block 0 waits at a shuffle "
            "while thread 0 of its warp waits at a barrier");
  EXPECT_EQ(launch(divergentShuffles, unused, 1, 32),
            "emulator: divergent shuffle: in warp 0 of block 0, lane 0 calls "
            "tsl_gpu_shfl_xor and lane 16 tsl_gpu_shfl_idx");
  EXPECT_EQ(launch(deadlockInSecondBlock, unused, 3, 1024),
            "emulator: deadlock: thread 5 of block 1 returned while 5 "
            "threads wait at a barrier");
  // The abandoned fibers restart cleanly: the same thread launches again.
  auto in = iota(5000);
  EXPECT_EQ(runBlockSum(in, 3, 1024), reference(in));
}

TEST(GpuEmulator, BadLaunchesAreErrors) {
  int unused = 0;
  for (int32_t threads : {0, -32, 16, 33, 1056, 2048})
    EXPECT_EQ(launch(barrierInBranch, unused, 1, threads),
              "emulator: " + std::to_string(threads) +
                  " threads per block: must be a multiple of 32 in 32..1024");
  for (int32_t shared : {-1, kMaxSharedBytes + 1})
    EXPECT_EQ(launch(barrierInBranch, unused, 1, 32, shared),
              "emulator: " + std::to_string(shared) +
                  " bytes of shared memory: must be in 0..49152");
  // Checked even when no block runs.
  EXPECT_NE(launch(barrierInBranch, unused, 0, 33), "");
  std::string error;
  EXPECT_FALSE(emulateLaunch(nullptr, nullptr, {1, 32, 0}, error));
  EXPECT_EQ(error, "emulator: no kernel");
}

namespace {

struct GarbageArgs {
  unsigned char *seen; // per block and thread: its shared byte before writes
  uintptr_t *address;  // per block
};

/// Records the shared byte it owns, then overwrites it.
void readSharedFirst(void *p) {
  auto &a = *static_cast<GarbageArgs *>(p);
  int32_t tid = tsl_gpu_thread_idx(), block = tsl_gpu_block_idx();
  auto *shared = static_cast<unsigned char *>(tsl_gpu_shared());
  int32_t bytes = kMaxSharedBytes / tsl_gpu_block_dim();
  a.seen[block * tsl_gpu_block_dim() + tid] = shared[tid * bytes];
  a.address[block] = reinterpret_cast<uintptr_t>(shared);
  tsl_gpu_barrier();
  std::memset(shared + tid * bytes, 0, static_cast<size_t>(bytes));
}

} // namespace

TEST(GpuEmulator, SharedMemoryStartsAsGarbage) {
  std::vector<unsigned char> seen(3 * 64, 0);
  std::vector<uintptr_t> address(3, 1);
  GarbageArgs args{seen.data(), address.data()};
  ASSERT_EQ(launch(readSharedFirst, args, 3, 64, kMaxSharedBytes), "");
  for (unsigned char byte : seen) // every block sees it, not block 0's zeros
    EXPECT_EQ(byte, kSharedGarbage);
  for (uintptr_t a : address)
    EXPECT_EQ(a % 16, 0u);
}

namespace {

struct OrderArgs {
  std::vector<int32_t> *log;
};

void logOrder(void *p) {
  auto &a = *static_cast<OrderArgs *>(p);
  a.log->push_back(tsl_gpu_thread_idx());
  tsl_gpu_barrier();
  a.log->push_back(tsl_gpu_thread_idx());
}

void nestedLaunch(void *p) {
  auto &error = *static_cast<std::string *>(p);
  int unused = 0;
  if (tsl_gpu_thread_idx() == 0)
    emulateLaunch(barrierInBranch, &unused, {1, 32, 0}, error);
}

} // namespace

TEST(GpuEmulator, RoundRobinInThreadOrder) {
  std::vector<int32_t> log;
  OrderArgs args{&log};
  ASSERT_EQ(launch(logOrder, args, 1, 64), "");
  ASSERT_EQ(log.size(), 128u);
  for (int32_t i = 0; i < 128; ++i)
    EXPECT_EQ(log[static_cast<size_t>(i)], i % 64);
}

namespace {

/// One m16n8k16 product per warp: warp w multiplies matrices a[w] (16x16)
/// and b[w] (16x8) onto c[w] (16x8) into d[w].
struct MmaArgs {
  int32_t kind; ///< 0: f16, 1: bf16
  const float *a, *b, *c;
  float *d;
};

/// \p x (exactly representable) as f16 (kind 0) or bf16 (kind 1) bits.
uint32_t lowBits(float x, int32_t kind) {
  uint32_t f;
  std::memcpy(&f, &x, sizeof f);
  if (kind == 1 || x == 0)
    return (f >> 16) & 0xffff;
  uint32_t sign = f >> 31, exp = (f >> 23) & 255, man = f & 0x7fffff;
  return (sign << 15) | ((exp - 127 + 15) << 10) | (man >> 13);
}

/// Two elements in one fragment word, the first in the low half.
uint32_t pair(float lo, float hi, int32_t kind) {
  return lowBits(lo, kind) | (lowBits(hi, kind) << 16);
}

/// Packs this lane's fragments as the PTX ISA lays them out (written from
/// its tables: a_i at row g (+8 for i in 2,3,6,7), column 2t + i % 2 (+8
/// for i >= 4); b_i at row 2t + i % 2 (+8 for i >= 2), column g; c_i at
/// row g (+8 for i >= 2), column 2t + i % 2) and multiplies.
void mmaKernel(void *p) {
  auto &x = *static_cast<MmaArgs *>(p);
  int32_t tid = tsl_gpu_thread_idx(), w = tid / 32, l = tid % 32;
  int32_t g = l / 4, t = l % 4;
  const float *a = x.a + w * 256, *b = x.b + w * 128, *c = x.c + w * 128;
  auto at = [&](int32_t r, int32_t k) { return a[r * 16 + k]; };
  auto bt = [&](int32_t k, int32_t n) { return b[k * 8 + n]; };
  uint32_t af[4] = {pair(at(g, 2 * t), at(g, 2 * t + 1), x.kind),
                    pair(at(g + 8, 2 * t), at(g + 8, 2 * t + 1), x.kind),
                    pair(at(g, 2 * t + 8), at(g, 2 * t + 9), x.kind),
                    pair(at(g + 8, 2 * t + 8), at(g + 8, 2 * t + 9), x.kind)};
  uint32_t bf[2] = {pair(bt(2 * t, g), bt(2 * t + 1, g), x.kind),
                    pair(bt(2 * t + 8, g), bt(2 * t + 9, g), x.kind)};
  float acc[4] = {c[g * 8 + 2 * t], c[g * 8 + 2 * t + 1],
                  c[(g + 8) * 8 + 2 * t], c[(g + 8) * 8 + 2 * t + 1]};
  tsl_gpu_mma_16816(x.kind, af, bf, acc);
  float *d = x.d + w * 128;
  d[g * 8 + 2 * t] = acc[0];
  d[g * 8 + 2 * t + 1] = acc[1];
  d[(g + 8) * 8 + 2 * t] = acc[2];
  d[(g + 8) * 8 + 2 * t + 1] = acc[3];
}

/// Lane 0 multiplies f16, the others bf16.
void mixedMmaKinds(void *) {
  uint32_t a[4] = {}, b[2] = {};
  float acc[4] = {};
  tsl_gpu_mma_16816(tsl_gpu_thread_idx() == 0 ? 0 : 1, a, b, acc);
}

} // namespace

TEST(GpuEmulator, TensorCoreMultiplyBothTypes) {
  const int32_t warps = 2;
  // Multiples of 1/4 in -2..2: exact in f16, bf16 and every f32 sum.
  std::vector<float> a(warps * 256), b(warps * 128), c(warps * 128);
  for (size_t i = 0; i < a.size(); ++i)
    a[i] = float(int32_t(i * 37 % 17) - 8) / 4;
  for (size_t i = 0; i < b.size(); ++i)
    b[i] = float(int32_t(i * 11 % 13) - 6) / 4;
  for (size_t i = 0; i < c.size(); ++i)
    c[i] = float(int32_t(i % 7) - 3);
  for (int32_t kind : {0, 1}) {
    std::vector<float> d(warps * 128, -1.f);
    MmaArgs args{kind, a.data(), b.data(), c.data(), d.data()};
    ASSERT_EQ(launch(mmaKernel, args, 1, 32 * warps), "");
    for (int32_t w = 0; w < warps; ++w)
      for (int32_t m = 0; m < 16; ++m)
        for (int32_t n = 0; n < 8; ++n) {
          float ref = c[size_t(w * 128 + m * 8 + n)];
          for (int32_t k = 0; k < 16; ++k)
            ref += a[size_t(w * 256 + m * 16 + k)] *
                   b[size_t(w * 128 + k * 8 + n)];
          EXPECT_EQ(d[size_t(w * 128 + m * 8 + n)], ref)
              << "kind " << kind << " warp " << w << " at " << m << "," << n;
        }
  }
  int unused = 0;
  EXPECT_EQ(launch(mixedMmaKinds, unused, 1, 32),
            "emulator: divergent shuffle: in warp 0 of block 0, lane 0 calls "
            "tsl_gpu_mma_16816 of kind 0 and lane 1 of kind 1");
}

TEST(GpuEmulator, NestedLaunchIsAnError) {
  std::string nested;
  EXPECT_EQ(launch(nestedLaunch, nested, 1, 32), "");
  EXPECT_EQ(nested, "emulator: a launch from inside an emulated kernel");
}

TEST(GpuEmulator, PrimitivesOutsideALaunch) {
  EXPECT_EQ(tsl_gpu_thread_idx(), 0);
  EXPECT_EQ(tsl_gpu_block_idx(), 0);
  EXPECT_EQ(tsl_gpu_block_dim(), 1);
  EXPECT_EQ(tsl_gpu_grid_dim(), 1);
  tsl_gpu_barrier();
  EXPECT_EQ(tsl_gpu_shfl_xor(42, 1), 42);
  EXPECT_EQ(tsl_gpu_shfl_idx(43, 3), 43);
  EXPECT_EQ(tsl_gpu_shared(), nullptr);
  uint32_t a[4] = {0x3c003c00, 0x3c003c00, 0x3c003c00, 0x3c003c00};
  uint32_t b[2] = {0x3c003c00, 0x3c003c00};
  float acc[4] = {1, 2, 3, 4};
  tsl_gpu_mma_16816(0, a, b, acc); // no warp: nothing happens
  EXPECT_EQ(acc[0], 1.f);
  EXPECT_EQ(acc[3], 4.f);
}

TEST(GpuEmulator, PrimitivesByName) {
  size_t n = 0;
  const EmulatedPrimitive *table = emulatedPrimitives(&n);
  ASSERT_EQ(n, 11u);
  std::vector<std::string> names;
  for (size_t i = 0; i < n; ++i) {
    names.push_back(table[i].name);
    EXPECT_NE(table[i].address, nullptr);
  }
  EXPECT_EQ(names,
            (std::vector<std::string>{
                "tsl_gpu_thread_idx", "tsl_gpu_block_idx", "tsl_gpu_block_dim",
                "tsl_gpu_grid_dim", "tsl_gpu_barrier", "tsl_gpu_shfl_xor",
                "tsl_gpu_shfl_idx", "tsl_gpu_mma_16816", "tsl_gpu_shared",
                "tsl_gpu_count_access", "tsl_gpu_count_kernel"}));
  EXPECT_EQ(table[0].address, reinterpret_cast<void *>(&tsl_gpu_thread_idx));
  EXPECT_EQ(table[8].address, reinterpret_cast<void *>(&tsl_gpu_shared));
}

TEST(GpuEmulator, ConcurrentHostThreads) {
  constexpr int kThreads = 3;
  std::vector<int64_t> results(kThreads * 8), expected(kThreads * 8);
  std::vector<std::thread> workers;
  for (int w = 0; w < kThreads; ++w)
    workers.emplace_back([w, &results, &expected] {
      for (int i = 0; i < 8; ++i) {
        auto in = iota(3000 + 100 * i, w * 10 + i);
        size_t slot = static_cast<size_t>(w * 8 + i);
        expected[slot] = reference(in);
        results[slot] = runBlockSum(in, 1 + i % 4, i % 2 ? 256 : 128);
        if (i == 3) { // a deadlock on one thread leaves the others alone
          int unused = 0;
          EXPECT_NE(launch(barrierInBranch, unused, 1, 64), "");
        }
      }
    });
  for (auto &t : workers)
    t.join();
  EXPECT_EQ(results, expected);
}
