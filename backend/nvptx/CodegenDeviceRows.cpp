// Device mode: a row group (KernelPlan.h) as one kernel with a block per
// row. Softmax, log_softmax and layer_norm each become one kernel: the
// block's threads stride over the row's elements for every op in turn
// (thread t always takes elements t, t + blockDim, ...), and a reduction
// combines the threads' partial results through warp shuffles and shared
// memory (blockReduce) into a value every thread keeps in a register. The
// plan recomputes elementwise intermediates where they are read
// (TargetCaps::rowGroupsRecompute), so nothing but reductions crosses
// threads and a row is read from memory once per pass.
//
// Short rows (at most kWarpRowElements) take a warp each instead: a block
// of kWarpRowBlock threads holds several rows, and a reduction is a shuffle
// butterfly with no shared memory and no barrier, so a block is not left
// mostly idle and warps of a block never wait for each other. The choice is
// made at run time from the row length (uniform over the grid), so one
// kernel serves every length.
#include "backend/nvptx/DeviceCodegen.h"

namespace tsl::backend {

/// Rows up to this long take a warp each (about 8 elements per lane).
static constexpr int64_t kWarpRowElements = 256;
/// Threads of a block of warp-per-row rows (8 rows).
static constexpr int64_t kWarpRowBlock = 256;

Value *DeviceCodegen::rowUsesWarp(Value *n) {
  return b.CreateICmpSLE(n, b.getInt64(kWarpRowElements));
}

Value *DeviceCodegen::rowThreads(Value *n) {
  // About four elements per thread, whole warps, 32 to 1024 threads.
  Value *perThread = b.CreateSDiv(b.CreateAdd(n, b.getInt64(3)), b.getInt64(4));
  Value *warps =
      b.CreateSDiv(b.CreateAdd(perThread, b.getInt64(31)), b.getInt64(32));
  warps = b.CreateBinaryIntrinsic(llvm::Intrinsic::smax, warps, b.getInt64(1));
  warps = b.CreateBinaryIntrinsic(llvm::Intrinsic::smin, warps, b.getInt64(32));
  return b.CreateTrunc(b.CreateMul(warps, b.getInt64(32)), i32);
}

bool DeviceCodegen::rowReduce(const Operation &op) {
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
  Value *mine = b.CreateLoad(acc, partial);
  // Warp or block: a branch uniform over the grid, so every thread of a
  // block takes the same side and the block's barriers stay matched.
  llvm::BasicBlock *warpSide = llvm::BasicBlock::Create(ctx, "rowwarp", kernel);
  llvm::BasicBlock *blockSide =
      llvm::BasicBlock::Create(ctx, "rowblock", kernel);
  llvm::BasicBlock *joined = llvm::BasicBlock::Create(ctx, "rowjoin", kernel);
  b.CreateCondBr(rowWarp, warpSide, blockSide);
  b.SetInsertPoint(warpSide);
  Value *byWarp = warpReduce(mine, combine);
  llvm::BasicBlock *warpEnd = b.GetInsertBlock();
  b.CreateBr(joined);
  b.SetInsertPoint(blockSide);
  Value *byBlock = blockReduce(mine, identity, combine);
  llvm::BasicBlock *blockEnd = b.GetInsertBlock();
  b.CreateBr(joined);
  b.SetInsertPoint(joined);
  llvm::PHINode *total = b.CreatePHI(acc, 2);
  total->addIncoming(byWarp, warpEnd);
  total->addIncoming(byBlock, blockEnd);
  Value *result = total;
  if (op.code == OpCode::ReduceMean)
    result = b.CreateFDiv(result, b.CreateSIToFP(n, acc));
  DType rt = fn.type(op.results[0]).dtype;
  result = roundToStorage(rt, result);
  ValueId r = op.results[0];
  rowScalars[r] = result;
  if (bufs[r]) // read after the group: the row's first thread stores it
    ifThen(b.CreateICmpEQ(deviceThread, b.getInt64(0)),
           [&] { store(rt, bufs[r], b.getInt64(0), result); });
  return true;
}

bool DeviceCodegen::launchRowGroup(const RowGroup &g) {
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
        // A row's threads: a warp, or the whole block; the block's rows
        // (several warps, or one) stride over the rows together.
        rowWarp = rowUsesWarp(expr(rowType.dims.back()));
        Value *tid = gpuThreadIdx();
        Value *warp = b.CreateLShr(tid, b.getInt64(5));
        deviceThread =
            b.CreateSelect(rowWarp, b.CreateAnd(tid, b.getInt64(31)), tid);
        deviceThreads = b.CreateSelect(rowWarp, b.getInt64(32), gpuBlockDim());
        Value *perBlock = b.CreateSelect(
            rowWarp, b.CreateLShr(gpuBlockDim(), b.getInt64(5)), b.getInt64(1));
        Value *first =
            b.CreateAdd(b.CreateMul(gpuBlockIdx(), perBlock),
                        b.CreateSelect(rowWarp, warp, b.getInt64(0)));
        rowLead = g.lead;
        std::map<ValueId, Value *> rowBase;
        for (ValueId v : used)
          if (bufs[v] && rowShaped(fn.type(v)))
            rowBase[v] = bufs[v];
        bool ok = true;
        Value *step = b.CreateMul(gpuGridDim(), perBlock);
        stridedLoop(first, rowCount(), step, [&](Value *r) {
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
        rowWarp = nullptr;
        for (auto &[v, base] : rowBase)
          bufs[v] = base;
        return ok;
      },
      slots);
  if (k < 0)
    return false;
  // A block per row, or kWarpRowBlock / 32 rows per block; 32 slots of 8
  // bytes: blockReduce's.
  Value *byWarp = rowUsesWarp(n);
  Value *warpRows = b.getInt64(kWarpRowBlock / 32);
  Value *blocks = b.CreateSelect(
      byWarp,
      b.CreateSDiv(b.CreateAdd(rows, b.getInt64(kWarpRowBlock / 32 - 1)),
                   warpRows),
      rows);
  Value *threads =
      b.CreateSelect(byWarp, b.getInt32(kWarpRowBlock), rowThreads(n));
  emitLaunch(k, slots, {blocks, threads, 32 * 8});
  for (size_t i = g.begin; i < g.end; ++i)
    for (ValueId v : freeAfter[i])
      if (bufs[v])
        freeBuffer(bufs[v]);
  return true;
}

} // namespace tsl::backend
