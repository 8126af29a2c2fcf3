// conv2d's library kernels: the convolution (tsl_rt_conv2d) and its weight
// gradient (tsl_rt_conv2d_weight_grad: one GEMM of g with every image's
// windows, see convWeightGradFloat). The convolution's f32, f16 and bf16 run
// as one GEMM per image, out[n][O, pixels] = W[O, C*KH*KW] @ im2col(x[n]) +
// bias, where the im2col matrix is never stored: the GEMM asks for it a
// packed panel at a time (at most 256 x 1024 floats,
// runtime/GemmKernel.inc) and the packer below gathers the panel from the
// image (copied once per image with its zero padding, when it has some, so
// the packer checks no bounds). The bias is the GEMM's row bias: it starts
// the accumulators of the first pass over each output tile, so it costs no
// pass of its own. A 1x1, stride-1, unpadded f32 conv reads the image itself
// as B. f16 and bf16 go through f32 copies of the weights, each image and
// each result; f64 keeps a scalar loop that accumulates in double.
#include "runtime/ConvWinograd.h"
#include "runtime/FloatElements.h"
#include "runtime/Gemm.h"
#include "runtime/KernelAbi.h"
#include "runtime/ThreadPool.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>

namespace {

using namespace tsl::rt;

/// The sizes of one call: input [N, C, H, W], weights [O, C, KH, KW],
/// strides, padding and output [N, O, OH, OW].
struct Geometry {
  int64_t N, C, H, W, O, KH, KW, sh, sw, ph, pw, OH, OW;
  int64_t pixels() const { return OH * OW; }
  int64_t depth() const { return C * KH * KW; }
  /// A 1x1, stride-1, unpadded conv: the image [C, H * W] is the B matrix.
  bool pointwise() const {
    return KH == 1 && KW == 1 && sh == 1 && sw == 1 && ph == 0 && pw == 0;
  }
};

/// One f32 image as the im2col matrix B[C*KH*KW, OH*OW]. The image is
/// stored [C, Hs, Ws] with the padding already in it (zeros; Hs = H + 2ph,
/// Ws = W + 2pw), so that B[(c*KH + kh)*KW + kw][oh*OW + ow] is
/// image[c][oh*sh + kh][ow*sw + kw] with no bounds to check.
struct Im2col {
  const Geometry *g;
  const float *image;
  int64_t Hs, Ws;
};

/// dst[0:len] = src[0:len] in fixed-size moves of 16 floats (8 below 16),
/// the last one overlapping the one before: runs are at most a panel wide,
/// where a library memcpy's start-up cost, or a loop's scalar tail,
/// dominated packing.
__attribute__((always_inline)) inline void copyRun(const float *src,
                                                   int64_t len, float *dst) {
  if (len < 8) {
    for (int64_t t = 0; t < len; ++t)
      dst[t] = src[t];
    return;
  }
  if (len < 16) { // two overlapping 8-float moves
    std::memcpy(dst, src, 8 * sizeof(float));
    std::memcpy(dst + len - 8, src + len - 8, 8 * sizeof(float));
    return;
  }
  int64_t t = 0;
  for (; t + 16 <= len; t += 16)
    std::memcpy(dst + t, src + t, 16 * sizeof(float));
  if (t < len)
    std::memcpy(dst + len - 16, src + len - 16, 16 * sizeof(float));
}

/// One stretch of a panel row that stays within one output row: panel
/// columns [dst, dst + len) come from the tap's pixels at offset src.
struct Run {
  int64_t dst, src, len;
};

/// tsl::rt::GemmPanelPacker of an Im2col: rows k0.. of the panel's pixels
/// j0..j0+nr. The pixels' runs within output rows are the same for every
/// row of the panel (only the tap moves), so they are worked out once per
/// group of at most kMaxRuns runs.
void packIm2col(const void *self, int64_t k0, int64_t kc, int64_t j0,
                int64_t nr, int64_t width, float *panel) {
  constexpr int kMaxRuns = 16;
  const Im2col &s = *static_cast<const Im2col *>(self);
  const Geometry &g = *s.g;
  int64_t taps = g.KH * g.KW, rowStep = g.sh * s.Ws;
  for (int64_t j = 0, oh = j0 / g.OW, ow = j0 % g.OW; j < nr;) {
    Run runs[kMaxRuns];
    int n = 0;
    for (; n < kMaxRuns && j < nr; ++n, ++oh, ow = 0) {
      int64_t len = std::min(nr - j, g.OW - ow);
      runs[n] = {j, oh * rowStep + ow * g.sw, len};
      j += len;
    }
    int64_t c = k0 / taps, kh = k0 % taps / g.KW, kw = k0 % g.KW;
    for (int64_t k = 0; k < kc; ++k) {
      float *dst = panel + k * width;
      const float *tap = s.image + (c * s.Hs + kh) * s.Ws + kw;
      for (int r = 0; r < n; ++r) {
        if (g.sw == 1) {
          copyRun(tap + runs[r].src, runs[r].len, dst + runs[r].dst);
          continue;
        }
        for (int64_t t = 0; t < runs[r].len; ++t)
          dst[runs[r].dst + t] = tap[runs[r].src + t * g.sw];
      }
      if (++kw == g.KW) {
        kw = 0;
        if (++kh == g.KH) {
          kh = 0;
          ++c;
        }
      }
    }
  }
  for (int64_t k = 0; k < kc && nr < width; ++k)
    std::fill(panel + k * width + nr, panel + (k + 1) * width, 0.f);
}

/// out[O, OH*OW] = w[O, C*KH*KW] @ im2col(image) (+ bias) for one f32
/// image stored [C, Hs, Ws] with its padding; false when the GEMM's scratch
/// could not be allocated.
bool convImage(const Geometry &g, const float *image, int64_t Hs, int64_t Ws,
               const float *w, const float *bias, float *out) {
  Im2col source{&g, image, Hs, Ws};
  tsl::rt::GemmB b;
  if (g.pointwise()) {
    b.data = image;
    b.ld = g.H * g.W;
  } else {
    b.pack = packIm2col;
    b.self = &source;
  }
  return tsl::rt::sgemm(g.O, g.pixels(), g.depth(), w, g.depth(), b, out,
                        g.pixels(), bias);
}

/// Image \p n of \p x (element type \p d) as f32 [C, Hs, Ws] in \p dst,
/// zero in the padding.
void padImage(const Geometry &g, int32_t d, const void *x, int64_t n,
              int64_t Hs, int64_t Ws, float *dst) {
  int64_t base = n * g.C * g.H * g.W;
  for (int64_t c = 0; c < g.C; ++c)
    for (int64_t r = 0; r < Hs; ++r) {
      float *row = dst + (c * Hs + r) * Ws;
      int64_t ih = r - g.ph;
      if (ih < 0 || ih >= g.H) {
        std::fill(row, row + Ws, 0.f);
        continue;
      }
      std::fill(row, row + g.pw, 0.f);
      int64_t src = base + (c * g.H + ih) * g.W;
      if (d != F32)
        for (int64_t iw = 0; iw < g.W; ++iw)
          row[g.pw + iw] = loadFloat(d, x, src + iw);
      else if (g.W > 0) // an empty image may have no buffer at all
        std::memcpy(row + g.pw, static_cast<const float *>(x) + src,
                    static_cast<size_t>(g.W) * sizeof(float));
      std::fill(row + g.pw + g.W, row + Ws, 0.f);
    }
}

/// Whether convFloat shares images out to the pool's threads, each image's
/// GEMM then running on one thread, rather than running the images in turn
/// with each GEMM split across the threads: whole images need no hand-off
/// per block (a 64-channel conv's GEMM has eight per image) and pad their
/// images in parallel, as long as the images divide evenly enough.
bool imagesInParallel(int64_t images, int threads) {
  return threads > 1 && (images % threads == 0 || images >= 4 * threads);
}

/// f32, f16 or bf16 (\p d): a GEMM per image. An f32 image without
/// padding is read in place; otherwise each image is copied, padded and in
/// f32, into scratch (a slot per pool thread), and for f16/bf16 so are the
/// weights, the bias and each result. Each image's sums come in the same
/// order whichever thread runs it. False after recording an error.
bool convFloat(tsl_rt_context *ctx, const Geometry &g, int32_t d, const void *x,
               const void *w, const void *bias, void *out) {
  bool half = d != F32, padded = half || g.ph || g.pw;
  int64_t Hs = g.H + 2 * g.ph, Ws = g.W + 2 * g.pw;
  tsl::rt::ThreadPool &pool = tsl::rt::ThreadPool::instance();
  WinogradShape ws{g.C, g.O, Hs, Ws};
  bool winograd = g.KH == 3 && g.KW == 3 && g.sh == 1 && g.sw == 1 &&
                  winogradPays(g.C, g.O, ws.tilesH() * ws.tilesW());
  int64_t wn = half ? g.O * g.depth() : 0, bn = half && bias ? g.O : 0,
          un = winograd ? 16 * g.O * g.C : 0, xn = padded ? g.C * Hs * Ws : 0,
          on = half ? g.O * g.pixels() : 0,
          vn = winograd ? ws.scratchFloats() : 0, slotFloats = xn + on + vn;
  // A slot of scratch per thread, within kSlotBudget: 64 threads on
  // 224x224 images would otherwise hold about 1 GiB.
  constexpr int64_t kSlotBudget = int64_t(64) << 20; // floats
  bool perImage = imagesInParallel(g.N, pool.size()) &&
                  pool.size() * slotFloats <= kSlotBudget;
  int64_t slots = perImage ? pool.size() : 1;
  float *scratch = nullptr;
  if (int64_t total = wn + bn + un + slots * slotFloats) {
    scratch = static_cast<float *>(
        std::malloc(static_cast<size_t>(total) * sizeof(float)));
    if (!scratch) {
      tsl_rt_error(ctx, "out of memory (conv2d scratch)");
      return false;
    }
  }
  float *wf = scratch, *bf = wf + wn, *U = bf + bn, *slot0 = U + un;
  for (int64_t i = 0; i < wn; ++i)
    wf[i] = loadFloat(d, w, i);
  for (int64_t i = 0; i < bn; ++i)
    bf[i] = loadFloat(d, bias, i);
  const float *weights = half ? wf : static_cast<const float *>(w);
  const float *b =
      half ? (bias ? bf : nullptr) : static_cast<const float *>(bias);
  if (winograd)
    winogradWeights(ws, weights, U);
  int64_t outImage = g.O * g.pixels();
  std::atomic<bool> ok{true};
  auto convOne = [&](int64_t n) {
    int slot = perImage ? tsl::rt::ThreadPool::threadIndex() : 0;
    float *xf = slot0 + slot * slotFloats, *of = xf + xn, *vf = of + on;
    const float *image =
        static_cast<const float *>(x) + n * g.C * g.H * g.W; // f32 unpadded
    if (padded) {
      padImage(g, d, x, n, Hs, Ws, xf);
      image = xf;
    }
    float *result = half ? of : static_cast<float *>(out) + n * outImage;
    if (winograd ? !winogradImage(ws, image, U, b, vf, result)
                 : !convImage(g, image, Hs, Ws, weights, b, result)) {
      ok = false;
      return;
    }
    for (int64_t i = 0; half && i < outImage; ++i)
      storeFloat(d, out, n * outImage + i, of[i]);
  };
  if (perImage)
    pool.parallelFor(g.N, convOne);
  else
    for (int64_t n = 0; ok && n < g.N; ++n)
      convOne(n);
  std::free(scratch);
  if (!ok)
    tsl_rt_error(ctx, "out of memory (conv2d scratch)");
  return ok;
}

/// f64: the direct loop, accumulating in double. Never fails.
void convF64(const Geometry &g, const double *x, const double *w,
             const double *bias, double *out) {
  int64_t o = 0;
  for (int64_t n = 0; n < g.N; ++n)
    for (int64_t oc = 0; oc < g.O; ++oc)
      for (int64_t oh = 0; oh < g.OH; ++oh)
        for (int64_t ow = 0; ow < g.OW; ++ow, ++o) {
          double acc = bias ? bias[oc] : 0.0;
          for (int64_t c = 0; c < g.C; ++c)
            for (int64_t kh = 0; kh < g.KH; ++kh) {
              int64_t ih = oh * g.sh - g.ph + kh;
              if (ih < 0 || ih >= g.H)
                continue;
              const double *xr = x + ((n * g.C + c) * g.H + ih) * g.W;
              const double *wr = w + ((oc * g.C + c) * g.KH + kh) * g.KW;
              for (int64_t kw = 0; kw < g.KW; ++kw) {
                int64_t iw = ow * g.sw - g.pw + kw;
                if (iw >= 0 && iw < g.W)
                  acc += xr[iw] * wr[kw];
              }
            }
          out[o] = acc;
        }
}

/// The weight gradient's B operand: every image's im2col matrix,
/// transposed and stacked, [N * OH * OW, C * KH * KW]: row (n, oh, ow),
/// column (c, kh, kw) is images[n][c][oh*sh + kh][ow*sw + kw], the images
/// stored [N, C, Hs, Ws] with their padding.
struct StackedWindows {
  const Geometry *g;
  const float *images;
  int64_t Hs, Ws;
};

/// tsl::rt::GemmPanelPacker of StackedWindows: the panel's rows are runs
/// of pixels along an output row (one image, one oh), read with the stride
/// from each tap's plane.
void packStackedWindows(const void *self, int64_t k0, int64_t kc, int64_t j0,
                        int64_t nr, int64_t width, float *panel) {
  const StackedWindows &s = *static_cast<const StackedWindows *>(self);
  const Geometry &g = *s.g;
  int64_t P = g.pixels(), taps = g.KH * g.KW, plane = s.Hs * s.Ws;
  for (int64_t k = 0; k < kc;) {
    int64_t row = k0 + k, n = row / P, oh = row % P / g.OW, ow = row % g.OW;
    int64_t len = std::min(kc - k, g.OW - ow);
    const float *base =
        s.images + n * g.C * plane + oh * g.sh * s.Ws + ow * g.sw;
    for (int64_t j = 0; j < nr; ++j) {
      int64_t col = j0 + j, c = col / taps, kh = col % taps / g.KW,
              kw = col % g.KW;
      const float *src = base + c * plane + kh * s.Ws + kw;
      float *dst = panel + k * width + j;
      for (int64_t t = 0; t < len; ++t)
        dst[t * width] = src[t * g.sw];
    }
    k += len;
  }
  for (int64_t k = 0; k < kc && nr < width; ++k)
    std::fill(panel + k * width + nr, panel + (k + 1) * width, 0.f);
}

/// How many images each GEMM of the weight gradient sums (weightGradChunks):
/// about kChunkPixels of K each, the partials within kPartialFloats.
constexpr int64_t kChunkPixels = 1024, kPartialFloats = int64_t(16) << 20;

/// Images per chunk for \p g: K = N * OH * OW is often long and the result
/// small (a first layer's [64, 3 * 3 * 3]), too few output tiles for the
/// threads; chunks of images are GEMMs of their own, one per thread, summed
/// in chunk order after. By shape only, so the same bits on any thread count.
int64_t imagesPerChunk(const Geometry &g) {
  int64_t per =
      std::max<int64_t>(1, kChunkPixels / std::max<int64_t>(1, g.pixels()));
  int64_t result = std::max<int64_t>(1, g.O * g.depth());
  int64_t most = std::max<int64_t>(1, kPartialFloats / result); // partials
  int64_t chunks = (g.N + per - 1) / per;
  if (chunks > most)
    per = (g.N + most - 1) / most;
  return per;
}

/// f32, f16 or bf16 (\p d): out[O, C*KH*KW] = gT[O, N*P] @ StackedWindows,
/// GEMMs whose K runs over a chunk of images' pixels (imagesPerChunk), the
/// chunks' partials summed in order. g is copied to [O, N*P] (unless a
/// chunk is one f32 image: g[n] is its A) and the images, padded (and in
/// f32), to [N, C, Hs, Ws]; an unpadded f32 x is read in place. False after
/// recording an error.
bool convWeightGradFloat(tsl_rt_context *ctx, const Geometry &g, int32_t d,
                         const void *x, const void *gy, void *out) {
  bool half = d != F32, padded = half || g.ph || g.pw;
  int64_t Hs = g.H + 2 * g.ph, Ws = g.W + 2 * g.pw, P = g.pixels();
  int64_t per = imagesPerChunk(g), chunks = (g.N + per - 1) / per;
  int64_t result = g.O * g.depth();
  // One image per chunk: its g[n] is A as it is, [O, P] (no copy).
  bool inPlace = !half && per == 1;
  int64_t gn = inPlace ? 0 : g.O * g.N * P,
          xn = padded ? g.N * g.C * Hs * Ws : 0, on = half ? result : 0,
          pn = chunks > 1 ? chunks * result : 0;
  float *scratch = static_cast<float *>(
      std::malloc(static_cast<size_t>(gn + xn + on + pn) * sizeof(float)));
  if (!scratch) {
    tsl_rt_error(ctx, "out of memory (conv2d weight gradient scratch)");
    return false;
  }
  float *gT = scratch, *images = gT + gn, *of = images + xn,
        *partials = of + on;
  tsl::rt::ThreadPool &pool = tsl::rt::ThreadPool::instance();
  pool.parallelFor(g.N, [&](int64_t n) {
    for (int64_t o = 0; o < g.O && !inPlace; ++o) {
      int64_t src = (n * g.O + o) * P;
      float *dst = gT + o * g.N * P + n * P;
      if (half)
        for (int64_t p = 0; p < P; ++p)
          dst[p] = loadFloat(d, gy, src + p);
      else
        std::memcpy(dst, static_cast<const float *>(gy) + src,
                    static_cast<size_t>(P) * sizeof(float));
    }
    if (padded)
      padImage(g, d, x, n, Hs, Ws, images + n * g.C * Hs * Ws);
  });
  const float *all = padded ? images : static_cast<const float *>(x);
  float *sum = half ? of : static_cast<float *>(out);
  std::atomic<bool> gemmsOk{true};
  auto chunkGemm = [&](int64_t c) {
    int64_t n0 = c * per, n = std::min(g.N - n0, per);
    StackedWindows source{&g, all + n0 * g.C * Hs * Ws, Hs, Ws};
    tsl::rt::GemmB b;
    b.pack = packStackedWindows;
    b.self = &source;
    float *dst = chunks > 1 ? partials + c * result : sum;
    const float *a =
        inPlace ? static_cast<const float *>(gy) + n0 * g.O * P : gT + n0 * P;
    if (!tsl::rt::sgemm(g.O, g.depth(), n * P, a, inPlace ? P : g.N * P, b, dst,
                        g.depth(), nullptr))
      gemmsOk = false;
  };
  if (chunks > 1)
    pool.parallelFor(chunks, chunkGemm);
  else
    chunkGemm(0);
  bool ok = gemmsOk;
  for (int64_t i = 0; ok && chunks > 1 && i < result; ++i) {
    float total = partials[i];
    for (int64_t c = 1; c < chunks; ++c)
      total += partials[c * result + i];
    sum[i] = total;
  }
  for (int64_t i = 0; ok && half && i < result; ++i)
    storeFloat(d, out, i, of[i]);
  std::free(scratch);
  if (!ok)
    tsl_rt_error(ctx, "out of memory (conv2d weight gradient scratch)");
  return ok;
}

/// f64: the direct sums, in double. Never fails.
void convWeightGradF64(const Geometry &g, const double *x, const double *gy,
                       double *out) {
  int64_t o = 0;
  for (int64_t oc = 0; oc < g.O; ++oc)
    for (int64_t c = 0; c < g.C; ++c)
      for (int64_t kh = 0; kh < g.KH; ++kh)
        for (int64_t kw = 0; kw < g.KW; ++kw, ++o) {
          double acc = 0;
          for (int64_t n = 0; n < g.N; ++n)
            for (int64_t oh = 0; oh < g.OH; ++oh) {
              int64_t ih = oh * g.sh - g.ph + kh;
              if (ih < 0 || ih >= g.H)
                continue;
              const double *xr = x + ((n * g.C + c) * g.H + ih) * g.W;
              const double *gr = gy + ((n * g.O + oc) * g.OH + oh) * g.OW;
              for (int64_t ow = 0; ow < g.OW; ++ow) {
                int64_t iw = ow * g.sw - g.pw + kw;
                if (iw >= 0 && iw < g.W)
                  acc += gr[ow] * xr[iw];
              }
            }
          out[o] = acc;
        }
}

} // namespace

extern "C" int32_t tsl_rt_conv2d(tsl_rt_context *ctx, int32_t d, const void *x,
                                 const int64_t *xs, const void *w,
                                 const int64_t *ws, const void *bias,
                                 int64_t sh, int64_t sw, int64_t ph, int64_t pw,
                                 void *out) {
  Geometry g{xs[0], xs[1], xs[2], xs[3], ws[0], ws[2], ws[3],
             sh,    sw,    ph,    pw,    0,     0};
  g.OH = (g.H + 2 * ph - g.KH) / sh + 1;
  g.OW = (g.W + 2 * pw - g.KW) / sw + 1;
  if (g.N <= 0 || g.O <= 0 || g.OH <= 0 || g.OW <= 0)
    return 0;
  if (d == F64) {
    convF64(g, static_cast<const double *>(x), static_cast<const double *>(w),
            static_cast<const double *>(bias), static_cast<double *>(out));
    return 0;
  }
  if (d != F32 && d != F16 && d != BF16) {
    tsl_rt_error(ctx, "conv2d takes f16, bf16, f32 or f64");
    return 1;
  }
  return convFloat(ctx, g, d, x, w, bias, out) ? 0 : 1;
}

extern "C" int32_t tsl_rt_conv2d_weight_grad(tsl_rt_context *ctx, int32_t d,
                                             const void *x, const int64_t *xs,
                                             const void *gy, const int64_t *gs,
                                             int64_t kh, int64_t kw, int64_t sh,
                                             int64_t sw, int64_t ph, int64_t pw,
                                             void *out) {
  Geometry g{xs[0], xs[1], xs[2], xs[3], gs[1], kh,   kw,
             sh,    sw,    ph,    pw,    gs[2], gs[3]};
  int64_t weights = g.O * g.depth();
  if (weights <= 0)
    return 0;
  if (g.N <= 0 || g.pixels() <= 0) { // no term: every sum is zero
    size_t bytes = d == F64 ? 8 : d == F32 ? 4 : 2;
    std::memset(out, 0, static_cast<size_t>(weights) * bytes);
    return 0;
  }
  if (d == F64) {
    convWeightGradF64(g, static_cast<const double *>(x),
                      static_cast<const double *>(gy),
                      static_cast<double *>(out));
    return 0;
  }
  if (d != F32 && d != F16 && d != BF16) {
    tsl_rt_error(ctx, "conv2d takes f16, bf16, f32 or f64");
    return 1;
  }
  return convWeightGradFloat(ctx, g, d, x, gy, out) ? 0 : 1;
}
