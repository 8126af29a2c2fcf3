#include "frontend/ElaboratorImpl.h"

#include <algorithm>
#include <cctype>
#include <optional>

namespace tsl {

const char *kindName(SemValue::Kind k) {
  switch (k) {
  case SemValue::Kind::None:
    return "nothing";
  case SemValue::Kind::Tensor:
    return "a tensor";
  case SemValue::Kind::Int:
    return "an int";
  case SemValue::Kind::Float:
    return "a float";
  case SemValue::Kind::Cond:
    return "a condition";
  case SemValue::Kind::Tuple:
    return "a tuple";
  case SemValue::Kind::List:
    return "a list";
  case SemValue::Kind::String:
    return "a string";
  case SemValue::Kind::DType:
    return "an element type";
  case SemValue::Kind::Module:
    return "a module";
  case SemValue::Kind::Fn:
  case SemValue::Kind::Builtin:
    return "a function";
  case SemValue::Kind::Shape:
    return "a shape";
  }
  return "a value";
}

bool Elaborator::error(SourceRange range, std::string message,
                       std::string fix) {
  diags.error(range, std::move(message), std::move(fix));
  return false;
}

bool Elaborator::errorWithNotes(SourceRange range, std::string message,
                                std::vector<DiagNote> notes, std::string fix) {
  Diagnostic d;
  d.range = range;
  d.message = std::move(message);
  d.notes = std::move(notes);
  d.fix = std::move(fix);
  diags.report(std::move(d));
  return false;
}

Location Elaborator::locOf(SourceRange range) const {
  Location loc;
  if (!range.isValid())
    return loc;
  loc.file = sm().name(range.begin.file);
  LineCol b = sm().lineCol(range.begin);
  loc.line = b.line;
  loc.col = b.col;
  if (range.end.isValid() && range.end.offset > range.begin.offset) {
    LineCol e = sm().lineCol(range.end);
    loc.length = e.line == b.line ? e.col - b.col : 1;
  } else {
    loc.length = 1;
  }
  return loc;
}

std::string Elaborator::sourceText(SourceRange range) const {
  if (!range.isValid() || range.end.offset < range.begin.offset)
    return {};
  std::string_view text = sm().text(range.begin.file);
  return std::string(
      text.substr(range.begin.offset, range.end.offset - range.begin.offset));
}

bool Elaborator::emit(OpCode code, std::vector<ValueId> operands, AttrMap attrs,
                      SourceRange range, std::vector<ValueId> &results) {
  Operation op{code, std::move(operands), {}, std::move(attrs), locOf(range)};
  std::vector<TensorType> types;
  for (ValueId v : op.operands)
    types.push_back(fn.type(v));
  ShapeContext ctx(env, op, types, range);
  std::vector<TensorType> resultTypes;
  if (!inferResultTypes(ctx, resultTypes)) {
    diags.error(ctx.errorKind, range, ctx.error);
    return false;
  }
  for (const ShapeFact &a : ctx.newAssertions) {
    Operation check{OpCode::Assert, {}, {}, {}, locOf(a.origin)};
    check.attrs["cond"] = a.cond;
    check.attrs["message"] = a.reason;
    fn.ops.push_back(std::move(check));
  }
  results.clear();
  for (TensorType t : resultTypes) {
    for (SymExpr &d : t.dims) {
      d = env.simplify(d); // apply replacements such as S == 4
      if (!checkSize(d, range))
        return false;
    }
    if (!checkStaticBytes(t, range))
      return false;
    results.push_back(fn.addValue(t));
  }
  op.results = results;
  for (ValueId r : results) {
    if (producerOp.size() <= r)
      producerOp.resize(r + 1, 0);
    producerOp[r] = static_cast<uint32_t>(fn.ops.size() + 1);
  }
  fn.ops.push_back(std::move(op));
  if (fn.ops.size() > 2000000)
    return error(range,
                 "function is too large (more than 2,000,000 operations)");
  return true;
}

bool Elaborator::emit1(OpCode code, std::vector<ValueId> operands,
                       AttrMap attrs, SourceRange range, ValueId &result) {
  std::vector<ValueId> results;
  if (!emit(code, std::move(operands), std::move(attrs), range, results))
    return false;
  result = results.empty() ? 0 : results[0];
  return true;
}

namespace {

std::string int128Text(__int128 v) {
  if (v == 0)
    return "0";
  bool neg = v < 0;
  unsigned __int128 m = neg ? -static_cast<unsigned __int128>(v)
                            : static_cast<unsigned __int128>(v);
  std::string out;
  for (; m; m /= 10)
    out.insert(out.begin(), static_cast<char>('0' + m % 10));
  return neg ? "-" + out : out;
}

} // namespace

std::string sizeOverflowDetail(SymExpr a, const std::string &op, SymExpr b) {
  if (!a.isConst() || !b.isConst() || (op != "+" && op != "-" && op != "*"))
    return {};
  __int128 x = a.constValue(), y = b.constValue();
  __int128 r = op == "+" ? x + y : op == "-" ? x - y : x * y;
  return a.str() + " " + op + " " + b.str() + " = " + int128Text(r);
}

bool Elaborator::checkSize(SymExpr e, SourceRange range,
                           const std::string &detail, bool symbolic) {
  if (e.isOverflow()) {
    std::string text = sourceText(range);
    if (text.size() > 80 || text.find('\n') != std::string::npos)
      text.clear();
    std::string what = "size " + (text.empty() ? "" : "'" + text + "' ");
    if (symbolic && checkingAllSizes) {
      // Sizes are exact: this one overflows for some values of its
      // symbols only (N * 2^64 fits when N is 0), so `check` does not
      // refuse it; a run refuses the values that overflow.
      diags.warning(range, what + "overflows 64 bits for some values of its "
                                  "sizes: the rest of this function is checked "
                                  "only when it runs with given sizes");
      stoppedUncheckable = true;
      return false;
    }
    return error(range,
                 what + "overflows 64 bits" +
                     (detail.empty() ? "" : " (" + detail + ")") +
                     (symbolic ? " for some values of its sizes" : ""),
                 symbolic ? "sizes are exact signed 64-bit integers; a "
                            "function compiled for every size cannot hold "
                            "this one (give its sizes as static dims, or "
                            "make it smaller)"
                          : "sizes are exact signed 64-bit integers; make it "
                            "smaller");
  }
  if (e.depth() > 64 || e.operands().size() > 1000)
    return error(range, "size expression is too complex (" +
                            std::to_string(e.depth()) + " levels, " +
                            std::to_string(e.operands().size()) + " terms)");
  return true;
}

bool Elaborator::checkStaticBytes(const TensorType &t, SourceRange range) {
  SymExpr bytes = SymExpr(static_cast<int64_t>(dtypeSize(t.dtype)));
  for (const SymExpr &d : t.dims) {
    if (!d.isConst())
      return true; // checked when the function runs
    bytes = bytes * d;
  }
  if (!bytes.isOverflow())
    return true;
  return error(range, "result " + t.str() +
                          " does not fit in memory: its size in bytes does "
                          "not fit in 64 bits");
}

bool Elaborator::requireCond(const SymCond &cond, SourceRange range,
                             const std::string &op, const std::string &reason,
                             const std::string &message) {
  if (emptyLoops > 0) // inside a loop that runs no iteration: vacuous
    return true;
  size_t before = env.assertions().size();
  if (env.require(cond, range, op, reason) == ShapeEnv::Resolution::Violated) {
    // The sizes and ints of this call that make it false, when known.
    std::string values;
    for (const std::string &name : cond.symbols())
      if (std::optional<int64_t> v = env.hintValue(SymExpr::symbol(name)))
        values +=
            (values.empty() ? "" : ", ") + name + " = " + std::to_string(*v);
    Diagnostic d;
    d.kind = ErrorKind::Shape;
    d.range = range;
    d.message = message;
    if (!values.empty())
      d.notes.push_back({range, "with " + values});
    loopCounterexample(cond, range, d);
    diags.report(std::move(d));
    return false;
  }
  for (size_t i = before; i < env.assertions().size(); ++i) {
    Operation check{OpCode::Assert, {}, {}, {}, locOf(range)};
    check.attrs["cond"] = env.assertions()[i].cond;
    check.attrs["message"] = reason;
    fn.ops.push_back(std::move(check));
  }
  return true;
}

void Elaborator::loopCounterexample(const SymCond &cond, SourceRange range,
                                    Diagnostic &d) {
  std::string loopVar;
  for (const std::string &name : cond.symbols())
    if (const SymbolInfo *s = env.lookup(name); s && s->loopVariable)
      loopVar = name;
  if (loopVar.empty())
    return;
  std::string values;
  for (const auto &[name, v] : env.counterexample(cond))
    values += (values.empty() ? "" : ", ") + name + " = " + std::to_string(v);
  d.notes.push_back(
      {range, "it must hold in every iteration of the loop over '" + loopVar +
                  "'" + (values.empty() ? "" : ", but fails with " + values)});
  d.fix = "change the loop's range, or state what makes it hold with "
          "check(...) before the loop";
}

// ---------------------------------------------------------------------------
// Recursion bounds.

Elaborator::DepthScope::DepthScope(Elaborator &el, SourceRange range)
    : el_(el), ok_(++el.evalDepth <= kMaxEvalDepth) {
  if (!ok_)
    el.error(range,
             "expression is nested too deeply (more than " +
                 std::to_string(kMaxEvalDepth) +
                 " levels, counting inlined calls)",
             "split the expression with 'let' bindings");
}

bool Elaborator::setNest(SemValue &v, uint32_t inner, SourceRange range) {
  v.nest = inner + 1;
  if (v.nest <= kMaxValueNesting)
    return true;
  return error(range,
               std::string(kindName(v.kind)) + " is nested too deeply (more " +
                   "than " + std::to_string(kMaxValueNesting) + " levels)",
               "build the value in fewer steps");
}

bool Elaborator::evalDimDecl(const ast::DimDecl &decl, Frame &frame,
                             SourceRange use, SymExpr &out) {
  for (size_t i = 0; i < dimStack.size(); ++i) {
    if (dimStack[i] != &decl)
      continue;
    std::string cycle;
    for (size_t j = i; j < dimStack.size(); ++j)
      cycle += dimStack[j]->name + " -> ";
    cycle += decl.name;
    return errorWithNotes(
        use,
        "dim '" + decl.name + "' is defined in terms of itself (" + cycle + ")",
        {{decl.range, "'" + decl.name + "' is declared here"}});
  }
  dimStack.push_back(&decl);
  bool ok = evalDimExpr(*decl.value, frame, out, nullptr);
  dimStack.pop_back();
  return ok;
}

// ---------------------------------------------------------------------------
// Dim expressions in types.

bool Elaborator::evalDimExpr(const ast::Expr &e, Frame &frame, SymExpr &out,
                             std::vector<std::string> *unbound) {
  using K = ast::Expr::Kind;
  DepthScope depth(*this, e.range);
  if (!depth.ok())
    return false;
  switch (e.kind) {
  case K::IntLit:
    out = e.intValue;
    return true;
  case K::Paren:
    return evalDimExpr(*e.operands[0], frame, out, unbound);
  case K::Name: {
    auto d = frame.dims.find(e.text);
    if (d != frame.dims.end()) {
      out = d->second;
      return true;
    }
    for (auto s = frame.scopes.rbegin(); s != frame.scopes.rend(); ++s) {
      auto v = s->find(e.text);
      if (v != s->end()) {
        if (v->second.kind != SemValue::Kind::Int)
          return error(e.range, "'" + e.text + "' is " +
                                    kindName(v->second.kind) + ", not a size");
        out = v->second.i;
        return true;
      }
    }
    auto decl = frame.module->dims.find(e.text);
    if (decl != frame.module->dims.end() && decl->second->value)
      return evalDimDecl(*decl->second, frame, e.range, out);
    if (unbound) {
      if (std::find(unbound->begin(), unbound->end(), e.text) == unbound->end())
        unbound->push_back(e.text);
      out = SymExpr::symbol(
          "\x01" +
          e.text); // stands for the unknown dim until the caller solves it
      return true;
    }
    return error(e.range, "unknown dim '" + e.text + "'",
                 "dims in a type must appear in a parameter's type first");
  }
  case K::Prefix: {
    if (!evalDimExpr(*e.operands[0], frame, out, unbound))
      return false;
    for (const std::string &op : e.ops) {
      if (op != "-")
        return error(e.range,
                     "'" + op + "' is not allowed in a size expression");
      out = -out;
    }
    return checkSize(out, e.range);
  }
  case K::Chain: {
    if (!evalDimExpr(*e.operands[0], frame, out, unbound))
      return false;
    for (size_t i = 0; i < e.ops.size(); ++i) {
      SymExpr r;
      if (!evalDimExpr(*e.operands[i + 1], frame, r, unbound))
        return false;
      const std::string &op = e.ops[i];
      SymExpr lhs = out;
      if (op == "+")
        out = out + r;
      else if (op == "-")
        out = out - r;
      else if (op == "*")
        out = out * r;
      else if (op == "/" || op == "%") {
        if (r.isConst(0))
          return error(e.ops[i].range, "division by zero in a size expression");
        out = op == "/" ? SymExpr::floorDiv(out, r) : SymExpr::mod(out, r);
      } else
        return error(e.ops[i].range,
                     "'" + op + "' is not allowed in a size expression");
      if (!checkSize(out, e.range, sizeOverflowDetail(lhs, op, r),
                     !lhs.isConst() || !r.isConst()))
        return false;
    }
    return true;
  }
  case K::Call: {
    const ast::Expr &callee = *e.operands[0];
    if (callee.kind == K::Name &&
        (callee.text == "min" || callee.text == "max") && e.args.size() == 2 &&
        e.args[0].name.empty() && e.args[1].name.empty()) {
      SymExpr a, b;
      if (!evalDimExpr(*e.args[0].value, frame, a, unbound) ||
          !evalDimExpr(*e.args[1].value, frame, b, unbound))
        return false;
      out = callee.text == "min" ? SymExpr::min(a, b) : SymExpr::max(a, b);
      return checkSize(out, e.range);
    }
    return error(
        e.range,
        "only min(a, b) and max(a, b) may be called in a size expression");
  }
  default:
    return error(e.range, "expected a size expression (integers, dim names, + "
                          "- * / %, min, max)");
  }
}

/// Solves `pattern(N) == actual` for one unknown N in a linear pattern.
bool solveForUnknown(SymExpr pattern, const std::string &unknown,
                     SymExpr actual, SymExpr &coeff, SymExpr &offset) {
  SymExpr ph = SymExpr::symbol("\x01" + unknown);
  std::map<std::string, SymExpr> at0{{ph.symbolName(), SymExpr(0)}},
      at1{{ph.symbolName(), SymExpr(1)}};
  // Linear exactly when the canonical forms agree (pattern(2) may leave
  // int64 for a large coefficient; the run-time checks catch such values).
  SymExpr e0 = pattern.substitute(at0), e1 = pattern.substitute(at1);
  coeff = e1 - e0;
  offset = e0;
  return coeff.isConst() && coeff.constValue() > 0 &&
         pattern == offset + coeff * ph;
}

bool Elaborator::bindType(const ast::TypeExpr &pattern, TensorType actual,
                          Frame &frame, SourceRange where,
                          const std::string &what) {
  auto dt = parseDType(pattern.base);
  if (const ast::TypeParam *tp = typeParamOf(pattern.base, frame)) {
    if (!bindTypeParam(*tp, actual.dtype, frame, where, what))
      return false;
    dt = actual.dtype;
  }
  if (!dt)
    return error(pattern.baseRange,
                 "unknown element type '" + pattern.base + "'",
                 "element types are bool i8 i32 i64 f16 bf16 f32 f64");
  if (*dt != actual.dtype)
    return error(where,
                 what + " must have element type " + pattern.base + ", got " +
                     actual.str(),
                 "convert it with cast(..., " + pattern.base + ")");
  size_t packs = 0;
  for (const ast::TypeDim &d : pattern.dims)
    packs += d.kind == ast::TypeDim::Kind::Pack;
  if (packs > 1)
    return error(pattern.range, "a type may contain at most one pack");
  size_t fixed = pattern.dims.size() - packs;
  if ((packs == 0 && actual.rank() != fixed) ||
      (packs == 1 && actual.rank() < fixed))
    return error(where, what + " must have rank " + (packs ? "at least " : "") +
                            std::to_string(fixed) + ", got " + actual.str());
  size_t packLen = actual.rank() - fixed;
  std::vector<std::pair<const ast::TypeDim *, SymExpr>> deferred;
  size_t axis = 0;
  auto sameDim = [&](SymExpr expected, SymExpr got, const std::string &name) {
    return requireCond(SymCond::eq(expected, got), where, "call",
                       "dim '" + name + "' of " + what,
                       what + " must be " + sourceText(pattern.range) +
                           ", got " + actual.str() +
                           (std::isalpha(static_cast<unsigned char>(name[0]))
                                ? " (dim '" + name + "' is " + expected.str() +
                                      " but the value has " + got.str() + ")"
                                : std::string()));
  };
  for (const ast::TypeDim &d : pattern.dims) {
    switch (d.kind) {
    case ast::TypeDim::Kind::Pack: {
      std::vector<SymExpr> dims(actual.dims.begin() + axis,
                                actual.dims.begin() + axis + packLen);
      auto it = frame.packs.find(d.name);
      if (it == frame.packs.end()) {
        frame.packs[d.name] = dims;
      } else {
        if (it->second.size() != dims.size())
          return error(where, what + ": pack '*" + d.name + "' has " +
                                  std::to_string(it->second.size()) +
                                  " dims elsewhere but " +
                                  std::to_string(dims.size()) + " here");
        for (size_t i = 0; i < dims.size(); ++i)
          if (!sameDim(it->second[i], dims[i],
                       d.name + "[" + std::to_string(i) + "]"))
            return false;
      }
      axis += packLen;
      break;
    }
    case ast::TypeDim::Kind::Unknown:
      ++axis;
      break;
    case ast::TypeDim::Kind::Inline: {
      SymExpr got = actual.dims[axis++];
      auto it = frame.dims.find(d.name);
      if (it == frame.dims.end())
        frame.dims[d.name] = got;
      else if (!sameDim(it->second, got, d.name))
        return false;
      break;
    }
    case ast::TypeDim::Kind::Expr: {
      SymExpr got = actual.dims[axis++];
      const ast::Expr &e = *d.expr;
      if (e.kind == ast::Expr::Kind::Name && !frame.dims.count(e.text)) {
        bool isScopeVar = false;
        for (auto &s : frame.scopes)
          isScopeVar |= s.count(e.text) > 0;
        auto decl = frame.module->dims.find(e.text);
        bool hasValue = decl != frame.module->dims.end() && decl->second->value;
        if (!isScopeVar && !hasValue) {
          frame.dims[e.text] = got;
          break;
        }
      }
      deferred.push_back({&d, got});
      break;
    }
    }
  }
  for (auto &[d, got] : deferred) {
    std::vector<std::string> unbound;
    SymExpr expected;
    if (!evalDimExpr(*d->expr, frame, expected, &unbound))
      return false;
    if (unbound.empty()) {
      if (!sameDim(expected, got, sourceText(d->range)))
        return false;
      continue;
    }
    SymExpr coeff, offset;
    if (unbound.size() > 1 ||
        !solveForUnknown(expected, unbound[0], got, coeff, offset))
      return error(d->range,
                   "not supported: cannot solve the size expression '" +
                       sourceText(d->range) + "' for its dim",
                   "use a plain dim name and a check(...)");
    SymExpr rest = got - offset;
    if (!requireCond(SymCond::eq(SymExpr::mod(rest, coeff), 0), where, "call",
                     "size of the form " + sourceText(d->range),
                     what + ": size " + got.str() + " is not of the form " +
                         sourceText(d->range)) ||
        !requireCond(SymCond::ge(rest, 0), where, "call",
                     "size of the form " + sourceText(d->range),
                     what + ": size " + got.str() + " is not of the form " +
                         sourceText(d->range)))
      return false;
    frame.dims[unbound[0]] = SymExpr::floorDiv(rest, coeff);
  }
  return true;
}

// ---------------------------------------------------------------------------
// Decisions.

bool Elaborator::decide(const SymCond &cond, const ast::Expr &source,
                        bool &value) {
  std::string op = "if";
  Truth t = env.choose(cond, source.range, op,
                       "'if " + sourceText(source.range) + "'");
  if (t != Truth::Unknown) {
    value = t == Truth::True;
    return true;
  }
  std::vector<std::string> unbacked;
  for (const std::string &s : cond.symbols())
    if (const SymbolInfo *info = env.lookup(s))
      if (info->kind == DimKind::Unbacked)
        unbacked.push_back(s);
  if (generic && unbacked.empty()) {
    // Check both outcomes: this run takes the recorded (or first) branch.
    if (pathIndex < path.size()) {
      value = path[pathIndex];
    } else {
      value = true;
      path.push_back(true);
    }
    ++pathIndex;
    env.addFact(value ? cond : SymCond::negate(cond));
    return true;
  }
  std::string name =
      unbacked.empty() ? cond.symbols().front() : unbacked.front();
  std::vector<DiagNote> notes;
  if (const SymbolInfo *info = env.lookup(name)) {
    std::string what = info->description.empty()
                           ? name + " has no value at compile time"
                           : name + " is " + info->description;
    notes.push_back(
        {info->origin, what + (info->origin.isValid() ? " here" : "")});
  }
  std::string text = sourceText(source.range);
  // Z3 counterexamples show why no single answer is right.
  auto describe = [](const std::map<std::string, int64_t> &values) {
    std::string out;
    for (const auto &[n, v] : values)
      out += (out.empty() ? "" : ", ") + n + " = " + std::to_string(v);
    return out;
  };
  std::string whenFalse = describe(env.counterexample(cond));
  std::string whenTrue = describe(env.counterexample(SymCond::negate(cond)));
  if (!whenFalse.empty() && !whenTrue.empty())
    notes.push_back({source.range, "it is true when " + whenTrue +
                                       " but false when " + whenFalse});
  notes.push_back(
      {source.range,
       "add 'check(" + text + ");' before this line, or use where(...)"});
  return errorWithNotes(source.range,
                        "cannot decide '" + cond.str() + "': " + name +
                            " has no value at compile time",
                        std::move(notes));
}

// ---------------------------------------------------------------------------
// Statements.

bool Elaborator::execBlock(const ast::Block &block, Frame &frame,
                           bool &returned, SemValue &result) {
  DepthScope depth(*this, block.range);
  if (!depth.ok())
    return false;
  frame.scopes.emplace_back();
  for (size_t i = 0; i < block.stmts.size(); ++i) {
    const ast::Stmt &st = block.stmts[i];
    if (returned) {
      // After a `return` of this block the code is dead in every variant;
      // after a branch that returned it is only dead in this one.
      if (block.stmts[i - 1].kind == ast::Stmt::Kind::Return)
        return error(st.range, "code after 'return' is unreachable");
      break;
    }
    switch (st.kind) {
    case ast::Stmt::Kind::Let:
    case ast::Stmt::Kind::Var: {
      SemValue v;
      if (!eval(*st.value, frame, v))
        return false;
      if (st.tuplePattern) {
        if (v.kind != SemValue::Kind::Tuple)
          return error(st.value->range,
                       "cannot take apart " + std::string(kindName(v.kind)) +
                           " as a tuple of " + std::to_string(st.names.size()));
        if (v.elems.size() != st.names.size())
          return error(st.range, "tuple has " + std::to_string(v.elems.size()) +
                                     " elements but the pattern names " +
                                     std::to_string(st.names.size()));
        for (size_t k = 0; k < st.names.size(); ++k)
          frame.scopes.back()[st.names[k]] = v.elems[k];
        break;
      }
      if (st.ascription) {
        if (v.kind != SemValue::Kind::Tensor)
          return error(st.value->range,
                       "the type annotation needs a tensor, got " +
                           std::string(kindName(v.kind)));
        if (!bindType(*st.ascription, fn.type(v.tensor), frame, st.value->range,
                      "'" + st.names[0] + "'"))
          return false;
      }
      if (v.kind == SemValue::Kind::None)
        return error(st.value->range, "this expression has no value to bind");
      frame.scopes.back()[st.names[0]] = v;
      if (st.kind == ast::Stmt::Kind::Var) // assignable from here on
        frame.vars.insert({frame.scopes.size() - 1, st.names[0]});
      else
        frame.vars.erase({frame.scopes.size() - 1, st.names[0]});
      break;
    }
    case ast::Stmt::Kind::Assign:
      if (!execAssign(st, frame))
        return false;
      break;
    case ast::Stmt::Kind::For:
      if (!execFor(st, frame))
        return false;
      break;
    case ast::Stmt::Kind::Check: {
      SemValue c;
      if (!eval(*st.cond, frame, c))
        return false;
      if (c.kind != SemValue::Kind::Cond)
        return error(
            st.cond->range,
            "check(...) needs a condition on sizes or ints, got " +
                std::string(kindName(c.kind)),
            "conditions on tensor values are data, not shapes: use where(...)");
      if (emptyLoops > 0) // in a loop that runs no iteration: vacuous
        break;
      Truth t = env.prove(c.c);
      if (t == Truth::False) {
        diags.error(ErrorKind::Shape, st.cond->range,
                    "this check always fails: " + sourceText(st.cond->range) +
                        (st.hasMessage ? " (" + st.message + ")" : ""));
        return false;
      }
      if (t == Truth::True)
        break;
      env.addFact(c.c);
      Operation check{OpCode::Assert, {}, {}, {}, locOf(st.range)};
      check.attrs["cond"] = c.c;
      check.attrs["message"] = st.hasMessage ? st.message : std::string();
      fn.ops.push_back(std::move(check));
      break;
    }
    case ast::Stmt::Kind::If: {
      bool taken = false;
      for (size_t k = 0; k < st.conds.size() && !taken; ++k) {
        SemValue c;
        if (!eval(*st.conds[k], frame, c))
          return false;
        if (c.kind != SemValue::Kind::Cond)
          return error(st.conds[k]->range,
                       "'if' needs a condition on sizes or ints, got " +
                           std::string(kindName(c.kind)),
                       "to choose between tensor values elementwise, use "
                       "where(c, a, b)");
        bool value;
        if (!decide(c.c, *st.conds[k], value))
          return false;
        if (value) {
          taken = true;
          if (!execBlock(*st.blocks[k], frame, returned, result))
            return false;
        }
      }
      if (!taken && st.blocks.size() > st.conds.size())
        if (!execBlock(*st.blocks.back(), frame, returned, result))
          return false;
      break;
    }
    case ast::Stmt::Kind::Return: {
      if (frame.loops > 0)
        return error(st.range, "not supported: 'return' inside a 'for' loop",
                     "assign the value to a 'var' declared before the loop "
                     "and return it after the loop");
      if (st.value) {
        if (!eval(*st.value, frame, result))
          return false;
      } else {
        result = SemValue();
      }
      result.range = st.value ? st.value->range : st.range;
      returned = true;
      break;
    }
    case ast::Stmt::Kind::ExprStmt:
      return error(st.range, "this expression's value is unused",
                   "bind it with 'let' or return it");
    }
    frame.finished(block, st);
  }
  frame.popScope();
  return true;
}

// ---------------------------------------------------------------------------
// Calls.

bool matchResults(Elaborator &el, const ast::FnDecl &decl, Frame &frame,
                  SemValue &result, SourceRange callRange) {
  if (!decl.hasResult) {
    if (result.kind != SemValue::Kind::None)
      return el.error(result.range,
                      "'" + decl.name + "' declares no result but returns " +
                          std::string(kindName(result.kind)),
                      "add '-> TYPE' to the signature");
    return true;
  }
  if (result.kind == SemValue::Kind::None)
    return el.error(decl.nameRange,
                    "'" + decl.name + "' does not return a value");
  std::vector<SemValue *> parts;
  if (decl.tupleResult) {
    if (result.kind != SemValue::Kind::Tuple ||
        result.elems.size() != decl.results.size())
      return el.error(result.range, "'" + decl.name +
                                        "' must return a tuple of " +
                                        std::to_string(decl.results.size()) +
                                        ", got " + kindName(result.kind));
    for (SemValue &e : result.elems)
      parts.push_back(&e);
  } else {
    parts.push_back(&result);
  }
  for (size_t i = 0; i < parts.size(); ++i) {
    const ast::TypeExpr &t = decl.results[i];
    SemValue &v = *parts[i];
    if (t.base == "int") {
      if (v.kind != SemValue::Kind::Int)
        return el.error(v.range, "'" + decl.name +
                                     "' must return an int here, got " +
                                     kindName(v.kind));
      continue;
    }
    if (v.kind == SemValue::Kind::Int || v.kind == SemValue::Kind::Float) {
      ValueId id;
      auto dt = elementTypeOf(t.base, frame);
      if (!el.toTensor(v, dt, v.range, id))
        return false;
      v = SemValue::ofTensor(id, v.range);
    }
    if (v.kind != SemValue::Kind::Tensor)
      return el.error(v.range, "'" + decl.name +
                                   "' must return a tensor here, got " +
                                   kindName(v.kind));
    if (!el.bindType(t, el.fn.type(v.tensor), frame, v.range,
                     "the result of '" + decl.name + "'"))
      return false;
  }
  (void)callRange;
  return true;
}

bool Elaborator::callFunction(const LoadedModule &module,
                              const ast::FnDecl &decl,
                              std::vector<CallArg> args, SourceRange range,
                              SemValue &out) {
  for (const ast::FnDecl *active : callStack)
    if (active == &decl)
      return error(
          range, "recursive call to '" + decl.name + "' is not supported",
          "functions are inlined at compile time; unroll the recursion");
  if (callStack.size() > 64)
    return error(range, "calls nested too deeply (more than 64 levels)");
  if (++inlinedCalls > 20000)
    return error(range, "too many calls after inlining (more than 20,000)",
                 "calls are inlined at compile time; avoid calling helpers in "
                 "exponential fan-out");
  if (!checkTypeParams(decl))
    return false;
  size_t firstOp = fn.ops.size();
  Frame frame;
  frame.module = &module;
  frame.decl = &decl;
  frame.scopes.emplace_back();
  // Match arguments to parameters.
  std::vector<const CallArg *> bound(decl.params.size(), nullptr);
  size_t positional = 0;
  bool namedSeen = false;
  for (const CallArg &a : args) {
    if (a.name.empty()) {
      if (namedSeen)
        return error(a.value.range, "positional argument after a named one");
      if (positional >= decl.params.size())
        return error(a.value.range, "'" + decl.name + "' takes " +
                                        std::to_string(decl.params.size()) +
                                        " arguments, got " +
                                        std::to_string(args.size()));
      bound[positional++] = &a;
      continue;
    }
    namedSeen = true;
    size_t k = 0;
    while (k < decl.params.size() && decl.params[k].name != a.name)
      ++k;
    if (k == decl.params.size())
      return error(a.nameRange, "'" + decl.name + "' has no parameter named '" +
                                    a.name + "'");
    if (bound[k])
      return error(a.nameRange, "argument '" + a.name + "' is given twice");
    bound[k] = &a;
  }
  callStack.push_back(&decl);
  // Literals for parameters typed by a type parameter wait for the
  // arguments that bind it.
  std::vector<std::pair<const ast::Param *, SemValue>> later;
  for (size_t k = 0; k < decl.params.size(); ++k) {
    const ast::Param &p = decl.params[k];
    SemValue v;
    if (bound[k]) {
      v = bound[k]->value;
    } else if (p.defaultValue) {
      if (!eval(*p.defaultValue, frame, v))
        return false;
    } else {
      return errorWithNotes(
          range,
          "missing argument '" + p.name + "' in call to '" + decl.name + "'",
          {{p.nameRange, "'" + p.name + "' is declared here"}});
    }
    bool deferred;
    if (!bindArgument(decl, p, v, frame, true, deferred))
      return false;
    if (deferred)
      later.push_back({&p, v});
  }
  for (auto &[p, v] : later) {
    bool deferred;
    if (!bindArgument(decl, *p, v, frame, false, deferred))
      return false;
  }
  bool returned = false;
  SemValue result;
  std::optional<NameUses> uses;
  if (decl.body.stmts.size() >= NameUses::kMinStatements) {
    frame.uses = &uses.emplace(decl.body);
    frame.usesBody = &decl.body;
  }
  if (!execBlock(decl.body, frame, returned, result))
    return false;
  if (!matchResults(*this, decl, frame, result, range))
    return false;
  callStack.pop_back();
  callRuns.push_back({firstOp, fn.ops.size(), decl.name, locOf(range)});
  out = result;
  out.range = range;
  return true;
}

} // namespace tsl
