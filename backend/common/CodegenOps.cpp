// Lowering of layout ops, library-kernel calls, the argument matcher
// (tsl_match) and the result-shape function (tsl_result_shapes).
#include "backend/common/Codegen.h"
#include "backend/common/RuntimeCalls.h"

namespace tsl::backend {

// --- argument matching and result shapes ------------------------------
/// Sets up a new function `name(ptr, ptr, ptr?)` and points the builder
/// and the symbol array at it.
llvm::Function *Codegen::beginHelper(const char *name, llvm::Type *ret,
                                     unsigned nargs) {
  std::vector<llvm::Type *> params(nargs, ptr);
  auto *f = llvm::Function::Create(llvm::FunctionType::get(ret, params, false),
                                   llvm::Function::ExternalLinkage, name, *mod);
  kernel = f;
  b.SetInsertPoint(llvm::BasicBlock::Create(ctx, "entry", f));
  return f;
}

/// Returns `code` from the current helper when \p bad holds.
void Codegen::checkOrReturn(Value *bad, const std::string &description) {
  if (auto *never = llvm::dyn_cast<llvm::ConstantInt>(bad);
      never && never->isZero())
    return; // e.g. the overflow of a size with no arithmetic
  checks.push_back(description);
  int32_t code = static_cast<int32_t>(checks.size());
  auto *fail = llvm::BasicBlock::Create(ctx, "mismatch", kernel);
  auto *ok = llvm::BasicBlock::Create(ctx, "match", kernel);
  b.CreateCondBr(bad, fail, ok);
  b.SetInsertPoint(fail);
  b.CreateRet(b.getInt32(code));
  b.SetInsertPoint(ok);
}

void Codegen::emitMatch() {
  llvm::Function *f = beginHelper(options.matchName().c_str(), i32, 3);
  Value *sizes = f->getArg(0), *ints = f->getArg(1);
  symsArg = f->getArg(2);
  MatchArgs m;
  int64_t flat = 0, intIndex = 0;
  size_t tensorIndex = 0;
  for (const Param &p : fn.params) {
    if (p.isInt) {
      m.ints.push_back(
          {&p, b.CreateLoad(i64, b.CreateConstGEP1_64(i64, ints, intIndex++))});
      continue;
    }
    const TensorType &t = fn.type(p.value);
    for (size_t d = 0; d < t.rank(); ++d)
      m.axes.push_back(
          {&p, tensorIndex, d, t.dims[d],
           b.CreateLoad(i64, b.CreateConstGEP1_64(i64, sizes, flat++))});
    ++tensorIndex;
  }
  for (const MatchAxis &a : m.axes)
    if (a.expr.isSymbol())
      bindMatched(m, a.expr.symbolName(), a.size);
  for (auto &[p, v] : m.ints)
    if (p->intExpr.isSymbol())
      bindMatched(m, p->intExpr.symbolName(), v);
  matchDerivedDims(m);
  matchArguments(m);
  matchSymbolRanges(m);
  for (const Check &g : fn.guards) {
    std::string what =
        "guard " + g.cond.str() + " (" + g.loc.str() + ", " + g.reason + ")";
    Value *overflow;
    Value *holds = checkedCond(g.cond, overflow);
    checkOrReturn(overflow, what + ": a size in it does not fit in 64 bits");
    checkOrReturn(b.CreateNot(holds), what);
  }
  b.CreateRet(b.getInt32(0));
}

void Codegen::bindMatched(MatchArgs &m, const std::string &name, Value *v) {
  if (symIndex.count(name) && !m.bound.count(name)) {
    b.CreateStore(v, symSlot(name));
    m.bound.insert(name);
  }
}

void Codegen::matchDerivedDims(MatchArgs &m) {
  // Derived dims (2*N, N + 1): solve the linear form for its one unknown.
  for (const MatchAxis &a : m.axes) {
    std::vector<std::string> unknown;
    for (const std::string &s : a.expr.symbols())
      if (!m.bound.count(s))
        unknown.push_back(s);
    if (unknown.size() != 1)
      continue;
    SymExpr n = SymExpr::symbol(unknown[0]);
    SymExpr e0 = a.expr.substitute({{unknown[0], SymExpr(0)}});
    SymExpr slope = a.expr.substitute({{unknown[0], SymExpr(1)}}) - e0;
    if (!slope.isConst() || slope.constValue() <= 0 ||
        !(a.expr == e0 + slope * n))
      continue;
    Value *overflow;
    Value *offset = checkedExpr(e0, overflow);
    Value *pair = b.CreateBinaryIntrinsic(llvm::Intrinsic::ssub_with_overflow,
                                          a.size, offset);
    Value *rest = b.CreateExtractValue(pair, 0);
    Value *c = b.getInt64(slope.constValue());
    std::string what = "argument '" + a.param->name + "' dim " +
                       std::to_string(a.dim) + " is not of the form " +
                       a.expr.str();
    checkOrReturn(
        b.CreateOr(
            b.CreateOr(overflow, b.CreateExtractValue(pair, 1)),
            b.CreateOr(b.CreateICmpSLT(rest, b.getInt64(0)),
                       b.CreateICmpNE(b.CreateSRem(rest, c), b.getInt64(0)))),
        what);
    bindMatched(m, unknown[0], b.CreateSDiv(rest, c));
  }
}

void Codegen::matchArguments(const MatchArgs &m) {
  for (const MatchAxis &a : m.axes) {
    // Name the dim so messages can show the call's value ("with N = 3").
    std::string name;
    if (a.tensorIndex < fn.axisNames.size() &&
        a.dim < fn.axisNames[a.tensorIndex].size())
      name = fn.axisNames[a.tensorIndex][a.dim];
    std::string label =
        name.empty() || name == a.expr.str() ? "" : " ('" + name + "')";
    std::string which =
        "argument '" + a.param->name + "' dim " + std::to_string(a.dim) + label;
    Value *overflow;
    Value *expected = checkedExpr(a.expr, overflow);
    checkOrReturn(overflow,
                  which + " (" + a.expr.str() + ") does not fit in 64 bits");
    checkOrReturn(b.CreateICmpNE(expected, a.size),
                  which + " must be " + a.expr.str());
  }
  for (auto &[p, v] : m.ints) {
    Value *overflow;
    Value *expected = checkedExpr(p->intExpr, overflow);
    checkOrReturn(overflow, "argument '" + p->name + "' (" + p->intExpr.str() +
                                ") does not fit in 64 bits");
    checkOrReturn(b.CreateICmpNE(expected, v),
                  "argument '" + p->name + "' must be " + p->intExpr.str());
  }
}

void Codegen::matchSymbolRanges(const MatchArgs &m) {
  for (const SymbolInfo &s : fn.symbols) {
    if (s.kind == DimKind::Unbacked && !m.bound.count(s.name))
      continue; // produced inside
    if (!m.bound.count(s.name))
      continue;
    Value *v = b.CreateLoad(i64, symSlot(s.name));
    std::string range =
        (s.lo == INT64_MIN ? std::string() : std::to_string(s.lo)) + ".." +
        (s.hi ? std::to_string(*s.hi) : "");
    if (s.lo != INT64_MIN && s.lo != 0)
      checkOrReturn(b.CreateICmpSLT(v, b.getInt64(s.lo)),
                    "dim " + s.name + " is outside its declared range " +
                        range);
    if (s.lo == 0 && !s.isInt)
      checkOrReturn(b.CreateICmpSLT(v, b.getInt64(0)),
                    "dim " + s.name + " is negative");
    if (s.hi)
      checkOrReturn(b.CreateICmpSGT(v, b.getInt64(*s.hi)),
                    "dim " + s.name + " is outside its declared range " +
                        range);
    if (s.multipleOf > 1)
      checkOrReturn(
          b.CreateICmpNE(floorMod(v, b.getInt64(s.multipleOf)), b.getInt64(0)),
          "dim " + s.name + " is not a multiple of " +
              std::to_string(s.multipleOf));
  }
}

void Codegen::emitShapes() {
  llvm::Function *f =
      beginHelper(options.shapesName().c_str(), b.getVoidTy(), 2);
  symsArg = f->getArg(0);
  Value *out = f->getArg(1);
  int64_t k = 0;
  for (ValueId r : fn.results)
    for (const SymExpr &d : fn.type(r).dims)
      b.CreateStore(expr(d), b.CreateConstGEP1_64(i64, out, k++));
  b.CreateRetVoid();
}

/// Copies with an index map: out[idx] = in[offset(idx, strides) + base].
void Codegen::copyMapped(ValueId in, Value *dst,
                         const std::vector<Value *> &outShape,
                         const std::vector<Value *> &inStrides, Value *base) {
  DType t = fn.type(in).dtype;
  std::vector<Value *> outStrides = contiguousStrides(outShape);
  llvm::Type *st = storageType(t);
  loops(outShape, [&](const std::vector<Value *> &idx) {
    Value *v = b.CreateLoad(
        st,
        b.CreateGEP(st, bufs[in], b.CreateAdd(base, offset(idx, inStrides))));
    b.CreateStore(v, b.CreateGEP(st, dst, offset(idx, outStrides)));
  });
}

Codegen::LayoutShapes Codegen::layoutShapes(const Operation &op) {
  const TensorType &in = fn.type(op.operands[0]);
  const TensorType &out = fn.type(op.results[0]);
  std::vector<Value *> inShape = dims(in), outShape = dims(out);
  std::vector<Value *> own = contiguousStrides(inShape);
  return {in, out, std::move(inShape), std::move(outShape), std::move(own)};
}

bool Codegen::reshape(const Operation &op) {
  // Same bytes, new shape: alias the operand's buffer.
  ValueId r = op.results[0];
  b.CreateStore(bufs[op.operands[0]], bufferSlot(r));
  bufs[r] = bufs[op.operands[0]];
  return true;
}

bool Codegen::permute(const Operation &op) {
  LayoutShapes l = layoutShapes(op);
  std::vector<Value *> s;
  for (int64_t p : op.intsAttr("perm"))
    s.push_back(l.own[p]);
  copyMapped(op.operands[0], allocateResult(op), l.outShape, s, b.getInt64(0));
  return true;
}

bool Codegen::expand(const Operation &op) {
  LayoutShapes l = layoutShapes(op);
  std::vector<Value *> s(l.outShape.size(), b.getInt64(0));
  size_t off = l.outShape.size() - l.in.rank();
  for (size_t i = 0; i < l.in.rank(); ++i)
    s[off + i] = b.CreateSelect(b.CreateICmpEQ(l.inShape[i], b.getInt64(1)),
                                b.getInt64(0), l.own[i]);
  copyMapped(op.operands[0], allocateResult(op), l.outShape, s, b.getInt64(0));
  return true;
}

bool Codegen::slice(const Operation &op) {
  LayoutShapes l = layoutShapes(op);
  Value *base = b.getInt64(0);
  const auto &starts = op.exprsAttr("starts");
  for (size_t i = 0; i < l.in.rank(); ++i)
    base = b.CreateAdd(base, b.CreateMul(expr(starts[i]), l.own[i]));
  if (plan.sliceView[op.results[0]]) { // a view: the block's address
    ValueId r = op.results[0];
    bufs[r] = b.CreateGEP(storageType(l.in.dtype), bufs[op.operands[0]], base);
    b.CreateStore(bufs[r], bufferSlot(r));
    return true;
  }
  std::vector<Value *> strides = l.own;
  const std::vector<int64_t> &steps = op.intsAttr("steps");
  for (size_t i = 0; i < steps.size() && i < strides.size(); ++i)
    strides[i] = b.CreateMul(l.own[i], b.getInt64(steps[i]));
  copyMapped(op.operands[0], allocateResult(op), l.outShape, strides, base);
  return true;
}

bool Codegen::pad(const Operation &op) {
  LayoutShapes l = layoutShapes(op);
  Value *dst = allocateResult(op);
  Number value = op.numAttr("value");
  DType t = l.out.dtype;
  Value *fill = value.isInt
                    ? convert(b.getInt64(value.i), DType::I64, t)
                    : convert(fconst(DType::F64, value.f), DType::F64, t);
  loops({product(l.outShape)},
        [&](const std::vector<Value *> &i) { store(t, dst, i[0], fill); });
  std::vector<Value *> outStrides = contiguousStrides(l.outShape);
  Value *base = b.getInt64(0);
  const auto &lo = op.exprsAttr("lo");
  for (size_t i = 0; i < l.in.rank(); ++i)
    base = b.CreateAdd(base, b.CreateMul(expr(lo[i]), outStrides[i]));
  llvm::Type *st = storageType(t);
  loops(l.inShape, [&](const std::vector<Value *> &idx) {
    Value *v = b.CreateLoad(
        st, b.CreateGEP(st, bufs[op.operands[0]], offset(idx, l.own)));
    b.CreateStore(
        v, b.CreateGEP(st, dst, b.CreateAdd(base, offset(idx, outStrides))));
  });
  return true;
}

Value *Emitter::blockOffset(const std::vector<Value *> &idx,
                            const std::vector<Value *> &starts,
                            const std::vector<Value *> &extents,
                            const std::vector<Value *> &strides,
                            Value *&inside) {
  inside = b.getTrue();
  Value *at = b.getInt64(0);
  for (size_t i = 0; i < idx.size(); ++i) {
    Value *j = b.CreateSub(idx[i], starts[i]);
    inside = b.CreateAnd(inside, b.CreateAnd(b.CreateICmpSGE(j, b.getInt64(0)),
                                             b.CreateICmpSLT(j, extents[i])));
    at = b.CreateAdd(at, b.CreateMul(j, strides[i]));
  }
  return at;
}

Value *Emitter::loadWhere(Value *cond, DType t, Value *base, Value *index,
                          Value *otherwise) {
  llvm::BasicBlock *pre = b.GetInsertBlock();
  auto *read = llvm::BasicBlock::Create(ctx, "readwhere", kernel);
  auto *join = llvm::BasicBlock::Create(ctx, "readjoin", kernel);
  b.CreateCondBr(cond, read, join);
  b.SetInsertPoint(read);
  Value *v = load(t, base, index);
  llvm::BasicBlock *loaded = b.GetInsertBlock();
  b.CreateBr(join);
  b.SetInsertPoint(join);
  llvm::PHINode *phi = b.CreatePHI(v->getType(), 2);
  phi->addIncoming(otherwise, pre);
  phi->addIncoming(v, loaded);
  return phi;
}

bool Codegen::updateSliceAt(const Operation &op, bool aliasHere) {
  ValueId x = op.operands[0], v = op.operands[1], r = op.results[0];
  DType t = fn.type(r).dtype;
  std::vector<Value *> shape = dims(fn.type(r)), block = dims(fn.type(v));
  std::vector<Value *> strides = contiguousStrides(shape),
                       blockStrides = contiguousStrides(block);
  std::vector<Value *> starts;
  for (const SymExpr &s : op.exprsAttr("starts"))
    starts.push_back(expr(s));
  if (plan.updateInPlace[r]) { // x is read no more: write the block into it
    if (aliasHere) { // a device kernel reads r's buffer (x's) from its slot
      bufs[r] = bufs[x];
      b.CreateStore(bufs[r], bufferSlot(r));
    }
    loops(block, [&](const std::vector<Value *> &idx) {
      Value *at = b.getInt64(0);
      for (size_t i = 0; i < idx.size(); ++i)
        at = b.CreateAdd(
            at, b.CreateMul(b.CreateAdd(starts[i], idx[i]), strides[i]));
      store(t, bufs[r], at, load(t, bufs[v], offset(idx, blockStrides)));
    });
    return true;
  }
  // One pass over the result, so that no element is written twice (the
  // threads of a device kernel do not order their writes).
  Value *dst = allocateResult(op);
  loops(shape, [&](const std::vector<Value *> &idx) {
    Value *inside;
    Value *at = blockOffset(idx, starts, block, blockStrides, inside);
    Value *old = load(t, bufs[x], offset(idx, strides));
    store(t, dst, offset(idx, strides), loadWhere(inside, t, bufs[v], at, old));
  });
  return true;
}

bool Codegen::concat(const Operation &op) {
  const TensorType &out = fn.type(op.results[0]);
  size_t axis = static_cast<size_t>(op.intAttr("axis"));
  Value *dst = allocateResult(op);
  std::vector<Value *> outStrides = contiguousStrides(dims(out));
  llvm::Type *st = storageType(out.dtype);
  Value *start = b.getInt64(0);
  for (ValueId v : op.operands) {
    std::vector<Value *> shape = dims(fn.type(v));
    std::vector<Value *> own = contiguousStrides(shape);
    Value *base = b.CreateMul(start, outStrides[axis]);
    loops(shape, [&](const std::vector<Value *> &idx) {
      Value *x = b.CreateLoad(st, b.CreateGEP(st, bufs[v], offset(idx, own)));
      b.CreateStore(
          x, b.CreateGEP(st, dst, b.CreateAdd(base, offset(idx, outStrides))));
    });
    start = b.CreateAdd(start, shape[axis]);
  }
  return true;
}

/// An alloca'd i64 array holding a type's dims.
Value *Emitter::shapeArray(const TensorType &t) {
  Value *arr =
      entryAlloca(llvm::ArrayType::get(i64, std::max<size_t>(t.rank(), 1)));
  for (size_t i = 0; i < t.rank(); ++i)
    b.CreateStore(expr(t.dims[i]), b.CreateConstGEP1_64(i64, arr, i));
  return arr;
}

/// The fused attention op through tsl_rt_attention: the batch dims as an
/// array, the mask's element strides over the scores' axes (0 on axes it
/// broadcasts or lacks).
bool Codegen::attention(const Operation &op) {
  Value *dst = allocateResult(op);
  const TensorType &q = fn.type(op.operands[0]);
  size_t rank = q.rank();
  Value *strides =
      entryAlloca(llvm::ArrayType::get(i64, std::max<size_t>(rank, 1)));
  Value *mask = llvm::ConstantPointerNull::get(llvm::PointerType::get(ctx, 0));
  if (op.operands.size() > 4) {
    mask = bufs[op.operands[4]];
    const TensorType &m = fn.type(op.operands[4]);
    Value *step = b.getInt64(1);
    for (size_t i = rank; i-- > 0;) {
      size_t offset = rank - m.rank();
      bool present = i >= offset && !m.dims[i - offset].isConst(1);
      b.CreateStore(present ? step : b.getInt64(0),
                    b.CreateConstGEP1_64(i64, strides, i));
      if (present)
        step = b.CreateMul(step, expr(m.dims[i - offset]));
    }
  }
  const TensorType &k = fn.type(op.operands[1]), &v = fn.type(op.operands[2]);
  checkStatus(b.CreateCall(
      runtime(TSL_RT_FN(tsl_rt_attention)),
      {ctxArg, dtypeCode(op.operands[0]), shapeArray(q),
       b.getInt32(static_cast<int>(rank - 2)), expr(q.dims[rank - 2]),
       expr(k.dims[rank - 2]), expr(q.dims[rank - 1]), expr(v.dims[rank - 1]),
       bufs[op.operands[0]], bufs[op.operands[1]], bufs[op.operands[2]],
       bufs[op.operands[3]], mask, strides,
       b.getInt32(op.boolAttr("causal") ? 1 : 0), dst}));
  return true;
}

bool Codegen::conv2dCall(const Operation &op) {
  ValueId x = op.operands[0];
  Value *dst = allocateResult(op);
  auto st = op.intsAttr("stride"), pd = op.intsAttr("padding");
  Value *bias =
      op.operands.size() > 2
          ? bufs[op.operands[2]]
          : llvm::ConstantPointerNull::get(llvm::PointerType::get(ctx, 0));
  checkStatus(
      b.CreateCall(runtime(TSL_RT_FN(tsl_rt_conv2d)),
                   {ctxArg, dtypeCode(x), bufs[x], shapeArray(fn.type(x)),
                    bufs[op.operands[1]], shapeArray(fn.type(op.operands[1])),
                    bias, b.getInt64(st[0]), b.getInt64(st[1]),
                    b.getInt64(pd[0]), b.getInt64(pd[1]), dst}));
  return true;
}

bool Codegen::maxPool2dCall(const Operation &op) {
  ValueId x = op.operands[0];
  Value *dst = allocateResult(op);
  auto k = op.intsAttr("kernel"), st = op.intsAttr("stride"),
       pd = op.intsAttr("padding");
  checkStatus(b.CreateCall(
      runtime(TSL_RT_FN(tsl_rt_max_pool2d)),
      {ctxArg, dtypeCode(x), bufs[x], shapeArray(fn.type(x)), b.getInt64(k[0]),
       b.getInt64(k[1]), b.getInt64(st[0]), b.getInt64(st[1]),
       b.getInt64(pd[0]), b.getInt64(pd[1]), dst}));
  return true;
}

bool Codegen::conv2dWeightGradCall(const Operation &op) {
  ValueId x = op.operands[0], g = op.operands[1];
  Value *dst = allocateResult(op);
  std::vector<Value *> ws = dims(fn.type(op.results[0]));
  auto st = op.intsAttr("stride"), pd = op.intsAttr("padding");
  checkStatus(b.CreateCall(
      runtime(TSL_RT_FN(tsl_rt_conv2d_weight_grad)),
      {ctxArg, dtypeCode(x), bufs[x], shapeArray(fn.type(x)), bufs[g],
       shapeArray(fn.type(g)), ws[2], ws[3], b.getInt64(st[0]),
       b.getInt64(st[1]), b.getInt64(pd[0]), b.getInt64(pd[1]), dst}));
  return true;
}

bool Codegen::maxPool2dGradCall(const Operation &op) {
  ValueId x = op.operands[0];
  Value *dst = allocateResult(op);
  auto k = op.intsAttr("kernel"), st = op.intsAttr("stride"),
       pd = op.intsAttr("padding");
  checkStatus(
      b.CreateCall(runtime(TSL_RT_FN(tsl_rt_max_pool2d_grad)),
                   {ctxArg, dtypeCode(x), bufs[x], shapeArray(fn.type(x)),
                    bufs[op.operands[1]], b.getInt64(k[0]), b.getInt64(k[1]),
                    b.getInt64(st[0]), b.getInt64(st[1]), b.getInt64(pd[0]),
                    b.getInt64(pd[1]), dst}));
  return true;
}

bool Codegen::compactionCall(const Operation &op) {
  ValueId x = op.operands[0];
  Value *outSlot = entryAlloca(ptr), *count = entryAlloca(i64);
  Value *status;
  if (op.code == OpCode::Nonzero)
    status = b.CreateCall(
        runtime(TSL_RT_FN(tsl_rt_nonzero)),
        {ctxArg, dtypeCode(x), bufs[x], shapeArray(fn.type(x)),
         b.getInt32(static_cast<int32_t>(fn.type(x).rank())), outSlot, count});
  else if (op.code == OpCode::MaskedSelect)
    status = b.CreateCall(runtime(TSL_RT_FN(tsl_rt_masked_select)),
                          {ctxArg, dtypeCode(x), bufs[x], bufs[op.operands[1]],
                           product(dims(fn.type(x))), outSlot, count});
  else
    status = b.CreateCall(runtime(TSL_RT_FN(tsl_rt_unique)),
                          {ctxArg, dtypeCode(x), bufs[x],
                           product(dims(fn.type(x))), outSlot, count});
  checkStatus(status);
  ValueId r = op.results[0];
  SymExpr u = fn.type(r).dims[0];
  if (u.isSymbol() && symIndex.count(u.symbolName()))
    b.CreateStore(b.CreateLoad(i64, count), symSlot(u.symbolName()));
  Value *p = b.CreateLoad(ptr, outSlot);
  b.CreateStore(p, bufferSlot(r));
  bufs[r] = p;
  return true;
}

bool Codegen::indexSelectCall(const Operation &op) {
  ValueId x = op.operands[0];
  Value *dst = allocateResult(op);
  ValueId idx = op.operands[1];
  checkStatus(b.CreateCall(
      runtime(TSL_RT_FN(tsl_rt_index_select)),
      {ctxArg, dtypeCode(x), bufs[x], shapeArray(fn.type(x)),
       b.getInt32(static_cast<int32_t>(fn.type(x).rank())),
       b.getInt32(static_cast<int32_t>(op.intAttr("axis"))), dtypeCode(idx),
       bufs[idx], expr(fn.type(idx).dims[0]), dst}));
  return true;
}

bool Codegen::gatherCall(const Operation &op) {
  ValueId x = op.operands[0];
  Value *dst = allocateResult(op);
  ValueId idx = op.operands[1];
  checkStatus(
      b.CreateCall(runtime(TSL_RT_FN(tsl_rt_gather)),
                   {ctxArg, dtypeCode(x), bufs[x], shapeArray(fn.type(x)),
                    b.getInt32(static_cast<int32_t>(fn.type(x).rank())),
                    b.getInt32(static_cast<int32_t>(op.intAttr("axis"))),
                    dtypeCode(idx), bufs[idx], shapeArray(fn.type(idx)), dst}));
  return true;
}

bool Codegen::scatterCall(const Operation &op) {
  ValueId x = op.operands[0];
  Value *dst = allocateResult(op);
  ValueId idx = op.operands[1], src = op.operands[2];
  checkStatus(b.CreateCall(
      runtime(TSL_RT_FN(tsl_rt_scatter)),
      {ctxArg, dtypeCode(x), bufs[x], shapeArray(fn.type(x)),
       b.getInt32(static_cast<int32_t>(fn.type(x).rank())),
       b.getInt32(static_cast<int32_t>(op.intAttr("axis"))), dtypeCode(idx),
       bufs[idx], shapeArray(fn.type(idx)), bufs[src], shapeArray(fn.type(src)),
       b.getInt32(op.boolAttr("add") ? 1 : 0), dst}));
  return true;
}

bool Codegen::maskedScatterCall(const Operation &op) {
  ValueId x = op.operands[0];
  Value *dst = allocateResult(op);
  ValueId mask = op.operands[1], src = op.operands[2];
  checkStatus(b.CreateCall(runtime(TSL_RT_FN(tsl_rt_masked_scatter)),
                           {ctxArg, dtypeCode(x), bufs[x], bufs[mask],
                            product(dims(fn.type(x))), bufs[src],
                            product(dims(fn.type(src))), dst}));
  return true;
}

bool Codegen::sortCall(const Operation &op) {
  ValueId x = op.operands[0];
  Value *values = allocateResult(op, 0), *indices = allocateResult(op, 1);
  AxisSizes s = axisSizes(fn.type(x), static_cast<size_t>(op.intAttr("axis")));
  checkStatus(b.CreateCall(
      runtime(TSL_RT_FN(tsl_rt_sort)),
      {ctxArg, dtypeCode(x), bufs[x], s.outer, s.n, s.inner,
       b.getInt32(op.boolAttr("descending") ? 1 : 0), values, indices}));
  return true;
}

bool Codegen::topkCall(const Operation &op) {
  ValueId x = op.operands[0];
  Value *values = allocateResult(op, 0), *indices = allocateResult(op, 1);
  std::vector<Value *> shape = dims(fn.type(x));
  Value *n = shape.back();
  Value *rows = b.CreateSDiv(
      product(shape),
      b.CreateSelect(b.CreateICmpEQ(n, b.getInt64(0)), b.getInt64(1), n));
  checkStatus(b.CreateCall(runtime(TSL_RT_FN(tsl_rt_topk)),
                           {ctxArg, dtypeCode(x), bufs[x], rows, n,
                            expr(op.exprAttr("k")), values, indices}));
  return true;
}

bool Codegen::argReduceCall(const Operation &op) {
  ValueId x = op.operands[0];
  Value *dst = allocateResult(op);
  const auto &axes = op.intsAttr("axes");
  checkStatus(b.CreateCall(
      runtime(op.code == OpCode::Argmax ? TSL_RT_FN(tsl_rt_argmax)
                                        : TSL_RT_FN(tsl_rt_argmin)),
      {ctxArg, dtypeCode(x), bufs[x], shapeArray(fn.type(x)),
       b.getInt32(static_cast<int32_t>(fn.type(x).rank())),
       b.getInt32(axes.empty() ? -1 : static_cast<int32_t>(axes[0])), dst}));
  return true;
}

} // namespace tsl::backend

namespace tsl {

void emitDispatcher(llvm::Module &m, const std::string &name,
                    const std::vector<DispatchEntry> &entries) {
  llvm::LLVMContext &ctx = m.getContext();
  llvm::IRBuilder<> b(ctx);
  llvm::Type *i32 = b.getInt32Ty(), *i64 = b.getInt64Ty(), *ptr = b.getPtrTy();
  auto *type = llvm::FunctionType::get(i32, {ptr, ptr, ptr, ptr}, false);
  auto *matchType = llvm::FunctionType::get(i32, {ptr, ptr, ptr}, false);
  auto *f =
      llvm::Function::Create(type, llvm::Function::ExternalLinkage, name, m);
  llvm::Value *signature = f->getArg(0);
  b.SetInsertPoint(llvm::BasicBlock::Create(ctx, "entry", f));
  for (size_t i = 0; i < entries.size(); ++i) {
    const std::vector<int64_t> &sig = entries[i].signature;
    auto *tryMatch = llvm::BasicBlock::Create(ctx, "try", f);
    auto *next = llvm::BasicBlock::Create(ctx, "next", f);
    // The arity first: only then are the per-argument words in bounds.
    llvm::Value *arity = b.CreateLoad(i64, signature);
    auto *compare = llvm::BasicBlock::Create(ctx, "signature", f);
    b.CreateCondBr(b.CreateICmpEQ(arity, b.getInt64(sig[0])), compare, next);
    b.SetInsertPoint(compare);
    llvm::Value *same = b.getTrue();
    for (size_t k = 1; k < sig.size(); ++k)
      same = b.CreateAnd(
          same, b.CreateICmpEQ(
                    b.CreateLoad(i64, b.CreateConstGEP1_64(i64, signature, k)),
                    b.getInt64(sig[k])));
    b.CreateCondBr(same, tryMatch, next);
    b.SetInsertPoint(tryMatch);
    llvm::Value *code =
        b.CreateCall(matchType, entries[i].match,
                     {f->getArg(1), f->getArg(2), f->getArg(3)});
    auto *found = llvm::BasicBlock::Create(ctx, "found", f);
    b.CreateCondBr(b.CreateICmpEQ(code, b.getInt32(0)), found, next);
    b.SetInsertPoint(found);
    b.CreateRet(b.getInt32(static_cast<int32_t>(i)));
    b.SetInsertPoint(next);
  }
  b.CreateRet(b.getInt32(-1));
}

} // namespace tsl
