#include "ir/ShapeRules.h"

namespace tsl {

ShapeContext::ShapeContext(ShapeEnv &env, const Operation &op,
                           std::vector<TensorType> operands, SourceRange range)
    : op(op), operands(std::move(operands)), env(env), range(range) {}

bool ShapeContext::fail(std::string message) {
  if (error.empty())
    error = std::move(message);
  return false;
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

namespace {

bool sameDtypes(ShapeContext &ctx, size_t first) {
  for (size_t i = first + 1; i < ctx.operands.size(); ++i)
    if (ctx.operands[i].dtype != ctx.operands[first].dtype)
      return ctx.fail(std::string("mismatched element types ") +
                      dtypeName(ctx.operands[first].dtype) + " and " +
                      dtypeName(ctx.operands[i].dtype) + " in '" +
                      opInfo(ctx.op.code).name + "'");
  return true;
}

bool needFloat(ShapeContext &ctx, const TensorType &t) {
  if (!isFloat(t.dtype))
    return ctx.fail(std::string("'") + opInfo(ctx.op.code).name +
                    "' needs a floating-point tensor, got " + t.str());
  return true;
}

bool needNumeric(ShapeContext &ctx, const TensorType &t) {
  if (t.dtype == DType::Bool)
    return ctx.fail(std::string("'") + opInfo(ctx.op.code).name +
                    "' does not apply to bool tensors, got " + t.str());
  return true;
}

bool needBool(ShapeContext &ctx, const TensorType &t) {
  if (t.dtype != DType::Bool)
    return ctx.fail(std::string("'") + opInfo(ctx.op.code).name +
                    "' needs a bool tensor, got " + t.str());
  return true;
}

bool nonNegative(ShapeContext &ctx, SymExpr e, const std::string &what) {
  return ctx.require(SymCond::ge(e, 0), what + " must not be negative",
                     what + " is negative (" + e.str() + ")");
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
  if (c == OpCode::Argmax && axes.size() > 1)
    return ctx.fail("argmax takes one axis");
  if (c == OpCode::ReduceMean && !needFloat(ctx, x))
    return false;
  if (c != OpCode::ReduceMax && c != OpCode::ReduceMin && !needNumeric(ctx, x))
    return false;
  TensorType out;
  out.dtype = c == OpCode::Argmax ? DType::I64 : x.dtype;
  for (size_t i = 0; i < x.rank(); ++i) {
    if (reduced[i] && (c == OpCode::ReduceMax || c == OpCode::ReduceMin ||
                       c == OpCode::Argmax)) {
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
  if (!sameDtypes(ctx, 0) || !needNumeric(ctx, a))
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
  TensorType out{a.dtype, batch};
  if (!aVec)
    out.dims.push_back(a.dims[a.rank() - 2]);
  if (!bVec)
    out.dims.push_back(b.dims[b.rank() - 1]);
  results.push_back(out);
  return true;
}

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
    if (!sameDtypes(ctx, 0) || !needFloat(ctx, x))
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
    if (!needNumeric(ctx, x))
      return false;
    kh = kernel[0];
    kw = kernel[1];
  }
  TensorType out{x.dtype, {x.dims[0], channels}};
  for (int i = 0; i < 2; ++i) {
    SymExpr in = x.dims[2 + i], k = i ? kw : kh;
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

std::string operandList(const ShapeContext &ctx) {
  std::string s;
  for (size_t i = 0; i < ctx.operands.size(); ++i)
    s += (i ? ", " : "") + ctx.operands[i].str();
  return s;
}

} // namespace

bool inferResultTypes(ShapeContext &ctx, std::vector<TensorType> &results) {
  const Operation &op = ctx.op;
  const auto &in = ctx.operands;
  results.clear();
  switch (op.code) {
  case OpCode::Add:
  case OpCode::Sub:
  case OpCode::Mul:
  case OpCode::Div:
  case OpCode::Pow:
  case OpCode::Maximum:
  case OpCode::Minimum:
  case OpCode::Lt:
  case OpCode::Le:
  case OpCode::Gt:
  case OpCode::Ge:
  case OpCode::Eq:
  case OpCode::Ne:
  case OpCode::And:
  case OpCode::Or: {
    if (!sameDtypes(ctx, 0))
      return false;
    bool logical = op.code == OpCode::And || op.code == OpCode::Or;
    bool compare = op.code >= OpCode::Lt && op.code <= OpCode::Ne;
    if (logical && !needBool(ctx, in[0]))
      return false;
    if (!logical && !compare && op.code != OpCode::Maximum &&
        op.code != OpCode::Minimum && !needNumeric(ctx, in[0]))
      return false;
    if (op.code == OpCode::Pow && !needFloat(ctx, in[0]))
      return false;
    TensorType out;
    out.dtype = compare ? DType::Bool : in[0].dtype;
    if (!ctx.broadcastShapes(in, out.dims))
      return false;
    results.push_back(out);
    return true;
  }
  case OpCode::Neg:
  case OpCode::Abs:
  case OpCode::Relu:
    if (!needNumeric(ctx, in[0]))
      return false;
    results.push_back(in[0]);
    return true;
  case OpCode::Not:
    if (!needBool(ctx, in[0]))
      return false;
    results.push_back(in[0]);
    return true;
  case OpCode::Exp:
  case OpCode::Log:
  case OpCode::Sqrt:
  case OpCode::Rsqrt:
  case OpCode::Tanh:
  case OpCode::Sigmoid:
  case OpCode::Gelu:
  case OpCode::Sin:
  case OpCode::Cos:
    if (!needFloat(ctx, in[0]))
      return false;
    results.push_back(in[0]);
    return true;
  case OpCode::Where: {
    if (!needBool(ctx, in[0]))
      return false;
    if (in[1].dtype != in[2].dtype)
      return ctx.fail(
          std::string("where needs both branches of one element type, got ") +
          dtypeName(in[1].dtype) + " and " + dtypeName(in[2].dtype));
    TensorType out;
    out.dtype = in[1].dtype;
    if (!ctx.broadcastShapes(in, out.dims))
      return false;
    results.push_back(out);
    return true;
  }
  case OpCode::Cast:
    results.push_back({op.dtypeAttr("dtype"), in[0].dims});
    return true;
  case OpCode::Constant:
  case OpCode::SymScalar:
    results.push_back({op.dtypeAttr("dtype"), {}});
    return true;
  case OpCode::Full: {
    for (const SymExpr &d : op.exprsAttr("shape"))
      if (!nonNegative(ctx, d, "size"))
        return false;
    results.push_back({op.dtypeAttr("dtype"), op.exprsAttr("shape")});
    return true;
  }
  case OpCode::Arange:
    if (!nonNegative(ctx, op.exprAttr("n"), "arange length"))
      return false;
    results.push_back({op.dtypeAttr("dtype"), {op.exprAttr("n")}});
    return true;
  case OpCode::ReduceSum:
  case OpCode::ReduceMean:
  case OpCode::ReduceMax:
  case OpCode::ReduceMin:
  case OpCode::Argmax:
    return reduction(ctx, results);
  case OpCode::Matmul:
    return matmul(ctx, results);
  case OpCode::Reshape:
    return reshape(ctx, results);
  case OpCode::Permute: {
    const auto &perm = op.intsAttr("perm");
    if (perm.size() != in[0].rank())
      return ctx.fail("permute needs " + std::to_string(in[0].rank()) +
                      " axes for " + in[0].str() + ", got " +
                      std::to_string(perm.size()));
    std::vector<bool> seen(perm.size(), false);
    TensorType out{in[0].dtype, {}};
    for (int64_t p : perm) {
      if (p < 0 || static_cast<size_t>(p) >= perm.size() || seen[p])
        return ctx.fail("permute axes must be a permutation of 0.." +
                        std::to_string(static_cast<int64_t>(perm.size()) - 1));
      seen[p] = true;
      out.dims.push_back(in[0].dims[p]);
    }
    results.push_back(out);
    return true;
  }
  case OpCode::Expand: {
    const auto &shape = op.exprsAttr("shape");
    const TensorType &x = in[0];
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
      } else {
        if (!ctx.require(SymCond::eq(d, t), "expand of a non-1 axis",
                         "expand: axis " + std::to_string(i - offset) + " of " +
                             x.str() + " has size " + d.str() +
                             ", which is not 1 and not " + t.str()))
          return false;
        out.dims.push_back(t);
      }
    }
    results.push_back(out);
    return true;
  }
  case OpCode::Concat: {
    int64_t axis = op.intAttr("axis");
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
  case OpCode::Slice: {
    const auto &starts = op.exprsAttr("starts");
    const auto &sizes = op.exprsAttr("sizes");
    const TensorType &x = in[0];
    if (starts.size() != x.rank() || sizes.size() != x.rank())
      return ctx.fail("slice needs a start and a size for each of the " +
                      std::to_string(x.rank()) + " axes of " + x.str());
    for (size_t i = 0; i < x.rank(); ++i) {
      if (!ctx.require(SymCond::ge(starts[i], 0), "slice start in bounds",
                       "slice start " + starts[i].str() + " is negative") ||
          !ctx.require(SymCond::ge(sizes[i], 0), "slice size in bounds",
                       "slice size " + sizes[i].str() + " is negative") ||
          !ctx.require(SymCond::le(starts[i] + sizes[i], x.dims[i]),
                       "slice in bounds",
                       "slice [" + starts[i].str() + ", " +
                           (starts[i] + sizes[i]).str() +
                           ") is out of bounds for axis " + std::to_string(i) +
                           " of size " + x.dims[i].str()))
        return false;
    }
    results.push_back({x.dtype, sizes});
    return true;
  }
  case OpCode::Pad: {
    const auto &lo = op.exprsAttr("lo");
    const auto &hi = op.exprsAttr("hi");
    const TensorType &x = in[0];
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
  case OpCode::Conv2d:
    return convLike(ctx, results, true);
  case OpCode::MaxPool2d:
    return convLike(ctx, results, false);
  case OpCode::Nonzero: {
    SymExpr u = ctx.fresh(0, in[0].numel(), "the row count of nonzero(...)");
    results.push_back(
        {DType::I64, {u, SymExpr(static_cast<int64_t>(in[0].rank()))}});
    return true;
  }
  case OpCode::MaskedSelect: {
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
    results.push_back({in[0].dtype, {u}});
    return true;
  }
  case OpCode::Unique: {
    SymExpr u = ctx.fresh(0, in[0].numel(), "the element count of unique(...)");
    results.push_back({in[0].dtype, {u}});
    return true;
  }
  case OpCode::Item:
    if (isFloat(in[0].dtype))
      return ctx.fail(
          "item() gives an int and needs an integer or bool tensor, got " +
          in[0].str());
    return ctx.require(SymCond::eq(in[0].numel(), 1),
                       "item of a one-element tensor",
                       "item() needs exactly one element, " + in[0].str() +
                           " has " + in[0].numel().str());
  case OpCode::IndexSelect: {
    int64_t axis = op.intAttr("axis");
    const TensorType &x = in[0], &idx = in[1];
    if (axis < 0 || static_cast<size_t>(axis) >= x.rank())
      return ctx.fail("index_select axis " + std::to_string(axis) +
                      " is out of range for " + x.str());
    if (idx.rank() != 1 || !isInteger(idx.dtype))
      return ctx.fail("index_select needs a 1-d integer index tensor, got " +
                      idx.str());
    TensorType out = x;
    out.dims[axis] = idx.dims[0];
    results.push_back(out);
    return true;
  }
  case OpCode::Topk: {
    const TensorType &x = in[0];
    SymExpr k = op.exprAttr("k");
    if (x.rank() == 0)
      return ctx.fail("topk needs a tensor of rank 1 or more, got " + x.str());
    if (!needNumeric(ctx, x))
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
  case OpCode::Assert:
    return true;
  }
  return ctx.fail("unknown op");
}

} // namespace tsl
