// Device mode: the ops the CPU runs as library kernels (runtime/
// KernelLibrary.cpp), as GPU kernels with one thread per result element
// (a block per row for argmax over rows; topk and unique are in
// CodegenDeviceSort.cpp). Same semantics as the library: NaN orders above
// everything, ties keep the earlier index, bounds and ranges are checked.
#include "backend/nvptx/DeviceCodegen.h"

namespace tsl::backend {

Value *DeviceCodegen::orderLess(DType t, Value *u, Value *v) {
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
void DeviceCodegen::copyElementRaw(DType t, Value *dst, Value *to, Value *src,
                                   Value *from) {
  llvm::Type *st = storageType(t);
  b.CreateStore(b.CreateLoad(st, b.CreateGEP(st, src, from)),
                b.CreateGEP(st, dst, to));
}

bool DeviceCodegen::deviceArgmax(const Operation &op) {
  ValueId x = op.operands[0];
  const TensorType &in = fn.type(x);
  DType t = in.dtype;
  Value *dst = allocateResult(op);
  const auto &axes = op.intsAttr("axes");
  bool smallest = op.code == OpCode::Argmin;
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
      // The first maximum (minimum); a NaN is it once seen.
      Value *better =
          smallest ? orderLess(t, cand, cur) : orderLess(t, cur, cand);
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

bool DeviceCodegen::launchArgmaxRows(const Operation &op) {
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
        blockStrideLoop(count, [&](Value *row) {
          Value *index = blockFirstOfRow(t, bufs[x], b.CreateMul(row, len), len,
                                         nullptr, op.code == OpCode::Argmin)
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

bool DeviceCodegen::deviceIndexSelect(const Operation &op) {
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
  std::string outOfBounds = "index {0} is out of bounds for axis " +
                            std::to_string(axis) + " of size {1}";
  // Every index is checked, as the library does, even when the result
  // has no elements (another dim is 0) and the copy below checks none.
  loops({nidx}, [&](const std::vector<Value *> &j) {
    Value *v = load(fn.type(idx).dtype, bufs[idx], j[0]);
    if (fn.type(idx).dtype == DType::Bool)
      v = b.CreateZExt(v, i64);
    failMessageIf(
        b.CreateOr(b.CreateICmpSLT(v, b.getInt64(0)), b.CreateICmpSGE(v, n)),
        outOfBounds, {v, n});
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
                        outOfBounds, {v, n});
          copyElementRaw(
              t, dst, o[0], bufs[x],
              b.CreateAdd(
                  b.CreateMul(b.CreateAdd(b.CreateMul(outerIdx, n), v), inner),
                  k));
        });
  return true;
}

bool DeviceCodegen::deviceGather(const Operation &op) {
  ValueId x = op.operands[0], idx = op.operands[1];
  DType t = fn.type(x).dtype, it = fn.type(idx).dtype;
  Value *dst = allocateResult(op);
  size_t axis = static_cast<size_t>(op.intAttr("axis"));
  std::vector<Value *> xs = dims(fn.type(x)), is = dims(fn.type(idx));
  std::vector<Value *> strides = contiguousStrides(xs);
  std::string outOfBounds = "index {0} is out of bounds for axis " +
                            std::to_string(axis) + " of size {1}";
  loops({product(is)}, [&](const std::vector<Value *> &o) {
    Value *v = load(it, bufs[idx], o[0]);
    if (it == DType::Bool)
      v = b.CreateZExt(v, i64);
    failMessageIf(b.CreateOr(b.CreateICmpSLT(v, b.getInt64(0)),
                             b.CreateICmpSGE(v, xs[axis])),
                  outOfBounds, {v, xs[axis]});
    // o's multi-index over the index's shape, the axis coordinate v.
    Value *rest = o[0], *at = b.getInt64(0);
    for (size_t d = is.size(); d-- > 0;) {
      Value *coord = d == axis ? v : b.CreateURem(rest, is[d]);
      at = b.CreateAdd(at, b.CreateMul(coord, strides[d]));
      rest = b.CreateUDiv(rest, is[d]);
    }
    copyElementRaw(t, dst, o[0], bufs[x], at);
  });
  return true;
}

bool DeviceCodegen::deviceScatter(const Operation &op) {
  ValueId x = op.operands[0], idx = op.operands[1], src = op.operands[2],
          r = op.results[0];
  DType t = fn.type(x).dtype, it = fn.type(idx).dtype;
  size_t axis = static_cast<size_t>(op.intAttr("axis"));
  allocateResult(op);
  std::vector<ValueId> copySlots, lineSlots;
  int32_t copy = emitDeviceKernel(
      {x, r},
      [&] {
        loops({product(dims(fn.type(x)))}, [&](const std::vector<Value *> &o) {
          copyElementRaw(t, bufs[r], o[0], bufs[x], o[0]);
        });
        return true;
      },
      copySlots);
  // The index's lines along the axis: every index dim but the axis.
  auto lineCount = [&] {
    std::vector<Value *> is = dims(fn.type(idx));
    is.erase(is.begin() + static_cast<std::ptrdiff_t>(axis));
    return product(is);
  };
  int32_t lines = emitDeviceKernel(
      {idx, src, r},
      [&] {
        std::vector<Value *> is = dims(fn.type(idx));
        std::vector<Value *> xst = contiguousStrides(dims(fn.type(x))),
                             sst = contiguousStrides(dims(fn.type(src))),
                             ist = contiguousStrides(is);
        std::string outOfBounds = "index {0} is out of bounds for axis " +
                                  std::to_string(axis) + " of size {1}";
        loops({lineCount()}, [&](const std::vector<Value *> &l) {
          Value *rest = l[0], *at = b.getInt64(0), *from = b.getInt64(0),
                *ip = b.getInt64(0);
          for (size_t d = is.size(); d-- > 0;) {
            if (d == axis)
              continue;
            Value *coord = b.CreateURem(rest, is[d]);
            rest = b.CreateUDiv(rest, is[d]);
            at = b.CreateAdd(at, b.CreateMul(coord, xst[d]));
            from = b.CreateAdd(from, b.CreateMul(coord, sst[d]));
            ip = b.CreateAdd(ip, b.CreateMul(coord, ist[d]));
          }
          loops({is[axis]}, [&](const std::vector<Value *> &j) {
            Value *v = load(it, bufs[idx],
                            b.CreateAdd(ip, b.CreateMul(j[0], ist[axis])));
            if (it == DType::Bool)
              v = b.CreateZExt(v, i64);
            Value *n = dims(fn.type(x))[axis];
            failMessageIf(b.CreateOr(b.CreateICmpSLT(v, b.getInt64(0)),
                                     b.CreateICmpSGE(v, n)),
                          outOfBounds, {v, n});
            Value *o = b.CreateAdd(at, b.CreateMul(v, xst[axis]));
            Value *s = b.CreateAdd(from, b.CreateMul(j[0], sst[axis]));
            if (!op.boolAttr("add")) {
              copyElementRaw(t, bufs[r], o, bufs[src], s);
              return;
            }
            store(t, bufs[r], o,
                  binary(OpCode::Add, t, load(t, bufs[r], o),
                         load(t, bufs[src], s)));
          });
        });
        return true;
      },
      lineSlots);
  if (copy < 0 || lines < 0)
    return false;
  emitLaunch(copy, copySlots, gridFor(product(dims(fn.type(x)))));
  emitLaunch(lines, lineSlots, gridFor(lineCount()));
  return true;
}

bool DeviceCodegen::deviceWindow(const Operation &op) {
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

bool DeviceCodegen::deviceConvWeightGrad(const Operation &op) {
  ValueId x = op.operands[0], g = op.operands[1];
  DType t = fn.type(x).dtype;
  Value *dst = allocateResult(op);
  std::vector<Value *> xs = dims(fn.type(x)), gs = dims(fn.type(g)),
                       os = dims(fn.type(op.results[0]));
  auto st = op.intsAttr("stride"), pd = op.intsAttr("padding");
  Value *C = xs[1], *H = xs[2], *W = xs[3], *O = os[0], *OH = gs[2],
        *OW = gs[3];
  Value *slot = entryAlloca(b.getDoubleTy());
  loops(os, [&](const std::vector<Value *> &o) {
    Value *oc = o[0], *c = o[1], *kh = o[2], *kw = o[3];
    b.CreateStore(llvm::ConstantFP::get(b.getDoubleTy(), 0.0), slot);
    loops({xs[0], OH, OW}, [&](const std::vector<Value *> &p) {
      Value *n = p[0], *oh = p[1], *ow = p[2];
      Value *ih = b.CreateAdd(
          b.CreateSub(b.CreateMul(oh, b.getInt64(st[0])), b.getInt64(pd[0])),
          kh);
      Value *iw = b.CreateAdd(
          b.CreateSub(b.CreateMul(ow, b.getInt64(st[1])), b.getInt64(pd[1])),
          kw);
      Value *inside =
          b.CreateAnd(b.CreateAnd(b.CreateICmpSGE(ih, b.getInt64(0)),
                                  b.CreateICmpSLT(ih, H)),
                      b.CreateAnd(b.CreateICmpSGE(iw, b.getInt64(0)),
                                  b.CreateICmpSLT(iw, W)));
      ifThen(inside, [&] {
        Value *gi = b.CreateAdd(
            b.CreateMul(
                b.CreateAdd(b.CreateMul(b.CreateAdd(b.CreateMul(n, O), oc), OH),
                            oh),
                OW),
            ow);
        Value *xi = b.CreateAdd(
            b.CreateMul(
                b.CreateAdd(b.CreateMul(b.CreateAdd(b.CreateMul(n, C), c), H),
                            ih),
                W),
            iw);
        Value *term =
            b.CreateFMul(convert(load(t, bufs[g], gi), t, DType::F64),
                         convert(load(t, bufs[x], xi), t, DType::F64));
        b.CreateStore(b.CreateFAdd(b.CreateLoad(b.getDoubleTy(), slot), term),
                      slot);
      });
    });
    store(t, dst, offset(o, contiguousStrides(os)),
          convert(b.CreateLoad(b.getDoubleTy(), slot), DType::F64, t));
  });
  return true;
}

bool DeviceCodegen::deviceMaxPoolGrad(const Operation &op) {
  ValueId x = op.operands[0], g = op.operands[1];
  DType t = fn.type(x).dtype;
  llvm::Type *acc = computeType(t);
  Value *dst = allocateResult(op);
  std::vector<Value *> xs = dims(fn.type(x)), gs = dims(fn.type(g));
  auto k = op.intsAttr("kernel"), st = op.intsAttr("stride"),
       pd = op.intsAttr("padding");
  Value *C = xs[1], *H = xs[2], *W = xs[3], *OH = gs[2], *OW = gs[3];
  Value *KH = b.getInt64(k[0]), *KW = b.getInt64(k[1]);
  Value *sum = entryAlloca(acc), *best = entryAlloca(acc),
        *taken = entryAlloca(i64);
  Value *zero = b.getInt64(0);
  loops(xs, [&](const std::vector<Value *> &e) {
    Value *n = e[0], *c = e[1], *ih = e[2], *iw = e[3];
    Value *plane = b.CreateMul(b.CreateAdd(b.CreateMul(n, C), c), H);
    b.CreateStore(llvm::ConstantFP::get(acc, 0.0), sum);
    // The windows holding (ih, iw), by its offset (i, j) in them.
    loops({KH, KW}, [&](const std::vector<Value *> &off) {
      Value *hs = b.CreateSub(b.CreateAdd(ih, b.getInt64(pd[0])), off[0]);
      Value *ws = b.CreateSub(b.CreateAdd(iw, b.getInt64(pd[1])), off[1]);
      Value *oh = b.CreateSDiv(hs, b.getInt64(st[0]));
      Value *ow = b.CreateSDiv(ws, b.getInt64(st[1]));
      Value *valid = b.CreateAnd(
          b.CreateAnd(
              b.CreateAnd(
                  b.CreateICmpSGE(hs, zero),
                  b.CreateICmpEQ(b.CreateSRem(hs, b.getInt64(st[0])), zero)),
              b.CreateICmpSLT(oh, OH)),
          b.CreateAnd(
              b.CreateAnd(
                  b.CreateICmpSGE(ws, zero),
                  b.CreateICmpEQ(b.CreateSRem(ws, b.getInt64(st[1])), zero)),
              b.CreateICmpSLT(ow, OW)));
      ifThen(valid, [&] {
        // The window's argmax by max_pool2d's rule: the first maximum in
        // row-major order, or the first NaN.
        b.CreateStore(b.getInt64(-1), taken);
        loops({KH, KW}, [&](const std::vector<Value *> &tap) {
          Value *h = b.CreateAdd(b.CreateSub(b.CreateMul(oh, b.getInt64(st[0])),
                                             b.getInt64(pd[0])),
                                 tap[0]);
          Value *w = b.CreateAdd(b.CreateSub(b.CreateMul(ow, b.getInt64(st[1])),
                                             b.getInt64(pd[1])),
                                 tap[1]);
          Value *inside = b.CreateAnd(
              b.CreateAnd(b.CreateICmpSGE(h, zero), b.CreateICmpSLT(h, H)),
              b.CreateAnd(b.CreateICmpSGE(w, zero), b.CreateICmpSLT(w, W)));
          ifThen(inside, [&] {
            Value *at = b.CreateAdd(b.CreateMul(h, W), w);
            Value *v = load(t, bufs[x], b.CreateAdd(b.CreateMul(plane, W), at));
            Value *cur = b.CreateLoad(acc, best);
            Value *first = b.CreateICmpSLT(b.CreateLoad(i64, taken), zero);
            // Larger, or the first NaN: !(v <= cur) && cur is no NaN.
            Value *take = b.CreateOr(
                first, b.CreateAnd(b.CreateNot(b.CreateFCmpOLE(v, cur)),
                                   b.CreateFCmpORD(cur, cur)));
            b.CreateStore(b.CreateSelect(take, v, cur), best);
            b.CreateStore(b.CreateSelect(take, at, b.CreateLoad(i64, taken)),
                          taken);
          });
        });
        Value *mine = b.CreateICmpEQ(b.CreateLoad(i64, taken),
                                     b.CreateAdd(b.CreateMul(ih, W), iw));
        ifThen(mine, [&] {
          Value *gi = b.CreateAdd(
              b.CreateMul(
                  b.CreateAdd(
                      b.CreateMul(b.CreateAdd(b.CreateMul(n, C), c), OH), oh),
                  OW),
              ow);
          b.CreateStore(
              b.CreateFAdd(b.CreateLoad(acc, sum), load(t, bufs[g], gi)), sum);
        });
      });
    });
    store(t, dst, offset(e, contiguousStrides(xs)), b.CreateLoad(acc, sum));
  });
  return true;
}

bool DeviceCodegen::maskedScatterSerial(const Operation &op) {
  ValueId x = op.operands[0], mask = op.operands[1], src = op.operands[2];
  DType t = fn.type(x).dtype;
  Value *dst = allocateResult(op);
  Value *numel = product(dims(fn.type(x)));
  Value *nsrc = product(dims(fn.type(src)));
  Value *next = entryAlloca(i64);
  // One thread walks the elements in order (the source position of an
  // element is the count of true mask elements before it).
  loops({b.getInt64(1)}, [&](const std::vector<Value *> &) {
    b.CreateStore(b.getInt64(0), next);
    loops({numel}, [&](const std::vector<Value *> &i) {
      Value *m = load(DType::Bool, bufs[mask], i[0]);
      b.CreateStore(b.CreateAdd(b.CreateLoad(i64, next), b.CreateZExt(m, i64)),
                    next);
    });
    Value *count = b.CreateLoad(i64, next);
    failMessageIf(b.CreateICmpSGT(count, nsrc),
                  "the mask selects {0} elements but the source has {1}",
                  {count, nsrc});
    b.CreateStore(b.getInt64(0), next);
    loops({numel}, [&](const std::vector<Value *> &i) {
      Value *m = load(DType::Bool, bufs[mask], i[0]);
      Value *k = b.CreateLoad(i64, next);
      auto *take = llvm::BasicBlock::Create(ctx, "masked", kernel);
      auto *keep = llvm::BasicBlock::Create(ctx, "unmasked", kernel);
      auto *done = llvm::BasicBlock::Create(ctx, "scattered", kernel);
      b.CreateCondBr(m, take, keep);
      b.SetInsertPoint(take); // source is read only here: it may be empty
      store(t, dst, i[0], load(t, bufs[src], k));
      b.CreateBr(done);
      b.SetInsertPoint(keep);
      store(t, dst, i[0], load(t, bufs[x], i[0]));
      b.CreateBr(done);
      b.SetInsertPoint(done);
      b.CreateStore(b.CreateAdd(k, b.CreateZExt(m, i64)), next);
    });
  });
  return true;
}

} // namespace tsl::backend
