// Outlining repeated inlined calls into callees, and inlining them again
// (ir/OutlineCalls.h).
#include "ir/OutlineCalls.h"
#include "ir/IrText.h"

#include <algorithm>
#include <limits>
#include <map>
#include <unordered_map>

namespace tsl {

namespace {

constexpr ValueId kNoValue = std::numeric_limits<ValueId>::max();

/// One run that may become a call: its callee as it would be (ops
/// renumbered) and the caller's values it reads and gives.
struct Candidate {
  const InlinedCall *call = nullptr;
  Function callee;
  std::vector<ValueId> inputs, outputs;
  std::string key; ///< the callee's text: equal text, equal callee
};

/// The run [call.begin, call.end) of \p fn as a callee, or false when it
/// cannot be one (see outlineRepeatedCalls). \p lastUse[v] is the last op
/// that reads v (the op count for results).
bool makeCandidate(const Function &fn, const InlinedCall &call,
                   const std::vector<size_t> &lastUse, Candidate &out) {
  std::unordered_map<ValueId, ValueId> local; // the run's values, renumbered
  Function &callee = out.callee;
  callee.name = "f";
  auto input = [&](ValueId v) {
    if (auto it = local.find(v); it != local.end())
      return it->second;
    std::string name = "a" + std::to_string(callee.params.size());
    Param p;
    p.name = name;
    p.value = local[v] = callee.addValue(fn.type(v), name);
    callee.params.push_back(p);
    out.inputs.push_back(v);
    return local[v];
  };
  for (size_t i = call.begin; i < call.end; ++i) {
    const Operation &op = fn.ops[i];
    if (isLoopMarker(op.code) || bindsSizes(op.code) || op.code == OpCode::Call)
      return false;
    Operation copy = op;
    for (ValueId &v : copy.operands)
      v = input(v);
    for (ValueId &r : copy.results) {
      ValueId id = callee.addValue(fn.type(r));
      local[r] = id;
      if (lastUse[r] >= call.end) {
        // A layout op's result may be a view of its operand: the caller
        // could free the operand while the view lives.
        if (isLayout(op.code))
          return false;
        out.outputs.push_back(r);
        callee.results.push_back(id);
      }
      r = id;
    }
    callee.ops.push_back(std::move(copy));
  }
  if (out.outputs.empty())
    return false;
  out.call = &call;
  out.key = printFunction(callee);
  return true;
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
/// already taken overlaps it, then only texts that keep \p minCalls runs.
/// \p runsOf counts each text's candidates; \p numOps is the op count.
std::vector<Candidate *> chooseRuns(std::vector<Candidate> &candidates,
                                    const std::map<std::string, size_t> &runsOf,
                                    size_t numOps, size_t minCalls) {
  std::vector<Candidate *> order;
  for (Candidate &c : candidates)
    if (runsOf.at(c.key) >= minCalls)
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
  std::map<std::string, size_t> takenOf;
  for (Candidate *c : order) {
    auto from = covered.begin() + static_cast<std::ptrdiff_t>(c->call->begin),
         to = covered.begin() + static_cast<std::ptrdiff_t>(c->call->end);
    if (std::find(from, to, true) != to)
      continue;
    std::fill(from, to, true);
    taken.push_back(c);
    ++takenOf[c->key];
  }
  std::erase_if(taken,
                [&](Candidate *c) { return takenOf[c->key] < minCalls; });
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
  std::map<std::string, size_t> runsOf;
  for (const InlinedCall &call : calls) {
    if (call.begin >= call.end || call.end > fn.ops.size() ||
        call.end - call.begin < minOps || depth[call.begin] != 0)
      continue;
    Candidate c;
    if (!makeCandidate(fn, call, lastUse, c))
      continue;
    ++runsOf[c.key];
    candidates.push_back(std::move(c));
  }
  std::vector<Candidate *> taken =
      chooseRuns(candidates, runsOf, fn.ops.size(), minCalls);
  // One callee per text, numbered in the order of first calls.
  std::map<size_t, std::pair<const Candidate *, int64_t>> starts;
  std::map<std::string, int64_t> calleeOf;
  std::map<std::string, int> names;
  for (const Candidate *c : taken) {
    auto [it, fresh] =
        calleeOf.emplace(c->key, static_cast<int64_t>(fn.callees.size()));
    if (fresh) {
      const std::string &source = c->call->callee;
      int seen = names[source]++;
      fn.callees.push_back(c->callee);
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
