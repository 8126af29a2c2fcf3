// Row fusion: a run of elementwise ops and last-axis reductions over the
// same rows becomes one loop over the rows. Softmax, for example, was four
// passes over the whole tensor (max, exp, sum, divide), each streaming it
// through the caches; per row, the passes re-read a row that is still in L1,
// and `exp(x - m)` lives in a row-sized scratch buffer.
#include "backend/common/Codegen.h"

namespace tsl::backend {

bool Codegen::rowShaped(const TensorType &t) const {
  if (rowLead.empty() || t.rank() != rowLead.size() + 1)
    return false;
  return std::equal(rowLead.begin(), rowLead.end(), t.dims.begin());
}

bool Codegen::lowerRowGroup(const RowGroup &g) {
  std::vector<const Operation *> body;
  for (size_t i = g.begin; i < g.end; ++i) {
    const Operation &op = fn.ops[i];
    if (!computedElsewhere(op))
      body.push_back(&op);
  }
  // Results first: full tensors, or a row of scratch (the plan's) per
  // chunk of rows (chunks run on different threads).
  std::map<ValueId, Value *> rowBase; // full buffers, offset per row
  std::set<ValueId> scratch(g.scratch.begin(), g.scratch.end());
  for (ValueId v : scratch)
    if (DType t = fn.type(v).dtype; t == DType::F16 || t == DType::BF16)
      wideScratch.insert(v);
  std::map<ValueId, Value *> scratchBase; // offset per chunk
  for (const Operation *op : body) {
    ValueId v = op->results[0];
    if (!scratch.count(v)) {
      opIndex = static_cast<int32_t>(op - fn.ops.data());
      rowBase[v] = allocateResult(*op);
    }
  }
  ChunkHooks hooks;
  hooks.before = [&](Value *chunks) {
    for (const Operation *op : body)
      if (ValueId v = op->results[0]; scratch.count(v)) {
        opIndex = static_cast<int32_t>(op - fn.ops.data());
        scratchBase[v] =
            allocate(v, b.CreateMul(expr(fn.type(v).dims.back()), chunks));
      }
  };
  hooks.enter = [&](Value *chunk) {
    for (auto &[v, base] : scratchBase)
      bufs[v] = b.CreateGEP(storageType(storedType(v)), base,
                            b.CreateMul(chunk, expr(fn.type(v).dims.back())));
  };
  for (const Operation *op : body) {
    std::vector<ValueId> read;
    for (ValueId o : op->operands)
      leaves(o, read);
    for (ValueId l : read)
      if (fn.type(l).rank() == g.lead.size() + 1 && !rowBase.count(l) &&
          !scratch.count(l) &&
          std::equal(g.lead.begin(), g.lead.end(), fn.type(l).dims.begin()))
        rowBase[l] = bufs[l];
  }
  Value *rows = b.getInt64(1);
  for (const SymExpr &d : g.lead)
    rows = b.CreateMul(rows, expr(d));
  // Work per row: its length times the ops that pass over it.
  Value *work = b.getInt64(static_cast<int64_t>(body.size()));
  for (const Operation *op : body)
    if (const TensorType &t = fn.type(op->results[0]);
        t.rank() == g.lead.size() + 1 && !t.dims.back().isConst(1)) {
      work = b.CreateMul(work, expr(t.dims.back()));
      break;
    }
  bool ok = true;
  hostParallelLoops(
      {rows}, work,
      [&](const std::vector<Value *> &r) {
        for (auto &[v, base] : rowBase)
          bufs[v] =
              b.CreateGEP(storageType(fn.type(v).dtype), base,
                          b.CreateMul(r[0], expr(fn.type(v).dims.back())));
        rowLead = g.lead;
        preallocated = true;
        for (const Operation *op : body) {
          opIndex = static_cast<int32_t>(op - fn.ops.data());
          if (!(ok = lowerOp(*op)))
            break;
        }
        rowLead.clear();
        preallocated = false;
      },
      hooks);
  for (auto &[v, base] : rowBase)
    bufs[v] = base;
  for (auto &[v, base] : scratchBase)
    bufs[v] = base;
  wideScratch.clear();
  // Intermediates die after the row loop, never inside it.
  for (size_t i = g.begin; i < g.end; ++i)
    for (ValueId r : freeAfter[i])
      if (bufs[r])
        freeBuffer(bufs[r]);
  return ok;
}

} // namespace tsl::backend
