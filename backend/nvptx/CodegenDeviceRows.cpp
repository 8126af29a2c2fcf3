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
  Value *identity =
      op.code == OpCode::ReduceMax   ? llvm::ConstantFP::getInfinity(acc, true)
      : op.code == OpCode::ReduceMin ? llvm::ConstantFP::getInfinity(acc, false)
                                     : llvm::ConstantFP::get(acc, 0.0);
  auto combine = [&](Value *x, Value *y) -> Value * {
    if (op.code == OpCode::ReduceMax)
      return b.CreateBinaryIntrinsic(llvm::Intrinsic::maximum, x, y);
    if (op.code == OpCode::ReduceMin)
      return b.CreateBinaryIntrinsic(llvm::Intrinsic::minimum, x, y);
    return b.CreateFAdd(x, y);
  };
  // This thread's elements: j = tid, tid + blockDim, ...
  llvm::BasicBlock *pre = b.GetInsertBlock();
  auto *header = llvm::BasicBlock::Create(ctx, "rowred", kernel);
  auto *body = llvm::BasicBlock::Create(ctx, "rowredbody", kernel);
  auto *exit = llvm::BasicBlock::Create(ctx, "rowreddone", kernel);
  b.CreateBr(header);
  b.SetInsertPoint(header);
  llvm::PHINode *j = b.CreatePHI(i64, 2);
  llvm::PHINode *a = b.CreatePHI(acc, 2);
  j->addIncoming(deviceThread, pre);
  a->addIncoming(identity, pre);
  b.CreateCondBr(b.CreateICmpSLT(j, n), body, exit);
  b.SetInsertPoint(body);
  std::vector<Value *> idx(shape.size() - 1, b.getInt64(0));
  idx.push_back(j);
  Value *next = combine(a, valueAt(op.operands[0], idx, strides));
  j->addIncoming(b.CreateAdd(j, deviceThreads), b.GetInsertBlock());
  a->addIncoming(next, b.GetInsertBlock());
  b.CreateBr(header);
  b.SetInsertPoint(exit);
  Value *total = blockReduce(a, identity, combine);
  if (op.code == OpCode::ReduceMean)
    total = b.CreateFDiv(total, b.CreateSIToFP(n, acc));
  DType rt = fn.type(op.results[0]).dtype;
  total = roundToStorage(rt, total);
  ValueId r = op.results[0];
  rowScalars[r] = total;
  if (bufs[r]) { // read after the group: thread 0 stores it
    auto *write = llvm::BasicBlock::Create(ctx, "rowstore", kernel);
    auto *done = llvm::BasicBlock::Create(ctx, "rowstored", kernel);
    b.CreateCondBr(b.CreateICmpEQ(deviceThread, b.getInt64(0)), write, done);
    b.SetInsertPoint(write);
    store(rt, bufs[r], b.getInt64(0), total);
    b.CreateBr(done);
    b.SetInsertPoint(done);
  }
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
  Value *rows = b.getInt64(1);
  for (const SymExpr &d : g.lead)
    rows = b.CreateMul(rows, expr(d));
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
        Value *first = gpuBlockIdx(), *step = gpuGridDim();
        Value *count = b.getInt64(1);
        for (const SymExpr &d : g.lead)
          count = b.CreateMul(count, expr(d));
        std::map<ValueId, Value *> rowBase;
        for (ValueId v : used)
          if (bufs[v] && fn.type(v).rank() == g.lead.size() + 1 &&
              std::equal(g.lead.begin(), g.lead.end(), fn.type(v).dims.begin()))
            rowBase[v] = bufs[v];
        llvm::BasicBlock *pre = b.GetInsertBlock();
        auto *header = llvm::BasicBlock::Create(ctx, "rows", kernel);
        auto *loop = llvm::BasicBlock::Create(ctx, "row", kernel);
        auto *exit = llvm::BasicBlock::Create(ctx, "rowsdone", kernel);
        b.CreateBr(header);
        b.SetInsertPoint(header);
        llvm::PHINode *r = b.CreatePHI(i64, 2);
        r->addIncoming(first, pre);
        b.CreateCondBr(b.CreateICmpSLT(r, count), loop, exit);
        b.SetInsertPoint(loop);
        for (auto &[v, base] : rowBase)
          bufs[v] = b.CreateGEP(storageType(fn.type(v).dtype), base,
                                b.CreateMul(r, expr(fn.type(v).dims.back())));
        rowLead = g.lead;
        bool ok = true;
        for (const Operation *op : body) {
          opIndex = static_cast<int32_t>(op - fn.ops.data());
          ok = isReductionOp(op->code) ? rowReduce(*op) : lowerOp(*op);
          if (!ok)
            break;
        }
        rowLead.clear();
        rowScalars.clear();
        for (auto &[v, base] : rowBase)
          bufs[v] = base;
        r->addIncoming(b.CreateAdd(r, step), b.GetInsertBlock());
        b.CreateBr(header);
        b.SetInsertPoint(exit);
        cooperative = false;
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
