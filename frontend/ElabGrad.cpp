// grad(y, wrt=...) and vjp(y, cotangent, wrt=...): the ops already emitted
// that y depends on are differentiated in place (ir/Differentiate.h), with
// the elaborator's ShapeEnv, so the backward is typed by the forward's facts
// and adds no guard.
#include "frontend/ElaboratorImpl.h"
#include "ir/Differentiate.h"

#include <algorithm>
#include <map>
#include <unordered_set>

namespace tsl {

namespace {

/// The source range of an op's location, or an invalid range.
SourceRange rangeOfLocation(const SourceManager &sm, const Location &loc) {
  if (!loc.isValid())
    return {};
  uint32_t file = sm.findFile(loc.file);
  if (!file)
    return {};
  std::string_view text = sm.text(file);
  size_t offset = 0;
  for (unsigned line = 1; line < loc.line && offset < text.size(); ++offset)
    if (text[offset] == '\n')
      ++line;
  offset += loc.col ? loc.col - 1 : 0;
  return SourceRange(sm.locAt(file, offset),
                     sm.locAt(file, offset + std::max(1u, loc.length)));
}

/// Checks grad's or vjp's arguments and fills \p req (y, its cotangent and
/// the wrt values \p ws); false after reporting.
bool checkArguments(Elaborator &el, const std::string &name, const SemValue &y,
                    const SemValue *cotangent,
                    const std::vector<const SemValue *> &ws, DiffRequest &req) {
  if (y.kind != SemValue::Kind::Tensor)
    return el.error(y.range, "'" + name + "' needs a tensor for y, got " +
                                 kindName(y.kind));
  TensorType yt = el.fn.type(y.tensor);
  if (!isFloat(yt.dtype))
    return el.error(y.range, "'" + name + "' needs a float y, got " + yt.str());
  if (!cotangent && yt.rank() != 0)
    return el.error(y.range, "'grad' needs a 0-d y, got " + yt.str(),
                    "use vjp(y, cotangent, wrt=...) for a tensor y");
  req.y = y.tensor;
  if (cotangent) {
    if (cotangent->kind != SemValue::Kind::Tensor)
      return el.error(cotangent->range,
                      "'vjp' needs a tensor cotangent, got " +
                          std::string(kindName(cotangent->kind)));
    TensorType ct = el.fn.type(cotangent->tensor);
    bool same = ct.dtype == yt.dtype && ct.rank() == yt.rank();
    for (size_t i = 0; same && i < ct.rank(); ++i)
      same = ct.dims[i] == yt.dims[i] ||
             el.env.prove(SymCond::eq(ct.dims[i], yt.dims[i])) == Truth::True;
    if (!same)
      return el.error(cotangent->range, "'vjp' needs a cotangent of y's type " +
                                            yt.str() + ", got " + ct.str());
    req.cotangent = cotangent->tensor;
  }
  for (const SemValue *w : ws) {
    if (w->kind != SemValue::Kind::Tensor)
      return el.error(w->range, "'" + name +
                                    "' takes gradients with respect to "
                                    "tensors, got " +
                                    kindName(w->kind));
    TensorType t = el.fn.type(w->tensor);
    if (!isFloat(t.dtype))
      return el.error(w->range, "not differentiable: '" +
                                    el.sourceText(w->range) + "' is " +
                                    t.str() +
                                    " (gradients are taken with respect to "
                                    "float values)");
    req.wrt.push_back(w->tensor);
  }
  return true;
}

/// The role groups of the forward's repeated calls (DiffRequest::roles):
/// for each function called at least twice with as many ops, its calls'
/// k-th inputs (the values a call's ops read before making them, in that
/// order), where its calls read as many and those of one element type and
/// rank.
std::vector<std::vector<ValueId>> callRoles(const Elaborator &el,
                                            size_t endOp) {
  std::map<std::pair<std::string, size_t>, std::vector<std::vector<ValueId>>>
      inputsOf; // by callee and op count
  for (const InlinedCall &run : el.callRuns) {
    if (run.begin >= run.end || run.end > endOp)
      continue;
    std::vector<ValueId> inputs;
    std::unordered_set<ValueId> seen; // read or made by the run
    for (size_t i = run.begin; i < run.end; ++i) {
      for (ValueId v : el.fn.ops[i].operands)
        if (seen.insert(v).second)
          inputs.push_back(v);
      for (ValueId r : el.fn.ops[i].results)
        seen.insert(r);
    }
    inputsOf[{run.callee, run.end - run.begin}].push_back(std::move(inputs));
  }
  std::vector<std::vector<ValueId>> roles;
  for (const auto &[callee, calls] : inputsOf) {
    size_t n = calls[0].size();
    if (calls.size() < 2 || std::any_of(calls.begin(), calls.end(),
                                        [&](const std::vector<ValueId> &c) {
                                          return c.size() != n;
                                        }))
      continue;
    for (size_t k = 0; k < n; ++k) {
      std::vector<ValueId> group;
      TensorType t = el.fn.type(calls[0][k]);
      for (const std::vector<ValueId> &c : calls)
        if (TensorType u = el.fn.type(c[k]);
            u.dtype == t.dtype && u.rank() == t.rank())
          group.push_back(c[k]);
      if (group.size() == calls.size())
        roles.push_back(std::move(group));
    }
  }
  return roles;
}

/// Records the backward of each inlined call of the forward as a run of its
/// own (named `<callee>_backward`, at the call's location), so that the
/// backwards of repeated calls become one callee as their forwards do.
void recordBackwardRuns(Elaborator &el, const DiffRequest &req,
                        const DiffResult &res) {
  std::vector<InlinedCall> &runs = el.callRuns;
  for (size_t k = 0, n = runs.size(); k < n; ++k) {
    const InlinedCall &run = runs[k];
    if (run.begin >= run.end || run.end > req.endOp)
      continue;
    size_t begin = res.sweep[run.end], end = res.sweep[run.begin];
    if (begin < end)
      runs.push_back({begin, end, run.callee + "_backward", run.loc});
  }
}

/// Runs differentiate on the ops elaborated so far, the backward's ops
/// located at \p range; reports a refused op at its own location and a
/// backward that added a guard or assertion (an internal error).
bool runDifferentiate(Elaborator &el, DiffRequest &req, SourceRange range,
                      DiffResult &res) {
  ShapeEnv &env = el.env;
  req.stopped = el.stoppedGradients;
  req.endOp = el.fn.ops.size();
  req.roles = callRoles(el, req.endOp);
  size_t guards = env.guards().size(), assertions = env.assertions().size();
  DiffEmitFn emitFn = [&](OpCode code, std::vector<ValueId> operands,
                          AttrMap attrs, std::vector<ValueId> &results) {
    return el.emit(code, std::move(operands), std::move(attrs), range, results);
  };
  // The backward asks the forward's equations the other way round too (a
  // reshape back: numel(out) == numel(in)); the prover matches a fact
  // either way round, so they need not be restated (restated, `D % 4 == 0`
  // was a second division for Z3, which then proved less).
  ShapeEnv::FactMark mark = env.markFacts();
  // The backward of a loop re-runs its body's forward, whose facts ended
  // with the body: its guards and assertions would be made again. They
  // hold here (guards for the whole call; the forward's assertions were
  // checked before its backward runs), except an assertion about one
  // iteration (it names the loop's variable).
  // So do the conditions of `check(...)` statements in a loop body (an
  // assert op, a fact only until the body's end).
  for (const ShapeFact &g : env.guards())
    env.addFact(g.cond);
  auto addUnlessPerIteration = [&](const SymCond &cond) {
    for (const std::string &name : cond.symbols())
      if (const SymbolInfo *s = env.lookup(name); s && s->loopVariable)
        return;
    env.addFact(cond);
  };
  for (const ShapeFact &a : env.assertions())
    addUnlessPerIteration(a.cond);
  for (const Operation &op : el.fn.ops)
    if (op.code == OpCode::Assert)
      addUnlessPerIteration(op.condAttr("cond"));
  bool ok = differentiate(el.fn, env, req, emitFn, res);
  env.forgetFactsSince(mark);
  if (!ok) {
    if (res.failedOp == SIZE_MAX)
      return false;
    SourceRange at = rangeOfLocation(el.sm(), el.fn.ops[res.failedOp].loc);
    if (!at.isValid())
      return el.error(range, res.message);
    return el.errorWithNotes(at, res.message,
                             {DiagNote{range, "in the gradient taken here"}});
  }
  recordBackwardRuns(el, req, res);
  if (env.guards().size() != guards || env.assertions().size() != assertions) {
    const ShapeFact &f = env.guards().size() != guards
                             ? env.guards()[guards]
                             : env.assertions()[assertions];
    return el.error(range, "internal error: the gradient added a size check "
                           "its forward did not have: " +
                               f.cond.str() + " (" + f.reason + ")");
  }
  return true;
}

} // namespace

bool Elaborator::gradient(const std::string &name, const SemValue &y,
                          const SemValue *cotangent, const SemValue &wrt,
                          SourceRange range, SemValue &out) {
  bool isTuple = wrt.kind == SemValue::Kind::Tuple;
  std::vector<const SemValue *> ws;
  if (isTuple)
    for (const SemValue &w : wrt.elems)
      ws.push_back(&w);
  else
    ws.push_back(&wrt);
  DiffRequest req;
  DiffResult res;
  if (!checkArguments(*this, name, y, cotangent, ws, req) ||
      !runDifferentiate(*this, req, range, res))
    return false;
  std::string yText = sourceText(y.range);
  for (size_t i = 0; i < ws.size(); ++i)
    if (!res.reached[i])
      diags.warning(ws[i]->range, "'" + yText + "' does not depend on '" +
                                      sourceText(ws[i]->range) +
                                      "': its gradient is zeros");
  if (!isTuple) {
    out = SemValue::ofTensor(res.grads[0], range);
    return true;
  }
  out = SemValue();
  out.kind = SemValue::Kind::Tuple;
  out.range = range;
  for (ValueId g : res.grads)
    out.elems.push_back(SemValue::ofTensor(g, range));
  return setNest(out, 0, range);
}

} // namespace tsl
