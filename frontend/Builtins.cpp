// Built-in functions: the operations of LANGUAGE.md §5 that are called by
// name (exp, sum, reshape, conv2d, nonzero, ...).
#include "frontend/ElaboratorImpl.h"

#include <set>

namespace tsl {

namespace {

const std::map<std::string, OpCode> &unaryBuiltins() {
  static const std::map<std::string, OpCode> m = {
      {"exp", OpCode::Exp},   {"log", OpCode::Log},
      {"sqrt", OpCode::Sqrt}, {"rsqrt", OpCode::Rsqrt},
      {"tanh", OpCode::Tanh}, {"sigmoid", OpCode::Sigmoid},
      {"relu", OpCode::Relu}, {"gelu", OpCode::Gelu},
      {"abs", OpCode::Abs},   {"sin", OpCode::Sin},
      {"cos", OpCode::Cos}};
  return m;
}

const std::set<std::string> &otherBuiltins() {
  static const std::set<std::string> s = {
      "pow",          "max",     "min",           "where",  "cast",
      "sum",          "mean",    "argmax",        "matmul", "reshape",
      "transpose",    "permute", "expand",        "concat", "pad",
      "arange",       "zeros",   "ones",          "full",   "conv2d",
      "max_pool2d",   "nonzero", "masked_select", "unique", "item",
      "index_select", "topk",    "size",          "numel"};
  return s;
}

/// Binds call arguments to a builtin's parameter list. A name ending in '?'
/// is optional.
struct Bound {
  std::vector<const SemValue *> v;
  const SemValue *operator[](size_t i) const { return v[i]; }
};

bool bindArgs(Elaborator &el, const std::string &fn,
              const std::vector<std::string> &params,
              const std::vector<CallArg> &args, SourceRange range, Bound &out) {
  out.v.assign(params.size(), nullptr);
  size_t pos = 0;
  auto plain = [](std::string s) {
    if (!s.empty() && s.back() == '?')
      s.pop_back();
    return s;
  };
  for (const CallArg &a : args) {
    if (a.name.empty()) {
      if (pos >= params.size())
        return el.error(a.value.range, "'" + fn + "' takes at most " +
                                           std::to_string(params.size()) +
                                           " arguments");
      out.v[pos++] = &a.value;
      continue;
    }
    size_t k = 0;
    while (k < params.size() && plain(params[k]) != a.name)
      ++k;
    if (k == params.size()) {
      std::string names;
      for (auto &p : params)
        names += (names.empty() ? "" : ", ") + plain(p);
      return el.error(a.nameRange,
                      "'" + fn + "' has no parameter named '" + a.name + "'",
                      "its parameters are: " + names);
    }
    if (out.v[k])
      return el.error(a.nameRange, "argument '" + a.name + "' is given twice");
    out.v[k] = &a.value;
  }
  for (size_t k = 0; k < params.size(); ++k)
    if (!out.v[k] && params[k].back() != '?')
      return el.error(range, "'" + fn + "' needs argument '" + params[k] + "'");
  return true;
}

} // namespace

bool Elaborator::isBuiltin(const std::string &name) {
  return unaryBuiltins().count(name) || otherBuiltins().count(name);
}

bool Elaborator::callBuiltin(const std::string &name,
                             std::vector<CallArg> &args, SourceRange range,
                             SemValue &out) {
  Bound a;
  auto tensorArg = [&](const SemValue *v, const std::string &what,
                       ValueId &id) {
    if (!v || v->kind != SemValue::Kind::Tensor)
      return error(v ? v->range : range,
                   "'" + name + "' needs a tensor for " + what + ", got " +
                       (v ? kindName(v->kind) : "nothing"));
    id = v->tensor;
    return true;
  };
  auto result = [&](ValueId id) {
    out = SemValue::ofTensor(id, range);
    return true;
  };
  auto dtypeArg = [&](const SemValue *v, DType dflt, DType &dt) {
    if (!v) {
      dt = dflt;
      return true;
    }
    if (v->kind != SemValue::Kind::DType)
      return error(
          v->range,
          "expected an element type (bool i8 i32 i64 f16 bf16 f32 f64), got " +
              std::string(kindName(v->kind)));
    dt = v->dtype;
    return true;
  };
  auto boolArg = [&](const SemValue *v, bool &b) {
    if (!v) {
      b = false;
      return true;
    }
    if (v->kind != SemValue::Kind::Cond || !v->c.isConst())
      return error(v->range, "expected true or false");
    b = v->c.kind() == SymCond::Kind::True;
    return true;
  };
  auto numberArg = [&](const SemValue *v, Number &n) {
    if (!v) {
      n = Number::ofInt(0);
      return true;
    }
    if (v->kind == SemValue::Kind::Float) {
      n = Number::ofFloat(v->f);
      return true;
    }
    if (v->kind == SemValue::Kind::Int && v->i.isConst()) {
      n = Number::ofInt(v->i.constValue());
      return true;
    }
    if (v->kind == SemValue::Kind::Cond && v->c.isConst()) {
      n = Number::ofInt(v->c.kind() == SymCond::Kind::True);
      return true;
    }
    return error(v->range, "expected a number literal");
  };

  if (auto u = unaryBuiltins().find(name); u != unaryBuiltins().end()) {
    ValueId x, r;
    if (!bindArgs(*this, name, {"x"}, args, range, a) ||
        !tensorArg(a[0], "x", x) || !emit1(u->second, {x}, {}, range, r))
      return false;
    return result(r);
  }
  if (name == "size" || name == "numel") {
    bool isSize = name == "size";
    if (!bindArgs(*this, name,
                  isSize ? std::vector<std::string>{"x", "axis"}
                         : std::vector<std::string>{"x"},
                  args, range, a))
      return false;
    ValueId x;
    if (!tensorArg(a[0], "x", x))
      return false;
    const TensorType &t = fn.type(x);
    if (!isSize) {
      out = SemValue::ofInt(t.numel(), range);
      return checkSize(out.i, range);
    }
    int64_t axis;
    if (!asConstInt(*a[1], "the axis", axis) ||
        !normalizeAxis(axis, t.rank(), a[1]->range, axis))
      return false;
    out = SemValue::ofInt(t.dims[axis], range);
    return true;
  }
  if (name == "max" || name == "min") {
    // max(a, b) with two tensors (or a tensor and a scalar) is elementwise;
    // max(x), max(x, axis) and max(x, axis=k) reduce. On ints it is size
    // min/max.
    bool elementwise = args.size() == 2 && args[1].name.empty() &&
                       (args[1].value.kind == SemValue::Kind::Tensor ||
                        args[1].value.kind == SemValue::Kind::Float);
    if (args.size() == 2 && args[0].value.kind == SemValue::Kind::Int &&
        args[1].value.kind == SemValue::Kind::Int && args[0].name.empty() &&
        args[1].name.empty()) {
      out = SemValue::ofInt(
          name == "max" ? SymExpr::max(args[0].value.i, args[1].value.i)
                        : SymExpr::min(args[0].value.i, args[1].value.i),
          range);
      return checkSize(out.i, range);
    }
    if (elementwise)
      return tensorBinary(name == "max" ? OpCode::Maximum : OpCode::Minimum,
                          args[0].value, args[1].value, range, out);
  }
  if (name == "sum" || name == "mean" || name == "max" || name == "min" ||
      name == "argmax") {
    if (!bindArgs(*this, name, {"x", "axis?", "keepdim?"}, args, range, a))
      return false;
    ValueId x, r;
    if (!tensorArg(a[0], "x", x))
      return false;
    std::vector<int64_t> axes;
    if (a[1] && !asConstIntList(*a[1], "the axis", axes))
      return false;
    size_t rank = fn.type(x).rank();
    for (int64_t &ax : axes)
      if (!normalizeAxis(ax, rank, a[1]->range, ax))
        return false;
    bool keep;
    if (!boolArg(a[2], keep))
      return false;
    OpCode code = name == "sum"    ? OpCode::ReduceSum
                  : name == "mean" ? OpCode::ReduceMean
                  : name == "max"  ? OpCode::ReduceMax
                  : name == "min"  ? OpCode::ReduceMin
                                   : OpCode::Argmax;
    if (code == OpCode::Argmax && axes.size() > 1)
      return error(a[1]->range, "argmax takes a single axis");
    if (!emit1(code, {x}, {{"axes", axes}, {"keepdim", keep}}, range, r))
      return false;
    return result(r);
  }
  if (name == "pow") {
    if (!bindArgs(*this, name, {"x", "y"}, args, range, a))
      return false;
    return tensorBinary(OpCode::Pow, *a[0], *a[1], range, out);
  }
  if (name == "where") {
    if (!bindArgs(*this, name, {"cond", "a", "b"}, args, range, a))
      return false;
    ValueId c;
    if (!tensorArg(a[0], "cond", c))
      return false;
    std::optional<DType> like;
    if (a[1]->kind == SemValue::Kind::Tensor)
      like = fn.type(a[1]->tensor).dtype;
    else if (a[2]->kind == SemValue::Kind::Tensor)
      like = fn.type(a[2]->tensor).dtype;
    ValueId x, y, r;
    if (!toTensor(*a[1], like, a[1]->range, x) ||
        !toTensor(*a[2], like, a[2]->range, y) ||
        !emit1(OpCode::Where, {c, x, y}, {}, range, r))
      return false;
    return result(r);
  }
  if (name == "cast") {
    if (!bindArgs(*this, name, {"x", "dtype"}, args, range, a))
      return false;
    ValueId x, r;
    DType dt;
    if (!dtypeArg(a[1], DType::F32, dt))
      return false;
    if (a[0]->kind == SemValue::Kind::Int ||
        a[0]->kind == SemValue::Kind::Float) {
      // cast(size, f32): a 0-d tensor holding the size's value.
      if (!toTensor(*a[0], dt, a[0]->range, x))
        return false;
      return result(x);
    }
    if (!tensorArg(a[0], "x", x))
      return false;
    if (fn.type(x).dtype == dt)
      return result(x);
    if (!emit1(OpCode::Cast, {x}, {{"dtype", dt}}, range, r))
      return false;
    return result(r);
  }
  if (name == "matmul") {
    if (!bindArgs(*this, name, {"a", "b"}, args, range, a))
      return false;
    return tensorBinary(OpCode::Matmul, *a[0], *a[1], range, out);
  }
  if (name == "reshape" || name == "expand") {
    if (!bindArgs(*this, name, {"x", "shape"}, args, range, a))
      return false;
    ValueId x, r;
    std::vector<SymExpr> shape;
    if (!tensorArg(a[0], "x", x) || !asIntList(*a[1], "the shape", shape))
      return false;
    for (const SymExpr &d : shape)
      if (d.isConst() && d.constValue() < -1)
        return error(a[1]->range,
                     "sizes must be non-negative (or -1), got " + d.str());
    if (!emit1(name == "reshape" ? OpCode::Reshape : OpCode::Expand, {x},
               {{"shape", shape}}, range, r))
      return false;
    return result(r);
  }
  if (name == "transpose") {
    if (!bindArgs(*this, name, {"x", "dim0", "dim1"}, args, range, a))
      return false;
    ValueId x, r;
    int64_t i, j;
    if (!tensorArg(a[0], "x", x) || !asConstInt(*a[1], "dim0", i) ||
        !asConstInt(*a[2], "dim1", j))
      return false;
    size_t rank = fn.type(x).rank();
    if (!normalizeAxis(i, rank, a[1]->range, i) ||
        !normalizeAxis(j, rank, a[2]->range, j))
      return false;
    std::vector<int64_t> perm(rank);
    for (size_t k = 0; k < rank; ++k)
      perm[k] = static_cast<int64_t>(k);
    std::swap(perm[i], perm[j]);
    if (!emit1(OpCode::Permute, {x}, {{"perm", perm}}, range, r))
      return false;
    return result(r);
  }
  if (name == "permute") {
    if (!bindArgs(*this, name, {"x", "dims"}, args, range, a))
      return false;
    ValueId x, r;
    std::vector<int64_t> perm;
    if (!tensorArg(a[0], "x", x) || !asConstIntList(*a[1], "the axes", perm))
      return false;
    size_t rank = fn.type(x).rank();
    if (perm.size() != rank)
      return error(a[1]->range, "permute needs " + std::to_string(rank) +
                                    " axes, got " +
                                    std::to_string(perm.size()));
    for (int64_t &p : perm)
      if (!normalizeAxis(p, rank, a[1]->range, p))
        return false;
    if (!emit1(OpCode::Permute, {x}, {{"perm", perm}}, range, r))
      return false;
    return result(r);
  }
  if (name == "concat") {
    if (!bindArgs(*this, name, {"tensors", "axis?"}, args, range, a))
      return false;
    if (a[0]->kind != SemValue::Kind::List &&
        a[0]->kind != SemValue::Kind::Tuple)
      return error(a[0]->range, "concat needs a list of tensors like [a, b]");
    if (a[0]->elems.empty())
      return error(a[0]->range, "concat needs at least one tensor");
    std::vector<ValueId> ids;
    for (const SemValue &v : a[0]->elems) {
      ValueId id;
      if (!tensorArg(&v, "each element", id))
        return false;
      ids.push_back(id);
    }
    int64_t axis = 0;
    if (a[1] && !asConstInt(*a[1], "the axis", axis))
      return false;
    if (!normalizeAxis(axis, fn.type(ids[0]).rank(), a[1] ? a[1]->range : range,
                       axis))
      return false;
    ValueId r;
    if (!emit1(OpCode::Concat, ids, {{"axis", axis}}, range, r))
      return false;
    return result(r);
  }
  if (name == "pad") {
    if (!bindArgs(*this, name, {"x", "pad", "value?"}, args, range, a))
      return false;
    ValueId x, r;
    std::vector<SymExpr> amounts;
    Number value;
    if (!tensorArg(a[0], "x", x) || !asIntList(*a[1], "the padding", amounts) ||
        !numberArg(a[2], value))
      return false;
    size_t rank = fn.type(x).rank();
    if (amounts.size() % 2 != 0 || amounts.size() > 2 * rank)
      return error(a[1]->range, "pad takes pairs (before, after) for up to " +
                                    std::to_string(rank) +
                                    " axes, last axis first; got " +
                                    std::to_string(amounts.size()) + " values");
    std::vector<SymExpr> lo(rank, SymExpr(0)), hi(rank, SymExpr(0));
    for (size_t k = 0; k < amounts.size() / 2; ++k) {
      lo[rank - 1 - k] = amounts[2 * k];
      hi[rank - 1 - k] = amounts[2 * k + 1];
    }
    if (!emit1(OpCode::Pad, {x}, {{"lo", lo}, {"hi", hi}, {"value", value}},
               range, r))
      return false;
    return result(r);
  }
  if (name == "arange") {
    if (!bindArgs(*this, name, {"n", "dtype?"}, args, range, a))
      return false;
    SymExpr n;
    DType dt;
    ValueId r;
    if (!asInt(*a[0], "the length", n) || !dtypeArg(a[1], DType::I64, dt) ||
        !emit1(OpCode::Arange, {}, {{"n", n}, {"dtype", dt}}, range, r))
      return false;
    return result(r);
  }
  if (name == "zeros" || name == "ones" || name == "full") {
    bool isFull = name == "full";
    if (!bindArgs(*this, name,
                  isFull ? std::vector<std::string>{"shape", "value", "dtype?"}
                         : std::vector<std::string>{"shape", "dtype?"},
                  args, range, a))
      return false;
    std::vector<SymExpr> shape;
    Number value = Number::ofInt(name == "ones" ? 1 : 0);
    DType dt;
    if (!asIntList(*a[0], "the shape", shape) ||
        (isFull && !numberArg(a[1], value)) ||
        !dtypeArg(a[isFull ? 2 : 1], DType::F32, dt))
      return false;
    ValueId r;
    if (!emit1(OpCode::Full, {},
               {{"shape", shape}, {"value", value}, {"dtype", dt}}, range, r))
      return false;
    return result(r);
  }
  if (name == "conv2d" || name == "max_pool2d") {
    bool conv = name == "conv2d";
    if (!bindArgs(*this, name,
                  conv ? std::vector<std::string>{"x", "w", "bias?", "stride?",
                                                  "padding?"}
                       : std::vector<std::string>{"x", "kernel", "stride?",
                                                  "padding?"},
                  args, range, a))
      return false;
    ValueId x;
    if (!tensorArg(a[0], "x", x))
      return false;
    std::vector<ValueId> operands{x};
    std::map<std::string, Attr> attrs;
    auto pair = [&](const SemValue *v, int64_t dflt,
                    std::vector<int64_t> &out2) {
      out2 = {dflt, dflt};
      if (!v)
        return true;
      std::vector<int64_t> vals;
      if (!asConstIntList(*v, "this argument", vals))
        return false;
      if (vals.size() == 1)
        out2 = {vals[0], vals[0]};
      else if (vals.size() == 2)
        out2 = vals;
      else
        return error(v->range, "expected one value or two (height, width)");
      return true;
    };
    std::vector<int64_t> stride, padding;
    if (conv) {
      ValueId w;
      if (!tensorArg(a[1], "the weights", w))
        return false;
      operands.push_back(w);
      if (a[2]) {
        ValueId b;
        if (!tensorArg(a[2], "the bias", b))
          return false;
        operands.push_back(b);
      }
      if (!pair(a[3], 1, stride) || !pair(a[4], 0, padding))
        return false;
    } else {
      std::vector<int64_t> kernel;
      if (!pair(a[1], 1, kernel) || !pair(a[2], 0, stride) ||
          !pair(a[3], 0, padding))
        return false;
      if (!a[2])
        stride = kernel;
      attrs["kernel"] = kernel;
    }
    attrs["stride"] = stride;
    attrs["padding"] = padding;
    ValueId r;
    if (!emit1(conv ? OpCode::Conv2d : OpCode::MaxPool2d, operands, attrs,
               range, r))
      return false;
    return result(r);
  }
  if (name == "nonzero" || name == "unique") {
    if (!bindArgs(*this, name, {"x"}, args, range, a))
      return false;
    ValueId x, r;
    if (!tensorArg(a[0], "x", x) ||
        !emit1(name == "nonzero" ? OpCode::Nonzero : OpCode::Unique, {x}, {},
               range, r))
      return false;
    return result(r);
  }
  if (name == "masked_select") {
    if (!bindArgs(*this, name, {"x", "mask"}, args, range, a))
      return false;
    ValueId x, m, r;
    if (!tensorArg(a[0], "x", x) || !tensorArg(a[1], "the mask", m) ||
        !emit1(OpCode::MaskedSelect, {x, m}, {}, range, r))
      return false;
    return result(r);
  }
  if (name == "item") {
    if (!bindArgs(*this, name, {"x"}, args, range, a))
      return false;
    ValueId x;
    if (!tensorArg(a[0], "x", x))
      return false;
    SymExpr u = env.freshUnbacked(INT64_MIN, std::nullopt,
                                  "the value of item(...)", range);
    // Item ints may be negative: widen the symbol's range.
    std::vector<ValueId> none;
    if (!emit(OpCode::Item, {x}, {{"sym", u}}, range, none))
      return false;
    out = SemValue::ofInt(u, range);
    return true;
  }
  if (name == "index_select") {
    if (!bindArgs(*this, name, {"x", "axis", "index"}, args, range, a))
      return false;
    ValueId x, idx, r;
    int64_t axis;
    if (!tensorArg(a[0], "x", x) || !asConstInt(*a[1], "the axis", axis) ||
        !tensorArg(a[2], "the index", idx) ||
        !normalizeAxis(axis, fn.type(x).rank(), a[1]->range, axis) ||
        !emit1(OpCode::IndexSelect, {x, idx}, {{"axis", axis}}, range, r))
      return false;
    return result(r);
  }
  if (name == "topk") {
    if (!bindArgs(*this, name, {"x", "k"}, args, range, a))
      return false;
    ValueId x;
    SymExpr k;
    std::vector<ValueId> rs;
    if (!tensorArg(a[0], "x", x) || !asInt(*a[1], "k", k) ||
        !emit(OpCode::Topk, {x}, {{"k", k}}, range, rs))
      return false;
    out = SemValue();
    out.kind = SemValue::Kind::Tuple;
    out.range = range;
    out.elems = {SemValue::ofTensor(rs[0], range),
                 SemValue::ofTensor(rs[1], range)};
    return true;
  }
  return error(range, "not supported: builtin '" + name + "'");
}

} // namespace tsl
