// Device mode: topk and unique as cooperative schedules (they replace one
// thread per row doing k selection passes, and one thread for the whole
// tensor doing a selection per distinct value).
//
// topk, a block per row (blocks stride over rows): pick j is the first
// element, in topk's order (value descending, NaN first, ties by index
// ascending: orderBefore), strictly after pick j - 1. Each of the k rounds,
// every thread finds its best such element among its strided ones and a
// block arg-reduction picks the winner, which every thread learns and
// thread 0 writes: O(k n / threads) per row, no scratch memory.
//
// unique: the sorted distinct values are the first element of each run of
// equal values in a stable ascending sort. The sort is a bitonic network
// over a permutation of P indices (P the next power of two >= n): one
// kernel, a thread per compared pair, launched once per (k, j) stage by a
// host loop with k and j in its argument block. Keys are (padding index
// >= n above every element; then the value in the library's order, NaN
// above everything and -0.0 == 0.0; then the index), all distinct, so the
// network's order is the stable one. The positions that start a run are
// compacted by the three-phase scan of nonzero (streamCompaction), whose one
// 8-byte read binds the result size. O(n log^2 n) work in O(log^2 n)
// launches; the permutation is released at the end.
#include "backend/common/Codegen.h"

namespace tsl::backend {

namespace {

/// An index past every element: the pair it is in loses to all others.
constexpr int64_t kNoIndex = INT64_MAX;

/// P for \p n elements: the next power of two >= n (1 when n <= 1).
Value *paddedLength(llvm::IRBuilder<> &b, Value *n) {
  llvm::Type *i64 = b.getInt64Ty();
  Value *bits = b.CreateSub(
      b.getInt64(64),
      b.CreateIntrinsic(llvm::Intrinsic::ctlz, {i64},
                        {b.CreateSub(n, b.getInt64(1)), b.getFalse()}));
  return b.CreateSelect(b.CreateICmpSLE(n, b.getInt64(1)), b.getInt64(1),
                        b.CreateShl(b.getInt64(1), bits));
}

} // namespace

Value *Codegen::orderBefore(DType t, Value *av, Value *ai, Value *bv,
                            Value *bi) {
  Value *earlier = b.CreateICmpSLT(ai, bi);
  if (!isFloat(t)) {
    Value *ax = t == DType::Bool ? b.CreateZExt(av, i64) : av;
    Value *bx = t == DType::Bool ? b.CreateZExt(bv, i64) : bv;
    return b.CreateOr(b.CreateICmpSGT(ax, bx),
                      b.CreateAnd(b.CreateICmpEQ(ax, bx), earlier));
  }
  Value *aNan = b.CreateFCmpUNO(av, av), *bNan = b.CreateFCmpUNO(bv, bv);
  Value *plain = b.CreateOr(b.CreateFCmpOGT(av, bv),
                            b.CreateAnd(b.CreateFCmpOEQ(av, bv), earlier));
  return b.CreateSelect(aNan, b.CreateOr(b.CreateNot(bNan), earlier),
                        b.CreateAnd(b.CreateNot(bNan), plain));
}

std::pair<Value *, Value *> Codegen::blockFirstOfRow(
    DType t, Value *src, Value *base, Value *len,
    const std::function<Value *(Value *, Value *)> &eligible) {
  Value *tid = gpuThreadIdx(), *step = gpuBlockDim();
  // This thread's first of elements tid, tid + blockDim, ...
  llvm::Type *vt = computeType(t);
  Value *none = b.getInt64(kNoIndex);
  Value *bestValue = entryAlloca(vt), *bestIndex = entryAlloca(i64);
  // Any value: with index `none` it loses.
  b.CreateStore(load(t, src, base), bestValue);
  b.CreateStore(none, bestIndex);
  stridedLoop(tid, len, step, [&](Value *j) {
    Value *v = load(t, src, b.CreateAdd(base, j));
    Value *bv = b.CreateLoad(vt, bestValue);
    Value *bi = b.CreateLoad(i64, bestIndex);
    Value *take =
        b.CreateOr(b.CreateICmpEQ(bi, none), orderBefore(t, v, j, bv, bi));
    if (eligible)
      take = b.CreateAnd(eligible(v, j), take);
    b.CreateStore(b.CreateSelect(take, v, bv), bestValue);
    b.CreateStore(b.CreateSelect(take, j, bi), bestIndex);
  });
  return blockArgReduce(
      b.CreateLoad(vt, bestValue), b.CreateLoad(i64, bestIndex),
      [&](Value *av, Value *ai, Value *cv, Value *ci) {
        // An empty partial (index none) loses.
        return b.CreateOr(b.CreateICmpEQ(ci, none),
                          b.CreateAnd(b.CreateICmpNE(ai, none),
                                      orderBefore(t, av, ai, cv, ci)));
      });
}

bool Codegen::launchTopkRows(const Operation &op) {
  ValueId x = op.operands[0], values = op.results[0], indices = op.results[1];
  const TensorType &in = fn.type(x);
  DType t = in.dtype;
  allocateResult(op, 0);
  allocateResult(op, 1);
  // Rows of n elements (host and kernel each compute them from the sizes).
  auto rowsOf = [&](Value *&n) {
    std::vector<Value *> shape = dims(in);
    n = shape.back();
    shape.pop_back();
    return product(shape);
  };
  Value *n, *rows = rowsOf(n);
  Value *k = expr(op.exprAttr("k"));
  std::vector<ValueId> slots;
  int32_t kernelNumber = emitDeviceKernel(
      {x, values, indices},
      [&] {
        cooperative = true;
        Value *len, *count = rowsOf(len);
        Value *picks = expr(op.exprAttr("k"));
        Value *none = b.getInt64(kNoIndex);
        llvm::Type *vt = computeType(t);
        Value *prevValue = entryAlloca(vt), *prevIndex = entryAlloca(i64);
        blockStrideLoop(count, [&](Value *row) {
          Value *base = b.CreateMul(row, len);
          b.CreateStore(llvm::Constant::getNullValue(vt), prevValue);
          b.CreateStore(none, prevIndex); // no pick yet
          stridedLoop(b.getInt64(0), picks, b.getInt64(1), [&](Value *j) {
            Value *pv = b.CreateLoad(vt, prevValue);
            Value *pi = b.CreateLoad(i64, prevIndex);
            auto [value, index] =
                blockFirstOfRow(t, bufs[x], base, len, [&](Value *v, Value *i) {
                  return b.CreateOr(b.CreateICmpEQ(pi, none),
                                    orderBefore(t, pv, pi, v, i));
                });
            // (j < k <= n: an element is left, so index is not none.)
            ifThen(b.CreateAnd(b.CreateICmpEQ(gpuThreadIdx(), b.getInt64(0)),
                               b.CreateICmpNE(index, none)),
                   [&] {
                     Value *o = b.CreateAdd(b.CreateMul(row, picks), j);
                     copyElementRaw(t, bufs[values], o, bufs[x],
                                    b.CreateAdd(base, index));
                     store(DType::I64, bufs[indices], o, index);
                   });
            b.CreateStore(value, prevValue);
            b.CreateStore(index, prevIndex);
          });
        });
        return true;
      },
      slots);
  if (kernelNumber < 0)
    return false;
  // Nothing to pick when k = 0 (the only k an empty row allows).
  Value *blocks =
      b.CreateSelect(b.CreateICmpEQ(k, b.getInt64(0)), b.getInt64(0), rows);
  emitLaunch(kernelNumber, slots, {blocks, rowThreads(n), 32 * 16});
  return true;
}

void Codegen::bitonicStage(ValueId x, Value *n) {
  DType t = fn.type(x).dtype;
  Value *perm = deviceExtra(0);
  Value *k = b.CreatePtrToInt(deviceExtra(1), i64);
  Value *j = b.CreatePtrToInt(deviceExtra(2), i64);
  // Key a before key c: padding (>= n) after every element; then the
  // value in the library's order; then the index. (The stage runs only
  // for n >= 2, so index 0 stands in for padding's loads.)
  auto before = [&](Value *a, Value *c) {
    Value *aPad = b.CreateICmpSGE(a, n), *cPad = b.CreateICmpSGE(c, n);
    Value *va = load(t, bufs[x], b.CreateSelect(aPad, b.getInt64(0), a));
    Value *vc = load(t, bufs[x], b.CreateSelect(cPad, b.getInt64(0), c));
    Value *earlier = b.CreateICmpSLT(a, c);
    Value *byValue =
        b.CreateOr(orderLess(t, va, vc),
                   b.CreateAnd(b.CreateNot(orderLess(t, vc, va)), earlier));
    Value *byPadding =
        b.CreateAnd(cPad, b.CreateOr(b.CreateNot(aPad), earlier));
    return b.CreateSelect(b.CreateOr(aPad, cPad), byPadding, byValue);
  };
  Value *pairs = b.CreateLShr(paddedLength(b, n), b.getInt64(1));
  stridedLoop(deviceThread, pairs, deviceThreads, [&](Value *q) {
    // Pair q compares positions i and i + j (bit j of i clear).
    Value *low = b.CreateAnd(q, b.CreateSub(j, b.getInt64(1)));
    Value *i =
        b.CreateAdd(b.CreateShl(b.CreateSub(q, low), b.getInt64(1)), low);
    Value *atI = b.CreateGEP(i64, perm, i);
    Value *atL = b.CreateGEP(i64, perm, b.CreateAdd(i, j));
    Value *a = b.CreateLoad(i64, atI), *c = b.CreateLoad(i64, atL);
    // Ascending where bit k of i is clear (everywhere in the last merge).
    Value *ascending = b.CreateICmpEQ(b.CreateAnd(i, k), b.getInt64(0));
    // Keys are distinct: the pair is out of order when c comes first
    // going up, or a does going down.
    ifThen(b.CreateICmpEQ(before(c, a), ascending), [&] {
      b.CreateStore(c, atI);
      b.CreateStore(a, atL);
    });
  });
}

Value *Codegen::sortedPermutation(ValueId x,
                                  const std::function<Value *()> &length) {
  Value *padded = paddedLength(b, length());
  // P words; past 2^59 of them the byte size leaves int64 (-1: the
  // allocation fails with that message).
  Value *bytes =
      b.CreateSelect(b.CreateICmpUGT(padded, b.getInt64(int64_t{1} << 59)),
                     b.getInt64(-1), b.CreateMul(padded, b.getInt64(8)));
  Value *perm = b.CreateCall(runtime(target.runtime().alloc, ptr, {ptr, i64}),
                             {ctxArg, bytes});
  failOpIf(b.CreateIsNull(perm));
  std::vector<ValueId> initSlots, stageSlots;
  int32_t init = emitDeviceKernel(
      {},
      [&] {
        Value *p = deviceExtra(0);
        stridedLoop(
            deviceThread, paddedLength(b, length()), deviceThreads,
            [&](Value *i) { b.CreateStore(i, b.CreateGEP(i64, p, i)); });
        return true;
      },
      initSlots, 1);
  int32_t stage = emitDeviceKernel(
      {x},
      [&] {
        bitonicStage(x, length());
        return true;
      },
      stageSlots, 3);
  if (init < 0 || stage < 0)
    return nullptr;
  emitLaunch(init, initSlots, gridFor(padded), {perm});
  // for (k = 2; k <= P; k *= 2) for (j = k / 2; j > 0; j /= 2): stage.
  DeviceGrid pairs = gridFor(b.CreateLShr(padded, b.getInt64(1)));
  loopWhile(
      b.getInt64(2), [&](Value *k) { return b.CreateICmpULE(k, padded); },
      [&](Value *k) { return b.CreateShl(k, b.getInt64(1)); },
      [&](Value *k) {
        loopWhile(
            b.CreateLShr(k, b.getInt64(1)),
            [&](Value *j) { return b.CreateICmpNE(j, b.getInt64(0)); },
            [&](Value *j) { return b.CreateLShr(j, b.getInt64(1)); },
            [&](Value *j) {
              emitLaunch(stage, stageSlots, pairs, {perm, k, j});
            });
      });
  return perm;
}

bool Codegen::deviceUnique(const Operation &op) {
  ValueId x = op.operands[0], r = op.results[0];
  DType t = fn.type(x).dtype;
  SymExpr u = fn.type(r).dims[0];
  if (!u.isSymbol() || !symIndex.count(u.symbolName()))
    return unsupported("unique with a result size that is not a symbol");
  auto length = [&] { return product(dims(fn.type(x))); };
  Value *perm = sortedPermutation(x, length);
  if (!perm)
    return false;
  CompactionSpec spec;
  spec.what = "unique";
  spec.used = {x};
  spec.extras = {perm};
  spec.length = length;
  // The element at sorted position p (< n).
  auto sortedAt = [&](Value *p) {
    return b.CreateLoad(i64, b.CreateGEP(i64, compactionExtra(0), p));
  };
  // Position p keeps its element when it starts a run of equal values
  // (nothing past the end is loaded: position 0 stands in).
  spec.selected = [&](Value *p, Value *n) {
    Value *inside = b.CreateICmpSLT(p, n);
    Value *first = b.CreateICmpEQ(p, b.getInt64(0));
    Value *at = b.CreateSelect(inside, p, b.getInt64(0));
    Value *prev = b.CreateSelect(b.CreateOr(first, b.CreateNot(inside)),
                                 b.getInt64(0), b.CreateSub(p, b.getInt64(1)));
    Value *v = load(t, bufs[x], sortedAt(at));
    Value *pv = load(t, bufs[x], sortedAt(prev));
    return b.CreateAnd(inside, b.CreateOr(first, orderLess(t, pv, v)));
  };
  spec.write = [&](Value *p, Value *at) {
    copyElementRaw(t, bufs[r], at, bufs[x], sortedAt(p));
  };
  if (!streamCompaction(spec, r))
    return false;
  freeBuffer(perm);
  return true;
}

} // namespace tsl::backend
