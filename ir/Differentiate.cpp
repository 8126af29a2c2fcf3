// Reverse-mode differentiation: the builder the rules emit with and the
// reverse sweep (see Differentiate.h); how each op differentiates is the op
// table's Diff column (ir/Ops.def).
#include "ir/Differentiate.h"
#include "ir/VjpBuilder.h"

#include <algorithm>

namespace tsl {

namespace vjp {

ValueId Builder::op(OpCode code, std::vector<ValueId> operands, AttrMap attrs) {
  if (failed)
    return kFailed;
  for (ValueId v : operands)
    if (v == kFailed)
      return kFailed;
  std::vector<ValueId> results;
  if (!emitFn(code, std::move(operands), std::move(attrs), results) ||
      results.empty()) {
    failed = true;
    return kFailed;
  }
  return results[0];
}

ValueId Builder::constant(double value, DType dtype) {
  Number n = isFloat(dtype) ? Number::ofFloat(value)
                            : Number::ofInt(static_cast<int64_t>(value));
  return op(OpCode::Constant, {}, {{"value", n}, {"dtype", dtype}});
}

ValueId Builder::full(const std::vector<SymExpr> &dims, double value,
                      DType dtype) {
  return op(
      OpCode::Full, {},
      {{"shape", dims}, {"value", Number::ofFloat(value)}, {"dtype", dtype}});
}

ValueId Builder::size(SymExpr e, DType dtype) {
  if (e.isConst())
    return constant(static_cast<double>(e.constValue()), dtype);
  return op(OpCode::SymScalar, {}, {{"expr", e}, {"dtype", dtype}});
}

ValueId Builder::reshape(ValueId a, const std::vector<SymExpr> &dims) {
  if (a == kFailed)
    return a;
  TensorType t = type(a);
  if (t.dims == dims)
    return a;
  // Dims that differ only in spelling (2 * (K / 2) and K after a guard):
  // an expand, whose rule asks each pair (proven), not a reshape, whose
  // rule asks the products (which the prover may not see equal).
  bool respelled = t.rank() == dims.size();
  for (size_t i = 0; respelled && i < dims.size(); ++i)
    respelled = t.dims[i] == dims[i] ||
                env.prove(SymCond::eq(t.dims[i], dims[i])) == Truth::True;
  if (respelled)
    return op(OpCode::Expand, {a}, {{"shape", dims}});
  return op(OpCode::Reshape, {a}, {{"shape", dims}});
}

ValueId Builder::fit(ValueId g, const std::vector<SymExpr> &dims) {
  if (g == kFailed)
    return g;
  TensorType t = type(g);
  if (t.rank() > dims.size()) {
    std::vector<int64_t> lead;
    for (size_t i = 0; i < t.rank() - dims.size(); ++i)
      lead.push_back(static_cast<int64_t>(i));
    g = op(OpCode::ReduceSum, {g}, {{"axes", lead}, {"keepdim", false}});
    if (g == kFailed)
      return g;
    t = type(g);
  }
  if (t.rank() == dims.size()) {
    std::vector<int64_t> axes;
    for (size_t i = 0; i < dims.size(); ++i)
      if (t.dims[i] != dims[i] &&
          (dims[i].isConst(1) ||
           env.prove(SymCond::eq(dims[i], 1)) == Truth::True))
        axes.push_back(static_cast<int64_t>(i));
    if (!axes.empty())
      g = op(OpCode::ReduceSum, {g}, {{"axes", axes}, {"keepdim", true}});
  }
  return reshape(g, dims);
}

std::vector<SymExpr> Builder::keptDims(const std::vector<SymExpr> &dims,
                                       const std::vector<int64_t> &axes) {
  std::vector<SymExpr> kept = dims;
  for (size_t i = 0; i < kept.size(); ++i)
    if (axes.empty() || std::find(axes.begin(), axes.end(),
                                  static_cast<int64_t>(i)) != axes.end())
      kept[i] = SymExpr(1);
  return kept;
}

} // namespace vjp

namespace {

/// Which values depend on the wrt values (through any op, stop_gradient
/// excepted), and which values y depends on.
struct Dependence {
  std::vector<char> fromWrt, toY;
};

Dependence dependence(const Function &fn, const DiffRequest &req) {
  Dependence d;
  d.fromWrt.assign(fn.values.size(), 0);
  d.toY.assign(fn.values.size(), 0);
  for (ValueId w : req.wrt)
    d.fromWrt[w] = 1;
  d.toY[req.y] = 1;
  std::vector<size_t> partner =
      vjp::loopPartners(fn.ops, 0, std::min(req.endOp, fn.ops.size()));
  // A loop's carried value k flows from its operand k (and, through the
  // iterations, from the end_loop's operand k): repeated until no value
  // changes, as a carried value may depend on one later in the body (one
  // pass without loops).
  bool hasLoops = std::any_of(partner.begin(), partner.end(),
                              [](size_t p) { return p != SIZE_MAX; });
  for (bool changed = true; changed; changed = changed && hasLoops) {
    changed = false;
    auto mark = [&](std::vector<char> &set, ValueId v) {
      if (!set[v] && !req.stopped.count(v))
        set[v] = 1, changed = true;
    };
    for (size_t i = 0; i < req.endOp; ++i) {
      const Operation &op = fn.ops[i];
      if (isLoopMarker(op.code)) {
        for (size_t k = 0; k < op.operands.size(); ++k)
          if (d.fromWrt[op.operands[k]])
            mark(d.fromWrt, op.results[k]);
        if (op.code == OpCode::EndLoop && partner[i] != SIZE_MAX)
          for (size_t k = 0; k < op.operands.size(); ++k)
            if (d.fromWrt[op.operands[k]])
              mark(d.fromWrt, fn.ops[partner[i]].results[k]);
        continue;
      }
      bool any = false;
      for (ValueId v : op.operands)
        any = any || d.fromWrt[v];
      if (any)
        for (ValueId r : op.results)
          mark(d.fromWrt, r);
    }
    for (size_t i = req.endOp; i-- > 0;) {
      const Operation &op = fn.ops[i];
      if (isLoopMarker(op.code)) {
        for (size_t k = 0; k < op.results.size(); ++k)
          if (d.toY[op.results[k]] && !d.toY[op.operands[k]])
            d.toY[op.operands[k]] = 1, changed = true;
        if (op.code == OpCode::Loop && partner[i] != SIZE_MAX)
          for (size_t k = 0; k < op.results.size(); ++k) {
            ValueId next = fn.ops[partner[i]].operands[k];
            if (d.toY[op.results[k]] && !d.toY[next])
              d.toY[next] = 1, changed = true;
          }
        continue;
      }
      bool any = false;
      for (ValueId r : op.results)
        any = any || d.toY[r];
      if (any)
        for (ValueId v : op.operands)
          if (!d.toY[v])
            d.toY[v] = 1, changed = true;
    }
  }
  return d;
}

/// An `item` that binds a size from a value depending on the wrt values,
/// where a value on the path to y has a type using that size: the index of
/// the item, or SIZE_MAX.
size_t itemOnPath(const Function &fn, const DiffRequest &req,
                  const Dependence &d) {
  for (size_t i = 0; i < req.endOp; ++i) {
    const Operation &op = fn.ops[i];
    if (op.code != OpCode::Item || !d.fromWrt[op.operands[0]])
      continue;
    auto it = op.attrs.find("sym");
    if (it == op.attrs.end() || !std::holds_alternative<SymExpr>(it->second))
      continue;
    const SymExpr &sym = std::get<SymExpr>(it->second);
    if (!sym.isSymbol())
      continue;
    for (ValueId v = 0; v < d.toY.size(); ++v) {
      if (!d.toY[v] || !d.fromWrt[v])
        continue;
      for (const SymExpr &dim : fn.type(v).dims)
        if (dim.containsSymbol(sym.symbolName()))
          return i;
    }
  }
  return SIZE_MAX;
}

/// For a grad inside a loop body: an open loop (its body not ended yet)
/// whose carried value y depends on, where a wrt value is defined before the
/// loop. That carried value may depend on the wrt value through earlier
/// iterations, which the backward of one iteration cannot see (no reverse of
/// loops yet): the index of the loop op, or SIZE_MAX.
size_t openLoopOnPath(const Function &fn, const DiffRequest &req,
                      const Dependence &d) {
  std::vector<size_t> open;
  std::vector<size_t> defined(fn.values.size(), 0); // 1 + the defining op
  for (size_t i = 0; i < req.endOp; ++i) {
    const Operation &op = fn.ops[i];
    for (ValueId r : op.results)
      defined[r] = i + 1;
    if (op.code == OpCode::Loop)
      open.push_back(i);
    else if (op.code == OpCode::EndLoop && !open.empty())
      open.pop_back();
  }
  for (size_t li : open) {
    bool carriedOnPath = false;
    for (ValueId r : fn.ops[li].results)
      carriedOnPath = carriedOnPath || d.toY[r];
    for (ValueId w : req.wrt)
      if (carriedOnPath && defined[w] <= li)
        return li;
  }
  return SIZE_MAX;
}

/// The values that get a gradient because another member of their role
/// group (DiffRequest::roles) is \p active: those y depends on, float and
/// not stopped.
template <typename Active>
std::vector<char> sameRoleActive(const Function &fn, const DiffRequest &req,
                                 const Dependence &d, const Active &active) {
  std::vector<char> alike(fn.values.size(), 0);
  for (const std::vector<ValueId> &group : req.roles) {
    if (std::none_of(group.begin(), group.end(), active))
      continue;
    for (ValueId v : group)
      alike[v] = v < d.toY.size() && d.toY[v] && isFloat(fn.type(v).dtype) &&
                 !req.stopped.count(v);
  }
  return alike;
}

bool refuse(const Operation &op, size_t index, DiffResult &out) {
  DiffRule rule = diffRuleOf(op.code);
  std::string name(opName(op.code));
  out.failedOp = index;
  if (rule.kind == DiffKind::NotDifferentiable)
    out.message = "not differentiable: '" + name + "' (" + rule.reason + ")";
  else
    out.message =
        "not supported: gradient of '" + name + "' (" + rule.reason + ")";
  return false;
}

} // namespace

bool differentiate(const Function &fn, ShapeEnv &env, const DiffRequest &req,
                   const DiffEmitFn &emit, DiffResult &out) {
  using vjp::kFailed;
  Dependence dep = dependence(fn, req);
  size_t item = itemOnPath(fn, req, dep);
  if (item != SIZE_MAX)
    return refuse(fn.ops[item], item, out);
  size_t loop = openLoopOnPath(fn, req, dep);
  if (loop != SIZE_MAX) {
    out.failedOp = loop;
    out.message = "not supported: a gradient inside a 'for' loop through a "
                  "value the loop carries: it may depend on a wrt value "
                  "through earlier iterations";
    return false;
  }
  size_t numForward = fn.values.size();
  vjp::Builder b(fn, env, emit);
  auto active = [&](ValueId v) {
    return v < numForward && dep.fromWrt[v] && dep.toY[v] &&
           isFloat(fn.type(v).dtype) && !req.stopped.count(v);
  };
  vjp::Sweep sweep{b, env, req, {}, {}, {}, {}, out};
  sweep.activeFwd.assign(numForward, 0);
  for (ValueId v = 0; v < numForward; ++v)
    sweep.activeFwd[v] = active(v);
  sweep.alikeFwd = sameRoleActive(fn, req, dep, active);
  vjp::CtMap ct;
  DType ydt = fn.type(req.y).dtype;
  ct[req.y] = req.cotangent ? *req.cotangent : b.constant(1.0, ydt);
  std::vector<size_t> identity(req.endOp);
  for (size_t i = 0; i < req.endOp; ++i)
    identity[i] = i;
  out.sweep.assign(req.endOp + 1, fn.ops.size());
  if (!sweep.run(fn.ops, identity, 0, req.endOp, ct, &out.sweep) || b.failed)
    return false;
  out.sweep[0] = fn.ops.size();
  for (ValueId w : req.wrt) {
    TensorType t = fn.type(w);
    auto it = ct.find(w);
    bool reached = it != ct.end() && it->second != kFailed;
    ValueId g =
        reached ? b.reshape(it->second, t.dims) : b.full(t.dims, 0, t.dtype);
    if (b.failed)
      return false;
    out.grads.push_back(g);
    out.reached.push_back(reached);
  }
  return true;
}

namespace vjp {

void Sweep::accumulate(CtMap &ct, ValueId v, ValueId g) {
  g = b.fit(g, b.type(v).dims);
  auto it = ct.find(v);
  if (it == ct.end() || it->second == kFailed)
    ct[v] = g;
  else
    it->second = b.add(it->second, g);
}

std::vector<size_t> loopPartners(const std::vector<Operation> &ops,
                                 size_t begin, size_t end) {
  std::vector<size_t> partner(end, SIZE_MAX), open;
  for (size_t i = begin; i < end; ++i) {
    if (ops[i].code == OpCode::Loop) {
      open.push_back(i);
    } else if (ops[i].code == OpCode::EndLoop && !open.empty()) {
      partner[i] = open.back();
      partner[open.back()] = i;
      open.pop_back();
    }
  }
  return partner;
}

/// A slice's gradient added in place into a loop-carried accumulator:
/// acc[starts] += g (update_slice), not a padded full-size add.
static bool sliceIntoAccumulator(Sweep &s, const Operation &op, ValueId g,
                                 CtMap &ct) {
  if (op.code != OpCode::Slice || !op.intsAttr("steps").empty())
    return false;
  auto it = ct.find(op.operands[0]);
  if (it == ct.end() || !s.accumulators.count(it->second))
    return false;
  const std::vector<SymExpr> &starts = op.exprsAttr("starts");
  ValueId part = s.b.op(OpCode::Slice, {it->second},
                        {{"starts", starts}, {"sizes", op.exprsAttr("sizes")}});
  ValueId acc = s.b.op(OpCode::UpdateSlice, {it->second, s.b.add(part, g)},
                       {{"starts", starts}});
  it->second = acc;
  s.accumulators.insert(acc);
  return true;
}

bool Sweep::run(const std::vector<Operation> &ops,
                const std::vector<size_t> &fwdIndex, size_t begin, size_t end,
                CtMap &ct, std::vector<size_t> *marks) {
  std::vector<size_t> partner = loopPartners(ops, begin, end);
  for (size_t i = end; i-- > begin && !b.failed;) {
    if (marks)
      (*marks)[i + 1] = b.fn.ops.size();
    if (ops[i].code == OpCode::EndLoop && partner[i] != SIZE_MAX) {
      size_t l = partner[i];
      if (!loop(ops, fwdIndex, l, i, ct))
        return false;
      if (marks)
        for (size_t j = l + 1; j <= i; ++j)
          (*marks)[j] = (*marks)[i + 1];
      i = l;
      continue;
    }
    if (isLoopMarker(ops[i].code))
      continue; // the loop a grad inside its body is in (no carried ct)
    Operation op = ops[i]; // a copy: emitting may grow ops
    std::vector<ValueId> cts;
    bool anyCt = false;
    for (ValueId r : op.results) {
      auto it = ct.find(r);
      cts.push_back(it == ct.end() ? kFailed : it->second);
      anyCt = anyCt || cts.back() != kFailed;
    }
    std::vector<bool> want;
    bool anyWant = false;
    for (ValueId v : op.operands) {
      want.push_back(wanted(v));
      anyWant = anyWant || want.back();
    }
    if (!anyCt || !anyWant)
      continue;
    DiffRule rule = diffRuleOf(op.code);
    if (rule.kind == DiffKind::NoGradient)
      continue;
    if (rule.kind != DiffKind::Rule)
      return refuse(op, fwdIndex[i], out);
    if (cts[0] != kFailed && sliceIntoAccumulator(*this, op, cts[0], ct))
      continue;
    std::vector<ValueId> grads;
    if (!applyRule(b, op, cts, want, grads, out.message)) {
      if (!b.failed)
        out.failedOp = fwdIndex[i];
      return false;
    }
    for (size_t k = 0; k < op.operands.size() && k < grads.size(); ++k)
      if (want[k] && grads[k] != kFailed)
        accumulate(ct, op.operands[k], grads[k]);
  }
  return !b.failed;
}

} // namespace vjp

} // namespace tsl
