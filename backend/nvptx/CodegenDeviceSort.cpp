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
// over a permutation of P indices (P the next power of two >= n). Keys are
// (padding index >= n above every element; then the value in the library's
// order, NaN above everything and -0.0 == 0.0; then the index), all
// distinct, so the network's order is the stable one. Stages whose pairs
// lie within a block's segment of 2 x threads keys run in shared memory,
// many per launch (all merges up to the segment in the first); each larger
// stage is one launch of a kernel with a thread per pair, k and j in its
// argument block, from a host loop. The positions that start a run are
// compacted by the three-phase scan of nonzero (streamCompaction), whose
// one 8-byte read binds the result size. O(n log^2 n) work in O(log^2
// (n / segment)) launches instead of one thread's O(u n); the permutation
// is released at the end.
//
// sort along an axis: the same network over the whole tensor, keys ordered
// by row first (the row of flat index i is (i / (n inner)) inner + i %
// inner), so each row's elements end up consecutive and sorted; a thread
// per sorted position then writes its element and position where its rank
// in the row puts it. One network for any number of rows of any length.
#include "backend/nvptx/DeviceCodegen.h"

namespace tsl::backend {

namespace {

/// An index past every element: the pair it is in loses to all others.
constexpr int64_t kNoIndex = INT64_MAX;
/// Threads per block of the shared-memory sort (two keys each: 16 KiB).
constexpr int32_t kSortBlockThreads = 1024;

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

Value *DeviceCodegen::orderBefore(DType t, Value *av, Value *ai, Value *bv,
                                  Value *bi, bool smallest) {
  Value *earlier = b.CreateICmpSLT(ai, bi);
  if (!isFloat(t)) {
    Value *ax = t == DType::Bool ? b.CreateZExt(av, i64) : av;
    Value *bx = t == DType::Bool ? b.CreateZExt(bv, i64) : bv;
    return b.CreateOr(smallest ? b.CreateICmpSLT(ax, bx)
                               : b.CreateICmpSGT(ax, bx),
                      b.CreateAnd(b.CreateICmpEQ(ax, bx), earlier));
  }
  Value *aNan = b.CreateFCmpUNO(av, av), *bNan = b.CreateFCmpUNO(bv, bv);
  Value *plain =
      b.CreateOr(smallest ? b.CreateFCmpOLT(av, bv) : b.CreateFCmpOGT(av, bv),
                 b.CreateAnd(b.CreateFCmpOEQ(av, bv), earlier));
  return b.CreateSelect(aNan, b.CreateOr(b.CreateNot(bNan), earlier),
                        b.CreateAnd(b.CreateNot(bNan), plain));
}

std::pair<Value *, Value *> DeviceCodegen::blockFirstOfRow(
    DType t, Value *src, Value *base, Value *len,
    const std::function<Value *(Value *, Value *)> &eligible, bool smallest) {
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
    Value *take = b.CreateOr(b.CreateICmpEQ(bi, none),
                             orderBefore(t, v, j, bv, bi, smallest));
    if (eligible)
      take = b.CreateAnd(eligible(v, j), take);
    b.CreateStore(b.CreateSelect(take, v, bv), bestValue);
    b.CreateStore(b.CreateSelect(take, j, bi), bestIndex);
  });
  return blockArgReduce(
      b.CreateLoad(vt, bestValue), b.CreateLoad(i64, bestIndex),
      [&](Value *av, Value *ai, Value *cv, Value *ci) {
        // An empty partial (index none) loses.
        return b.CreateOr(
            b.CreateICmpEQ(ci, none),
            b.CreateAnd(b.CreateICmpNE(ai, none),
                        orderBefore(t, av, ai, cv, ci, smallest)));
      });
}

bool DeviceCodegen::launchTopkRows(const Operation &op) {
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

void DeviceCodegen::bitonicPair(ValueId x, Value *n, Value *keys, Value *q,
                                Value *j, Value *k, Value *offset,
                                const SortRows &rows) {
  DType t = fn.type(x).dtype;
  // Key a before key c: padding (>= n) after every element; then the
  // value in the library's order; then the index. (Pairs are compared only
  // for n >= 2, so index 0 stands in for padding's loads.)
  auto before = [&](Value *a, Value *c) {
    Value *aPad = b.CreateICmpSGE(a, n), *cPad = b.CreateICmpSGE(c, n);
    Value *va = load(t, bufs[x], b.CreateSelect(aPad, b.getInt64(0), a));
    Value *vc = load(t, bufs[x], b.CreateSelect(cPad, b.getInt64(0), c));
    Value *earlier = b.CreateICmpSLT(a, c);
    if (rows.descending)
      std::swap(va, vc);
    Value *byValue =
        b.CreateOr(orderLess(t, va, vc),
                   b.CreateAnd(b.CreateNot(orderLess(t, vc, va)), earlier));
    if (rows.span) {
      auto rowOf = [&](Value *i) {
        return b.CreateAdd(b.CreateMul(b.CreateUDiv(i, rows.span), rows.inner),
                           b.CreateURem(i, rows.inner));
      };
      Value *ra = rowOf(a), *rc = rowOf(c);
      byValue = b.CreateOr(b.CreateICmpULT(ra, rc),
                           b.CreateAnd(b.CreateICmpEQ(ra, rc), byValue));
    }
    Value *byPadding =
        b.CreateAnd(cPad, b.CreateOr(b.CreateNot(aPad), earlier));
    return b.CreateSelect(b.CreateOr(aPad, cPad), byPadding, byValue);
  };
  // Pair q compares positions i and i + j (bit j of i clear).
  Value *low = b.CreateAnd(q, b.CreateSub(j, b.getInt64(1)));
  Value *i = b.CreateAdd(b.CreateShl(b.CreateSub(q, low), b.getInt64(1)), low);
  Value *atI = b.CreateGEP(i64, keys, i);
  Value *atL = b.CreateGEP(i64, keys, b.CreateAdd(i, j));
  Value *a = b.CreateLoad(i64, atI), *c = b.CreateLoad(i64, atL);
  // Ascending where bit k of the position is clear (everywhere in the
  // last merge).
  Value *ascending =
      b.CreateICmpEQ(b.CreateAnd(b.CreateAdd(offset, i), k), b.getInt64(0));
  // Keys are distinct: the pair is out of order when c comes first going
  // up, or a does going down.
  ifThen(b.CreateICmpEQ(before(c, a), ascending), [&] {
    b.CreateStore(c, atI);
    b.CreateStore(a, atL);
  });
}

void DeviceCodegen::bitonicStage(ValueId x, Value *n, const SortRows &rows) {
  Value *perm = deviceExtra(0);
  Value *k = b.CreatePtrToInt(deviceExtra(1), i64);
  Value *j = b.CreatePtrToInt(deviceExtra(2), i64);
  Value *pairs = b.CreateLShr(paddedLength(b, n), b.getInt64(1));
  stridedLoop(deviceThread, pairs, deviceThreads, [&](Value *q) {
    bitonicPair(x, n, perm, q, j, k, b.getInt64(0), rows);
  });
}

void DeviceCodegen::bitonicBlock(ValueId x, Value *n, const SortRows &rows) {
  Value *perm = deviceExtra(0);
  Value *kFrom = b.CreatePtrToInt(deviceExtra(1), i64);
  Value *kTo = b.CreatePtrToInt(deviceExtra(2), i64);
  Value *padded = paddedLength(b, n);
  Value *tid = gpuThreadIdx(), *threads = gpuBlockDim();
  Value *span = b.CreateBinaryIntrinsic(llvm::Intrinsic::umin, padded,
                                        b.CreateShl(threads, b.getInt64(1)));
  Value *keys = gpuShared();
  // The first launch starts from the identity permutation.
  Value *fresh = b.CreateICmpEQ(kFrom, b.getInt64(2));
  blockStrideLoop(b.CreateUDiv(padded, span), [&](Value *segment) {
    Value *base = b.CreateMul(segment, span);
    // (Each thread loads and stores the same positions: the segments need
    // no barrier between them.)
    stridedLoop(tid, span, threads, [&](Value *i) {
      Value *at = b.CreateAdd(base, i);
      b.CreateStore(at, b.CreateGEP(i64, keys, i));
      ifThen(b.CreateNot(fresh), [&] {
        b.CreateStore(b.CreateLoad(i64, b.CreateGEP(i64, perm, at)),
                      b.CreateGEP(i64, keys, i));
      });
    });
    gpuBarrier();
    loopWhile(
        kFrom, [&](Value *k) { return b.CreateICmpULE(k, kTo); },
        [&](Value *k) { return b.CreateShl(k, b.getInt64(1)); },
        [&](Value *k) {
          Value *first = b.CreateLShr(
              b.CreateBinaryIntrinsic(llvm::Intrinsic::umin, k, span),
              b.getInt64(1));
          loopWhile(
              first, [&](Value *j) { return b.CreateICmpNE(j, b.getInt64(0)); },
              [&](Value *j) { return b.CreateLShr(j, b.getInt64(1)); },
              [&](Value *j) {
                stridedLoop(tid, b.CreateLShr(span, b.getInt64(1)), threads,
                            [&](Value *q) {
                              bitonicPair(x, n, keys, q, j, k, base, rows);
                            });
                gpuBarrier();
              });
        });
    stridedLoop(tid, span, threads, [&](Value *i) {
      b.CreateStore(b.CreateLoad(i64, b.CreateGEP(i64, keys, i)),
                    b.CreateGEP(i64, perm, b.CreateAdd(base, i)));
    });
  });
}

Value *DeviceCodegen::sortedPermutation(ValueId x,
                                        const std::function<Value *()> &length,
                                        const std::function<SortRows()> &rows) {
  auto rowsHere = [&] { return rows ? rows() : SortRows{}; };
  Value *padded = paddedLength(b, length());
  // P words; past 2^59 of them the byte size leaves int64 (-1: the
  // allocation fails with that message).
  Value *bytes =
      b.CreateSelect(b.CreateICmpUGT(padded, b.getInt64(int64_t{1} << 59)),
                     b.getInt64(-1), b.CreateMul(padded, b.getInt64(8)));
  Value *perm = deviceScratch(bytes);
  std::vector<ValueId> blockSlots, stageSlots;
  int32_t inBlocks = emitDeviceKernel(
      {x},
      [&] {
        cooperative = true;
        bitonicBlock(x, length(), rowsHere());
        return true;
      },
      blockSlots, 3);
  int32_t stage = emitDeviceKernel(
      {x},
      [&] {
        bitonicStage(x, length(), rowsHere());
        return true;
      },
      stageSlots, 3);
  if (inBlocks < 0 || stage < 0)
    return nullptr;
  // Segments of span = min(P, 2 threads) keys, a pair per thread.
  Value *threads = b.CreateBinaryIntrinsic(
      llvm::Intrinsic::smax, b.getInt64(32),
      b.CreateBinaryIntrinsic(llvm::Intrinsic::smin,
                              b.getInt64(kSortBlockThreads),
                              b.CreateLShr(padded, b.getInt64(1))));
  Value *span = b.CreateBinaryIntrinsic(llvm::Intrinsic::smin, padded,
                                        b.CreateShl(threads, b.getInt64(1)));
  DeviceGrid segments{b.CreateUDiv(padded, span), b.CreateTrunc(threads, i32),
                      2 * kSortBlockThreads * 8};
  DeviceGrid pairs = gridFor(b.CreateLShr(padded, b.getInt64(1)));
  // Every merge up to the span in shared memory, then for each larger k
  // the stages of j >= span one launch each and the rest in shared memory.
  emitLaunch(inBlocks, blockSlots, segments, {perm, b.getInt64(2), span});
  loopWhile(
      b.CreateShl(span, b.getInt64(1)),
      [&](Value *k) { return b.CreateICmpULE(k, padded); },
      [&](Value *k) { return b.CreateShl(k, b.getInt64(1)); },
      [&](Value *k) {
        loopWhile(
            b.CreateLShr(k, b.getInt64(1)),
            [&](Value *j) { return b.CreateICmpUGE(j, span); },
            [&](Value *j) { return b.CreateLShr(j, b.getInt64(1)); },
            [&](Value *j) {
              emitLaunch(stage, stageSlots, pairs, {perm, k, j});
            });
        emitLaunch(inBlocks, blockSlots, segments, {perm, k, k});
      });
  return perm;
}

bool DeviceCodegen::deviceSort(const Operation &op) {
  ValueId x = op.operands[0], values = op.results[0], indices = op.results[1];
  DType t = fn.type(x).dtype;
  size_t axis = static_cast<size_t>(op.intAttr("axis"));
  bool descending = op.boolAttr("descending");
  allocateResult(op, 0);
  allocateResult(op, 1);
  auto length = [&] { return product(dims(fn.type(x))); };
  auto rows = [&] {
    AxisSizes s = axisSizes(fn.type(x), axis);
    return SortRows{b.CreateMul(s.n, s.inner), s.inner, descending};
  };
  Value *perm = sortedPermutation(x, length, rows);
  if (!perm)
    return false;
  std::vector<ValueId> slots;
  int32_t k = emitDeviceKernel(
      {x, values, indices},
      [&] {
        Value *sorted = deviceExtra(0);
        AxisSizes s = axisSizes(fn.type(x), axis);
        loops({length()}, [&](const std::vector<Value *> &p) {
          // Sorted position p: rank p % n of row p / n; element e.
          Value *e = b.CreateLoad(i64, b.CreateGEP(i64, sorted, p[0]));
          Value *row = b.CreateUDiv(p[0], s.n), *rank = b.CreateURem(p[0], s.n);
          Value *outer = b.CreateUDiv(row, s.inner),
                *inner = b.CreateURem(row, s.inner);
          Value *at = b.CreateAdd(
              b.CreateMul(b.CreateAdd(b.CreateMul(outer, s.n), rank), s.inner),
              inner);
          copyElementRaw(t, bufs[values], at, bufs[x], e);
          store(DType::I64, bufs[indices], at,
                b.CreateURem(b.CreateUDiv(e, s.inner), s.n));
        });
        return true;
      },
      slots, 1);
  if (k < 0)
    return false;
  emitLaunch(k, slots, gridFor(length()), {perm});
  freeBuffer(perm);
  return true;
}

bool DeviceCodegen::deviceUnique(const Operation &op) {
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
