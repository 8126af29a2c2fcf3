// Device mode: a row group (KernelPlan.h) as one kernel with a block per
// row. Softmax, log_softmax and layer_norm each become one kernel: the
// block's threads stride over the row's elements for every op in turn
// (thread t always takes elements t, t + blockDim, ...), and a reduction
// combines the threads' partial results through warp shuffles and shared
// memory (blockReduce) into a value every thread keeps in a register. The
// plan recomputes elementwise intermediates where they are read
// (TargetCaps::rowGroupsRecompute), so nothing but reductions crosses
// threads and a row is read from memory once per pass.
#include "backend/common/Codegen.h"

namespace tsl::backend {

Value *Codegen::rowThreads(Value *n) {
  // About four elements per thread, whole warps, 32 to 1024 threads.
  Value *perThread = b.CreateSDiv(b.CreateAdd(n, b.getInt64(3)), b.getInt64(4));
  Value *warps =
      b.CreateSDiv(b.CreateAdd(perThread, b.getInt64(31)), b.getInt64(32));
  warps = b.CreateBinaryIntrinsic(llvm::Intrinsic::smax, warps, b.getInt64(1));
  warps = b.CreateBinaryIntrinsic(llvm::Intrinsic::smin, warps, b.getInt64(32));
  return b.CreateTrunc(b.CreateMul(warps, b.getInt64(32)), i32);
}

bool Codegen::rowReduce(const Operation &op) {
  const TensorType &in = fn.type(op.operands[0]);
  DType t = in.dtype;
  llvm::Type *acc = computeType(t);
  std::vector<Value *> shape = dims(in); // [1, ..., 1, n]
  Value *n = shape.back();
  std::map<ValueId, std::vector<Value *>> strides;
  leafStrides(op.operands[0], shape, in.dims, strides);
  Value *identity = reductionIdentity(op.code, t);
  auto combine = [&](Value *x, Value *y) {
    return reductionStep(op.code, x, y);
  };
  // This thread's elements: j = tid, tid + blockDim, ...
  Value *partial = entryAlloca(acc);
  b.CreateStore(identity, partial);
  stridedLoop(deviceThread, n, deviceThreads, [&](Value *j) {
    std::vector<Value *> idx(shape.size() - 1, b.getInt64(0));
    idx.push_back(j);
    b.CreateStore(combine(b.CreateLoad(acc, partial),
                          valueAt(op.operands[0], idx, strides)),
                  partial);
  });
  Value *total = blockReduce(b.CreateLoad(acc, partial), identity, combine);
  if (op.code == OpCode::ReduceMean)
    total = b.CreateFDiv(total, b.CreateSIToFP(n, acc));
  DType rt = fn.type(op.results[0]).dtype;
  total = roundToStorage(rt, total);
  ValueId r = op.results[0];
  rowScalars[r] = total;
  if (bufs[r]) // read after the group: thread 0 stores it
    onThreadZero([&] { store(rt, bufs[r], b.getInt64(0), total); });
  return true;
}

bool Codegen::launchRowGroup(const RowGroup &g) {
  std::vector<const Operation *> body;
  for (size_t i = g.begin; i < g.end; ++i)
    if (!computedElsewhere(fn.ops[i]))
      body.push_back(&fn.ops[i]);
  // Host: results that outlive the group in device memory; the group's
  // reductions read only inside it live in registers.
  std::set<ValueId> scratch(g.scratch.begin(), g.scratch.end());
  std::vector<ValueId> used, slots;
  for (const Operation *op : body) {
    opIndex = static_cast<int32_t>(op - fn.ops.data());
    ValueId v = op->results[0];
    if (!scratch.count(v)) {
      allocateResult(*op);
      used.push_back(v);
    }
    for (ValueId o : op->operands)
      leaves(o, used);
  }
  auto rowCount = [&] {
    Value *rows = b.getInt64(1);
    for (const SymExpr &d : g.lead)
      rows = b.CreateMul(rows, expr(d));
    return rows;
  };
  Value *rows = rowCount();
  const TensorType &rowType = fn.type(body.front()->operands[0]);
  Value *n = expr(rowType.dims.back());
  opIndex = static_cast<int32_t>(g.begin);
  int32_t k = emitDeviceKernel(
      used,
      [&] {
        cooperative = true;
        // The block's threads share each row; blocks stride over rows.
        deviceThread = gpuThreadIdx();
        deviceThreads = gpuBlockDim();
        rowLead = g.lead;
        std::map<ValueId, Value *> rowBase;
        for (ValueId v : used)
          if (bufs[v] && rowShaped(fn.type(v)))
            rowBase[v] = bufs[v];
        bool ok = true;
        blockStrideLoop(rowCount(), [&](Value *r) {
          for (auto &[v, base] : rowBase)
            bufs[v] = b.CreateGEP(storageType(fn.type(v).dtype), base,
                                  b.CreateMul(r, expr(fn.type(v).dims.back())));
          for (const Operation *op : body) {
            opIndex = static_cast<int32_t>(op - fn.ops.data());
            if (!(ok = isReductionOp(op->code) ? rowReduce(*op) : lowerOp(*op)))
              break;
          }
          rowScalars.clear();
        });
        rowLead.clear();
        for (auto &[v, base] : rowBase)
          bufs[v] = base;
        return ok;
      },
      slots);
  if (k < 0)
    return false;
  // 32 slots of 8 bytes: blockReduce's.
  emitLaunch(k, slots, {rows, rowThreads(n), 32 * 8});
  for (size_t i = g.begin; i < g.end; ++i)
    for (ValueId v : freeAfter[i])
      if (bufs[v])
        freeBuffer(bufs[v]);
  return true;
}

} // namespace tsl::backend
