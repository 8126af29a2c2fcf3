#include "ir/Interpreter.h"
#include "support/Error.h"
#include "support/SizeLimits.h"

namespace tsl {

namespace {

/// "i64[4611686018427387904]": a result's element type and concrete shape.
std::string shapeText(DType t, const std::vector<int64_t> &shape) {
  std::string out = std::string(dtypeName(t)) + "[";
  for (size_t i = 0; i < shape.size(); ++i)
    out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + "]";
}

} // namespace

/// " (with N = 3)": the values of the symbols of \p e that are bound.
/// True when a symbol of \p e has no value yet.
static bool hasUnbound(SymExpr e,
                       const std::map<std::string, int64_t> &values) {
  for (const std::string &s : e.symbols())
    if (!values.count(s))
      return true;
  return false;
}

static std::string valuesNote(SymExpr e,
                              const std::map<std::string, int64_t> &values) {
  std::string with;
  for (const std::string &s : e.symbols()) {
    auto it = values.find(s);
    if (it != values.end())
      with += (with.empty() ? " (with " : ", ") + s + " = " +
              std::to_string(it->second);
  }
  return with.empty() ? with : with + ")";
}

bool KernelContext::eval(SymExpr e, int64_t &out) {
  auto v = e.evaluate(values);
  if (!v) {
    for (const std::string &s : e.symbols())
      if (!values.count(s))
        return fail("cannot evaluate size " + e.str() + ": " + s +
                    " has no value");
    std::string text = e.str();
    bool divides = text.find('/') != std::string::npos ||
                   text.find('%') != std::string::npos;
    return fail("size " + text +
                (divides ? " divides by zero or does not fit in 64 bits"
                         : " does not fit in 64 bits") +
                valuesNote(e, values));
  }
  out = *v;
  return true;
}

bool KernelContext::allocate(size_t i, std::vector<int64_t> shape) {
  for (int64_t d : shape)
    if (d < 0)
      return fail("negative size in result shape");
  std::optional<int64_t> bytes =
      tensorBytes(shape.data(), shape.size(), dtypeSize(outTypes[i]));
  if (!bytes)
    return fail("the size of its result " + shapeText(outTypes[i], shape) +
                " does not fit in 64 bits");
  if (*bytes > maxTensorBytes())
    return fail("its result " + shapeText(outTypes[i], shape) + " is too " +
                "large: " + tensorTooLargeMessage(*bytes));
  Tensor t = Tensor::zeros(outTypes[i], shape);
  if (!t.valid())
    return fail("out of memory for its result " +
                shapeText(outTypes[i], shape));
  out[i] = t;
  return true;
}

namespace {

/// Solves `expr == value` for the single unbound symbol in a linear expr.
bool solveLinear(SymExpr expr, int64_t value,
                 std::map<std::string, int64_t> &values, std::string &why) {
  std::vector<std::string> unbound;
  for (const std::string &s : expr.symbols())
    if (!values.count(s))
      unbound.push_back(s);
  if (unbound.size() != 1) {
    why = "cannot solve " + expr.str() + " for its dims";
    return false;
  }
  std::map<std::string, int64_t> probe = values;
  probe[unbound[0]] = 0;
  auto c0 = expr.evaluate(probe);
  probe[unbound[0]] = 1;
  auto c1 = expr.evaluate(probe);
  probe[unbound[0]] = 2;
  auto c2 = expr.evaluate(probe);
  // pattern(2) may leave int64 for a large slope: the final check of every
  // dim (bindArguments) then reports the overflow.
  int64_t d21 = 0, d10 = 0;
  if (!c0 || !c1 || __builtin_sub_overflow(*c1, *c0, &d10) || d10 == 0 ||
      (c2 && (__builtin_sub_overflow(*c2, *c1, &d21) || d21 != d10))) {
    why = "not supported: size expression " + expr.str() +
          " is not linear in " + unbound[0];
    return false;
  }
  int64_t slope = d10;
  int64_t diff = 0;
  if (__builtin_sub_overflow(value, *c0, &diff) || diff % slope != 0 ||
      diff / slope < 0) {
    why = "size " + std::to_string(value) + " is not of the form " + expr.str();
    return false;
  }
  values[unbound[0]] = diff / slope;
  return true;
}

} // namespace

bool bindArguments(const Function &fn, const std::vector<ArgValue> &args,
                   std::map<std::string, int64_t> &values, RunError &error) {
  if (args.size() != fn.params.size()) {
    error.message = "'" + fn.name + "' takes " +
                    std::to_string(fn.params.size()) + " arguments, got " +
                    std::to_string(args.size());
    return false;
  }
  // Pass 1: bind plain symbols and int parameters; pass 2: derived dims.
  for (int pass = 0; pass < 2; ++pass) {
    for (size_t i = 0; i < args.size(); ++i) {
      const Param &p = fn.params[i];
      const ArgValue &a = args[i];
      if (p.isInt != a.isInt) {
        error.message = "argument '" + p.name + "' must be " +
                        (p.isInt ? "an int" : "a tensor");
        return false;
      }
      if (p.isInt) {
        if (pass == 0 && p.intExpr.isSymbol() &&
            !values.count(p.intExpr.symbolName()))
          values[p.intExpr.symbolName()] = a.intValue;
        continue;
      }
      const TensorType &t = fn.type(p.value);
      if (!a.tensor.valid()) {
        error.message = "argument '" + p.name + "' has no data";
        return false;
      }
      if (a.tensor.dtype() != t.dtype || a.tensor.rank() != t.rank()) {
        error.message = "argument '" + p.name + "' must be " + t.str() +
                        ", got " + a.tensor.typeString();
        return false;
      }
      for (size_t d = 0; d < t.rank(); ++d) {
        SymExpr e = t.dims[d];
        if (e.isSymbol() && !values.count(e.symbolName()))
          values[e.symbolName()] = a.tensor.shape()[d];
        else if (pass == 1 && !e.evaluate(values) && hasUnbound(e, values)) {
          std::string why;
          if (!solveLinear(e, a.tensor.shape()[d], values, why)) {
            error.message = "argument '" + p.name + "' dim " +
                            std::to_string(d) + ": " + why;
            return false;
          }
        }
      }
    }
  }
  // Every dim must now match.
  for (size_t i = 0; i < args.size(); ++i) {
    const Param &p = fn.params[i];
    if (p.isInt) {
      auto v = p.intExpr.evaluate(values);
      if (!v || *v != args[i].intValue) {
        error.message = "argument '" + p.name + "' must be " + p.intExpr.str() +
                        ", got " + std::to_string(args[i].intValue);
        return false;
      }
      continue;
    }
    const TensorType &t = fn.type(p.value);
    for (size_t d = 0; d < t.rank(); ++d) {
      auto v = t.dims[d].evaluate(values);
      if (!v && !hasUnbound(t.dims[d], values)) {
        // Every symbol is bound, yet no value: a step left int64.
        error.message = "argument '" + p.name + "' dim " + std::to_string(d) +
                        " (" + t.dims[d].str() + ") does not fit in 64 bits" +
                        valuesNote(t.dims[d], values);
        return false;
      }
      if (!v || *v != args[i].tensor.shape()[d]) {
        std::string expected = t.dims[d].str();
        if (v && !t.dims[d].isConst())
          expected += " = " + std::to_string(*v);
        error.message = "argument '" + p.name + "' dim " + std::to_string(d) +
                        " must be " + expected + ", got " +
                        std::to_string(args[i].tensor.shape()[d]);
        return false;
      }
    }
  }
  for (const SymbolInfo &s : fn.symbols) {
    auto it = values.find(s.name);
    if (it == values.end())
      continue;
    int64_t v = it->second;
    bool below = s.lo != INT64_MIN && v < s.lo;
    if (below || (s.hi && v > *s.hi)) {
      error.message = std::string(s.isInt ? "int " : "dim ") + s.name + " = " +
                      std::to_string(v) + " is outside its declared range " +
                      (s.lo == INT64_MIN ? "" : std::to_string(s.lo)) + ".." +
                      (s.hi ? std::to_string(*s.hi) : "");
      error.loc = Location{};
      return false;
    }
    if (s.multipleOf > 1 && v % s.multipleOf != 0) {
      error.message = "dim " + s.name + " = " + std::to_string(v) +
                      " is not a multiple of " + std::to_string(s.multipleOf);
      return false;
    }
  }
  auto lookup = [&](const std::string &n) -> std::optional<int64_t> {
    auto it = values.find(n);
    if (it == values.end())
      return std::nullopt;
    return it->second;
  };
  for (const Check &g : fn.guards) {
    auto ok = g.cond.evaluate(lookup);
    if (!ok || !*ok) {
      error.message = "these sizes fail the guard '" + g.cond.str() +
                      "' of this variant of '" + fn.name + "'";
      error.loc = g.loc;
      error.notes.push_back("the guard comes from " + g.reason);
      return false;
    }
  }
  return true;
}

namespace {
/// Runs the loops of a function: at a loop marker it moves the carried
/// tensors and the program counter (Ops.def: loop, end_loop).
class LoopRunner {
public:
  explicit LoopRunner(const Function &fn) : fn_(fn) {
    std::vector<size_t> open;
    partner_.assign(fn.ops.size(), 0);
    for (size_t i = 0; i < fn.ops.size(); ++i) {
      if (fn.ops[i].code == OpCode::Loop)
        open.push_back(i);
      if (fn.ops[i].code == OpCode::EndLoop && !open.empty()) {
        partner_[i] = open.back();
        partner_[open.back()] = i;
        open.pop_back();
      }
    }
  }

  /// The marker at \p pc: enters the loop (or skips it when it runs no
  /// iteration), or ends an iteration and jumps back to its loop (pc is
  /// then the loop op, so the caller's increment enters the body).
  bool step(size_t &pc, std::vector<Tensor> &env,
            std::map<std::string, int64_t> &values, RunError &error) {
    const Operation &op = fn_.ops[pc];
    if (op.code == OpCode::Loop) {
      int64_t lo, hi;
      if (!evalBound(op, "lo", values, lo, error) ||
          !evalBound(op, "hi", values, hi, error))
        return false;
      std::vector<Tensor> init;
      for (ValueId v : op.operands)
        init.push_back(env[v]);
      if (lo >= hi) { // no iteration: the values after are the initial ones
        pc = partner_[pc];
        assign(fn_.ops[pc].results, init, env);
        return true;
      }
      active_.push_back({pc, lo, hi, values});
      values[op.exprAttr("sym").symbolName()] = lo;
      assign(op.results, init, env);
      return true;
    }
    Active &a = active_.back();
    const Operation &loop = fn_.ops[a.loop];
    std::vector<Tensor> next;
    for (ValueId v : op.operands)
      next.push_back(env[v]);
    // Sizes bound inside the body (unbacked ones) are bound afresh by the
    // next iteration.
    values = a.outer;
    if (++a.index < a.hi) {
      values[loop.exprAttr("sym").symbolName()] = a.index;
      assign(loop.results, next, env);
      pc = a.loop;
      return true;
    }
    assign(op.results, next, env);
    active_.pop_back();
    return true;
  }

private:
  struct Active {
    size_t loop;
    int64_t index, hi;
    std::map<std::string, int64_t> outer; ///< the symbols before the loop
  };
  static void assign(const std::vector<ValueId> &ids,
                     const std::vector<Tensor> &tensors,
                     std::vector<Tensor> &env) {
    for (size_t i = 0; i < ids.size() && i < tensors.size(); ++i)
      env[ids[i]] = tensors[i];
  }
  static bool evalBound(const Operation &op, const char *name,
                        const std::map<std::string, int64_t> &values,
                        int64_t &out, RunError &error) {
    std::optional<int64_t> v = op.exprAttr(name).evaluate(values);
    if (v) {
      out = *v;
      return true;
    }
    error.message = std::string("loop: its bound ") + op.exprAttr(name).str() +
                    " does not fit in 64 bits";
    error.loc = op.loc;
    return false;
  }
  const Function &fn_;
  std::vector<size_t> partner_;
  std::vector<Active> active_;
};
} // namespace

namespace {
/// Runs the ops of \p fn on \p env (its parameters set) under the bound
/// symbols \p values, which the ops that bind sizes extend.
bool runOps(const Function &fn, std::vector<Tensor> &env,
            std::map<std::string, int64_t> &values, RunError &error) {
  auto lookup = [&](const std::string &n) -> std::optional<int64_t> {
    auto it = values.find(n);
    if (it == values.end())
      return std::nullopt;
    return it->second;
  };
  LoopRunner loops(fn);
  for (size_t pc = 0; pc < fn.ops.size(); ++pc) {
    const Operation &op = fn.ops[pc];
    if (isLoopMarker(op.code)) {
      if (!loops.step(pc, env, values, error))
        return false;
      continue;
    }
    if (op.code == OpCode::Call) { // the callee reads the caller's symbols
      const Function &callee = fn.callees[op.intAttr("callee")];
      std::vector<Tensor> inner(callee.values.size());
      for (size_t i = 0; i < op.operands.size(); ++i)
        inner[callee.params[i].value] = env[op.operands[i]];
      if (!runOps(callee, inner, values, error))
        return false;
      for (size_t i = 0; i < op.results.size(); ++i)
        env[op.results[i]] = inner[callee.results[i]];
      continue;
    }
    if (op.code == OpCode::Assert) {
      auto ok = op.condAttr("cond").evaluate(lookup);
      if (!ok || !*ok) {
        std::string msg = op.strAttr("message");
        error.message = "runtime check failed: " + op.condAttr("cond").str();
        if (!msg.empty())
          error.message += ": " + msg;
        if (!ok) // every symbol is bound here: a size left int64
          error.message += ": a size in it does not fit in 64 bits";
        error.loc = op.loc;
        std::vector<std::string> syms = op.condAttr("cond").symbols();
        std::string vals;
        for (const std::string &s : syms)
          if (values.count(s))
            vals += (vals.empty() ? "" : ", ") + s + " = " +
                    std::to_string(values[s]);
        if (!vals.empty())
          error.notes.push_back("with " + vals);
        return false;
      }
      continue;
    }
    KernelContext ctx{op, {}, {}, {}, {}, values, {}};
    for (ValueId v : op.operands)
      ctx.in.push_back(&env[v]);
    for (ValueId r : op.results) {
      std::vector<int64_t> shape;
      for (const SymExpr &d : fn.type(r).dims) {
        auto v = d.evaluate(values);
        shape.push_back(v ? *v : -1);
      }
      ctx.outShapes.push_back(shape);
      ctx.outTypes.push_back(fn.type(r).dtype);
    }
    ctx.out.resize(op.results.size());
    bool ran = runKernel(ctx);
    // A kernel that read an attribute the op lacks computed from a default.
    if (std::optional<Error> internal = takeInternalError()) {
      error.message =
          std::string(opInfo(op.code).name) + ": " + internal->message;
      error.loc = op.loc;
      return false;
    }
    if (!ran) {
      error.message = std::string(opInfo(op.code).name) + ": " + ctx.error;
      error.loc = op.loc;
      return false;
    }
    for (size_t i = 0; i < op.results.size(); ++i) {
      const Tensor &t = ctx.out[i];
      const TensorType &type = fn.type(op.results[i]);
      if (!t.valid() || t.rank() != type.rank()) {
        error.message = std::string("internal error: ") + opInfo(op.code).name +
                        " produced no result of type " + type.str();
        error.loc = op.loc;
        return false;
      }
      for (size_t d = 0; d < type.rank(); ++d) {
        SymExpr e = type.dims[d];
        if (e.isSymbol() && !values.count(e.symbolName()))
          values[e.symbolName()] = t.shape()[d]; // binds an unbacked size
        auto v = e.evaluate(values);
        if (!v || *v != t.shape()[d]) {
          error.message = std::string("internal error: ") +
                          opInfo(op.code).name + " produced " + t.typeString() +
                          ", its type says " + type.str();
          error.loc = op.loc;
          return false;
        }
      }
      env[op.results[i]] = t;
    }
    if (op.code == OpCode::Item) {
      SymExpr sym = op.exprAttr("sym");
      if (sym.isSymbol())
        values[sym.symbolName()] = ctx.in[0]->getI(0);
      // Check the declared range of the new symbol.
      if (const SymbolInfo *s = fn.symbol(sym.symbolName())) {
        int64_t v = values[sym.symbolName()];
        if ((s->lo != INT64_MIN && v < s->lo) || (s->hi && v > *s->hi)) {
          error.message = "item() gave " + std::to_string(v) +
                          ", outside the range of " + s->name;
          error.loc = op.loc;
          return false;
        }
      }
    }
  }
  return true;
}
} // namespace

bool interpret(const Function &fn, const std::vector<ArgValue> &args,
               std::vector<Tensor> &outputs, RunError &error) {
  std::map<std::string, int64_t> values;
  if (!bindArguments(fn, args, values, error))
    return false;
  std::vector<Tensor> env(fn.values.size());
  for (size_t i = 0; i < args.size(); ++i)
    if (!fn.params[i].isInt)
      env[fn.params[i].value] = args[i].tensor;
  if (!runOps(fn, env, values, error))
    return false;
  outputs.clear();
  for (ValueId r : fn.results)
    outputs.push_back(env[r]);
  return true;
}

} // namespace tsl
