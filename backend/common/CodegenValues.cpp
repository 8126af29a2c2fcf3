// Lowering helpers: sizes from symbols, loop nests, element loads, stores,
// conversions and the arithmetic of elementwise ops.
#include "backend/common/Codegen.h"
#include "backend/common/RuntimeCalls.h"
#include "runtime/KernelAbi.h"

#include <llvm/IR/ValueSymbolTable.h>

namespace tsl::backend {

// --- runtime calls ---------------------------------------------------
// Every runtime function of runtime/KernelEntryPoints.def has an LLVM type:
// a C type RuntimeCalls.h does not map fails the build here, not at the
// first call site that uses the function.
[[maybe_unused]] static constexpr RuntimeFn kRuntimeFns[] = {
#define TSL_RT_ENTRY(Name, Slot, Ret, Params) TSL_RT_FN(Name),
#define TSL_RT_DEVICE_ENTRY(Name, Ret, Params) TSL_RT_FN(Name),
#include "runtime/KernelEntryPoints.def"
};

llvm::FunctionCallee Emitter::runtime(const RuntimeFn &fn) {
  return runtime(fn.name, fn.type(ctx));
}

llvm::FunctionCallee Emitter::runtime(const char *name,
                                      llvm::FunctionType *type) {
  int32_t slot = tsl_rt_slot_of(name);
  if (options.aot && slot >= 0) {
    // Through the table the loading runtime fills (no symbol to resolve).
    auto *tableType = llvm::ArrayType::get(ptr, TSL_RT_NUM_SLOTS);
    auto *table = mod->getOrInsertGlobal("tsl_rt_table", tableType);
    Value *entry =
        b.CreateLoad(ptr, b.CreateConstGEP2_64(tableType, table, 0, slot));
    return llvm::FunctionCallee(type, entry);
  }
  llvm::FunctionCallee callee = mod->getOrInsertFunction(name, type);
  if (std::string(name) == "tsl_rt_alloc")
    if (auto *f = llvm::dyn_cast<llvm::Function>(callee.getCallee())) {
      // Fresh memory aliases nothing: lets LLVM keep accumulators in
      // registers and vectorize across buffers. 16-byte aligned at least
      // (small buffers come from malloc: tsl_rt_alloc); a larger claim
      // would let LLVM pick aligned vector moves that fault on them.
      f->addRetAttr(llvm::Attribute::NoAlias);
      f->addRetAttr(llvm::Attribute::getWithAlignment(ctx, llvm::Align(16)));
    }
  return callee;
}

/// Branches to a failure exit when \p failed is true.
void Emitter::failIf(Value *failed, const std::function<void()> &record,
                     const std::vector<Value *> &) {
  if (auto *never = llvm::dyn_cast<llvm::ConstantInt>(failed);
      never && never->isZero())
    return;
  if (!record && kernel->getReturnType()->isIntegerTy(32)) {
    // One return for every call whose callee recorded its failure: 10,000
    // calls of a helper made 10,000 blocks for instruction selection.
    auto *bad = llvm::dyn_cast_or_null<llvm::BasicBlock>(
        kernel->getValueSymbolTable()->lookup("tsl.failed"));
    if (!bad) {
      bad = llvm::BasicBlock::Create(ctx, "tsl.failed", kernel);
      llvm::IRBuilder<>(bad).CreateRet(b.getInt32(1));
    }
    auto *ok = llvm::BasicBlock::Create(ctx, "ok", kernel);
    b.CreateCondBr(failed, bad, ok,
                   llvm::MDBuilder(ctx).createBranchWeights(1, 1 << 20));
    b.SetInsertPoint(ok);
    return;
  }
  failBranch(failed, [&](llvm::BasicBlock *) {
    if (record)
      record();
    b.CreateRet(b.getInt32(1));
  });
}

void Emitter::failBranch(
    Value *failed, const std::function<void(llvm::BasicBlock *ok)> &onFail) {
  if (auto *never = llvm::dyn_cast<llvm::ConstantInt>(failed);
      never && never->isZero())
    return;
  auto *bad = llvm::BasicBlock::Create(ctx, "fail", kernel);
  auto *ok = llvm::BasicBlock::Create(ctx, "ok", kernel);
  b.CreateCondBr(failed, bad, ok,
                 llvm::MDBuilder(ctx).createBranchWeights(1, 1 << 20));
  b.SetInsertPoint(bad);
  onFail(ok);
  b.SetInsertPoint(ok);
}

Value *Emitter::opIndexValue() {
  if (!kernelOp)
    return b.getInt32(opIndex + options.opIndexBase);
  return b.CreateAdd(kernelOp, b.getInt32(opIndex - kernelFirstOp));
}

Value *Emitter::messageText(const std::string &message) {
  llvm::Constant *&text = messages[message];
  if (!text)
    text = b.CreateGlobalStringPtr(message, "tsl.message");
  return text;
}

void Emitter::failOpIf(Value *failed) {
  failIf(failed, [&] {
    b.CreateCall(runtime(target.runtime().fail), {ctxArg, opIndexValue()});
  });
}

void Emitter::failMessageIf(Value *failed, const std::string &message,
                            const std::vector<Value *> &) {
  failIf(failed, [&] {
    b.CreateCall(runtime(target.runtime().error),
                 {ctxArg, messageText(message)});
    b.CreateCall(runtime(target.runtime().fail), {ctxArg, opIndexValue()});
  });
}

Value *Emitter::sizeStep(llvm::Intrinsic::ID checkedOp, Value *x, Value *y) {
  if (!sizeOverflow)
    return checkedOp == llvm::Intrinsic::smul_with_overflow ? b.CreateMul(x, y)
                                                            : b.CreateAdd(x, y);
  Value *pair = b.CreateBinaryIntrinsic(checkedOp, x, y);
  sizeOverflow = b.CreateOr(sizeOverflow, b.CreateExtractValue(pair, 1));
  return b.CreateExtractValue(pair, 0);
}

Value *Emitter::checkedExpr(SymExpr e, Value *&overflow) {
  Value *outer = sizeOverflow;
  sizeOverflow = b.getFalse();
  Value *v = expr(e);
  overflow = sizeOverflow;
  sizeOverflow = outer;
  return v;
}

Value *Emitter::checkedCond(const SymCond &c, Value *&overflow) {
  Value *outer = sizeOverflow;
  sizeOverflow = b.getFalse();
  Value *v = cond(c);
  overflow = sizeOverflow;
  sizeOverflow = outer;
  return v;
}

void Emitter::checkResultSizes(const Operation &op) {
  for (ValueId r : op.results) {
    const TensorType &t = fn.type(r);
    bool constant = true, unbacked = false;
    for (const SymExpr &d : t.dims) {
      constant &= d.isConst();
      for (const std::string &name : d.symbols())
        for (const SymbolInfo &info : fn.symbols)
          unbacked |= info.name == name && info.kind == DimKind::Unbacked;
    }
    if (constant)
      continue; // the elaborator checked its byte size
    // Sizes of input symbols do not change during the call: a check that
    // dominates this one (same function, same byte size) is enough. An
    // unbacked size may be bound later, so its checks are not shared.
    std::string key = std::to_string(dtypeSize(t.dtype)) + ":";
    for (const SymExpr &d : t.dims)
      key += d.str() + ",";
    if (!unbacked && !sizesChecked.insert(key).second)
      continue;
    // The dims and their product times the element size, every step
    // checked: the byte size fits in int64 exactly when no step overflows.
    Value *outer = sizeOverflow;
    sizeOverflow = b.getFalse();
    Value *bytes = b.getInt64(static_cast<int64_t>(dtypeSize(t.dtype)));
    for (const SymExpr &d : t.dims)
      bytes = sizeStep(llvm::Intrinsic::smul_with_overflow, bytes, expr(d));
    Value *overflow = sizeOverflow;
    sizeOverflow = outer;
    failMessageIf(overflow, "the size of its result " + t.str() +
                                " does not fit in 64 bits");
  }
}

Value *Emitter::expr(SymExpr e) {
  switch (e.kind()) {
  case SymExpr::Kind::Overflow: // the elaborator rejects it; fail if reached
    if (sizeOverflow)
      sizeOverflow = b.getTrue();
    return b.getInt64(0);
  case SymExpr::Kind::Const:
    return b.getInt64(e.constValue());
  case SymExpr::Kind::Symbol:
    if (!symIndex.count(e.symbolName()))
      return b.getInt64(0);
    return b.CreateLoad(i64, symSlot(e.symbolName()));
  case SymExpr::Kind::Add: {
    using llvm::Intrinsic::sadd_with_overflow,
        llvm::Intrinsic::smul_with_overflow;
    Value *sum = b.getInt64(e.addConstant());
    for (size_t i = 0; i < e.operands().size(); ++i)
      sum =
          sizeStep(sadd_with_overflow, sum,
                   sizeStep(smul_with_overflow, b.getInt64(e.coefficients()[i]),
                            expr(e.operands()[i])));
    return sum;
  }
  case SymExpr::Kind::Mul: {
    Value *prod = b.getInt64(1);
    for (size_t i = 0; i < e.operands().size(); ++i) {
      Value *f = expr(e.operands()[i]);
      for (int64_t k = 0; k < e.coefficients()[i]; ++k)
        prod = sizeStep(llvm::Intrinsic::smul_with_overflow, prod, f);
    }
    return prod;
  }
  case SymExpr::Kind::FloorDiv:
  case SymExpr::Kind::Mod: {
    Value *x = expr(e.operands()[0]), *y = expr(e.operands()[1]);
    // A zero divisor was proven impossible or asserted before; INT64_MIN /
    // -1 leaves int64. Neither may reach sdiv (undefined behaviour).
    Value *minByMinusOne = b.CreateAnd(b.CreateICmpEQ(x, b.getInt64(INT64_MIN)),
                                       b.CreateICmpEQ(y, b.getInt64(-1)));
    if (sizeOverflow)
      sizeOverflow = b.CreateOr(sizeOverflow, minByMinusOne);
    y = b.CreateSelect(
        b.CreateOr(b.CreateICmpEQ(y, b.getInt64(0)), minByMinusOne),
        b.getInt64(1), y);
    return e.kind() == SymExpr::Kind::FloorDiv ? floorDiv(x, y)
                                               : floorMod(x, y);
  }
  case SymExpr::Kind::Min:
  case SymExpr::Kind::Max: {
    Value *x = expr(e.operands()[0]), *y = expr(e.operands()[1]);
    Value *lt = b.CreateICmpSLT(x, y);
    return e.kind() == SymExpr::Kind::Min ? b.CreateSelect(lt, x, y)
                                          : b.CreateSelect(lt, y, x);
  }
  }
  return b.getInt64(0);
}

Value *Emitter::floorDiv(Value *x, Value *y) {
  Value *q = b.CreateSDiv(x, y), *r = b.CreateSRem(x, y);
  Value *adjust =
      b.CreateAnd(b.CreateICmpNE(r, b.getInt64(0)),
                  b.CreateICmpNE(b.CreateICmpSLT(r, b.getInt64(0)),
                                 b.CreateICmpSLT(y, b.getInt64(0))));
  return b.CreateSub(q, b.CreateZExt(adjust, i64));
}

Value *Emitter::floorMod(Value *x, Value *y) {
  Value *r = b.CreateSRem(x, y);
  Value *adjust =
      b.CreateAnd(b.CreateICmpNE(r, b.getInt64(0)),
                  b.CreateICmpNE(b.CreateICmpSLT(r, b.getInt64(0)),
                                 b.CreateICmpSLT(y, b.getInt64(0))));
  return b.CreateSelect(adjust, b.CreateAdd(r, y), r);
}

Value *Emitter::cond(const SymCond &c) {
  switch (c.kind()) {
  case SymCond::Kind::True:
    return b.getTrue();
  case SymCond::Kind::False:
    return b.getFalse();
  case SymCond::Kind::And:
    return b.CreateAnd(cond(c.children()[0]), cond(c.children()[1]));
  case SymCond::Kind::Or:
    return b.CreateOr(cond(c.children()[0]), cond(c.children()[1]));
  case SymCond::Kind::Not:
    return b.CreateNot(cond(c.children()[0]));
  default:
    break;
  }
  Value *l = expr(c.lhs()), *r = expr(c.rhs());
  switch (c.kind()) {
  case SymCond::Kind::Eq:
    return b.CreateICmpEQ(l, r);
  case SymCond::Kind::Ne:
    return b.CreateICmpNE(l, r);
  case SymCond::Kind::Lt:
    return b.CreateICmpSLT(l, r);
  case SymCond::Kind::Le:
    return b.CreateICmpSLE(l, r);
  case SymCond::Kind::Gt:
    return b.CreateICmpSGT(l, r);
  default:
    return b.CreateICmpSGE(l, r);
  }
}

std::vector<Value *> Emitter::dims(const TensorType &t) {
  std::vector<Value *> out;
  if (rowShaped(t)) { // one row of a row group
    out.assign(rowLead.size(), b.getInt64(1));
    out.push_back(expr(t.dims.back()));
    return out;
  }
  for (const SymExpr &d : t.dims)
    out.push_back(expr(d));
  return out;
}

Value *Emitter::product(const std::vector<Value *> &v) {
  Value *p = b.getInt64(1);
  for (Value *x : v)
    p = b.CreateMul(p, x);
  return p;
}

std::vector<Value *>
Emitter::contiguousStrides(const std::vector<Value *> &shape) {
  std::vector<Value *> s(shape.size());
  Value *acc = b.getInt64(1);
  for (size_t i = shape.size(); i-- > 0;) {
    s[i] = acc;
    acc = b.CreateMul(acc, shape[i]);
  }
  return s;
}

Value *Emitter::entryAlloca(llvm::Type *t) {
  // In the entry block, so that an op in a loop body reuses one slot
  // instead of growing the stack on every iteration.
  llvm::IRBuilder<> entry(&kernel->getEntryBlock(),
                          kernel->getEntryBlock().begin());
  return entry.CreateAlloca(t);
}

/// Allocates the buffer of value \p v with \p count elements.
bool Emitter::rowShaped(const TensorType &t) const {
  if (rowLead.empty() || t.rank() != rowLead.size() + 1)
    return false;
  return std::equal(rowLead.begin(), rowLead.end(), t.dims.begin());
}

DType Emitter::storedType(ValueId v) const {
  return wideScratch.count(v) ? DType::F32 : fn.type(v).dtype;
}

Value *Emitter::allocate(ValueId v, Value *count) {
  size_t elem = dtypeSize(storedType(v));
  // A byte count that leaves int64 becomes -1, which tsl_rt_alloc rejects.
  Value *pair = b.CreateBinaryIntrinsic(llvm::Intrinsic::smul_with_overflow,
                                        count, b.getInt64(elem));
  Value *bytes = b.CreateSelect(b.CreateExtractValue(pair, 1), b.getInt64(-1),
                                b.CreateExtractValue(pair, 0));
  Value *p = allocateBytes(bytes);
  b.CreateStore(p, bufferSlot(v));
  bufs[v] = p;
  return p;
}

Value *Emitter::allocateBytes(Value *bytes) {
  Value *p = b.CreateCall(runtime(target.runtime().alloc), {ctxArg, bytes});
  failIf(b.CreateIsNull(p), [&] {
    b.CreateCall(runtime(target.runtime().fail), {ctxArg, opIndexValue()});
  });
  return p;
}

Value *Emitter::allocateResult(const Operation &op, size_t i) {
  ValueId v = op.results[i];
  if (preallocated) // by a row group before its row loop, or by the host
    return bufs[v];
  if (ValueId into = resultBufferOf(v); into != v) {
    // The same pointer as the donated parameter's loads: LLVM sees each
    // element read before it is written, and vectorizes with no overlap
    // check.
    bufs[v] = bufs[into] ? bufs[into] : loadBuffer(into);
    b.CreateStore(bufs[v], bufferSlot(v));
    return bufs[v];
  }
  return allocate(v, product(dims(fn.type(v))));
}

/// for (idx...) over \p extents, calling \p body with the indices.
void Emitter::loops(const std::vector<Value *> &extents, const LoopBody &body,
                    Value *work) {
  if (loopNesting == 0)
    parallelLoop(extents, work, body);
  else
    serialLoops(extents, body);
}

void Emitter::serialLoops(const std::vector<Value *> &extents,
                          const LoopBody &body) {
  std::vector<Value *> idx;
  ++loopNesting;
  loopLevel(extents, 0, idx, body);
  --loopNesting;
}

void Emitter::loopLevel(
    const std::vector<Value *> &extents, size_t level,
    std::vector<Value *> &idx,
    const std::function<void(const std::vector<Value *> &)> &body) {
  if (level == extents.size()) {
    body(idx);
    return;
  }
  llvm::BasicBlock *pre = b.GetInsertBlock();
  auto *header = llvm::BasicBlock::Create(ctx, "loop", kernel);
  auto *inner = llvm::BasicBlock::Create(ctx, "body", kernel);
  auto *exit = llvm::BasicBlock::Create(ctx, "exit", kernel);
  b.CreateBr(header);
  b.SetInsertPoint(header);
  llvm::PHINode *i = b.CreatePHI(i64, 2);
  i->addIncoming(b.getInt64(0), pre);
  b.CreateCondBr(b.CreateICmpSLT(i, extents[level]), inner, exit);
  b.SetInsertPoint(inner);
  idx.push_back(i);
  loopLevel(extents, level + 1, idx, body);
  idx.pop_back();
  Value *next = b.CreateAdd(i, b.getInt64(1), "", true, true);
  i->addIncoming(next, b.GetInsertBlock());
  b.CreateBr(header);
  b.SetInsertPoint(exit);
}

Value *Emitter::offset(const std::vector<Value *> &idx,
                       const std::vector<Value *> &strides) {
  Value *o = b.getInt64(0);
  for (size_t i = 0; i < idx.size(); ++i)
    o = b.CreateAdd(o, b.CreateMul(idx[i], strides[i]));
  return o;
}

// --- element values ---------------------------------------------------
/// The type elements of \p t are computed in.
llvm::Type *Emitter::computeType(DType t) {
  switch (t) {
  case DType::Bool:
    return b.getInt1Ty();
  case DType::I8:
  case DType::I32:
  case DType::I64:
    return i64;
  case DType::F64:
    return b.getDoubleTy();
  default:
    return b.getFloatTy();
  }
}

llvm::Type *Emitter::storageType(DType t) {
  switch (t) {
  case DType::Bool:
  case DType::I8:
    return i8;
  case DType::I32:
    return i32;
  case DType::I64:
    return i64;
  case DType::F16:
    return b.getHalfTy();
  case DType::BF16:
    return b.getInt16Ty();
  case DType::F32:
    return b.getFloatTy();
  case DType::F64:
    return b.getDoubleTy();
  }
  return i8;
}

Value *Emitter::load(DType t, Value *base, Value *index) {
  llvm::Type *st = storageType(t);
  Value *raw = b.CreateLoad(st, b.CreateGEP(st, base, index));
  switch (t) {
  case DType::Bool:
    return b.CreateICmpNE(raw, b.getInt8(0));
  case DType::I8:
  case DType::I32:
    return b.CreateSExt(raw, i64);
  case DType::F16:
    return b.CreateFPExt(raw, b.getFloatTy());
  case DType::BF16:
    return b.CreateBitCast(b.CreateShl(b.CreateZExt(raw, i32), 16),
                           b.getFloatTy());
  default:
    return raw;
  }
}

void Emitter::store(DType t, Value *base, Value *index, Value *v) {
  llvm::Type *st = storageType(t);
  Value *slot = b.CreateGEP(st, base, index);
  switch (t) {
  case DType::Bool:
    b.CreateStore(b.CreateZExt(v, i8), slot);
    return;
  case DType::I8:
  case DType::I32:
    b.CreateStore(b.CreateTrunc(v, st), slot);
    return;
  case DType::F16:
    b.CreateStore(b.CreateFPTrunc(v, st), slot);
    return;
  case DType::BF16:
    b.CreateStore(b.CreateTrunc(bf16Bits(v), st), slot);
    return;
  default:
    b.CreateStore(v, slot);
  }
}

Value *Emitter::bf16Bits(Value *v) {
  // Round to nearest even; NaN stays a (quiet) NaN.
  Value *bits = b.CreateBitCast(v, i32);
  Value *lsb = b.CreateAnd(b.CreateLShr(bits, 16), b.getInt32(1));
  Value *rounded =
      b.CreateLShr(b.CreateAdd(bits, b.CreateAdd(b.getInt32(0x7fff), lsb)), 16);
  Value *nan = b.CreateOr(b.CreateLShr(bits, 16), b.getInt32(0x40));
  Value *isNan = b.CreateFCmpUNO(v, v);
  return b.CreateSelect(isNan, nan, rounded);
}

Value *Emitter::roundToStorage(DType t, Value *v) {
  switch (t) {
  case DType::I8:
  case DType::I32:
    return b.CreateSExt(b.CreateTrunc(v, storageType(t)), i64);
  case DType::F16:
    return b.CreateFPExt(b.CreateFPTrunc(v, b.getHalfTy()), b.getFloatTy());
  case DType::BF16:
    return b.CreateBitCast(b.CreateShl(bf16Bits(v), 16), b.getFloatTy());
  default:
    return v;
  }
}

/// Converts a computed value between element types (cast semantics).
Value *Emitter::convert(Value *v, DType from, DType to) {
  llvm::Type *src = computeType(from), *dst = computeType(to);
  bool fromFloat = isFloat(from), toFloat = isFloat(to);
  if (to == DType::Bool) {
    if (from == DType::Bool)
      return v;
    return fromFloat ? b.CreateFCmpUNE(v, llvm::ConstantFP::get(src, 0.0))
                     : b.CreateICmpNE(v, llvm::ConstantInt::get(src, 0));
  }
  if (from == DType::Bool)
    return toFloat ? b.CreateUIToFP(v, dst) : b.CreateZExt(v, dst);
  if (fromFloat && toFloat)
    return src == dst
               ? v
               : (src->getPrimitiveSizeInBits() < dst->getPrimitiveSizeInBits()
                      ? b.CreateFPExt(v, dst)
                      : b.CreateFPTrunc(v, dst));
  if (!fromFloat && toFloat)
    return b.CreateSIToFP(v, dst);
  if (fromFloat && !toFloat) {
    // Saturating at the target's width, NaN to 0 (as the interpreter).
    llvm::Type *width = storageType(to);
    Value *sat =
        b.CreateIntrinsic(llvm::Intrinsic::fptosi_sat, {width, src}, {v});
    return b.CreateSExt(sat, i64);
  }
  return v; // int to int: i64 compute type, wrapped on store
}

Value *Emitter::libm(MathFn f, DType t, Value *x) {
  struct Names {
    const char *f32, *f64;
  };
  static constexpr Names names[] = {
#define TSL_MATH_LIBM(Id, F32, F64, NvF32, NvF64) {#F32, #F64},
#include "backend/common/MathFunctions.def"
  };
  const Names &n = names[static_cast<size_t>(f)];
  llvm::Type *ty = computeType(t);
  return b.CreateCall(runtime(t == DType::F64 ? n.f64 : n.f32,
                              llvm::FunctionType::get(ty, {ty}, false)),
                      {x});
}

Value *Emitter::symSlot(const std::string &name) {
  return b.CreateConstGEP1_64(i64, symsArg, symIndex.at(name));
}

/// p(x2) by Horner's rule, coefficients from the highest power down.
static Value *horner(llvm::IRBuilder<> &b, Value *x2,
                     std::initializer_list<double> coeffs) {
  llvm::Type *ty = x2->getType();
  Value *acc = nullptr;
  // fmuladd: one FMA per step where the CPU has them (half the
  // instructions), a multiply and an add elsewhere.
  for (double c : coeffs)
    acc = acc ? b.CreateIntrinsic(llvm::Intrinsic::fmuladd, {ty},
                                  {acc, x2, llvm::ConstantFP::get(ty, c)})
              : static_cast<Value *>(llvm::ConstantFP::get(ty, c));
  return acc;
}

Value *Emitter::fastExp(Value *x) {
  // exp for f32 without libm's error handling (vectorizable, no errno):
  // x = n*ln2 + r with |r| <= ln2/2 (Cody-Waite), exp(r) by the Cephes
  // polynomial, times 2^n applied in two halves so results down to the
  // denormals are exact scalings and results past FLT_MAX overflow to inf
  // by themselves. The clamps are compare-and-selects that keep a NaN
  // (MAXPS and MINPS on x86, one instruction each), and n's integer is
  // read from the bits of n + 1.5 * 2^23 (no fptosi, which a NaN would
  // make poison), so NaN flows through to the result with no test of its
  // own: 26 vector instructions per 16 floats instead of 31, most of
  // softmax's time.
  llvm::Type *ty = x->getType();
  auto c = [&](double v) { return llvm::ConstantFP::get(ty, v); };
  Value *lo = c(-104.0), *hi = c(89.5);
  Value *xc = b.CreateSelect(b.CreateFCmpOGT(lo, x), lo, x);
  xc = b.CreateSelect(b.CreateFCmpOLT(hi, xc), hi, xc);
  auto fma = [&](Value *x, Value *y, Value *z) {
    return b.CreateIntrinsic(llvm::Intrinsic::fmuladd, {ty}, {x, y, z});
  };
  // Round to nearest by the addition itself: |x * log2(e)| < 2^22.
  const double magic = 12582912.0; // 1.5 * 2^23: bits 0x4B400000
  Value *shifted = fma(xc, c(1.44269504088896341), c(magic));
  Value *n = b.CreateFSub(shifted, c(magic));
  Value *r = fma(n, c(-0.693359375), xc);
  r = fma(n, c(2.12194440e-4), r);
  Value *r2 = b.CreateFMul(r, r);
  Value *p = horner(b, r,
                    {1.9875691500e-4, 1.3981999507e-3, 8.3334519073e-3,
                     4.1665795894e-2, 1.6666665459e-1, 5.0000001201e-1});
  Value *e = b.CreateFAdd(fma(p, r2, r), c(1.0));
  Value *ni =
      b.CreateSub(b.CreateBitCast(shifted, i32), b.getInt32(0x4B400000));
  Value *half = b.CreateAShr(ni, 1);
  auto pow2 = [&](Value *k) {
    return b.CreateBitCast(b.CreateShl(b.CreateAdd(k, b.getInt32(127)), 23),
                           ty);
  };
  return b.CreateFMul(b.CreateFMul(e, pow2(half)), pow2(b.CreateSub(ni, half)));
}

/// x * P(x^2) / Q(x^2) with x clamped to [-lim, lim]: the odd rational
/// form both fast tanh and fast erf use (the clamp is where they round to
/// +-1, so the rational stays in its fitted range).
static Value *clampedOddRational(llvm::IRBuilder<> &b, Value *x, double lim,
                                 std::initializer_list<double> p,
                                 std::initializer_list<double> q) {
  Value *hi = llvm::ConstantFP::get(x->getType(), lim);
  Value *c = b.CreateBinaryIntrinsic(
      llvm::Intrinsic::minnum,
      b.CreateBinaryIntrinsic(llvm::Intrinsic::maxnum, x, b.CreateFNeg(hi)),
      hi);
  Value *c2 = b.CreateFMul(c, c);
  return b.CreateFDiv(b.CreateFMul(c, horner(b, c2, p)), horner(b, c2, q));
}

Value *Emitter::fastTanh(Value *x) {
  // Rational approximation for f32 (the form Eigen uses): a few ulp, and
  // unlike a libm call it vectorizes. Clamped where tanh rounds to +-1.
  llvm::Type *ty = x->getType();
  Value *r = clampedOddRational(b, x, 7.90531110763549805,
                                {-2.76076847742355e-16, 2.00018790482477e-13,
                                 -8.60467152213735e-11, 5.12229709037114e-08,
                                 1.48572235717979e-05, 6.37261928875436e-04,
                                 4.89352455891786e-03},
                                {1.19825839466702e-06, 1.18534705686654e-04,
                                 2.26843463243900e-03, 4.89352518554385e-03});
  // Tiny inputs: tanh(x) == x to float precision; NaN stays NaN.
  Value *ax = b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
  Value *tiny = b.CreateFCmpOLT(ax, llvm::ConstantFP::get(ty, 0.0004));
  Value *isNan = b.CreateFCmpUNO(x, x);
  // The rational ends at 1 - 2^-22 (its clamp), but f32 tanh rounds to
  // exactly +-1 from 13 ln 2 on (1 - tanh(x) < 2^-25): without this, the
  // gradient 1 - tanh^2 never reaches 0 for large inputs.
  Value *one = b.CreateBinaryIntrinsic(llvm::Intrinsic::copysign,
                                       llvm::ConstantFP::get(ty, 1.0), x);
  r = b.CreateSelect(b.CreateFCmpOGE(ax, llvm::ConstantFP::get(ty, 9.01091334)),
                     one, r);
  return b.CreateSelect(b.CreateOr(tiny, isNan), x, r);
}

Value *Emitter::fastErf(Value *x) {
  // Rational approximation of erf for f32 (Eigen's generic_fast_erf_float),
  // vectorizable; erf(x) rounds to +-1 beyond |x| = 4.
  Value *r = clampedOddRational(
      b, x, 4.0,
      {-2.72614225801306e-10, 2.77068142495902e-08, -2.10102402082508e-06,
       -5.69250639462346e-05, -7.34990630326855e-04, -2.95459980854025e-03,
       -1.60960333262415e-02},
      {-1.45660718464996e-05, -2.13374055278905e-04, -1.68282697438203e-03,
       -7.37332916720468e-03, -1.42647390514189e-02});
  return b.CreateSelect(b.CreateFCmpUNO(x, x), x, r);
}

} // namespace tsl::backend
