#include "ir/ShapeRules.h"
#include "ir/ShapeRuleFamilies.h"
#include "support/Error.h"

#include <optional>

namespace tsl {

ShapeContext::ShapeContext(ShapeEnv &env, const Operation &op,
                           std::vector<TensorType> operands, SourceRange range)
    : op(op), operands(std::move(operands)), env(env), range(range) {}

bool ShapeContext::fail(std::string message) {
  if (error.empty())
    error = std::move(message);
  return false;
}

bool ShapeContext::failType(std::string message) {
  if (error.empty())
    errorKind = ErrorKind::Type;
  return fail(std::move(message));
}

bool ShapeContext::require(const SymCond &cond, const std::string &reason,
                           const std::string &message) {
  size_t before = env.assertions().size();
  ShapeEnv::Resolution r =
      env.require(cond, range, opInfo(op.code).name, reason);
  if (r == ShapeEnv::Resolution::Violated)
    return fail(message);
  for (size_t i = before; i < env.assertions().size(); ++i)
    newAssertions.push_back(env.assertions()[i]);
  return true;
}

Truth ShapeContext::choose(const SymCond &cond, const std::string &reason) {
  return env.choose(cond, range, opInfo(op.code).name, reason);
}

SymExpr ShapeContext::fresh(int64_t lo, std::optional<SymExpr> hi,
                            const std::string &description) {
  if (replayFresh && replayIndex < replayFresh->size())
    return (*replayFresh)[replayIndex++];
  std::optional<int64_t> hiValue;
  if (hi && hi->isConst())
    hiValue = hi->constValue();
  SymExpr u = env.freshUnbacked(lo, hiValue, description, range);
  if (hi && !hi->isConst())
    env.addFact(SymCond::le(u, *hi));
  return u;
}

bool ShapeContext::broadcastDim(SymExpr a, SymExpr b, SymExpr &out,
                                const std::string &what) {
  if (a == b || b.isConst(1)) {
    out = a;
    return true;
  }
  if (a.isConst(1)) {
    out = b;
    return true;
  }
  // Equal sizes: prefer a constant, else the left operand. Every path that
  // ends with equal sizes picks the same way, so the verifier's replay (which
  // knows the equality as a fact) derives the same type.
  SymExpr same = b.isConst() && !a.isConst() ? b : a;
  SymCond eq = SymCond::eq(a, b);
  if (env.prove(eq) == Truth::True) {
    out = same;
    return true;
  }
  if (env.prove(SymCond::eq(a, 1)) == Truth::True) {
    out = b;
    return true;
  }
  if (env.prove(SymCond::eq(b, 1)) == Truth::True) {
    out = a;
    return true;
  }
  std::string mismatch =
      "cannot broadcast " + what + ": size " + a.str() + " vs " + b.str();
  std::optional<int64_t> ha = env.hintValue(a), hb = env.hintValue(b);
  if (ha && hb) {
    if (*ha != *hb && *ha != 1 && *hb != 1)
      return fail(a.isConst() && b.isConst()
                      ? mismatch
                      : mismatch + " (" + std::to_string(*ha) + " vs " +
                            std::to_string(*hb) + " here)");
    if (*ha == *hb) {
      out = same;
      return require(eq,
                     "broadcast in '" + std::string(opInfo(op.code).name) + "'",
                     mismatch);
    }
    if (*ha == 1) {
      choose(SymCond::eq(a, 1),
             "size-1 broadcast in '" + std::string(opInfo(op.code).name) + "'");
      out = b;
      return true;
    }
    choose(SymCond::eq(b, 1),
           "size-1 broadcast in '" + std::string(opInfo(op.code).name) + "'");
    out = a;
    return true;
  }
  // No hint: assume the sizes do not broadcast and assert equality at run
  // time (documented in docs/language.md).
  out = same;
  return require(eq,
                 "unbacked size assumed not to broadcast in '" +
                     std::string(opInfo(op.code).name) + "'",
                 mismatch);
}

bool ShapeContext::broadcastShapes(const std::vector<TensorType> &types,
                                   std::vector<SymExpr> &out) {
  size_t rank = 0;
  for (const TensorType &t : types)
    rank = std::max(rank, t.rank());
  out.assign(rank, SymExpr(1));
  std::string what;
  for (size_t i = 0; i < types.size(); ++i)
    what += (i ? " and " : "") + types[i].str();
  for (const TensorType &t : types) {
    size_t offset = rank - t.rank();
    for (size_t i = 0; i < t.rank(); ++i)
      if (!broadcastDim(out[offset + i], t.dims[i], out[offset + i], what))
        return false;
  }
  return true;
}

namespace shape_rules {

bool sameDtypes(ShapeContext &ctx, size_t first) {
  for (size_t i = first + 1; i < ctx.operands.size(); ++i)
    if (ctx.operands[i].dtype != ctx.operands[first].dtype)
      return ctx.failType(std::string("mismatched element types ") +
                          dtypeName(ctx.operands[first].dtype) + " and " +
                          dtypeName(ctx.operands[i].dtype) + " in '" +
                          opInfo(ctx.op.code).name + "'");
  return true;
}

bool needFloat(ShapeContext &ctx, const TensorType &t) {
  if (!isFloat(t.dtype))
    return ctx.failType(std::string("'") + opInfo(ctx.op.code).name +
                        "' needs a floating-point tensor, got " + t.str());
  return true;
}

bool needNumeric(ShapeContext &ctx, const TensorType &t) {
  if (t.dtype == DType::Bool)
    return ctx.failType(std::string("'") + opInfo(ctx.op.code).name +
                        "' does not apply to bool tensors, got " + t.str());
  return true;
}

bool needBool(ShapeContext &ctx, const TensorType &t) {
  if (t.dtype != DType::Bool)
    return ctx.failType(std::string("'") + opInfo(ctx.op.code).name +
                        "' needs a bool tensor, got " + t.str());
  return true;
}

bool checkDataDType(ShapeContext &ctx, const TensorType &t) {
  const OpTraits &traits = opTraits(ctx.op.code);
  switch (traits.operands) {
  case DTypeRule::Bool:
    return needBool(ctx, t);
  case DTypeRule::Numeric:
    return needNumeric(ctx, t);
  case DTypeRule::Float:
    if (traits.category == OpCategory::ElementwiseBinary &&
        !needNumeric(ctx, t))
      return false;
    return needFloat(ctx, t);
  case DTypeRule::NotFloat:
    if (isFloat(t.dtype))
      return ctx.failType(std::string("'") + opInfo(ctx.op.code).name +
                          "' needs bool or integer tensors, got " + t.str());
    return true;
  default:
    return true;
  }
}

DType resultDType(const ShapeContext &ctx) {
  switch (opTraits(ctx.op.code).result) {
  case ResultDType::Bool:
    return DType::Bool;
  case ResultDType::I64:
    return DType::I64;
  case ResultDType::FromAttr:
    return ctx.op.dtypeAttr("dtype");
  default:
    return ctx
        .operands[categoryOf(ctx.op.code) == OpCategory::ElementwiseSelect ? 1
                                                                           : 0]
        .dtype;
  }
}

bool nonNegative(ShapeContext &ctx, SymExpr e, const std::string &what) {
  return ctx.require(SymCond::ge(e, 0), what + " must not be negative",
                     what + " is negative (" + e.str() + ")");
}

std::string operandList(const ShapeContext &ctx) {
  std::string s;
  for (size_t i = 0; i < ctx.operands.size(); ++i)
    s += (i ? ", " : "") + ctx.operands[i].str();
  return s;
}

bool elementwiseUnary(ShapeContext &ctx, std::vector<TensorType> &results) {
  const TensorType &x = ctx.operands[0];
  if (!checkDataDType(ctx, x))
    return false;
  results.push_back({resultDType(ctx), x.dims});
  return true;
}

bool elementwiseBinary(ShapeContext &ctx, std::vector<TensorType> &results) {
  if ((opTraits(ctx.op.code).sameDType && !sameDtypes(ctx, 0)) ||
      !checkDataDType(ctx, ctx.operands[0]))
    return false;
  TensorType out;
  out.dtype = resultDType(ctx);
  if (!ctx.broadcastShapes(ctx.operands, out.dims))
    return false;
  results.push_back(out);
  return true;
}

bool elementwiseSelect(ShapeContext &ctx, std::vector<TensorType> &results) {
  const auto &in = ctx.operands;
  if (!needBool(ctx, in[0]))
    return false;
  if (in[1].dtype != in[2].dtype)
    return ctx.failType(
        std::string("where needs both branches of one element type, got ") +
        dtypeName(in[1].dtype) + " and " + dtypeName(in[2].dtype));
  TensorType out;
  out.dtype = resultDType(ctx);
  if (!ctx.broadcastShapes(in, out.dims))
    return false;
  results.push_back(out);
  return true;
}

bool creation(ShapeContext &ctx, std::vector<TensorType> &results) {
  const Operation &op = ctx.op;
  std::vector<SymExpr> dims;
  if (op.code == OpCode::Full) {
    dims = op.exprsAttr("shape");
    for (const SymExpr &d : dims)
      if (!nonNegative(ctx, d, "size"))
        return false;
  } else if (op.code == OpCode::Arange) {
    dims = {op.exprAttr("n")};
    if (!nonNegative(ctx, dims[0], "arange length"))
      return false;
  }
  results.push_back({resultDType(ctx), dims});
  return true;
}

/// Reductions without an identity (max, min, argmax) need non-empty axes.
static bool needsNonEmptyAxes(OpCode c) {
  return c == OpCode::ReduceMax || c == OpCode::ReduceMin ||
         c == OpCode::Argmax || c == OpCode::Argmin;
}

bool reduction(ShapeContext &ctx, std::vector<TensorType> &results) {
  const TensorType &x = ctx.operands[0];
  const auto &axes = ctx.op.intsAttr("axes");
  bool keep = ctx.op.boolAttr("keepdim");
  std::vector<bool> reduced(x.rank(), axes.empty());
  for (int64_t a : axes) {
    if (a < 0 || static_cast<size_t>(a) >= x.rank())
      return ctx.fail("axis " + std::to_string(a) + " is out of range for " +
                      x.str());
    if (reduced[a])
      return ctx.fail("axis " + std::to_string(a) + " is reduced twice");
    reduced[a] = true;
  }
  OpCode c = ctx.op.code;
  if ((c == OpCode::Argmax || c == OpCode::Argmin) && axes.size() > 1)
    return ctx.fail(std::string(opInfo(c).name) + " takes one axis");
  if (!checkDataDType(ctx, x))
    return false;
  TensorType out;
  out.dtype = resultDType(ctx);
  for (size_t i = 0; i < x.rank(); ++i) {
    if (reduced[i] && needsNonEmptyAxes(c)) {
      if (!ctx.require(
              SymCond::ge(x.dims[i], 1), "reduction over a non-empty axis",
              std::string(opInfo(c).name) + " over an empty axis (size " +
                  x.dims[i].str() + ")"))
        return false;
    }
    if (!reduced[i])
      out.dims.push_back(x.dims[i]);
    else if (keep)
      out.dims.push_back(1);
  }
  results.push_back(out);
  return true;
}

bool matmul(ShapeContext &ctx, std::vector<TensorType> &results) {
  TensorType a = ctx.operands[0], b = ctx.operands[1];
  if (!sameDtypes(ctx, 0) || !checkDataDType(ctx, a))
    return false;
  if (a.rank() == 0 || b.rank() == 0)
    return ctx.fail("matmul needs operands of rank 1 or more, got " + a.str() +
                    " and " + b.str());
  bool aVec = a.rank() == 1, bVec = b.rank() == 1;
  if (aVec)
    a.dims.insert(a.dims.begin(), SymExpr(1));
  if (bVec)
    b.dims.push_back(SymExpr(1));
  SymExpr ka = a.dims[a.rank() - 1], kb = b.dims[b.rank() - 2];
  if (!ctx.require(SymCond::eq(ka, kb), "inner dimensions of '@'",
                   "inner dimensions of '@' differ: " + ctx.operands[0].str() +
                       " @ " + ctx.operands[1].str() + " (" + ka.str() +
                       " vs " + kb.str() + ")"))
    return false;
  TensorType ba{a.dtype,
                std::vector<SymExpr>(a.dims.begin(), a.dims.end() - 2)};
  TensorType bb{b.dtype,
                std::vector<SymExpr>(b.dims.begin(), b.dims.end() - 2)};
  std::vector<SymExpr> batch;
  if (!ctx.broadcastShapes({ba, bb}, batch))
    return false;
  TensorType out{resultDType(ctx), batch};
  if (!aVec)
    out.dims.push_back(a.dims[a.rank() - 2]);
  if (!bVec)
    out.dims.push_back(b.dims[b.rank() - 1]);
  results.push_back(out);
  return true;
}

/// Assert: a condition on sizes, no results.
static bool check(ShapeContext &, std::vector<TensorType> &) { return true; }

/// loop, end_loop: one result per operand, of its type (the verifier
/// checks that an end_loop carries the types its loop does).
static bool control(ShapeContext &ctx, std::vector<TensorType> &results) {
  results = ctx.operands;
  return true;
}

/// call: its result types are its callee's, which only the function that
/// holds the callee knows (the verifier checks them there); no shape rule
/// can give them.
static bool call(ShapeContext &ctx, std::vector<TensorType> &) {
  return ctx.fail("a call's result types come from its callee");
}

namespace {
/// The rule of each category (Layout, Library and DataDependent: their
/// families' tables by OpCode, in ShapeRulesLayout.cpp and
/// ShapeRulesLibrary.cpp, which fail to compile for an op without a rule).
template <OpCategory K>
constexpr std::optional<Rule> kCategoryRule = std::nullopt;
template <>
constexpr std::optional<Rule> kCategoryRule<OpCategory::ElementwiseUnary> =
    elementwiseUnary;
template <>
constexpr std::optional<Rule> kCategoryRule<OpCategory::ElementwiseBinary> =
    elementwiseBinary;
template <>
constexpr std::optional<Rule> kCategoryRule<OpCategory::ElementwiseSelect> =
    elementwiseSelect;
template <>
constexpr std::optional<Rule> kCategoryRule<OpCategory::Scalar> = creation;
template <>
constexpr std::optional<Rule> kCategoryRule<OpCategory::Creation> = creation;
template <>
constexpr std::optional<Rule> kCategoryRule<OpCategory::Reduction> = reduction;
template <>
constexpr std::optional<Rule> kCategoryRule<OpCategory::Matmul> = matmul;
template <>
constexpr std::optional<Rule> kCategoryRule<OpCategory::Layout> = layout;
template <>
constexpr std::optional<Rule> kCategoryRule<OpCategory::Library> = library;
template <>
constexpr std::optional<Rule> kCategoryRule<OpCategory::DataDependent> =
    dataDependent;
template <>
constexpr std::optional<Rule> kCategoryRule<OpCategory::Control> = control;
template <>
constexpr std::optional<Rule> kCategoryRule<OpCategory::Call> = call;
template <>
constexpr std::optional<Rule> kCategoryRule<OpCategory::Check> = check;

template <OpCode C> constexpr Rule checkedRule() {
  static_assert(kCategoryRule<categoryOf(C)>.has_value(),
                "an op category without a shape rule: give it a "
                "kCategoryRule<OpCategory::...> (ir/ShapeRules.cpp)");
  return *kCategoryRule<categoryOf(C)>;
}

/// Every op's rule, indexed by OpCode.
constexpr Rule kRules[] = {
#define TSL_OP(Id, ...) checkedRule<OpCode::Id>(),
#include "ir/Ops.def"
};
} // namespace

} // namespace shape_rules

bool inferResultTypes(ShapeContext &ctx, std::vector<TensorType> &results) {
  results.clear();
  shape_rules::Rule rule =
      static_cast<size_t>(ctx.op.code) < kNumOps
          ? shape_rules::kRules[static_cast<size_t>(ctx.op.code)]
          : nullptr;
  bool ok = rule ? rule(ctx, results) : ctx.fail("unknown op");
  // A rule that read an attribute the op lacks computed from a default.
  if (std::optional<Error> internal = takeInternalError()) {
    ctx.error = internal->message;
    ctx.errorKind = ErrorKind::Internal;
    return false;
  }
  return ok;
}

} // namespace tsl
