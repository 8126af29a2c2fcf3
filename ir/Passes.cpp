#include "ir/Passes.h"

#include <algorithm>

namespace tsl {

size_t eliminateDeadCode(Function &fn) {
  std::vector<bool> used(fn.values.size(), false);
  for (ValueId r : fn.results)
    used[r] = true;
  std::vector<bool> keep(fn.ops.size(), false);
  for (size_t i = fn.ops.size(); i-- > 0;) {
    const Operation &op = fn.ops[i];
    // Only an integer division can fail (by zero); a float one gives inf.
    bool live = hasEffect(op.code) && !(op.code == OpCode::Div &&
                                        isFloat(fn.type(op.results[0]).dtype));
    for (ValueId r : op.results)
      live |= used[r];
    if (!live)
      continue;
    keep[i] = true;
    for (ValueId v : op.operands)
      used[v] = true;
  }
  std::vector<Operation> kept;
  kept.reserve(static_cast<size_t>(std::count(keep.begin(), keep.end(), true)));
  for (size_t i = 0; i < fn.ops.size(); ++i)
    if (keep[i])
      kept.push_back(std::move(fn.ops[i]));
  size_t removed = fn.ops.size() - kept.size();
  fn.ops = std::move(kept);
  return removed;
}

} // namespace tsl
