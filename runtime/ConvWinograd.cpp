// conv2d's Winograd F(2x2, 3x3) path (runtime/ConvWinograd.h). Per band of
// tile rows: the input transform writes V[16][C][tiles], sixteen GEMMs
// (runtime/Gemm.h) give M[16][O][tiles] = U[e] @ V[e], and the output
// transform writes each 2x2 tile of the result with the bias. The
// transforms run over channels on the pool; their loops are compiled per
// instruction set so the tile loops vectorize.
#include "runtime/ConvWinograd.h"
#include "runtime/Gemm.h"
#include "runtime/ThreadPool.h"

#include <algorithm>
#include <atomic>
#include <cstring>

namespace tsl::rt {

namespace {

/// 16 floats: the tile loops below are written in these (one AVX-512
/// register, two AVX2 or four SSE ones), since GCC does not vectorize
/// loops over this many pointers by itself.
typedef float V16 __attribute__((vector_size(64)));

#define TSL_LOAD16(p)                                                          \
  ({                                                                           \
    V16 v_;                                                                    \
    std::memcpy(&v_, (p), sizeof v_);                                          \
    v_;                                                                        \
  })
#define TSL_STORE16(p, v)                                                      \
  do {                                                                         \
    V16 s_ = (v);                                                              \
    std::memcpy((p), &s_, sizeof s_);                                          \
  } while (0)

/// Scratch floats per pool thread for the transforms: eight half-rows of
/// row-transformed values (even and odd columns apart, so the tile loops
/// read contiguously), and a zero row for tile rows past the image.
int64_t rowFloats(const WinogradShape &s) {
  return 8 * (s.tilesW() + 1) + s.Ws;
}

/// V[e][c][t] for channel \p c and the band's tile rows [th0, th1): the
/// rows of each 4x4 tile through B^T, then its columns. \p rows is this
/// thread's rowFloats(s) floats.
__attribute__((target_clones("avx512f", "avx2", "default"))) void
inputTransform(const WinogradShape &s, const float *image, int64_t c,
               int64_t th0, int64_t th1, float *V, float *rows) {
  int64_t tilesW = s.tilesW(), half = tilesW + 1, band = (th1 - th0) * tilesW;
  float *even[4], *odd[4];
  for (int i = 0; i < 4; ++i) {
    even[i] = rows + 2 * i * half;
    odd[i] = even[i] + half;
  }
  float *zero = rows + 8 * half;
  std::fill(zero, zero + s.Ws, 0.f);
  // Column pairs whose both columns are in the image; the rest read zeros.
  int64_t pairs = s.Ws / 2;
  for (int64_t th = th0; th < th1; ++th) {
    const float *r[4];
    for (int i = 0; i < 4; ++i) {
      int64_t y = 2 * th + i;
      r[i] = y < s.Hs ? image + (c * s.Hs + y) * s.Ws : zero;
    }
    for (int p = 0; p < 2; ++p) { // even columns, then odd ones
      float *t0 = p ? odd[0] : even[0], *t1 = p ? odd[1] : even[1],
            *t2 = p ? odd[2] : even[2], *t3 = p ? odd[3] : even[3];
      int64_t x = 0;
      if (p == 0) // both parities at once, 16 pairs at a time
        for (; x + 16 <= pairs; x += 16) {
          V16 v[4][2];
          for (int i = 0; i < 4; ++i) {
            V16 lo = TSL_LOAD16(r[i] + 2 * x),
                hi = TSL_LOAD16(r[i] + 2 * x + 16);
            v[i][0] = __builtin_shufflevector(lo, hi, 0, 2, 4, 6, 8, 10, 12, 14,
                                              16, 18, 20, 22, 24, 26, 28, 30);
            v[i][1] = __builtin_shufflevector(lo, hi, 1, 3, 5, 7, 9, 11, 13, 15,
                                              17, 19, 21, 23, 25, 27, 29, 31);
          }
          for (int q = 0; q < 2; ++q) {
            float **t = q ? odd : even;
            TSL_STORE16(t[0] + x, v[0][q] - v[2][q]);
            TSL_STORE16(t[1] + x, v[1][q] + v[2][q]);
            TSL_STORE16(t[2] + x, v[2][q] - v[1][q]);
            TSL_STORE16(t[3] + x, v[1][q] - v[3][q]);
          }
        }
      else
        x = pairs / 16 * 16;
      for (; x < pairs; ++x) {
        int64_t at = 2 * x + p;
        t0[x] = r[0][at] - r[2][at];
        t1[x] = r[1][at] + r[2][at];
        t2[x] = r[2][at] - r[1][at];
        t3[x] = r[1][at] - r[3][at];
      }
      for (int64_t x = pairs; x < half; ++x) {
        int64_t at = 2 * x + p;
        bool in = at < s.Ws;
        t0[x] = in ? r[0][at] - r[2][at] : 0.f;
        t1[x] = in ? r[1][at] + r[2][at] : 0.f;
        t2[x] = in ? r[2][at] - r[1][at] : 0.f;
        t3[x] = in ? r[1][at] - r[3][at] : 0.f;
      }
    }
    for (int i = 0; i < 4; ++i) {
      // Tile tw's columns are even[tw], odd[tw], even[tw+1], odd[tw+1].
      const float *e = even[i], *o = odd[i];
      float *v0 = V + ((4 * i + 0) * s.C + c) * band + (th - th0) * tilesW,
            *v1 = v0 + s.C * band, *v2 = v1 + s.C * band, *v3 = v2 + s.C * band;
      int64_t tw = 0;
      for (; tw + 16 <= tilesW; tw += 16) {
        V16 e0 = TSL_LOAD16(e + tw), e1 = TSL_LOAD16(e + tw + 1),
            o0 = TSL_LOAD16(o + tw), o1 = TSL_LOAD16(o + tw + 1);
        TSL_STORE16(v0 + tw, e0 - e1);
        TSL_STORE16(v1 + tw, o0 + e1);
        TSL_STORE16(v2 + tw, e1 - o0);
        TSL_STORE16(v3 + tw, o0 - o1);
      }
      for (; tw < tilesW; ++tw) {
        v0[tw] = e[tw] - e[tw + 1];
        v1[tw] = o[tw] + e[tw + 1];
        v2[tw] = e[tw + 1] - o[tw];
        v3[tw] = o[tw] - o[tw + 1];
      }
    }
  }
}

/// out[o] for the band's tile rows [th0, th1) from M[16][O][tiles]: each
/// tile's 4x4 products through A^T on both sides, plus the bias, into four
/// rows of tile corners (\p rows, rowFloats(s) floats), then interleaved
/// into the output; the parts of edge tiles past the output are not
/// stored.
__attribute__((target_clones("avx512f", "avx2", "default"))) void
outputTransform(const WinogradShape &s, const float *M, int64_t o, int64_t th0,
                int64_t th1, float bias, float *rows, float *out) {
  int64_t tilesW = s.tilesW(), band = (th1 - th0) * tilesW, OH = s.outH(),
          OW = s.outW(), plane = s.O * band, full = OW / 2;
  float *c00 = rows, *c01 = c00 + tilesW, *c10 = c01 + tilesW,
        *c11 = c10 + tilesW;
  for (int64_t th = th0; th < th1; ++th) {
    const float *m = M + o * band + (th - th0) * tilesW;
    int64_t tw = 0;
    for (; tw + 16 <= tilesW; tw += 16) {
      V16 r0[4], r1[4];
      for (int j = 0; j < 4; ++j) {
        V16 a = TSL_LOAD16(m + j * plane + tw),
            b = TSL_LOAD16(m + (4 + j) * plane + tw),
            c = TSL_LOAD16(m + (8 + j) * plane + tw),
            d = TSL_LOAD16(m + (12 + j) * plane + tw);
        r0[j] = a + b + c;
        r1[j] = b - c - d;
      }
      TSL_STORE16(c00 + tw, r0[0] + r0[1] + r0[2] + bias);
      TSL_STORE16(c01 + tw, r0[1] - r0[2] - r0[3] + bias);
      TSL_STORE16(c10 + tw, r1[0] + r1[1] + r1[2] + bias);
      TSL_STORE16(c11 + tw, r1[1] - r1[2] - r1[3] + bias);
    }
    for (; tw < tilesW; ++tw) {
      float r0[4], r1[4];
      for (int j = 0; j < 4; ++j) {
        float a = m[j * plane + tw], b = m[(4 + j) * plane + tw],
              c = m[(8 + j) * plane + tw], d = m[(12 + j) * plane + tw];
        r0[j] = a + b + c;
        r1[j] = b - c - d;
      }
      c00[tw] = r0[0] + r0[1] + r0[2] + bias;
      c01[tw] = r0[1] - r0[2] - r0[3] + bias;
      c10[tw] = r1[0] + r1[1] + r1[2] + bias;
      c11[tw] = r1[1] - r1[2] - r1[3] + bias;
    }
    float *y0 = out + (o * OH + 2 * th) * OW;
    for (int row = 0; row < 2 && 2 * th + row < OH; ++row) {
      // An odd height has no second row in its last tile row.
      const float *left = row ? c10 : c00, *right = row ? c11 : c01;
      float *y = y0 + row * OW;
      int64_t t = 0;
      for (; t + 16 <= full; t += 16) {
        V16 l = TSL_LOAD16(left + t), r = TSL_LOAD16(right + t);
        TSL_STORE16(y + 2 * t,
                    __builtin_shufflevector(l, r, 0, 16, 1, 17, 2, 18, 3, 19, 4,
                                            20, 5, 21, 6, 22, 7, 23));
        TSL_STORE16(y + 2 * t + 16,
                    __builtin_shufflevector(l, r, 8, 24, 9, 25, 10, 26, 11, 27,
                                            12, 28, 13, 29, 14, 30, 15, 31));
      }
      for (; t < full; ++t) {
        y[2 * t] = left[t];
        y[2 * t + 1] = right[t];
      }
      if (full < tilesW) // an odd width: the last tile's left column
        y[2 * full] = left[full];
    }
  }
}

} // namespace

int64_t WinogradShape::bandRows() const {
  constexpr int64_t kBudget = int64_t(1) << 20; // floats
  int64_t perRow = 16 * (C + O) * tilesW();
  return std::clamp<int64_t>(kBudget / std::max<int64_t>(perRow, 1), 1,
                             std::max<int64_t>(tilesH(), 1));
}

int64_t WinogradShape::scratchFloats() const {
  int64_t threads = ThreadPool::instance().size();
  return 16 * (C + O) * bandRows() * tilesW() + threads * rowFloats(*this);
}

bool winogradPays(int64_t C, int64_t O, int64_t tiles) {
  return C >= 32 && O >= 32 && tiles >= 144;
}

void winogradWeights(const WinogradShape &s, const float *w, float *U) {
  for (int64_t o = 0; o < s.O; ++o)
    for (int64_t c = 0; c < s.C; ++c) {
      const float *g = w + (o * s.C + c) * 9;
      float gg[4][3]; // G g
      for (int j = 0; j < 3; ++j) {
        gg[0][j] = g[j];
        gg[1][j] = 0.5f * (g[j] + g[3 + j] + g[6 + j]);
        gg[2][j] = 0.5f * (g[j] - g[3 + j] + g[6 + j]);
        gg[3][j] = g[6 + j];
      }
      for (int i = 0; i < 4; ++i) { // (G g) G^T
        float u[4] = {gg[i][0], 0.5f * (gg[i][0] + gg[i][1] + gg[i][2]),
                      0.5f * (gg[i][0] - gg[i][1] + gg[i][2]), gg[i][2]};
        for (int j = 0; j < 4; ++j)
          U[((4 * i + j) * s.O + o) * s.C + c] = u[j];
      }
    }
}

bool winogradImage(const WinogradShape &s, const float *image, const float *U,
                   const float *bias, float *scratch, float *out) {
  ThreadPool &pool = ThreadPool::instance();
  int64_t tilesW = s.tilesW(), bandRows = s.bandRows();
  float *V = scratch, *M = V + 16 * s.C * bandRows * tilesW,
        *rows = M + 16 * s.O * bandRows * tilesW;
  for (int64_t th0 = 0; th0 < s.tilesH(); th0 += bandRows) {
    int64_t th1 = std::min(s.tilesH(), th0 + bandRows),
            band = (th1 - th0) * tilesW;
    pool.parallelFor(s.C, [&](int64_t c) {
      inputTransform(s, image, c, th0, th1, V,
                     rows + ThreadPool::threadIndex() * rowFloats(s));
    });
    // The 16 GEMMs are shared out whole (each on one thread): one hand-off
    // for all, where each GEMM split across the threads had its own.
    std::atomic<bool> ok{true};
    pool.parallelFor(16, [&](int64_t e) {
      GemmB b;
      b.data = V + e * s.C * band;
      b.ld = band;
      if (!sgemm(s.O, band, s.C, U + e * s.O * s.C, s.C, b, M + e * s.O * band,
                 band, nullptr))
        ok = false;
    });
    if (!ok)
      return false;
    pool.parallelFor(s.O, [&](int64_t o) {
      outputTransform(s, M, o, th0, th1, bias ? bias[o] : 0.f,
                      rows + ThreadPool::threadIndex() * rowFloats(s), out);
    });
  }
  return true;
}

} // namespace tsl::rt
