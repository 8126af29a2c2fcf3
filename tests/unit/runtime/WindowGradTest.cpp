// The window ops' gradient kernels of the runtime (runtime/Conv.cpp's
// tsl_rt_conv2d_weight_grad: one GEMM over every image's windows;
// runtime/Pool.cpp's tsl_rt_max_pool2d_grad) against direct sums in double:
// strides, padding past the kernel's reach, KH != KW, GEMM depths past one
// block, overlapping pooling windows, ties and NaN; the same bits on one
// thread and on three.
#include "runtime/KernelAbi.h"
#include "runtime/ThreadPool.h"
#include "support/Float16.h"

#include <cmath>
#include <cstring>
#include <gtest/gtest.h>
#include <random>
#include <string>
#include <vector>

namespace {

enum Code : int32_t { BF16 = 5, F32 = 6, F64 = 7 };

struct Geometry {
  int64_t N, C, H, W, O, KH, KW, sh, sw, ph, pw;
  int64_t OH() const { return (H + 2 * ph - KH) / sh + 1; }
  int64_t OW() const { return (W + 2 * pw - KW) / sw + 1; }
  std::string str() const {
    return "N=" + std::to_string(N) + " C=" + std::to_string(C) +
           " H=" + std::to_string(H) + " W=" + std::to_string(W) +
           " O=" + std::to_string(O) + " K=" + std::to_string(KH) + "x" +
           std::to_string(KW) + " stride=" + std::to_string(sh) + "," +
           std::to_string(sw) + " pad=" + std::to_string(ph) + "," +
           std::to_string(pw);
  }
};

/// Values stored as \p d, and the doubles they hold.
struct Data {
  std::vector<uint8_t> bytes;
  std::vector<double> values;
};

size_t sizeOf(int32_t d) { return d == F64 ? 8 : d == F32 ? 4 : 2; }

double load(int32_t d, const uint8_t *p) {
  if (d == F64) {
    double v;
    std::memcpy(&v, p, 8);
    return v;
  }
  if (d == F32) {
    float f;
    std::memcpy(&f, p, 4);
    return f;
  }
  uint16_t h;
  std::memcpy(&h, p, 2);
  return tsl::bf16ToFloat(h);
}

void store(int32_t d, uint8_t *p, double v) {
  if (d == F64) {
    std::memcpy(p, &v, 8);
  } else if (d == F32) {
    float f = static_cast<float>(v);
    std::memcpy(p, &f, 4);
  } else {
    uint16_t h = tsl::floatToBF16(static_cast<float>(v));
    std::memcpy(p, &h, 2);
  }
}

/// \p n values of type \p d: normal, or (\p levels > 0) small integers in
/// [0, levels), so that windows hold ties.
Data random(int32_t d, int64_t n, std::mt19937 &rng, int levels = 0) {
  std::normal_distribution<double> normal;
  std::uniform_int_distribution<int> level(0, std::max(levels - 1, 0));
  Data x;
  x.bytes.resize(static_cast<size_t>(n) * sizeOf(d));
  for (int64_t i = 0; i < n; ++i) {
    uint8_t *p = x.bytes.data() + i * sizeOf(d);
    store(d, p, levels ? level(rng) : normal(rng));
    x.values.push_back(load(d, p));
  }
  return x;
}

/// The weight gradient in double, and the sum of its terms' magnitudes.
void weightGradReference(const Geometry &g, const Data &x, const Data &gy,
                         std::vector<double> &ref, std::vector<double> &mag) {
  int64_t OH = g.OH(), OW = g.OW();
  for (int64_t o = 0; o < g.O; ++o)
    for (int64_t c = 0; c < g.C; ++c)
      for (int64_t kh = 0; kh < g.KH; ++kh)
        for (int64_t kw = 0; kw < g.KW; ++kw) {
          double s = 0, m = 0;
          for (int64_t n = 0; n < g.N; ++n)
            for (int64_t oh = 0; oh < OH; ++oh)
              for (int64_t ow = 0; ow < OW; ++ow) {
                int64_t ih = oh * g.sh - g.ph + kh, iw = ow * g.sw - g.pw + kw;
                if (ih < 0 || ih >= g.H || iw < 0 || iw >= g.W)
                  continue;
                double t = gy.values[((n * g.O + o) * OH + oh) * OW + ow] *
                           x.values[((n * g.C + c) * g.H + ih) * g.W + iw];
                s += t;
                m += std::fabs(t);
              }
          ref.push_back(s);
          mag.push_back(m);
        }
}

std::vector<uint8_t> weightGrad(const Geometry &g, int32_t d, const Data &x,
                                const Data &gy) {
  std::vector<uint8_t> out(
      static_cast<size_t>(g.O * g.C * g.KH * g.KW) * sizeOf(d), 0xAB);
  int64_t xs[4] = {g.N, g.C, g.H, g.W}, gs[4] = {g.N, g.O, g.OH(), g.OW()};
  tsl_rt_context *ctx = tsl_rt_context_create();
  EXPECT_EQ(tsl_rt_conv2d_weight_grad(ctx, d, x.bytes.data(), xs,
                                      gy.bytes.data(), gs, g.KH, g.KW, g.sh,
                                      g.sw, g.ph, g.pw, out.data()),
            0)
      << tsl_rt_context_error(ctx);
  tsl_rt_context_destroy(ctx);
  return out;
}

const Geometry kConvCases[] = {
    // N  C   H   W   O  KH KW sh sw ph pw
    {1, 3, 7, 9, 5, 3, 3, 1, 1, 1, 1},     // odd sizes
    {3, 3, 7, 9, 5, 3, 3, 2, 2, 1, 1},     // stride 2
    {2, 4, 7, 9, 13, 3, 2, 1, 2, 0, 1},    // KH != KW, mixed
    {2, 5, 6, 5, 8, 1, 1, 1, 1, 0, 0},     // 1x1, unpadded f32 read in place
    {1, 2, 5, 4, 3, 2, 3, 3, 1, 3, 2},     // padding past the kernel
    {1, 30, 12, 11, 13, 3, 3, 1, 1, 1, 1}, // 270 columns > one panel
    {5, 2, 20, 21, 64, 3, 3, 1, 1, 1, 1},  // K = 2100 pixels > one block
    {2, 8, 9, 8, 1, 3, 3, 1, 1, 2, 0},     // one output channel
    {3, 2, 33, 34, 8, 3, 3, 1, 1, 1, 1},   // an image per GEMM: g[n] read as A
};

TEST(Conv2dWeightGrad, MatchesDirectSumsAcrossTypes) {
  std::mt19937 rng(7);
  for (const Geometry &g : kConvCases)
    for (int32_t d : {F32, F64, BF16}) {
      Data x = random(d, g.N * g.C * g.H * g.W, rng),
           gy = random(d, g.N * g.O * g.OH() * g.OW(), rng);
      std::vector<uint8_t> out = weightGrad(g, d, x, gy);
      std::vector<double> ref, mag;
      weightGradReference(g, x, gy, ref, mag);
      double rel = d == F64 ? 1e-13 : d == F32 ? 1e-6 : 4e-3;
      for (size_t i = 0; i < ref.size(); ++i) {
        double got = load(d, out.data() + i * sizeOf(d));
        ASSERT_NEAR(got, ref[i], 2e-6 * mag[i] + rel * std::fabs(ref[i]))
            << g.str() << " dtype " << d << " weight " << i;
      }
    }
}

TEST(Conv2dWeightGrad, SameBitsOnOneThreadAndOnThree) {
  std::mt19937 rng(8);
  // 10 images of 16 x 16 pixels: chunks of 4 images, three GEMMs whose
  // partials are summed in order.
  Geometry g{10, 3, 16, 16, 16, 3, 3, 1, 1, 1, 1};
  Data x = random(F32, g.N * g.C * g.H * g.W, rng),
       gy = random(F32, g.N * g.O * g.OH() * g.OW(), rng);
  tsl::rt::ThreadPool::instance().resize(1);
  std::vector<uint8_t> one = weightGrad(g, F32, x, gy);
  tsl::rt::ThreadPool::instance().resize(3);
  std::vector<uint8_t> three = weightGrad(g, F32, x, gy);
  tsl::rt::ThreadPool::instance().resize(0);
  EXPECT_EQ(one, three);
}

TEST(Conv2dWeightGrad, NoImagesGiveZeros) {
  Geometry g{0, 3, 5, 5, 4, 3, 3, 1, 1, 1, 1};
  Data none;
  std::vector<uint8_t> out = weightGrad(g, F32, none, none);
  for (size_t i = 0; i < out.size() / 4; ++i)
    EXPECT_EQ(load(F32, out.data() + 4 * i), 0.0) << i;
}

/// max_pool2d's gradient in double: each window's g at its first maximum
/// (or its first NaN).
std::vector<double> poolGradReference(const Geometry &g, const Data &x,
                                      const Data &gy) {
  std::vector<double> ref(x.values.size(), 0.0);
  int64_t OH = g.OH(), OW = g.OW(), o = 0;
  for (int64_t p = 0; p < g.N * g.C; ++p)
    for (int64_t oh = 0; oh < OH; ++oh)
      for (int64_t ow = 0; ow < OW; ++ow, ++o) {
        int64_t taken = -1;
        for (int64_t i = 0; i < g.KH; ++i)
          for (int64_t j = 0; j < g.KW; ++j) {
            int64_t ih = oh * g.sh - g.ph + i, iw = ow * g.sw - g.pw + j;
            if (ih < 0 || ih >= g.H || iw < 0 || iw >= g.W)
              continue;
            int64_t at = (p * g.H + ih) * g.W + iw;
            double v = x.values[at];
            if (taken < 0 || v > x.values[taken] ||
                (std::isnan(v) && !std::isnan(x.values[taken])))
              taken = at;
          }
        if (taken >= 0)
          ref[taken] += gy.values[o];
      }
  return ref;
}

TEST(MaxPool2dGrad, GoesWhereTheMaximumWasTaken) {
  std::mt19937 rng(9);
  const Geometry cases[] = {
      // N C  H  W  O KH KW sh sw ph pw   (O unused)
      {2, 3, 8, 8, 0, 2, 2, 2, 2, 0, 0}, // the usual 2x2
      {2, 2, 9, 7, 0, 3, 3, 2, 2, 1, 1}, // overlapping, padded
      {1, 3, 6, 9, 0, 2, 3, 1, 2, 1, 0}, // stride 1 rows, KH != KW
      {1, 1, 5, 5, 0, 5, 5, 1, 1, 2, 2}, // every window overlaps
  };
  for (const Geometry &g : cases)
    for (int levels : {0, 3}) // normal values; small integers: ties
      for (int32_t d : {F32, F64}) {
        Data x = random(d, g.N * g.C * g.H * g.W, rng, levels),
             gy = random(d, g.N * g.C * g.OH() * g.OW(), rng);
        if (levels == 0 && x.values.size() > 5) { // a NaN
          store(d, x.bytes.data() + 5 * sizeOf(d), NAN);
          x.values[5] = NAN;
        }
        std::vector<uint8_t> out(x.bytes.size(), 0xAB);
        int64_t xs[4] = {g.N, g.C, g.H, g.W};
        tsl_rt_context *ctx = tsl_rt_context_create();
        ASSERT_EQ(tsl_rt_max_pool2d_grad(ctx, d, x.bytes.data(), xs,
                                         gy.bytes.data(), g.KH, g.KW, g.sh,
                                         g.sw, g.ph, g.pw, out.data()),
                  0);
        tsl_rt_context_destroy(ctx);
        std::vector<double> ref = poolGradReference(g, x, gy);
        for (size_t i = 0; i < ref.size(); ++i)
          ASSERT_NEAR(load(d, out.data() + i * sizeOf(d)), ref[i],
                      1e-6 * (1 + std::fabs(ref[i])))
              << g.str() << " levels " << levels << " dtype " << d << " at "
              << i;
      }
}

} // namespace
