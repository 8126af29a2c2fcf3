// Device mode: the ops the CPU runs as library kernels (runtime/
// KernelLibrary.cpp), as GPU kernels with one thread per result element
// (per row for topk; one thread for unique's sorted selection). Same
// semantics as the library: NaN orders above everything, ties keep the
// earlier index, bounds and ranges are checked.
#include "backend/common/Codegen.h"

namespace tsl::backend {

Value *Codegen::orderLess(DType t, Value *u, Value *v) {
  if (!isFloat(t)) {
    if (t == DType::Bool) {
      u = b.CreateZExt(u, i64);
      v = b.CreateZExt(v, i64);
    }
    return b.CreateICmpSLT(u, v);
  }
  // !isnan(u) && (isnan(v) || u < v)
  return b.CreateAnd(b.CreateFCmpORD(u, u),
                     b.CreateOr(b.CreateFCmpUNO(v, v), b.CreateFCmpOLT(u, v)));
}

/// Copies element \p from of \p src to element \p to of \p dst, bits as
/// stored (no conversion).
void Codegen::copyElementRaw(DType t, Value *dst, Value *to, Value *src,
                             Value *from) {
  llvm::Type *st = storageType(t);
  b.CreateStore(b.CreateLoad(st, b.CreateGEP(st, src, from)),
                b.CreateGEP(st, dst, to));
}

bool Codegen::deviceLibraryOp(const Operation &op) {
  switch (op.code) {
  case OpCode::Argmax:
    return deviceArgmax(op);
  case OpCode::IndexSelect:
    return deviceIndexSelect(op);
  case OpCode::MaxPool2d:
  case OpCode::Conv2d:
    return deviceWindow(op);
  case OpCode::Topk:
    return deviceTopk(op);
  default:
    return unsupported(opInfo(op.code).name);
  }
}

bool Codegen::deviceArgmax(const Operation &op) {
  ValueId x = op.operands[0];
  const TensorType &in = fn.type(x);
  DType t = in.dtype;
  Value *dst = allocateResult(op);
  const auto &axes = op.intsAttr("axes");
  std::vector<Value *> shape = dims(in);
  Value *n, *inner = b.getInt64(1), *outer = b.getInt64(1);
  if (axes.empty()) {
    n = product(shape);
  } else {
    size_t a = static_cast<size_t>(axes[0]);
    n = shape[a];
    for (size_t i = 0; i < a; ++i)
      outer = b.CreateMul(outer, shape[i]);
    for (size_t i = a + 1; i < shape.size(); ++i)
      inner = b.CreateMul(inner, shape[i]);
  }
  Value *best = entryAlloca(i64);
  loops({b.CreateMul(outer, inner)}, [&](const std::vector<Value *> &o) {
    Value *bIdx = b.CreateUDiv(o[0], inner), *k = b.CreateURem(o[0], inner);
    auto at = [&](Value *j) {
      return load(
          t, bufs[x],
          b.CreateAdd(b.CreateMul(b.CreateAdd(b.CreateMul(bIdx, n), j), inner),
                      k));
    };
    b.CreateStore(b.getInt64(0), best);
    loops({n}, [&](const std::vector<Value *> &j) {
      Value *cur = at(b.CreateLoad(i64, best)), *cand = at(j[0]);
      // The first maximum; a NaN is the maximum once seen.
      Value *better = orderLess(t, cur, cand);
      if (isFloat(t))
        better = b.CreateAnd(b.CreateFCmpORD(cur, cur),
                             b.CreateOr(better, b.CreateFCmpUNO(cand, cand)));
      b.CreateStore(b.CreateSelect(better, j[0], b.CreateLoad(i64, best)),
                    best);
    });
    store(DType::I64, dst, o[0], b.CreateLoad(i64, best));
  });
  return true;
}

bool Codegen::launchArgmaxRows(const Operation &op) {
  ValueId x = op.operands[0];
  const TensorType &in = fn.type(x);
  DType t = in.dtype;
  allocateResult(op);
  // Rows of n elements: the last axis, or the whole tensor as one row.
  std::vector<Value *> shape = dims(in);
  bool whole = op.intsAttr("axes").empty();
  Value *n = whole ? product(shape) : shape.back();
  // (n > 0: the host failed the call before on an empty axis.)
  Value *rows = whole ? b.getInt64(1) : b.CreateSDiv(product(shape), n);
  std::vector<ValueId> slots;
  int32_t k = emitDeviceKernel(
      {x, op.results[0]},
      [&] {
        cooperative = true;
        std::vector<Value *> sh = dims(in);
        Value *len = whole ? product(sh) : sh.back();
        Value *count = whole ? b.getInt64(1) : b.CreateSDiv(product(sh), len);
        Value *tid = gpuThreadIdx(), *step = gpuBlockDim();
        // a beats b: the library's order (a NaN once seen; else the larger
        // value; ties and NaN pairs keep the earlier index).
        auto beats = [&](Value *av, Value *ai, Value *bv, Value *bi) {
          Value *earlier = b.CreateICmpSLT(ai, bi);
          if (!isFloat(t)) {
            Value *ax = t == DType::Bool ? b.CreateZExt(av, i64) : av;
            Value *bx = t == DType::Bool ? b.CreateZExt(bv, i64) : bv;
            return b.CreateOr(b.CreateICmpSGT(ax, bx),
                              b.CreateAnd(b.CreateICmpEQ(ax, bx), earlier));
          }
          Value *aNan = b.CreateFCmpUNO(av, av),
                *bNan = b.CreateFCmpUNO(bv, bv);
          Value *plain =
              b.CreateOr(b.CreateFCmpOGT(av, bv),
                         b.CreateAnd(b.CreateFCmpOEQ(av, bv), earlier));
          return b.CreateSelect(aNan, b.CreateOr(b.CreateNot(bNan), earlier),
                                b.CreateAnd(b.CreateNot(bNan), plain));
        };
        blockStrideLoop(count, [&](Value *row) {
          Value *base = b.CreateMul(row, len);
          // This thread's best of elements tid, tid + blockDim, ...
          llvm::Type *vt = computeType(t);
          Value *none = b.getInt64(INT64_MAX); // loses to everything
          Value *bestValue = entryAlloca(vt), *bestIndex = entryAlloca(i64);
          // Any value: with index `none` it loses.
          b.CreateStore(load(t, bufs[x], base), bestValue);
          b.CreateStore(none, bestIndex);
          stridedLoop(tid, len, step, [&](Value *j) {
            Value *v = load(t, bufs[x], b.CreateAdd(base, j));
            Value *bv = b.CreateLoad(vt, bestValue);
            Value *bi = b.CreateLoad(i64, bestIndex);
            Value *take =
                b.CreateOr(b.CreateICmpEQ(bi, none), beats(v, j, bv, bi));
            b.CreateStore(b.CreateSelect(take, v, bv), bestValue);
            b.CreateStore(b.CreateSelect(take, j, bi), bestIndex);
          });
          Value *index =
              blockArgReduce(
                  b.CreateLoad(vt, bestValue), b.CreateLoad(i64, bestIndex),
                  [&](Value *av, Value *ai, Value *cv, Value *ci) {
                    // An empty partial (index none) loses.
                    return b.CreateOr(b.CreateICmpEQ(ci, none),
                                      b.CreateAnd(b.CreateICmpNE(ai, none),
                                                  beats(av, ai, cv, ci)));
                  })
                  .second;
          onThreadZero(
              [&] { store(DType::I64, bufs[op.results[0]], row, index); });
        });
        return true;
      },
      slots);
  if (k < 0)
    return false;
  emitLaunch(k, slots, {rows, rowThreads(n), 32 * 16});
  return true;
}

bool Codegen::deviceIndexSelect(const Operation &op) {
  ValueId x = op.operands[0];
  const TensorType &in = fn.type(x);
  DType t = in.dtype;
  Value *dst = allocateResult(op);
  ValueId idx = op.operands[1];
  size_t axis = static_cast<size_t>(op.intAttr("axis"));
  std::vector<Value *> shape = dims(in);
  Value *n = shape[axis], *inner = b.getInt64(1);
  for (size_t i = axis + 1; i < shape.size(); ++i)
    inner = b.CreateMul(inner, shape[i]);
  Value *nidx = expr(fn.type(idx).dims[0]);
  std::string outOfBounds =
      "an index is out of bounds for axis " + std::to_string(axis);
  // Every index is checked, as the library does, even when the result
  // has no elements (another dim is 0) and the copy below checks none.
  loops({nidx}, [&](const std::vector<Value *> &j) {
    Value *v = load(fn.type(idx).dtype, bufs[idx], j[0]);
    if (fn.type(idx).dtype == DType::Bool)
      v = b.CreateZExt(v, i64);
    failMessageIf(
        b.CreateOr(b.CreateICmpSLT(v, b.getInt64(0)), b.CreateICmpSGE(v, n)),
        outOfBounds);
  });
  loops({product(dims(fn.type(op.results[0])))},
        [&](const std::vector<Value *> &o) {
          Value *k = b.CreateURem(o[0], inner);
          Value *rest = b.CreateUDiv(o[0], inner);
          Value *j = b.CreateURem(rest, nidx),
                *outerIdx = b.CreateUDiv(rest, nidx);
          Value *v = load(fn.type(idx).dtype, bufs[idx], j);
          if (fn.type(idx).dtype == DType::Bool)
            v = b.CreateZExt(v, i64);
          // Again here: threads of other blocks may not have failed yet.
          failMessageIf(b.CreateOr(b.CreateICmpSLT(v, b.getInt64(0)),
                                   b.CreateICmpSGE(v, n)),
                        outOfBounds);
          copyElementRaw(
              t, dst, o[0], bufs[x],
              b.CreateAdd(
                  b.CreateMul(b.CreateAdd(b.CreateMul(outerIdx, n), v), inner),
                  k));
        });
  return true;
}

bool Codegen::deviceWindow(const Operation &op) {
  ValueId x = op.operands[0];
  const TensorType &in = fn.type(x);
  DType t = in.dtype;
  Value *dst = allocateResult(op);
  std::vector<Value *> xs = dims(in), os = dims(fn.type(op.results[0]));
  auto st = op.intsAttr("stride"), pd = op.intsAttr("padding");
  Value *C = xs[1], *H = xs[2], *W = xs[3];
  bool conv = op.code == OpCode::Conv2d;
  std::vector<Value *> ws;
  Value *KH, *KW;
  if (conv) {
    ws = dims(fn.type(op.operands[1]));
    KH = ws[2];
    KW = ws[3];
  } else {
    auto k = op.intsAttr("kernel");
    KH = b.getInt64(k[0]);
    KW = b.getInt64(k[1]);
  }
  // conv2d accumulates in f64 like the library; max_pool2d compares in
  // the compute type and keeps a NaN once seen.
  llvm::Type *acc = conv ? b.getDoubleTy() : computeType(t);
  Value *slot = entryAlloca(acc), *any = entryAlloca(b.getInt1Ty());
  loops(os, [&](const std::vector<Value *> &o) {
    Value *nIdx = o[0], *ch = o[1], *oh = o[2], *ow = o[3];
    if (conv)
      b.CreateStore(
          op.operands.size() > 2
              ? convert(load(t, bufs[op.operands[2]], ch), t, DType::F64)
              : llvm::ConstantFP::get(acc, 0.0),
          slot);
    else
      b.CreateStore(isFloat(t) ? llvm::ConstantFP::getInfinity(acc, true)
                               : static_cast<Value *>(b.getInt64(INT64_MIN)),
                    slot);
    b.CreateStore(b.getFalse(), any);
    std::vector<Value *> window = {conv ? C : b.getInt64(1), KH, KW};
    loops(window, [&](const std::vector<Value *> &w) {
      Value *c = conv ? w[0] : ch;
      Value *ih = b.CreateAdd(
          b.CreateSub(b.CreateMul(oh, b.getInt64(st[0])), b.getInt64(pd[0])),
          w[1]);
      Value *iw = b.CreateAdd(
          b.CreateSub(b.CreateMul(ow, b.getInt64(st[1])), b.getInt64(pd[1])),
          w[2]);
      Value *inside =
          b.CreateAnd(b.CreateAnd(b.CreateICmpSGE(ih, b.getInt64(0)),
                                  b.CreateICmpSLT(ih, H)),
                      b.CreateAnd(b.CreateICmpSGE(iw, b.getInt64(0)),
                                  b.CreateICmpSLT(iw, W)));
      auto *take = llvm::BasicBlock::Create(ctx, "window", kernel);
      auto *skip = llvm::BasicBlock::Create(ctx, "outside", kernel);
      b.CreateCondBr(inside, take, skip);
      b.SetInsertPoint(take);
      Value *xi = b.CreateAdd(
          b.CreateMul(
              b.CreateAdd(b.CreateMul(b.CreateAdd(b.CreateMul(nIdx, C), c), H),
                          ih),
              W),
          iw);
      Value *v = load(t, bufs[x], xi);
      Value *cur = b.CreateLoad(acc, slot);
      if (conv) {
        Value *wi = b.CreateAdd(
            b.CreateMul(
                b.CreateAdd(b.CreateMul(b.CreateAdd(b.CreateMul(ch, C), c), KH),
                            w[1]),
                KW),
            w[2]);
        Value *wv = load(t, bufs[op.operands[1]], wi);
        b.CreateStore(
            b.CreateFAdd(cur, b.CreateFMul(convert(v, t, DType::F64),
                                           convert(wv, t, DType::F64))),
            slot);
      } else {
        Value *first = b.CreateNot(b.CreateLoad(b.getInt1Ty(), any));
        Value *greater = isFloat(t) ? b.CreateOr(b.CreateFCmpOGT(v, cur),
                                                 b.CreateFCmpUNO(v, v))
                                    : b.CreateICmpSGT(v, cur);
        b.CreateStore(b.CreateSelect(b.CreateOr(first, greater), v, cur), slot);
        b.CreateStore(b.getTrue(), any);
      }
      b.CreateBr(skip);
      b.SetInsertPoint(skip);
    });
    Value *r = b.CreateLoad(acc, slot);
    store(t, dst, offset(o, contiguousStrides(os)),
          conv ? convert(r, DType::F64, t) : r);
  });
  return true;
}

bool Codegen::deviceTopk(const Operation &op) {
  ValueId x = op.operands[0];
  const TensorType &in = fn.type(x);
  DType t = in.dtype;
  // One thread per row: the j-th pick is the first element, in the order
  // (value descending, NaN first, then index ascending), after the
  // (j-1)-th. O(k n) per row, no scratch memory.
  Value *values = allocateResult(op, 0), *indices = allocateResult(op, 1);
  std::vector<Value *> shape = dims(in);
  Value *n = shape.back();
  Value *rows = b.CreateUDiv(
      product(shape),
      b.CreateSelect(b.CreateICmpEQ(n, b.getInt64(0)), b.getInt64(1), n));
  Value *k = expr(op.exprAttr("k"));
  Value *prev = entryAlloca(i64), *best = entryAlloca(i64);
  loops({rows}, [&](const std::vector<Value *> &r) {
    Value *base = b.CreateMul(r[0], n);
    auto at = [&](Value *i) { return load(t, bufs[x], b.CreateAdd(base, i)); };
    // a before b: a's value is larger, or equal with a smaller index.
    auto before = [&](Value *a, Value *c) {
      Value *va = at(a), *vc = at(c);
      Value *equal = b.CreateAnd(b.CreateNot(orderLess(t, va, vc)),
                                 b.CreateNot(orderLess(t, vc, va)));
      return b.CreateOr(orderLess(t, vc, va),
                        b.CreateAnd(equal, b.CreateICmpSLT(a, c)));
    };
    b.CreateStore(b.getInt64(-1), prev);
    loops({k}, [&](const std::vector<Value *> &j) {
      b.CreateStore(b.getInt64(-1), best);
      loops({n}, [&](const std::vector<Value *> &i) {
        Value *p = b.CreateLoad(i64, prev), *cur = b.CreateLoad(i64, best);
        auto *check = llvm::BasicBlock::Create(ctx, "candidate", kernel);
        auto *next = llvm::BasicBlock::Create(ctx, "nextcandidate", kernel);
        // (Loads only of valid indices: -1 means none yet.)
        Value *afterPrev = b.CreateICmpSLT(p, b.getInt64(0));
        auto *test = llvm::BasicBlock::Create(ctx, "afterprev", kernel);
        auto *join = llvm::BasicBlock::Create(ctx, "afterprevjoin", kernel);
        llvm::BasicBlock *entry = b.GetInsertBlock();
        b.CreateCondBr(afterPrev, join, test);
        b.SetInsertPoint(test);
        Value *after = before(p, i[0]);
        llvm::BasicBlock *testEnd = b.GetInsertBlock();
        b.CreateBr(join);
        b.SetInsertPoint(join);
        llvm::PHINode *ok = b.CreatePHI(b.getInt1Ty(), 2);
        ok->addIncoming(b.getTrue(), entry);
        ok->addIncoming(after, testEnd);
        b.CreateCondBr(ok, check, next);
        b.SetInsertPoint(check);
        auto *compare = llvm::BasicBlock::Create(ctx, "compare", kernel);
        auto *take = llvm::BasicBlock::Create(ctx, "take", kernel);
        b.CreateCondBr(b.CreateICmpSLT(cur, b.getInt64(0)), take, compare);
        b.SetInsertPoint(compare);
        b.CreateCondBr(before(i[0], cur), take, next);
        b.SetInsertPoint(take);
        b.CreateStore(i[0], best);
        b.CreateBr(next);
        b.SetInsertPoint(next);
      });
      Value *chosen = b.CreateLoad(i64, best);
      Value *o = b.CreateAdd(b.CreateMul(r[0], k), j[0]);
      copyElementRaw(t, values, o, bufs[x], b.CreateAdd(base, chosen));
      store(DType::I64, indices, o, chosen);
      b.CreateStore(chosen, prev);
    });
  });
  return true;
}

bool Codegen::deviceUnique(const Operation &op) {
  // Sorted distinct values by selection: each step takes the smallest value
  // above the last one taken (the earliest such element, like the
  // library's stable sort). A counting launch binds the unbacked size, the
  // second writes the values. One thread, O(count n).
  ValueId x = op.operands[0], r = op.results[0];
  SymExpr u = fn.type(r).dims[0];
  if (!u.isSymbol() || !symIndex.count(u.symbolName()))
    return unsupported("unique with a result size that is not a symbol");
  DType t = fn.type(x).dtype;
  auto selection = [&](bool write) {
    firstDeviceThreadOnly();
    Value *n = product(dims(fn.type(x)));
    Value *prev = entryAlloca(i64), *best = entryAlloca(i64),
          *count = entryAlloca(i64);
    b.CreateStore(b.getInt64(-1), prev);
    b.CreateStore(b.getInt64(0), count);
    ++loopNesting; // sequential: this thread does it all
    // At most n steps; a step that finds nothing ends the selection.
    loops({n}, [&](const std::vector<Value *> &) {
      b.CreateStore(b.getInt64(-1), best);
      loops({n}, [&](const std::vector<Value *> &i) {
        Value *p = b.CreateLoad(i64, prev), *cur = b.CreateLoad(i64, best);
        Value *vi = load(t, bufs[x], i[0]);
        // Loads at index 0 stand in for "none" (-1); selects discard them.
        Value *vp = load(t, bufs[x],
                         b.CreateSelect(b.CreateICmpSLT(p, b.getInt64(0)),
                                        b.getInt64(0), p));
        Value *vc = load(t, bufs[x],
                         b.CreateSelect(b.CreateICmpSLT(cur, b.getInt64(0)),
                                        b.getInt64(0), cur));
        Value *above =
            b.CreateOr(b.CreateICmpSLT(p, b.getInt64(0)), orderLess(t, vp, vi));
        Value *smaller = b.CreateOr(b.CreateICmpSLT(cur, b.getInt64(0)),
                                    orderLess(t, vi, vc));
        b.CreateStore(b.CreateSelect(b.CreateAnd(above, smaller), i[0], cur),
                      best);
      });
      Value *chosen = b.CreateLoad(i64, best);
      auto *found = llvm::BasicBlock::Create(ctx, "found", kernel);
      auto *after = llvm::BasicBlock::Create(ctx, "step", kernel);
      b.CreateCondBr(b.CreateICmpSGE(chosen, b.getInt64(0)), found, after);
      b.SetInsertPoint(found);
      Value *c = b.CreateLoad(i64, count);
      if (write)
        copyElementRaw(t, bufs[r], c, bufs[x], chosen);
      b.CreateStore(b.CreateAdd(c, b.getInt64(1)), count);
      b.CreateStore(chosen, prev);
      b.CreateBr(after);
      b.SetInsertPoint(after);
    });
    --loopNesting;
    if (!write)
      b.CreateStore(b.CreateLoad(i64, count), deviceExtra(0));
    return true;
  };
  Value *countWord = deviceWord();
  std::vector<ValueId> slots;
  int32_t counting = emitDeviceKernel(
      {x}, [&] { return selection(false); }, slots, 1);
  if (counting < 0)
    return false;
  emitLaunch(counting, slots, {b.getInt64(1), b.getInt32(32)}, {countWord});
  readSymbol(u.symbolName(), countWord);
  allocate(r, b.CreateLoad(i64, symSlot(u.symbolName())));
  int32_t filling = emitDeviceKernel(
      {x, r}, [&] { return selection(true); }, slots);
  if (filling < 0)
    return false;
  emitLaunch(filling, slots, {b.getInt64(1), b.getInt32(32)});
  return true;
}

} // namespace tsl::backend
