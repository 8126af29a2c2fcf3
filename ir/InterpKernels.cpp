// Interpreter kernels, one per op of the op table, and the table (indexed by
// OpCode) that runKernel dispatches through. Elementwise ops share one kernel
// per category and differ by their ScalarMath entry. Floats compute in double
// and round once on store; integers compute in int64 and wrap on store.
#include "ir/Interpreter.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <optional>

namespace tsl {

namespace {

std::vector<int64_t> stridesOf(const std::vector<int64_t> &shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;)
    s[i - 1] = s[i] * shape[i];
  return s;
}

/// Strides of \p in broadcast to \p out (0 on broadcast axes).
std::vector<int64_t> broadcastStrides(const std::vector<int64_t> &in,
                                      const std::vector<int64_t> &out) {
  std::vector<int64_t> s(out.size(), 0);
  std::vector<int64_t> own = stridesOf(in);
  size_t offset = out.size() - in.size();
  for (size_t i = 0; i < in.size(); ++i)
    s[offset + i] = in[i] == 1 && out[offset + i] != 1 ? 0 : own[i];
  return s;
}

/// Iterates a multi-index over a shape, tracking linear offsets into
/// several strided operands.
struct MultiIndex {
  std::vector<int64_t> shape, idx;
  std::vector<std::vector<int64_t>> strides;
  std::vector<int64_t> offsets;
  MultiIndex(std::vector<int64_t> shape,
             std::vector<std::vector<int64_t>> strides)
      : shape(std::move(shape)), idx(this->shape.size(), 0),
        strides(std::move(strides)), offsets(this->strides.size(), 0) {}
  void next() {
    for (size_t a = shape.size(); a-- > 0;) {
      ++idx[a];
      for (size_t k = 0; k < strides.size(); ++k)
        offsets[k] += strides[k][a];
      if (idx[a] < shape[a])
        return;
      for (size_t k = 0; k < strides.size(); ++k)
        offsets[k] -= strides[k][a] * shape[a];
      idx[a] = 0;
    }
  }
};

std::vector<int64_t> broadcastShape(const std::vector<const Tensor *> &in) {
  size_t rank = 0;
  for (const Tensor *t : in)
    rank = std::max(rank, t->rank());
  std::vector<int64_t> out(rank, 1);
  for (const Tensor *t : in) {
    size_t off = rank - t->rank();
    for (size_t i = 0; i < t->rank(); ++i)
      if (t->shape()[i] != 1)
        out[off + i] = t->shape()[i];
  }
  return out;
}

bool checkBroadcast(KernelContext &ctx, const std::vector<int64_t> &out) {
  for (const Tensor *t : ctx.in) {
    size_t off = out.size() - t->rank();
    for (size_t i = 0; i < t->rank(); ++i)
      if (t->shape()[i] != 1 && t->shape()[i] != out[off + i])
        return ctx.fail("cannot broadcast " + t->typeString());
  }
  return true;
}

double gelu(double x) { return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); }

int64_t floorDivInt(int64_t a, int64_t b) {
  if (b == -1)
    return static_cast<int64_t>(0 - static_cast<uint64_t>(a));
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0)))
    --q;
  return q;
}

int64_t wrapNeg(int64_t x) {
  return static_cast<int64_t>(0 - static_cast<uint64_t>(x));
}

/// The scalar math of one elementwise op: integers in int64 (wrapping),
/// floats in double. An entry is null where the op's DTypeRule rules out
/// that kind of element (checked where the kernel table is built).
/// (std::optional, not a null pointer: GCC does not fold a function's
/// address against null in a constant expression under -fsanitize.)
struct ScalarMath {
  std::optional<int64_t (*)(int64_t, int64_t)> binaryInt = std::nullopt;
  std::optional<double (*)(double, double)> binaryFloat = std::nullopt;
  std::optional<int64_t (*)(int64_t)> unaryInt = std::nullopt;
  std::optional<double (*)(double)> unaryFloat = std::nullopt;
  /// Integer math fails on a zero right operand ("integer division by
  /// zero").
  bool intZeroDivisorFails = false;
};

using I = int64_t;
using U = uint64_t;

/// The math of op C; one specialization per elementwise op below.
template <OpCode C> constexpr ScalarMath kMath{};

template <>
constexpr ScalarMath kMath<OpCode::Add> = {
    .binaryInt = [](I x, I y) { return static_cast<I>(U(x) + U(y)); },
    .binaryFloat = [](double x, double y) { return x + y; }};
template <>
constexpr ScalarMath kMath<OpCode::Sub> = {
    .binaryInt = [](I x, I y) { return static_cast<I>(U(x) - U(y)); },
    .binaryFloat = [](double x, double y) { return x - y; }};
template <>
constexpr ScalarMath kMath<OpCode::Mul> = {
    .binaryInt = [](I x, I y) { return static_cast<I>(U(x) * U(y)); },
    .binaryFloat = [](double x, double y) { return x * y; }};
template <>
constexpr ScalarMath kMath<OpCode::Div> = {
    .binaryInt = floorDivInt,
    .binaryFloat = [](double x, double y) { return x / y; },
    .intZeroDivisorFails = true};
template <>
constexpr ScalarMath kMath<OpCode::Pow> = {
    .binaryFloat = [](double x, double y) { return std::pow(x, y); }};
// NaN propagates through max and min.
template <>
constexpr ScalarMath kMath<OpCode::Maximum> = {
    .binaryInt = [](I x, I y) { return std::max(x, y); },
    .binaryFloat =
        [](double x, double y) {
          return (std::isnan(x) || std::isnan(y)) ? NAN : std::max(x, y);
        }};
template <>
constexpr ScalarMath kMath<OpCode::Minimum> = {
    .binaryInt = [](I x, I y) { return std::min(x, y); },
    .binaryFloat =
        [](double x, double y) {
          return (std::isnan(x) || std::isnan(y)) ? NAN : std::min(x, y);
        }};
template <>
constexpr ScalarMath kMath<OpCode::Lt> = {
    .binaryInt = [](I x, I y) -> I { return x < y; },
    .binaryFloat = [](double x, double y) -> double { return x < y; }};
template <>
constexpr ScalarMath kMath<OpCode::Le> = {
    .binaryInt = [](I x, I y) -> I { return x <= y; },
    .binaryFloat = [](double x, double y) -> double { return x <= y; }};
template <>
constexpr ScalarMath kMath<OpCode::Gt> = {
    .binaryInt = [](I x, I y) -> I { return x > y; },
    .binaryFloat = [](double x, double y) -> double { return x > y; }};
template <>
constexpr ScalarMath kMath<OpCode::Ge> = {
    .binaryInt = [](I x, I y) -> I { return x >= y; },
    .binaryFloat = [](double x, double y) -> double { return x >= y; }};
template <>
constexpr ScalarMath kMath<OpCode::Eq> = {
    .binaryInt = [](I x, I y) -> I { return x == y; },
    .binaryFloat = [](double x, double y) -> double { return x == y; }};
template <>
constexpr ScalarMath kMath<OpCode::Ne> = {
    .binaryInt = [](I x, I y) -> I { return x != y; },
    .binaryFloat = [](double x, double y) -> double { return x != y; }};
// Bitwise; on bools (0 or 1) the logical and, or, xor.
template <>
constexpr ScalarMath kMath<OpCode::And> = {
    .binaryInt = [](I x, I y) { return x & y; }};
template <>
constexpr ScalarMath kMath<OpCode::Or> = {
    .binaryInt = [](I x, I y) { return x | y; }};
template <>
constexpr ScalarMath kMath<OpCode::Xor> = {
    .binaryInt = [](I x, I y) { return x ^ y; }};

template <>
constexpr ScalarMath kMath<OpCode::Neg> = {
    .unaryInt = wrapNeg, .unaryFloat = [](double x) { return -x; }};
template <>
constexpr ScalarMath kMath<OpCode::Not> = {
    .unaryInt = [](I x) -> I { return !x; }};
template <>
constexpr ScalarMath kMath<OpCode::Exp> = {
    .unaryFloat = [](double x) { return std::exp(x); }};
template <>
constexpr ScalarMath kMath<OpCode::Log> = {
    .unaryFloat = [](double x) { return std::log(x); }};
template <>
constexpr ScalarMath kMath<OpCode::Sqrt> = {
    .unaryFloat = [](double x) { return std::sqrt(x); }};
template <>
constexpr ScalarMath kMath<OpCode::Rsqrt> = {
    .unaryFloat = [](double x) { return 1.0 / std::sqrt(x); }};
template <>
constexpr ScalarMath kMath<OpCode::Tanh> = {
    .unaryFloat = [](double x) { return std::tanh(x); }};
template <>
constexpr ScalarMath kMath<OpCode::Sigmoid> = {
    .unaryFloat = [](double x) { return 1.0 / (1.0 + std::exp(-x)); }};
template <>
constexpr ScalarMath kMath<OpCode::Relu> = {
    .unaryInt = [](I x) { return std::max<I>(x, 0); },
    .unaryFloat =
        [](double x) { return std::isnan(x) ? x : std::max(x, 0.0); }};
template <> constexpr ScalarMath kMath<OpCode::Gelu> = {.unaryFloat = gelu};
template <>
constexpr ScalarMath kMath<OpCode::Erf> = {
    .unaryFloat = [](double x) { return std::erf(x); }};
template <>
constexpr ScalarMath kMath<OpCode::Abs> = {
    .unaryInt = [](I x) { return x < 0 ? wrapNeg(x) : x; },
    .unaryFloat = [](double x) { return std::fabs(x); }};
template <>
constexpr ScalarMath kMath<OpCode::Sin> = {
    .unaryFloat = [](double x) { return std::sin(x); }};
template <>
constexpr ScalarMath kMath<OpCode::Cos> = {
    .unaryFloat = [](double x) { return std::cos(x); }};
template <>
constexpr ScalarMath kMath<OpCode::Floor> = {
    .unaryFloat = [](double x) { return std::floor(x); }};
template <>
constexpr ScalarMath kMath<OpCode::Ceil> = {
    .unaryFloat = [](double x) { return std::ceil(x); }};
template <>
constexpr ScalarMath kMath<OpCode::Round> = {
    .unaryFloat = [](double x) { // halves to even, whatever the FP mode
      double r = std::round(x);  // halves away from zero
      return std::fabs(x - std::trunc(x)) == 0.5 ? 2.0 * std::round(x / 2.0)
                                                 : r;
    }};

/// The math of every op, indexed by OpCode.
constexpr ScalarMath kMathTable[] = {
#define TSL_OP(Id, ...) kMath<OpCode::Id>,
#include "ir/Ops.def"
};

const ScalarMath &mathOf(OpCode code) {
  return kMathTable[static_cast<size_t>(code)];
}

/// Elementwise binary ops: broadcasts the operands, then computes each
/// element with the op's ScalarMath.
bool binaryMath(KernelContext &ctx) {
  std::vector<int64_t> shape = broadcastShape(ctx.in);
  if (!checkBroadcast(ctx, shape) || !ctx.allocate(0, shape))
    return false;
  const Tensor &a = *ctx.in[0], &b = *ctx.in[1];
  MultiIndex it(shape, {broadcastStrides(a.shape(), shape),
                        broadcastStrides(b.shape(), shape)});
  Tensor &out = ctx.out[0];
  const ScalarMath &m = mathOf(ctx.op.code);
  size_t n = out.numel();
  if (isFloat(a.dtype())) {
    if (!m.binaryFloat)
      return ctx.fail("unsupported float op");
    auto f = *m.binaryFloat;
    for (size_t i = 0; i < n; ++i, it.next())
      out.setF(i, f(a.getF(static_cast<size_t>(it.offsets[0])),
                    b.getF(static_cast<size_t>(it.offsets[1]))));
    return true;
  }
  if (!m.binaryInt)
    return ctx.fail("unsupported integer op");
  auto f = *m.binaryInt;
  for (size_t i = 0; i < n; ++i, it.next()) {
    int64_t y = b.getI(static_cast<size_t>(it.offsets[1]));
    if (m.intZeroDivisorFails && y == 0)
      return ctx.fail("integer division by zero");
    out.setI(i, f(a.getI(static_cast<size_t>(it.offsets[0])), y));
  }
  return true;
}

/// Elementwise unary ops but cast: each element by the op's ScalarMath.
bool unaryMath(KernelContext &ctx) {
  const Tensor &a = *ctx.in[0];
  if (!ctx.allocate(0, a.shape()))
    return false;
  Tensor &out = ctx.out[0];
  const ScalarMath &m = mathOf(ctx.op.code);
  size_t n = out.numel();
  if (isFloat(a.dtype())) {
    if (!m.unaryFloat)
      return ctx.fail("unsupported op");
    auto f = *m.unaryFloat;
    for (size_t i = 0; i < n; ++i)
      out.setF(i, f(a.getF(i)));
    return true;
  }
  if (!m.unaryInt)
    return ctx.fail("unsupported integer op");
  auto f = *m.unaryInt;
  for (size_t i = 0; i < n; ++i)
    out.setI(i, f(a.getI(i)));
  return true;
}

/// cast: through double when either side is a float or the result is bool,
/// else through int64.
bool castKernel(KernelContext &ctx) {
  const Tensor &a = *ctx.in[0];
  if (!ctx.allocate(0, a.shape()))
    return false;
  Tensor &out = ctx.out[0];
  bool viaDouble =
      isFloat(out.dtype()) || out.dtype() == DType::Bool || isFloat(a.dtype());
  for (size_t i = 0; i < out.numel(); ++i) {
    if (viaDouble)
      out.setF(i, a.getF(i));
    else
      out.setI(i, a.getI(i));
  }
  return true;
}

/// where(c, x, y): broadcasts the three operands and copies from x or y.
bool whereKernel(KernelContext &ctx) {
  std::vector<int64_t> shape = broadcastShape(ctx.in);
  if (!checkBroadcast(ctx, shape) || !ctx.allocate(0, shape))
    return false;
  std::vector<std::vector<int64_t>> strides;
  for (const Tensor *t : ctx.in)
    strides.push_back(broadcastStrides(t->shape(), shape));
  MultiIndex it(shape, strides);
  Tensor &out = ctx.out[0];
  const Tensor &c = *ctx.in[0], &x = *ctx.in[1], &y = *ctx.in[2];
  for (size_t i = 0; i < out.numel(); ++i, it.next()) {
    if (c.getI(static_cast<size_t>(it.offsets[0])))
      out.copyElement(i, x, static_cast<size_t>(it.offsets[1]));
    else
      out.copyElement(i, y, static_cast<size_t>(it.offsets[2]));
  }
  return true;
}

/// What one reduction computes: a sum (mean: divided by the count), or the
/// first extreme value (its position: arg).
struct ReduceSpec {
  bool valid = false;
  bool mean = false;
  bool extreme = false;
  bool isMax = false;
  bool arg = false;
};
template <OpCode C> constexpr ReduceSpec kReduce{};
template <> constexpr ReduceSpec kReduce<OpCode::ReduceSum> = {.valid = true};
template <>
constexpr ReduceSpec kReduce<OpCode::ReduceMean> = {.valid = true,
                                                    .mean = true};
template <>
constexpr ReduceSpec kReduce<OpCode::ReduceMax> = {
    .valid = true, .extreme = true, .isMax = true};
template <>
constexpr ReduceSpec kReduce<OpCode::ReduceMin> = {.valid = true,
                                                   .extreme = true};
template <>
constexpr ReduceSpec kReduce<OpCode::Argmax> = {
    .valid = true, .extreme = true, .isMax = true, .arg = true};
template <>
constexpr ReduceSpec kReduce<OpCode::Argmin> = {
    .valid = true, .extreme = true, .arg = true};

/// Every op's ReduceSpec, indexed by OpCode.
constexpr ReduceSpec kReduceTable[] = {
#define TSL_OP(Id, ...) kReduce<OpCode::Id>,
#include "ir/Ops.def"
};

bool reduce(KernelContext &ctx) {
  const Tensor &x = *ctx.in[0];
  const auto &axesAttr = ctx.op.intsAttr("axes");
  std::vector<bool> red(x.rank(), axesAttr.empty());
  for (int64_t a : axesAttr)
    red[a] = true;
  std::vector<int64_t> keepShape;
  for (size_t i = 0; i < x.rank(); ++i)
    keepShape.push_back(red[i] ? 1 : x.shape()[i]);
  std::vector<int64_t> outShape;
  for (size_t i = 0; i < x.rank(); ++i)
    if (!red[i] || ctx.op.boolAttr("keepdim"))
      outShape.push_back(keepShape[i]);
  if (!ctx.allocate(0, outShape))
    return false;
  Tensor &out = ctx.out[0];
  size_t n = out.numel();
  int64_t count = 1;
  for (size_t i = 0; i < x.rank(); ++i)
    if (red[i])
      count *= x.shape()[i];
  const ReduceSpec &spec = kReduceTable[static_cast<size_t>(ctx.op.code)];
  if (!spec.valid)
    return ctx.fail("unsupported reduction");
  if (spec.extreme && count == 0)
    return ctx.fail("reduction over an empty axis");
  bool intMath = !isFloat(x.dtype());
  std::vector<double> accF(n, 0);
  std::vector<int64_t> accI(n, 0);
  std::vector<int64_t> arg(n, 0);
  std::vector<bool> seen(n, false);
  std::vector<int64_t> outStrides = broadcastStrides(keepShape, x.shape());
  // Position along the reduced axes (argmax, argmin).
  std::vector<int64_t> redStrides(x.rank(), 0);
  int64_t s = 1;
  for (size_t i = x.rank(); i-- > 0;)
    if (red[i]) {
      redStrides[i] = s;
      s *= x.shape()[i];
    }
  MultiIndex it(x.shape(), {outStrides, redStrides});
  for (size_t i = 0; i < x.numel(); ++i, it.next()) {
    size_t o = static_cast<size_t>(it.offsets[0]);
    if (!spec.extreme) {
      if (intMath)
        accI[o] = static_cast<int64_t>(static_cast<uint64_t>(accI[o]) +
                                       static_cast<uint64_t>(x.getI(i)));
      else
        accF[o] += x.getF(i);
      continue;
    }
    // The first extreme value; a NaN, once seen, wins (min and max).
    bool isMax = spec.isMax;
    if (intMath) {
      int64_t v = x.getI(i);
      if (!seen[o] || (isMax ? v > accI[o] : v < accI[o])) {
        accI[o] = v;
        arg[o] = it.offsets[1];
      }
    } else {
      double v = x.getF(i);
      bool curNan = seen[o] && std::isnan(accF[o]);
      if (!seen[o] ||
          (!curNan && (std::isnan(v) || (isMax ? v > accF[o] : v < accF[o])))) {
        accF[o] = v;
        arg[o] = it.offsets[1];
      }
    }
    seen[o] = true;
  }
  for (size_t o = 0; o < n; ++o) {
    if (spec.arg)
      out.setI(o, arg[o]);
    else if (spec.mean)
      out.setF(o, accF[o] / static_cast<double>(count));
    else if (intMath)
      out.setI(o, accI[o]);
    else
      out.setF(o, accF[o]);
  }
  return true;
}

bool matmul(KernelContext &ctx) {
  Tensor a = *ctx.in[0], b = *ctx.in[1];
  std::vector<int64_t> as = a.shape(), bs = b.shape();
  bool aVec = as.size() == 1, bVec = bs.size() == 1;
  if (aVec)
    as.insert(as.begin(), 1);
  if (bVec)
    bs.push_back(1);
  int64_t m = as[as.size() - 2], k = as.back(), k2 = bs[bs.size() - 2],
          n = bs.back();
  if (k != k2)
    return ctx.fail("inner dimensions differ: " + std::to_string(k) + " vs " +
                    std::to_string(k2));
  std::vector<int64_t> ab(as.begin(), as.end() - 2),
      bb(bs.begin(), bs.end() - 2);
  size_t rank = std::max(ab.size(), bb.size());
  std::vector<int64_t> batch(rank, 1);
  for (size_t i = 0; i < ab.size(); ++i)
    batch[rank - ab.size() + i] = ab[i];
  for (size_t i = 0; i < bb.size(); ++i) {
    int64_t &d = batch[rank - bb.size() + i];
    if (bb[i] != 1 && d != 1 && d != bb[i])
      return ctx.fail("batch dimensions do not broadcast");
    if (bb[i] != 1)
      d = bb[i];
  }
  std::vector<int64_t> outShape = batch;
  if (!aVec)
    outShape.push_back(m);
  if (!bVec)
    outShape.push_back(n);
  if (!ctx.allocate(0, outShape))
    return false;
  Tensor &out = ctx.out[0];
  std::vector<int64_t> sa = broadcastStrides(ab, batch),
                       sb = broadcastStrides(bb, batch);
  MultiIndex it(batch, {sa, sb});
  int64_t batches = 1;
  for (int64_t d : batch)
    batches *= d;
  bool intMath = !isFloat(a.dtype());
  size_t o = 0;
  for (int64_t bi = 0; bi < batches; ++bi, it.next()) {
    size_t baseA = static_cast<size_t>(it.offsets[0] * m * k);
    size_t baseB = static_cast<size_t>(it.offsets[1] * k * n);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j, ++o) {
        if (intMath) {
          uint64_t acc = 0;
          for (int64_t p = 0; p < k; ++p)
            acc += static_cast<uint64_t>(a.getI(baseA + i * k + p)) *
                   static_cast<uint64_t>(b.getI(baseB + p * n + j));
          out.setI(o, static_cast<int64_t>(acc));
        } else {
          double acc = 0;
          for (int64_t p = 0; p < k; ++p)
            acc += a.getF(baseA + i * k + p) * b.getF(baseB + p * n + j);
          out.setF(o, acc);
        }
      }
  }
  return true;
}

bool evalList(KernelContext &ctx, const std::vector<SymExpr> &in,
              std::vector<int64_t> &out) {
  out.clear();
  for (const SymExpr &e : in) {
    int64_t v;
    if (!ctx.eval(e, v))
      return false;
    out.push_back(v);
  }
  return true;
}

bool copyKernel(KernelContext &ctx) {
  // Reshape: same elements in order, new shape.
  const Tensor &x = *ctx.in[0];
  if (!ctx.allocate(0, ctx.outShapes[0]))
    return false;
  if (ctx.out[0].numel() != x.numel())
    return ctx.fail("element count changes from " + std::to_string(x.numel()) +
                    " to " + std::to_string(ctx.out[0].numel()));
  if (x.byteSize())
    std::copy(x.raw(), x.raw() + x.byteSize(), ctx.out[0].raw());
  return true;
}

bool permute(KernelContext &ctx) {
  const Tensor &x = *ctx.in[0];
  const auto &perm = ctx.op.intsAttr("perm");
  std::vector<int64_t> shape, strides;
  std::vector<int64_t> own = stridesOf(x.shape());
  for (int64_t p : perm) {
    shape.push_back(x.shape()[p]);
    strides.push_back(own[p]);
  }
  if (!ctx.allocate(0, shape))
    return false;
  MultiIndex it(shape, {strides});
  for (size_t i = 0; i < ctx.out[0].numel(); ++i, it.next())
    ctx.out[0].copyElement(i, x, static_cast<size_t>(it.offsets[0]));
  return true;
}

bool expand(KernelContext &ctx) {
  const Tensor &x = *ctx.in[0];
  const std::vector<int64_t> &shape = ctx.outShapes[0];
  if (!ctx.allocate(0, shape))
    return false;
  MultiIndex it(shape, {broadcastStrides(x.shape(), shape)});
  for (size_t i = 0; i < ctx.out[0].numel(); ++i, it.next())
    ctx.out[0].copyElement(i, x, static_cast<size_t>(it.offsets[0]));
  return true;
}

bool concat(KernelContext &ctx) {
  size_t axis = static_cast<size_t>(ctx.op.intAttr("axis"));
  std::vector<int64_t> shape = ctx.in[0]->shape();
  shape[axis] = 0;
  for (const Tensor *t : ctx.in)
    shape[axis] += t->shape()[axis];
  if (!ctx.allocate(0, shape))
    return false;
  const AxisSplit split = splitAt(shape, axis);
  const int64_t outer = split.outer, inner = split.inner;
  size_t o = 0;
  for (int64_t b = 0; b < outer; ++b)
    for (const Tensor *t : ctx.in) {
      int64_t chunk = t->shape()[axis] * inner;
      for (int64_t j = 0; j < chunk; ++j)
        ctx.out[0].copyElement(o++, *t, static_cast<size_t>(b * chunk + j));
    }
  return true;
}

bool slice(KernelContext &ctx) {
  const Tensor &x = *ctx.in[0];
  std::vector<int64_t> starts, sizes;
  if (!evalList(ctx, ctx.op.exprsAttr("starts"), starts) ||
      !evalList(ctx, ctx.op.exprsAttr("sizes"), sizes))
    return false;
  std::vector<int64_t> steps = ctx.op.intsAttr("steps");
  steps.resize(x.rank(), 1);
  for (size_t i = 0; i < x.rank(); ++i) {
    // One past the last element read (the start when none is).
    int64_t end =
        sizes[i] > 0 ? starts[i] + (sizes[i] - 1) * steps[i] + 1 : starts[i];
    if (starts[i] < 0 || sizes[i] < 0 || steps[i] < 1 || end > x.shape()[i])
      return ctx.fail("slice [" + std::to_string(starts[i]) + ", " +
                      std::to_string(end) + ") is out of bounds for axis " +
                      std::to_string(i) + " of size " +
                      std::to_string(x.shape()[i]));
  }
  if (!ctx.allocate(0, sizes))
    return false;
  std::vector<int64_t> own = stridesOf(x.shape());
  int64_t base = 0;
  for (size_t i = 0; i < x.rank(); ++i) {
    base += starts[i] * own[i];
    own[i] *= steps[i];
  }
  MultiIndex it(sizes, {own});
  for (size_t i = 0; i < ctx.out[0].numel(); ++i, it.next())
    ctx.out[0].copyElement(i, x, static_cast<size_t>(base + it.offsets[0]));
  return true;
}

bool updateSlice(KernelContext &ctx) {
  const Tensor &x = *ctx.in[0], &v = *ctx.in[1];
  std::vector<int64_t> starts;
  if (!evalList(ctx, ctx.op.exprsAttr("starts"), starts))
    return false;
  for (size_t i = 0; i < x.rank(); ++i)
    if (starts[i] < 0 || starts[i] + v.shape()[i] > x.shape()[i])
      return ctx.fail("update_slice block [" + std::to_string(starts[i]) +
                      ", " + std::to_string(starts[i] + v.shape()[i]) +
                      ") is out of bounds for axis " + std::to_string(i) +
                      " of size " + std::to_string(x.shape()[i]));
  if (!ctx.allocate(0, x.shape()))
    return false;
  Tensor &out = ctx.out[0];
  for (size_t i = 0; i < x.numel(); ++i)
    out.copyElement(i, x, i);
  std::vector<int64_t> os = stridesOf(x.shape());
  int64_t base = 0;
  for (size_t i = 0; i < x.rank(); ++i)
    base += starts[i] * os[i];
  MultiIndex it(v.shape(), {os});
  for (size_t i = 0; i < v.numel(); ++i, it.next())
    out.copyElement(static_cast<size_t>(base + it.offsets[0]), v, i);
  return true;
}

bool pad(KernelContext &ctx) {
  const Tensor &x = *ctx.in[0];
  std::vector<int64_t> lo, hi;
  if (!evalList(ctx, ctx.op.exprsAttr("lo"), lo) ||
      !evalList(ctx, ctx.op.exprsAttr("hi"), hi))
    return false;
  std::vector<int64_t> shape = x.shape();
  for (size_t i = 0; i < shape.size(); ++i) {
    if (lo[i] < 0 || hi[i] < 0)
      return ctx.fail("negative padding");
    shape[i] += lo[i] + hi[i];
  }
  if (!ctx.allocate(0, shape))
    return false;
  Tensor &out = ctx.out[0];
  Number value = ctx.op.numAttr("value");
  for (size_t i = 0; i < out.numel(); ++i) {
    if (value.isInt)
      out.setI(i, value.i);
    else
      out.setF(i, value.f);
  }
  std::vector<int64_t> os = stridesOf(shape);
  int64_t base = 0;
  for (size_t i = 0; i < shape.size(); ++i)
    base += lo[i] * os[i];
  MultiIndex it(x.shape(), {os});
  for (size_t i = 0; i < x.numel(); ++i, it.next())
    out.copyElement(static_cast<size_t>(base + it.offsets[0]), x, i);
  return true;
}

bool conv2d(KernelContext &ctx) {
  const Tensor &x = *ctx.in[0], &w = *ctx.in[1];
  const Tensor *bias = ctx.in.size() > 2 ? ctx.in[2] : nullptr;
  auto st = ctx.op.intsAttr("stride"), pd = ctx.op.intsAttr("padding");
  int64_t N = x.shape()[0], C = x.shape()[1], H = x.shape()[2],
          W = x.shape()[3];
  int64_t O = w.shape()[0], KH = w.shape()[2], KW = w.shape()[3];
  if (w.shape()[1] != C)
    return ctx.fail("channel mismatch");
  int64_t OH = (H + 2 * pd[0] - KH) / st[0] + 1,
          OW = (W + 2 * pd[1] - KW) / st[1] + 1;
  if (!ctx.allocate(0, {N, O, OH, OW}))
    return false;
  Tensor &out = ctx.out[0];
  size_t o = 0;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t oc = 0; oc < O; ++oc)
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow, ++o) {
          double acc = bias ? bias->getF(oc) : 0.0;
          for (int64_t c = 0; c < C; ++c)
            for (int64_t kh = 0; kh < KH; ++kh) {
              int64_t ih = oh * st[0] - pd[0] + kh;
              if (ih < 0 || ih >= H)
                continue;
              for (int64_t kw = 0; kw < KW; ++kw) {
                int64_t iw = ow * st[1] - pd[1] + kw;
                if (iw < 0 || iw >= W)
                  continue;
                acc += x.getF(((n * C + c) * H + ih) * W + iw) *
                       w.getF(((oc * C + c) * KH + kh) * KW + kw);
              }
            }
          out.setF(o, acc);
        }
  return true;
}

bool maxPool(KernelContext &ctx) {
  const Tensor &x = *ctx.in[0];
  auto k = ctx.op.intsAttr("kernel"), st = ctx.op.intsAttr("stride"),
       pd = ctx.op.intsAttr("padding");
  int64_t N = x.shape()[0], C = x.shape()[1], H = x.shape()[2],
          W = x.shape()[3];
  int64_t OH = (H + 2 * pd[0] - k[0]) / st[0] + 1,
          OW = (W + 2 * pd[1] - k[1]) / st[1] + 1;
  if (!ctx.allocate(0, {N, C, OH, OW}))
    return false;
  Tensor &out = ctx.out[0];
  size_t o = 0;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow, ++o) {
          double best = -INFINITY;
          bool any = false;
          for (int64_t kh = 0; kh < k[0]; ++kh)
            for (int64_t kw = 0; kw < k[1]; ++kw) {
              int64_t ih = oh * st[0] - pd[0] + kh,
                      iw = ow * st[1] - pd[1] + kw;
              if (ih < 0 || ih >= H || iw < 0 || iw >= W)
                continue;
              double v = x.getF(((n * C + c) * H + ih) * W + iw);
              if (!any || v > best || std::isnan(v))
                best = v;
              any = true;
            }
          out.setF(o, best);
        }
  return true;
}

bool nonzero(KernelContext &ctx) {
  const Tensor &x = *ctx.in[0];
  std::vector<size_t> hits;
  for (size_t i = 0; i < x.numel(); ++i)
    if (x.getF(i) != 0)
      hits.push_back(i);
  int64_t rank = static_cast<int64_t>(x.rank());
  if (!ctx.allocate(0, {static_cast<int64_t>(hits.size()), rank}))
    return false;
  std::vector<int64_t> strides = stridesOf(x.shape());
  for (size_t h = 0; h < hits.size(); ++h) {
    int64_t rem = static_cast<int64_t>(hits[h]);
    for (int64_t a = 0; a < rank; ++a) {
      ctx.out[0].setI(h * rank + a, rem / strides[a]);
      rem %= strides[a];
    }
  }
  return true;
}

bool maskedSelect(KernelContext &ctx) {
  const Tensor &x = *ctx.in[0], &m = *ctx.in[1];
  if (x.shape() != m.shape())
    return ctx.fail("mask shape " + m.typeString() + " differs from " +
                    x.typeString());
  std::vector<size_t> hits;
  for (size_t i = 0; i < m.numel(); ++i)
    if (m.getI(i))
      hits.push_back(i);
  if (!ctx.allocate(0, {static_cast<int64_t>(hits.size())}))
    return false;
  for (size_t h = 0; h < hits.size(); ++h)
    ctx.out[0].copyElement(h, x, hits[h]);
  return true;
}

bool unique(KernelContext &ctx) {
  const Tensor &x = *ctx.in[0];
  std::vector<size_t> order(x.numel());
  std::iota(order.begin(), order.end(), 0);
  bool intMath = !isFloat(x.dtype());
  auto less = [&](size_t a, size_t b) {
    if (intMath)
      return x.getI(a) < x.getI(b);
    double u = x.getF(a), v = x.getF(b);
    if (std::isnan(u))
      return false;
    if (std::isnan(v))
      return true;
    return u < v;
  };
  std::stable_sort(order.begin(), order.end(), less);
  std::vector<size_t> keep;
  for (size_t i = 0; i < order.size(); ++i)
    if (keep.empty() || less(keep.back(), order[i]))
      keep.push_back(order[i]);
  if (!ctx.allocate(0, {static_cast<int64_t>(keep.size())}))
    return false;
  for (size_t i = 0; i < keep.size(); ++i)
    ctx.out[0].copyElement(i, x, keep[i]);
  return true;
}

bool constantKernel(KernelContext &ctx) {
  if (!ctx.allocate(0, {}))
    return false;
  Number v = ctx.op.numAttr("value");
  if (v.isInt)
    ctx.out[0].setI(0, v.i);
  else
    ctx.out[0].setF(0, v.f);
  return true;
}

bool symScalarKernel(KernelContext &ctx) {
  int64_t v;
  if (!ctx.eval(ctx.op.exprAttr("expr"), v) || !ctx.allocate(0, {}))
    return false;
  ctx.out[0].setI(0, v);
  return true;
}

bool fullKernel(KernelContext &ctx) {
  std::vector<int64_t> shape;
  if (!evalList(ctx, ctx.op.exprsAttr("shape"), shape) ||
      !ctx.allocate(0, shape))
    return false;
  Number v = ctx.op.numAttr("value");
  for (size_t i = 0; i < ctx.out[0].numel(); ++i) {
    if (v.isInt)
      ctx.out[0].setI(i, v.i);
    else
      ctx.out[0].setF(i, v.f);
  }
  return true;
}

bool arangeKernel(KernelContext &ctx) {
  int64_t n;
  if (!ctx.eval(ctx.op.exprAttr("n"), n))
    return false;
  if (n < 0)
    return ctx.fail("arange of a negative length " + std::to_string(n));
  if (!ctx.allocate(0, {n}))
    return false;
  for (int64_t i = 0; i < n; ++i)
    ctx.out[0].setI(static_cast<size_t>(i), i);
  return true;
}

bool itemKernel(KernelContext &ctx) {
  if (ctx.in[0]->numel() != 1)
    return ctx.fail("item() needs exactly one element, got " +
                    ctx.in[0]->typeString());
  return true;
}

/// assert: interpret() checks the condition before it would run a kernel.
bool assertKernel(KernelContext &) { return true; }

/// loop, end_loop and call: interpret() runs them itself.
bool noKernel(KernelContext &ctx) { return ctx.fail("no kernel"); }

// --- The kernel table ---
//
// An op's kernel is its own (kKernel) or else its category's
// (kCategoryKernel); categories without a common kernel have none, so an op
// added to such a category without a kernel here fails to compile (the
// static_assert in checkedKernel), and so does an elementwise op without the
// ScalarMath its DTypeRule asks for and a reduction without its ReduceSpec.

using Kernel = bool (*)(KernelContext &);
using OwnKernel = std::optional<Kernel>;

template <OpCategory K> constexpr OwnKernel kCategoryKernel = std::nullopt;
template <>
constexpr OwnKernel kCategoryKernel<OpCategory::ElementwiseUnary> = unaryMath;
template <>
constexpr OwnKernel kCategoryKernel<OpCategory::ElementwiseBinary> = binaryMath;
template <>
constexpr OwnKernel kCategoryKernel<OpCategory::ElementwiseSelect> =
    whereKernel;
template <> constexpr OwnKernel kCategoryKernel<OpCategory::Reduction> = reduce;
template <> constexpr OwnKernel kCategoryKernel<OpCategory::Matmul> = matmul;
template <> constexpr OwnKernel kCategoryKernel<OpCategory::Control> = noKernel;
template <> constexpr OwnKernel kCategoryKernel<OpCategory::Call> = noKernel;

template <OpCode C> constexpr OwnKernel kKernel = std::nullopt;
template <> constexpr OwnKernel kKernel<OpCode::Cast> = castKernel;
template <> constexpr OwnKernel kKernel<OpCode::Constant> = constantKernel;
template <> constexpr OwnKernel kKernel<OpCode::SymScalar> = symScalarKernel;
template <> constexpr OwnKernel kKernel<OpCode::Full> = fullKernel;
template <> constexpr OwnKernel kKernel<OpCode::Arange> = arangeKernel;
template <> constexpr OwnKernel kKernel<OpCode::Cumsum> = scanKernel;
template <> constexpr OwnKernel kKernel<OpCode::Cumprod> = scanKernel;
template <> constexpr OwnKernel kKernel<OpCode::Reshape> = copyKernel;
template <> constexpr OwnKernel kKernel<OpCode::Permute> = permute;
template <> constexpr OwnKernel kKernel<OpCode::Expand> = expand;
template <> constexpr OwnKernel kKernel<OpCode::Concat> = concat;
template <> constexpr OwnKernel kKernel<OpCode::Slice> = slice;
template <> constexpr OwnKernel kKernel<OpCode::UpdateSlice> = updateSlice;
template <> constexpr OwnKernel kKernel<OpCode::Pad> = pad;
template <> constexpr OwnKernel kKernel<OpCode::Conv2d> = conv2d;
template <> constexpr OwnKernel kKernel<OpCode::MaxPool2d> = maxPool;
template <>
constexpr OwnKernel kKernel<OpCode::Conv2dWeightGrad> = conv2dWeightGradKernel;
template <>
constexpr OwnKernel kKernel<OpCode::MaxPool2dGrad> = maxPool2dGradKernel;
template <> constexpr OwnKernel kKernel<OpCode::Attention> = attentionKernel;
template <> constexpr OwnKernel kKernel<OpCode::Nonzero> = nonzero;
template <> constexpr OwnKernel kKernel<OpCode::MaskedSelect> = maskedSelect;
template <> constexpr OwnKernel kKernel<OpCode::Unique> = unique;
template <> constexpr OwnKernel kKernel<OpCode::Item> = itemKernel;
template <>
constexpr OwnKernel kKernel<OpCode::IndexSelect> = indexSelectKernel;
template <> constexpr OwnKernel kKernel<OpCode::Gather> = gatherKernel;
template <> constexpr OwnKernel kKernel<OpCode::Scatter> = scatterKernel;
template <> constexpr OwnKernel kKernel<OpCode::IndexAdd> = indexAddKernel;
template <>
constexpr OwnKernel kKernel<OpCode::MaskedScatter> = maskedScatterKernel;
template <> constexpr OwnKernel kKernel<OpCode::Topk> = topkKernel;
template <> constexpr OwnKernel kKernel<OpCode::Sort> = sortKernel;
template <> constexpr OwnKernel kKernel<OpCode::Assert> = assertKernel;

/// Whether \p m has the math for every element type \p rule accepts.
constexpr bool mathCovers(const ScalarMath &m, DTypeRule rule, bool unary) {
  bool f = unary ? m.unaryFloat.has_value() : m.binaryFloat.has_value();
  bool i = unary ? m.unaryInt.has_value() : m.binaryInt.has_value();
  bool wantsFloat = rule == DTypeRule::Any || rule == DTypeRule::Numeric ||
                    rule == DTypeRule::Float;
  bool wantsInt = rule == DTypeRule::Any || rule == DTypeRule::Numeric ||
                  rule == DTypeRule::NotFloat || rule == DTypeRule::Bool;
  return (f || !wantsFloat) && (i || !wantsInt);
}

template <OpCode C> constexpr Kernel checkedKernel() {
  constexpr OpCategory k = categoryOf(C);
  constexpr bool own = kKernel<C>.has_value();
  static_assert(own || kCategoryKernel<k>.has_value(),
                "an op without an interpreter kernel: give it a "
                "kKernel<OpCode::...> (ir/InterpKernels.cpp)");
  static_assert(own || k != OpCategory::ElementwiseUnary ||
                    mathCovers(kMath<C>, opTraits(C).operands, true),
                "an elementwise unary op without the kMath its DTypeRule "
                "asks for (ir/InterpKernels.cpp)");
  static_assert(own || k != OpCategory::ElementwiseBinary ||
                    mathCovers(kMath<C>, opTraits(C).operands, false),
                "an elementwise binary op without the kMath its DTypeRule "
                "asks for (ir/InterpKernels.cpp)");
  static_assert(own || k != OpCategory::Reduction || kReduce<C>.valid,
                "a reduction without a kReduce (ir/InterpKernels.cpp)");
  return own ? *kKernel<C> : *kCategoryKernel<k>;
}

/// Every op's kernel, indexed by OpCode.
constexpr Kernel kKernels[] = {
#define TSL_OP(Id, ...) checkedKernel<OpCode::Id>(),
#include "ir/Ops.def"
};
static_assert(sizeof(kKernels) / sizeof(kKernels[0]) == kNumOps);

} // namespace

std::optional<double> unaryFloatMath(OpCode code, double x) {
  if (static_cast<size_t>(code) >= kNumOps || !mathOf(code).unaryFloat)
    return std::nullopt;
  return (*mathOf(code).unaryFloat)(x);
}

bool runKernel(KernelContext &ctx) {
  if (static_cast<size_t>(ctx.op.code) >= kNumOps)
    return ctx.fail("no kernel");
  return kKernels[static_cast<size_t>(ctx.op.code)](ctx);
}

} // namespace tsl
