// The fold-broadcasts pass (ir/FoldBroadcasts.h).
#include "ir/FoldBroadcasts.h"

#include "ir/OpInfo.h"
#include "ir/Passes.h"

namespace tsl {

namespace {

/// Whether \p operands broadcast to exactly \p dims.
bool broadcastsTo(const Function &fn, const std::vector<ValueId> &operands,
                  const std::vector<SymExpr> &dims) {
  std::vector<SymExpr> out;
  for (ValueId v : operands) {
    auto d = broadcastDims(out, fn.type(v).dims);
    if (!d)
      return false;
    out = std::move(*d);
  }
  return out == dims;
}

} // namespace

size_t foldBroadcasts(Function &fn) {
  std::vector<const Operation *> producer(fn.values.size(), nullptr);
  size_t count = 0;
  for (Operation &op : fn.ops) {
    if (isElementwise(op.code) && op.operands.size() >= 2) {
      const std::vector<SymExpr> &dims = fn.type(op.results[0]).dims;
      for (size_t i = 0; i < op.operands.size(); ++i) {
        const Operation *p = producer[op.operands[i]];
        if (!p || p->code != OpCode::Expand)
          continue;
        std::vector<ValueId> folded = op.operands;
        folded[i] = p->operands[0];
        if (broadcastsTo(fn, folded, dims)) {
          op.operands = std::move(folded);
          ++count;
        }
      }
    }
    for (ValueId r : op.results)
      producer[r] = &op;
  }
  return count;
}

} // namespace tsl
