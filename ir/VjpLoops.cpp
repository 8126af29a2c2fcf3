// Reverse mode through structured loops (docs/design.md, "Gradients through
// loops"). The backward of `loop ... end_loop` over [lo, hi) is
//  1. a replay loop over the same range that re-runs the part of the body
//     computing the carried values some rule reads, stacking them into
//     [trip + 1, ...] buffers (row 0 the initial value, row t - lo + 1 the
//     value after iteration t: update_slice), and the results of the body's
//     GEMMs (matmul, conv2d) the reverse body reads into [trip, ...] ones
//     (saved, not recomputed: a GEMM costs what its backward's do), and
//  2. a reverse loop: its iteration r runs the forward iteration
//     t = lo + hi - 1 - r, reads the stacked carried values at t and t + 1
//     (a next state a rule reads, such as a tanh's result, is not
//     recomputed) and the saved GEMM results of t, recomputes the other
//     body values its rules read (elementwise chains, row ops), and
//     sweeps the body backwards with the carried cotangents as seeds. It
//     carries those cotangents and one accumulator per value from before
//     the loop the body reads (weights).
// Nested loops are reversed by the same code when the body's sweep meets
// them. Memory: O(trip x (stacked state + saved GEMM results)); compute: the
// loop's forward once more (the replay; the merge-replay-loops pass drops
// the forward's own loop) plus the cheap ops the reverse body recomputes.
#include "ir/OpInfo.h"
#include "ir/SubstituteAttr.h"
#include "ir/VjpBuilder.h"

#include <algorithm>

namespace tsl::vjp {

namespace {

using ValueMap = std::unordered_map<ValueId, ValueId>;
using Subst = std::map<std::string, SymExpr>;

/// A loop of an op list, copied (emitting grows the function).
struct LoopCopy {
  Operation head, end;
  std::vector<Operation> body;
  std::vector<size_t> bodyFwd;
  /// Within body: loopPartners.
  std::vector<size_t> partner;
  std::string sym;
  SymExpr lo, hi;

  /// The last op of the unit starting at body op \p i (a whole inner loop).
  size_t unitEnd(size_t i) const {
    return body[i].code == OpCode::Loop && partner[i] != SIZE_MAX ? partner[i]
                                                                  : i;
  }
  /// The body's units (ops, inner loops whole) at depth 0, in order.
  std::vector<size_t> units() const {
    std::vector<size_t> out;
    for (size_t i = 0; i < body.size(); i = unitEnd(i) + 1)
      out.push_back(i);
    return out;
  }
  /// The values unit \p i reads from outside itself.
  std::vector<ValueId> reads(size_t i) const {
    size_t j = unitEnd(i);
    std::unordered_set<ValueId> inside;
    std::vector<ValueId> out;
    for (size_t k = i; k <= j; ++k) {
      for (ValueId v : body[k].operands)
        if (!inside.count(v))
          out.push_back(v);
      for (ValueId r : body[k].results)
        inside.insert(r);
    }
    return out;
  }
  const std::vector<ValueId> &results(size_t i) const {
    return body[unitEnd(i)].results;
  }
};

/// \p op with operands renamed by \p map and symbols by \p subst.
Operation renamed(const Operation &op, const ValueMap &map,
                  const Subst &subst) {
  Operation c = op;
  for (ValueId &v : c.operands)
    if (auto it = map.find(v); it != map.end())
      v = it->second;
  for (auto &[name, a] : c.attrs)
    a = substituted(a, subst);
  return c;
}

/// A fresh loop symbol like \p of (the forward loop's), for a loop over
/// [lo, hi) the backward emits.
SymExpr freshLoopSymbol(ShapeEnv &env, const std::string &of, SymExpr lo,
                        SymExpr hi) {
  SymbolInfo info;
  if (const SymbolInfo *s = env.lookup(of))
    info = *s;
  info.kind = DimKind::Unbacked;
  info.isInt = true;
  info.loopVariable = true;
  info.hint.reset();
  info.lo = lo.isConst() ? lo.constValue() : INT64_MIN;
  info.hi.reset();
  if (hi.isConst() && hi.constValue() > INT64_MIN)
    info.hi = hi.constValue() - 1;
  for (int k = 1;; ++k) {
    info.name = of + "_bwd" + (k > 1 ? std::to_string(k) : "");
    if (!env.lookup(info.name))
      return env.addSymbol(info);
  }
}

/// Emits \p op (renamed) through the sweep's builder; maps its results.
bool emitRenamed(Sweep &s, const Operation &op, ValueMap &map,
                 Operation *emitted) {
  std::vector<ValueId> results;
  if (s.b.failed || !s.b.emitFn(op.code, op.operands, op.attrs, results) ||
      results.size() != op.results.size()) {
    s.b.failed = true;
    return false;
  }
  for (size_t k = 0; k < results.size(); ++k) {
    map[op.results[k]] = results[k];
    s.origin[results[k]] = s.fwd(op.results[k]);
  }
  if (emitted) {
    *emitted = op;
    emitted->results = results;
  }
  return true;
}

/// Emits a copy of body ops [i, j] (an op, or a whole inner loop, which
/// gets a fresh symbol whose range is a fact while its body is emitted);
/// appends the emitted ops to \p out when given. Asserts are not copied:
/// the forward checked them.
bool cloneUnit(Sweep &s, const LoopCopy &L, size_t i, ValueMap &map,
               Subst subst, std::vector<Operation> *out) {
  std::vector<ShapeEnv::FactMark> marks;
  for (size_t k = i, j = L.unitEnd(i); k <= j; ++k) {
    if (L.body[k].code == OpCode::Assert)
      continue;
    Operation op = renamed(L.body[k], map, subst);
    if (op.code == OpCode::Loop) {
      SymExpr lo = op.exprAttr("lo"), hi = op.exprAttr("hi");
      std::string of = L.body[k].exprAttr("sym").symbolName();
      SymExpr sym = freshLoopSymbol(s.env, of, lo, hi);
      subst[of] = sym;
      op.attrs["sym"] = sym;
      marks.push_back(s.env.markFacts());
      s.env.addFact(SymCond::ge(sym, lo));
      s.env.addFact(SymCond::lt(sym, hi));
    }
    Operation emitted;
    if (!emitRenamed(s, op, map, &emitted))
      return false;
    if (op.code == OpCode::EndLoop && !marks.empty()) {
      s.env.forgetFactsSince(marks.back());
      marks.pop_back();
    }
    if (out)
      out->push_back(std::move(emitted));
  }
  return true;
}

/// Emits a loop or end_loop with \p operands; false after a failed emit.
bool emitMarker(Sweep &s, OpCode code, std::vector<ValueId> operands,
                AttrMap attrs, std::vector<ValueId> &results) {
  if (s.b.failed)
    return false;
  for (ValueId v : operands)
    if (v == kFailed)
      return s.b.failed = true, false;
  if (!s.b.emitFn(code, std::move(operands), std::move(attrs), results))
    return s.b.failed = true, false;
  return true;
}

/// A loop the backward opened over the forward loop's range.
struct OpenedLoop {
  /// Its fresh loop symbol.
  SymExpr sym;
  /// Its results: the carried values inside the body.
  std::vector<ValueId> inside;
  /// Where the symbol's range facts start (forgotten when the body ends).
  ShapeEnv::FactMark mark;
};

/// Opens a loop over \p L's range carrying \p operands, with a fresh loop
/// symbol whose range is a fact until the caller forgets the facts since the
/// returned mark; false after a failed emit.
bool openLoop(Sweep &s, const LoopCopy &L, std::vector<ValueId> operands,
              OpenedLoop &opened) {
  opened.sym = freshLoopSymbol(s.env, L.sym, L.lo, L.hi);
  if (!emitMarker(s, OpCode::Loop, std::move(operands),
                  {{"sym", opened.sym}, {"lo", L.lo}, {"hi", L.hi}},
                  opened.inside))
    return false;
  opened.mark = s.env.markFacts();
  s.env.addFact(SymCond::ge(opened.sym, L.lo));
  s.env.addFact(SymCond::lt(opened.sym, L.hi));
  return true;
}

/// What the reverse body reads: the values it needs (\p need), of which
/// \p fromStack are read from the stacks, not recomputed.
struct Needs {
  std::unordered_set<ValueId> need, fromStack;
  /// Body values the replay saves (stacked per iteration) so that the
  /// reverse body reads them instead of computing them again, in body order.
  std::vector<ValueId> saved;
  bool isSaved(ValueId v) const {
    return std::find(saved.begin(), saved.end(), v) != saved.end();
  }
  /// Whether the reverse body emits unit \p i of the body again.
  bool recomputes(const LoopCopy &L, size_t i) const {
    for (ValueId r : L.results(i))
      if (need.count(r) && !fromStack.count(r) && !isSaved(r))
        return true;
    return false;
  }
};

/// Whether the backward saves body unit \p i's results rather than
/// recomputing them: the policy keeps what costs a GEMM (matmul, conv2d)
/// and recomputes the rest (elementwise chains, row ops), whose kernels the
/// plan fuses next to their backward use.
bool savesResults(const LoopCopy &L, size_t i) {
  OpCode code = L.body[i].code;
  return L.unitEnd(i) == i &&
         (code == OpCode::Matmul || code == OpCode::Conv2d);
}

/// The carried values (by index) to stack: those whose values some rule of
/// the reverse body reads, at an iteration's start (the loop's result) or
/// end (the end_loop's operand: a tanh's result read by its rule is the
/// next iteration's state, read from the stack rather than recomputed).
std::vector<size_t> stackedCarried(const Sweep &s, const LoopCopy &L,
                                   Needs &needs) {
  std::unordered_set<ValueId> &need = needs.need;
  std::vector<size_t> units = L.units();
  // Values whose size an op of the body binds (masked_select's) or that are
  // computed from one: recomputed, such a value has a fresh size, so every
  // op of the reverse body between it and a rule must be recomputed too (a
  // cotangent of the forward's size would not fit the recomputed value).
  std::unordered_set<ValueId> sized;
  for (const Operation &op : L.body) {
    bool from = bindsSizes(op.code);
    for (ValueId v : op.operands)
      from = from || sized.count(v);
    if (from)
      sized.insert(op.results.begin(), op.results.end());
  }
  for (size_t i : units) {
    const Operation &op = L.body[i];
    bool resultWanted = false, operandWanted = false;
    for (ValueId r : L.results(i))
      resultWanted = resultWanted || s.wanted(r);
    std::vector<ValueId> reads = L.reads(i);
    for (ValueId v : reads)
      operandWanted = operandWanted || s.wanted(v);
    if (!resultWanted || !operandWanted)
      continue;
    bool sizedResult = false;
    for (ValueId r : L.results(i))
      sizedResult = sizedResult || sized.count(r);
    if (op.code == OpCode::Loop) {
      need.insert(reads.begin(), reads.end()); // its replay reads them
    } else if (sizedResult) {
      need.insert(op.operands.begin(), op.operands.end());
      need.insert(op.results.begin(), op.results.end());
    } else {
      if (ruleReadsOperands(op))
        need.insert(op.operands.begin(), op.operands.end());
      if (ruleReadsResults(op))
        need.insert(op.results.begin(), op.results.end());
    }
  }
  std::unordered_set<ValueId> defined;
  for (const Operation &op : L.body)
    defined.insert(op.results.begin(), op.results.end());
  for (ValueId v : L.end.operands)
    if (need.count(v) && defined.count(v))
      needs.fromStack.insert(v);
  // Consumers come after producers: walking the units backwards, a unit's
  // results are needed by the time it is visited.
  std::vector<ValueId> savedBackwards;
  for (size_t u = units.size(); u-- > 0;) {
    if (!needs.recomputes(L, units[u]))
      continue;
    if (savesResults(L, units[u])) {
      for (ValueId r : L.results(units[u]))
        if (need.count(r) && !needs.fromStack.count(r))
          savedBackwards.push_back(r);
      continue;
    }
    for (ValueId v : L.reads(units[u]))
      need.insert(v);
  }
  needs.saved.assign(savedBackwards.rbegin(), savedBackwards.rend());
  std::vector<size_t> stacked;
  for (size_t k = 0; k < L.head.results.size(); ++k)
    if (need.count(L.head.results[k]) ||
        needs.fromStack.count(L.end.operands[k]))
      stacked.push_back(k);
  return stacked;
}

/// The carried values the replay loop must carry to compute the stacked
/// ones (\p replayed, closed under the body's dependences) and the values
/// its body computes (\p need).
void replayClosure(const LoopCopy &L, std::vector<size_t> &replayed,
                   std::unordered_set<ValueId> &need) {
  std::vector<size_t> units = L.units();
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t k : replayed)
      need.insert(L.end.operands[k]);
    for (size_t u = units.size(); u-- > 0;) {
      bool needed = false;
      for (ValueId r : L.results(units[u]))
        needed = needed || need.count(r);
      if (needed)
        for (ValueId v : L.reads(units[u]))
          need.insert(v);
    }
    for (size_t k = 0; k < L.head.results.size(); ++k)
      if (need.count(L.head.results[k]) &&
          std::find(replayed.begin(), replayed.end(), k) == replayed.end()) {
        replayed.push_back(k);
        changed = true;
      }
  }
  std::sort(replayed.begin(), replayed.end());
}

/// The zero-filled start of a cotangent of \p v's type.
ValueId zerosLike(Sweep &s, ValueId v) {
  TensorType t = s.b.type(v);
  return s.b.full(t.dims, 0, t.dtype);
}

/// Stage 1: the replay loop; \p stacks receives the stack of each stacked
/// carried value (in the order of \p stacked), then of each saved body
/// value ([trip, ...]: row t - lo the value of iteration t).
bool emitReplay(Sweep &s, const LoopCopy &L, const std::vector<size_t> &stacked,
                const std::vector<ValueId> &saved, SymExpr trip,
                std::vector<ValueId> &stacks) {
  std::vector<size_t> replayed = stacked;
  std::unordered_set<ValueId> need(saved.begin(), saved.end());
  replayClosure(L, replayed, need);
  std::vector<ValueId> operands;
  for (size_t k : replayed)
    operands.push_back(L.head.operands[k]);
  for (size_t k : stacked) { // row 0: the initial value
    TensorType t = s.b.type(L.head.results[k]);
    std::vector<SymExpr> dims = {trip + 1}, row = t.dims,
                         zeros(t.rank() + 1, SymExpr(0));
    dims.insert(dims.end(), t.dims.begin(), t.dims.end());
    row.insert(row.begin(), SymExpr(1));
    operands.push_back(s.b.op(
        OpCode::UpdateSlice,
        {s.b.full(dims, 0, t.dtype), s.b.reshape(L.head.operands[k], row)},
        {{"starts", zeros}}));
  }
  for (ValueId v : saved) {
    TensorType t = s.b.type(v);
    std::vector<SymExpr> dims = {trip};
    dims.insert(dims.end(), t.dims.begin(), t.dims.end());
    operands.push_back(s.b.full(dims, 0, t.dtype));
  }
  OpenedLoop opened;
  if (!openLoop(s, L, std::move(operands), opened))
    return false;
  const SymExpr &sym = opened.sym;
  const std::vector<ValueId> &inside = opened.inside;
  ValueMap map;
  for (size_t i = 0; i < replayed.size(); ++i)
    map[L.head.results[replayed[i]]] = inside[i];
  Subst subst{{L.sym, sym}};
  for (size_t i : L.units()) {
    bool needed = false;
    for (ValueId r : L.results(i))
      needed = needed || need.count(r);
    if (needed && !cloneUnit(s, L, i, map, subst, nullptr))
      return false;
  }
  auto renamedValue = [&](ValueId v) {
    auto it = map.find(v);
    return it == map.end() ? v : it->second;
  };
  std::vector<ValueId> next;
  for (size_t k : replayed)
    next.push_back(renamedValue(L.end.operands[k]));
  auto pushRow = [&](ValueId stack, ValueId v, SymExpr at) {
    std::vector<SymExpr> row = s.b.type(v).dims,
                         starts(row.size() + 1, SymExpr(0));
    row.insert(row.begin(), SymExpr(1));
    starts[0] = at;
    next.push_back(s.b.op(OpCode::UpdateSlice, {stack, s.b.reshape(v, row)},
                          {{"starts", starts}}));
  };
  for (size_t i = 0; i < stacked.size(); ++i) // row t - lo + 1: the next
    pushRow(inside[replayed.size() + i],
            renamedValue(L.end.operands[stacked[i]]), sym - L.lo + 1);
  for (size_t i = 0; i < saved.size(); ++i)
    pushRow(inside[replayed.size() + stacked.size() + i],
            renamedValue(saved[i]), sym - L.lo);
  std::vector<ValueId> after;
  bool ok = emitMarker(s, OpCode::EndLoop, next, {}, after);
  s.env.forgetFactsSince(opened.mark);
  if (!ok)
    return false;
  stacks.assign(after.begin() + replayed.size(), after.end());
  return true;
}

/// The reverse body's ops: body ops renamed (\p map: the stacked carried
/// values read at t, recomputed values), the units in \p need emitted again.
bool recomputeBody(Sweep &s, const LoopCopy &L, const Needs &needs,
                   ValueMap &map, const Subst &subst,
                   std::vector<Operation> &rops, std::vector<size_t> &rfwd) {
  for (size_t i : L.units()) {
    size_t j = L.unitEnd(i);
    if (needs.recomputes(L, i)) {
      std::vector<Operation> emitted;
      if (!cloneUnit(s, L, i, map, subst, &emitted))
        return false;
      size_t e = 0;
      for (size_t k = i; k <= j; ++k)
        if (L.body[k].code != OpCode::Assert) {
          rops.push_back(std::move(emitted[e++]));
          rfwd.push_back(L.bodyFwd[k]);
        }
      continue;
    }
    for (size_t k = i; k <= j; ++k) {
      rops.push_back(renamed(L.body[k], map, subst));
      for (ValueId &r : rops.back().results) // a next state from its stack
        if (auto it = map.find(r); it != map.end())
          r = it->second;
      rfwd.push_back(L.bodyFwd[k]);
    }
  }
  return true;
}

/// The values from before the loop its body reads that get a gradient.
std::vector<ValueId> outerWanted(const Sweep &s, const LoopCopy &L) {
  std::unordered_set<ValueId> defined(L.head.results.begin(),
                                      L.head.results.end()),
      seen;
  for (const Operation &op : L.body)
    defined.insert(op.results.begin(), op.results.end());
  std::vector<ValueId> out;
  auto consider = [&](ValueId v) {
    if (!defined.count(v) && s.wanted(v) && seen.insert(v).second)
      out.push_back(v);
  };
  for (const Operation &op : L.body)
    for (ValueId v : op.operands)
      consider(v);
  for (ValueId v : L.end.operands)
    consider(v);
  return out;
}

/// Stage 2: the reverse loop over \p L: carries the cotangents of the
/// \p carried values and the accumulators of the \p outer values; reads
/// the \p stacked values' \p stacks and recomputes the values in \p need.
bool emitReverse(Sweep &s, const LoopCopy &L,
                 const std::vector<size_t> &carried,
                 const std::vector<ValueId> &outer,
                 const std::vector<size_t> &stacked, const Needs &needs,
                 const std::vector<ValueId> &stacks, CtMap &ct) {
  std::vector<ValueId> operands;
  for (size_t k : carried) {
    auto it = ct.find(L.end.results[k]);
    operands.push_back(
        it != ct.end() && it->second != kFailed
            ? s.b.fit(it->second, s.b.type(L.head.results[k]).dims)
            : zerosLike(s, L.head.results[k]));
  }
  std::vector<bool> wasAccumulator;
  for (ValueId w : outer) {
    auto it = ct.find(w);
    bool has = it != ct.end() && it->second != kFailed;
    wasAccumulator.push_back(has && s.accumulators.count(it->second));
    operands.push_back(has ? it->second : zerosLike(s, w));
  }
  OpenedLoop opened;
  if (!openLoop(s, L, std::move(operands), opened))
    return false;
  const SymExpr &r = opened.sym;
  const std::vector<ValueId> &inside = opened.inside;
  ValueMap map;
  // Iteration t's state is row t - lo of its stack, the next row t - lo + 1.
  auto readRow = [&](ValueId stack, ValueId v, SymExpr at) {
    std::vector<SymExpr> dims = s.b.type(v).dims, sizes = dims,
                         starts(dims.size() + 1, SymExpr(0));
    sizes.insert(sizes.begin(), SymExpr(1));
    starts[0] = at;
    ValueId row = s.b.reshape(
        s.b.op(OpCode::Slice, {stack}, {{"starts", starts}, {"sizes", sizes}}),
        dims);
    map[v] = row;
    s.origin[row] = s.fwd(v);
  };
  for (size_t i = 0; i < stacked.size(); ++i) {
    ValueId in = L.head.results[stacked[i]], out = L.end.operands[stacked[i]];
    if (needs.need.count(in))
      readRow(stacks[i], in, L.hi - 1 - r);
    if (needs.fromStack.count(out) && !map.count(out))
      readRow(stacks[i], out, L.hi - r);
  }
  for (size_t i = 0; i < needs.saved.size(); ++i)
    readRow(stacks[stacked.size() + i], needs.saved[i], L.hi - 1 - r);
  std::vector<Operation> rops;
  std::vector<size_t> rfwd;
  Subst subst{{L.sym, L.lo + L.hi - 1 - r}};
  bool ok = recomputeBody(s, L, needs, map, subst, rops, rfwd);
  CtMap local;
  for (size_t i = 0; ok && i < outer.size(); ++i) {
    local[outer[i]] = inside[carried.size() + i];
    s.accumulators.insert(inside[carried.size() + i]);
  }
  auto renamedValue = [&](ValueId v) {
    auto it = map.find(v);
    return it == map.end() ? v : it->second;
  };
  for (size_t i = 0; ok && i < carried.size(); ++i)
    s.accumulate(local, renamedValue(L.end.operands[carried[i]]), inside[i]);
  ok = ok && s.run(rops, rfwd, 0, rops.size(), local, nullptr);
  std::vector<ValueId> next;
  for (size_t i = 0; ok && i < carried.size(); ++i) {
    ValueId v = renamedValue(L.head.results[carried[i]]);
    auto it = local.find(v);
    next.push_back(it != local.end() && it->second != kFailed
                       ? it->second
                       : zerosLike(s, v));
  }
  for (size_t i = 0; ok && i < outer.size(); ++i)
    next.push_back(local[outer[i]]);
  std::vector<ValueId> after;
  ok = ok && emitMarker(s, OpCode::EndLoop, next, {}, after);
  s.env.forgetFactsSince(opened.mark);
  if (!ok)
    return false;
  for (size_t i = 0; i < outer.size(); ++i) {
    ct[outer[i]] = after[carried.size() + i];
    if (wasAccumulator[i])
      s.accumulators.insert(after[carried.size() + i]);
  }
  for (size_t i = 0; i < carried.size(); ++i)
    if (s.wanted(L.head.operands[carried[i]]))
      s.accumulate(ct, L.head.operands[carried[i]], after[i]);
  return !s.b.failed;
}

} // namespace

bool Sweep::loop(const std::vector<Operation> &ops,
                 const std::vector<size_t> &fwdIndex, size_t l, size_t e,
                 CtMap &ct) {
  LoopCopy L{ops[l], ops[e], {}, {}, {}, {}, {}, {}};
  for (size_t i = l + 1; i < e; ++i) {
    L.body.push_back(ops[i]);
    L.bodyFwd.push_back(fwdIndex[i]);
  }
  L.partner = loopPartners(L.body, 0, L.body.size());
  L.sym = L.head.exprAttr("sym").symbolName();
  L.lo = L.head.exprAttr("lo");
  L.hi = L.head.exprAttr("hi");
  bool anyCt = false;
  for (ValueId r : L.end.results)
    anyCt = anyCt || (ct.count(r) && ct[r] != kFailed);
  std::vector<size_t> carried; // carried values with a cotangent
  for (size_t k = 0; k < L.head.results.size(); ++k)
    if (wanted(L.head.results[k]))
      carried.push_back(k);
  std::vector<ValueId> outer = outerWanted(*this, L);
  if (!anyCt || (carried.empty() && outer.empty()))
    return true;
  for (const Operation &op : L.body)
    for (ValueId r : op.results)
      for (const SymExpr &d : b.type(r).dims)
        if (d.containsSymbol(L.sym))
          return fail(fwdIndex[l],
                      "not supported: gradient through a 'for' loop whose "
                      "body has a type depending on its variable '" +
                          L.sym + "' (" + b.type(r).str() + ")");
  Needs needs;
  std::vector<size_t> stacked = stackedCarried(*this, L, needs);
  SymExpr trip = L.hi - L.lo;
  if (env.prove(SymCond::ge(L.hi, L.lo)) != Truth::True)
    trip = SymExpr::max(trip, SymExpr(0));
  std::vector<ValueId> stacks;
  if ((!stacked.empty() || !needs.saved.empty()) &&
      !emitReplay(*this, L, stacked, needs.saved, trip, stacks))
    return false;
  return emitReverse(*this, L, carried, outer, stacked, needs, stacks, ct);
}

} // namespace tsl::vjp
