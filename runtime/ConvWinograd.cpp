// conv2d's Winograd F(2x2, 3x3) path (runtime/ConvWinograd.h). Per band of
// tile rows: the input transform writes V[16][C][tiles], sixteen GEMMs
// (runtime/Gemm.h) give M[16][O][tiles] = U[e] @ V[e], and the output
// transform writes each 2x2 tile of the result with the bias. The
// transforms run over channels on the pool; their loops are compiled per
// instruction set (runtime/WinogradTransforms.inc) so the tile loops
// vectorize.
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

#pragma GCC push_options
#pragma GCC target("avx512f")
namespace avx512 {
#include "runtime/WinogradTransforms.inc"
} // namespace avx512
#pragma GCC pop_options

#pragma GCC push_options
#pragma GCC target("avx2")
namespace avx2 {
#include "runtime/WinogradTransforms.inc"
} // namespace avx2
#pragma GCC pop_options

namespace portable {
#include "runtime/WinogradTransforms.inc"
} // namespace portable

/// The transforms for this CPU's instruction set.
struct Transforms {
  decltype(&portable::inputTransform) input;
  decltype(&portable::outputTransform) output;
};

const Transforms &transforms() {
  static const Transforms t = [] {
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f"))
      return Transforms{avx512::inputTransform, avx512::outputTransform};
    if (__builtin_cpu_supports("avx2"))
      return Transforms{avx2::inputTransform, avx2::outputTransform};
    return Transforms{portable::inputTransform, portable::outputTransform};
  }();
  return t;
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
      transforms().input(s, image, c, th0, th1, V,
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
      transforms().output(s, M, o, th0, th1, bias ? bias[o] : 0.f,
                          rows + ThreadPool::threadIndex() * rowFloats(s), out);
    });
  }
  return true;
}

} // namespace tsl::rt
