// Row fusion: a run of elementwise ops and last-axis reductions over the
// same rows becomes one loop over the rows. Softmax, for example, was four
// passes over the whole tensor (max, exp, sum, divide), each streaming it
// through the caches; per row, the passes re-read a row that is still in L1,
// and `exp(x - m)` lives in a row-sized scratch buffer.
//
// Outputs larger than the last-level cache are streamed: each row is
// written into a row of scratch (in L1) and copied out with non-temporal
// stores (runtime/StreamingStores.cpp), which skip reading each output line
// before writing it. Whether to stream is decided per call from the output
// bytes, so one compiled loop serves both.
#include "backend/common/RuntimeCalls.h"
#include "backend/cpu/CpuCodegen.h"

namespace tsl::backend {

Value *CpuCodegen::chunkRowStride(ValueId v) {
  // Each chunk's row starts on its own 64-byte line, so chunks on different
  // threads never write one line (a row of one element, softmax's max or
  // sum, would otherwise share a line with its neighbours').
  int64_t perLine =
      std::max<int64_t>(1, 64 / static_cast<int64_t>(dtypeSize(storedType(v))));
  Value *len = expr(fn.type(v).dims.back());
  return b.CreateMul(b.CreateUDiv(b.CreateAdd(len, b.getInt64(perLine - 1)),
                                  b.getInt64(perLine)),
                     b.getInt64(perLine));
}

void CpuCodegen::planRowStreaming(const RowGroup &g,
                                  const std::vector<const Operation *> &body,
                                  const std::map<ValueId, Value *> &rowBase,
                                  RowStreaming &s, ChunkHooks &hooks) {
  // Whole rows longer than one element, written by the group.
  Value *outputBytes = b.getInt64(0);
  for (const Operation *op : body)
    if (ValueId v = op->results[0]; rowBase.count(v) &&
                                    fn.type(v).rank() == g.lead.size() + 1 &&
                                    !fn.type(v).dims.back().isConst(1)) {
      s.outputs.push_back(v);
      outputBytes = b.CreateAdd(outputBytes, byteSize(fn.type(v)));
    }
  if (s.outputs.empty())
    return;
  s.stream = b.CreateICmpNE(
      b.CreateCall(runtime(TSL_RT_FN(tsl_rt_stream_output)), {outputBytes}),
      b.getInt32(0));
  auto before = hooks.before;
  hooks.before = [this, &s, before](Value *chunks) {
    if (before)
      before(chunks);
    // Staging rows only for a call that streams: the others pay no
    // allocation.
    for (ValueId v : s.outputs) {
      Value *bytes = b.CreateMul(
          b.CreateMul(chunkRowStride(v), chunks),
          b.getInt64(static_cast<int64_t>(dtypeSize(fn.type(v).dtype))));
      llvm::BasicBlock *skipped = b.GetInsertBlock(), *allocated = nullptr;
      Value *staged = nullptr;
      ifThen(s.stream, [&] {
        staged = allocateBytes(bytes);
        allocated = b.GetInsertBlock();
      });
      llvm::PHINode *base = b.CreatePHI(ptr, 2);
      base->addIncoming(staged, allocated);
      base->addIncoming(llvm::ConstantPointerNull::get(b.getPtrTy()), skipped);
      s.base[v] = base;
    }
  };
  auto enter = hooks.enter;
  hooks.enter = [this, &s, enter](Value *chunk) {
    if (enter)
      enter(chunk);
    for (ValueId v : s.outputs)
      s.row[v] = b.CreateGEP(storageType(fn.type(v).dtype), s.base[v],
                             b.CreateMul(chunk, chunkRowStride(v)));
  };
  hooks.leave = [this, &s] {
    ifThen(s.stream,
           [&] { b.CreateCall(runtime(TSL_RT_FN(tsl_rt_stream_fence))); });
  };
}

void CpuCodegen::streamRows(const RowStreaming &s,
                            const std::map<ValueId, Value *> &outRow) {
  ifThen(s.stream, [&] {
    for (auto &[v, out] : outRow)
      b.CreateCall(runtime(TSL_RT_FN(tsl_rt_stream_row)),
                   {out, s.row.at(v),
                    b.CreateMul(expr(fn.type(v).dims.back()),
                                b.getInt64(static_cast<int64_t>(
                                    dtypeSize(fn.type(v).dtype))))});
  });
}

bool CpuCodegen::lowerRowGroup(const RowGroup &g) {
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
        scratchBase[v] = allocate(v, b.CreateMul(chunkRowStride(v), chunks));
      }
  };
  hooks.enter = [&](Value *chunk) {
    for (auto &[v, base] : scratchBase)
      bufs[v] = b.CreateGEP(storageType(storedType(v)), base,
                            b.CreateMul(chunk, chunkRowStride(v)));
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
  RowStreaming streaming;
  planRowStreaming(g, body, rowBase, streaming, hooks);
  bool ok = true;
  hostParallelLoops(
      {rows}, work,
      [&](const std::vector<Value *> &r) {
        std::map<ValueId, Value *> outRow; // where streamed rows go
        for (auto &[v, base] : rowBase) {
          bufs[v] =
              b.CreateGEP(storageType(fn.type(v).dtype), base,
                          b.CreateMul(r[0], expr(fn.type(v).dims.back())));
          if (streaming.row.count(v)) {
            outRow[v] = bufs[v];
            bufs[v] =
                b.CreateSelect(streaming.stream, streaming.row[v], bufs[v]);
          }
        }
        rowLead = g.lead;
        preallocated = true;
        for (const Operation *op : body) {
          opIndex = static_cast<int32_t>(op - fn.ops.data());
          if (!(ok = lowerOp(*op)))
            break;
        }
        rowLead.clear();
        preallocated = false;
        if (ok && !outRow.empty())
          streamRows(streaming, outRow);
      },
      hooks);
  for (auto &[v, base] : streaming.base)
    freeBuffer(base); // null when the call did not stream: a no-op
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
