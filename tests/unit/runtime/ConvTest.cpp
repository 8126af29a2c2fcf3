// The runtime's conv2d (runtime/Conv.cpp: an im2col GEMM for f32, f16 and
// bf16, a direct loop for f64) against a double-precision reference over
// shapes that cross the GEMM's tiles and blocks: output channels around the
// register tiles (1, 5, 8, 13, 64), more output pixels than one block of B
// (1024), channel depths past one block of K (256), strides, padding larger
// than the kernel's reach, KH != KW, the 1x1 shortcut and no channels.
#include "runtime/KernelAbi.h"
#include "support/Float16.h"

#include <cmath>
#include <cstring>
#include <gtest/gtest.h>
#include <random>
#include <string>
#include <vector>

namespace {

enum Code : int32_t { F16 = 4, BF16 = 5, F32 = 6, F64 = 7 };

struct Case {
  int64_t N, C, H, W, O, KH, KW, sh, sw, ph, pw;
  bool bias;
  std::string str() const {
    return "N=" + std::to_string(N) + " C=" + std::to_string(C) +
           " H=" + std::to_string(H) + " W=" + std::to_string(W) +
           " O=" + std::to_string(O) + " K=" + std::to_string(KH) + "x" +
           std::to_string(KW) + " stride=" + std::to_string(sh) + "," +
           std::to_string(sw) + " pad=" + std::to_string(ph) + "," +
           std::to_string(pw) + (bias ? " bias" : "");
  }
};

/// Values of element type \p d as stored, and the doubles they hold.
struct Data {
  std::vector<uint8_t> bytes;
  std::vector<double> values;
};

size_t sizeOf(int32_t d) { return d == F64 ? 8 : d == F32 ? 4 : 2; }

void store(int32_t d, uint8_t *p, double v) {
  if (d == F64) {
    std::memcpy(p, &v, 8);
  } else if (d == F32) {
    float f = static_cast<float>(v);
    std::memcpy(p, &f, 4);
  } else {
    uint16_t h = d == F16 ? tsl::floatToHalf(static_cast<float>(v))
                          : tsl::floatToBF16(static_cast<float>(v));
    std::memcpy(p, &h, 2);
  }
}

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
  return d == F16 ? tsl::halfToFloat(h) : tsl::bf16ToFloat(h);
}

Data random(int32_t d, int64_t n, std::mt19937 &rng) {
  std::normal_distribution<double> normal;
  Data x;
  x.bytes.resize(static_cast<size_t>(n) * sizeOf(d));
  for (int64_t i = 0; i < n; ++i) {
    uint8_t *p = x.bytes.data() + i * sizeOf(d);
    store(d, p, normal(rng));
    x.values.push_back(load(d, p)); // the value as stored (rounded)
  }
  return x;
}

/// Runs one case in \p d against the reference; the tolerance scales with
/// the sum of |terms| (f32 accumulation: K * 2^-24 of it at worst) plus
/// the rounding of the result to \p d.
void check(const Case &c, int32_t d, std::mt19937 &rng) {
  int64_t OH = (c.H + 2 * c.ph - c.KH) / c.sh + 1,
          OW = (c.W + 2 * c.pw - c.KW) / c.sw + 1;
  Data x = random(d, c.N * c.C * c.H * c.W, rng),
       w = random(d, c.O * c.C * c.KH * c.KW, rng), b = random(d, c.O, rng);
  std::vector<uint8_t> out(static_cast<size_t>(c.N * c.O * OH * OW) * sizeOf(d),
                           0xAB);
  int64_t xs[4] = {c.N, c.C, c.H, c.W}, ws[4] = {c.O, c.C, c.KH, c.KW};
  tsl_rt_context *ctx = tsl_rt_context_create();
  ASSERT_EQ(tsl_rt_conv2d(ctx, d, x.bytes.data(), xs, w.bytes.data(), ws,
                          c.bias ? b.bytes.data() : nullptr, c.sh, c.sw, c.ph,
                          c.pw, out.data()),
            0)
      << tsl_rt_context_error(ctx);
  tsl_rt_context_destroy(ctx);
  double rel = d == F64 ? 1e-13 : d == F32 ? 1e-6 : d == F16 ? 1e-3 : 4e-3;
  int64_t depth = c.C * c.KH * c.KW, o = 0;
  for (int64_t n = 0; n < c.N; ++n)
    for (int64_t oc = 0; oc < c.O; ++oc)
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow, ++o) {
          double ref = c.bias ? b.values[oc] : 0, mag = std::fabs(ref);
          for (int64_t ci = 0; ci < c.C; ++ci)
            for (int64_t kh = 0; kh < c.KH; ++kh)
              for (int64_t kw = 0; kw < c.KW; ++kw) {
                int64_t ih = oh * c.sh - c.ph + kh, iw = ow * c.sw - c.pw + kw;
                if (ih < 0 || ih >= c.H || iw < 0 || iw >= c.W)
                  continue;
                double t = x.values[((n * c.C + ci) * c.H + ih) * c.W + iw] *
                           w.values[((oc * c.C + ci) * c.KH + kh) * c.KW + kw];
                ref += t;
                mag += std::fabs(t);
              }
          double got = load(d, out.data() + o * sizeOf(d));
          double tol = 1e-6 * (depth + 1) * mag + rel * std::fabs(ref) + 1e-9;
          ASSERT_NEAR(got, ref, tol)
              << c.str() << " dtype " << d << " at n=" << n << " o=" << oc
              << " (" << oh << ", " << ow << ")";
        }
}

TEST(Conv2d, MatchesReferenceAcrossTilesBlocksAndTypes) {
  std::mt19937 rng(5);
  const Case cases[] = {
      // N  C   H   W   O  KH KW sh sw ph pw bias
      {1, 3, 7, 9, 5, 3, 3, 1, 1, 1, 1, true},     // odd sizes
      {3, 3, 7, 9, 5, 3, 3, 2, 2, 1, 1, false},    // stride 2
      {2, 4, 7, 9, 13, 3, 2, 1, 2, 0, 1, true},    // KH != KW, mixed
      {2, 5, 6, 5, 8, 1, 1, 1, 1, 0, 0, true},     // 1x1: the image is B
      {1, 5, 7, 9, 5, 1, 1, 2, 2, 0, 0, false},    // 1x1, strided
      {1, 3, 6, 7, 5, 1, 1, 1, 1, 1, 1, true},     // 1x1, padded
      {1, 2, 5, 4, 3, 2, 3, 3, 1, 3, 2, true},     // padding past the kernel
      {1, 2, 3, 3, 1, 5, 5, 1, 1, 2, 2, false},    // kernel > image
      {2, 0, 4, 4, 3, 3, 3, 1, 1, 1, 1, true},     // no channels: the bias
      {1, 30, 12, 11, 13, 3, 3, 1, 1, 1, 1, true}, // depth 270 > 256
      {1, 2, 40, 33, 64, 3, 3, 1, 1, 1, 1, true},  // 1320 pixels > 1024
      {1, 3, 33, 40, 64, 1, 1, 1, 1, 0, 0, true},  // 1x1 past one block
      {2, 8, 9, 8, 1, 3, 3, 1, 1, 1, 1, true},     // one output channel
      // 3x3, stride 1, >= 32 channels each side, >= 144 tiles: Winograd
      {2, 32, 23, 25, 33, 3, 3, 1, 1, 1, 1, true},  // odd output: edge tiles
      {1, 32, 26, 26, 32, 3, 3, 1, 1, 0, 0, false}, // unpadded, read in place
      {1, 33, 22, 30, 40, 3, 3, 1, 1, 2, 1, true},  // padding 2 x 1
      {1, 64, 18, 258, 64, 3, 3, 1, 1, 0, 1, true}, // three bands of tiles
      {1, 32, 13, 41, 32, 3, 3, 1, 1, 1, 1, true},  // odd sizes, vector + tails
      // Direct: one pixel per output row, so a panel has more runs than
      // the packer works out at once.
      {1, 2, 40, 1, 8, 3, 3, 1, 1, 1, 1, true},
  };
  for (const Case &c : cases)
    for (int32_t d : {F32, F64, F16, BF16})
      check(c, d, rng);
}

TEST(Conv2d, EmptyBatchWritesNothing) {
  int64_t xs[4] = {0, 3, 5, 5}, ws[4] = {4, 3, 3, 3};
  std::vector<float> w(4 * 3 * 3 * 3, 1.f);
  tsl_rt_context *ctx = tsl_rt_context_create();
  EXPECT_EQ(tsl_rt_conv2d(ctx, F32, nullptr, xs, w.data(), ws, nullptr, 1, 1, 1,
                          1, nullptr),
            0);
  tsl_rt_context_destroy(ctx);
}

} // namespace
