// The interpreter's kernel of the fused attention op: the oracle the CPU and
// GPU kernels are compared with. It computes the definition directly, in
// double, one query row at a time: the scores, the row max, the
// exponentials, their sum and the weighted sum of v, rounded once on store.
#include "ir/Interpreter.h"

#include <cmath>
#include <limits>

namespace tsl {

namespace {

/// Row-major strides of \p shape, with 0 where \p shape broadcasts a size-1
/// axis against \p full (aligned at the right).
std::vector<int64_t> maskStrides(const std::vector<int64_t> &shape,
                                 const std::vector<int64_t> &full) {
  std::vector<int64_t> s(full.size(), 0);
  int64_t step = 1;
  size_t offset = full.size() - shape.size();
  for (size_t i = shape.size(); i-- > 0;) {
    s[offset + i] = shape[i] == 1 ? 0 : step;
    step *= shape[i];
  }
  return s;
}

} // namespace

bool attentionKernel(KernelContext &ctx) {
  const Tensor &q = *ctx.in[0], &k = *ctx.in[1], &v = *ctx.in[2];
  const Tensor *mask = ctx.in.size() > 4 ? ctx.in[4] : nullptr;
  bool causal = ctx.op.boolAttr("causal");
  double scale = ctx.in[3]->getF(0);
  std::vector<int64_t> qs = q.shape();
  size_t rank = qs.size();
  int64_t S = qs[rank - 2], D = qs[rank - 1], T = k.shape()[rank - 2],
          E = v.shape().back();
  std::vector<int64_t> outShape = qs, scoreShape = qs;
  outShape.back() = E;
  scoreShape.back() = T;
  if (!ctx.allocate(0, outShape))
    return false;
  int64_t batches = 1;
  for (size_t i = 0; i + 2 < rank; ++i)
    batches *= qs[i];
  std::vector<int64_t> ms =
      mask ? maskStrides(mask->shape(), scoreShape) : std::vector<int64_t>();
  std::vector<double> scores(static_cast<size_t>(T)), acc(E);
  Tensor &out = ctx.out[0];
  for (int64_t b = 0; b < batches; ++b) {
    int64_t maskBase = 0;
    for (size_t i = rank - 2, rest = static_cast<size_t>(b); mask && i-- > 0;) {
      maskBase += static_cast<int64_t>(rest % qs[i]) * ms[i];
      rest /= static_cast<size_t>(qs[i]);
    }
    for (int64_t i = 0; i < S; ++i) {
      double mx = -std::numeric_limits<double>::infinity();
      bool nan = false;
      for (int64_t j = 0; j < T; ++j) {
        double s = -std::numeric_limits<double>::infinity();
        if (!causal || j <= i) {
          s = 0;
          for (int64_t d = 0; d < D; ++d)
            s += q.getF(static_cast<size_t>((b * S + i) * D + d)) *
                 k.getF(static_cast<size_t>((b * T + j) * D + d));
          s *= scale;
          if (mask)
            s += mask->getF(static_cast<size_t>(maskBase + i * ms[rank - 2] +
                                                j * ms[rank - 1]));
        }
        scores[j] = s;
        nan |= std::isnan(s);
        mx = std::max(mx, s);
      }
      if (nan)
        mx = std::numeric_limits<double>::quiet_NaN();
      double sum = 0;
      std::fill(acc.begin(), acc.end(), 0.0);
      for (int64_t j = 0; j < T; ++j) {
        double e = std::exp(scores[j] - mx);
        sum += e;
        for (int64_t c = 0; c < E; ++c)
          acc[c] += e * v.getF(static_cast<size_t>((b * T + j) * E + c));
      }
      for (int64_t c = 0; c < E; ++c)
        out.setF(static_cast<size_t>((b * S + i) * E + c), acc[c] / sum);
    }
  }
  return true;
}

} // namespace tsl
