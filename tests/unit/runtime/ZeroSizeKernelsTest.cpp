// Every runtime kernel with each of its dims set to 0, called through its
// entry point: GEMM (M, N, K, with and without a row bias, B packed or
// not), conv2d (N, C, H, W, O, KH, KW), its Winograd path (C, O, output
// height and width), attention (batch, S, T, D, E), sort (outer, n, inner),
// topk (rows, n, k), scatter (each dim of x, idx and src), gather,
// index_select and max_pool2d. Each must return normally, write nothing
// outside its (empty or not) output, and give what the definition gives:
// an empty sum is 0 (K = 0: zeros, or the bias), a softmax over no keys is
// 0 / 0 = NaN, and attention with head dim 0 weighs every key alike (NaN
// when the scale is 1/sqrt(0) = inf, as the interpreter gives). Attention
// with D = 0 used to divide by zero (SIGFPE) in the GEMM's packing.
#include "runtime/ConvWinograd.h"
#include "runtime/Gemm.h"
#include "runtime/KernelAbi.h"
#include "support/Float16.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <gtest/gtest.h>
#include <limits>
#include <string>
#include <vector>

namespace {

enum Code : int32_t { I64 = 3, F16 = 4, F32 = 6, F64 = 7 };
constexpr float kSentinel = -12345.f;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

/// A context for one kernel call, checked for a recorded error.
struct Context {
  tsl_rt_context *ctx = tsl_rt_context_create();
  ~Context() { tsl_rt_context_destroy(ctx); }
  std::string error() const { return tsl_rt_context_error(ctx); }
};

/// Values 0.25, 0.5, ... (distinct, exact in f16).
template <class T> std::vector<T> ramp(int64_t n) {
  std::vector<T> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    v[static_cast<size_t>(i)] =
        static_cast<T>(0.25 * static_cast<double>(i % 13 + 1));
  return v;
}

/// Expects \p got (n values) to equal \p want, NaN matching NaN.
void expectValues(const std::vector<double> &want,
                  const std::vector<double> &got, double tolerance = 0) {
  ASSERT_EQ(want.size(), got.size());
  for (size_t i = 0; i < want.size(); ++i) {
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << "element " << i << ": " << got[i];
      continue;
    }
    EXPECT_NEAR(got[i], want[i], tolerance) << "element " << i;
  }
}

// --- GEMM ------------------------------------------------------------------

struct GemmDims {
  const char *zero;
  int64_t M, N, K;
};
const GemmDims kGemmDims[] = {
    {"M", 0, 5, 7}, {"N", 6, 0, 7}, {"K", 6, 5, 0}, {"all", 0, 0, 0}};

/// C = A @ B into a buffer with a sentinel row after C: C is all K = 0's
/// zeros (or the bias), and the sentinel row is untouched.
TEST(ZeroSizeKernels, Gemm) {
  for (const GemmDims &d : kGemmDims)
    for (int form = 0; form < 4; ++form) { // plain, B^T, bias, packed B
      SCOPED_TRACE(std::string(d.zero) + " = 0, form " + std::to_string(form));
      int64_t ldc = d.N + 1, ldb = form == 1 ? d.K + 1 : d.N + 1;
      std::vector<float> A = ramp<float>(d.M * (d.K + 1) + 1),
                         B = ramp<float>((d.K + 1) * (d.N + 1) + 1),
                         bias = ramp<float>(d.M + 1),
                         C((d.M + 1) * ldc, kSentinel);
      if (form == 0)
        tsl_rt_sgemm(d.M, d.N, d.K, A.data(), d.K + 1, B.data(), ldb, C.data(),
                     ldc);
      else if (form == 1)
        tsl_rt_sgemm_bt(d.M, d.N, d.K, A.data(), d.K + 1, B.data(), ldb,
                        C.data(), ldc);
      std::vector<float> packed;
      tsl::rt::GemmB b;
      b.data = B.data();
      b.ld = ldb;
      if (form == 3) {
        // The packing attention does for its keys: K = 0 was a division by
        // zero (the count of K blocks).
        packed.assign(tsl::rt::sgemmPackedFloats(d.K, d.N) + 1, kSentinel);
        tsl::rt::sgemmPackB(d.K, d.N, b, packed.data());
        EXPECT_EQ(packed.back(), kSentinel);
        b = tsl::rt::GemmB{};
        b.packed = packed.data();
        b.packedN = d.N;
      }
      if (form >= 2) {
        ASSERT_TRUE(tsl::rt::sgemm(d.M, d.N, d.K, A.data(), d.K + 1, b,
                                   C.data(), ldc,
                                   form == 2 ? bias.data() : nullptr));
      }
      for (int64_t i = 0; i <= d.M; ++i)
        for (int64_t j = 0; j < ldc; ++j) {
          float want = kSentinel;
          if (i < d.M && j < d.N && d.K == 0)
            want = form == 2 ? bias[i] : 0.f;
          if (i < d.M && j < d.N && d.K > 0)
            continue; // a real product: GemmTest checks those
          EXPECT_EQ(C[i * ldc + j], want) << "C[" << i << ", " << j << "]";
        }
    }
}

// --- conv2d and its Winograd path -------------------------------------------

struct ConvShape {
  const char *zero;
  int64_t N, C, H, W, O, KH, KW;
};

/// conv2d by its definition, in double (out of bounds taps are padding).
std::vector<double> referenceConv(const ConvShape &s, int64_t ph, int64_t pw,
                                  const std::vector<double> &x,
                                  const std::vector<double> &w,
                                  const std::vector<double> &bias) {
  int64_t OH = (s.H + 2 * ph - s.KH) + 1, OW = (s.W + 2 * pw - s.KW) + 1;
  std::vector<double> out;
  if (OH <= 0 || OW <= 0)
    return out;
  for (int64_t n = 0; n < s.N; ++n)
    for (int64_t o = 0; o < s.O; ++o)
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          double acc = bias[o];
          for (int64_t c = 0; c < s.C; ++c)
            for (int64_t i = 0; i < s.KH; ++i)
              for (int64_t j = 0; j < s.KW; ++j) {
                int64_t ih = oh - ph + i, iw = ow - pw + j;
                if (ih >= 0 && ih < s.H && iw >= 0 && iw < s.W)
                  acc += x[((n * s.C + c) * s.H + ih) * s.W + iw] *
                         w[((o * s.C + c) * s.KH + i) * s.KW + j];
              }
          out.push_back(acc);
        }
  return out;
}

TEST(ZeroSizeKernels, Conv2d) {
  const ConvShape shapes[] = {
      {"N", 0, 3, 5, 4, 4, 3, 2}, {"C", 2, 0, 5, 4, 4, 3, 2},
      {"H", 2, 3, 0, 4, 4, 1, 2}, {"W", 2, 3, 5, 0, 4, 3, 1},
      {"O", 2, 3, 5, 4, 0, 3, 2}, {"KH", 2, 3, 5, 4, 4, 0, 2},
      {"KW", 2, 3, 5, 4, 4, 3, 0}};
  for (const ConvShape &s : shapes)
    for (int32_t dtype : {F32, F64}) {
      SCOPED_TRACE(std::string(s.zero) + " = 0, dtype " +
                   std::to_string(dtype));
      const int64_t ph = 1, pw = 1;
      std::vector<double> x = ramp<double>(s.N * s.C * s.H * s.W),
                          w = ramp<double>(s.O * s.C * s.KH * s.KW),
                          bias = ramp<double>(s.O);
      std::vector<double> want = referenceConv(s, ph, pw, x, w, bias);
      int64_t xs[4] = {s.N, s.C, s.H, s.W}, ws[4] = {s.O, s.C, s.KH, s.KW};
      std::vector<double> got;
      Context c;
      int32_t status;
      if (dtype == F64) {
        std::vector<double> out(want.size() + 1, kSentinel);
        status = tsl_rt_conv2d(c.ctx, F64, x.data(), xs, w.data(), ws,
                               bias.data(), 1, 1, ph, pw, out.data());
        EXPECT_EQ(out.back(), kSentinel);
        got.assign(out.begin(), out.end() - 1);
      } else {
        std::vector<float> xf(x.begin(), x.end()), wf(w.begin(), w.end()),
            bf(bias.begin(), bias.end()), out(want.size() + 1, kSentinel);
        status = tsl_rt_conv2d(c.ctx, F32, xf.data(), xs, wf.data(), ws,
                               bf.data(), 1, 1, ph, pw, out.data());
        EXPECT_EQ(out.back(), kSentinel);
        got.assign(out.begin(), out.end() - 1);
      }
      EXPECT_EQ(status, 0) << c.error();
      expectValues(want, got, 1e-3);
    }
}

TEST(ZeroSizeKernels, Winograd) {
  // C, O, and the output's height and width (Hs, Ws = 2: no 3x3 window).
  const tsl::rt::WinogradShape shapes[] = {
      {0, 4, 6, 6}, {3, 0, 6, 6}, {3, 4, 2, 6}, {3, 4, 6, 2}};
  const char *names[] = {"C", "O", "output height", "output width"};
  for (int k = 0; k < 4; ++k) {
    const tsl::rt::WinogradShape &s = shapes[k];
    SCOPED_TRACE(std::string(names[k]) + " = 0");
    std::vector<float> image = ramp<float>(s.C * s.Hs * s.Ws),
                       w = ramp<float>(s.O * s.C * 9), bias = ramp<float>(s.O),
                       U(16 * s.O * s.C + 1), scratch(s.scratchFloats() + 1),
                       out(s.O * s.outH() * s.outW() + 1, kSentinel);
    tsl::rt::winogradWeights(s, w.data(), U.data());
    ASSERT_TRUE(tsl::rt::winogradImage(s, image.data(), U.data(), bias.data(),
                                       scratch.data(), out.data()));
    // Only C = 0 has outputs: each is its channel's bias.
    for (int64_t o = 0; o < s.O; ++o)
      for (int64_t p = 0; p < s.outH() * s.outW(); ++p)
        EXPECT_EQ(out[o * s.outH() * s.outW() + p], bias[o]);
    EXPECT_EQ(out.back(), kSentinel);
  }
}

// --- attention --------------------------------------------------------------

struct AttentionShape {
  const char *zero;
  int64_t batch, S, T, D, E;
};

/// softmax(q k^T * scale) v by the definition, in double.
std::vector<double> referenceAttention(const AttentionShape &s, double scale,
                                       const std::vector<double> &q,
                                       const std::vector<double> &k,
                                       const std::vector<double> &v) {
  std::vector<double> out;
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t i = 0; i < s.S; ++i) {
      std::vector<double> score(static_cast<size_t>(s.T));
      double mx = -INFINITY;
      bool nan = false;
      for (int64_t j = 0; j < s.T; ++j) {
        double dot = 0;
        for (int64_t d = 0; d < s.D; ++d)
          dot += q[(b * s.S + i) * s.D + d] * k[(b * s.T + j) * s.D + d];
        score[j] = dot * scale;
        nan |= std::isnan(score[j]);
        mx = std::max(mx, score[j]);
      }
      double sum = 0;
      std::vector<double> acc(static_cast<size_t>(s.E), 0.0);
      for (int64_t j = 0; j < s.T; ++j) {
        double e = nan ? kNaN : std::exp(score[j] - mx);
        sum += e;
        for (int64_t c = 0; c < s.E; ++c)
          acc[c] += e * v[(b * s.T + j) * s.E + c];
      }
      for (int64_t c = 0; c < s.E; ++c)
        out.push_back(acc[c] / sum);
    }
  return out;
}

/// Element \p i of \p dtype data as a double, and back.
double loadAs(int32_t dtype, const std::vector<uint8_t> &bytes, size_t i) {
  if (dtype == F64) {
    double d;
    std::memcpy(&d, bytes.data() + 8 * i, 8);
    return d;
  }
  if (dtype == F32) {
    float f;
    std::memcpy(&f, bytes.data() + 4 * i, 4);
    return f;
  }
  uint16_t h;
  std::memcpy(&h, bytes.data() + 2 * i, 2);
  return tsl::halfToFloat(h);
}
std::vector<uint8_t> storeAs(int32_t dtype, const std::vector<double> &v,
                             size_t extra = 0) {
  size_t size = dtype == F64 ? 8 : dtype == F32 ? 4 : 2;
  std::vector<uint8_t> bytes((v.size() + extra) * size, 0xA5);
  for (size_t i = 0; i < v.size(); ++i) {
    if (dtype == F64) {
      std::memcpy(bytes.data() + 8 * i, &v[i], 8);
    } else if (dtype == F32) {
      float f = static_cast<float>(v[i]);
      std::memcpy(bytes.data() + 4 * i, &f, 4);
    } else {
      uint16_t h = tsl::floatToHalf(static_cast<float>(v[i]));
      std::memcpy(bytes.data() + 2 * i, &h, 2);
    }
  }
  return bytes;
}

TEST(ZeroSizeKernels, Attention) {
  const AttentionShape shapes[] = {{"batch", 0, 3, 5, 4, 2},
                                   {"S", 2, 0, 5, 4, 2},
                                   {"T", 2, 3, 0, 4, 2},
                                   {"D", 2, 3, 5, 0, 2},
                                   {"E", 2, 3, 5, 4, 0}};
  for (const AttentionShape &s : shapes)
    for (int32_t dtype : {F16, F32, F64})
      // 1 and nn.attention's default 1/sqrt(D), inf when D = 0.
      for (double scale : {1.0, 1.0 / std::sqrt(static_cast<double>(s.D))}) {
        SCOPED_TRACE(std::string(s.zero) + " = 0, dtype " +
                     std::to_string(dtype) + ", scale " +
                     std::to_string(scale));
        std::vector<double> q = ramp<double>(s.batch * s.S * s.D),
                            k = ramp<double>(s.batch * s.T * s.D),
                            v = ramp<double>(s.batch * s.T * s.E);
        std::vector<double> want = referenceAttention(s, scale, q, k, v);
        std::vector<uint8_t> qb = storeAs(dtype, q), kb = storeAs(dtype, k),
                             vb = storeAs(dtype, v),
                             sb = storeAs(dtype, {scale}),
                             out = storeAs(dtype, {}, want.size() + 1);
        std::vector<uint8_t> untouched = out;
        int64_t batchShape[1] = {s.batch};
        Context c;
        EXPECT_EQ(tsl_rt_attention(c.ctx, dtype, batchShape, 1, s.S, s.T, s.D,
                                   s.E, qb.data(), kb.data(), vb.data(),
                                   sb.data(), nullptr, nullptr, 0, out.data()),
                  0)
            << c.error();
        std::vector<double> got;
        for (size_t i = 0; i < want.size(); ++i)
          got.push_back(loadAs(dtype, out, i));
        expectValues(want, got, dtype == F16 ? 5e-3 : 1e-4);
        size_t size = out.size() / (want.size() + 1);
        EXPECT_EQ(std::memcmp(out.data() + want.size() * size,
                              untouched.data() + want.size() * size, size),
                  0)
            << "written past the output";
      }
}

// --- sort, topk -------------------------------------------------------------

TEST(ZeroSizeKernels, Sort) {
  struct Dims {
    const char *zero;
    int64_t outer, n, inner;
  } cases[] = {{"outer", 0, 4, 3}, {"n", 2, 0, 3}, {"inner", 2, 4, 0}};
  for (const Dims &d : cases)
    for (int32_t descending : {0, 1}) {
      SCOPED_TRACE(std::string(d.zero) + " = 0");
      std::vector<float> x = ramp<float>(d.outer * d.n * d.inner + 1),
                         values(x.size(), kSentinel);
      std::vector<int64_t> indices(x.size(), -7);
      Context c;
      EXPECT_EQ(tsl_rt_sort(c.ctx, F32, x.data(), d.outer, d.n, d.inner,
                            descending, values.data(), indices.data()),
                0);
      EXPECT_EQ(values[0], kSentinel);
      EXPECT_EQ(indices[0], -7);
    }
}

TEST(ZeroSizeKernels, Topk) {
  struct Dims {
    const char *zero;
    int64_t rows, n, k;
  } cases[] = {{"rows", 0, 4, 2}, {"n", 3, 0, 0}, {"k", 3, 4, 0}};
  for (const Dims &d : cases) {
    SCOPED_TRACE(std::string(d.zero) + " = 0");
    std::vector<float> x = ramp<float>(d.rows * d.n + 1),
                       values(d.rows * d.k + 1, kSentinel);
    std::vector<int64_t> indices(values.size(), -7);
    Context c;
    EXPECT_EQ(tsl_rt_topk(c.ctx, F32, x.data(), d.rows, d.n, d.k, values.data(),
                          indices.data()),
              0)
        << c.error();
    EXPECT_EQ(values[0], kSentinel);
    EXPECT_EQ(indices[0], -7);
  }
  // n = 0 with k > 0 is the documented error, not a crash.
  Context c;
  float x = 1, values = kSentinel;
  int64_t indices = -7;
  EXPECT_EQ(tsl_rt_topk(c.ctx, F32, &x, 3, 0, 1, &values, &indices), 1);
  EXPECT_EQ(c.error(), "k is out of range for the last axis");
}

// --- scatter, gather, index_select, max_pool2d -------------------------------

TEST(ZeroSizeKernels, Scatter) {
  // x [3, 4], idx [2, 4] along axis 0, src [2, 5]; one dim at a time 0
  // (idx's dims never above src's, nor above x's off the axis).
  struct Dims {
    const char *zero;
    int64_t x[2], idx[2], src[2];
  } cases[] = {{"x dim 1 (and idx, src)", {3, 0}, {2, 0}, {2, 0}},
               {"idx dim 0", {3, 4}, {0, 4}, {2, 5}},
               {"idx dim 1", {3, 4}, {2, 0}, {2, 5}},
               {"src dim 0 (and idx)", {3, 4}, {0, 4}, {0, 5}},
               {"src dim 1 (and idx)", {3, 4}, {2, 0}, {2, 0}}};
  for (const Dims &d : cases)
    for (int32_t add : {0, 1}) {
      SCOPED_TRACE(std::string(d.zero) + " = 0");
      std::vector<float> x = ramp<float>(d.x[0] * d.x[1]),
                         src = ramp<float>(d.src[0] * d.src[1] + 1),
                         out(x.size() + 1, kSentinel);
      std::vector<int64_t> idx(d.idx[0] * d.idx[1] + 1, 1);
      Context c;
      EXPECT_EQ(tsl_rt_scatter(c.ctx, F32, x.data(), d.x, 2, 0, I64, idx.data(),
                               d.idx, src.data(), d.src, add, out.data()),
                0)
          << c.error();
      for (size_t i = 0; i < x.size(); ++i) // nothing scattered: out = x
        EXPECT_EQ(out[i], x[i]);
      EXPECT_EQ(out.back(), kSentinel);
    }
  // x empty along the scatter axis with an index to place: out of bounds.
  Context c;
  int64_t xs[2] = {0, 4}, is[2] = {1, 1}, ss[2] = {1, 1}, idx = 0;
  float src = 1, out = kSentinel;
  EXPECT_EQ(tsl_rt_scatter(c.ctx, F32, nullptr, xs, 2, 0, I64, &idx, is, &src,
                           ss, 0, &out),
            1);
  EXPECT_EQ(c.error(), "index 0 is out of bounds for axis 0 of size 0");
}

TEST(ZeroSizeKernels, GatherAndIndexSelect) {
  struct Dims {
    const char *zero;
    int64_t x[2], idx[2];
  } cases[] = {{"x dim 1 (and idx)", {3, 0}, {2, 0}},
               {"idx dim 0", {3, 4}, {0, 4}},
               {"idx dim 1", {3, 4}, {2, 0}}};
  for (const Dims &d : cases) {
    SCOPED_TRACE(std::string(d.zero) + " = 0");
    std::vector<float> x = ramp<float>(d.x[0] * d.x[1] + 1),
                       out(d.idx[0] * d.idx[1] + 1, kSentinel);
    std::vector<int64_t> idx(d.idx[0] * std::max<int64_t>(d.idx[1], 1) + 1, 1);
    Context c;
    EXPECT_EQ(tsl_rt_gather(c.ctx, F32, x.data(), d.x, 2, 0, I64, idx.data(),
                            d.idx, out.data()),
              0)
        << c.error();
    EXPECT_EQ(out.back(), kSentinel);
    // index_select along axis 0 with idx[0] indices: out [idx0, x1].
    std::vector<float> sel(d.idx[0] * d.x[1] + 1, kSentinel);
    EXPECT_EQ(tsl_rt_index_select(c.ctx, F32, x.data(), d.x, 2, 0, I64,
                                  idx.data(), d.idx[0], sel.data()),
              0)
        << c.error();
    EXPECT_EQ(sel.back(), kSentinel);
  }
}

/// NCHW shapes with one dim 0 (the window ops' tests: 2x2 windows fit the
/// others).
struct NchwWithAZero {
  const char *zero;
  int64_t N, C, H, W;
};
constexpr NchwWithAZero kNchwWithAZero[] = {
    {"N", 0, 2, 4, 4}, {"C", 2, 0, 4, 4}, {"H", 2, 2, 0, 4}, {"W", 2, 2, 4, 0}};

TEST(ZeroSizeKernels, MaxPool2d) {
  for (const NchwWithAZero &d : kNchwWithAZero) {
    SCOPED_TRACE(std::string(d.zero) + " = 0");
    int64_t xs[4] = {d.N, d.C, d.H, d.W};
    std::vector<float> x = ramp<float>(d.N * d.C * d.H * d.W + 1);
    // 2x2 windows, stride 1, no padding: no output (or none per image).
    int64_t OH = std::max<int64_t>(d.H - 1, 0),
            OW = std::max<int64_t>(d.W - 1, 0);
    std::vector<float> out(d.N * d.C * OH * OW + 1, kSentinel);
    Context c;
    EXPECT_EQ(tsl_rt_max_pool2d(c.ctx, F32, x.data(), xs, 2, 2, 1, 1, 0, 0,
                                out.data()),
              0);
    EXPECT_EQ(out.back(), kSentinel);
  }
}

// The window ops' gradients: an empty x writes nothing; an x no window
// fits (1 row under a 2x2 window) gets zeros.
TEST(ZeroSizeKernels, WindowGradients) {
  for (const NchwWithAZero &d : kNchwWithAZero) {
    SCOPED_TRACE(std::string(d.zero) + " = 0");
    int64_t xs[4] = {d.N, d.C, d.H, d.W};
    int64_t gs[4] = {d.N, 3, std::max<int64_t>(d.H - 1, 0),
                     std::max<int64_t>(d.W - 1, 0)};
    std::vector<float> x = ramp<float>(d.N * d.C * d.H * d.W + 1);
    std::vector<float> g = ramp<float>(gs[0] * gs[1] * gs[2] * gs[3] + 1);
    std::vector<float> dx(d.N * d.C * d.H * d.W + 1, kSentinel);
    std::vector<float> dw(3 * d.C * 2 * 2 + 1, kSentinel);
    Context c;
    EXPECT_EQ(tsl_rt_max_pool2d_grad(c.ctx, F32, x.data(), xs, g.data(), 2, 2,
                                     1, 1, 0, 0, dx.data()),
              0);
    EXPECT_EQ(dx.back(), kSentinel);
    EXPECT_EQ(tsl_rt_conv2d_weight_grad(c.ctx, F32, x.data(), xs, g.data(), gs,
                                        2, 2, 1, 1, 0, 0, dw.data()),
              0)
        << c.error();
    EXPECT_EQ(dw.back(), kSentinel);
    for (size_t i = 0; i + 1 < dw.size(); ++i) // no term: zero
      EXPECT_EQ(dw[i], 0.f) << i;
  }
  int64_t xs[4] = {1, 2, 1, 3};
  std::vector<float> x = ramp<float>(6), g(1), dx(7, kSentinel);
  Context c;
  EXPECT_EQ(tsl_rt_max_pool2d_grad(c.ctx, F32, x.data(), xs, g.data(), 2, 2, 1,
                                   1, 0, 0, dx.data()),
            0);
  for (size_t i = 0; i < 6; ++i)
    EXPECT_EQ(dx[i], 0.f) << i;
  EXPECT_EQ(dx.back(), kSentinel);
}

} // namespace
