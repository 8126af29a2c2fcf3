// attention's library kernel on the CPU (tsl_rt_attention): softmax(q k^T *
// scale + mask) v computed flash-style, so the S x T scores are never
// stored. Each batch entry's k^T and v are first packed into the GEMM's
// panels, once, key block by key block (PackedKeys). Then for each batch
// entry and block of 240 query rows (two of the GEMM's row blocks) it walks
// the keys in blocks of 512: the block's scores come from the runtime's GEMM
// reading the packed k^T in place, then each row is scaled, masked, and
// turned into exponentials against a running maximum (earlier blocks' sums
// and outputs are rescaled when the maximum grows), and the output block
// gains P @ v from a second GEMM on the packed v. The (batch entry, query
// block) pairs are shared out over the runtime's thread pool. f16 and bf16
// compute in f32 (inputs widened once, the result rounded once); f64 runs a
// scalar loop in double.
#include "runtime/FloatElements.h"
#include "runtime/Gemm.h"
#include "runtime/KernelAbi.h"
#include "runtime/ThreadPool.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <immintrin.h>
#include <iterator>
#include <limits>

namespace {

using namespace tsl::rt;

#pragma GCC push_options
#pragma GCC target("avx512f,fma")
namespace avx512 {
typedef float Vec __attribute__((vector_size(64)));
constexpr int64_t Lanes = 16;
// Clang (the fuzzing build) ignores `#pragma GCC target`: there this
// namespace is generic vector code, without the AVX-512 intrinsics.
#ifndef __clang__
// GCC 12 reads its own _mm512_undefined_ps() (`__m512 __Y = __Y;`, the
// don't-care source of the unmasked intrinsics) as a maybe-uninitialized use.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
/// e^x per lane, as the portable expVec (Cody-Waite reduction, Cephes'
/// degree-6 polynomial) but with AVX-512's rounding and scaling
/// instructions: VSCALEFPS makes p * 2^n in one step, denormal and overflow
/// results included, so the clamps only keep the reduction finite (-inf
/// gives 0, +inf gives inf) and NaN passes through every step (MINPS and
/// MAXPS return their second operand when either is NaN). 18 instructions
/// per 16 floats where the integer form takes 25.
inline Vec expVec(Vec x) {
  __m512 c = _mm512_min_ps(_mm512_set1_ps(89.0f), (__m512)x);
  c = _mm512_max_ps(_mm512_set1_ps(-104.0f), c);
  Vec cv = (Vec)c;
  Vec n =
      (Vec)_mm512_roundscale_ps((__m512)(cv * 1.44269504f),
                                _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  Vec r = cv - n * 0.693359375f + n * 2.12194440e-4f;
  Vec p = Vec{} + 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  return (Vec)_mm512_scalef_ps((__m512)p, (__m512)n);
}
#define TSL_ATTENTION_NATIVE_EXP
#endif
#include "runtime/AttentionRow.inc"
#ifndef __clang__
#pragma GCC diagnostic pop
#endif
#undef TSL_ATTENTION_NATIVE_EXP
} // namespace avx512
#pragma GCC pop_options

#pragma GCC push_options
#pragma GCC target("avx2,fma")
namespace avx2 {
typedef float Vec __attribute__((vector_size(32)));
constexpr int64_t Lanes = 8;
#include "runtime/AttentionRow.inc"
} // namespace avx2
#pragma GCC pop_options

namespace portable {
typedef float Vec __attribute__((vector_size(16)));
constexpr int64_t Lanes = 4;
#include "runtime/AttentionRow.inc"
} // namespace portable

/// The row steps for this CPU's instruction set.
struct RowOps {
  float (*scaleMaskMax)(float *, int64_t, float, const float *, int64_t,
                        int64_t);
  float (*expShiftSum)(float *, int64_t, float);
  void (*rescaleAdd)(float *, const float *, int64_t, float);
};
#define TSL_ROW_OPS(ns)                                                        \
  RowOps { ns::scaleMaskMax, ns::expShiftSum, ns::rescaleAdd }

const RowOps &rowOps() {
  static const RowOps ops = [] {
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f"))
      return TSL_ROW_OPS(avx512);
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
      return TSL_ROW_OPS(avx2);
    return TSL_ROW_OPS(portable);
  }();
  return ops;
}
#undef TSL_ROW_OPS

constexpr int64_t kQueryRows = 240, kKeyCols = 512;
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

/// One call's sizes and options.
struct Problem {
  int32_t dtype;
  int64_t batch, S, T, D, E;
  const int64_t *batchShape;
  int32_t batchRank;
  const int64_t *maskStrides; ///< batchRank + 2 entries, 0 = broadcast
  bool causal;

  /// The mask's offset for flat batch entry \p b.
  int64_t maskBase(int64_t b) const {
    int64_t base = 0;
    for (int32_t i = batchRank; i-- > 0;) {
      base += (b % batchShape[i]) * maskStrides[i];
      b /= batchShape[i];
    }
    return base;
  }
  int64_t maskRowStride() const { return maskStrides[batchRank]; }
  int64_t maskColStride() const { return maskStrides[batchRank + 1]; }
};

/// One thread's scratch for query blocks, carved from one allocation.
struct Scratch {
  float *scores, *pv, *out, *rowMax, *rowSum, *keep, *maskRow;

  /// Floats one thread's scratch takes (each part rounded to 16 floats).
  static int64_t floats(const Problem &p) {
    return kQueryRows * kKeyCols + 2 * ((kQueryRows * p.E + 15) / 16 * 16) +
           3 * kQueryRows + kKeyCols;
  }
  explicit Scratch(float *at, const Problem &p) {
    float **slots[] = {&scores, &pv, &out, &rowMax, &rowSum, &keep, &maskRow};
    int64_t sizes[] = {kQueryRows * kKeyCols,
                       kQueryRows * p.E,
                       kQueryRows * p.E,
                       kQueryRows,
                       kQueryRows,
                       kQueryRows,
                       kKeyCols};
    for (size_t i = 0; i < std::size(sizes); ++i) {
      *slots[i] = at;
      at += (sizes[i] + 15) / 16 * 16;
    }
  }
};

/// Every batch entry's keys and values packed once in the GEMM's panels
/// (tsl::rt::sgemmPackB), key block by key block: k^T's (D x nk) panels for
/// the scores, then v's (nk x E) for the output. Every block of query rows
/// reads them in place, where each used to pack its own copy (the GEMM's
/// packing was 8% of 8 heads of 1024 x 64).
class PackedKeys {
public:
  explicit PackedKeys(const Problem &p)
      : p(p), keyFloats(tsl::rt::sgemmPackedFloats(p.D, kKeyCols)),
        blockFloats(keyFloats + tsl::rt::sgemmPackedFloats(kKeyCols, p.E)),
        entryFloats((p.T + kKeyCols - 1) / kKeyCols * blockFloats) {}
  ~PackedKeys() { std::free(data); }
  PackedKeys(const PackedKeys &) = delete;
  PackedKeys &operator=(const PackedKeys &) = delete;

  /// Packs \p k and \p v (f32, every batch entry) over the thread pool;
  /// false when the memory cannot be had.
  bool pack(const float *k, const float *v) {
    size_t bytes = static_cast<size_t>(p.batch * entryFloats) * 4;
    // aligned_alloc wants a size that is a nonzero multiple of the alignment.
    data = static_cast<float *>(
        std::aligned_alloc(64, std::max<size_t>(64, (bytes + 63) / 64 * 64)));
    if (!data)
      return false;
    int64_t keyBlocks = (p.T + kKeyCols - 1) / kKeyCols;
    tsl::rt::ThreadPool::instance().parallelFor(
        p.batch * keyBlocks, [&](int64_t item) {
          int64_t b = item / keyBlocks, j0 = item % keyBlocks * kKeyCols;
          int64_t nk = blockKeys(j0);
          tsl::rt::sgemmPackB(
              p.D, nk, tsl::rt::GemmB{k + (b * p.T + j0) * p.D, p.D, true},
              keys(b, j0));
          tsl::rt::sgemmPackB(nk, p.E,
                              tsl::rt::GemmB{v + (b * p.T + j0) * p.E, p.E},
                              keys(b, j0) + keyFloats);
        });
    return true;
  }

  /// k^T's columns [j0, j0 + nk) of batch entry \p b as the scores' B
  /// (nk up to the key block's length).
  tsl::rt::GemmB keysFrom(int64_t b, int64_t j0) const {
    tsl::rt::GemmB B;
    B.packed = keys(b, j0);
    B.packedN = blockKeys(j0);
    return B;
  }
  /// v's rows [j0, j0 + nk) of batch entry \p b as the output's B: packed
  /// when nk is the whole key block, else read from \p v (the causal
  /// diagonal's shortened block).
  tsl::rt::GemmB valuesFrom(int64_t b, int64_t j0, int64_t nk,
                            const float *v) const {
    if (nk != blockKeys(j0))
      return tsl::rt::GemmB{v + (b * p.T + j0) * p.E, p.E};
    tsl::rt::GemmB B;
    B.packed = keys(b, j0) + keyFloats;
    B.packedN = p.E;
    return B;
  }

private:
  /// The keys of the block from \p j0 (the last one may be short).
  int64_t blockKeys(int64_t j0) const { return std::min(kKeyCols, p.T - j0); }
  float *keys(int64_t b, int64_t j0) const {
    return data + b * entryFloats + j0 / kKeyCols * blockFloats;
  }

  const Problem &p;
  int64_t keyFloats, blockFloats, entryFloats;
  float *data = nullptr;
};

/// One block of \p rows query rows from \p i0 of batch entry \p b: \p q is
/// that entry's f32 queries, \p keys every entry's packed keys and values
/// (\p v the f32 values, read by the causal diagonal's shortened blocks),
/// \p mask the entry's mask (element type p.dtype) at its base or null;
/// writes rows of \p out.
void queryBlock(const Problem &p, float scale, const float *q,
                const PackedKeys &keys, const float *v, int64_t b,
                const void *mask, int64_t i0, int64_t rows, Scratch &s,
                void *out, int64_t outBase) {
  const RowOps &ops = rowOps();
  std::fill(s.rowMax, s.rowMax + rows, kNegInf);
  std::fill(s.rowSum, s.rowSum + rows, 0.0f);
  std::fill(s.out, s.out + rows * p.E, 0.0f);
  int64_t keyCount = p.causal ? std::min(p.T, i0 + rows) : p.T;
  for (int64_t j0 = 0; j0 < keyCount; j0 += kKeyCols) {
    int64_t nk = std::min(kKeyCols, keyCount - j0);
    tsl::rt::sgemm(rows, nk, p.D, q + i0 * p.D, p.D, keys.keysFrom(b, j0),
                   s.scores, nk, nullptr);
    for (int64_t r = 0; r < rows; ++r) {
      float *row = s.scores + r * nk;
      const float *maskRow = nullptr;
      int64_t maskStride = 1;
      if (mask) {
        int64_t at = (i0 + r) * p.maskRowStride() + j0 * p.maskColStride();
        if (p.dtype == F32) {
          maskRow = static_cast<const float *>(mask) + at;
          maskStride = p.maskColStride();
        } else {
          for (int64_t j = 0; j < nk; ++j)
            s.maskRow[j] = loadFloat(p.dtype, mask, at + j * p.maskColStride());
          maskRow = s.maskRow;
        }
      }
      int64_t keep =
          p.causal ? std::clamp<int64_t>(i0 + r - j0 + 1, 0, nk) : nk;
      float blockMax =
          ops.scaleMaskMax(row, nk, scale, maskRow, maskStride, keep);
      float old = s.rowMax[r];
      float next = std::isnan(old) || std::isnan(blockMax)
                       ? std::numeric_limits<float>::quiet_NaN()
                       : std::max(old, blockMax);
      if (next == kNegInf) { // nothing kept yet: this block adds nothing
        std::fill(row, row + nk, 0.0f);
        s.keep[r] = 1.0f;
        continue;
      }
      s.keep[r] = std::exp(old - next); // 0 when old is -inf
      s.rowSum[r] = s.rowSum[r] * s.keep[r] + ops.expShiftSum(row, nk, next);
      s.rowMax[r] = next;
    }
    tsl::rt::sgemm(rows, p.E, nk, s.scores, nk, keys.valuesFrom(b, j0, nk, v),
                   s.pv, p.E, nullptr);
    for (int64_t r = 0; r < rows; ++r)
      ops.rescaleAdd(s.out + r * p.E, s.pv + r * p.E, p.E, s.keep[r]);
  }
  // A row that kept nothing has sum 0: 0 / 0 gives NaN, as softmax does.
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < p.E; ++c)
      storeFloat(p.dtype, out, outBase + (i0 + r) * p.E + c,
                 s.out[r * p.E + c] / s.rowSum[r]);
}

/// Converts \p n elements of \p src (f16 or bf16) to f32, in parallel.
void widen(int32_t d, const void *src, int64_t n, float *dst) {
  constexpr int64_t chunk = 1 << 16;
  tsl::rt::ThreadPool::instance().parallelFor(
      (n + chunk - 1) / chunk, [&](int64_t c) {
        for (int64_t i = c * chunk; i < std::min(n, (c + 1) * chunk); ++i)
          dst[i] = loadFloat(d, src, i);
      });
}

/// f32, f16 and bf16: query blocks over f32 data (f16/bf16 inputs widened
/// once), shared out over the thread pool; each block writes its own rows,
/// so the result does not depend on the thread count.
bool attentionFloat(tsl_rt_context *ctx, const Problem &p, float scale,
                    const void *q, const void *k, const void *v,
                    const void *mask, void *out) {
  tsl::rt::ThreadPool &pool = tsl::rt::ThreadPool::instance();
  bool half = p.dtype != F32;
  int64_t qn = p.batch * p.S * p.D, kn = p.batch * p.T * p.D,
          vn = p.batch * p.T * p.E;
  int64_t perThread = Scratch::floats(p);
  int64_t total = perThread * pool.size() + (half ? qn + kn + vn + 48 : 0);
  float *block = static_cast<float *>(
      // aligned_alloc wants a size that is a multiple of the alignment.
      std::aligned_alloc(64, (static_cast<size_t>(total) * 4 + 63) / 64 * 64));
  if (!block) {
    tsl_rt_error(ctx, "out of memory (attention scratch)");
    return false;
  }
  const float *qf = static_cast<const float *>(q),
              *kf = static_cast<const float *>(k),
              *vf = static_cast<const float *>(v);
  if (half) {
    float *wide = block + perThread * pool.size();
    widen(p.dtype, q, qn, wide);
    widen(p.dtype, k, kn, wide + qn);
    widen(p.dtype, v, vn, wide + qn + kn);
    qf = wide, kf = wide + qn, vf = wide + qn + kn;
  }
  size_t bytes = half ? 2 : 4;
  int64_t blocks = (p.S + kQueryRows - 1) / kQueryRows;
  PackedKeys keys(p);
  if (!keys.pack(kf, vf)) {
    std::free(block);
    tsl_rt_error(ctx, "out of memory (attention scratch)");
    return false;
  }
  pool.parallelFor(p.batch * blocks, [&](int64_t item) {
    int64_t b = item / blocks, i0 = item % blocks * kQueryRows;
    Scratch s(block + perThread * tsl::rt::ThreadPool::threadIndex(), p);
    const void *maskAt =
        mask ? static_cast<const char *>(mask) + p.maskBase(b) * bytes
             : nullptr;
    queryBlock(p, scale, qf + b * p.S * p.D, keys, vf, b, maskAt, i0,
               std::min(kQueryRows, p.S - i0), s, out, b * p.S * p.E);
  });
  std::free(block);
  return true;
}

/// f64: the definition row by row, in double (like the interpreter).
bool attentionF64(tsl_rt_context *ctx, const Problem &p, double scale,
                  const double *q, const double *k, const double *v,
                  const double *mask, double *out) {
  double *row =
      static_cast<double *>(std::malloc(std::max<int64_t>(p.T, 1) * 8));
  if (!row) {
    tsl_rt_error(ctx, "out of memory (attention scratch)");
    return false;
  }
  for (int64_t b = 0; b < p.batch; ++b) {
    int64_t maskBase = mask ? p.maskBase(b) : 0;
    for (int64_t i = 0; i < p.S; ++i) {
      const double *qi = q + (b * p.S + i) * p.D;
      double mx = -std::numeric_limits<double>::infinity();
      bool nan = false;
      for (int64_t j = 0; j < p.T; ++j) {
        double sc = -std::numeric_limits<double>::infinity();
        if (!p.causal || j <= i) {
          const double *kj = k + (b * p.T + j) * p.D;
          sc = 0;
          for (int64_t d = 0; d < p.D; ++d)
            sc += qi[d] * kj[d];
          sc *= scale;
          if (mask)
            sc +=
                mask[maskBase + i * p.maskRowStride() + j * p.maskColStride()];
        }
        row[j] = sc;
        nan |= std::isnan(sc);
        mx = std::max(mx, sc);
      }
      if (nan)
        mx = std::numeric_limits<double>::quiet_NaN();
      double sum = 0;
      double *o = out + (b * p.S + i) * p.E;
      std::fill(o, o + p.E, 0.0);
      for (int64_t j = 0; j < p.T; ++j) {
        double e = std::exp(row[j] - mx);
        sum += e;
        const double *vj = v + (b * p.T + j) * p.E;
        for (int64_t c = 0; c < p.E; ++c)
          o[c] += e * vj[c];
      }
      for (int64_t c = 0; c < p.E; ++c)
        o[c] /= sum;
    }
  }
  std::free(row);
  return true;
}

} // namespace

extern "C" int32_t
tsl_rt_attention(tsl_rt_context *ctx, int32_t dtype, const int64_t *batchShape,
                 int32_t batchRank, int64_t S, int64_t T, int64_t D, int64_t E,
                 const void *q, const void *k, const void *v, const void *scale,
                 const void *mask, const int64_t *maskStrides, int32_t causal,
                 void *out) {
  Problem p{dtype, 1,          S,         T,           D,
            E,     batchShape, batchRank, maskStrides, causal != 0};
  for (int32_t i = 0; i < batchRank; ++i)
    p.batch *= batchShape[i];
  if (p.batch <= 0 || S <= 0 || E <= 0)
    return 0;
  if (dtype == F64)
    return attentionF64(
               ctx, p, *static_cast<const double *>(scale),
               static_cast<const double *>(q), static_cast<const double *>(k),
               static_cast<const double *>(v),
               static_cast<const double *>(mask), static_cast<double *>(out))
               ? 0
               : 1;
  if (dtype != F32 && dtype != F16 && dtype != BF16) {
    tsl_rt_error(ctx, "attention takes f16, bf16, f32 or f64");
    return 1;
  }
  return attentionFloat(ctx, p, loadFloat(dtype, scale, 0), q, k, v, mask, out)
             ? 0
             : 1;
}
