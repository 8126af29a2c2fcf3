// Loop-invariant ops moved before their loop (HoistInvariantOps.h).
#include "ir/HoistInvariantOps.h"
#include "ir/LoopHoisting.h"
#include "ir/OpInfo.h"

#include <set>

namespace tsl {
namespace {

/// Whether \p op, in the body of the loop op at index \p loopAt, computes
/// the same value in every iteration (its operands defined before the loop
/// or \p hoisted, its sizes known before the loop).
bool isInvariant(const Function &fn, const Operation &op, size_t loopAt,
                 const std::vector<size_t> &definedAt,
                 const std::set<ValueId> &hoisted,
                 const std::map<std::string, size_t> &first) {
  for (ValueId o : op.operands)
    if (definedAt[o] > loopAt && !hoisted.count(o))
      return false;
  for (const auto &[name, attr] : op.attrs)
    if (!knownBefore(attrSymbols(attr), loopAt, first))
      return false;
  for (ValueId r : op.results)
    for (const SymExpr &d : fn.type(r).dims)
      if (!knownBefore(d.symbols(), loopAt, first))
        return false;
  return true;
}

/// Moves every op that can leave its innermost loop to just before that
/// loop (one level out); returns how many moved.
size_t hoistOneLevel(Function &fn, const ShapeEnv *env) {
  std::map<std::string, size_t> first = firstMentions(fn);
  // 1 + the index of the op defining each value, 0 for parameters: a
  // value is defined before op i when this is at most i.
  std::vector<size_t> definedAt(fn.values.size(), 0);
  for (size_t i = 0; i < fn.ops.size(); ++i)
    for (ValueId r : fn.ops[i].results)
      definedAt[r] = i + 1;
  std::vector<size_t> open; // indices of the open loop ops
  std::map<size_t, std::vector<Operation>> before; // by loop op index
  std::set<ValueId> hoisted;                       // results of moved ops
  std::vector<bool> moved(fn.ops.size(), false);
  for (size_t i = 0; i < fn.ops.size(); ++i) {
    const Operation &op = fn.ops[i];
    if (op.code == OpCode::Loop)
      open.push_back(i);
    else if (op.code == OpCode::EndLoop)
      open.pop_back();
    if (open.empty() || op.code == OpCode::Assert || bindsSizes(op.code) ||
        isLoopMarker(op.code))
      continue;
    size_t loopAt = open.back();
    if (!isInvariant(fn, op, loopAt, definedAt, hoisted, first))
      continue;
    if (mayFail(op.code)) {
      const Operation &loop = fn.ops[loopAt];
      if (!env || env->prove(SymCond::lt(loop.exprAttr("lo"),
                                         loop.exprAttr("hi"))) != Truth::True)
        continue;
    }
    before[loopAt].push_back(op);
    hoisted.insert(op.results.begin(), op.results.end());
    moved[i] = true;
  }
  return insertHoisted(fn, before, moved);
}

} // namespace

size_t hoistLoopInvariantOps(Function &fn, const ShapeEnv *env) {
  size_t moved = 0;
  while (size_t n = hoistOneLevel(fn, env))
    moved += n;
  return moved;
}

} // namespace tsl
