// Shape rules of the ops computed by library kernels (conv2d, max_pool2d,
// index_select, topk, attention, cumsum, cumprod, gather, sort, scatter,
// index_add, masked_scatter) and of the ops whose result sizes depend on
// values (nonzero, masked_select, unique, item), and their table by OpCode.
#include "ir/ShapeRuleFamilies.h"

#include <optional>

namespace tsl::shape_rules {

namespace {

/// The NCHW result of sliding a \p kernel window over \p x (ctx.op's
/// stride and padding, checked by the caller) with \p channels outputs;
/// false when the window does not fit the padded input.
bool windowOutput(ShapeContext &ctx, const TensorType &x, SymExpr channels,
                  const std::vector<SymExpr> &kernel,
                  std::vector<TensorType> &results) {
  auto stride = ctx.op.intsAttr("stride");
  auto padding = ctx.op.intsAttr("padding");
  TensorType out{resultDType(ctx), {x.dims[0], channels}};
  for (int i = 0; i < 2; ++i) {
    SymExpr in = x.dims[2 + i], k = kernel[i];
    SymExpr padded = in + SymExpr(2 * padding[i]);
    if (!ctx.require(SymCond::ge(padded, k), "window fits the padded input",
                     "window of size " + k.str() +
                         " is larger than the padded input (" + padded.str() +
                         ")"))
      return false;
    out.dims.push_back(SymExpr::floorDiv(padded - k, stride[i]) + 1);
  }
  results.push_back(out);
  return true;
}

/// conv2d (\p conv) and max_pool2d: NCHW input, output sizes by floor
/// division.
bool convLike(ShapeContext &ctx, std::vector<TensorType> &results, bool conv) {
  const TensorType &x = ctx.operands[0];
  if (x.rank() != 4)
    return ctx.fail(std::string(conv ? "conv2d" : "max_pool2d") +
                    " needs an NCHW tensor of rank 4, got " + x.str());
  auto stride = ctx.op.intsAttr("stride");
  auto padding = ctx.op.intsAttr("padding");
  if (stride.size() != 2 || padding.size() != 2 || stride[0] < 1 ||
      stride[1] < 1 || padding[0] < 0 || padding[1] < 0)
    return ctx.fail("stride must be >= 1 and padding >= 0 (two values each)");
  SymExpr kh, kw, channels = x.dims[1];
  if (conv) {
    const TensorType &w = ctx.operands[1];
    if (w.rank() != 4)
      return ctx.fail("conv2d needs OIHW weights of rank 4, got " + w.str());
    if (!sameDtypes(ctx, 0) || !checkDataDType(ctx, x))
      return false;
    if (!ctx.require(SymCond::eq(x.dims[1], w.dims[1]), "conv2d input channels",
                     "conv2d input has " + x.dims[1].str() +
                         " channels but the weights expect " + w.dims[1].str()))
      return false;
    if (ctx.operands.size() == 3) {
      const TensorType &b = ctx.operands[2];
      if (b.rank() != 1 ||
          !ctx.require(SymCond::eq(b.dims[0], w.dims[0]), "conv2d bias size",
                       "conv2d bias must be [" + w.dims[0].str() + "], got " +
                           b.str()))
        return ctx.fail("conv2d bias must be [" + w.dims[0].str() + "], got " +
                        b.str());
    }
    channels = w.dims[0];
    kh = w.dims[2];
    kw = w.dims[3];
  } else {
    auto kernel = ctx.op.intsAttr("kernel");
    if (kernel.size() != 2 || kernel[0] < 1 || kernel[1] < 1)
      return ctx.fail("max_pool2d kernel must be two values >= 1");
    if (!checkDataDType(ctx, x))
      return false;
    kh = kernel[0];
    kw = kernel[1];
  }
  return windowOutput(ctx, x, channels, {kh, kw}, results);
}

bool indexSelect(ShapeContext &ctx, std::vector<TensorType> &results) {
  int64_t axis = ctx.op.intAttr("axis");
  const TensorType &x = ctx.operands[0], &idx = ctx.operands[1];
  if (axis < 0 || static_cast<size_t>(axis) >= x.rank())
    return ctx.fail("index_select axis " + std::to_string(axis) +
                    " is out of range for " + x.str());
  if (idx.rank() != 1 || !acceptsDType(ctx.op.code, 1, idx.dtype))
    return ctx.failType("index_select needs a 1-d integer index tensor, got " +
                        idx.str());
  TensorType out = x;
  out.dims[axis] = idx.dims[0];
  results.push_back(out);
  return true;
}

/// The axis attribute of \p ctx's op, checked against \p x's rank.
bool axisInRange(ShapeContext &ctx, const TensorType &x, size_t &axis) {
  int64_t a = ctx.op.intAttr("axis");
  if (a < 0 || static_cast<size_t>(a) >= x.rank())
    return ctx.fail(std::string(opInfo(ctx.op.code).name) + " axis " +
                    std::to_string(a) + " is out of range for " + x.str());
  axis = static_cast<size_t>(a);
  return true;
}

/// cumsum, cumprod: the operand's type (numeric, rank >= 1).
bool scan(ShapeContext &ctx, std::vector<TensorType> &results) {
  const TensorType &x = ctx.operands[0];
  size_t axis;
  if (!axisInRange(ctx, x, axis) || !checkDataDType(ctx, x))
    return false;
  results.push_back(x);
  return true;
}

/// gather(x, axis, index): index of x's rank and an integer type, each of
/// its dims but the axis at most x's (torch's rule); the index's shape.
bool gather(ShapeContext &ctx, std::vector<TensorType> &results) {
  const TensorType &x = ctx.operands[0], &idx = ctx.operands[1];
  size_t axis;
  if (!axisInRange(ctx, x, axis))
    return false;
  if (!acceptsDType(ctx.op.code, 1, idx.dtype))
    return ctx.failType("gather needs an integer index tensor, got " +
                        idx.str());
  if (idx.rank() != x.rank())
    return ctx.fail("gather needs an index of the same rank as x, got " +
                    operandList(ctx));
  for (size_t d = 0; d < x.rank(); ++d)
    if (d != axis &&
        !ctx.require(SymCond::le(idx.dims[d], x.dims[d]),
                     "gather index within x off the axis",
                     "gather index " + idx.str() + " is larger than x " +
                         x.str() + " in axis " + std::to_string(d) + " (" +
                         idx.dims[d].str() + " > " + x.dims[d].str() + ")"))
      return false;
  results.push_back({x.dtype, idx.dims});
  return true;
}

/// scatter(x, axis, index, src) and scatter_add: index, src and x of one
/// rank, src of x's type; each index dim at most src's, and at most x's off
/// the axis (torch's rule); x's type.
bool scatter(ShapeContext &ctx, std::vector<TensorType> &results) {
  const TensorType &x = ctx.operands[0], &idx = ctx.operands[1],
                   &src = ctx.operands[2];
  const char *name = ctx.op.boolAttr("add") ? "scatter_add" : "scatter";
  size_t axis;
  if (!axisInRange(ctx, x, axis))
    return false;
  if (!acceptsDType(ctx.op.code, 1, idx.dtype))
    return ctx.failType(std::string(name) +
                        " needs an integer index tensor, got " + idx.str());
  if (src.dtype != x.dtype)
    return ctx.failType(std::string(name) +
                        " needs src of x's element type, got " +
                        operandList(ctx));
  if (ctx.op.boolAttr("add") && x.dtype == DType::Bool)
    return ctx.failType("scatter_add does not apply to bool tensors, got " +
                        x.str());
  if (idx.rank() != x.rank() || src.rank() != x.rank())
    return ctx.fail(std::string(name) +
                    " needs x, index and src of one rank, got " +
                    operandList(ctx));
  for (size_t d = 0; d < x.rank(); ++d) {
    std::string at =
        " in axis " + std::to_string(d) + " (" + idx.dims[d].str() + " > ";
    if (!ctx.require(
            SymCond::le(idx.dims[d], src.dims[d]), "scatter index within src",
            std::string(name) + " index " + idx.str() + " is larger than src " +
                src.str() + at + src.dims[d].str() + ")") ||
        (d != axis && !ctx.require(SymCond::le(idx.dims[d], x.dims[d]),
                                   "scatter index within x off the axis",
                                   std::string(name) + " index " + idx.str() +
                                       " is larger than x " + x.str() + at +
                                       x.dims[d].str() + ")")))
      return false;
  }
  results.push_back(x);
  return true;
}

/// index_add(x, axis, index, source): index a 1-d integer vector, source
/// of x's type and rank with index's length along the axis and x's dims
/// elsewhere (torch's rule); x's type.
bool indexAdd(ShapeContext &ctx, std::vector<TensorType> &results) {
  const TensorType &x = ctx.operands[0], &idx = ctx.operands[1],
                   &src = ctx.operands[2];
  size_t axis;
  if (!axisInRange(ctx, x, axis))
    return false;
  if (idx.rank() != 1 || !acceptsDType(ctx.op.code, 1, idx.dtype))
    return ctx.failType("index_add needs a 1-d integer index tensor, got " +
                        idx.str());
  if (src.dtype != x.dtype)
    return ctx.failType("index_add needs source of x's element type, got " +
                        operandList(ctx));
  if (x.dtype == DType::Bool)
    return ctx.failType("index_add does not apply to bool tensors, got " +
                        x.str());
  if (src.rank() != x.rank())
    return ctx.fail("index_add needs source of x's rank, got " +
                    operandList(ctx));
  for (size_t d = 0; d < x.rank(); ++d) {
    const SymExpr &want = d == axis ? idx.dims[0] : x.dims[d];
    if (!ctx.require(SymCond::eq(src.dims[d], want), "index_add source shape",
                     "index_add source " + src.str() + " does not match " +
                         (d == axis ? "the index length" : "x") + " in axis " +
                         std::to_string(d) + " (" + src.dims[d].str() +
                         " != " + want.str() + ")"))
      return false;
  }
  results.push_back(x);
  return true;
}

/// masked_scatter(x, mask, source): a bool mask of x's shape (the builtin
/// broadcasts it), source of x's type and any shape (its size is checked
/// against the mask's count at run time); x's type.
bool maskedScatter(ShapeContext &ctx, std::vector<TensorType> &results) {
  const TensorType &x = ctx.operands[0], &mask = ctx.operands[1],
                   &src = ctx.operands[2];
  if (!needBool(ctx, mask))
    return false;
  if (src.dtype != x.dtype)
    return ctx.failType(
        "masked_scatter needs source of x's element type, got " +
        operandList(ctx));
  if (mask.rank() != x.rank())
    return ctx.fail("masked_scatter needs a mask of x's shape, got " +
                    operandList(ctx));
  for (size_t i = 0; i < x.rank(); ++i)
    if (!ctx.require(SymCond::eq(x.dims[i], mask.dims[i]), "mask shape",
                     "masked_scatter needs a mask of x's shape, got " +
                         operandList(ctx)))
      return false;
  results.push_back(x);
  return true;
}

/// sort: the values (x's type) and their positions (i64), x's shape.
bool sort(ShapeContext &ctx, std::vector<TensorType> &results) {
  const TensorType &x = ctx.operands[0];
  size_t axis;
  if (!axisInRange(ctx, x, axis) || !checkDataDType(ctx, x))
    return false;
  results.push_back(x);
  results.push_back({DType::I64, x.dims});
  return true;
}

bool topk(ShapeContext &ctx, std::vector<TensorType> &results) {
  const TensorType &x = ctx.operands[0];
  SymExpr k = ctx.op.exprAttr("k");
  if (x.rank() == 0)
    return ctx.fail("topk needs a tensor of rank 1 or more, got " + x.str());
  if (!checkDataDType(ctx, x))
    return false;
  SymExpr n = x.dims.back();
  if (!nonNegative(ctx, k, "topk k") ||
      !ctx.require(SymCond::le(k, n), "topk k within the last axis",
                   "topk k = " + k.str() + " exceeds the last axis of " +
                       x.str()))
    return false;
  TensorType values = x;
  values.dims.back() = k;
  TensorType indices = values;
  indices.dtype = DType::I64;
  results.push_back(values);
  results.push_back(indices);
  return true;
}

bool nonzero(ShapeContext &ctx, std::vector<TensorType> &results) {
  const TensorType &x = ctx.operands[0];
  SymExpr u = ctx.fresh(0, x.numel(), "the row count of nonzero(...)");
  results.push_back(
      {resultDType(ctx), {u, SymExpr(static_cast<int64_t>(x.rank()))}});
  return true;
}

bool maskedSelect(ShapeContext &ctx, std::vector<TensorType> &results) {
  const auto &in = ctx.operands;
  if (!needBool(ctx, in[1]))
    return false;
  if (in[0].rank() != in[1].rank())
    return ctx.fail("masked_select needs a mask of the same shape, got " +
                    operandList(ctx));
  for (size_t i = 0; i < in[0].rank(); ++i)
    if (!ctx.require(SymCond::eq(in[0].dims[i], in[1].dims[i]), "mask shape",
                     "masked_select needs a mask of the same shape, got " +
                         operandList(ctx)))
      return false;
  SymExpr u =
      ctx.fresh(0, in[0].numel(), "the element count of masked_select(...)");
  results.push_back({resultDType(ctx), {u}});
  return true;
}

bool unique(ShapeContext &ctx, std::vector<TensorType> &results) {
  const TensorType &x = ctx.operands[0];
  SymExpr u = ctx.fresh(0, x.numel(), "the element count of unique(...)");
  results.push_back({resultDType(ctx), {u}});
  return true;
}

bool item(ShapeContext &ctx, std::vector<TensorType> &) {
  const TensorType &x = ctx.operands[0];
  if (!acceptsDType(ctx.op.code, 0, x.dtype))
    return ctx.failType(
        "item() gives an int and needs an integer or bool tensor, got " +
        x.str());
  return ctx.require(SymCond::eq(x.numel(), 1), "item of a one-element tensor",
                     "item() needs exactly one element, " + x.str() + " has " +
                         x.numel().str());
}

/// attention(q [*B, S, D], k [*B, T, D], v [*B, T, E], scale [], mask?):
/// [*B, S, E]. The batch dims of q, k and v are the same (the fusion pass
/// only forms the op then); each mask dim is 1 or the score's dim.
bool attention(ShapeContext &ctx, std::vector<TensorType> &results) {
  const auto &in = ctx.operands;
  const TensorType &q = in[0], &k = in[1], &v = in[2];
  if (!sameDtypes(ctx, 0) || !checkDataDType(ctx, q))
    return false;
  size_t rank = q.rank();
  if (rank < 2 || k.rank() != rank || v.rank() != rank || in[3].rank() != 0)
    return ctx.fail("attention needs q, k, v of one rank >= 2 and a 0-d "
                    "scale, got " +
                    operandList(ctx));
  auto same = [&](const SymExpr &a, const SymExpr &b, const char *what) {
    return ctx.require(SymCond::eq(a, b), what,
                       std::string("attention ") + what + " differ in " +
                           operandList(ctx));
  };
  for (size_t i = 0; i + 2 < rank; ++i)
    if (!same(q.dims[i], k.dims[i], "batch dims") ||
        !same(q.dims[i], v.dims[i], "batch dims"))
      return false;
  if (!same(q.dims[rank - 1], k.dims[rank - 1], "head sizes of q and k") ||
      !same(k.dims[rank - 2], v.dims[rank - 2], "key counts of k and v"))
    return false;
  TensorType scores = q;
  scores.dims[rank - 1] = k.dims[rank - 2];
  if (in.size() == 5) {
    const TensorType &mask = in[4];
    if (mask.rank() > rank)
      return ctx.fail("attention mask " + mask.str() +
                      " has a higher rank than the scores " + scores.str());
    size_t offset = rank - mask.rank();
    for (size_t i = 0; i < mask.rank(); ++i)
      if (!mask.dims[i].isConst(1) &&
          !ctx.require(SymCond::eq(mask.dims[i], scores.dims[offset + i]),
                       "mask broadcasts to the scores",
                       "attention mask " + mask.str() +
                           " does not broadcast to the scores " + scores.str()))
        return false;
  }
  TensorType out = q;
  out.dims[rank - 1] = v.dims[rank - 1];
  results.push_back(out);
  return true;
}

bool conv2d(ShapeContext &ctx, std::vector<TensorType> &results) {
  return convLike(ctx, results, true);
}
bool maxPool2d(ShapeContext &ctx, std::vector<TensorType> &results) {
  return convLike(ctx, results, false);
}

/// conv2d_weight_grad (x [N, C, H, W], g [N, O, OH, OW], kernel [KH, KW]):
/// [O, C, KH, KW], where g must have the shape the forward gave: N images
/// and OH = (H + 2 * padding - KH) / stride + 1 (likewise OW).
bool conv2dWeightGrad(ShapeContext &ctx, std::vector<TensorType> &results) {
  const TensorType &x = ctx.operands[0], &g = ctx.operands[1];
  const std::vector<SymExpr> &kernel = ctx.op.exprsAttr("kernel");
  if (x.rank() != 4 || g.rank() != 4 || kernel.size() != 2)
    return ctx.fail("conv2d_weight_grad needs NCHW x and g of rank 4 and a "
                    "two-value kernel, got " +
                    x.str() + " and " + g.str());
  if (!sameDtypes(ctx, 0) || !checkDataDType(ctx, x))
    return false;
  auto stride = ctx.op.intsAttr("stride");
  auto padding = ctx.op.intsAttr("padding");
  if (stride.size() != 2 || padding.size() != 2 || stride[0] < 1 ||
      stride[1] < 1 || padding[0] < 0 || padding[1] < 0)
    return ctx.fail("stride must be >= 1 and padding >= 0 (two values each)");
  std::vector<TensorType> forward;
  TensorType w{x.dtype, {g.dims[1], x.dims[1], kernel[0], kernel[1]}};
  if (!windowOutput(ctx, x, g.dims[1], kernel, forward))
    return false;
  for (int i = 0; i < 4; ++i)
    if (i != 1 && !ctx.require(SymCond::eq(g.dims[i], forward[0].dims[i]),
                               "conv2d gradient shape",
                               "conv2d_weight_grad's g must be " +
                                   forward[0].str() + ", got " + g.str()))
      return false;
  results.push_back(TensorType{resultDType(ctx), w.dims});
  return true;
}

/// max_pool2d_grad (x, g): x's shape, where g must have the shape of
/// max_pool2d(x) with the same attributes.
bool maxPool2dGrad(ShapeContext &ctx, std::vector<TensorType> &results) {
  const TensorType &x = ctx.operands[0], &g = ctx.operands[1];
  if (!sameDtypes(ctx, 0))
    return false;
  std::vector<TensorType> forward;
  if (!convLike(ctx, forward, false))
    return false;
  if (g.rank() != 4)
    return ctx.fail("max_pool2d_grad needs g of rank 4, got " + g.str());
  for (int i = 0; i < 4; ++i)
    if (!ctx.require(SymCond::eq(g.dims[i], forward[0].dims[i]),
                     "max_pool2d gradient shape",
                     "max_pool2d_grad's g must be " + forward[0].str() +
                         ", got " + g.str()))
      return false;
  results.push_back(TensorType{resultDType(ctx), x.dims});
  return true;
}

/// The rule of each op of categories Library and DataDependent; such an op
/// without one fails to compile (checkedRule).
template <OpCode C> constexpr std::optional<Rule> kOwnRule = std::nullopt;
template <> constexpr std::optional<Rule> kOwnRule<OpCode::Conv2d> = conv2d;
template <>
constexpr std::optional<Rule> kOwnRule<OpCode::MaxPool2d> = maxPool2d;
template <>
constexpr std::optional<Rule> kOwnRule<OpCode::Conv2dWeightGrad> =
    conv2dWeightGrad;
template <>
constexpr std::optional<Rule> kOwnRule<OpCode::MaxPool2dGrad> = maxPool2dGrad;
template <>
constexpr std::optional<Rule> kOwnRule<OpCode::IndexSelect> = indexSelect;
template <> constexpr std::optional<Rule> kOwnRule<OpCode::Topk> = topk;
template <>
constexpr std::optional<Rule> kOwnRule<OpCode::Attention> = attention;
template <> constexpr std::optional<Rule> kOwnRule<OpCode::Cumsum> = scan;
template <> constexpr std::optional<Rule> kOwnRule<OpCode::Cumprod> = scan;
template <> constexpr std::optional<Rule> kOwnRule<OpCode::Gather> = gather;
template <> constexpr std::optional<Rule> kOwnRule<OpCode::Sort> = sort;
template <> constexpr std::optional<Rule> kOwnRule<OpCode::Scatter> = scatter;
template <> constexpr std::optional<Rule> kOwnRule<OpCode::IndexAdd> = indexAdd;
template <>
constexpr std::optional<Rule> kOwnRule<OpCode::MaskedScatter> = maskedScatter;
template <> constexpr std::optional<Rule> kOwnRule<OpCode::Nonzero> = nonzero;
template <>
constexpr std::optional<Rule> kOwnRule<OpCode::MaskedSelect> = maskedSelect;
template <> constexpr std::optional<Rule> kOwnRule<OpCode::Unique> = unique;
template <> constexpr std::optional<Rule> kOwnRule<OpCode::Item> = item;

template <OpCode C> constexpr Rule checkedRule() {
  constexpr OpCategory k = categoryOf(C);
  static_assert((k != OpCategory::Library && k != OpCategory::DataDependent) ||
                    kOwnRule<C>.has_value(),
                "a library or data-dependent op without a shape rule: give "
                "it a kOwnRule<OpCode::...> (ir/ShapeRulesLibrary.cpp)");
  return kOwnRule<C>.value_or(nullptr);
}

/// The rules of this file, indexed by OpCode (null for the other ops).
constexpr Rule kOwnRules[] = {
#define TSL_OP(Id, ...) checkedRule<OpCode::Id>(),
#include "ir/Ops.def"
};

/// Runs \p ctx.op's rule when it is of category \p k.
bool ownRule(ShapeContext &ctx, std::vector<TensorType> &results, OpCategory k,
             const char *what) {
  Rule rule = kOwnRules[static_cast<size_t>(ctx.op.code)];
  if (!rule || categoryOf(ctx.op.code) != k)
    return ctx.fail(std::string(what) + opInfo(ctx.op.code).name + "'");
  return rule(ctx, results);
}

} // namespace

bool library(ShapeContext &ctx, std::vector<TensorType> &results) {
  return ownRule(ctx, results, OpCategory::Library, "no library rule for '");
}

bool dataDependent(ShapeContext &ctx, std::vector<TensorType> &results) {
  return ownRule(ctx, results, OpCategory::DataDependent, "no rule for '");
}

} // namespace tsl::shape_rules
