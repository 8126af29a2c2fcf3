// Row fusion: a run of elementwise ops and last-axis reductions over the
// same rows becomes one loop over the rows. Softmax, for example, was four
// passes over the whole tensor (max, exp, sum, divide), each streaming it
// through the caches; per row, the passes re-read a row that is still in L1,
// and `exp(x - m)` lives in a row-sized scratch buffer.
#include "backend/common/Codegen.h"

namespace tsl::cpu {

namespace {
constexpr size_t kMaxRowGroupOps = 64; // bounds the loop body's size
} // namespace

bool Codegen::rowShaped(const TensorType &t) const {
  if (rowLead.empty() || t.rank() != rowLead.size() + 1)
    return false;
  return std::equal(rowLead.begin(), rowLead.end(), t.dims.begin());
}

void Codegen::leaves(ValueId v, std::vector<ValueId> &out) const {
  if (!inlined[v]) {
    out.push_back(v);
    return;
  }
  for (ValueId o : producer[v]->operands)
    leaves(o, out);
}

void Codegen::planRowGroups() {
  size_t n = fn.ops.size();
  rowGroups.assign(n, RowGroup());
  auto sameLead = [](const TensorType &t, const std::vector<SymExpr> &lead) {
    return t.rank() == lead.size() + 1 &&
           std::equal(lead.begin(), lead.end(), t.dims.begin());
  };
  // The last op that reads each value (through fused trees): a value only
  // read inside its group can live in per-row scratch.
  lastReader.assign(fn.values.size(), -1);
  for (size_t k = 0; k < n; ++k) {
    if (!!computedElsewhere(fn.ops[k]))
      continue;
    std::vector<ValueId> read;
    for (ValueId o : fn.ops[k].operands)
      leaves(o, read);
    for (ValueId l : read)
      lastReader[l] = static_cast<int>(k);
  }
  size_t i = 0;
  while (i < n) {
    // The rows are the leading dims of the first op's result.
    const Operation &first = fn.ops[i];
    std::vector<SymExpr> lead;
    if (!computedElsewhere(first) && first.results.size() == 1 &&
        fn.type(first.results[0]).rank() >= 2) {
      const TensorType &t = fn.type(first.results[0]);
      lead.assign(t.dims.begin(), t.dims.end() - 1);
    }
    size_t j = i, count = 0, reductions = 0;
    while (!lead.empty() && j < n && count < kMaxRowGroupOps) {
      const Operation &op = fn.ops[j];
      if (computedElsewhere(op)) { // computed inside its consumer
        ++j;
        continue;
      }
      bool reduction = false;
      if (op.results.size() != 1 || !sameLead(fn.type(op.results[0]), lead))
        break;
      if (op.code == OpCode::ReduceSum || op.code == OpCode::ReduceMean ||
          op.code == OpCode::ReduceMax || op.code == OpCode::ReduceMin) {
        const TensorType &in = fn.type(op.operands[0]);
        const auto &axes = op.intsAttr("axes");
        // Only what reduceLastAxis lowers: one float row into a register.
        if (!isFloat(in.dtype) || !sameLead(in, lead) || axes.size() != 1 ||
            axes[0] != static_cast<int64_t>(in.rank()) - 1)
          break;
        reduction = true;
      } else if (!isElementwise(op.code) || op.code == OpCode::Constant ||
                 op.code == OpCode::SymScalar) {
        break;
      }
      // Everything read must be rows too, or the same for every row.
      std::vector<ValueId> read;
      for (ValueId o : op.operands)
        leaves(o, read);
      bool ok = true;
      for (ValueId l : read)
        ok &= sameLead(fn.type(l), lead) || fn.type(l).rank() <= 1;
      if (!ok)
        break;
      reductions += reduction;
      ++count;
      ++j;
    }
    // (Not in GPU variants, where a row's scratch would be shared by
    // threads, nor when ops are outlined one by one.)
    if (!options.device && !outlining && reductions > 0 && count >= 2) {
      rowGroups[i] = {i, j, lead};
      i = j;
    } else {
      ++i;
    }
  }
}

bool Codegen::lowerRowGroup(const RowGroup &g) {
  std::set<ValueId> results(fn.results.begin(), fn.results.end());
  std::vector<const Operation *> body;
  for (size_t i = g.begin; i < g.end; ++i) {
    const Operation &op = fn.ops[i];
    if (!computedElsewhere(op))
      body.push_back(&op);
  }
  auto readOutside = [&](ValueId v) {
    return lastReader[v] >= static_cast<int>(g.end);
  };
  // Results first: full tensors, or a row of scratch.
  std::map<ValueId, Value *> rowBase; // full buffers, offset per row
  std::set<ValueId> scratch;          // one row, the same for every row
  for (const Operation *op : body) {
    opIndex = static_cast<int32_t>(op - fn.ops.data());
    ValueId v = op->results[0];
    if (!results.count(v) && !readOutside(v)) {
      allocate(v, expr(fn.type(v).dims.back()));
      scratch.insert(v);
    } else {
      rowBase[v] = allocateResult(*op);
    }
  }
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
  bool ok = true;
  loops({rows}, [&](const std::vector<Value *> &r) {
    for (auto &[v, base] : rowBase)
      bufs[v] = b.CreateGEP(storageType(fn.type(v).dtype), base,
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
  });
  for (auto &[v, base] : rowBase)
    bufs[v] = base;
  // Intermediates die after the row loop, never inside it.
  for (size_t i = g.begin; i < g.end; ++i)
    for (ValueId r : freeAfter[i])
      if (bufs[r])
        freeBuffer(bufs[r]);
  return ok;
}

} // namespace tsl::cpu
