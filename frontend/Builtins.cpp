// Built-in functions: the operations of LANGUAGE.md §5 that are called by
// name (exp, sum, reshape, conv2d, nonzero, ...). A table maps each name to
// its handler; builtins that are exactly one op (Ops.def's Builtin column)
// share two generic handlers, so adding such an op needs no code here.
#include "frontend/ElaboratorImpl.h"
#include "ir/Interpreter.h"

#include <algorithm>

namespace tsl {

namespace {

/// One call of a builtin: its arguments bound to parameters and the helpers
/// every handler uses to read them.
struct BuiltinCall {
  Elaborator &el;
  const std::string &name;
  std::vector<CallArg> &args;
  SourceRange range;
  SemValue &out;
  /// The op of a builtin that is exactly one op (generic handlers).
  OpCode op = OpCode::Assert;
  /// The argument bound to each parameter by bind(); null when omitted.
  std::vector<const SemValue *> a;

  /// Binds the arguments to \p params (a name ending in '?' is optional):
  /// positional first, then by name.
  bool bind(const std::vector<std::string> &params);
  bool tensorArg(const SemValue *v, const std::string &what, ValueId &id);
  bool dtypeArg(const SemValue *v, DType dflt, DType &dt);
  bool boolArg(const SemValue *v, bool &b);
  bool numberArg(const SemValue *v, Number &n);
  /// Sets the result to tensor \p id; true.
  bool result(ValueId id) {
    out = SemValue::ofTensor(id, range);
    return true;
  }
};

bool BuiltinCall::bind(const std::vector<std::string> &params) {
  a.assign(params.size(), nullptr);
  size_t pos = 0;
  auto plain = [](std::string s) {
    if (!s.empty() && s.back() == '?')
      s.pop_back();
    return s;
  };
  for (const CallArg &arg : args) {
    if (arg.name.empty()) {
      if (pos >= params.size())
        return el.error(arg.value.range, "'" + name + "' takes at most " +
                                             std::to_string(params.size()) +
                                             " arguments");
      a[pos++] = &arg.value;
      continue;
    }
    size_t k = 0;
    while (k < params.size() && plain(params[k]) != arg.name)
      ++k;
    if (k == params.size()) {
      std::string names;
      for (auto &p : params)
        names += (names.empty() ? "" : ", ") + plain(p);
      return el.error(arg.nameRange,
                      "'" + name + "' has no parameter named '" + arg.name +
                          "'",
                      "its parameters are: " + names);
    }
    if (a[k])
      return el.error(arg.nameRange,
                      "argument '" + arg.name + "' is given twice");
    a[k] = &arg.value;
  }
  for (size_t k = 0; k < params.size(); ++k)
    if (!a[k] && params[k].back() != '?')
      return el.error(range,
                      "'" + name + "' needs argument '" + params[k] + "'");
  return true;
}

bool BuiltinCall::tensorArg(const SemValue *v, const std::string &what,
                            ValueId &id) {
  if (!v || v->kind != SemValue::Kind::Tensor)
    return el.error(v ? v->range : range,
                    "'" + name + "' needs a tensor for " + what + ", got " +
                        (v ? kindName(v->kind) : "nothing"));
  id = v->tensor;
  return true;
}

bool BuiltinCall::dtypeArg(const SemValue *v, DType dflt, DType &dt) {
  if (!v) {
    dt = dflt;
    return true;
  }
  if (v->kind != SemValue::Kind::DType)
    return el.error(
        v->range,
        "expected an element type (bool i8 i32 i64 f16 bf16 f32 f64), got " +
            std::string(kindName(v->kind)));
  dt = v->dtype;
  return true;
}

bool BuiltinCall::boolArg(const SemValue *v, bool &b) {
  if (!v) {
    b = false;
    return true;
  }
  if (v->kind != SemValue::Kind::Cond || !v->c.isConst())
    return el.error(v->range, "expected true or false");
  b = v->c.kind() == SymCond::Kind::True;
  return true;
}

bool BuiltinCall::numberArg(const SemValue *v, Number &n) {
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
  return el.error(v->range, "expected a number literal");
}

// --- handlers, one per builtin (or family of builtins) ---

/// Ops.def builtins of one operand: f(x).
bool opOfOneTensor(BuiltinCall &c) {
  ValueId x, r;
  if (!c.bind({"x"}))
    return false;
  // A float math op of a number is a number: `log(2.0)`, `sqrt(D)` for a
  // static D (a dynamic size stays an error: it has no value yet).
  const SemValue &a = *c.a[0];
  std::optional<int64_t> whole;
  if (a.kind == SemValue::Kind::Int && a.i.isConst())
    whole = a.i.constValue();
  if ((a.kind == SemValue::Kind::Float || whole) &&
      opTraits(c.op).operands == DTypeRule::Float)
    if (std::optional<double> v =
            unaryFloatMath(c.op, whole ? static_cast<double>(*whole) : a.f)) {
      c.out = SemValue::ofFloat(*v, c.range);
      return true;
    }
  if (a.kind == SemValue::Kind::Int && !whole &&
      opTraits(c.op).operands == DTypeRule::Float)
    return c.el.error(a.range,
                      "'" + c.name + "' of the size " + a.i.str() +
                          ", whose value is known only when the function runs",
                      "make it a tensor first: " + c.name + "(cast(" +
                          a.i.str() + ", f32))");
  if (!c.tensorArg(c.a[0], "x", x) || !c.el.emit1(c.op, {x}, {}, c.range, r))
    return false;
  return c.result(r);
}

/// Ops.def builtins of two operands: f(x, y), scalars converted like the
/// arithmetic operators.
bool opOfTwoTensors(BuiltinCall &c) {
  if (!c.bind({"x", "y"}))
    return false;
  return c.el.tensorBinary(c.op, *c.a[0], *c.a[1], c.range, c.out);
}

bool sizeOrNumel(BuiltinCall &c) {
  bool isSize = c.name == "size";
  if (!c.bind(isSize ? std::vector<std::string>{"x", "axis"}
                     : std::vector<std::string>{"x"}))
    return false;
  ValueId x;
  if (!c.tensorArg(c.a[0], "x", x))
    return false;
  const TensorType &t = c.el.fn.type(x);
  if (!isSize) {
    c.out = SemValue::ofInt(t.numel(), c.range);
    return c.el.checkSize(c.out.i, c.range);
  }
  int64_t axis;
  if (!c.el.asConstInt(*c.a[1], "the axis", axis) ||
      !c.el.normalizeAxis(axis, t.rank(), c.a[1]->range, axis))
    return false;
  c.out = SemValue::ofInt(t.dims[axis], c.range);
  return true;
}

/// sum, mean, max, min, argmax, argmin (x, axis?, keepdim?).
bool reduction(BuiltinCall &c) {
  if (!c.bind({"x", "axis?", "keepdim?"}))
    return false;
  ValueId x, r;
  if (!c.tensorArg(c.a[0], "x", x))
    return false;
  std::vector<int64_t> axes;
  if (c.a[1] && !c.el.asConstIntList(*c.a[1], "the axis", axes))
    return false;
  size_t rank = c.el.fn.type(x).rank();
  for (int64_t &ax : axes)
    if (!c.el.normalizeAxis(ax, rank, c.a[1]->range, ax))
      return false;
  bool keep = false;
  if (!c.boolArg(c.a[2], keep))
    return false;
  OpCode code = c.name == "sum"      ? OpCode::ReduceSum
                : c.name == "mean"   ? OpCode::ReduceMean
                : c.name == "max"    ? OpCode::ReduceMax
                : c.name == "min"    ? OpCode::ReduceMin
                : c.name == "argmin" ? OpCode::Argmin
                                     : OpCode::Argmax;
  if ((code == OpCode::Argmax || code == OpCode::Argmin) && axes.size() > 1)
    return c.el.error(c.a[1]->range, c.name + " takes a single axis");
  if (!c.el.emit1(code, {x}, {{"axes", axes}, {"keepdim", keep}}, c.range, r))
    return false;
  return c.result(r);
}

/// var(x, axis?, keepdim?, correction=1) and std: torch's (the sum of
/// squared deviations from the mean over n - correction; numpy's ddof=0 is
/// correction=0); float tensors. n - correction <= 0 gives inf or nan, as
/// in torch.
bool variance(BuiltinCall &c) {
  if (!c.bind({"x", "axis?", "keepdim?", "correction?"}))
    return false;
  ValueId x;
  if (!c.tensorArg(c.a[0], "x", x))
    return false;
  const TensorType t = c.el.fn.type(x);
  if (!isFloat(t.dtype))
    return c.el.error(c.a[0]->range, "'" + c.name +
                                         "' needs a floating-point tensor, "
                                         "got " +
                                         t.str());
  std::vector<int64_t> axes;
  if (c.a[1] && !c.el.asConstIntList(*c.a[1], "the axis", axes))
    return false;
  for (int64_t &ax : axes)
    if (!c.el.normalizeAxis(ax, t.rank(), c.a[1]->range, ax))
      return false;
  bool keep = false;
  int64_t correction = 1;
  if (!c.boolArg(c.a[2], keep) ||
      (c.a[3] && !c.el.asConstInt(*c.a[3], "the correction", correction)))
    return false;
  SymExpr n(1);
  for (size_t i = 0; i < t.rank(); ++i)
    if (axes.empty() || std::count(axes.begin(), axes.end(), int64_t(i)))
      n = n * t.dims[i];
  ValueId mean, squares, sum;
  SemValue deviation;
  if (!c.el.emit1(OpCode::ReduceMean, {x}, {{"axes", axes}, {"keepdim", true}},
                  c.range, mean) ||
      !c.el.tensorBinary(OpCode::Sub, SemValue::ofTensor(x, c.range),
                         SemValue::ofTensor(mean, c.range), c.range,
                         deviation) ||
      !c.el.emit1(OpCode::Mul, {deviation.tensor, deviation.tensor}, {},
                  c.range, squares) ||
      !c.el.emit1(OpCode::ReduceSum, {squares},
                  {{"axes", axes}, {"keepdim", keep}}, c.range, sum) ||
      !c.el.tensorBinary(OpCode::Div, SemValue::ofTensor(sum, c.range),
                         SemValue::ofInt(n - SymExpr(correction), c.range),
                         c.range, c.out))
    return false;
  if (c.name == "std")
    return c.el.emit1(OpCode::Sqrt, {c.out.tensor}, {}, c.range, sum) &&
           c.result(sum);
  return true;
}

/// masked_fill(x, mask, value): \p value where \p mask holds, else \p x
/// (torch's masked_fill; the mask broadcasts).
bool maskedFill(BuiltinCall &c) {
  if (!c.bind({"x", "mask", "value"}))
    return false;
  ValueId x, mask, v, r;
  if (!c.tensorArg(c.a[0], "x", x) || !c.tensorArg(c.a[1], "mask", mask) ||
      !c.el.toTensor(*c.a[2], c.el.fn.type(x).dtype, c.a[2]->range, v) ||
      !c.el.emit1(OpCode::Where, {mask, v, x}, {}, c.range, r))
    return false;
  return c.result(r);
}

/// max(a, b) with two tensors (or a tensor and a scalar) is elementwise;
/// max(x), max(x, axis) and max(x, axis=k) reduce. On ints it is size
/// min/max.
bool minOrMax(BuiltinCall &c) {
  const auto &args = c.args;
  bool isMax = c.name == "max";
  if (args.size() == 2 && args[0].value.kind == SemValue::Kind::Int &&
      args[1].value.kind == SemValue::Kind::Int && args[0].name.empty() &&
      args[1].name.empty()) {
    c.out =
        SemValue::ofInt(isMax ? SymExpr::max(args[0].value.i, args[1].value.i)
                              : SymExpr::min(args[0].value.i, args[1].value.i),
                        c.range);
    return c.el.checkSize(c.out.i, c.range);
  }
  bool elementwise = args.size() == 2 && args[1].name.empty() &&
                     (args[1].value.kind == SemValue::Kind::Tensor ||
                      args[1].value.kind == SemValue::Kind::Float);
  if (elementwise)
    return c.el.tensorBinary(isMax ? OpCode::Maximum : OpCode::Minimum,
                             args[0].value, args[1].value, c.range, c.out);
  return reduction(c);
}

bool where(BuiltinCall &c) {
  if (!c.bind({"cond", "a", "b"}))
    return false;
  ValueId cond;
  if (!c.tensorArg(c.a[0], "cond", cond))
    return false;
  std::optional<DType> like;
  if (c.a[1]->kind == SemValue::Kind::Tensor)
    like = c.el.fn.type(c.a[1]->tensor).dtype;
  else if (c.a[2]->kind == SemValue::Kind::Tensor)
    like = c.el.fn.type(c.a[2]->tensor).dtype;
  ValueId x, y, r;
  if (!c.el.toTensor(*c.a[1], like, c.a[1]->range, x) ||
      !c.el.toTensor(*c.a[2], like, c.a[2]->range, y) ||
      !c.el.emit1(OpCode::Where, {cond, x, y}, {}, c.range, r))
    return false;
  return c.result(r);
}

bool cast(BuiltinCall &c) {
  if (!c.bind({"x", "dtype"}))
    return false;
  ValueId x, r;
  DType dt;
  if (!c.dtypeArg(c.a[1], DType::F32, dt))
    return false;
  if (c.a[0]->kind == SemValue::Kind::Int ||
      c.a[0]->kind == SemValue::Kind::Float) {
    // cast(size, f32): a 0-d tensor holding the size's value.
    if (!c.el.toTensor(*c.a[0], dt, c.a[0]->range, x))
      return false;
    return c.result(x);
  }
  if (!c.tensorArg(c.a[0], "x", x))
    return false;
  if (c.el.fn.type(x).dtype == dt)
    return c.result(x);
  if (!c.el.emit1(OpCode::Cast, {x}, {{"dtype", dt}}, c.range, r))
    return false;
  return c.result(r);
}

bool matmul(BuiltinCall &c) {
  if (!c.bind({"a", "b"}))
    return false;
  return c.el.tensorBinary(OpCode::Matmul, *c.a[0], *c.a[1], c.range, c.out);
}

/// reshape(x, shape) and expand(x, shape).
bool reshapeOrExpand(BuiltinCall &c) {
  if (!c.bind({"x", "shape"}))
    return false;
  ValueId x, r;
  std::vector<SymExpr> shape;
  if (!c.tensorArg(c.a[0], "x", x) ||
      !c.el.asIntList(*c.a[1], "the shape", shape))
    return false;
  for (const SymExpr &d : shape)
    if (d.isConst() && d.constValue() < -1)
      return c.el.error(c.a[1]->range,
                        "sizes must be non-negative (or -1), got " + d.str());
  if (!c.el.emit1(c.name == "reshape" ? OpCode::Reshape : OpCode::Expand, {x},
                  {{"shape", shape}}, c.range, r))
    return false;
  return c.result(r);
}

bool transpose(BuiltinCall &c) {
  if (!c.bind({"x", "dim0", "dim1"}))
    return false;
  ValueId x, r;
  int64_t i, j;
  if (!c.tensorArg(c.a[0], "x", x) || !c.el.asConstInt(*c.a[1], "dim0", i) ||
      !c.el.asConstInt(*c.a[2], "dim1", j))
    return false;
  size_t rank = c.el.fn.type(x).rank();
  if (!c.el.normalizeAxis(i, rank, c.a[1]->range, i) ||
      !c.el.normalizeAxis(j, rank, c.a[2]->range, j))
    return false;
  std::vector<int64_t> perm(rank);
  for (size_t k = 0; k < rank; ++k)
    perm[k] = static_cast<int64_t>(k);
  std::swap(perm[i], perm[j]);
  if (!c.el.emit1(OpCode::Permute, {x}, {{"perm", perm}}, c.range, r))
    return false;
  return c.result(r);
}

bool permute(BuiltinCall &c) {
  if (!c.bind({"x", "dims"}))
    return false;
  ValueId x, r;
  std::vector<int64_t> perm;
  if (!c.tensorArg(c.a[0], "x", x) ||
      !c.el.asConstIntList(*c.a[1], "the axes", perm))
    return false;
  size_t rank = c.el.fn.type(x).rank();
  if (perm.size() != rank)
    return c.el.error(c.a[1]->range, "permute needs " + std::to_string(rank) +
                                         " axes, got " +
                                         std::to_string(perm.size()));
  for (int64_t &p : perm)
    if (!c.el.normalizeAxis(p, rank, c.a[1]->range, p))
      return false;
  if (!c.el.emit1(OpCode::Permute, {x}, {{"perm", perm}}, c.range, r))
    return false;
  return c.result(r);
}

/// The tensors of a list argument `[a, b, ...]` (concat, stack): at least
/// one, each a tensor.
bool tensorList(BuiltinCall &c, const SemValue &list,
                std::vector<ValueId> &ids) {
  if (list.kind != SemValue::Kind::List && list.kind != SemValue::Kind::Tuple)
    return c.el.error(list.range,
                      c.name + " needs a list of tensors like [a, b]");
  if (list.elems.empty())
    return c.el.error(list.range, c.name + " needs at least one tensor");
  for (const SemValue &v : list.elems) {
    ValueId id;
    if (!c.tensorArg(&v, "each element", id))
      return false;
    ids.push_back(id);
  }
  return true;
}

bool concat(BuiltinCall &c) {
  std::vector<ValueId> ids;
  if (!c.bind({"tensors", "axis?"}) || !tensorList(c, *c.a[0], ids))
    return false;
  int64_t axis = 0;
  if (c.a[1] && !c.el.asConstInt(*c.a[1], "the axis", axis))
    return false;
  if (!c.el.normalizeAxis(axis, c.el.fn.type(ids[0]).rank(),
                          c.a[1] ? c.a[1]->range : c.range, axis))
    return false;
  ValueId r;
  if (!c.el.emit1(OpCode::Concat, ids, {{"axis", axis}}, c.range, r))
    return false;
  return c.result(r);
}

/// clamp(x, min=None, max=None): maximum with min, then minimum with max
/// (torch.clamp; a NaN stays NaN).
bool clamp(BuiltinCall &c) {
  if (!c.bind({"x", "min?", "max?"}))
    return false;
  if (!c.a[1] && !c.a[2])
    return c.el.error(c.range, "clamp needs min or max (or both)");
  SemValue v = *c.a[0];
  if (v.kind != SemValue::Kind::Tensor)
    return c.el.error(v.range, "'clamp' needs a tensor for x, got " +
                                   std::string(kindName(v.kind)));
  if (c.a[1] && !c.el.tensorBinary(OpCode::Maximum, v, *c.a[1], c.range, v))
    return false;
  if (c.a[2] && !c.el.tensorBinary(OpCode::Minimum, v, *c.a[2], c.range, v))
    return false;
  c.out = v;
  return true;
}

/// \p x with a new axis of size 1 at \p axis (in [-(rank + 1), rank]).
bool insertAxis(BuiltinCall &c, ValueId x, int64_t axis, SourceRange where,
                ValueId &r) {
  const TensorType &t = c.el.fn.type(x);
  if (!c.el.normalizeAxis(axis, t.rank() + 1, where, axis))
    return false;
  std::vector<SymExpr> shape = t.dims;
  shape.insert(shape.begin() + axis, SymExpr(1));
  return c.el.emit1(OpCode::Reshape, {x}, {{"shape", shape}}, c.range, r);
}

/// unsqueeze(x, dim): a new axis of size 1 (torch.unsqueeze).
bool unsqueeze(BuiltinCall &c) {
  if (!c.bind({"x", "dim"}))
    return false;
  ValueId x, r;
  int64_t axis;
  if (!c.tensorArg(c.a[0], "x", x) || !c.el.asConstInt(*c.a[1], "dim", axis) ||
      !insertAxis(c, x, axis, c.a[1]->range, r))
    return false;
  return c.result(r);
}

/// squeeze(x, dim): \p x without axis \p dim, which must have size 1
/// (numpy.squeeze; torch's leaves another size alone, which TSL refuses:
/// the rank would depend on a value).
bool squeeze(BuiltinCall &c) {
  if (!c.bind({"x", "dim"}))
    return false;
  ValueId x, r;
  int64_t axis;
  if (!c.tensorArg(c.a[0], "x", x) || !c.el.asConstInt(*c.a[1], "dim", axis))
    return false;
  const TensorType &t = c.el.fn.type(x);
  if (!c.el.normalizeAxis(axis, t.rank(), c.a[1]->range, axis))
    return false;
  std::vector<SymExpr> shape = t.dims;
  if (!shape[axis].isConst(1))
    return c.el.error(c.a[1]->range,
                      "'squeeze' needs axis " + std::to_string(axis) +
                          " of size 1, got " + shape[axis].str(),
                      "reshape(x, [...]) removes an axis whose size a check "
                      "or the type says is 1");
  shape.erase(shape.begin() + axis);
  if (!c.el.emit1(OpCode::Reshape, {x}, {{"shape", shape}}, c.range, r))
    return false;
  return c.result(r);
}

/// stack(tensors, axis=0): the tensors, which must have one shape, joined
/// along a new axis (torch.stack).
bool stack(BuiltinCall &c) {
  std::vector<ValueId> ids;
  int64_t axis = 0;
  if (!c.bind({"tensors", "axis?"}) || !tensorList(c, *c.a[0], ids) ||
      (c.a[1] && !c.el.asConstInt(*c.a[1], "the axis", axis)))
    return false;
  for (ValueId &id : ids)
    if (!insertAxis(c, id, axis, c.a[1] ? c.a[1]->range : c.range, id))
      return false;
  int64_t at = axis < 0
                   ? axis + static_cast<int64_t>(c.el.fn.type(ids[0]).rank())
                   : axis;
  ValueId r;
  if (!c.el.emit1(OpCode::Concat, ids, {{"axis", at}}, c.range, r))
    return false;
  return c.result(r);
}

bool pad(BuiltinCall &c) {
  if (!c.bind({"x", "pad", "value?"}))
    return false;
  ValueId x, r;
  std::vector<SymExpr> amounts;
  Number value;
  if (!c.tensorArg(c.a[0], "x", x) ||
      !c.el.asIntList(*c.a[1], "the padding", amounts) ||
      !c.numberArg(c.a[2], value))
    return false;
  size_t rank = c.el.fn.type(x).rank();
  if (amounts.size() % 2 != 0 || amounts.size() > 2 * rank)
    return c.el.error(c.a[1]->range,
                      "pad takes pairs (before, after) for up to " +
                          std::to_string(rank) +
                          " axes, last axis first; got " +
                          std::to_string(amounts.size()) + " values");
  std::vector<SymExpr> lo(rank, SymExpr(0)), hi(rank, SymExpr(0));
  for (size_t k = 0; k < amounts.size() / 2; ++k) {
    lo[rank - 1 - k] = amounts[2 * k];
    hi[rank - 1 - k] = amounts[2 * k + 1];
  }
  if (!c.el.emit1(OpCode::Pad, {x}, {{"lo", lo}, {"hi", hi}, {"value", value}},
                  c.range, r))
    return false;
  return c.result(r);
}

bool arange(BuiltinCall &c) {
  if (!c.bind({"n", "dtype?"}))
    return false;
  SymExpr n;
  DType dt;
  ValueId r;
  if (!c.el.asInt(*c.a[0], "the length", n) ||
      !c.dtypeArg(c.a[1], DType::I64, dt) ||
      !c.el.emit1(OpCode::Arange, {}, {{"n", n}, {"dtype", dt}}, c.range, r))
    return false;
  return c.result(r);
}

/// zeros(shape, dtype?), ones(shape, dtype?), full(shape, value, dtype?).
bool filled(BuiltinCall &c) {
  bool isFull = c.name == "full";
  if (!c.bind(isFull ? std::vector<std::string>{"shape", "value", "dtype?"}
                     : std::vector<std::string>{"shape", "dtype?"}))
    return false;
  std::vector<SymExpr> shape;
  Number value = Number::ofInt(c.name == "ones" ? 1 : 0);
  DType dt;
  if (!c.el.asIntList(*c.a[0], "the shape", shape) ||
      (isFull && !c.numberArg(c.a[1], value)) ||
      !c.dtypeArg(c.a[isFull ? 2 : 1], DType::F32, dt))
    return false;
  ValueId r;
  if (!c.el.emit1(OpCode::Full, {},
                  {{"shape", shape}, {"value", value}, {"dtype", dt}}, c.range,
                  r))
    return false;
  return c.result(r);
}

/// A (height, width) pair from one value or two; \p dflt when omitted.
bool pairArg(BuiltinCall &c, const SemValue *v, int64_t dflt,
             std::vector<int64_t> &out) {
  out = {dflt, dflt};
  if (!v)
    return true;
  std::vector<int64_t> vals;
  if (!c.el.asConstIntList(*v, "this argument", vals))
    return false;
  if (vals.size() == 1)
    out = {vals[0], vals[0]};
  else if (vals.size() == 2)
    out = vals;
  else
    return c.el.error(v->range, "expected one value or two (height, width)");
  return true;
}

bool conv2d(BuiltinCall &c) {
  if (!c.bind({"x", "w", "bias?", "stride?", "padding?"}))
    return false;
  ValueId x, w, r;
  if (!c.tensorArg(c.a[0], "x", x) || !c.tensorArg(c.a[1], "the weights", w))
    return false;
  std::vector<ValueId> operands{x, w};
  if (c.a[2]) {
    ValueId b;
    if (!c.tensorArg(c.a[2], "the bias", b))
      return false;
    operands.push_back(b);
  }
  std::vector<int64_t> stride, padding;
  if (!pairArg(c, c.a[3], 1, stride) || !pairArg(c, c.a[4], 0, padding))
    return false;
  if (!c.el.emit1(OpCode::Conv2d, operands,
                  {{"stride", stride}, {"padding", padding}}, c.range, r))
    return false;
  return c.result(r);
}

bool maxPool2d(BuiltinCall &c) {
  if (!c.bind({"x", "kernel", "stride?", "padding?"}))
    return false;
  ValueId x, r;
  if (!c.tensorArg(c.a[0], "x", x))
    return false;
  std::vector<int64_t> kernel, stride, padding;
  if (!pairArg(c, c.a[1], 1, kernel) || !pairArg(c, c.a[2], 0, stride) ||
      !pairArg(c, c.a[3], 0, padding))
    return false;
  if (!c.a[2])
    stride = kernel;
  if (!c.el.emit1(
          OpCode::MaxPool2d, {x},
          {{"kernel", kernel}, {"stride", stride}, {"padding", padding}},
          c.range, r))
    return false;
  return c.result(r);
}

bool maskedSelect(BuiltinCall &c) {
  if (!c.bind({"x", "mask"}))
    return false;
  ValueId x, m, r;
  if (!c.tensorArg(c.a[0], "x", x) || !c.tensorArg(c.a[1], "the mask", m) ||
      !c.el.emit1(OpCode::MaskedSelect, {x, m}, {}, c.range, r))
    return false;
  return c.result(r);
}

bool item(BuiltinCall &c) {
  if (!c.bind({"x"}))
    return false;
  ValueId x;
  if (!c.tensorArg(c.a[0], "x", x))
    return false;
  SymExpr u = c.el.env.freshUnbacked(INT64_MIN, std::nullopt,
                                     "the value of item(...)", c.range);
  // Item ints may be negative: widen the symbol's range.
  std::vector<ValueId> none;
  if (!c.el.emit(OpCode::Item, {x}, {{"sym", u}}, c.range, none))
    return false;
  c.out = SemValue::ofInt(u, c.range);
  return true;
}

bool indexSelect(BuiltinCall &c) {
  if (!c.bind({"x", "axis", "index"}))
    return false;
  ValueId x, idx, r;
  int64_t axis;
  if (!c.tensorArg(c.a[0], "x", x) ||
      !c.el.asConstInt(*c.a[1], "the axis", axis) ||
      !c.tensorArg(c.a[2], "the index", idx) ||
      !c.el.normalizeAxis(axis, c.el.fn.type(x).rank(), c.a[1]->range, axis) ||
      !c.el.emit1(OpCode::IndexSelect, {x, idx}, {{"axis", axis}}, c.range, r))
    return false;
  return c.result(r);
}

/// cumsum(x, axis, reverse=false), cumprod(...): torch.cumsum/cumprod (dim
/// required); reverse runs from the end of the axis (torch's
/// x.flip(d).cumsum(d).flip(d)).
bool scan(BuiltinCall &c) {
  if (!c.bind({"x", "axis", "reverse?"}))
    return false;
  ValueId x, r;
  int64_t axis;
  bool reverse = false;
  if (!c.tensorArg(c.a[0], "x", x) ||
      !c.el.asConstInt(*c.a[1], "the axis", axis) ||
      !c.boolArg(c.a[2], reverse) ||
      !c.el.normalizeAxis(axis, c.el.fn.type(x).rank(), c.a[1]->range, axis))
    return false;
  AttrMap attrs{{"axis", axis}};
  if (reverse) // absent when false: the IR of a forward scan is unchanged
    attrs["reverse"] = true;
  if (!c.el.emit1(c.name == "cumsum" ? OpCode::Cumsum : OpCode::Cumprod, {x},
                  std::move(attrs), c.range, r))
    return false;
  return c.result(r);
}

/// masked_scatter(x, mask, source): torch.masked_scatter, the mask
/// broadcast to x's shape first.
bool maskedScatter(BuiltinCall &c) {
  if (!c.bind({"x", "mask", "source"}))
    return false;
  ValueId x, m, src, r;
  if (!c.tensorArg(c.a[0], "x", x) || !c.tensorArg(c.a[1], "the mask", m) ||
      !c.tensorArg(c.a[2], "source", src))
    return false;
  const std::vector<SymExpr> &dims = c.el.fn.type(x).dims;
  if (c.el.fn.type(m).dims != dims &&
      !c.el.emit1(OpCode::Expand, {m}, {{"shape", dims}}, c.range, m))
    return false;
  if (!c.el.emit1(OpCode::MaskedScatter, {x, m, src}, {}, c.range, r))
    return false;
  return c.result(r);
}

/// gather(x, axis, index): torch.gather.
bool gather(BuiltinCall &c) {
  if (!c.bind({"x", "axis", "index"}))
    return false;
  ValueId x, idx, r;
  int64_t axis;
  if (!c.tensorArg(c.a[0], "x", x) ||
      !c.el.asConstInt(*c.a[1], "the axis", axis) ||
      !c.tensorArg(c.a[2], "the index", idx) ||
      !c.el.normalizeAxis(axis, c.el.fn.type(x).rank(), c.a[1]->range, axis) ||
      !c.el.emit1(OpCode::Gather, {x, idx}, {{"axis", axis}}, c.range, r))
    return false;
  return c.result(r);
}

/// sort(x, axis=-1, descending=false) gives the values, argsort(...) the
/// i64 positions: both one stable sort op.
bool sort(BuiltinCall &c) {
  if (!c.bind({"x", "axis?", "descending?"}))
    return false;
  ValueId x;
  int64_t axis = -1;
  bool descending = false;
  if (!c.tensorArg(c.a[0], "x", x) ||
      (c.a[1] && !c.el.asConstInt(*c.a[1], "the axis", axis)) ||
      !c.boolArg(c.a[2], descending))
    return false;
  SourceRange axisRange = c.a[1] ? c.a[1]->range : c.range;
  std::vector<ValueId> rs;
  if (!c.el.normalizeAxis(axis, c.el.fn.type(x).rank(), axisRange, axis) ||
      !c.el.emit(OpCode::Sort, {x},
                 {{"axis", axis}, {"descending", descending}}, c.range, rs))
    return false;
  return c.result(rs[c.name == "sort" ? 0 : 1]);
}

/// scatter(x, axis, index, src), scatter_add(...), index_add(x, axis,
/// index, source): torch's.
bool scatter(BuiltinCall &c) {
  bool indexAdd = c.name == "index_add";
  const char *source = indexAdd ? "source" : "src";
  if (!c.bind({"x", "axis", "index", source}))
    return false;
  ValueId x, idx, src, r;
  int64_t axis;
  if (!c.tensorArg(c.a[0], "x", x) ||
      !c.el.asConstInt(*c.a[1], "the axis", axis) ||
      !c.tensorArg(c.a[2], "the index", idx) ||
      !c.tensorArg(c.a[3], source, src) ||
      !c.el.normalizeAxis(axis, c.el.fn.type(x).rank(), c.a[1]->range, axis))
    return false;
  AttrMap attrs = {{"axis", axis}};
  if (!indexAdd)
    attrs["add"] = c.name == "scatter_add";
  if (!c.el.emit1(indexAdd ? OpCode::IndexAdd : OpCode::Scatter, {x, idx, src},
                  std::move(attrs), c.range, r))
    return false;
  return c.result(r);
}

bool topk(BuiltinCall &c) {
  if (!c.bind({"x", "k"}))
    return false;
  ValueId x;
  SymExpr k;
  std::vector<ValueId> rs;
  if (!c.tensorArg(c.a[0], "x", x) || !c.el.asInt(*c.a[1], "k", k) ||
      !c.el.emit(OpCode::Topk, {x}, {{"k", k}}, c.range, rs))
    return false;
  c.out = SemValue();
  c.out.kind = SemValue::Kind::Tuple;
  c.out.range = c.range;
  c.out.elems = {SemValue::ofTensor(rs[0], c.range),
                 SemValue::ofTensor(rs[1], c.range)};
  return true;
}

/// grad(y, wrt), vjp(y, cotangent, wrt): reverse-mode gradients
/// (frontend/ElabGrad.cpp).
bool gradient(BuiltinCall &c) {
  bool isVjp = c.name == "vjp";
  if (!c.bind(isVjp ? std::vector<std::string>{"y", "cotangent", "wrt"}
                    : std::vector<std::string>{"y", "wrt"}))
    return false;
  return c.el.gradient(c.name, *c.a[0], isVjp ? c.a[1] : nullptr,
                       *c.a[isVjp ? 2 : 1], c.range, c.out);
}

/// stop_gradient(x): x, through which no gradient flows.
bool stopGradient(BuiltinCall &c) {
  ValueId x, r;
  if (!c.bind({"x"}) || !c.tensorArg(c.a[0], "x", x) ||
      !c.el.emit1(OpCode::Reshape, {x}, {{"shape", c.el.fn.type(x).dims}},
                  c.range, r))
    return false;
  c.el.stoppedGradients.insert(r);
  return c.result(r);
}

/// How one builtin is elaborated.
struct Builtin {
  bool (*handler)(BuiltinCall &);
  /// For the generic handlers: the op the builtin is.
  OpCode op = OpCode::Assert;
};

/// Every builtin by name: the hand-written ones, then one per op of Ops.def
/// with a Builtin spelling.
const std::map<std::string, Builtin, std::less<>> &builtinTable() {
  static const std::map<std::string, Builtin, std::less<>> table = [] {
    std::map<std::string, Builtin, std::less<>> t = {
        {"size", {sizeOrNumel}},
        {"numel", {sizeOrNumel}},
        {"max", {minOrMax}},
        {"min", {minOrMax}},
        {"sum", {reduction}},
        {"mean", {reduction}},
        {"argmax", {reduction}},
        {"argmin", {reduction}},
        {"where", {where}},
        {"cast", {cast}},
        {"matmul", {matmul}},
        {"reshape", {reshapeOrExpand}},
        {"expand", {reshapeOrExpand}},
        {"transpose", {transpose}},
        {"permute", {permute}},
        {"concat", {concat}},
        {"stack", {stack}},
        {"unsqueeze", {unsqueeze}},
        {"squeeze", {squeeze}},
        {"var", {variance}},
        {"std", {variance}},
        {"masked_fill", {maskedFill}},
        {"clamp", {clamp}},
        {"pad", {pad}},
        {"arange", {arange}},
        {"zeros", {filled}},
        {"ones", {filled}},
        {"full", {filled}},
        {"conv2d", {conv2d}},
        {"max_pool2d", {maxPool2d}},
        {"masked_select", {maskedSelect}},
        {"masked_scatter", {maskedScatter}},
        {"index_add", {scatter}},
        {"item", {item}},
        {"index_select", {indexSelect}},
        {"topk", {topk}},
        {"cumsum", {scan}},
        {"cumprod", {scan}},
        {"gather", {gather}},
        {"sort", {sort}},
        {"argsort", {sort}},
        {"scatter", {scatter}},
        {"scatter_add", {scatter}},
        {"grad", {gradient}},
        {"vjp", {gradient}},
        {"stop_gradient", {stopGradient}}};
    // A spelled op takes only tensors (one or two) and no attributes;
    // BuiltinNamesTest checks that every spelling is registered.
    for (const OpTraits &op : kOpTable) {
      if (op.builtin.empty() || !opInfo(op.code).attrs.empty() ||
          op.minOperands != op.maxOperands)
        continue;
      if (op.maxOperands == 1)
        t.emplace(std::string(op.builtin), Builtin{opOfOneTensor, op.code});
      else if (op.maxOperands == 2)
        t.emplace(std::string(op.builtin), Builtin{opOfTwoTensors, op.code});
    }
    return t;
  }();
  return table;
}

} // namespace

const std::vector<std::string> &builtinNames() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const auto &[name, builtin] : builtinTable())
      out.push_back(name);
    return out;
  }();
  return names;
}

bool Elaborator::isBuiltin(const std::string &name) {
  return builtinTable().count(name) != 0;
}

bool Elaborator::callBuiltin(const std::string &name,
                             std::vector<CallArg> &args, SourceRange range,
                             SemValue &out) {
  auto it = builtinTable().find(name);
  if (it == builtinTable().end())
    return error(range, "not supported: builtin '" + name + "'");
  BuiltinCall call{*this, name, args, range, out, it->second.op, {}};
  return it->second.handler(call);
}

} // namespace tsl
