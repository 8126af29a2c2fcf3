// The merge-replay-loops pass (ir/MergeReplayLoops.h): a forward loop whose
// carried values a later loop (a gradient's replay) recomputes the same way
// is dropped, its results read from the replay. Sizes and attributes
// compare as values: expressions are interned, so equal ones are one node.
#include "ir/MergeReplayLoops.h"

#include "ir/OpInfo.h"
#include "ir/Passes.h"
#include "ir/SubstituteAttr.h"

#include <map>
#include <unordered_map>
#include <unordered_set>

namespace tsl {

namespace {

using Subst = std::map<std::string, SymExpr>;

/// The top-level loops of \p ops: [loop op, end_loop op] index pairs.
std::vector<std::pair<size_t, size_t>>
topLevelLoops(const std::vector<Operation> &ops) {
  std::vector<std::pair<size_t, size_t>> out;
  size_t depth = 0, begin = 0;
  for (size_t i = 0; i < ops.size(); ++i) {
    if (ops[i].code == OpCode::Loop && depth++ == 0)
      begin = i;
    else if (ops[i].code == OpCode::EndLoop && depth > 0 && --depth == 0)
      out.push_back({begin, i});
  }
  return out;
}

/// Where each value an op strictly inside [begin, end] defines comes from:
/// (op index, result index).
std::unordered_map<ValueId, std::pair<size_t, size_t>>
definitions(const std::vector<Operation> &ops, size_t begin, size_t end) {
  std::unordered_map<ValueId, std::pair<size_t, size_t>> defs;
  for (size_t i = begin + 1; i < end; ++i)
    for (size_t r = 0; r < ops[i].results.size(); ++r)
      defs[ops[i].results[r]] = {i, r};
  return defs;
}

/// Whether values of loop P's body are computed as values of loop R's
/// body: the same ops (P's loop symbol read as R's) over the same outside
/// values, P's carried value k being R's carried value k.
class BodyMatcher {
public:
  BodyMatcher(const Function &fn, size_t p, size_t pe, size_t r, size_t re)
      : fn_(fn), p_(fn.ops[p]), r_(fn.ops[r]), inP_(definitions(fn.ops, p, pe)),
        inR_(definitions(fn.ops, r, re)) {
    subst_[p_.exprAttr("sym").str()] = r_.exprAttr("sym");
  }

  bool same(ValueId a, ValueId b) {
    auto key = std::make_pair(a, b);
    if (auto it = memo_.find(key); it != memo_.end())
      return it->second;
    bool result = compare(a, b);
    memo_[key] = result;
    return result;
  }

private:
  bool compare(ValueId a, ValueId b) {
    for (size_t k = 0; k < p_.results.size(); ++k)
      if (a == p_.results[k])
        return k < r_.results.size() && b == r_.results[k];
    auto da = inP_.find(a);
    if (da == inP_.end()) // from outside P: the same value
      return a == b;
    auto db = inR_.find(b);
    if (db == inR_.end() || da->second.second != db->second.second)
      return false;
    const Operation &x = fn_.ops[da->second.first],
                    &y = fn_.ops[db->second.first];
    if (x.code != y.code || x.operands.size() != y.operands.size() ||
        x.attrs.size() != y.attrs.size() || !sameType(a, b))
      return false;
    for (auto ix = x.attrs.begin(), iy = y.attrs.begin(); ix != x.attrs.end();
         ++ix, ++iy)
      if (ix->first != iy->first ||
          !(substituted(ix->second, subst_) == iy->second))
        return false;
    for (size_t i = 0; i < x.operands.size(); ++i)
      if (!same(x.operands[i], y.operands[i]))
        return false;
    return true;
  }

  bool sameType(ValueId a, ValueId b) const {
    const TensorType &ta = fn_.type(a), &tb = fn_.type(b);
    if (ta.dtype != tb.dtype || ta.dims.size() != tb.dims.size())
      return false;
    for (size_t i = 0; i < ta.dims.size(); ++i)
      if (!(ta.dims[i].substitute(subst_) == tb.dims[i]))
        return false;
    return true;
  }

  const Function &fn_;
  const Operation &p_, &r_;
  std::unordered_map<ValueId, std::pair<size_t, size_t>> inP_, inR_;
  Subst subst_;
  std::map<std::pair<ValueId, ValueId>, bool> memo_;
};

/// Whether loop R ([r, re]) recomputes loop P's ([p, pe]) carried values:
/// the same range, P's initial values first among R's, the same body ops,
/// and no effect in P's body that dropping it would lose.
bool replays(const Function &fn, size_t p, size_t pe, size_t r, size_t re) {
  const Operation &lp = fn.ops[p], &lr = fn.ops[r];
  if (!(lp.exprAttr("lo") == lr.exprAttr("lo")) ||
      !(lp.exprAttr("hi") == lr.exprAttr("hi")) ||
      lr.operands.size() < lp.operands.size())
    return false;
  for (size_t k = 0; k < lp.operands.size(); ++k)
    if (lp.operands[k] != lr.operands[k])
      return false;
  for (size_t i = p + 1; i < pe; ++i)
    if (hasEffect(fn, fn.ops[i]))
      return false;
  BodyMatcher match(fn, p, pe, r, re);
  for (size_t k = 0; k < fn.ops[pe].operands.size(); ++k)
    if (!match.same(fn.ops[pe].operands[k], fn.ops[re].operands[k]))
      return false;
  return true;
}

/// Removes P ([p, pe]) in favour of R ([r, re]) when R and what it reads do
/// not depend on P's results: the ops between them that do move to after
/// R. False (nothing changed) otherwise.
bool mergeInto(Function &fn, size_t p, size_t pe, size_t r, size_t re) {
  std::vector<Operation> &ops = fn.ops;
  std::unordered_set<ValueId> late(ops[pe].results.begin(),
                                   ops[pe].results.end());
  // The units (ops, whole inner loops) between the loops, and whether each
  // reads P's results (directly or through an earlier such unit).
  std::vector<std::pair<size_t, size_t>> units;
  std::vector<bool> after;
  for (size_t i = pe + 1; i < r;) {
    size_t end = i, depth = 0;
    for (size_t j = i; j < r; ++j) {
      depth += ops[j].code == OpCode::Loop;
      depth -= ops[j].code == OpCode::EndLoop;
      end = j;
      if (depth == 0)
        break;
    }
    bool reads = false;
    for (size_t j = i; j <= end && !reads; ++j)
      for (ValueId v : ops[j].operands)
        reads = reads || late.count(v);
    if (reads)
      for (size_t j = i; j <= end; ++j)
        late.insert(ops[j].results.begin(), ops[j].results.end());
    units.push_back({i, end});
    after.push_back(reads);
    i = end + 1;
  }
  for (size_t j = r; j <= re; ++j)
    for (ValueId v : ops[j].operands)
      if (late.count(v))
        return false;
  std::unordered_map<ValueId, ValueId> rename;
  for (size_t k = 0; k < ops[pe].results.size(); ++k)
    rename[ops[pe].results[k]] = ops[re].results[k];
  std::vector<Operation> out(ops.begin(), ops.begin() + p);
  for (bool reading : {false, true}) {
    for (size_t u = 0; u < units.size(); ++u)
      if (after[u] == reading)
        out.insert(out.end(), ops.begin() + units[u].first,
                   ops.begin() + units[u].second + 1);
    if (!reading)
      out.insert(out.end(), ops.begin() + r, ops.begin() + re + 1);
  }
  out.insert(out.end(), ops.begin() + re + 1, ops.end());
  for (Operation &op : out)
    for (ValueId &v : op.operands)
      if (auto it = rename.find(v); it != rename.end())
        v = it->second;
  for (ValueId &v : fn.results)
    if (auto it = rename.find(v); it != rename.end())
      v = it->second;
  ops = std::move(out);
  return true;
}

/// Merges one pair; false when no pair merges.
bool mergeOne(Function &fn) {
  std::vector<std::pair<size_t, size_t>> loops = topLevelLoops(fn.ops);
  for (size_t a = 0; a < loops.size(); ++a)
    for (size_t b = a + 1; b < loops.size(); ++b) {
      auto [p, pe] = loops[a];
      auto [r, re] = loops[b];
      if (replays(fn, p, pe, r, re) && mergeInto(fn, p, pe, r, re))
        return true;
    }
  return false;
}

} // namespace

size_t mergeReplayLoops(Function &fn) {
  size_t merged = 0;
  while (mergeOne(fn))
    ++merged;
  return merged;
}

} // namespace tsl
