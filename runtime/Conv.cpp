// conv2d's library kernel (tsl_rt_conv2d). f32, f16 and bf16 run as one GEMM
// per image, out[n][O, pixels] = W[O, C*KH*KW] @ im2col(x[n]) + bias, where
// the im2col matrix is never stored: the GEMM asks for it a packed panel at a
// time (at most 256 x 1024 floats, runtime/GemmKernel.inc) and the packer
// below gathers the panel from the image. The bias is the GEMM's row bias:
// it starts the accumulators of the first pass over each output tile, so
// it costs no pass of its own. A 1x1, stride-1, unpadded
// f32 conv reads the image itself as B. f16 and bf16 go through f32 copies
// of the weights, the image and the result; f64 keeps a scalar loop that
// accumulates in double.
#include "runtime/Gemm.h"
#include "runtime/KernelAbi.h"
#include "support/Float16.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace {

enum Code : int32_t { F16 = 4, BF16 = 5, F32 = 6, F64 = 7 };

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

/// One f32 image [C, H, W] seen as the im2col matrix B[C*KH*KW, OH*OW]:
/// B[(c*KH + kh)*KW + kw][oh*OW + ow] = x[c][oh*sh - ph + kh][ow*sw - pw + kw]
/// (zero outside the image).
struct Im2col {
  const Geometry *g;
  const float *image;
};

/// Writes \p len elements of one output row's run into \p dst: input row
/// \p row (null: a padding row) read from column \p iw0 in steps of \p sw,
/// zero where the column falls outside [0, W).
inline void gatherRun(const float *row, int64_t iw0, int64_t sw, int64_t W,
                      int64_t len, float *dst) {
  if (!row) {
    for (int64_t t = 0; t < len; ++t)
      dst[t] = 0.f;
    return;
  }
  // Columns t in [lo, hi) read 0 <= iw0 + t*sw < W (no division for the
  // common stride 1: this runs for every row of every panel).
  int64_t lo, hi;
  if (sw == 1) {
    lo = -iw0;
    hi = W - iw0;
  } else {
    lo = iw0 >= 0 ? 0 : (-iw0 + sw - 1) / sw;
    hi = iw0 > W - 1 ? 0 : (W - 1 - iw0) / sw + 1;
  }
  lo = std::max<int64_t>(0, std::min(lo, len));
  hi = std::max(lo, std::min(hi, len));
  // Plain loops, not memcpy/fill: runs are at most a panel wide (32
  // floats), where a library call's start-up cost dominated packing.
  for (int64_t t = 0; t < lo; ++t)
    dst[t] = 0.f;
  const float *src = row + iw0;
  if (sw == 1)
    for (int64_t t = lo; t < hi; ++t)
      dst[t] = src[t];
  else
    for (int64_t t = lo; t < hi; ++t)
      dst[t] = src[t * sw];
  for (int64_t t = hi; t < len; ++t)
    dst[t] = 0.f;
}

/// tsl::rt::GemmPanelPacker of an Im2col: rows k0.. of the panel's pixels
/// j0..j0+nr, walked as runs that stay within one output row.
void packIm2col(const void *self, int64_t k0, int64_t kc, int64_t j0,
                int64_t nr, int64_t width, float *panel) {
  const Im2col &s = *static_cast<const Im2col *>(self);
  const Geometry &g = *s.g;
  int64_t taps = g.KH * g.KW;
  int64_t c = k0 / taps, kh = k0 % taps / g.KW, kw = k0 % g.KW;
  int64_t oh0 = j0 / g.OW, ow0 = j0 % g.OW;
  for (int64_t k = 0; k < kc; ++k) {
    float *dst = panel + k * width;
    const float *plane = s.image + c * g.H * g.W;
    int64_t oh = oh0, ow = ow0;
    for (int64_t j = 0; j < nr; ow = 0, ++oh) {
      int64_t len = std::min(nr - j, g.OW - ow);
      int64_t ih = oh * g.sh - g.ph + kh;
      const float *row = ih >= 0 && ih < g.H ? plane + ih * g.W : nullptr;
      gatherRun(row, ow * g.sw - g.pw + kw, g.sw, g.W, len, dst + j);
      j += len;
    }
    for (int64_t j = nr; j < width; ++j)
      dst[j] = 0.f;
    if (++kw == g.KW) {
      kw = 0;
      if (++kh == g.KH) {
        kh = 0;
        ++c;
      }
    }
  }
}

/// out[O, OH*OW] = w[O, C*KH*KW] @ im2col(image) (+ bias) for one f32
/// image; false when the GEMM's scratch could not be allocated.
bool convImage(const Geometry &g, const float *image, const float *w,
               const float *bias, float *out) {
  Im2col source{&g, image};
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

float loadHalf(int32_t d, const uint16_t *p, int64_t i) {
  return d == F16 ? tsl::halfToFloat(p[i]) : tsl::bf16ToFloat(p[i]);
}

/// f16 or bf16 (\p d): the weights, bias, each image and each result in
/// f32 scratch around convImage. False after recording an error.
bool convHalf(tsl_rt_context *ctx, const Geometry &g, int32_t d,
              const uint16_t *x, const uint16_t *w, const uint16_t *bias,
              uint16_t *out) {
  int64_t wn = g.O * g.depth(), bn = bias ? g.O : 0, xn = g.C * g.H * g.W,
          on = g.O * g.pixels();
  float *scratch = static_cast<float *>(
      std::malloc(static_cast<size_t>(wn + bn + xn + on) * sizeof(float)));
  if (!scratch) {
    tsl_rt_error(ctx, "out of memory (conv2d scratch)");
    return false;
  }
  float *wf = scratch, *bf = scratch + wn, *xf = bf + bn, *of = xf + xn;
  for (int64_t i = 0; i < wn; ++i)
    wf[i] = loadHalf(d, w, i);
  for (int64_t i = 0; i < bn; ++i)
    bf[i] = loadHalf(d, bias, i);
  bool ok = true;
  for (int64_t n = 0; ok && n < g.N; ++n) {
    for (int64_t i = 0; i < xn; ++i)
      xf[i] = loadHalf(d, x + n * xn, i);
    ok = convImage(g, xf, wf, bias ? bf : nullptr, of);
    uint16_t *o = out + n * on;
    for (int64_t i = 0; ok && i < on; ++i)
      o[i] = d == F16 ? tsl::floatToHalf(of[i]) : tsl::floatToBF16(of[i]);
  }
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
  if (d == F16 || d == BF16)
    return convHalf(ctx, g, d, static_cast<const uint16_t *>(x),
                    static_cast<const uint16_t *>(w),
                    static_cast<const uint16_t *>(bias),
                    static_cast<uint16_t *>(out))
               ? 0
               : 1;
  if (d != F32) {
    tsl_rt_error(ctx, "conv2d takes f16, bf16, f32 or f64");
    return 1;
  }
  int64_t xn = g.C * g.H * g.W, on = g.O * g.pixels();
  for (int64_t n = 0; n < g.N; ++n)
    if (!convImage(g, static_cast<const float *>(x) + n * xn,
                   static_cast<const float *>(w),
                   static_cast<const float *>(bias),
                   static_cast<float *>(out) + n * on)) {
      tsl_rt_error(ctx, "out of memory (conv2d scratch)");
      return 1;
    }
  return 0;
}
