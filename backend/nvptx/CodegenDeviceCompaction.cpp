// Device mode: a parallel stream compaction in three launches (a
// three-phase scan), shared by nonzero, masked_select and unique (whose
// kept elements are the first of each run of equal values in its sorted
// permutation, CodegenDeviceSort.cpp). The input is cut into tiles of
// kTile elements, each thread of a block owning kItemsPerThread
// consecutive ones:
//   1. count: each block counts the selected elements of its tiles (a block
//      reduction) into tileCounts[tile];
//   2. scan: one block turns tileCounts into exclusive offsets and writes
//      the total, which the host reads back to allocate the result (the
//      one wait of the op);
//   3. fill: each block counts its tiles again, scans the per-thread counts
//      (blockExclusiveScan) and writes each thread's selected elements at
//      tile offset + thread offset, in element order.
#include "backend/nvptx/DeviceCodegen.h"

namespace tsl::backend {

namespace {
constexpr int32_t kScanThreads = 256;
constexpr int64_t kItemsPerThread = 4;
constexpr int64_t kTile = kScanThreads * kItemsPerThread;
constexpr int32_t kScanBlock = 1024; ///< threads of the scan launch

/// The tiles of \p n elements (host and kernels each compute them from the
/// sizes).
Value *tileCount(llvm::IRBuilder<> &b, Value *n) {
  return b.CreateSDiv(b.CreateAdd(n, b.getInt64(kTile - 1)), b.getInt64(kTile));
}
} // namespace

bool DeviceCodegen::deviceCompaction(const Operation &op) {
  ValueId x = op.operands[0], r = op.results[0];
  ValueId selector = op.code == OpCode::MaskedSelect ? op.operands[1] : x;
  const TensorType &in = fn.type(x);
  DType st = fn.type(selector).dtype;
  CompactionSpec spec;
  spec.what = opInfo(op.code).name;
  spec.used = {x, selector};
  spec.perRow =
      op.code == OpCode::Nonzero ? static_cast<int64_t>(in.rank()) : 1;
  spec.length = [&] { return product(dims(in)); };
  // Element i is selected (false past the end, where nothing is loaded).
  spec.selected = [&](Value *i, Value *n) {
    Value *inside = b.CreateICmpSLT(i, n);
    Value *v =
        load(st, bufs[selector], b.CreateSelect(inside, i, b.getInt64(0)));
    Value *nz =
        st == DType::Bool ? v
        : isFloat(st)
            ? b.CreateFCmpUNE(v, llvm::ConstantFP::get(v->getType(), 0.0))
            : b.CreateICmpNE(v, llvm::ConstantInt::get(v->getType(), 0));
    return b.CreateAnd(inside, nz);
  };
  std::vector<Value *> shape; // in the filling kernel
  if (op.code == OpCode::Nonzero)
    spec.fillSetup = [&] { shape = dims(in); };
  spec.write = [&](Value *i, Value *at) {
    if (op.code != OpCode::Nonzero) {
      store(in.dtype, bufs[r], at, load(in.dtype, bufs[x], i));
      return;
    }
    // The row-major index of element i, one column per axis.
    int64_t rank = static_cast<int64_t>(in.rank());
    Value *rest = i;
    for (size_t d = in.rank(); d-- > 0;) {
      Value *idx = d == 0 ? rest : b.CreateURem(rest, shape[d]);
      if (d > 0)
        rest = b.CreateUDiv(rest, shape[d]);
      store(DType::I64, bufs[r],
            b.CreateAdd(b.CreateMul(at, b.getInt64(rank)),
                        b.getInt64(static_cast<int64_t>(d))),
            idx);
    }
  };
  return streamCompaction(spec, r);
}

bool DeviceCodegen::streamCompaction(const CompactionSpec &spec, ValueId r) {
  SymExpr u = fn.type(r).dims[0];
  if (!u.isSymbol() || !symIndex.count(u.symbolName()))
    return unsupported(spec.what + " with a result size that is not a symbol");
  // This thread's first element in \p tile, and how many it selects.
  auto mine = [&](Value *tile, Value *n) {
    Value *base =
        b.CreateAdd(b.CreateMul(tile, b.getInt64(kTile)),
                    b.CreateMul(gpuThreadIdx(), b.getInt64(kItemsPerThread)));
    Value *c = b.getInt64(0);
    for (int64_t k = 0; k < kItemsPerThread; ++k)
      c = b.CreateAdd(
          c, b.CreateZExt(spec.selected(b.CreateAdd(base, b.getInt64(k)), n),
                          i64));
    return std::make_pair(base, c);
  };
  // Host: the tile counts and the total in device memory.
  Value *tiles = tileCount(b, spec.length());
  Value *tileCounts = deviceScratch(b.CreateMul(
      b.CreateBinaryIntrinsic(llvm::Intrinsic::smax, tiles, b.getInt64(1)),
      b.getInt64(8)));
  Value *countWord = deviceWord();
  // The counting and filling launches pass the tile counts, then the
  // spec's extras (deviceExtra(1 + i)).
  std::vector<Value *> extras{tileCounts};
  extras.insert(extras.end(), spec.extras.begin(), spec.extras.end());
  std::vector<ValueId> slots;
  int32_t counting = emitDeviceKernel(
      spec.used,
      [&] {
        cooperative = true;
        Value *len = spec.length();
        blockStrideLoop(tileCount(b, len), [&](Value *tile) {
          Value *total = blockReduce(
              mine(tile, len).second, b.getInt64(0),
              [&](Value *p, Value *q) { return b.CreateAdd(p, q); });
          onThreadZero([&] {
            b.CreateStore(total, b.CreateGEP(i64, deviceExtra(0), tile));
          });
        });
        return true;
      },
      slots, extras.size());
  if (counting < 0)
    return false;
  emitLaunch(counting, slots, {tiles, b.getInt32(kScanThreads), 32 * 8},
             extras);
  if (!scanTileCounts(spec, tileCounts, countWord))
    return false;
  // Host: the result at the size the device counted.
  readSymbol(u.symbolName(), countWord);
  Value *rows = b.CreateLoad(i64, symSlot(u.symbolName()));
  allocate(r, b.CreateMul(rows, b.getInt64(spec.perRow)));
  std::vector<ValueId> used = spec.used;
  used.push_back(r);
  int32_t filling = emitDeviceKernel(
      used,
      [&] {
        cooperative = true;
        Value *len = spec.length();
        if (spec.fillSetup)
          spec.fillSetup();
        Value *next = entryAlloca(i64);
        blockStrideLoop(tileCount(b, len), [&](Value *tile) {
          auto [base, c] = mine(tile, len);
          Value *excl = blockExclusiveScan(c).first;
          Value *offsets = deviceExtra(0);
          b.CreateStore(
              b.CreateAdd(b.CreateLoad(i64, b.CreateGEP(i64, offsets, tile)),
                          excl),
              next);
          for (int64_t k = 0; k < kItemsPerThread; ++k) {
            Value *i = b.CreateAdd(base, b.getInt64(k));
            ifThen(spec.selected(i, len), [&] {
              Value *at = b.CreateLoad(i64, next);
              spec.write(i, at);
              b.CreateStore(b.CreateAdd(at, b.getInt64(1)), next);
            });
          }
        });
        return true;
      },
      slots, extras.size());
  if (filling < 0)
    return false;
  emitLaunch(filling, slots, {tiles, b.getInt32(kScanThreads), 32 * 8}, extras);
  freeBuffer(tileCounts);
  return true;
}

bool DeviceCodegen::scanTileCounts(const CompactionSpec &spec,
                                   Value *tileCounts, Value *countWord) {
  std::vector<ValueId> slots;
  int32_t scanning = emitDeviceKernel(
      {},
      [&] {
        cooperative = true;
        Value *count = tileCount(b, spec.length());
        Value *counts = deviceExtra(0);
        Value *carry = entryAlloca(i64);
        b.CreateStore(b.getInt64(0), carry);
        // One block does it all (uniformly: the others leave at once).
        auto *work = llvm::BasicBlock::Create(ctx, "scanblock", kernel);
        auto *others = llvm::BasicBlock::Create(ctx, "otherblocks", kernel);
        b.CreateCondBr(b.CreateICmpEQ(gpuBlockIdx(), b.getInt64(0)), work,
                       others);
        b.SetInsertPoint(others);
        b.CreateRetVoid();
        b.SetInsertPoint(work);
        // Every thread walks the chunks of kScanBlock counts.
        stridedLoop(
            b.getInt64(0), count, b.getInt64(kScanBlock), [&](Value *c) {
              Value *i = b.CreateAdd(c, gpuThreadIdx());
              Value *inside = b.CreateICmpSLT(i, count);
              Value *at = b.CreateGEP(i64, counts,
                                      b.CreateSelect(inside, i, b.getInt64(0)));
              Value *v =
                  b.CreateSelect(inside, b.CreateLoad(i64, at), b.getInt64(0));
              auto [excl, total] = blockExclusiveScan(v);
              Value *base = b.CreateLoad(i64, carry);
              ifThen(inside,
                     [&] { b.CreateStore(b.CreateAdd(base, excl), at); });
              b.CreateStore(b.CreateAdd(base, total), carry);
            });
        onThreadZero(
            [&] { b.CreateStore(b.CreateLoad(i64, carry), deviceExtra(1)); });
        return true;
      },
      slots, 2);
  if (scanning < 0)
    return false;
  emitLaunch(scanning, slots, {b.getInt64(1), b.getInt32(kScanBlock), 32 * 8},
             {tileCounts, countWord});
  return true;
}

} // namespace tsl::backend
