#include "ir/Verifier.h"

#include "ir/ShapeRules.h"
#include "support/Error.h"

#include <algorithm>

namespace tsl {

static bool attrHasKind(const Attr &a, const std::string &kind) {
  if (kind == "int")
    return std::holds_alternative<int64_t>(a);
  if (kind == "float")
    return std::holds_alternative<double>(a);
  if (kind == "num")
    return std::holds_alternative<Number>(a);
  if (kind == "bool")
    return std::holds_alternative<bool>(a);
  if (kind == "dtype")
    return std::holds_alternative<DType>(a);
  if (kind == "expr")
    return std::holds_alternative<SymExpr>(a);
  if (kind == "exprs")
    return std::holds_alternative<std::vector<SymExpr>>(a);
  if (kind == "ints")
    return std::holds_alternative<std::vector<int64_t>>(a);
  if (kind == "cond")
    return std::holds_alternative<SymCond>(a);
  if (kind == "str")
    return std::holds_alternative<std::string>(a);
  return false;
}

/// Equal types, or types whose dims are provably equal under the facts (the
/// elaborator rewrites dims with replacements such as S == 4 as it goes).
static bool sameTypeUnderFacts(const ShapeEnv &env, const TensorType &a,
                               const TensorType &b) {
  if (a == b)
    return true;
  if (a.dtype != b.dtype || a.rank() != b.rank())
    return false;
  for (size_t i = 0; i < a.rank(); ++i)
    if (a.dims[i] != b.dims[i] &&
        env.prove(SymCond::eq(a.dims[i], b.dims[i])) != Truth::True)
      return false;
  return true;
}

namespace {
/// The loops open at an op while the verifier walks a function.
struct OpenLoops {
  /// Index of each open loop op, innermost last.
  std::vector<size_t> stack;
  /// The facts before each open loop's range was added.
  std::vector<ShapeEnv::FactMark> marks;
  /// The loop (op index) whose body defines each value; -1 outside loops.
  std::vector<long> scopeOf;
  bool isOpen(long loop) const {
    return loop < 0 || std::find(stack.begin(), stack.end(),
                                 static_cast<size_t>(loop)) != stack.end();
  }
};

/// Checks a loop marker at op \p index: a loop's results have its
/// operands' types; an end_loop ends an open loop, and its operands (under
/// the facts of the body) and results have the loop's types. Keeps the
/// facts of the loop's range (its symbol in [lo, hi)) while the body is
/// open. Empty on success, else the problem.
std::string checkLoopMarker(const Function &fn, size_t index, ShapeEnv &env,
                            OpenLoops &open) {
  const Operation &op = fn.ops[index];
  if (op.code == OpCode::Loop) {
    SymExpr sym = op.exprAttr("sym");
    if (!sym.isSymbol() || !fn.symbol(sym.symbolName()))
      return "has a loop symbol that is no symbol of the function";
    for (size_t i = 0; i < op.operands.size(); ++i)
      if (fn.type(op.results[i]) != fn.type(op.operands[i]))
        return "result " + std::to_string(i) + " has type " +
               fn.type(op.results[i]).str() + " but carries " +
               fn.type(op.operands[i]).str();
    open.marks.push_back(env.markFacts());
    open.stack.push_back(index);
    env.addFact(SymCond::ge(sym, op.exprAttr("lo")));
    env.addFact(SymCond::lt(sym, op.exprAttr("hi")));
    return {};
  }
  if (open.stack.empty())
    return "ends no open loop";
  const Operation &loop = fn.ops[open.stack.back()];
  if (loop.operands.size() != op.operands.size())
    return "carries " + std::to_string(op.operands.size()) +
           " values but its loop carries " +
           std::to_string(loop.operands.size());
  for (size_t i = 0; i < op.operands.size(); ++i) {
    const TensorType &carried = fn.type(loop.operands[i]);
    if (!sameTypeUnderFacts(env, carried, fn.type(op.operands[i])))
      return "carries " + fn.type(op.operands[i]).str() +
             " where its loop carries " + carried.str();
    if (fn.type(op.results[i]) != carried)
      return "result " + std::to_string(i) + " has type " +
             fn.type(op.results[i]).str() + " but its loop carries " +
             carried.str();
  }
  env.forgetFactsSince(open.marks.back());
  open.marks.pop_back();
  open.stack.pop_back();
  return {};
}
/// Checks a call op: it names a callee of \p fn and passes it operands of
/// its parameters' types; its results have the callee's result types.
/// Empty on success, else the problem.
std::string checkCall(const Function &fn, const Operation &op, ShapeEnv &env) {
  int64_t index = op.intAttr("callee");
  if (index < 0 || static_cast<size_t>(index) >= fn.callees.size())
    return "calls callee " + std::to_string(index) + " of " +
           std::to_string(fn.callees.size());
  const Function &callee = fn.callees[static_cast<size_t>(index)];
  if (op.operands.size() != callee.params.size())
    return "passes " + std::to_string(op.operands.size()) +
           " operands to a callee of " + std::to_string(callee.params.size()) +
           " parameters";
  for (size_t i = 0; i < op.operands.size(); ++i)
    if (callee.params[i].isInt ||
        !sameTypeUnderFacts(env, callee.type(callee.params[i].value),
                            fn.type(op.operands[i])))
      return "passes " + fn.type(op.operands[i]).str() + " as parameter " +
             std::to_string(i) + " of its callee";
  if (op.results.size() != callee.results.size())
    return "has " + std::to_string(op.results.size()) +
           " results but its callee returns " +
           std::to_string(callee.results.size());
  for (size_t i = 0; i < op.results.size(); ++i)
    // Under the facts: the caller's result types are simplified with facts
    // that later checks add (ElabEntry.cpp), its callee's are not.
    if (!sameTypeUnderFacts(env, callee.type(callee.results[i]),
                            fn.type(op.results[i])))
      return "result " + std::to_string(i) + " has type " +
             fn.type(op.results[i]).str() + " but its callee returns " +
             callee.type(callee.results[i]).str();
  return {};
}

/// What a callee must be besides valid ops: no callees or guards of its
/// own, tensor parameters only, and results that are buffers the caller
/// owns and frees (made by its ops, not by a layout op, which may be a view
/// of a parameter, and none twice). Empty when it is, else the problem.
std::string checkCalleeShape(const Function &callee) {
  if (!callee.callees.empty())
    return "has callees of its own";
  if (!callee.guards.empty())
    return "has guards";
  for (const Param &p : callee.params)
    if (p.isInt)
      return "has an int parameter";
  std::vector<const Operation *> maker(callee.values.size(), nullptr);
  for (const Operation &op : callee.ops)
    for (ValueId r : op.results)
      if (r < maker.size())
        maker[r] = &op;
  for (size_t i = 0; i < callee.results.size(); ++i) {
    ValueId r = callee.results[i];
    if (r >= maker.size() || !maker[r] || isLayout(maker[r]->code) ||
        isLoopMarker(maker[r]->code) ||
        std::count(callee.results.begin(), callee.results.begin() + i, r))
      return "returns a value that none of its ops makes, a layout op's, or "
             "one value twice";
  }
  return {};
}
} // namespace

/// Checks \p fn's ops and results under the facts in \p env (its symbols,
/// its guards and, for a callee, the facts where it is first called); the
/// facts its assertions add stay in \p env.
static bool verifyOps(const Function &fn, ShapeEnv &env, std::string &error);

/// The ops of the callee \p call names, checked at its first call under the
/// facts there (its ops were checked under them when they were inlined);
/// empty when valid or checked before, else the problem.
static std::string checkCalleeOnce(const Function &fn, const Operation &call,
                                   ShapeEnv &env,
                                   std::vector<bool> &calleeChecked) {
  auto k = static_cast<size_t>(call.intAttr("callee"));
  if (calleeChecked[k])
    return {};
  calleeChecked[k] = true;
  ShapeEnv::FactMark mark = env.markFacts();
  std::string problem;
  if (!verifyOps(fn.callees[k], env, problem))
    problem =
        "calls '" + fn.callees[k].name + "', which is not valid: " + problem;
  env.forgetFactsSince(mark);
  return problem;
}

Expected<void> verifyFunction(const Function &fn) {
  ShapeEnv env;
  for (const SymbolInfo &s : fn.symbols)
    env.addSymbol(s);
  for (const Check &g : fn.guards)
    env.addFact(g.cond);
  for (const Function &callee : fn.callees)
    if (std::string problem = checkCalleeShape(callee); !problem.empty())
      return makeError(ErrorKind::Internal,
                       "callee '" + callee.name + "' " + problem);
  if (std::string error; !verifyOps(fn, env, error))
    return makeError(ErrorKind::Internal, std::move(error));
  return {};
}

static bool verifyOps(const Function &fn, ShapeEnv &env, std::string &error) {
  std::vector<bool> defined(fn.values.size(), false);
  std::vector<bool> calleeChecked(fn.callees.size(), false);
  OpenLoops open;
  open.scopeOf.assign(fn.values.size(), -1);
  for (const Param &p : fn.params) {
    if (p.isInt)
      continue;
    if (p.value >= fn.values.size())
      return error = "parameter " + p.name + " refers to no value", false;
    defined[p.value] = true;
  }
  for (size_t index = 0; index < fn.ops.size(); ++index) {
    const Operation &op = fn.ops[index];
    const OpInfo &info = opInfo(op.code);
    std::string where =
        "op " + std::to_string(index) + " ('" + info.name + "')";
    int n = static_cast<int>(op.operands.size());
    if (n < info.minOperands || (info.maxOperands >= 0 && n > info.maxOperands))
      return error = where + " has " + std::to_string(n) + " operands", false;
    int numResults = info.numResults < 0 ? n : info.numResults;
    if (info.numResults != -2 && // a call's: checkCall
        static_cast<int>(op.results.size()) != numResults)
      return error = where + " has " + std::to_string(op.results.size()) +
                     " results",
             false;
    for (ValueId v : op.operands) {
      if (v >= fn.values.size() || !defined[v])
        return error = where + " uses a value before its definition", false;
      if (!open.isOpen(open.scopeOf[v]))
        return error = where + " uses a value of a loop body it is not in",
               false;
    }
    for (const AttrSpec &spec : info.attrs) {
      auto it = op.attrs.find(spec.name);
      if (it == op.attrs.end()) {
        if (!spec.optional)
          return error = where + " lacks attribute '" + spec.name + "'", false;
        continue;
      }
      if (!attrHasKind(it->second, spec.kind))
        return error = where + " attribute '" + spec.name + "' is not a " +
                       spec.kind,
               false;
    }
    for (const auto &[name, value] : op.attrs) {
      bool known = false;
      for (const AttrSpec &spec : info.attrs)
        known |= spec.name == name;
      if (!known)
        return error = where + " has an unknown attribute '" + name + "'",
               false;
    }
    if (op.code == OpCode::Assert) {
      env.addFact(op.condAttr("cond"));
      continue;
    }
    if (isLoopMarker(op.code) || op.code == OpCode::Call) {
      std::string problem = op.code == OpCode::Call
                                ? checkCall(fn, op, env)
                                : checkLoopMarker(fn, index, env, open);
      if (problem.empty() && op.code == OpCode::Call)
        problem = checkCalleeOnce(fn, op, env, calleeChecked);
      if (!problem.empty())
        return error = where + " " + problem, false;
      for (ValueId r : op.results) {
        if (r >= fn.values.size() || defined[r])
          return error = where + " redefines a value", false;
        defined[r] = true;
        if (!open.stack.empty())
          open.scopeOf[r] = static_cast<long>(open.stack.back());
      }
      continue;
    }
    std::vector<TensorType> operandTypes;
    for (ValueId v : op.operands)
      operandTypes.push_back(fn.type(v));
    ShapeContext ctx(env, op, operandTypes, SourceRange());
    std::vector<SymExpr> replay;
    for (ValueId r : op.results)
      if (!fn.type(r).dims.empty())
        replay.push_back(fn.type(r).dims[0]);
    ctx.replayFresh = &replay;
    std::vector<TensorType> results;
    if (!inferResultTypes(ctx, results))
      return error = where + ": " + ctx.error, false;
    for (size_t i = 0; i < op.results.size(); ++i) {
      if (op.results[i] >= fn.values.size() || defined[op.results[i]])
        return error = where + " redefines a value", false;
      if (!sameTypeUnderFacts(env, results[i], fn.type(op.results[i])))
        return error = where + " result " + std::to_string(i) + " has type " +
                       fn.type(op.results[i]).str() +
                       " but its shape rule gives " + results[i].str(),
               false;
      defined[op.results[i]] = true;
      if (!open.stack.empty())
        open.scopeOf[op.results[i]] = static_cast<long>(open.stack.back());
    }
  }
  if (!open.stack.empty())
    return error = "op " + std::to_string(open.stack.back()) +
                   " ('loop') has no end_loop",
           false;
  // Callees no op calls are still compiled: checked under the facts here.
  for (size_t k = 0; k < fn.callees.size(); ++k) {
    std::string problem;
    if (!calleeChecked[k] && !verifyOps(fn.callees[k], env, problem))
      return error =
                 "callee '" + fn.callees[k].name + "' is not valid: " + problem,
             false;
  }
  for (ValueId r : fn.results)
    if (r >= fn.values.size() || !defined[r] || open.scopeOf[r] >= 0)
      return error = "the function returns an undefined value", false;
  if (std::optional<Error> internal = takeInternalError())
    return error = internal->message, false;
  return true;
}

} // namespace tsl
