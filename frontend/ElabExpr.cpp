// Expressions: names, operators, literals, member access and indexing.
#include "frontend/ElaboratorImpl.h"
#include "support/Spelling.h"

#include <algorithm>
#include <cmath>

namespace tsl {

bool Elaborator::lookupName(const std::string &name, SourceRange range,
                            Frame &frame, SemValue &out) {
  for (auto s = frame.scopes.rbegin(); s != frame.scopes.rend(); ++s) {
    auto it = s->find(name);
    if (it != s->end()) {
      out = it->second;
      out.range = range;
      return true;
    }
  }
  auto d = frame.dims.find(name);
  if (d != frame.dims.end()) {
    out = SemValue::ofInt(d->second, range);
    return true;
  }
  auto decl = frame.module->dims.find(name);
  if (decl != frame.module->dims.end()) {
    if (decl->second->value) {
      SymExpr v;
      if (!evalDimDecl(*decl->second, frame, range, v))
        return false;
      out = SemValue::ofInt(v, range);
      return true;
    }
    return errorWithNotes(
        range, "dim '" + name + "' is not bound in '" + frame.decl->name + "'",
        {{decl->second->range,
          "it is declared here but no parameter uses it"}});
  }
  if (auto dt = parseDType(name)) {
    out.kind = SemValue::Kind::DType;
    out.dtype = *dt;
    out.range = range;
    return true;
  }
  auto f = frame.module->fns.find(name);
  if (f != frame.module->fns.end()) {
    out.kind = SemValue::Kind::Fn;
    out.fn = f->second;
    out.module = frame.module;
    out.range = range;
    return true;
  }
  auto m = frame.module->imports.find(name);
  if (m != frame.module->imports.end()) {
    out.kind = SemValue::Kind::Module;
    out.module = m->second;
    out.range = range;
    return true;
  }
  if (name == "inf" || name == "nan") { // numpy's and torch's constants
    out = SemValue::ofFloat(name == "inf" ? HUGE_VAL : std::nan(""), range);
    return true;
  }
  if (isBuiltin(name)) {
    out.kind = SemValue::Kind::Builtin;
    out.s = name;
    out.range = range;
    return true;
  }
  return unknownName(name, range, frame);
}

bool Elaborator::unknownName(const std::string &name, SourceRange range,
                             const Frame &frame) {
  const LoadedModule &m = *frame.module;
  if (std::find(m.stdlibModules.begin(), m.stdlibModules.end(), name) !=
      m.stdlibModules.end())
    return error(range, "unknown name '" + name + "'",
                 "import the standard library module: add 'import " + name +
                     ";' at the top of the file");
  std::vector<std::string> candidates;
  for (const auto &scope : frame.scopes)
    for (const auto &entry : scope)
      candidates.push_back(entry.first);
  for (const auto &entry : frame.dims)
    candidates.push_back(entry.first);
  for (const auto &entry : m.fns)
    candidates.push_back(entry.first);
  for (const auto &entry : m.dims)
    candidates.push_back(entry.first);
  for (const auto &entry : m.imports)
    candidates.push_back(entry.first);
  const std::vector<std::string> &builtins = tsl::builtinNames();
  candidates.insert(candidates.end(), builtins.begin(), builtins.end());
  for (const char *t :
       {"bool", "i8", "i32", "i64", "f16", "bf16", "f32", "f64"})
    candidates.push_back(t);
  if (auto close = closestSpelling(name, candidates))
    return error(range, "unknown name '" + name + "'",
                 "did you mean '" + *close + "'?");
  return error(range, "unknown name '" + name + "'");
}

bool Elaborator::toTensor(const SemValue &v, std::optional<DType> like,
                          SourceRange range, ValueId &out) {
  switch (v.kind) {
  case SemValue::Kind::Tensor:
    out = v.tensor;
    return true;
  case SemValue::Kind::Int: {
    DType dt = like.value_or(DType::I64);
    if (dt == DType::Bool)
      return error(range, "cannot use an int with a bool tensor");
    if (v.i.isConst())
      return emit1(OpCode::Constant, {},
                   {{"value", Number::ofInt(v.i.constValue())}, {"dtype", dt}},
                   range, out);
    return emit1(OpCode::SymScalar, {}, {{"expr", v.i}, {"dtype", dt}}, range,
                 out);
  }
  case SemValue::Kind::Float: {
    DType dt = like.value_or(DType::F32);
    if (!isFloat(dt))
      return error(
          range,
          std::string("cannot mix a float literal with an ") + dtypeName(dt) +
              " tensor",
          std::string(
              "convert the tensor with cast(x, f32), or write an integer"));
    return emit1(OpCode::Constant, {},
                 {{"value", Number::ofFloat(v.f)}, {"dtype", dt}}, range, out);
  }
  case SemValue::Kind::Cond:
    if (v.c.isConst())
      return emit1(OpCode::Constant, {},
                   {{"value", Number::ofInt(v.c.kind() == SymCond::Kind::True)},
                    {"dtype", DType::Bool}},
                   range, out);
    return error(range, "a condition on sizes cannot be used as a tensor here");
  default:
    return error(range,
                 std::string("expected a tensor, got ") + kindName(v.kind));
  }
}

bool Elaborator::asInt(const SemValue &v, const std::string &what,
                       SymExpr &out) {
  if (v.kind != SemValue::Kind::Int)
    return error(v.range, what + " must be an int, got " + kindName(v.kind));
  out = v.i;
  return true;
}

bool Elaborator::asConstInt(const SemValue &v, const std::string &what,
                            int64_t &out) {
  SymExpr e;
  if (!asInt(v, what, e))
    return false;
  if (!e.isConst())
    return notConstant(e, v.range, what + " must be a constant, got ");
  out = e.constValue();
  return true;
}

bool Elaborator::notConstant(const SymExpr &e, SourceRange range,
                             const std::string &message) {
  // A function checked for every value (`tslc check`) has no values for its
  // `int static` parameters: what needs them (a conv's stride) is checked
  // per call, where they are constants. The rest of this function is too.
  std::vector<std::string> names = e.symbols();
  bool ints = !names.empty(), staticInts = ints && checkingAllSizes;
  for (const std::string &name : names) {
    const SymbolInfo *info = env.lookup(name);
    ints &= info && info->isInt;
    staticInts &= info && info->isInt && info->kind == DimKind::Static;
  }
  if (staticInts) {
    stoppedUncheckable = true;
    return false;
  }
  return error(range, message + e.str(),
               ints ? "declare '" + names[0] +
                          "' as 'int static': a constant in each compiled "
                          "variant"
                    : std::string());
}

bool Elaborator::asIntList(const SemValue &v, const std::string &what,
                           std::vector<SymExpr> &out) {
  out.clear();
  if (v.kind == SemValue::Kind::Shape || v.kind == SemValue::Kind::List ||
      v.kind == SemValue::Kind::Tuple) {
    for (const SemValue &e : v.elems) {
      SymExpr x;
      if (!asInt(e, what + " entries", x))
        return false;
      out.push_back(x);
    }
    return true;
  }
  return error(v.range,
               what + " must be a list like [a, b], got " + kindName(v.kind));
}

bool Elaborator::asConstIntList(const SemValue &v, const std::string &what,
                                std::vector<int64_t> &out) {
  out.clear();
  if (v.kind == SemValue::Kind::Int) {
    int64_t x;
    if (!asConstInt(v, what, x))
      return false;
    out.push_back(x);
    return true;
  }
  std::vector<SymExpr> list;
  if (!asIntList(v, what, list))
    return false;
  for (const SymExpr &e : list) {
    if (!e.isConst())
      return notConstant(e, v.range, what + " must be constants, got ");
    out.push_back(e.constValue());
  }
  return true;
}

bool Elaborator::normalizeAxis(int64_t axis, size_t rank, SourceRange range,
                               int64_t &out) {
  int64_t r = static_cast<int64_t>(rank);
  if (axis < -r || axis >= r)
    return error(range, "axis " + std::to_string(axis) +
                            " is out of range for a tensor of rank " +
                            std::to_string(rank) +
                            (rank ? " (valid: " + std::to_string(-r) + ".." +
                                        std::to_string(r - 1) + ")"
                                  : ""));
  out = axis < 0 ? axis + r : axis;
  return true;
}

bool Elaborator::transposed(ValueId x, bool matrices, SourceRange range,
                            SourceRange memberRange, SemValue &out) {
  size_t rank = fn.type(x).rank();
  std::vector<int64_t> perm(rank);
  for (size_t k = 0; k < rank; ++k)
    perm[k] = static_cast<int64_t>(k);
  if (matrices) {
    if (rank < 2)
      return error(memberRange, ".mT needs a tensor of rank 2 or more, got " +
                                    fn.type(x).str());
    std::swap(perm[rank - 2], perm[rank - 1]);
  } else {
    std::reverse(perm.begin(), perm.end()); // NumPy's .T: every axis
  }
  ValueId r;
  if (!emit1(OpCode::Permute, {x}, {{"perm", perm}}, range, r))
    return false;
  out = SemValue::ofTensor(r, range);
  return true;
}

bool Elaborator::tensorRemainder(SemValue a, SemValue b, SourceRange range,
                                 SourceRange opRange, SemValue &out) {
  // Python's %: a - (a // b) * b, with the sign of b; `/` on integer
  // tensors is already floor division (and fails on a zero divisor).
  SemValue quotient, product;
  if (!tensorBinary(OpCode::Div, a, b, range, quotient))
    return false;
  if (isFloat(fn.type(quotient.tensor).dtype))
    return error(opRange, "not supported: '%' on float tensors",
                 "use integer tensors, or x - y * cast(cast(x / y, i64), " +
                     std::string(dtypeName(fn.type(quotient.tensor).dtype)) +
                     ") where truncation is what you want");
  return tensorBinary(OpCode::Mul, quotient, b, range, product) &&
         tensorBinary(OpCode::Sub, a, product, range, out);
}

bool Elaborator::tensorBinary(OpCode code, SemValue a, SemValue b,
                              SourceRange range, SemValue &out) {
  std::optional<DType> like;
  if (a.kind == SemValue::Kind::Tensor)
    like = fn.type(a.tensor).dtype;
  else if (b.kind == SemValue::Kind::Tensor)
    like = fn.type(b.tensor).dtype;
  if (!like &&
      (a.kind == SemValue::Kind::Float || b.kind == SemValue::Kind::Float))
    like = DType::F32;
  ValueId x, y;
  if (!toTensor(a, like, a.range, x) || !toTensor(b, like, b.range, y))
    return false;
  DType dx = fn.type(x).dtype, dy = fn.type(y).dtype;
  if (dx != dy && code != OpCode::Where)
    return error(range,
                 std::string("mismatched element types: ") + fn.type(x).str() +
                     " and " + fn.type(y).str(),
                 std::string("convert one side with cast(..., ") +
                     dtypeName(dx) + ")");
  ValueId r;
  if (!emit1(code, {x, y}, {}, range, r))
    return false;
  // x + 0 and x - 0 (a zeros(...) operand, as the default attention mask)
  // are x when broadcasting does not change x's shape; the op (checked
  // above) becomes dead code.
  if ((code == OpCode::Add || code == OpCode::Sub) && isZeroFill(y) &&
      fn.type(r) == fn.type(x)) {
    out = SemValue::ofTensor(x, range);
    return true;
  }
  out = SemValue::ofTensor(r, range);
  return true;
}

bool Elaborator::isZeroFill(ValueId v) const {
  const Operation *producer = producerOf(v);
  if (!producer)
    return false;
  const Operation &op = *producer;
  if (op.code != OpCode::Full && op.code != OpCode::Constant)
    return false;
  Number n = op.numAttr("value");
  return n.isInt ? n.i == 0 : n.f == 0.0;
}

static SymCond::Kind compareKind(const std::string &op) {
  if (op == "==")
    return SymCond::Kind::Eq;
  if (op == "!=")
    return SymCond::Kind::Ne;
  if (op == "<")
    return SymCond::Kind::Lt;
  if (op == "<=")
    return SymCond::Kind::Le;
  if (op == ">")
    return SymCond::Kind::Gt;
  return SymCond::Kind::Ge;
}

bool Elaborator::binary(const std::string &op, SemValue a, SemValue b,
                        SourceRange opRange, SourceRange range, SemValue &out) {
  using K = SemValue::Kind;
  bool tensors = a.kind == K::Tensor || b.kind == K::Tensor;
  auto bad = [&]() {
    return error(opRange, "'" + op + "' cannot combine " + kindName(a.kind) +
                              " and " + kindName(b.kind));
  };
  auto numeric = [](const SemValue &v) {
    return v.kind == K::Tensor || v.kind == K::Int || v.kind == K::Float;
  };
  if (op == "&" || op == "|" || op == "^")
    return bitwise(op, a, b, opRange, range, out);
  if (op == "**")
    return power(a, b, opRange, range, out);
  if (op == "&&" || op == "||") {
    if (a.kind == K::Cond && b.kind == K::Cond) {
      uint32_t inner = std::max(a.nest, b.nest);
      out = SemValue::ofCond(op == "&&" ? SymCond::conj(a.c, b.c)
                                        : SymCond::disj(a.c, b.c),
                             range);
      return setNest(out, inner, range);
    }
    if (tensors && (a.kind == K::Tensor || a.kind == K::Cond) &&
        (b.kind == K::Tensor || b.kind == K::Cond))
      return tensorBinary(op == "&&" ? OpCode::And : OpCode::Or, a, b, range,
                          out);
    return bad();
  }
  if (op == "@") {
    if (a.kind != K::Tensor || b.kind != K::Tensor)
      return bad();
    return tensorBinary(OpCode::Matmul, a, b, range, out);
  }
  if (!numeric(a) || !numeric(b))
    return bad();
  bool compare = op == "==" || op == "!=" || op == "<" || op == "<=" ||
                 op == ">" || op == ">=";
  if (tensors) {
    static const std::map<std::string, OpCode> codes = {
        {"+", OpCode::Add}, {"-", OpCode::Sub}, {"*", OpCode::Mul},
        {"/", OpCode::Div}, {"==", OpCode::Eq}, {"!=", OpCode::Ne},
        {"<", OpCode::Lt},  {"<=", OpCode::Le}, {">", OpCode::Gt},
        {">=", OpCode::Ge}};
    if (op == "%")
      return tensorRemainder(a, b, range, opRange, out);
    auto it = codes.find(op);
    if (it == codes.end())
      return error(opRange, "'" + op + "' is not defined on tensors");
    return tensorBinary(it->second, a, b, range, out);
  }
  if (a.kind == K::Float || b.kind == K::Float) {
    double x = a.kind == K::Float ? a.f : static_cast<double>(a.i.constValue());
    double y = b.kind == K::Float ? b.f : static_cast<double>(b.i.constValue());
    if ((a.kind == K::Int && !a.i.isConst()) ||
        (b.kind == K::Int && !b.i.isConst()))
      return error(opRange,
                   "cannot combine a size with a float at compile time",
                   "make a tensor first, for example cast(arange(1), f32)");
    if (compare)
      return error(opRange,
                   "comparisons of floats are not compile-time conditions",
                   "compare tensors, which gives a bool tensor");
    double r = op == "+"   ? x + y
               : op == "-" ? x - y
               : op == "*" ? x * y
               : op == "/" ? x / y
                           : NAN;
    if (op == "%")
      return error(opRange, "'%' is not defined on floats");
    out = SemValue::ofFloat(r, range);
    return true;
  }
  // Both ints: compile-time size arithmetic.
  if (compare) {
    out = SemValue::ofCond(SymCond::compare(compareKind(op), a.i, b.i), range);
    return true;
  }
  SymExpr r;
  if (op == "+")
    r = a.i + b.i;
  else if (op == "-")
    r = a.i - b.i;
  else if (op == "*")
    r = a.i * b.i;
  else {
    if (b.i.isConst(0))
      return error(opRange, "division by zero");
    if (!b.i.isConst() &&
        !requireCond(SymCond::ne(b.i, 0), opRange, op, "non-zero divisor",
                     "division by zero: " + b.i.str() + " is 0"))
      return false;
    r = op == "/" ? SymExpr::floorDiv(a.i, b.i) : SymExpr::mod(a.i, b.i);
  }
  if (!checkSize(r, range, sizeOverflowDetail(a.i, op, b.i),
                 !a.i.isConst() || !b.i.isConst()))
    return false;
  out = SemValue::ofInt(r, range);
  return true;
}

bool Elaborator::unaryOp(const std::string &op, SemValue a, SourceRange range,
                         SemValue &out) {
  using K = SemValue::Kind;
  if (op == "-") {
    switch (a.kind) {
    case K::Int:
      out = SemValue::ofInt(-a.i, range);
      return true;
    case K::Float:
      out = SemValue::ofFloat(-a.f, range);
      return true;
    case K::Tensor: {
      ValueId r;
      if (!emit1(OpCode::Neg, {a.tensor}, {}, range, r))
        return false;
      out = SemValue::ofTensor(r, range);
      return true;
    }
    default:
      return error(range,
                   std::string("'-' cannot apply to ") + kindName(a.kind));
    }
  }
  if (a.kind == K::Cond) {
    uint32_t inner = a.nest;
    out = SemValue::ofCond(SymCond::negate(a.c), range);
    return setNest(out, inner, range);
  }
  if (a.kind == K::Tensor) {
    ValueId r;
    if (!emit1(OpCode::Not, {a.tensor}, {}, range, r))
      return false;
    out = SemValue::ofTensor(r, range);
    return true;
  }
  return error(range, std::string("'!' cannot apply to ") + kindName(a.kind));
}

bool Elaborator::resolveSlices(const ast::Expr &e, const TensorType &t,
                               Frame &frame, SliceRegion &region) {
  // `None` adds an axis of size 1 (NumPy's newaxis) and takes none.
  auto newAxis = [](const ast::SliceItem &it) {
    return !it.isRange && it.index->kind == ast::Expr::Kind::Name &&
           it.index->text == "None";
  };
  size_t taking = 0;
  for (const ast::SliceItem &it : e.slices)
    taking += !newAxis(it);
  if (taking > t.rank())
    return error(e.range, "too many indices (" + std::to_string(taking) +
                              ") for a tensor of type " + t.str());
  std::vector<SymExpr> &starts = region.starts, &sizes = region.sizes,
                       &keepDims = region.keepDims;
  region.steps.assign(t.rank(), 1);
  size_t next = 0;
  auto newAxes = [&] {
    for (; next < e.slices.size() && newAxis(e.slices[next]); ++next) {
      keepDims.push_back(1);
      ++region.newAxes;
    }
  };
  for (size_t axis = 0; axis < t.rank(); ++axis) {
    SymExpr n = t.dims[axis];
    newAxes();
    if (next >= e.slices.size()) {
      starts.push_back(0);
      sizes.push_back(n);
      keepDims.push_back(n);
      continue;
    }
    const ast::SliceItem &item = e.slices[next++];
    // A bound: negative constants count from the end; Python clamping.
    auto bound = [&](const ast::Expr *x, SymExpr dflt, SymExpr &v) {
      if (!x) {
        v = dflt;
        return true;
      }
      SemValue sv;
      if (!eval(*x, frame, sv) || !asInt(sv, "a slice bound", v))
        return false;
      if (v.isConst() && v.constValue() < 0)
        v = SymExpr::max(n + v, 0);
      v = SymExpr::min(v, n);
      return checkSize(v, x->range);
    };
    if (item.isRange) {
      SymExpr lo, hi;
      if (!bound(item.start.get(), 0, lo) || !bound(item.stop.get(), n, hi))
        return false;
      if (!requireCond(SymCond::ge(lo, 0), item.range, "slice",
                       "slice start is not negative",
                       "slice start " + lo.str() + " is negative"))
        return false;
      lo = env.simplify(lo);
      SymExpr len = env.simplify(SymExpr::max(env.simplify(hi) - lo, 0));
      if (item.step) {
        SemValue sv;
        int64_t step;
        if (!eval(*item.step, frame, sv) ||
            !asConstInt(sv, "a slice step", step))
          return false;
        if (step <= 0)
          return error(item.step->range,
                       "slice step must be positive, got " +
                           std::to_string(step),
                       "negative steps are not supported (as in PyTorch)");
        if (step > 1) // ceil(len / step) elements
          len = env.simplify(SymExpr::floorDiv(len + (step - 1), step));
        region.steps[axis] = step;
      }
      starts.push_back(lo);
      sizes.push_back(len);
      keepDims.push_back(len);
    } else {
      SemValue sv;
      SymExpr i;
      if (!eval(*item.index, frame, sv))
        return false;
      if (sv.kind == SemValue::Kind::Tensor) {
        if (!takeTensorIndex(sv, t, axis, region))
          return false;
        continue;
      }
      if (!asInt(sv, "an index", i))
        return false;
      // Python's rule, also for an index known only at run time: a
      // negative index counts from the end (-n <= i < n; `i mod n` is the
      // position). An index that cannot be negative skips the modulo.
      if (i.isConst() && i.constValue() < 0)
        i = n + i;
      // (Within bounds, `S - 1` cannot be negative: S >= 1 there.)
      bool mayBeNegative =
          env.prove(SymCond::disj(SymCond::lt(i, -n), SymCond::ge(i, 0))) !=
          Truth::True;
      SymExpr lowest = mayBeNegative ? -n : SymExpr(0);
      if (!requireCond(SymCond::conj(SymCond::ge(i, lowest), SymCond::lt(i, n)),
                       item.range, "index", "index in bounds",
                       "index " + sourceText(item.index->range) +
                           " is out of bounds for axis " +
                           std::to_string(axis) + " of size " + n.str() +
                           (mayBeNegative
                                ? " (valid: " + env.simplify(-n).str() +
                                      " to " + env.simplify(n - 1).str() + ")"
                                : "")))
        return false;
      starts.push_back(mayBeNegative ? env.simplify(SymExpr::mod(i, n)) : i);
      sizes.push_back(1);
    }
  }
  newAxes();
  if (next < e.slices.size()) // a bool mask took several axes
    return error(e.slices[next].range,
                 "too many indices for a tensor of type " + t.str() +
                     " (a bool mask takes one axis per dim)");
  return true;
}

bool Elaborator::indexTensor(const ast::Expr &e, const SemValue &base,
                             Frame &frame, SemValue &out) {
  const TensorType t =
      fn.type(base.tensor); // a copy: emitting ops grows fn.values
  SliceRegion region;
  region.allowTensors = true;
  if (!resolveSlices(e, t, frame, region))
    return false;
  if (!region.tensorIndices.empty())
    return advancedIndex(e, base.tensor, t, region, out);
  ValueId r;
  if (!emitRegion(base.tensor, region, e.range, r))
    return false;
  out = SemValue::ofTensor(r, e.range);
  return true;
}

bool Elaborator::emitRegion(ValueId x, const SliceRegion &region,
                            SourceRange range, ValueId &out) {
  AttrMap attrs = {{"starts", region.starts}, {"sizes", region.sizes}};
  if (region.strided())
    attrs["steps"] = region.steps;
  if (!emit1(OpCode::Slice, {x}, attrs, range, out))
    return false;
  return region.keepDims == region.sizes ||
         emit1(OpCode::Reshape, {out}, {{"shape", region.keepDims}}, range,
               out);
}

bool Elaborator::eval(const ast::Expr &e, Frame &frame, SemValue &out) {
  using K = ast::Expr::Kind;
  DepthScope depth(*this, e.range);
  if (!depth.ok())
    return false;
  switch (e.kind) {
  case K::IntLit:
    out = SemValue::ofInt(e.intValue, e.range);
    return true;
  case K::FloatLit:
    out = SemValue::ofFloat(e.floatValue, e.range);
    return true;
  case K::BoolLit:
    out = SemValue::ofCond(SymCond::truth(e.boolValue), e.range);
    return true;
  case K::StringLit:
    out.kind = SemValue::Kind::String;
    out.s = e.text;
    out.range = e.range;
    return true;
  case K::Name:
    return lookupName(e.text, e.range, frame, out);
  case K::Paren:
    if (!eval(*e.operands[0], frame, out))
      return false;
    out.range = e.range;
    return true;
  case K::Tuple:
  case K::List: {
    SemValue v;
    v.kind = e.kind == K::Tuple ? SemValue::Kind::Tuple : SemValue::Kind::List;
    v.range = e.range;
    uint32_t inner = 0;
    for (const auto &x : e.operands) {
      SemValue el;
      if (!eval(*x, frame, el))
        return false;
      inner = std::max(inner, el.nest);
      v.elems.push_back(std::move(el));
    }
    if (!setNest(v, inner, e.range))
      return false;
    out = std::move(v);
    return true;
  }
  case K::Chain: {
    SemValue acc;
    if (!eval(*e.operands[0], frame, acc))
      return false;
    for (size_t i = 0; i < e.ops.size(); ++i) {
      SemValue rhs;
      if (!eval(*e.operands[i + 1], frame, rhs))
        return false;
      SourceRange range(e.operands[0]->range.begin,
                        e.operands[i + 1]->range.end);
      if (!binary(e.ops[i], acc, rhs, e.ops[i].range, range, acc))
        return false;
    }
    out = acc;
    return true;
  }
  case K::Prefix: {
    SemValue v;
    if (!eval(*e.operands[0], frame, v))
      return false;
    for (size_t i = e.ops.size(); i-- > 0;) {
      SourceRange range(e.ops[i].range.begin, e.range.end);
      if (!unaryOp(e.ops[i], v, range, v))
        return false;
    }
    out = v;
    return true;
  }
  case K::Member: {
    SemValue base;
    if (!eval(*e.operands[0], frame, base))
      return false;
    if (base.kind == SemValue::Kind::Module) {
      auto it = base.module->fns.find(e.text);
      if (it == base.module->fns.end()) {
        std::vector<std::string> names;
        for (const auto &entry : base.module->fns)
          names.push_back(entry.first);
        std::optional<std::string> close = closestSpelling(e.text, names);
        return error(e.ops[0].range,
                     "module '" + sourceText(e.operands[0]->range) +
                         "' has no function '" + e.text + "'",
                     close ? "did you mean '" + *close + "'?" : "");
      }
      out.kind = SemValue::Kind::Fn;
      out.fn = it->second;
      out.module = base.module;
      out.range = e.range;
      return true;
    }
    if (base.kind == SemValue::Kind::Tensor && e.text == "shape") {
      out = SemValue();
      out.kind = SemValue::Kind::Shape;
      out.range = e.range;
      for (const SymExpr &d : fn.type(base.tensor).dims)
        out.elems.push_back(SemValue::ofInt(d, e.range));
      return true;
    }
    if (base.kind == SemValue::Kind::Tensor &&
        (e.text == "T" || e.text == "mT"))
      return transposed(base.tensor, e.text == "mT", e.range, e.ops[0].range,
                        out);
    return error(e.ops[0].range, std::string(kindName(base.kind)) +
                                     " has no member '" + e.text + "'" +
                                     (base.kind == SemValue::Kind::Tensor
                                          ? " (tensors have .shape, .T and .mT)"
                                          : ""));
  }
  case K::Index: {
    SemValue base;
    if (!eval(*e.operands[0], frame, base))
      return false;
    if (base.kind == SemValue::Kind::Tensor)
      return indexTensor(e, base, frame, out);
    if (base.kind == SemValue::Kind::Shape ||
        base.kind == SemValue::Kind::Tuple ||
        base.kind == SemValue::Kind::List) {
      if (e.slices.size() != 1 || e.slices[0].isRange)
        return error(e.range, std::string("index ") + kindName(base.kind) +
                                  " with one integer");
      SemValue iv;
      int64_t i;
      if (!eval(*e.slices[0].index, frame, iv) ||
          !asConstInt(iv, "the index", i))
        return false;
      int64_t n = static_cast<int64_t>(base.elems.size());
      if (i < -n || i >= n)
        return error(e.slices[0].range, "index " + std::to_string(i) +
                                            " is out of range for " +
                                            kindName(base.kind) +
                                            " of length " + std::to_string(n));
      out = base.elems[i < 0 ? i + n : i];
      out.range = e.range;
      return true;
    }
    return error(e.range, std::string("cannot index ") + kindName(base.kind));
  }
  case K::Call: {
    SemValue callee;
    if (!eval(*e.operands[0], frame, callee))
      return false;
    std::vector<CallArg> args;
    for (const ast::Arg &a : e.args) {
      CallArg ca;
      ca.name = a.name;
      ca.nameRange = a.nameRange;
      if (!eval(*a.value, frame, ca.value))
        return false;
      ca.value.range = a.value->range;
      args.push_back(std::move(ca));
    }
    if (callee.kind == SemValue::Kind::Fn)
      return callFunction(*callee.module, *callee.fn, std::move(args), e.range,
                          out);
    if (callee.kind == SemValue::Kind::Builtin)
      return callBuiltin(callee.s, args, e.range, out);
    return error(e.operands[0]->range,
                 std::string("cannot call ") + kindName(callee.kind));
  }
  }
  return error(e.range, "unsupported expression");
}

} // namespace tsl
