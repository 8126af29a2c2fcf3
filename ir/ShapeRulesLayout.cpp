// Shape rules of the layout ops: reshape, permute, expand, concat, slice,
// pad, update_slice, and their table by OpCode. Each keeps its operand's
// element type.
#include "ir/ShapeRuleFamilies.h"

#include <optional>

namespace tsl::shape_rules {

namespace {

bool reshape(ShapeContext &ctx, std::vector<TensorType> &results) {
  const TensorType &x = ctx.operands[0];
  std::vector<SymExpr> dims = ctx.op.exprsAttr("shape");
  int inferred = -1;
  SymExpr known = 1;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i].isConst(-1)) {
      if (inferred >= 0)
        return ctx.fail("reshape allows one -1");
      inferred = static_cast<int>(i);
    } else {
      if (!nonNegative(ctx, dims[i], "reshape size"))
        return false;
      known = known * dims[i];
    }
  }
  SymExpr n = x.numel();
  std::string desc = "reshape of " + x.str() + " to [";
  for (size_t i = 0; i < dims.size(); ++i)
    desc += (i ? ", " : "") + dims[i].str();
  desc += "]";
  if (inferred >= 0) {
    if (!ctx.require(SymCond::ne(known, 0),
                     "reshape with -1 needs a non-zero known size",
                     desc +
                         ": the other sizes multiply to 0, so -1 is ambiguous"))
      return false;
    if (!ctx.require(SymCond::eq(SymExpr::mod(n, known), 0),
                     "element count of reshape",
                     desc + ": " + n.str() + " elements do not divide into " +
                         known.str()))
      return false;
    dims[inferred] = SymExpr::floorDiv(n, known);
  } else if (!ctx.require(SymCond::eq(n, known), "element count of reshape",
                          desc + ": element count " + n.str() +
                              " != " + known.str())) {
    return false;
  }
  results.push_back({x.dtype, dims});
  return true;
}

bool permute(ShapeContext &ctx, std::vector<TensorType> &results) {
  const TensorType &x = ctx.operands[0];
  const auto &perm = ctx.op.intsAttr("perm");
  if (perm.size() != x.rank())
    return ctx.fail("permute needs " + std::to_string(x.rank()) + " axes for " +
                    x.str() + ", got " + std::to_string(perm.size()));
  std::vector<bool> seen(perm.size(), false);
  TensorType out{x.dtype, {}};
  for (int64_t p : perm) {
    if (p < 0 || static_cast<size_t>(p) >= perm.size() || seen[p])
      return ctx.fail("permute axes must be a permutation of 0.." +
                      std::to_string(static_cast<int64_t>(perm.size()) - 1));
    seen[p] = true;
    out.dims.push_back(x.dims[p]);
  }
  results.push_back(out);
  return true;
}

bool expand(ShapeContext &ctx, std::vector<TensorType> &results) {
  const auto &shape = ctx.op.exprsAttr("shape");
  const TensorType &x = ctx.operands[0];
  if (shape.size() < x.rank())
    return ctx.fail("expand cannot lower the rank of " + x.str());
  TensorType out{x.dtype, {}};
  size_t offset = shape.size() - x.rank();
  for (size_t i = 0; i < shape.size(); ++i) {
    SymExpr t = shape[i];
    if (i < offset) {
      if (t.isConst(-1))
        return ctx.fail("expand: -1 is not allowed for a new leading axis");
      if (!nonNegative(ctx, t, "expand size"))
        return false;
      out.dims.push_back(t);
      continue;
    }
    SymExpr d = x.dims[i - offset];
    if (t.isConst(-1) || t == d) {
      out.dims.push_back(d);
    } else if (d.isConst(1)) {
      if (!nonNegative(ctx, t, "expand size"))
        return false;
      out.dims.push_back(t);
    } else if (!d.isConst() && ctx.env.hintValue(d) == 1 &&
               ctx.env.prove(SymCond::eq(d, t)) != Truth::True) {
      // A symbolic axis that is 1 in this call broadcasts, as in an
      // elementwise broadcast (ShapeContext::broadcastDim): a guard, not a
      // refusal of the size every other call would accept.
      ctx.choose(SymCond::eq(d, 1), "size-1 broadcast in '" +
                                        std::string(opInfo(ctx.op.code).name) +
                                        "'");
      out.dims.push_back(t);
    } else {
      if (!ctx.require(SymCond::eq(d, t), "expand of a non-1 axis",
                       "cannot expand " + x.str() + " to " +
                           TensorType{x.dtype, shape}.str() + ": its axis " +
                           std::to_string(i - offset) + " has size " + d.str() +
                           ", which is not 1 and not " + t.str()))
        return false;
      out.dims.push_back(t);
    }
  }
  results.push_back(out);
  return true;
}

bool concat(ShapeContext &ctx, std::vector<TensorType> &results) {
  const auto &in = ctx.operands;
  int64_t axis = ctx.op.intAttr("axis");
  const TensorType &first = in[0];
  if (axis < 0 || static_cast<size_t>(axis) >= first.rank())
    return ctx.fail("concat axis " + std::to_string(axis) +
                    " is out of range for " + first.str());
  if (!sameDtypes(ctx, 0))
    return false;
  TensorType out = first;
  for (size_t k = 1; k < in.size(); ++k) {
    if (in[k].rank() != first.rank())
      return ctx.fail("concat needs tensors of one rank, got " +
                      operandList(ctx));
    for (size_t i = 0; i < first.rank(); ++i) {
      if (static_cast<int64_t>(i) == axis)
        continue;
      if (!ctx.require(SymCond::eq(out.dims[i], in[k].dims[i]),
                       "concat sizes off the axis",
                       "concat: axis " + std::to_string(i) +
                           " differs between " + first.str() + " and " +
                           in[k].str()))
        return false;
    }
    out.dims[axis] = out.dims[axis] + in[k].dims[axis];
  }
  results.push_back(out);
  return true;
}

bool slice(ShapeContext &ctx, std::vector<TensorType> &results) {
  const auto &starts = ctx.op.exprsAttr("starts");
  const auto &sizes = ctx.op.exprsAttr("sizes");
  const TensorType &x = ctx.operands[0];
  if (starts.size() != x.rank() || sizes.size() != x.rank())
    return ctx.fail("slice needs a start and a size for each of the " +
                    std::to_string(x.rank()) + " axes of " + x.str());
  std::vector<int64_t> steps = ctx.op.intsAttr("steps");
  if (!steps.empty() && steps.size() != x.rank())
    return ctx.fail("slice needs a step for each of the " +
                    std::to_string(x.rank()) + " axes of " + x.str());
  steps.resize(x.rank(), 1);
  for (size_t i = 0; i < x.rank(); ++i) {
    if (steps[i] < 1)
      return ctx.fail("slice step " + std::to_string(steps[i]) +
                      " is not positive");
    // One past the last element read (the start when the size is 0).
    SymExpr end = steps[i] == 1 ? starts[i] + sizes[i]
                                : starts[i] + (sizes[i] - 1) * steps[i] + 1;
    if (!ctx.require(SymCond::ge(starts[i], 0), "slice start in bounds",
                     "slice start " + starts[i].str() + " is negative") ||
        !ctx.require(SymCond::ge(sizes[i], 0), "slice size in bounds",
                     "slice size " + sizes[i].str() + " is negative") ||
        !ctx.require(SymCond::le(end, x.dims[i]), "slice in bounds",
                     "slice [" + starts[i].str() + ", " + end.str() +
                         ") is out of bounds for axis " + std::to_string(i) +
                         " of size " + x.dims[i].str()))
      return false;
  }
  results.push_back({x.dtype, sizes});
  return true;
}

bool updateSlice(ShapeContext &ctx, std::vector<TensorType> &results) {
  const auto &starts = ctx.op.exprsAttr("starts");
  const TensorType &x = ctx.operands[0], &v = ctx.operands[1];
  if (starts.size() != x.rank() || v.rank() != x.rank())
    return ctx.fail("update_slice needs a start for each of the " +
                    std::to_string(x.rank()) + " axes of " + x.str() +
                    " and a block of that rank, got " + v.str());
  for (size_t i = 0; i < x.rank(); ++i)
    if (!ctx.require(SymCond::ge(starts[i], 0), "update_slice start in bounds",
                     "update_slice start " + starts[i].str() +
                         " is negative") ||
        !ctx.require(SymCond::le(starts[i] + v.dims[i], x.dims[i]),
                     "update_slice in bounds",
                     "update_slice block [" + starts[i].str() + ", " +
                         (starts[i] + v.dims[i]).str() +
                         ") is out of bounds for axis " + std::to_string(i) +
                         " of size " + x.dims[i].str()))
      return false;
  results.push_back(x);
  return true;
}

bool pad(ShapeContext &ctx, std::vector<TensorType> &results) {
  const auto &lo = ctx.op.exprsAttr("lo");
  const auto &hi = ctx.op.exprsAttr("hi");
  const TensorType &x = ctx.operands[0];
  if (lo.size() != x.rank() || hi.size() != x.rank())
    return ctx.fail("pad needs two amounts per axis of " + x.str());
  TensorType out{x.dtype, {}};
  for (size_t i = 0; i < x.rank(); ++i) {
    if (!nonNegative(ctx, lo[i], "padding") ||
        !nonNegative(ctx, hi[i], "padding"))
      return false;
    out.dims.push_back(x.dims[i] + lo[i] + hi[i]);
  }
  results.push_back(out);
  return true;
}

/// The rule of each layout op; an op of category Layout without one fails
/// to compile (checkedRule).
template <OpCode C> constexpr std::optional<Rule> kLayoutRule = std::nullopt;
template <>
constexpr std::optional<Rule> kLayoutRule<OpCode::Reshape> = reshape;
template <>
constexpr std::optional<Rule> kLayoutRule<OpCode::Permute> = permute;
template <> constexpr std::optional<Rule> kLayoutRule<OpCode::Expand> = expand;
template <> constexpr std::optional<Rule> kLayoutRule<OpCode::Concat> = concat;
template <> constexpr std::optional<Rule> kLayoutRule<OpCode::Slice> = slice;
template <> constexpr std::optional<Rule> kLayoutRule<OpCode::Pad> = pad;
template <>
constexpr std::optional<Rule> kLayoutRule<OpCode::UpdateSlice> = updateSlice;

template <OpCode C> constexpr Rule checkedRule() {
  static_assert(categoryOf(C) != OpCategory::Layout ||
                    kLayoutRule<C>.has_value(),
                "a layout op without a shape rule: give it a "
                "kLayoutRule<OpCode::...> (ir/ShapeRulesLayout.cpp)");
  return kLayoutRule<C>.value_or(nullptr);
}

/// The layout rules, indexed by OpCode (null for the other ops).
constexpr Rule kLayoutRules[] = {
#define TSL_OP(Id, ...) checkedRule<OpCode::Id>(),
#include "ir/Ops.def"
};

} // namespace

bool layout(ShapeContext &ctx, std::vector<TensorType> &results) {
  Rule rule = kLayoutRules[static_cast<size_t>(ctx.op.code)];
  if (!rule)
    return ctx.fail(std::string("no layout rule for '") +
                    opInfo(ctx.op.code).name + "'");
  return rule(ctx, results);
}

} // namespace tsl::shape_rules
