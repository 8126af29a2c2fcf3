// Single-precision matrix multiply for generated code and the runtime's
// kernels: cache blocking (panels of B and A packed contiguously) around a
// register-blocked micro-kernel (12 x 32 or 8 x 48 for AVX-512, 6 x 16 for
// AVX2, 4 x 8 portable), chosen at run time by CPU features and the shape.
#include "runtime/Gemm.h"
#include "runtime/KernelAbi.h"
#include "runtime/ThreadPool.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace {

#pragma GCC push_options
#pragma GCC target("avx512f,fma")
namespace avx512 {
typedef float Vec __attribute__((vector_size(64)));
constexpr int Lanes = 16;
// Two register tiles, each with 24 of the 32 zmm registers accumulating:
// 12 x 32 for most shapes, 8 x 48 where M's rows come in eights and not
// twelves (a 64-channel conv: 72 rows of 12 x 32 tiles for 64 of work).
namespace tall {
constexpr int64_t MR = 12, NR = 32;
#include "runtime/GemmKernel.inc"
} // namespace tall
namespace wide {
constexpr int64_t MR = 8, NR = 48;
#include "runtime/GemmKernel.inc"
} // namespace wide
} // namespace avx512
#pragma GCC pop_options

#pragma GCC push_options
#pragma GCC target("avx2,fma")
namespace avx2 {
typedef float Vec __attribute__((vector_size(32)));
constexpr int Lanes = 8;
constexpr int64_t MR = 6, NR = 16; // 12 of the 16 ymm registers accumulate
#include "runtime/GemmKernel.inc"
} // namespace avx2
#pragma GCC pop_options

namespace portable {
typedef float Vec __attribute__((vector_size(16)));
constexpr int Lanes = 4;
constexpr int64_t MR = 4, NR = 8;
#include "runtime/GemmKernel.inc"
} // namespace portable

using GemmFn = void (*)(int64_t, int64_t, int64_t, const tsl::rt::GemmA &,
                        const tsl::rt::GemmB &, float *, int64_t, const float *,
                        float *, float *);

/// One register tile's GEMM, its whole-operand packing, and the packing
/// scratch it needs.
struct Tile {
  GemmFn fn = nullptr;
  void (*packB)(int64_t, int64_t, const tsl::rt::GemmB &, float *) = nullptr;
  int64_t (*packedFloats)(int64_t, int64_t) = nullptr;
  int64_t mr = 0, nr = 0, bpFloats = 0, apFloats = 0;
};
#define TSL_GEMM_TILE(ns)                                                      \
  Tile {                                                                       \
    ns::gemm, ns::packB, ns::packedFloats, ns::MR, ns::NR, ns::BpFloats,       \
        ns::ApFloats                                                           \
  }

/// The tiles of this CPU's instruction set, the first the default.
struct Kernel {
  Tile tiles[2];
  int count = 1;
  int64_t bpFloats = 0, apFloats = 0; ///< the most any tile needs

  /// The tile for an M x N result: the default unless another pads the
  /// result to a smaller area by more than 2% (it also gives a
  /// register-blocked tile some speed for its shape).
  const Tile &choose(int64_t M, int64_t N) const {
    auto area = [&](const Tile &t) {
      return static_cast<double>((M + t.mr - 1) / t.mr * t.mr) *
             static_cast<double>((N + t.nr - 1) / t.nr * t.nr);
    };
    const Tile *best = &tiles[0];
    for (int i = 1; i < count; ++i)
      if (area(tiles[i]) * 1.02 < area(*best))
        best = &tiles[i];
    return *best;
  }
};

Kernel chooseKernel() {
  Kernel k;
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) {
    k.tiles[0] = TSL_GEMM_TILE(avx512::tall);
    k.tiles[1] = TSL_GEMM_TILE(avx512::wide);
    k.count = 2;
  } else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    k.tiles[0] = TSL_GEMM_TILE(avx2);
  } else {
    k.tiles[0] = TSL_GEMM_TILE(portable);
  }
  for (int i = 0; i < k.count; ++i) {
    k.bpFloats = std::max(k.bpFloats, k.tiles[i].bpFloats);
    k.apFloats = std::max(k.apFloats, k.tiles[i].apFloats);
  }
  return k;
}
#undef TSL_GEMM_TILE

/// Packing buffers, one pair per thread, reused by its calls (not zeroed:
/// every panel is fully written before it is read); freed at thread exit.
struct Scratch {
  float *bp = nullptr, *ap = nullptr;
  int apSlots = 0;
  Scratch() = default;
  Scratch(const Scratch &) = delete;
  Scratch &operator=(const Scratch &) = delete;
  ~Scratch() {
    std::free(bp);
    std::free(ap);
  }
  /// Allocates the buffers on first use; false when that fails.
  bool reserve(const Kernel &k) {
    if (!bp)
      bp = static_cast<float *>(
          std::aligned_alloc(64, static_cast<size_t>(k.bpFloats) * 4));
    // One A slot per pool thread (blocked() indexes them by threadIndex);
    // regrown when the pool grows.
    int threads = tsl::rt::ThreadPool::instance().size();
    if (!ap || apSlots < threads) {
      std::free(ap);
      ap = static_cast<float *>(
          std::aligned_alloc(64, static_cast<size_t>(k.apFloats) * 4 *
                                     static_cast<size_t>(threads)));
      apSlots = ap ? threads : 0;
    }
    return bp && ap;
  }
};

const Kernel &kernel() {
  static const Kernel k = chooseKernel();
  return k;
}

/// tsl_rt_sgemm's fallback when no packing scratch can be had: unblocked,
/// i-k-j order, never fails.
void naiveGemm(int64_t M, int64_t N, int64_t K, const float *A, int64_t lda,
               bool transA, const float *B, int64_t ldb, bool transB, float *C,
               int64_t ldc) {
  for (int64_t i = 0; i < M; ++i) {
    float *c = C + i * ldc;
    std::fill(c, c + N, 0.f);
    for (int64_t k = 0; k < K; ++k) {
      float a = transA ? A[k * lda + i] : A[i * lda + k];
      for (int64_t j = 0; j < N; ++j)
        c[j] += a * (transB ? B[j * ldb + k] : B[k * ldb + j]);
    }
  }
}

void matrixGemm(int64_t M, int64_t N, int64_t K, const float *A, int64_t lda,
                bool transA, const float *B, int64_t ldb, bool transB, float *C,
                int64_t ldc) {
  tsl::rt::GemmB b;
  b.data = B;
  b.ld = ldb;
  b.transposed = transB;
  if (!tsl::rt::sgemm(M, N, K, tsl::rt::GemmA{A, lda, transA}, b, C, ldc,
                      nullptr))
    naiveGemm(M, N, K, A, lda, transA, B, ldb, transB, C, ldc);
}

} // namespace

bool tsl::rt::sgemm(int64_t M, int64_t N, int64_t K, const GemmA &A,
                    const GemmB &B, float *C, int64_t ldc,
                    const float *rowBias) {
  const Kernel &k = kernel();
  thread_local Scratch scratch;
  if (!scratch.reserve(k))
    return false;
  // Packed operands are in the default tile's panels (sgemmPackB).
  const Tile &tile = B.packed ? k.tiles[0] : k.choose(M, N);
  tile.fn(M, N, K, A, B, C, ldc, rowBias, scratch.bp, scratch.ap);
  return true;
}

int64_t tsl::rt::sgemmPackedFloats(int64_t K, int64_t N) {
  return kernel().tiles[0].packedFloats(K, N);
}

void tsl::rt::sgemmPackB(int64_t K, int64_t N, const GemmB &B, float *dst) {
  kernel().tiles[0].packB(K, N, B, dst);
}

extern "C" void tsl_rt_sgemm(int64_t M, int64_t N, int64_t K, const float *A,
                             int64_t lda, const float *B, int64_t ldb, float *C,
                             int64_t ldc) {
  matrixGemm(M, N, K, A, lda, false, B, ldb, false, C, ldc);
}

extern "C" void tsl_rt_sgemm_bt(int64_t M, int64_t N, int64_t K, const float *A,
                                int64_t lda, const float *B, int64_t ldb,
                                float *C, int64_t ldc) {
  matrixGemm(M, N, K, A, lda, false, B, ldb, true, C, ldc);
}

extern "C" void tsl_rt_sgemm_at(int64_t M, int64_t N, int64_t K, const float *A,
                                int64_t lda, const float *B, int64_t ldb,
                                float *C, int64_t ldc) {
  matrixGemm(M, N, K, A, lda, true, B, ldb, false, C, ldc);
}
