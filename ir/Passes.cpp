#include "ir/Passes.h"

#include <algorithm>

namespace tsl {

std::optional<std::vector<SymExpr>>
broadcastDims(const std::vector<SymExpr> &a, const std::vector<SymExpr> &b) {
  std::vector<SymExpr> out(std::max(a.size(), b.size()), SymExpr(1));
  for (size_t i = 0; i < out.size(); ++i) {
    SymExpr x = i < a.size() ? a[a.size() - 1 - i] : SymExpr(1);
    SymExpr y = i < b.size() ? b[b.size() - 1 - i] : SymExpr(1);
    if (x == y || y.isConst(1))
      out[out.size() - 1 - i] = x;
    else if (x.isConst(1))
      out[out.size() - 1 - i] = y;
    else
      return std::nullopt;
  }
  return out;
}

bool hasEffect(const Function &fn, const Operation &op) {
  // Only an integer division can fail (by zero); a float one gives inf.
  return hasEffect(op.code) &&
         !(op.code == OpCode::Div && isFloat(fn.type(op.results[0]).dtype));
}

size_t eliminateDeadCode(Function &fn) {
  std::vector<bool> used(fn.values.size(), false);
  for (ValueId r : fn.results)
    used[r] = true;
  std::vector<bool> keep(fn.ops.size(), false);
  for (size_t i = fn.ops.size(); i-- > 0;) {
    const Operation &op = fn.ops[i];
    bool live = hasEffect(fn, op);
    for (ValueId r : op.results)
      live |= used[r];
    if (!live)
      continue;
    keep[i] = true;
    for (ValueId v : op.operands)
      used[v] = true;
  }
  // Compact in place: a copy of a large function's ops was the peak of
  // `tslc check` (issue 31).
  size_t out = 0;
  for (size_t i = 0; i < fn.ops.size(); ++i)
    if (keep[i]) {
      if (out != i)
        fn.ops[out] = std::move(fn.ops[i]);
      ++out;
    }
  size_t removed = fn.ops.size() - out;
  fn.ops.erase(fn.ops.begin() + static_cast<std::ptrdiff_t>(out), fn.ops.end());
  return removed;
}

} // namespace tsl
