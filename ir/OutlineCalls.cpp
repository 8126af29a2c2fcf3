// Outlining repeated inlined calls into callees, and inlining them again
// (ir/OutlineCalls.h).
#include "ir/OutlineCalls.h"

#include <algorithm>
#include <bit>
#include <limits>
#include <map>
#include <unordered_map>

namespace tsl {

namespace {

constexpr ValueId kNoValue = std::numeric_limits<ValueId>::max();

/// One run that may become a call: the caller's values it reads and gives,
/// and its shape as a callee would have it (ops renumbered).
struct Candidate {
  const InlinedCall *call = nullptr;
  std::vector<ValueId> inputs, outputs;
  /// The run's layout ops whose results the caller reads, in order: the
  /// caller runs them again after the call, on what the call gives (their
  /// result may be a view, which a callee does not return).
  std::vector<size_t> replays;
  /// For each op, its operands as callee-local numbers (parameters first,
  /// then results in order).
  std::vector<uint32_t> wiring;
  /// Per result of the run, in order: whether later ops read it.
  std::vector<bool> needed;
  size_t hash = 0;
  size_t kind = 0; ///< equal kinds, equal callees (see sameCallee)
};

size_t mix(size_t h, size_t v) {
  return h ^ (v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2));
}

size_t hashType(const TensorType &t) {
  size_t h = static_cast<size_t>(t.dtype);
  for (const SymExpr &d : t.dims)
    h = mix(h, d.hash());
  return h;
}

/// Attributes equal as the IR text prints them: floats bit for bit (a
/// callee for `x * 0.0` is not one for `x * -0.0`).
bool sameAttr(const Attr &a, const Attr &b) {
  if (a.index() != b.index())
    return false;
  if (auto *x = std::get_if<double>(&a))
    return std::bit_cast<uint64_t>(*x) ==
           std::bit_cast<uint64_t>(std::get<double>(b));
  if (auto *x = std::get_if<Number>(&a)) {
    const Number &y = std::get<Number>(b);
    return x->isInt == y.isInt && (x->isInt ? x->i == y.i
                                            : std::bit_cast<uint64_t>(x->f) ==
                                                  std::bit_cast<uint64_t>(y.f));
  }
  return a == b;
}

bool sameAttrs(const AttrMap &a, const AttrMap &b) {
  if (a.size() != b.size())
    return false;
  for (auto x = a.begin(), y = b.begin(); x != a.end(); ++x, ++y)
    if (x->first != y->first || !sameAttr(x->second, y->second))
      return false;
  return true;
}

/// Whether \p x and \p y would make the same callee: the same ops, wiring,
/// attributes, locations and types (interned dims compare by identity).
bool sameCallee(const Function &fn, const Candidate &x, const Candidate &y) {
  if (x.wiring != y.wiring || x.inputs.size() != y.inputs.size() ||
      x.call->end - x.call->begin != y.call->end - y.call->begin)
    return false;
  for (size_t k = 0; k < x.inputs.size(); ++k)
    if (!(fn.type(x.inputs[k]) == fn.type(y.inputs[k])))
      return false;
  for (size_t i = x.call->begin, j = y.call->begin; i < x.call->end; ++i, ++j) {
    const Operation &a = fn.ops[i], &b = fn.ops[j];
    if (a.code != b.code || !(a.loc == b.loc) ||
        a.results.size() != b.results.size() || !sameAttrs(a.attrs, b.attrs))
      return false;
    for (size_t r = 0; r < a.results.size(); ++r)
      if (!(fn.type(a.results[r]) == fn.type(b.results[r])))
        return false;
  }
  return true;
}

/// Fills \p c.outputs and \p c.replays from \p needed (per result of the
/// run, whether the caller reads it; the union over the calls of c's kind,
/// so that each call gives the same values): a value a layout op made is
/// made again by the caller (that op replayed after the call), from what
/// the op reads, given in turn; any other is given.
void giveOrReplay(const Function &fn, const std::vector<bool> &needed,
                  Candidate &c) {
  const InlinedCall &call = *c.call;
  std::unordered_map<ValueId, size_t> maker; // the op making each result
  std::vector<ValueId> work;
  for (size_t i = call.begin, j = 0; i < call.end; ++i)
    for (ValueId r : fn.ops[i].results) {
      maker.emplace(r, i);
      if (needed[j++])
        work.push_back(r);
    }
  std::reverse(work.begin(), work.end());
  std::unordered_map<ValueId, bool> given;
  std::vector<bool> replayed(call.end - call.begin, false);
  while (!work.empty()) {
    ValueId v = work.back();
    work.pop_back();
    auto it = maker.find(v);
    if (it == maker.end() || given.count(v))
      continue; // an input of the run, or done
    const Operation &op = fn.ops[it->second];
    if (!isLayout(op.code)) {
      given[v] = true;
      continue;
    }
    given[v] = false;
    replayed[it->second - call.begin] = true;
    for (ValueId x : op.operands)
      work.push_back(x);
  }
  for (size_t i = call.begin; i < call.end; ++i) {
    if (replayed[i - call.begin])
      c.replays.push_back(i);
    for (ValueId r : fn.ops[i].results)
      if (auto g = given.find(r); g != given.end() && g->second)
        c.outputs.push_back(r);
  }
}

/// The run [call.begin, call.end) of \p fn as a candidate, or false when
/// it cannot be a callee (see outlineRepeatedCalls) or later ops read none
/// of its values. \p lastUse[v] is the last op that reads v (the op count
/// for results).
bool makeCandidate(const Function &fn, const InlinedCall &call,
                   const std::vector<size_t> &lastUse, Candidate &out) {
  std::unordered_map<ValueId, uint32_t> local; // the run's values, renumbered
  std::vector<ValueId> results;
  size_t h = call.end - call.begin;
  for (size_t i = call.begin; i < call.end; ++i) {
    const Operation &op = fn.ops[i];
    if (isLoopMarker(op.code) || bindsSizes(op.code) || op.code == OpCode::Call)
      return false;
    h = mix(mix(h, static_cast<size_t>(op.code)), op.loc.line);
    for (ValueId v : op.operands) {
      auto [it, fresh] = local.try_emplace(v, 0);
      if (fresh) {
        out.inputs.push_back(v);
        h = mix(h, hashType(fn.type(v)));
      }
      out.wiring.push_back(it->second); // numbered below, once all are known
    }
    for (ValueId r : op.results) {
      local.emplace(r, 0); // not an input where later ops read it
      results.push_back(r);
      out.needed.push_back(lastUse[r] >= call.end);
      h = mix(h, hashType(fn.type(r)));
    }
  }
  if (std::find(out.needed.begin(), out.needed.end(), true) == out.needed.end())
    return false;
  // Parameters are numbered first, then results, as the callee's values.
  uint32_t next = 0;
  for (ValueId v : out.inputs)
    local[v] = next++;
  for (ValueId r : results)
    local[r] = next++;
  size_t w = 0;
  for (size_t i = call.begin; i < call.end; ++i)
    for (ValueId v : fn.ops[i].operands)
      out.wiring[w++] = local[v];
  for (uint32_t x : out.wiring)
    h = mix(h, x);
  out.call = &call;
  out.hash = h;
  return true;
}

/// The callee that \p c's run becomes (named "f"; the caller renames it).
/// Parameters are made where the run first reads them, as before callees
/// were built only once per kind (their value numbers show in the IR).
Function buildCallee(const Function &fn, const Candidate &c) {
  std::unordered_map<ValueId, ValueId> local;
  Function callee;
  callee.name = "f";
  for (size_t i = c.call->begin; i < c.call->end; ++i) {
    Operation copy = fn.ops[i];
    for (ValueId &v : copy.operands) {
      auto it = local.find(v);
      if (it == local.end()) {
        Param p;
        p.name = "a" + std::to_string(callee.params.size());
        p.value = callee.addValue(fn.type(v), p.name);
        callee.params.push_back(p);
        it = local.emplace(v, p.value).first;
      }
      v = it->second;
    }
    for (ValueId &r : copy.results)
      r = local[r] = callee.addValue(fn.type(r));
    callee.ops.push_back(std::move(copy));
  }
  for (ValueId r : c.outputs)
    callee.results.push_back(local.at(r));
  return callee;
}

/// For each value, the last op that reads it (results: the op count).
std::vector<size_t> lastUses(const Function &fn) {
  std::vector<size_t> last(fn.values.size(), 0);
  for (size_t i = 0; i < fn.ops.size(); ++i)
    for (ValueId v : fn.ops[i].operands)
      last[v] = std::max(last[v], i);
  for (ValueId r : fn.results)
    last[r] = fn.ops.size();
  return last;
}

/// Loop depth before each op (and after the last).
std::vector<int> loopDepths(const Function &fn) {
  std::vector<int> depth(fn.ops.size() + 1, 0);
  for (size_t i = 0; i < fn.ops.size(); ++i)
    depth[i + 1] = depth[i] + (fn.ops[i].code == OpCode::Loop) -
                   (fn.ops[i].code == OpCode::EndLoop);
  return depth;
}

/// The runs of \p candidates that become calls, by where they start:
/// longest first (a call's nested calls are inside it), each where no run
/// already taken overlaps it, then only kinds that keep \p minCalls runs.
/// \p runsOf counts each kind's candidates; \p numOps is the op count.
std::vector<Candidate *> chooseRuns(std::vector<Candidate> &candidates,
                                    const std::vector<size_t> &runsOf,
                                    size_t numOps, size_t minCalls) {
  std::vector<Candidate *> order;
  for (Candidate &c : candidates)
    if (runsOf[c.kind] >= minCalls)
      order.push_back(&c);
  auto length = [](const Candidate *c) {
    return c->call->end - c->call->begin;
  };
  std::stable_sort(order.begin(), order.end(), [&](Candidate *x, Candidate *y) {
    return length(x) != length(y) ? length(x) > length(y)
                                  : x->call->begin < y->call->begin;
  });
  std::vector<bool> covered(numOps, false);
  std::vector<Candidate *> taken;
  std::vector<size_t> takenOf(runsOf.size(), 0);
  for (Candidate *c : order) {
    auto from = covered.begin() + static_cast<std::ptrdiff_t>(c->call->begin),
         to = covered.begin() + static_cast<std::ptrdiff_t>(c->call->end);
    if (std::find(from, to, true) != to)
      continue;
    std::fill(from, to, true);
    taken.push_back(c);
    ++takenOf[c->kind];
  }
  std::erase_if(taken,
                [&](Candidate *c) { return takenOf[c->kind] < minCalls; });
  std::sort(taken.begin(), taken.end(), [](Candidate *x, Candidate *y) {
    return x->call->begin < y->call->begin;
  });
  return taken;
}

} // namespace

size_t outlineRepeatedCalls(Function &fn, const std::vector<InlinedCall> &calls,
                            size_t minOps, size_t minCalls) {
  std::vector<size_t> lastUse = lastUses(fn);
  std::vector<int> depth = loopDepths(fn);
  std::vector<Candidate> candidates;
  std::vector<size_t> runsOf;      // by kind
  std::vector<size_t> firstOfKind; // a candidate of each kind
  std::unordered_map<size_t, std::vector<size_t>> kindsOfHash;
  std::vector<bool> donated(fn.values.size(), false);
  for (const Param &p : fn.params)
    if (!p.isInt && p.donated)
      donated[p.value] = true;
  auto readsDonated = [&](const InlinedCall &call) {
    for (size_t i = call.begin; i < call.end; ++i)
      for (ValueId v : fn.ops[i].operands)
        if (donated[v])
          return true;
    return false;
  };
  for (const InlinedCall &call : calls) {
    if (call.begin >= call.end || call.end > fn.ops.size() ||
        call.end - call.begin < minOps || depth[call.begin] != 0 ||
        readsDonated(call))
      continue;
    Candidate c;
    if (!makeCandidate(fn, call, lastUse, c))
      continue;
    std::vector<size_t> &kinds = kindsOfHash[c.hash];
    auto same = std::find_if(kinds.begin(), kinds.end(), [&](size_t k) {
      return sameCallee(fn, candidates[firstOfKind[k]], c);
    });
    if (same != kinds.end()) {
      c.kind = *same;
    } else {
      c.kind = runsOf.size();
      kinds.push_back(c.kind);
      runsOf.push_back(0);
      firstOfKind.push_back(candidates.size());
    }
    ++runsOf[c.kind];
    candidates.push_back(std::move(c));
  }
  std::vector<Candidate *> taken =
      chooseRuns(candidates, runsOf, fn.ops.size(), minCalls);
  // Each call of a kind gives what any of them needs (a value one call's
  // caller reads and another's does not is given by both; unread, it is
  // dead there).
  std::vector<std::vector<bool>> neededOf(runsOf.size());
  for (const Candidate *c : taken) {
    std::vector<bool> &n = neededOf[c->kind];
    if (n.empty())
      n.assign(c->needed.size(), false);
    for (size_t j = 0; j < n.size(); ++j)
      n[j] = n[j] || c->needed[j];
  }
  for (Candidate *c : taken)
    giveOrReplay(fn, neededOf[c->kind], *c);
  // One callee per kind, numbered in the order of first calls.
  std::map<size_t, std::pair<const Candidate *, int64_t>> starts;
  std::unordered_map<size_t, int64_t> calleeOf;
  std::map<std::string, int> names;
  for (const Candidate *c : taken) {
    auto [it, fresh] =
        calleeOf.emplace(c->kind, static_cast<int64_t>(fn.callees.size()));
    if (fresh) {
      const std::string &source = c->call->callee;
      int seen = names[source]++;
      fn.callees.push_back(buildCallee(fn, *c));
      fn.callees.back().name =
          seen ? source + "_" + std::to_string(seen) : source;
    }
    starts[c->call->begin] = {c, it->second};
  }
  if (starts.empty())
    return 0;
  std::vector<Operation> ops;
  for (size_t i = 0; i < fn.ops.size(); ++i) {
    auto it = starts.find(i);
    if (it == starts.end()) {
      ops.push_back(std::move(fn.ops[i]));
      continue;
    }
    const Candidate &c = *it->second.first;
    Operation call;
    call.code = OpCode::Call;
    call.operands = c.inputs;
    call.results = c.outputs;
    call.attrs["callee"] = it->second.second;
    call.loc = c.call->loc;
    ops.push_back(std::move(call));
    for (size_t k : c.replays) // the callee was built from its own copy
      ops.push_back(std::move(fn.ops[k]));
    i = c.call->end - 1;
  }
  fn.ops = std::move(ops);
  for (Function &callee : fn.callees)
    callee.symbols = fn.symbols;
  return starts.size();
}

void inlineCalls(Function &fn) {
  if (fn.callees.empty())
    return;
  std::vector<Function> callees = std::move(fn.callees);
  fn.callees.clear();
  std::vector<Operation> ops;
  for (Operation &op : fn.ops) {
    if (op.code != OpCode::Call) {
      ops.push_back(std::move(op));
      continue;
    }
    const Function &callee = callees[static_cast<size_t>(op.intAttr("callee"))];
    std::vector<ValueId> map(callee.values.size(), kNoValue);
    for (size_t i = 0; i < callee.params.size(); ++i)
      map[callee.params[i].value] = op.operands[i];
    for (size_t i = 0; i < callee.results.size(); ++i)
      map[callee.results[i]] = op.results[i];
    for (const Operation &inner : callee.ops) {
      Operation copy = inner;
      for (ValueId &v : copy.operands)
        v = map[v];
      for (ValueId &r : copy.results) {
        if (map[r] == kNoValue)
          map[r] = fn.addValue(callee.type(r));
        r = map[r];
      }
      ops.push_back(std::move(copy));
    }
  }
  fn.ops = std::move(ops);
}

} // namespace tsl
