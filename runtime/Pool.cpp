// max_pool2d's library kernels: the pooling (tsl_rt_max_pool2d) and its
// input gradient (tsl_rt_max_pool2d_grad). Both share one rule for the
// element a window takes, the first maximum in row-major window order or
// the first NaN (windowArgmax), so the gradient goes exactly where the
// forward's value came from. Planes (one image's channel) are independent:
// they are shared out to the pool's threads, each written by one thread, so
// results do not depend on the thread count.
#include "runtime/FloatElements.h"
#include "runtime/KernelAbi.h"
#include "runtime/ThreadPool.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace {

using namespace tsl::rt;

enum IntCode : int32_t { I8 = 1, I32 = 2, I64 = 3 };

/// One plane's pooling geometry: input H x W, window kh x kw, strides,
/// padding, output OH x OW.
struct PoolShape {
  int64_t H, W, kh, kw, sh, sw, ph, pw, OH, OW;
};

/// Whether a window's scan replaces its maximum so far, \p best, by \p v:
/// when v is larger, or v is the window's first NaN (a NaN is the maximum;
/// the first one stays).
template <class V> bool takes(V v, V best) {
  return !(v <= best) && best == best; // (integers: v > best)
}

/// The plane index of the element window (oh, ow) takes, reading elements
/// with \p at; -1 when the window lies wholly in the padding.
template <class At>
int64_t windowArgmax(const PoolShape &s, const At &at, int64_t oh, int64_t ow) {
  int64_t h0 = oh * s.sh - s.ph, w0 = ow * s.sw - s.pw;
  int64_t i0 = std::max<int64_t>(0, -h0), i1 = std::min(s.kh, s.H - h0);
  int64_t j0 = std::max<int64_t>(0, -w0), j1 = std::min(s.kw, s.W - w0);
  int64_t taken = -1;
  decltype(at(0)) best{};
  for (int64_t i = i0; i < i1; ++i)
    for (int64_t j = j0; j < j1; ++j) {
      int64_t idx = (h0 + i) * s.W + w0 + j;
      auto v = at(idx);
      if (taken < 0 || takes(v, best)) {
        best = v;
        taken = idx;
      }
    }
  return taken;
}

/// The output columns [lo, hi) whose windows lie wholly inside the input's
/// columns (the others are clipped by the padding or the right edge).
void interiorColumns(const PoolShape &s, int64_t &lo, int64_t &hi) {
  lo = std::min(s.OW, (s.pw + s.sw - 1) / s.sw);
  int64_t last = s.W - s.kw + s.pw; // the largest ow * sw that fits
  hi = last < 0 ? lo : std::max(lo, std::min(s.OW, last / s.sw + 1));
}

constexpr int64_t kChunk = 256;

/// windowArgmax for the \p n (<= kChunk) interior windows of output row
/// \p oh from column \p ow0, a tap at a time over all of them (so the
/// loads and selects vectorize): their values in \p best and, with
/// \p WithIndex, their plane indices in \p idx (as int32: lanes as wide
/// as f32's, so the selects vectorize; planes are below 2^31 elements). False
/// when the row's windows lie wholly in the padding rows.
template <bool WithIndex, class T>
bool rowArgmax(const PoolShape &s, const T *xp, int64_t oh, int64_t ow0,
               int64_t n, T *best, int32_t *idx) {
  int64_t h0 = oh * s.sh - s.ph;
  int64_t i0 = std::max<int64_t>(0, -h0), i1 = std::min(s.kh, s.H - h0);
  if (i0 >= i1)
    return false;
  for (int64_t i = i0; i < i1; ++i)
    for (int64_t j = 0; j < s.kw; ++j) {
      int64_t base = (h0 + i) * s.W - s.pw + j + ow0 * s.sw;
      int32_t base32 = static_cast<int32_t>(base), step = int32_t(s.sw);
      const T *r = xp + base;
      if (i == i0 && j == 0) {
        for (int64_t t = 0; t < n; ++t) {
          best[t] = r[t * s.sw];
          if constexpr (WithIndex)
            idx[t] = base32 + int32_t(t) * step;
        }
        continue;
      }
      // takes() as two comparisons combined bitwise, not short-circuit:
      // no branch per element (their outcomes are data, mispredicted half
      // the time), so the loop vectorizes.
      for (int64_t t = 0; t < n; ++t) {
        T v = r[t * s.sw], b = best[t];
        bool take = !(v <= b) & (b == b);
        best[t] = take ? v : b;
        if constexpr (WithIndex)
          idx[t] = take ? base32 + int32_t(t) * step : idx[t];
      }
    }
  return true;
}

template <class T> T emptyWindow() {
  return std::numeric_limits<T>::has_infinity
             ? -std::numeric_limits<T>::infinity()
             : std::numeric_limits<T>::lowest();
}

/// Pools \p planes planes of element type T (integers, f32, f64).
template <class T>
void poolPlanes(const PoolShape &s, int64_t planes, const T *x, T *out) {
  int64_t in = s.H * s.W, outPlane = s.OH * s.OW, lo, hi;
  interiorColumns(s, lo, hi);
  ThreadPool::instance().parallelFor(planes, [&](int64_t p) {
    const T *xp = x + p * in;
    auto at = [xp](int64_t i) { return xp[i]; };
    for (int64_t oh = 0; oh < s.OH; ++oh) {
      T *row = out + p * outPlane + oh * s.OW;
      auto edge = [&](int64_t ow) {
        int64_t t = windowArgmax(s, at, oh, ow);
        row[ow] = t >= 0 ? xp[t] : emptyWindow<T>();
      };
      for (int64_t ow = 0; ow < lo; ++ow)
        edge(ow);
      for (int64_t ow = lo; ow < hi; ow += kChunk) {
        int64_t n = std::min(kChunk, hi - ow);
        if (!rowArgmax<false>(s, xp, oh, ow, n, row + ow, nullptr))
          std::fill(row + ow, row + ow + n, emptyWindow<T>());
      }
      for (int64_t ow = hi; ow < s.OW; ++ow)
        edge(ow);
    }
  });
}

/// f16 or bf16 (\p d) planes, compared in f32.
void poolHalfPlanes(const PoolShape &s, int64_t planes, int32_t d,
                    const void *x, void *out) {
  int64_t in = s.H * s.W, outPlane = s.OH * s.OW;
  ThreadPool::instance().parallelFor(planes, [&](int64_t p) {
    auto at = [&](int64_t i) { return loadFloat(d, x, p * in + i); };
    for (int64_t oh = 0; oh < s.OH; ++oh)
      for (int64_t ow = 0; ow < s.OW; ++ow) {
        int64_t t = windowArgmax(s, at, oh, ow);
        storeFloat(d, out, p * outPlane + oh * s.OW + ow,
                   t >= 0 ? at(t) : -INFINITY);
      }
  });
}

/// The gradient of planes of float type T: zero, then each window's g
/// added at the element it took, windows in row-major order.
template <class T>
void poolGradPlanes(const PoolShape &s, int64_t planes, const T *x, const T *g,
                    T *out) {
  int64_t in = s.H * s.W, outPlane = s.OH * s.OW, lo, hi;
  interiorColumns(s, lo, hi);
  if (in > INT32_MAX) // the windows one at a time
    lo = hi = 0;
  ThreadPool::instance().parallelFor(planes, [&](int64_t p) {
    const T *xp = x + p * in;
    T *op = out + p * in;
    std::fill(op, op + in, T(0));
    auto at = [xp](int64_t i) { return xp[i]; };
    T best[kChunk];
    int32_t idx[kChunk]; // plane indices: planes below 2^31 elements
    for (int64_t oh = 0; oh < s.OH; ++oh) {
      const T *gr = g + p * outPlane + oh * s.OW;
      auto edge = [&](int64_t ow) {
        int64_t t = windowArgmax(s, at, oh, ow);
        if (t >= 0)
          op[t] += gr[ow];
      };
      for (int64_t ow = 0; ow < lo; ++ow)
        edge(ow);
      for (int64_t ow = lo; ow < hi; ow += kChunk) {
        int64_t n = std::min(kChunk, hi - ow);
        if (rowArgmax<true>(s, xp, oh, ow, n, best, idx))
          for (int64_t t = 0; t < n; ++t)
            op[idx[t]] += gr[ow + t];
      }
      for (int64_t ow = hi; ow < s.OW; ++ow)
        edge(ow);
    }
  });
}

/// f16 or bf16 (\p d): as poolGradPlanes, each sum rounded as it is added.
void poolGradHalfPlanes(const PoolShape &s, int64_t planes, int32_t d,
                        const void *x, const void *g, void *out) {
  int64_t in = s.H * s.W, outPlane = s.OH * s.OW;
  ThreadPool::instance().parallelFor(planes, [&](int64_t p) {
    for (int64_t i = 0; i < in; ++i)
      storeFloat(d, out, p * in + i, 0.f);
    auto at = [&](int64_t i) { return loadFloat(d, x, p * in + i); };
    for (int64_t oh = 0; oh < s.OH; ++oh)
      for (int64_t ow = 0; ow < s.OW; ++ow) {
        int64_t t = windowArgmax(s, at, oh, ow);
        if (t >= 0)
          storeFloat(d, out, p * in + t,
                     loadFloat(d, out, p * in + t) +
                         loadFloat(d, g, p * outPlane + oh * s.OW + ow));
      }
  });
}

PoolShape shapeOf(const int64_t *xs, int64_t kh, int64_t kw, int64_t sh,
                  int64_t sw, int64_t ph, int64_t pw) {
  return {xs[2],
          xs[3],
          kh,
          kw,
          sh,
          sw,
          ph,
          pw,
          (xs[2] + 2 * ph - kh) / sh + 1,
          (xs[3] + 2 * pw - kw) / sw + 1};
}

} // namespace

extern "C" int32_t tsl_rt_max_pool2d(tsl_rt_context *, int32_t d, const void *x,
                                     const int64_t *xs, int64_t kh, int64_t kw,
                                     int64_t sh, int64_t sw, int64_t ph,
                                     int64_t pw, void *out) {
  PoolShape s = shapeOf(xs, kh, kw, sh, sw, ph, pw);
  int64_t planes = xs[0] * xs[1];
  if (planes <= 0 || s.OH <= 0 || s.OW <= 0)
    return 0;
  switch (d) {
  case I8:
    poolPlanes(s, planes, static_cast<const int8_t *>(x),
               static_cast<int8_t *>(out));
    break;
  case I32:
    poolPlanes(s, planes, static_cast<const int32_t *>(x),
               static_cast<int32_t *>(out));
    break;
  case I64:
    poolPlanes(s, planes, static_cast<const int64_t *>(x),
               static_cast<int64_t *>(out));
    break;
  case F32:
    poolPlanes(s, planes, static_cast<const float *>(x),
               static_cast<float *>(out));
    break;
  case F64:
    poolPlanes(s, planes, static_cast<const double *>(x),
               static_cast<double *>(out));
    break;
  default: // f16, bf16
    poolHalfPlanes(s, planes, d, x, out);
  }
  return 0;
}

extern "C" int32_t tsl_rt_max_pool2d_grad(tsl_rt_context *, int32_t d,
                                          const void *x, const int64_t *xs,
                                          const void *g, int64_t kh, int64_t kw,
                                          int64_t sh, int64_t sw, int64_t ph,
                                          int64_t pw, void *out) {
  PoolShape s = shapeOf(xs, kh, kw, sh, sw, ph, pw);
  int64_t planes = xs[0] * xs[1];
  if (planes <= 0 || s.H * s.W <= 0)
    return 0;
  if (s.OH <= 0 || s.OW <= 0) // no window: nothing took any element
    s.OH = s.OW = 0;
  if (d == F32)
    poolGradPlanes(s, planes, static_cast<const float *>(x),
                   static_cast<const float *>(g), static_cast<float *>(out));
  else if (d == F64)
    poolGradPlanes(s, planes, static_cast<const double *>(x),
                   static_cast<const double *>(g), static_cast<double *>(out));
  else
    poolGradHalfPlanes(s, planes, d, x, g, out);
  return 0;
}
