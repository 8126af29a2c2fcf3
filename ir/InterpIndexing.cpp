// Interpreter kernels of the ops that work along one axis by position:
// cumsum, cumprod, gather, sort, scatter, index_add, masked_scatter,
// index_select and topk. Written for clarity, not speed: the oracle the CPU
// and GPU lowerings are compared with.
#include "ir/Interpreter.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace tsl {

AxisSplit splitAt(const std::vector<int64_t> &shape, size_t axis) {
  AxisSplit s;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i < axis)
      s.outer *= shape[i];
    else if (i == axis)
      s.n = shape[i];
    else
      s.inner *= shape[i];
  }
  return s;
}

namespace {

/// Row-major strides of \p shape.
std::vector<int64_t> rowMajorStrides(const std::vector<int64_t> &shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;)
    s[d - 1] = s[d] * shape[d];
  return s;
}

/// Advances multi-index \p pos over \p shape in row-major order.
void nextPosition(std::vector<int64_t> &pos,
                  const std::vector<int64_t> &shape) {
  for (size_t d = pos.size(); d-- > 0;) {
    if (++pos[d] < shape[d])
      return;
    pos[d] = 0;
  }
}

bool outOfBounds(KernelContext &ctx, int64_t v, size_t axis, int64_t n) {
  return ctx.fail("index " + std::to_string(v) + " is out of bounds for axis " +
                  std::to_string(axis) + " of size " + std::to_string(n));
}

} // namespace

bool scanKernel(KernelContext &ctx) {
  const Tensor &x = *ctx.in[0];
  size_t axis = static_cast<size_t>(ctx.op.intAttr("axis"));
  if (!ctx.allocate(0, x.shape()))
    return false;
  Tensor &out = ctx.out[0];
  bool sum = ctx.op.code == OpCode::Cumsum;
  bool reverse = ctx.op.boolAttr("reverse");
  bool intMath = !isFloat(x.dtype());
  AxisSplit s = splitAt(x.shape(), axis);
  for (int64_t b = 0; b < s.outer; ++b)
    for (int64_t k = 0; k < s.inner; ++k) {
      double accF = sum ? 0 : 1;
      uint64_t accI = sum ? 0 : 1; // wraps like the element type
      for (int64_t step = 0; step < s.n; ++step) {
        int64_t j = reverse ? s.n - 1 - step : step;
        size_t at = static_cast<size_t>((b * s.n + j) * s.inner + k);
        if (intMath) {
          uint64_t v = static_cast<uint64_t>(x.getI(at));
          accI = sum ? accI + v : accI * v;
          out.setI(at, static_cast<int64_t>(accI));
        } else {
          accF = sum ? accF + x.getF(at) : accF * x.getF(at);
          out.setF(at, accF);
        }
      }
    }
  return true;
}

bool gatherKernel(KernelContext &ctx) {
  const Tensor &x = *ctx.in[0], &idx = *ctx.in[1];
  size_t axis = static_cast<size_t>(ctx.op.intAttr("axis"));
  int64_t n = x.shape()[axis];
  if (!ctx.allocate(0, idx.shape()))
    return false;
  std::vector<int64_t> strides = rowMajorStrides(x.shape());
  std::vector<int64_t> pos(x.rank(), 0); // the multi-index of element p
  for (size_t p = 0; p < idx.numel(); ++p, nextPosition(pos, idx.shape())) {
    int64_t v = idx.getI(p);
    if (v < 0 || v >= n)
      return outOfBounds(ctx, v, axis, n);
    int64_t at = 0;
    for (size_t d = 0; d < pos.size(); ++d)
      at += (d == axis ? v : pos[d]) * strides[d];
    ctx.out[0].copyElement(p, x, static_cast<size_t>(at));
  }
  return true;
}

bool scatterKernel(KernelContext &ctx) {
  const Tensor &x = *ctx.in[0], &idx = *ctx.in[1], &src = *ctx.in[2];
  size_t axis = static_cast<size_t>(ctx.op.intAttr("axis"));
  bool add = ctx.op.boolAttr("add");
  int64_t n = x.shape()[axis];
  if (!ctx.allocate(0, x.shape()))
    return false;
  Tensor &out = ctx.out[0];
  for (size_t i = 0; i < x.numel(); ++i)
    out.copyElement(i, x, i);
  std::vector<int64_t> xs = rowMajorStrides(x.shape()),
                       ss = rowMajorStrides(src.shape());
  std::vector<int64_t> pos(idx.rank(), 0);
  for (size_t p = 0; p < idx.numel(); ++p, nextPosition(pos, idx.shape())) {
    int64_t v = idx.getI(p);
    if (v < 0 || v >= n)
      return outOfBounds(ctx, v, axis, n);
    int64_t at = 0, from = 0;
    for (size_t d = 0; d < pos.size(); ++d) {
      at += (d == axis ? v : pos[d]) * xs[d];
      from += pos[d] * ss[d];
    }
    size_t o = static_cast<size_t>(at), s = static_cast<size_t>(from);
    if (!add)
      out.copyElement(o, src, s);
    else if (isFloat(x.dtype()))
      out.setF(o, out.getF(o) + src.getF(s));
    else
      out.setI(o, static_cast<int64_t>(static_cast<uint64_t>(out.getI(o)) +
                                       static_cast<uint64_t>(src.getI(s))));
  }
  return true;
}

bool indexAddKernel(KernelContext &ctx) {
  const Tensor &x = *ctx.in[0], &idx = *ctx.in[1], &src = *ctx.in[2];
  size_t axis = static_cast<size_t>(ctx.op.intAttr("axis"));
  if (!ctx.allocate(0, x.shape()))
    return false;
  Tensor &out = ctx.out[0];
  for (size_t i = 0; i < x.numel(); ++i)
    out.copyElement(i, x, i);
  AxisSplit s = splitAt(x.shape(), axis);
  int64_t len = static_cast<int64_t>(idx.numel());
  for (int64_t j = 0; j < len; ++j) { // every index, even with no elements
    int64_t v = idx.getI(static_cast<size_t>(j));
    if (v < 0 || v >= s.n)
      return outOfBounds(ctx, v, axis, s.n);
  }
  for (int64_t b = 0; b < s.outer; ++b)
    for (int64_t j = 0; j < len; ++j)
      for (int64_t k = 0; k < s.inner; ++k) {
        int64_t v = idx.getI(static_cast<size_t>(j));
        size_t o = static_cast<size_t>((b * s.n + v) * s.inner + k),
               from = static_cast<size_t>((b * len + j) * s.inner + k);
        if (isFloat(x.dtype()))
          out.setF(o, out.getF(o) + src.getF(from));
        else
          out.setI(o,
                   static_cast<int64_t>(static_cast<uint64_t>(out.getI(o)) +
                                        static_cast<uint64_t>(src.getI(from))));
      }
  return true;
}

bool maskedScatterKernel(KernelContext &ctx) {
  const Tensor &x = *ctx.in[0], &m = *ctx.in[1], &src = *ctx.in[2];
  if (x.shape() != m.shape())
    return ctx.fail("mask shape " + m.typeString() + " differs from " +
                    x.typeString());
  if (!ctx.allocate(0, x.shape()))
    return false;
  size_t next = 0, count = 0;
  for (size_t i = 0; i < m.numel(); ++i)
    count += m.getI(i) != 0;
  if (count > src.numel())
    return ctx.fail("the mask selects " + std::to_string(count) +
                    " elements but the source has " +
                    std::to_string(src.numel()));
  for (size_t i = 0; i < x.numel(); ++i)
    if (m.getI(i))
      ctx.out[0].copyElement(i, src, next++);
    else
      ctx.out[0].copyElement(i, x, i);
  return true;
}

bool sortKernel(KernelContext &ctx) {
  const Tensor &x = *ctx.in[0];
  size_t axis = static_cast<size_t>(ctx.op.intAttr("axis"));
  bool descending = ctx.op.boolAttr("descending");
  if (!ctx.allocate(0, x.shape()) || !ctx.allocate(1, x.shape()))
    return false;
  bool intMath = !isFloat(x.dtype());
  // a < b in value, NaN above everything (equal NaNs are ties).
  auto less = [&](size_t a, size_t b) {
    if (intMath)
      return x.getI(a) < x.getI(b);
    double u = x.getF(a), v = x.getF(b);
    if (std::isnan(u))
      return false;
    return std::isnan(v) || u < v;
  };
  AxisSplit s = splitAt(x.shape(), axis);
  std::vector<int64_t> order(static_cast<size_t>(s.n));
  for (int64_t b = 0; b < s.outer; ++b)
    for (int64_t k = 0; k < s.inner; ++k) {
      auto at = [&](int64_t j) {
        return static_cast<size_t>((b * s.n + j) * s.inner + k);
      };
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(), [&](int64_t i, int64_t j) {
        return descending ? less(at(j), at(i)) : less(at(i), at(j));
      });
      for (int64_t j = 0; j < s.n; ++j) {
        ctx.out[0].copyElement(at(j), x, at(order[j]));
        ctx.out[1].setI(at(j), order[j]);
      }
    }
  return true;
}

bool indexSelectKernel(KernelContext &ctx) {
  const Tensor &x = *ctx.in[0], &idx = *ctx.in[1];
  size_t axis = static_cast<size_t>(ctx.op.intAttr("axis"));
  std::vector<int64_t> shape = x.shape();
  shape[axis] = static_cast<int64_t>(idx.numel());
  int64_t n = x.shape()[axis];
  for (size_t j = 0; j < idx.numel(); ++j) {
    int64_t v = idx.getI(j);
    if (v < 0 || v >= n)
      return ctx.fail("index " + std::to_string(v) +
                      " is out of bounds for axis " + std::to_string(axis) +
                      " of size " + std::to_string(n));
  }
  if (!ctx.allocate(0, shape))
    return false;
  const AxisSplit split = splitAt(shape, axis);
  const int64_t outer = split.outer, inner = split.inner;
  size_t o = 0;
  for (int64_t b = 0; b < outer; ++b)
    for (size_t j = 0; j < idx.numel(); ++j)
      for (int64_t k = 0; k < inner; ++k)
        ctx.out[0].copyElement(
            o++, x, static_cast<size_t>((b * n + idx.getI(j)) * inner + k));
  return true;
}

bool topkKernel(KernelContext &ctx) {
  const Tensor &x = *ctx.in[0];
  int64_t k;
  if (!ctx.eval(ctx.op.exprAttr("k"), k))
    return false;
  int64_t n = x.shape().back();
  if (k < 0 || k > n)
    return ctx.fail("k = " + std::to_string(k) +
                    " is out of range for a last axis of size " +
                    std::to_string(n));
  std::vector<int64_t> shape = x.shape();
  shape.back() = k;
  if (!ctx.allocate(0, shape) || !ctx.allocate(1, shape))
    return false;
  int64_t rows = n == 0 ? 0 : static_cast<int64_t>(x.numel()) / n;
  bool intMath = !isFloat(x.dtype());
  std::vector<int64_t> order(n);
  for (int64_t r = 0; r < rows; ++r) {
    std::iota(order.begin(), order.end(), 0);
    size_t base = static_cast<size_t>(r * n);
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
      if (intMath)
        return x.getI(base + a) > x.getI(base + b);
      double u = x.getF(base + a), v = x.getF(base + b);
      if (std::isnan(u))
        return !std::isnan(v); // NaN counts as the largest, like PyTorch
      if (std::isnan(v))
        return false;
      return u > v;
    });
    for (int64_t j = 0; j < k; ++j) {
      ctx.out[0].copyElement(static_cast<size_t>(r * k + j), x,
                             base + order[j]);
      ctx.out[1].setI(static_cast<size_t>(r * k + j), order[j]);
    }
  }
  return true;
}

} // namespace tsl
