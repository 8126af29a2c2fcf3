#include "ir/HoistAssertions.h"
#include "ir/LoopHoisting.h"

#include <map>
#include <optional>
#include <string>
#include <type_traits>

namespace tsl {
namespace {

/// Moves every assertion that can leave its innermost loop to just before
/// that loop (one level out); returns how many moved. The first mentions
/// are those of the op list before the pass, which the moves keep valid:
/// an assertion mentions nothing it would move ahead of.
size_t hoistOneLevel(Function &fn, const ShapeEnv *env) {
  std::map<std::string, size_t> first = firstMentions(fn);
  std::vector<size_t> open; // indices of the open loop ops
  std::map<size_t, std::vector<Operation>> before; // by loop op index
  std::vector<bool> moved(fn.ops.size(), false);
  for (size_t i = 0; i < fn.ops.size(); ++i) {
    const Operation &op = fn.ops[i];
    if (op.code == OpCode::Loop)
      open.push_back(i);
    else if (op.code == OpCode::EndLoop)
      open.pop_back();
    if (op.code != OpCode::Assert || open.empty())
      continue;
    size_t loopAt = open.back();
    if (!knownBefore(op.condAttr("cond").symbols(), loopAt, first))
      continue;
    const Operation &loop = fn.ops[loopAt];
    SymCond runs = SymCond::lt(loop.exprAttr("lo"), loop.exprAttr("hi"));
    Operation hoisted = op;
    if (!env || env->prove(runs) != Truth::True)
      hoisted.attrs["cond"] =
          SymCond::disj(SymCond::negate(runs), op.condAttr("cond"));
    before[loopAt].push_back(std::move(hoisted));
    moved[i] = true;
  }
  return insertHoisted(fn, before, moved);
}

} // namespace

size_t hoistLoopInvariantAssertions(Function &fn, const ShapeEnv *env) {
  size_t moved = 0;
  while (size_t n = hoistOneLevel(fn, env))
    moved += n;
  return moved;
}

} // namespace tsl
