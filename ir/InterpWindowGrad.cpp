// The interpreter's kernels of the window ops' gradients (conv2d's weight
// gradient, max_pool2d's input gradient): the definitions computed
// directly, in double, rounded once on store. They are the oracle of the
// CPU library's GEMM and the GPU's per-element kernels.
#include "ir/Interpreter.h"

#include <cmath>

namespace tsl {

namespace {

/// The sizes of a window op: input [N, C, H, W], window KH x KW, strides,
/// padding and output [N, ., OH, OW].
struct Window {
  int64_t N, C, H, W, KH, KW, sh, sw, ph, pw, OH, OW;

  /// The input position of output (oh, ow)'s tap (kh, kw), or false when it
  /// falls in the padding.
  bool at(int64_t oh, int64_t ow, int64_t kh, int64_t kw, int64_t &ih,
          int64_t &iw) const {
    ih = oh * sh - ph + kh;
    iw = ow * sw - pw + kw;
    return ih >= 0 && ih < H && iw >= 0 && iw < W;
  }
};

Window windowOf(const Operation &op, const std::vector<int64_t> &xs, int64_t kh,
                int64_t kw, const std::vector<int64_t> &gs) {
  auto st = op.intsAttr("stride"), pd = op.intsAttr("padding");
  return {xs[0], xs[1], xs[2], xs[3], kh,    kw,
          st[0], st[1], pd[0], pd[1], gs[2], gs[3]};
}

} // namespace

bool conv2dWeightGradKernel(KernelContext &ctx) {
  const Tensor &x = *ctx.in[0], &g = *ctx.in[1];
  const std::vector<int64_t> &ws = ctx.outShapes[0];
  Window w = windowOf(ctx.op, x.shape(), ws[2], ws[3], g.shape());
  int64_t O = ws[0];
  if (!ctx.allocate(0, ws))
    return false;
  Tensor &out = ctx.out[0];
  size_t o = 0;
  for (int64_t oc = 0; oc < O; ++oc)
    for (int64_t c = 0; c < w.C; ++c)
      for (int64_t kh = 0; kh < w.KH; ++kh)
        for (int64_t kw = 0; kw < w.KW; ++kw, ++o) {
          double acc = 0;
          for (int64_t n = 0; n < w.N; ++n)
            for (int64_t oh = 0; oh < w.OH; ++oh)
              for (int64_t ow = 0; ow < w.OW; ++ow) {
                int64_t ih, iw;
                if (w.at(oh, ow, kh, kw, ih, iw))
                  acc += g.getF(((n * O + oc) * w.OH + oh) * w.OW + ow) *
                         x.getF(((n * w.C + c) * w.H + ih) * w.W + iw);
              }
          out.setF(o, acc);
        }
  return true;
}

bool maxPool2dGradKernel(KernelContext &ctx) {
  const Tensor &x = *ctx.in[0], &g = *ctx.in[1];
  auto k = ctx.op.intsAttr("kernel");
  Window w = windowOf(ctx.op, x.shape(), k[0], k[1], g.shape());
  if (!ctx.allocate(0, x.shape()))
    return false;
  std::vector<double> acc(x.numel(), 0.0);
  size_t o = 0;
  for (int64_t n = 0; n < w.N; ++n)
    for (int64_t c = 0; c < w.C; ++c)
      for (int64_t oh = 0; oh < w.OH; ++oh)
        for (int64_t ow = 0; ow < w.OW; ++ow, ++o) {
          // The element max_pool2d took: the first maximum in row-major
          // window order, or the first NaN.
          int64_t taken = -1;
          double best = -INFINITY;
          for (int64_t kh = 0; kh < w.KH; ++kh)
            for (int64_t kw = 0; kw < w.KW; ++kw) {
              int64_t ih, iw;
              if (!w.at(oh, ow, kh, kw, ih, iw))
                continue;
              int64_t i = ((n * w.C + c) * w.H + ih) * w.W + iw;
              double v = x.getF(i);
              if (taken < 0 || v > best ||
                  (std::isnan(v) && !std::isnan(best))) {
                best = v;
                taken = i;
              }
            }
          if (taken >= 0)
            acc[taken] += g.getF(o);
        }
  for (size_t i = 0; i < acc.size(); ++i)
    ctx.out[0].setF(i, acc[i]);
  return true;
}

} // namespace tsl
