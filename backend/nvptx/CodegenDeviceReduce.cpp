// Device mode: reduce_sum, reduce_mean, reduce_max and reduce_min that do
// not go to a row kernel (CodegenDeviceRows.cpp takes float reductions over
// the last axis): reductions over other axes, over several adjacent axes and
// over the whole tensor.
//
// When the reduced axes are one run of adjacent axes (or all of them), the
// input is seen as [outer, R, inner] and reduced block-tiled. A block of 256
// threads is W columns x 256/W rows, W = 32 when inner >= 32, else the next
// power of two >= inner (1 for inner == 1, a whole-tensor reduction), chosen
// at run time from the sizes. Thread (tx, ty) of a tile accumulates column
// c = tile * W + tx over rows r = ty, ty + 256/W, ...: a warp reads W
// consecutive elements of 32/W rows, so loads are coalesced whatever the
// shape. A tree over ty in shared memory (log2(256/W) steps, a barrier each,
// every thread reaching every barrier) combines a column's partials, and the
// threads of row ty == 0 write the tile's results.
//
// A grid of outer * ceil(inner / W) tiles leaves most of a GPU idle when the
// output is small (sum over axis 0 of [8192, 1024] has 32 tiles; a
// whole-tensor sum one), so R is then cut into splits (aiming at
// kFillBlocks blocks, each thread of a split still taking at least
// kMinRowsPerThread rows): the tiles write partials in the accumulator type
// to device scratch [split, outer, inner], and a second launch, one thread
// per output element, combines a column's splits in order and finishes it.
// Every order of combination is fixed by the sizes (no atomics), so results
// do not depend on timing.
//
// Reductions over axes that are not one run (axes {0, 2} of a rank-3
// tensor) keep one thread per output element looping over the reduced axes
// (deviceReduce). f16 and bf16 accumulate in f32, bool in i64 (a count), as
// on the CPU (reductionIdentity, reductionStep).
#include "backend/nvptx/DeviceCodegen.h"

namespace tsl::backend {

namespace {
/// Threads of a block of the tiled kernel, and the tree's shared slots.
constexpr int64_t kReduceThreads = 256;
/// Blocks that keep an H100 (132 SMs) busy: two per SM.
constexpr int64_t kFillBlocks = 264;
/// Each thread of a split reduces at least this many rows (when R has
/// them), so splitting never makes the combining launch the larger one.
constexpr int64_t kMinRowsPerThread = 16;
/// Loads a thread of the tiled kernel has in flight (accumulate).
constexpr int64_t kUnroll = 8;

/// \p i as indices over \p extents (row-major; no division for one extent).
void unflatten(llvm::IRBuilder<> &b, Value *i,
               const std::vector<Value *> &extents, std::vector<Value *> &out) {
  std::vector<Value *> idx(extents.size());
  for (size_t d = extents.size(); d-- > 0;) {
    if (d == 0) {
      idx[d] = i;
      break;
    }
    idx[d] = b.CreateURem(i, extents[d]);
    i = b.CreateUDiv(i, extents[d]);
  }
  out.insert(out.end(), idx.begin(), idx.end());
}
} // namespace

bool DeviceCodegen::reducedAxesRun(const Operation &op, size_t &first,
                                   size_t &end) const {
  size_t rank = fn.type(op.operands[0]).rank();
  std::vector<bool> red = reducedAxes(op);
  first = 0;
  while (first < rank && !red[first])
    ++first;
  end = first;
  while (end < rank && red[end])
    ++end;
  for (size_t i = end; i < rank; ++i)
    if (red[i])
      return false;
  return true;
}

DeviceCodegen::ReduceTiling DeviceCodegen::reduceTiling(const Operation &op) {
  size_t first, end;
  reducedAxesRun(op, first, end);
  std::vector<Value *> d = dims(fn.type(op.operands[0]));
  ReduceTiling s;
  s.outerDims.assign(d.begin(), d.begin() + static_cast<ptrdiff_t>(first));
  s.reducedDims.assign(d.begin() + static_cast<ptrdiff_t>(first),
                       d.begin() + static_cast<ptrdiff_t>(end));
  s.innerDims.assign(d.begin() + static_cast<ptrdiff_t>(end), d.end());
  s.outer = product(s.outerDims);
  s.reduced = product(s.reducedDims);
  s.inner = product(s.innerDims);
  auto smax = [&](Value *x, int64_t y) {
    return b.CreateBinaryIntrinsic(llvm::Intrinsic::smax, x, b.getInt64(y));
  };
  auto smin = [&](Value *x, Value *y) {
    return b.CreateBinaryIntrinsic(llvm::Intrinsic::smin, x, y);
  };
  auto ceilDiv = [&](Value *x, Value *y) {
    return b.CreateSDiv(b.CreateAdd(x, b.CreateSub(y, b.getInt64(1))), y);
  };
  // W = 2^log2W, the least power of two >= min(max(inner, 1), 32).
  Value *w = smin(smax(s.inner, 1), b.getInt64(32));
  Value *lz = b.CreateBinaryIntrinsic(
      llvm::Intrinsic::ctlz, b.CreateSub(w, b.getInt64(1)), b.getFalse());
  s.log2Width = b.CreateSub(b.getInt64(64), lz);
  s.width = b.CreateShl(b.getInt64(1), s.log2Width);
  s.rows = b.CreateLShr(b.getInt64(kReduceThreads), s.log2Width);
  s.columnTiles = ceilDiv(s.inner, s.width);
  s.tiles = b.CreateMul(s.outer, s.columnTiles);
  // Splits: enough blocks to fill the GPU, a few rows per thread each.
  Value *wanted = ceilDiv(b.getInt64(kFillBlocks), smax(s.tiles, 1));
  Value *most =
      ceilDiv(s.reduced, b.CreateMul(s.rows, b.getInt64(kMinRowsPerThread)));
  Value *splits = smax(smin(wanted, most), 1);
  // No outputs: nothing to split (and no scratch).
  splits = b.CreateSelect(b.CreateICmpEQ(s.tiles, b.getInt64(0)), b.getInt64(1),
                          splits);
  s.chunk = smax(ceilDiv(s.reduced, splits), 1);
  s.splits = smax(ceilDiv(s.reduced, s.chunk), 1); // none of them empty
  return s;
}

Value *DeviceCodegen::finishReduction(const Operation &op, Value *acc,
                                      Value *count) {
  if (op.code == OpCode::ReduceMean)
    acc = b.CreateFDiv(acc, b.CreateSIToFP(count, acc->getType()));
  if (fn.type(op.operands[0]).dtype == DType::Bool)
    acc = b.CreateICmpNE(acc, b.getInt64(0));
  return acc;
}

std::function<Value *(Value *, Value *, Value *)>
DeviceCodegen::reduceReader(const Operation &op, const ReduceTiling &s) {
  ValueId x = op.operands[0];
  const TensorType &in = fn.type(x);
  std::vector<ValueId> read;
  leaves(x, read);
  bool flat = true; // every stored leaf has the input's dims: one index
  for (ValueId l : read)
    flat = flat && fn.type(l).dims == in.dims;
  std::map<ValueId, std::vector<Value *>> strides;
  if (flat) {
    for (ValueId l : read)
      strides[l] = {b.getInt64(1)};
  } else {
    leafStrides(x, dims(in), in.dims, strides);
  }
  DType t = in.dtype;
  return [this, flat, strides, x, t, &s](Value *o, Value *r, Value *c) {
    std::vector<Value *> idx;
    if (flat) {
      idx.push_back(b.CreateAdd(
          b.CreateMul(b.CreateAdd(b.CreateMul(o, s.reduced), r), s.inner), c));
    } else {
      unflatten(b, o, s.outerDims, idx);
      unflatten(b, r, s.reducedDims, idx);
      unflatten(b, c, s.innerDims, idx);
    }
    Value *v = valueAt(x, idx, strides);
    return t == DType::Bool ? b.CreateZExt(v, i64) : v;
  };
}

Value *
DeviceCodegen::accumulate(OpCode code, Value *init, Value *first, Value *count,
                          Value *stride,
                          const std::function<Value *(Value *)> &element) {
  llvm::Type *acc = init->getType();
  Value *slot = entryAlloca(acc);
  b.CreateStore(init, slot);
  auto at = [&](Value *j) {
    return b.CreateAdd(first, b.CreateMul(j, stride));
  };
  // Groups of kUnroll elements, all loaded before the first is combined:
  // kUnroll loads in flight per thread, in the order of the plain loop.
  Value *full = b.CreateMul(b.CreateSDiv(count, b.getInt64(kUnroll)),
                            b.getInt64(kUnroll));
  stridedLoop(b.getInt64(0), full, b.getInt64(kUnroll), [&](Value *j) {
    Value *x[kUnroll];
    for (int64_t u = 0; u < kUnroll; ++u)
      x[u] = element(at(b.CreateAdd(j, b.getInt64(u))));
    Value *a = b.CreateLoad(acc, slot);
    for (int64_t u = 0; u < kUnroll; ++u)
      a = reductionStep(code, a, x[u]);
    b.CreateStore(a, slot);
  });
  stridedLoop(full, count, b.getInt64(1), [&](Value *j) {
    b.CreateStore(reductionStep(code, b.CreateLoad(acc, slot), element(at(j))),
                  slot);
  });
  return b.CreateLoad(acc, slot);
}

Value *DeviceCodegen::reduceOverRows(const Operation &op, const ReduceTiling &s,
                                     Value *partial) {
  llvm::Type *acc = partial->getType();
  Value *tid = gpuThreadIdx();
  Value *ty = b.CreateLShr(tid, s.log2Width);
  Value *shared = gpuShared();
  Value *mine = b.CreateGEP(acc, shared, tid);
  b.CreateStore(partial, mine);
  // Steps k = 0, 1, ...: rows below half = rows >> (k + 1) take in the row
  // half above them. Every thread reaches every barrier.
  Value *steps = b.CreateSub(b.getInt64(8), s.log2Width); // log2(rows)
  stridedLoop(b.getInt64(0), steps, b.getInt64(1), [&](Value *k) {
    Value *half = b.CreateLShr(s.rows, b.CreateAdd(k, b.getInt64(1)));
    gpuBarrier();
    ifThen(b.CreateICmpULT(ty, half), [&] {
      Value *other = b.CreateGEP(acc, shared,
                                 b.CreateAdd(tid, b.CreateMul(half, s.width)));
      b.CreateStore(reductionStep(op.code, b.CreateLoad(acc, mine),
                                  b.CreateLoad(acc, other)),
                    mine);
    });
  });
  gpuBarrier();
  // Row 0 holds the columns' results (each thread reads its own slot,
  // which nobody writes before the next tile's first barrier).
  return b.CreateLoad(acc, mine);
}

bool DeviceCodegen::reduceTiles(const Operation &op) {
  cooperative = true;
  ReduceTiling s = reduceTiling(op);
  DType t = fn.type(op.operands[0]).dtype;
  DType rt = fn.type(op.results[0]).dtype;
  Value *identity = reductionIdentity(op.code, t);
  llvm::Type *acc = identity->getType();
  auto read = reduceReader(op, s);
  Value *tid = gpuThreadIdx();
  Value *one = b.getInt64(1);
  Value *tx = b.CreateAnd(tid, b.CreateSub(s.width, one));
  Value *ty = b.CreateLShr(tid, s.log2Width);
  Value *partial = entryAlloca(acc);
  // Blocks stride over (split, tile) pairs.
  blockStrideLoop(b.CreateMul(s.tiles, s.splits), [&](Value *w) {
    Value *tile = b.CreateURem(w, s.tiles);
    Value *split = b.CreateUDiv(w, s.tiles);
    Value *o = b.CreateUDiv(tile, s.columnTiles);
    Value *c = b.CreateAdd(
        b.CreateShl(b.CreateURem(tile, s.columnTiles), s.log2Width), tx);
    Value *inside = b.CreateICmpULT(c, s.inner);
    Value *begin = b.CreateMul(split, s.chunk);
    Value *end = b.CreateBinaryIntrinsic(
        llvm::Intrinsic::smin, b.CreateAdd(begin, s.chunk), s.reduced);
    b.CreateStore(identity, partial);
    ifThen(inside, [&] { // past the last column: the identity
      // Rows begin + ty, + rows, ... below end (rows is a power of two).
      Value *from = b.CreateAdd(begin, ty);
      Value *left = b.CreateBinaryIntrinsic(
          llvm::Intrinsic::smax, b.CreateSub(end, from), b.getInt64(0));
      Value *count = b.CreateLShr(b.CreateAdd(left, b.CreateSub(s.rows, one)),
                                  b.CreateSub(b.getInt64(8), s.log2Width));
      b.CreateStore(accumulate(op.code, identity, from, count, s.rows,
                               [&](Value *r) { return read(o, r, c); }),
                    partial);
    });
    Value *v = reduceOverRows(op, s, b.CreateLoad(acc, partial));
    Value *out = b.CreateAdd(b.CreateMul(o, s.inner), c);
    Value *writer = b.CreateAnd(b.CreateICmpEQ(ty, b.getInt64(0)), inside);
    Value *whole = b.CreateICmpEQ(s.splits, b.getInt64(1));
    ifThen(b.CreateAnd(writer, whole), [&] {
      store(rt, bufs[op.results[0]], out, finishReduction(op, v, s.reduced));
    });
    ifThen(b.CreateAnd(writer, b.CreateNot(whole)), [&] {
      Value *at =
          b.CreateAdd(b.CreateMul(split, b.CreateMul(s.outer, s.inner)), out);
      b.CreateStore(v, b.CreateGEP(acc, deviceExtra(0), at));
    });
  });
  return true;
}

bool DeviceCodegen::reduceSplits(const Operation &op) {
  ReduceTiling s = reduceTiling(op);
  DType t = fn.type(op.operands[0]).dtype;
  DType rt = fn.type(op.results[0]).dtype;
  Value *identity = reductionIdentity(op.code, t);
  llvm::Type *acc = identity->getType();
  Value *outputs = b.CreateMul(s.outer, s.inner);
  Value *scratch = deviceExtra(0);
  // One thread per output element, combining its splits in order.
  stridedLoop(deviceThread, outputs, deviceThreads, [&](Value *i) {
    Value *v =
        accumulate(op.code, identity, i, s.splits, outputs, [&](Value *at) {
          return b.CreateLoad(acc, b.CreateGEP(acc, scratch, at));
        });
    store(rt, bufs[op.results[0]], i, finishReduction(op, v, s.reduced));
  });
  return true;
}

bool DeviceCodegen::launchReduce(const Operation &op) {
  allocateResult(op);
  ValueId r = op.results[0];
  std::vector<ValueId> used{r}, slots;
  leaves(op.operands[0], used);
  ReduceTiling s = reduceTiling(op);
  // Host: scratch for the splits' partials (8 bytes covers every
  // accumulator), only when R is split.
  Value *split = b.CreateICmpSGT(s.splits, b.getInt64(1));
  Value *scratchSlot = entryAlloca(ptr);
  b.CreateStore(
      llvm::ConstantPointerNull::get(llvm::cast<llvm::PointerType>(ptr)),
      scratchSlot);
  ifThen(split, [&] {
    Value *bytes = b.CreateMul(
        b.CreateMul(s.splits, b.CreateMul(s.outer, s.inner)), b.getInt64(8));
    b.CreateStore(deviceScratch(bytes), scratchSlot);
  });
  Value *scratch = b.CreateLoad(ptr, scratchSlot);
  int32_t tiled = emitDeviceKernel(
      used, [&] { return reduceTiles(op); }, slots, 1);
  if (tiled < 0)
    return false;
  // Tree slots: one 8-byte word per thread.
  emitLaunch(tiled, slots,
             {b.CreateMul(s.tiles, s.splits),
              b.getInt32(static_cast<int32_t>(kReduceThreads)),
              static_cast<int32_t>(kReduceThreads * 8)},
             {scratch});
  int32_t combine = emitDeviceKernel(
      {r}, [&] { return reduceSplits(op); }, slots, 1);
  if (combine < 0)
    return false;
  ifThen(split, [&] {
    emitLaunch(combine, slots, gridFor(b.CreateMul(s.outer, s.inner)),
               {scratch});
    freeBuffer(scratch);
  });
  return true;
}

bool DeviceCodegen::deviceReduce(const Operation &op) {
  const TensorType &in = fn.type(op.operands[0]);
  DType t = in.dtype;
  std::vector<bool> red = reducedAxes(op);
  std::vector<Value *> inShape = dims(in), keep, reduced;
  Value *count = b.getInt64(1);
  for (size_t i = 0; i < in.rank(); ++i) {
    keep.push_back(red[i] ? b.getInt64(1) : inShape[i]);
    if (red[i]) {
      reduced.push_back(inShape[i]);
      count = b.CreateMul(count, inShape[i]);
    }
  }
  Value *dst = allocateResult(op);
  Value *init = reductionIdentity(op.code, t);
  llvm::Type *acc = init->getType();
  std::map<ValueId, std::vector<Value *>> strides;
  leafStrides(op.operands[0], inShape, in.dims, strides);
  std::vector<Value *> outStrides = contiguousStrides(keep);
  Value *slot = entryAlloca(acc);
  // One thread per result element, looping over the reduced axes.
  loops(keep, [&](const std::vector<Value *> &outIdx) {
    b.CreateStore(init, slot);
    loops(reduced, [&](const std::vector<Value *> &r) {
      std::vector<Value *> idx;
      size_t k = 0;
      for (size_t i = 0; i < in.rank(); ++i)
        idx.push_back(red[i] ? r[k++] : outIdx[i]);
      Value *x = valueAt(op.operands[0], idx, strides);
      if (t == DType::Bool)
        x = b.CreateZExt(x, i64);
      b.CreateStore(reductionStep(op.code, b.CreateLoad(acc, slot), x), slot);
    });
    store(fn.type(op.results[0]).dtype, dst, offset(outIdx, outStrides),
          finishReduction(op, b.CreateLoad(acc, slot), count));
  });
  return true;
}

} // namespace tsl::backend
