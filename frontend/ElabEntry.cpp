// Entry functions: parameters become symbols (or constants) from example
// arguments or generically; plus the module-level check.
#include "frontend/ElaboratorImpl.h"
#include "ir/Pipeline.h"
#include "support/DeepStack.h"

#ifdef __GLIBC__
#include <malloc.h>
#endif

#include <algorithm>
#include <optional>

namespace tsl {

// ---------------------------------------------------------------------------
// Entry functions.

namespace {

struct EntryBinder {
  Elaborator &el;
  Frame &frame;
  const std::map<std::string, ExampleArg> *examples;

  /// Kind and range of a dim named in a signature.
  void specOf(const std::string &name, const ast::DimSpec *inlineSpec,
              DimKind &kind, const ast::DimSpec *&spec,
              const ast::DimDecl *&decl) {
    decl = nullptr;
    spec = inlineSpec;
    auto it = frame.module->dims.find(name);
    if (it != frame.module->dims.end())
      decl = it->second;
    if (!spec && decl && !decl->value)
      spec = &decl->spec;
    kind = spec ? spec->kind
                : (decl && decl->value ? DimKind::Static : DimKind::Auto);
    if (kind == DimKind::Auto && (el.allDynamic || el.forceDynamic.count(name)))
      kind = DimKind::Dynamic; // automatic dynamic
  }

  bool makeDim(const std::string &name, const ast::DimSpec *inlineSpec,
               std::optional<int64_t> example, SourceRange range,
               const std::string &what, SymExpr &out) {
    DimKind kind;
    const ast::DimSpec *spec;
    const ast::DimDecl *decl;
    specOf(name, inlineSpec, kind, spec, decl);
    if (decl && decl->value) {
      if (!el.evalDimDecl(*decl, frame, range, out))
        return false;
      if (example && out.isConst() && out.constValue() != *example)
        return el.errorWithNotes(range,
                                 what + ": dim '" + name + "' is declared " +
                                     out.str() + " but the argument has " +
                                     std::to_string(*example),
                                 {{decl->range, "declared here"}});
      return true;
    }
    if (spec && example) {
      if ((spec->lo && *example < *spec->lo) ||
          (spec->hi && *example > *spec->hi))
        return el.error(
            range, what + ": dim '" + name + "' = " + std::to_string(*example) +
                       " is outside its declared range " +
                       (spec->lo ? std::to_string(*spec->lo) : "") + ".." +
                       (spec->hi ? std::to_string(*spec->hi) : ""));
      if (spec->multipleOf > 1 && *example % spec->multipleOf != 0)
        return el.error(range, what + ": dim '" + name +
                                   "' = " + std::to_string(*example) +
                                   " is not a multiple of " +
                                   std::to_string(spec->multipleOf));
    }
    if ((kind == DimKind::Static || kind == DimKind::Auto) && example) {
      out = *example;
      if (kind == DimKind::Auto)
        el.fn.specialized[name] = *example;
      return true;
    }
    SymbolInfo info;
    info.name = name;
    info.kind = kind;
    if (kind != DimKind::Unbacked)
      info.hint = example;
    if (spec) {
      info.lo = spec->lo.value_or(0);
      info.hi = spec->hi;
      info.multipleOf = spec->multipleOf;
    }
    info.origin = range;
    if (el.env.lookup(name))
      return el.error(range,
                      "dim '" + name + "' is declared twice in this signature");
    out = el.env.addSymbol(info);
    return true;
  }

  /// Binds an `int` parameter: a constant from its example (static, auto) or
  /// default, or a symbol (dynamic, unbacked, or no example).
  bool bindIntParam(const ast::Param &p, const ExampleArg *ex);
  /// Binds a tensor parameter: its type from the signature and the example,
  /// with a symbol or constant per dim.
  bool bindTensorParam(const ast::Param &p, const ExampleArg *ex);

private:
  /// Binds the dims of \p p's type that name dims (plain names, inline
  /// specs, packs, `?`) into \p type; dims that are expressions are left to
  /// bindDerived and listed in \p derived with their axis.
  bool
  bindTypeDims(const ast::Param &p, const ExampleArg *ex,
               const std::string &what, size_t rank, size_t fixed,
               TensorType &type, std::vector<std::string> &axisNames,
               std::vector<std::pair<const ast::TypeDim *, size_t>> &derived);
  /// A pack `*B` of \p len axes starting at \p axis (the same symbols where
  /// the pack appeared before).
  bool bindPack(const ast::TypeDim &d, const ExampleArg *ex,
                const std::string &what, size_t axis, size_t len,
                TensorType &type, std::vector<std::string> &axisNames);
  /// A dim given by name (or inline with its spec) at \p axis; a name seen
  /// before must agree with the example.
  bool bindNamed(const ast::TypeDim &d, const ExampleArg *ex,
                 const std::string &what, size_t axis, TensorType &type,
                 std::vector<std::string> &axisNames);
  /// A dim given by an expression such as `2*N`: solved for its one unknown
  /// dim (linear), then checked against the example.
  bool bindDerived(const ast::TypeDim &d, size_t a, const ExampleArg *ex,
                   const std::string &what, SymExpr &out);
};

bool EntryBinder::bindIntParam(const ast::Param &p, const ExampleArg *ex) {
  if (p.type.hasDims)
    return el.error(p.type.range, "'int' takes no dims",
                    "use i64[...] for a tensor of integers");
  if (ex && !ex->isInt)
    return el.error(p.nameRange,
                    "parameter '" + p.name + "' is an int; pass an integer");
  DimKind intKind = p.type.intKind.value_or(DimKind::Auto);
  bool constantDefault =
      !examples && (intKind == DimKind::Static || intKind == DimKind::Auto);
  if (!ex && p.defaultValue && (examples || constantDefault)) {
    // Without a call, a static int takes its default (like the first call).
    SemValue def;
    if (!el.eval(*p.defaultValue, frame, def))
      return false;
    if (def.kind != SemValue::Kind::Int)
      return el.error(p.defaultValue->range,
                      "the default of an int parameter must be an int");
    frame.scopes.back()[p.name] = def;
    return true;
  }
  DimKind kind = intKind;
  if (kind == DimKind::Auto && (el.allDynamic || el.forceDynamic.count(p.name)))
    kind = DimKind::Dynamic; // automatic dynamic
  SymExpr value;
  if (ex && (kind == DimKind::Static || kind == DimKind::Auto)) {
    value = ex->intValue;
    if (kind == DimKind::Auto)
      el.fn.specialized[p.name] = ex->intValue;
  } else {
    SymbolInfo info;
    info.name = p.name;
    info.kind = kind;
    info.isInt = true;
    info.lo = INT64_MIN;
    if (ex && kind != DimKind::Unbacked)
      info.hint = ex->intValue;
    info.origin = p.nameRange;
    value = el.env.addSymbol(info);
  }
  Param param;
  param.name = p.name;
  param.isInt = true;
  param.intExpr = value;
  el.fn.params.push_back(param);
  frame.scopes.back()[p.name] = SemValue::ofInt(value, p.nameRange);
  return true;
}

bool EntryBinder::bindTensorParam(const ast::Param &p, const ExampleArg *ex) {
  auto dt = elementTypeOf(p.type.base, frame);
  if (const ast::TypeParam *tp = typeParamOf(p.type.base, frame)) {
    // The JIT compiles per call signature, element types included: a type
    // parameter takes the example's type (f32 without examples).
    DType actual = ex && !ex->isInt ? ex->dtype : dt.value_or(DType::F32);
    if (!el.bindTypeParam(*tp, actual, frame, p.type.range,
                          "argument '" + p.name + "'"))
      return false;
    dt = actual;
  }
  if (!dt)
    return el.error(p.type.baseRange, "unknown type '" + p.type.base + "'",
                    "types are int or an element type (bool i8 i32 i64 f16 "
                    "bf16 f32 f64)");
  if (!ex && p.defaultValue && examples) {
    SemValue def;
    if (!el.eval(*p.defaultValue, frame, def))
      return false;
    ValueId id;
    if (def.kind == SemValue::Kind::Tensor)
      id = def.tensor;
    else if (!el.toTensor(def, dt, p.defaultValue->range, id))
      return false;
    frame.scopes.back()[p.name] = SemValue::ofTensor(id, p.nameRange);
    return true;
  }
  std::string what = "argument '" + p.name + "'";
  if (ex) {
    if (ex->isInt)
      return el.error(p.nameRange, "parameter '" + p.name + "' is a tensor (" +
                                       el.sourceText(p.type.range) +
                                       "); pass a TYPE like f32[2,3]");
    if (ex->dtype != *dt)
      return el.error(p.type.range, what + " must have element type " +
                                        p.type.base + ", got " +
                                        dtypeName(ex->dtype));
  }
  size_t packs = 0;
  for (const ast::TypeDim &d : p.type.dims)
    packs += d.kind == ast::TypeDim::Kind::Pack;
  if (packs > 1)
    return el.error(p.type.range, "a type may contain at most one pack");
  size_t fixed = p.type.dims.size() - packs;
  size_t rank = ex ? ex->shape.size() : fixed + (packs ? 2 : 0);
  if (ex && ((packs == 0 && rank != fixed) || (packs == 1 && rank < fixed)))
    return el.error(p.type.range, what + " must have rank " +
                                      (packs ? "at least " : "") +
                                      std::to_string(fixed) + ", got " +
                                      std::to_string(rank));
  TensorType type{*dt, std::vector<SymExpr>(rank)};
  std::vector<std::string> axisNames(rank);
  std::vector<std::pair<const ast::TypeDim *, size_t>> derived;
  if (!bindTypeDims(p, ex, what, rank, fixed, type, axisNames, derived))
    return false;
  for (auto &[d, a] : derived)
    if (!bindDerived(*d, a, ex, what, type.dims[a]))
      return false;
  el.fn.axisNames.push_back(axisNames);
  ValueId id = el.fn.addValue(type, p.name);
  Param param;
  param.name = p.name;
  param.value = id;
  param.donated = el.donated.count(p.name) > 0;
  el.fn.params.push_back(param);
  frame.scopes.back()[p.name] = SemValue::ofTensor(id, p.nameRange);
  return true;
}

bool EntryBinder::bindTypeDims(
    const ast::Param &p, const ExampleArg *ex, const std::string &what,
    size_t rank, size_t fixed, TensorType &type,
    std::vector<std::string> &axisNames,
    std::vector<std::pair<const ast::TypeDim *, size_t>> &derived) {
  size_t axis = 0;
  for (const ast::TypeDim &d : p.type.dims) {
    switch (d.kind) {
    case ast::TypeDim::Kind::Pack: {
      size_t len = rank - fixed;
      if (!bindPack(d, ex, what, axis, len, type, axisNames))
        return false;
      axis += len;
      break;
    }
    case ast::TypeDim::Kind::Unknown: {
      SymExpr s;
      axisNames[axis] = "_" + p.name + "_" + std::to_string(axis);
      std::optional<int64_t> example;
      if (ex)
        example = ex->shape[axis];
      if (!makeDim(axisNames[axis], nullptr, example, d.range, what, s))
        return false;
      type.dims[axis++] = s;
      break;
    }
    case ast::TypeDim::Kind::Inline:
    case ast::TypeDim::Kind::Expr: {
      bool plain = d.kind == ast::TypeDim::Kind::Inline ||
                   (d.expr->kind == ast::Expr::Kind::Name &&
                    !frame.scopes.back().count(d.expr->text));
      if (!plain) {
        derived.push_back({&d, axis++});
        break;
      }
      if (!bindNamed(d, ex, what, axis++, type, axisNames))
        return false;
      break;
    }
    }
  }
  return true;
}

bool EntryBinder::bindPack(const ast::TypeDim &d, const ExampleArg *ex,
                           const std::string &what, size_t axis, size_t len,
                           TensorType &type,
                           std::vector<std::string> &axisNames) {
  auto it = frame.packs.find(d.name);
  std::vector<SymExpr> dims;
  for (size_t k = 0; k < len; ++k) {
    if (it != frame.packs.end()) {
      if (it->second.size() != len)
        return el.error(d.range, what + ": pack '*" + d.name +
                                     "' has a different length here");
      dims.push_back(it->second[k]);
      continue;
    }
    SymExpr s;
    std::optional<int64_t> example;
    if (ex)
      example = ex->shape[axis + k];
    if (!makeDim(d.name + "_" + std::to_string(k), nullptr, example, d.range,
                 what, s))
      return false;
    dims.push_back(s);
  }
  if (it == frame.packs.end())
    frame.packs[d.name] = dims;
  for (size_t k = 0; k < len; ++k) {
    type.dims[axis + k] = dims[k];
    axisNames[axis + k] = d.name + "_" + std::to_string(k);
  }
  return true;
}

bool EntryBinder::bindNamed(const ast::TypeDim &d, const ExampleArg *ex,
                            const std::string &what, size_t axis,
                            TensorType &type,
                            std::vector<std::string> &axisNames) {
  std::string name =
      d.kind == ast::TypeDim::Kind::Inline ? d.name : d.expr->text;
  auto it = frame.dims.find(name);
  if (it != frame.dims.end()) {
    // A repeated dim name: the example must agree.
    std::optional<int64_t> have = el.env.hintValue(it->second);
    if (it->second.isConst())
      have = it->second.constValue();
    if (ex && have && *have != ex->shape[axis])
      return el.error(d.range, what + ": dim '" + name + "' is " +
                                   std::to_string(*have) +
                                   " in an earlier argument but " +
                                   std::to_string(ex->shape[axis]) + " here");
    axisNames[axis] = name;
    type.dims[axis] = it->second;
    return true;
  }
  SymExpr s;
  std::optional<int64_t> example;
  if (ex)
    example = ex->shape[axis];
  if (!makeDim(name, d.kind == ast::TypeDim::Kind::Inline ? &d.spec : nullptr,
               example, d.range, what, s))
    return false;
  frame.dims[name] = s;
  axisNames[axis] = name;
  type.dims[axis] = s;
  return true;
}

bool EntryBinder::bindDerived(const ast::TypeDim &d, size_t a,
                              const ExampleArg *ex, const std::string &what,
                              SymExpr &out) {
  std::vector<std::string> unbound;
  SymExpr expr;
  if (!el.evalDimExpr(*d.expr, frame, expr, &unbound))
    return false;
  if (unbound.size() > 1)
    return el.error(d.range, "not supported: the size expression '" +
                                 el.sourceText(d.range) +
                                 "' has more than one unknown dim");
  if (unbound.size() == 1) {
    SymExpr coeff, offset;
    if (!solveForUnknown(expr, unbound[0], SymExpr(0), coeff, offset))
      return el.error(d.range, "not supported: cannot solve '" +
                                   el.sourceText(d.range) + "' for '" +
                                   unbound[0] + "' (it must be linear)");
    std::optional<int64_t> solved;
    if (ex) {
      int64_t rest =
          ex->shape[a] - (offset.isConst() ? offset.constValue() : 0);
      int64_t c = coeff.constValue();
      if (!offset.isConst() || rest < 0 || rest % c != 0)
        return el.error(d.range, what + " dim " + std::to_string(a) + " = " +
                                     std::to_string(ex->shape[a]) +
                                     " is not of the form " +
                                     el.sourceText(d.range));
      solved = rest / c;
    }
    SymExpr s;
    if (!makeDim(unbound[0], nullptr, solved, d.range, what, s))
      return false;
    frame.dims[unbound[0]] = s;
    if (!el.evalDimExpr(*d.expr, frame, expr, nullptr))
      return false;
    if (!solved && !s.isConst())
      el.env.addFact(SymCond::ge(s, 0));
  }
  if (ex) {
    auto v = expr.isConst() ? std::optional<int64_t>(expr.constValue())
                            : el.env.hintValue(expr);
    if (v && *v != ex->shape[a])
      return el.error(d.range, what + " dim " + std::to_string(a) +
                                   " must be " + el.sourceText(d.range) +
                                   (el.sourceText(d.range) == std::to_string(*v)
                                        ? std::string()
                                        : " = " + std::to_string(*v)) +
                                   ", got " + std::to_string(ex->shape[a]));
  }
  out = expr;
  return true;
}

} // namespace

bool Elaborator::checkEntryParams(
    const ast::FnDecl &decl,
    const std::map<std::string, ExampleArg> *examples) {
  if (examples)
    for (const auto &[name, ex] : *examples) {
      bool known = false;
      for (const ast::Param &p : decl.params)
        known |= p.name == name;
      if (!known)
        return error(decl.nameRange, "'" + decl.name +
                                         "' has no parameter named '" + name +
                                         "'");
    }
  std::vector<std::string> names;
  for (const ast::Param &p : decl.params) {
    if (std::find(names.begin(), names.end(), p.name) != names.end())
      return error(p.nameRange, "parameter '" + p.name + "' is declared twice");
    names.push_back(p.name);
  }
  return true;
}

bool Elaborator::elaborateEntry(
    const LoadedModule &module, const ast::FnDecl &decl,
    const std::map<std::string, ExampleArg> *examples, Function &out) {
  fn = Function();
  callRuns.clear();
  fn.name = decl.name;
  Frame frame;
  frame.module = &module;
  frame.decl = &decl;
  frame.scopes.emplace_back();
  EntryBinder binder{*this, frame, examples};
  if (!checkEntryParams(decl, examples) || !checkTypeParams(decl))
    return false;
  callStack.push_back(&decl);
  for (const ast::Param &p : decl.params) {
    const ExampleArg *ex = nullptr;
    if (examples) {
      auto it = examples->find(p.name);
      if (it != examples->end())
        ex = &it->second;
      else if (!p.defaultValue)
        return error(p.nameRange, "no value for parameter '" + p.name + "'",
                     "pass --arg " + p.name + "=...");
    }
    bool bound = p.type.base == "int" ? binder.bindIntParam(p, ex)
                                      : binder.bindTensorParam(p, ex);
    if (!bound)
      return false;
  }
  bool returned = false;
  SemValue result;
  std::optional<NameUses> uses;
  if (decl.body.stmts.size() >= NameUses::kMinStatements) {
    frame.uses = &uses.emplace(decl.body);
    frame.usesBody = &decl.body;
    // Room for two ops per statement: growing by doubling moved a 120,000-
    // line function's ops (20 MB) into a new buffer while the old one was
    // still held. Capacity not written is not resident.
    fn.ops.reserve(fn.ops.size() + 2 * decl.body.stmts.size());
    fn.values.reserve(fn.values.size() + 2 * decl.body.stmts.size());
  }
  if (!execBlock(decl.body, frame, returned, result))
    return false;
  return finishEntry(decl, frame, result, out);
}

bool Elaborator::finishEntry(const ast::FnDecl &decl, Frame &frame,
                             SemValue &result, Function &out) {
  if (probe) {
    ProbeResult described = describe(result);
    fn.symbols = env.symbols();
    probe(env, described);
    for (const SemValue &v : result.kind == SemValue::Kind::Tuple
                                 ? result.elems
                                 : std::vector<SemValue>{result})
      if (v.kind == SemValue::Kind::Tensor)
        fn.results.push_back(v.tensor);
    out = std::move(fn);
    return true;
  }
  if (!matchResults(*this, decl, frame, result, decl.nameRange))
    return false;
  std::vector<SemValue> parts = result.kind == SemValue::Kind::Tuple
                                    ? result.elems
                                    : std::vector<SemValue>{result};
  if (result.kind != SemValue::Kind::None) {
    for (SemValue &v : parts) {
      if (v.kind == SemValue::Kind::Int || v.kind == SemValue::Kind::Float) {
        ValueId id;
        if (!toTensor(v,
                      v.kind == SemValue::Kind::Int ? DType::I64 : DType::F32,
                      v.range, id))
          return false;
        v = SemValue::ofTensor(id, v.range);
      }
      if (v.kind != SemValue::Kind::Tensor)
        return error(v.range, "a function may return tensors and ints, not " +
                                  std::string(kindName(v.kind)));
      fn.results.push_back(v.tensor);
    }
  }
  // The bindings and the producer index are done with: free them before
  // the passes below copy the ops (the peak of a large function).
  decltype(frame.scopes)().swap(frame.scopes);
  decltype(producerOp)().swap(producerOp);
#ifdef __GLIBC__
  if (fn.ops.size() >= 100000) // large: return the freed pages to the
    malloc_trim(0);            // system (the passes allocate afresh)
#endif
  runIrPipeline();
  warnPinnedDynamicDims();
  // Result types as the facts simplify them (`check(pos < 5)` makes
  // min(5, pos + 1) just pos + 1): what guards reports and callers read.
  // Not a dim with an unbacked size, which its producing op binds at run
  // time: a declared `-> i32[0]` adds the fact `0 == u0` as an assertion
  // after that op, and rewriting the op's own type to i32[0] made the CPU
  // bind nothing and return an empty result (fuzz finding).
  auto unbacked = [&](SymExpr d) {
    for (const std::string &name : d.symbols())
      if (const SymbolInfo *s = env.lookup(name);
          s && s->kind == DimKind::Unbacked && !s->loopVariable)
        return true;
    return false;
  };
  for (ValueId r : fn.results)
    for (SymExpr &d : fn.values[r].type.dims)
      if (!unbacked(d))
        d = env.simplifyWithFacts(d);
  fn.symbols = env.symbols();
  for (Function &callee : fn.callees)
    callee.symbols = fn.symbols;
  for (const ShapeFact &g : env.guards())
    fn.guards.push_back({g.cond, locOf(g.origin), g.op, g.reason});
  out = std::move(fn);
  return true;
}

void Elaborator::runIrPipeline() {
  // Outlining (the pipeline's first pass) reads the recorded runs: they are
  // the elaborator's op indices, which the later passes change.
  PassContext ctx;
  ctx.env = &env;
  ctx.calls = &callRuns;
  ctx.options = pipeline;
  if (pipeline.afterPass)
    ctx.options.afterPass = [&](std::string_view pass, const Function &f) {
      Function shown = f;
      shown.symbols = env.symbols();
      for (Function &callee : shown.callees)
        callee.symbols = shown.symbols;
      for (const ShapeFact &g : env.guards())
        shown.guards.push_back({g.cond, locOf(g.origin), g.op, g.reason});
      pipeline.afterPass(pass, shown);
    };
  runPipeline(fn, ctx);
}

void Elaborator::warnPinnedDynamicDims() {
  for (const ShapeFact &g : env.guards()) {
    if (g.cond.kind() != SymCond::Kind::Eq)
      continue;
    SymExpr sym = g.cond.lhs().isSymbol() ? g.cond.lhs() : g.cond.rhs();
    SymExpr value = g.cond.lhs().isSymbol() ? g.cond.rhs() : g.cond.lhs();
    if (!sym.isSymbol() || !value.isConst())
      continue;
    const SymbolInfo *info = env.lookup(sym.symbolName());
    if (!info || info->kind != DimKind::Dynamic)
      continue;
    Diagnostic d;
    d.severity = Severity::Warning;
    d.range = g.origin;
    d.message = "'" + info->name +
                "' is declared dynamic but this variant only serves " +
                g.cond.str() + " (" + g.reason + ")";
    if (info->origin.isValid())
      d.notes.push_back(
          {info->origin, "'" + info->name + "' is used as a dynamic dim here"});
    d.fix = "make the operation independent of '" + info->name +
            "', or declare it static if only one value is ever used";
    diags.report(std::move(d));
  }
}

ProbeResult Elaborator::describe(const SemValue &v) {
  ProbeResult r;
  switch (v.kind) {
  case SemValue::Kind::Tensor:
    r.kind = ProbeResult::Kind::Tensor;
    r.type = fn.type(v.tensor);
    break;
  case SemValue::Kind::Int:
    r.kind = ProbeResult::Kind::Int;
    r.intValue = env.simplify(v.i);
    break;
  case SemValue::Kind::Cond:
    r.kind = ProbeResult::Kind::Cond;
    r.cond = v.c;
    break;
  case SemValue::Kind::Tuple:
    r.kind = ProbeResult::Kind::Tuple;
    for (const SemValue &e : v.elems)
      r.elements.push_back(describe(e));
    break;
  case SemValue::Kind::Float:
    r.description = "float " + std::to_string(v.f);
    break;
  default:
    r.description = kindName(v.kind);
  }
  return r;
}

/// Each name of \p donated is a tensor parameter of \p decl; otherwise an
/// error at the function's name.
static bool checkDonated(const ast::FnDecl &decl,
                         const std::set<std::string> &donated,
                         DiagnosticEngine &diags) {
  for (const std::string &name : donated) {
    auto p = std::find_if(decl.params.begin(), decl.params.end(),
                          [&](const ast::Param &q) { return q.name == name; });
    if (p != decl.params.end() && p->type.base != "int")
      continue;
    Diagnostic d;
    d.range = p != decl.params.end() ? p->nameRange : decl.nameRange;
    d.message =
        p != decl.params.end()
            ? "parameter '" + name + "' of '" + decl.name +
                  "' is an int: only tensor buffers can be donated"
            : "'" + decl.name + "' has no parameter '" + name + "' to donate";
    diags.report(std::move(d));
    return false;
  }
  return true;
}

bool elaborateFunction(const LoadedModule &module, const std::string &fnName,
                       const ElaborateOptions &options, DiagnosticEngine &diags,
                       Function &out) {
  auto it = module.fns.find(fnName);
  if (it == module.fns.end()) {
    std::string names;
    for (auto &[n, f] : module.fns)
      names += (names.empty() ? "" : ", ") + n;
    Diagnostic d;
    d.message = "no function named '" + fnName + "' in " + module.path;
    if (!names.empty())
      d.notes.push_back({SourceRange(), "functions in this file: " + names});
    diags.report(std::move(d));
    return false;
  }
  if (!checkDonated(*it->second, options.donated, diags))
    return false;
  bool ok = false;
  runOnDeepStack([&] {
    Elaborator el(diags, !options.examples.has_value());
    el.probe = options.probe;
    el.forceDynamic = options.forceDynamic;
    el.allDynamic = options.allDynamic;
    el.donated = options.donated;
    el.pipeline = options.pipeline;
    ok =
        el.elaborateEntry(module, *it->second,
                          options.examples ? &*options.examples : nullptr, out);
  });
  return ok;
}

/// checkModule's work, on the deep stack.
static bool checkFunctions(const LoadedModule &module,
                           DiagnosticEngine &diags) {
  bool ok = true;
  for (const ast::FnDecl &decl : module.ast->fns) {
    // Explore each combination of undecidable `if`s (bounded).
    std::vector<bool> path;
    for (int run = 0; run < 32; ++run) {
      Elaborator el(diags, true);
      el.checkingAllSizes = true;
      el.path = path;
      Function f;
      unsigned errorsBefore = diags.errorCount();
      if (!el.elaborateEntry(module, decl, nullptr, f)) {
        // A size that overflows for some values only was a warning.
        ok &= el.stoppedUncheckable && diags.errorCount() == errorsBefore;
        break;
      }
      path = el.path;
      path.resize(el.pathIndex);
      while (!path.empty() && !path.back())
        path.pop_back();
      if (path.empty())
        break;
      path.back() = false;
    }
  }
  return ok;
}

bool checkModule(const LoadedModule &module, DiagnosticEngine &diags) {
  bool ok = true;
  runOnDeepStack([&] { ok = checkFunctions(module, diags); });
  return ok;
}

} // namespace tsl
