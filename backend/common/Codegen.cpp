// IR -> LLVM IR. Each op becomes a loop nest over its result (or a call to a
// library kernel of runtime/KernelAbi.h); sizes are computed at run time from
// the symbol values, so one kernel serves every size its guards admit.
// What is fused, freed, row-grouped or outlined comes from the kernel plan
// (KernelPlan.h); what differs between targets from the virtual hooks the
// targets' subclasses override (CpuCodegen, DeviceCodegen).
// This file: the driver loop, elementwise loops (recomputing fused trees),
// reductions and matmul.
#include "backend/common/Codegen.h"
#include "backend/common/KernelOrigins.h"
#include "backend/common/RuntimeCalls.h"
#include "runtime/Sha256.h"

#include <llvm/IR/Verifier.h>
#include <llvm/Linker/Linker.h>
#include <llvm/Support/raw_ostream.h>

#include <algorithm>

namespace tsl {
namespace backend {

Expected<std::unique_ptr<llvm::Module>> Codegen::run() {
  for (size_t i = 0; i < fn.symbols.size(); ++i)
    symIndex[fn.symbols[i].name] = static_cast<int>(i);
  i8 = b.getInt8Ty();
  i32 = b.getInt32Ty();
  i64 = b.getInt64Ty();
  ptr = b.getPtrTy();
  auto *type = llvm::FunctionType::get(i32, {ptr, ptr, ptr}, false);
  kernel = llvm::Function::Create(type, llvm::Function::ExternalLinkage,
                                  options.kernelName(), *mod);
  buffersArg = kernel->getArg(0);
  symsArg = kernel->getArg(1);
  ctxArg = kernel->getArg(2);
  for (unsigned a = 0; a < 3; ++a)
    kernel->addParamAttr(a, llvm::Attribute::NoAlias);
  auto *entry = llvm::BasicBlock::Create(ctx, "entry", kernel);
  b.SetInsertPoint(entry);
  bufs.assign(fn.values.size(), nullptr);
  for (const Param &p : fn.params)
    if (!p.isInt)
      bufs[p.value] = loadBuffer(p.value);
  makePlan();
  if (outlining) // its calls decide how it is compiled (compileToObjects)
    kernel->addFnAttr(kHostCodeAttribute);
  segmenting = outlining && fn.ops.size() > kSegmentOps;
  for (size_t i = 0; i < fn.ops.size(); ++i) {
    opIndex = static_cast<int32_t>(i);
    const Operation &op = fn.ops[i];
    bool ok;
    placeInSegment(i);
    reloadBuffers(i, std::max(i + 1, rowGroups[i].end));
    if (isLoopMarker(op.code)) {
      if (!(op.code == OpCode::Loop ? beginLoop(i) : endLoop(i)))
        return loweringError();
      continue;
    }
    if (rowGroups[i].end > i) {
      size_t end = rowGroups[i].end;
      if (outlining) {
        ok = lowerKernel(i, end, true);
      } else {
        for (size_t k = i; k < end; ++k) {
          opIndex = static_cast<int32_t>(k);
          checkResultSizes(fn.ops[k]);
        }
        opIndex = static_cast<int32_t>(i);
        ok = lowerRowGroup(rowGroups[i]);
      }
      if (!ok)
        return loweringError();
      i = end - 1;
      continue;
    }
    // An op that only names part of its operand's buffer (a reshape, a
    // contiguous slice) is address arithmetic: done in the host code, not a
    // kernel, whose text would hold the slice's offset and so differ for
    // every layer of a stack (`w[0]`, `w[1]`, ...).
    bool alias = outlining && plan.isView(op);
    // A kernel, or a callee, checks its own result sizes.
    bool checksOwn = op.code == OpCode::Call || (outlining && !alias);
    if (!checksOwn || computedElsewhere(op))
      checkResultSizes(op);
    if (computedElsewhere(op))
      continue; // computed inside its consumer (loop or GEMM)
    if (op.code == OpCode::Call)
      ok = lowerCall(op);
    else if (alias)
      ok = lowerOp(op);
    else if (outlining)
      ok = lowerKernel(i, i + 1, false);
    else
      ok = lowerHostOp(op);
    if (!ok)
      return loweringError();
    // Buffer reuse: intermediates whose last use this was are freed, so
    // later allocations of the call can take their memory.
    for (ValueId r : freeAfter[i])
      if (bufs[r])
        freeBuffer(outlining ? loadBuffer(r) : bufs[r]);
  }
  while (!segments.empty())
    closeSegment();
  endCall();
  b.CreateRet(b.getInt32(0));
  emitMatch();
  emitShapes();
  std::string verify;
  llvm::raw_string_ostream os(verify);
  if (llvm::verifyModule(*mod, &os))
    return makeError(ErrorKind::Internal,
                     "internal error: invalid LLVM IR: " + os.str());
  return std::move(mod);
}

Emitter::EmissionState
Emitter::enterFunction(llvm::Function *f, const std::vector<ValueId> &used) {
  EmissionState saved{kernel, b.GetInsertBlock(), buffersArg, symsArg, ctxArg,
                      bufs};
  kernel = f;
  sizesChecked.clear();
  buffersArg = f->getArg(0);
  symsArg = f->getArg(1);
  ctxArg = f->arg_size() >= 3 && f->getArg(2)->getType()->isPointerTy()
               ? f->getArg(2)
               : nullptr; // device functions have no context
  b.SetInsertPoint(llvm::BasicBlock::Create(ctx, "entry", f));
  std::fill(bufs.begin(), bufs.end(), nullptr);
  for (ValueId v : used)
    if (saved.bufs[v] && !bufs[v])
      bufs[v] = loadBuffer(v);
  return saved;
}

void Emitter::leaveFunction(EmissionState saved) {
  kernel = saved.function;
  sizesChecked.clear();
  buffersArg = saved.buffers;
  symsArg = saved.syms;
  ctxArg = saved.ctx;
  bufs = std::move(saved.bufs);
  b.SetInsertPoint(saved.block);
}

std::vector<ValueId> Codegen::valuesRead(size_t begin, size_t end) const {
  std::vector<ValueId> used;
  for (size_t i = begin; i < end; ++i)
    for (ValueId o : fn.ops[i].operands) {
      used.push_back(o);
      leaves(o, used);
      if (transposedOperand[o]) // the GEMM reads the untransposed buffer
        used.insert(used.end(), producer[o]->operands.begin(),
                    producer[o]->operands.end());
    }
  return used;
}

void Codegen::reloadBuffers(size_t begin, size_t end) {
  if (!outlining)
    return;
  // Each buffer once: an op's operands repeat (x * x, a view and its base),
  // and at O0 every dead load is an instruction to select.
  std::vector<ValueId> done;
  auto reload = [&](ValueId v) {
    if (!bufs[v] || std::find(done.begin(), done.end(), v) != done.end())
      return;
    done.push_back(v);
    if (!openLoops.empty())
      openLoops.back().reloaded.emplace_back(v, bufs[v]);
    bufs[v] = loadBuffer(v);
  };
  for (ValueId v : valuesRead(begin, end))
    reload(v);
  for (size_t i = begin; i < end; ++i) {
    for (ValueId v : freeAfter[i])
      reload(v);
    if (isLoopMarker(fn.ops[i].code)) {
      const Operation &loop =
          fn.ops[fn.ops[i].code == OpCode::Loop ? i : plan.partner[i]];
      for (ValueId v : loop.results)
        reload(v);
    }
  }
}

llvm::Function *Codegen::shareKernel(llvm::Function *f) {
  // The text names no value of the function (slots are numbered by first
  // use, the op index is an argument), so equal text is equal code.
  f->setName("tsl_kernel_candidate");
  std::string text;
  llvm::raw_string_ostream os(text);
  f->print(os);
  auto [it, fresh] = kernelsByText.emplace(os.str(), f);
  if (!fresh) {
    f->eraseFromParent();
    return it->second;
  }
  // Named by its code: the same kernel has the same name in every function
  // and variant, so a cached object of it serves them all.
  f->setName(kKernelFunctionPrefix + rt::sha256Hex(it->first).substr(0, 32));
  if (perfMapEnabled()) {
    const Operation &op = fn.ops[static_cast<size_t>(opIndex)];
    recordKernelOrigin(f->getName().str(),
                       std::string(opName(op.code)) + ", op " +
                           std::to_string(opIndex) + " of " + fn.name);
  }
  f->setLinkage(llvm::GlobalValue::LinkOnceODRLinkage);
  f->setVisibility(llvm::GlobalValue::HiddenVisibility);
  return f;
}

bool Codegen::lowerKernel(size_t begin, size_t end, bool rowGroup) {
  auto *type = llvm::FunctionType::get(i32, {ptr, ptr, ptr, i32}, false);
  auto *f = llvm::Function::Create(type, llvm::Function::InternalLinkage,
                                   "tsl_kernel_candidate", *mod);
  // Kept apart so that each distinct kernel is optimized once, however
  // many times it is called.
  f->addFnAttr(llvm::Attribute::NoInline);
  for (unsigned a = 0; a < 3; ++a)
    f->addParamAttr(a, llvm::Attribute::NoAlias);
  std::map<ValueId, unsigned> slots;
  kernelSlots = &slots;
  EmissionState outer = enterFunction(f, valuesRead(begin, end));
  kernelOp = f->getArg(3);
  kernelFirstOp = static_cast<int32_t>(begin);
  for (size_t k = begin; k < end; ++k) {
    opIndex = static_cast<int32_t>(k);
    checkResultSizes(fn.ops[k]);
  }
  opIndex = static_cast<int32_t>(begin);
  bool ok = rowGroup ? lowerRowGroup(rowGroups[begin]) : lowerOp(fn.ops[begin]);
  if (ok)
    b.CreateRet(b.getInt32(0));
  leaveFunction(std::move(outer));
  kernelSlots = nullptr;
  kernelOp = nullptr;
  if (!ok) {
    f->eraseFromParent();
    return false;
  }
  f = shareKernel(f);
  // The argument array lives in the scratch area of our own buffer array
  // (bufferArrayLength), not on the stack: a kernel can read every value.
  Value *args = scratchArea();
  auto slotOf = [&](unsigned s) { return b.CreateConstGEP1_64(ptr, args, s); };
  for (auto [v, s] : slots)
    if (bufs[v])
      b.CreateStore(bufs[v], slotOf(s));
  Value *status = b.CreateCall(
      f, {args, symsArg, ctxArg,
          b.getInt32(static_cast<int32_t>(begin) + options.opIndexBase)});
  failIf(b.CreateICmpNE(status, b.getInt32(0)), nullptr); // recorded
  // The kernel allocated (or aliased) its results into its slots. (The
  // array's address again: a value kept across the failure branch would
  // take a stack slot of its own in unoptimized host code.)
  args = scratchArea();
  for (size_t k = begin; k < end; ++k)
    if (!computedElsewhere(fn.ops[k]))
      for (ValueId r : fn.ops[k].results)
        if (auto it = slots.find(r); it != slots.end() && !bufs[r]) {
          bufs[r] = b.CreateLoad(ptr, slotOf(it->second));
          b.CreateStore(bufs[r], bufferSlot(r));
        }
  return true;
}

bool Codegen::lowerCall(const Operation &op) {
  auto k = static_cast<size_t>(op.intAttr("callee"));
  const Function &callee = fn.callees[k];
  LoweringOptions names;
  names.prefix = options.calleePrefix(k);
  llvm::FunctionCallee f = mod->getOrInsertFunction(
      names.kernelName(), llvm::FunctionType::get(i32, {ptr, ptr, ptr}, false));
  // The callee's buffer array is our scratch area (bufferArrayLength):
  // its parameters in, its results (allocated in this call's context) out.
  Value *array = scratchArea();
  auto slot = [&](ValueId v) { return b.CreateConstGEP1_64(ptr, array, v); };
  for (size_t i = 0; i < op.operands.size(); ++i)
    b.CreateStore(bufs[op.operands[i]], slot(callee.params[i].value));
  Value *status = b.CreateCall(f, {array, symsArg, ctxArg});
  failIf(b.CreateICmpNE(status, b.getInt32(0)), nullptr); // recorded
  array = scratchArea(); // not kept across the branch (lowerKernel)
  for (size_t i = 0; i < op.results.size(); ++i) {
    ValueId r = op.results[i];
    bufs[r] = b.CreateLoad(ptr, slot(callee.results[i]));
    b.CreateStore(bufs[r], bufferSlot(r));
  }
  return true;
}

Value *Codegen::scratchArea() {
  return b.CreateConstGEP1_64(ptr, buffersArg, fn.values.size());
}

bool Emitter::unsupported(const std::string &what) {
  error = makeError(ErrorKind::Unsupported,
                    std::string("not supported on the ") + target.name() +
                        " backend: " + what);
  return false;
}

Error Emitter::loweringError() const {
  // A lowering that fails without saying why is treated as unsupported:
  // the message stays the one users have always seen.
  if (error.message.empty())
    return makeError(ErrorKind::Unsupported, "not supported");
  return error;
}

bool Codegen::checkSizes(const Operation &op) {
  Value *overflow;
  Value *holds = checkedCond(op.condAttr("cond"), overflow);
  failMessageIf(overflow, "a size in it does not fit in 64 bits");
  failOpIf(b.CreateNot(holds));
  return true;
}

bool Codegen::scalarValue(const Operation &op) {
  DType t = fn.type(op.results[0]).dtype;
  Value *dst = allocateResult(op);
  Value *v;
  if (op.code == OpCode::SymScalar) {
    v = convert(expr(op.exprAttr("expr")), DType::I64, t);
  } else {
    Number n = op.numAttr("value");
    v = n.isInt ? convert(b.getInt64(n.i), DType::I64, t)
                : convert(fconst(DType::F64, n.f), DType::F64, t);
  }
  store(t, dst, b.getInt64(0), v);
  return true;
}

bool Codegen::fill(const Operation &op) {
  DType t = fn.type(op.results[0]).dtype;
  Value *dst = allocateResult(op);
  Number n = op.numAttr("value");
  Value *v = n.isInt ? convert(b.getInt64(n.i), DType::I64, t)
                     : convert(fconst(DType::F64, n.f), DType::F64, t);
  loops({product(dims(fn.type(op.results[0])))},
        [&](const std::vector<Value *> &i) { store(t, dst, i[0], v); });
  return true;
}

bool Codegen::arange(const Operation &op) {
  DType t = fn.type(op.results[0]).dtype;
  Value *dst = allocateResult(op);
  loops({expr(op.exprAttr("n"))}, [&](const std::vector<Value *> &i) {
    store(t, dst, i[0], convert(i[0], DType::I64, t));
  });
  return true;
}

bool Codegen::item(const Operation &op) {
  ValueId x = op.operands[0];
  Value *v = load(fn.type(x).dtype, readToHost(x), b.getInt64(0));
  if (fn.type(x).dtype == DType::Bool)
    v = b.CreateZExt(v, i64);
  SymExpr sym = op.exprAttr("sym");
  if (sym.isSymbol() && symIndex.count(sym.symbolName())) {
    const SymbolInfo &info = fn.symbols[symIndex[sym.symbolName()]];
    Value *bad = b.getFalse();
    if (info.lo != INT64_MIN)
      bad = b.CreateOr(bad, b.CreateICmpSLT(v, b.getInt64(info.lo)));
    if (info.hi)
      bad = b.CreateOr(bad, b.CreateICmpSGT(v, b.getInt64(*info.hi)));
    failMessageIf(bad, "item() gave a value outside the range of " + info.name);
    b.CreateStore(v, symSlot(sym.symbolName()));
  }
  return true;
}

bool Codegen::loopMarker(const Operation &op) {
  return unsupported(std::string(opInfo(op.code).name) +
                     " outside the walk of a loop (internal)");
}

void Codegen::makePlan() {
  TargetCaps caps = target.caps();
  caps.outlineOpsAbove = options.outlineOpsAbove;
  plan = planKernels(fn, caps);
  outlining = plan.outlining;
}

void Codegen::freeBuffer(Value *p) {
  b.CreateCall(runtime(target.runtime().free), {ctxArg, p});
}

/// Strides of \p t broadcast to \p shape (0 on size-1 axes).
std::vector<Value *>
Codegen::broadcastStrides(const TensorType &t,
                          const std::vector<Value *> &shape,
                          const std::vector<SymExpr> *loopDims) {
  std::vector<Value *> own = contiguousStrides(dims(t));
  std::vector<Value *> s(shape.size(), b.getInt64(0));
  size_t off = shape.size() - t.rank();
  for (size_t i = 0; i < t.rank(); ++i) {
    // Decided at compile time when the dims say so (the shape rules
    // proved or guarded it); a run-time select only for the rest.
    if (loopDims && (*loopDims)[off + i] == t.dims[i] && !t.dims[i].isConst(1))
      s[off + i] = own[i];
    else if (t.dims[i].isConst(1))
      s[off + i] = b.getInt64(0);
    else
      s[off + i] =
          b.CreateSelect(b.CreateICmpEQ(expr(t.dims[i]), b.getInt64(1)),
                         b.getInt64(0), own[i]);
  }
  return s;
}

/// Strides (against the loop shape) of every stored value a fused tree
/// reads; computed before the loop.
void Codegen::leafStrides(ValueId v, const std::vector<Value *> &shape,
                          const std::vector<SymExpr> &loopDims,
                          std::map<ValueId, std::vector<Value *>> &out) {
  if (!plan.inlined[v]) {
    if (!out.count(v))
      out[v] = broadcastStrides(fn.type(v), shape, &loopDims);
    return;
  }
  for (ValueId o : producer[v]->operands)
    leafStrides(o, shape, loopDims, out);
}

/// The value of \p v at loop index \p idx: loaded, or recomputed.
Value *
Codegen::valueAt(ValueId v, const std::vector<Value *> &idx,
                 const std::map<ValueId, std::vector<Value *>> &strides) {
  if (Value *held = registerValue(v))
    return held; // a row kernel's reduction, in a register
  if (!plan.inlined[v])
    return load(storedType(v), bufs[v], offset(idx, strides.at(v)));
  const Operation &p = *producer[v];
  DType outType = fn.type(v).dtype;
  if (p.code == OpCode::Constant) {
    Number n = p.numAttr("value");
    return n.isInt ? convert(b.getInt64(n.i), DType::I64, outType)
                   : convert(fconst(DType::F64, n.f), DType::F64, outType);
  }
  if (p.code == OpCode::SymScalar)
    return convert(expr(p.exprAttr("expr")), DType::I64, outType);
  std::vector<Value *> vals;
  for (ValueId o : p.operands)
    vals.push_back(valueAt(o, idx, strides));
  return compute(p, vals);
}

/// One elementwise op applied to computed operand values.
Value *Codegen::compute(const Operation &op, const std::vector<Value *> &vals) {
  DType out = fn.type(op.results[0]).dtype;
  DType inType = op.operands.empty() ? out : fn.type(op.operands[0]).dtype;
  Value *r;
  if (op.code == OpCode::Where)
    r = b.CreateSelect(vals[0], vals[1], vals[2]);
  else if (op.code == OpCode::Cast)
    // An explicit cast rounds: its operand to its own type, then the result.
    return roundToStorage(
        out, convert(roundToStorage(inType, vals[0]), inType, out));
  else if (vals.size() == 1)
    r = unary(op.code, inType, vals[0]);
  else
    r = binary(op.code, inType, vals[0], vals[1]);
  // Integers wrap as stored ones do (that is their semantics); f16 and bf16
  // intermediates keep f32's precision and round once, where stored.
  if (!r || isFloat(out))
    return r;
  return roundToStorage(out, r);
}

bool Codegen::elementwise(const Operation &op) {
  const TensorType &out = fn.type(op.results[0]);
  std::vector<Value *> shape = dims(out);
  Value *dst = allocateResult(op);
  std::vector<Value *> outStrides = contiguousStrides(shape);
  std::map<ValueId, std::vector<Value *>> strides;
  for (ValueId v : op.operands)
    leafStrides(v, shape, out.dims, strides);
  bool ok = true;
  loops(shape, [&](const std::vector<Value *> &idx) {
    std::vector<Value *> vals;
    for (ValueId v : op.operands)
      vals.push_back(valueAt(v, idx, strides));
    Value *r = compute(op, vals);
    if (!r) {
      ok = unsupported(opInfo(op.code).name);
      return;
    }
    store(storedType(op.results[0]), dst, offset(idx, outStrides), r);
  });
  return ok;
}

Value *Codegen::reductionIdentity(OpCode code, DType t) {
  if (t == DType::Bool) // counted in i64: min is 1 unless a false is seen
    return b.getInt64(code == OpCode::ReduceMin ? 1 : 0);
  llvm::Type *acc = computeType(t);
  if (isFloat(t))
    return code == OpCode::ReduceMax ? llvm::ConstantFP::getInfinity(acc, true)
           : code == OpCode::ReduceMin
               ? llvm::ConstantFP::getInfinity(acc, false)
               : llvm::ConstantFP::get(acc, 0.0);
  return b.getInt64(code == OpCode::ReduceMax   ? INT64_MIN
                    : code == OpCode::ReduceMin ? INT64_MAX
                                                : 0);
}

Value *Codegen::reductionStep(OpCode code, Value *acc, Value *x) {
  bool fl = acc->getType()->isFloatingPointTy();
  if (code == OpCode::ReduceMax)
    return b.CreateBinaryIntrinsic(
        fl ? llvm::Intrinsic::maximum : llvm::Intrinsic::smax, acc, x);
  if (code == OpCode::ReduceMin)
    return b.CreateBinaryIntrinsic(
        fl ? llvm::Intrinsic::minimum : llvm::Intrinsic::smin, acc, x);
  return fl ? b.CreateFAdd(acc, x) : b.CreateAdd(acc, x);
}

bool Codegen::reduceLastAxis(const Operation &op,
                             const std::vector<Value *> &inShape, Value *dst) {
  // One row at a time with the accumulator in a register: the inner loop is
  // a plain reduction the vectorizer splits into lanes (reassociation is
  // allowed, like NumPy's pairwise sums).
  DType t = fn.type(op.operands[0]).dtype;
  llvm::Type *acc = computeType(t);
  std::vector<Value *> outer(inShape.begin(), inShape.end() - 1);
  Value *n = inShape.back();
  std::map<ValueId, std::vector<Value *>> strides;
  leafStrides(op.operands[0], inShape, fn.type(op.operands[0]).dims, strides);
  std::vector<Value *> outStrides = contiguousStrides(outer);
  llvm::FastMathFlags fmf;
  fmf.setAllowReassoc();
  fmf.setNoSignedZeros();
  Value *init = reductionIdentity(op.code, t);
  auto row = [&](const std::vector<Value *> &idx) {
    llvm::BasicBlock *pre = b.GetInsertBlock();
    auto *header = llvm::BasicBlock::Create(ctx, "row", kernel);
    auto *body = llvm::BasicBlock::Create(ctx, "rowbody", kernel);
    auto *exit = llvm::BasicBlock::Create(ctx, "rowexit", kernel);
    b.CreateBr(header);
    b.SetInsertPoint(header);
    llvm::PHINode *j = b.CreatePHI(i64, 2);
    llvm::PHINode *a = b.CreatePHI(acc, 2);
    j->addIncoming(b.getInt64(0), pre);
    a->addIncoming(init, pre);
    b.CreateCondBr(b.CreateICmpSLT(j, n), body, exit);
    b.SetInsertPoint(body);
    std::vector<Value *> full = idx;
    full.push_back(j);
    Value *x = valueAt(op.operands[0], full, strides);
    Value *next = reductionStep(op.code, a, x);
    if (auto *inst = llvm::dyn_cast<llvm::Instruction>(next);
        inst && llvm::isa<llvm::FPMathOperator>(inst))
      inst->setFastMathFlags(fmf);
    j->addIncoming(b.CreateAdd(j, b.getInt64(1), "", true, true),
                   b.GetInsertBlock());
    a->addIncoming(next, b.GetInsertBlock());
    b.CreateBr(header);
    b.SetInsertPoint(exit);
    Value *result = a;
    if (op.code == OpCode::ReduceMean)
      result = b.CreateFDiv(result, b.CreateSIToFP(n, acc));
    store(storedType(op.results[0]), dst, offset(idx, outStrides), result);
  };
  loops(outer, row, n);
  return true;
}

bool Codegen::reduceKeptInParallel(const Operation &op,
                                   const std::vector<Value *> &inShape,
                                   Value *dst) {
  // Each result element is one iteration of the parallel loop, summing its
  // reduced positions in row-major order in a register (the same order for
  // any thread count); the reduced axes include the last, so the innermost
  // loop reads contiguous elements (a batch norm's statistics over
  // [N, H, W], where the shared-accumulator loop ran on one thread).
  const TensorType &in = fn.type(op.operands[0]);
  DType t = in.dtype;
  llvm::Type *acc = computeType(t);
  std::vector<bool> red = reducedAxes(op);
  std::map<ValueId, std::vector<Value *>> strides;
  leafStrides(op.operands[0], inShape, in.dims, strides);
  // Adjacent reduced axes every stored leaf reads contiguously (or not at
  // all) are one loop: [N, H, W] over H * W, so that the vectorizer's lanes
  // run the whole plane before they are added up (per W-row, the horizontal
  // adds cost more than the loads).
  std::vector<bool> joinsNext(in.rank(), false);
  for (size_t i = 0; i + 1 < in.rank(); ++i) {
    if (!red[i] || !red[i + 1])
      continue;
    bool ok = true;
    for (const auto &[leaf, unused] : strides) {
      const std::vector<SymExpr> &d = fn.type(leaf).dims;
      size_t off = in.rank() - d.size(); // the leaf's axes start here
      if (i + 1 < off)
        continue; // has neither axis: broadcast over both
      // Starting at axis i + 1, it broadcasts over i only.
      bool full = i >= off && d[i - off] == in.dims[i] &&
                  d[i + 1 - off] == in.dims[i + 1];
      bool ones =
          i >= off && d[i - off].isConst(1) && d[i + 1 - off].isConst(1);
      ok = ok && (full || ones);
    }
    joinsNext[i] = ok;
  }
  std::vector<Value *> kept, reducedShape;
  // Where each reduced loop's index goes: the last axis of its group.
  std::vector<size_t> reducedAxisOf;
  Value *count = b.getInt64(1), *run = nullptr;
  for (size_t i = 0; i < inShape.size(); ++i) {
    if (!red[i]) {
      kept.push_back(inShape[i]);
      continue;
    }
    count = b.CreateMul(count, inShape[i]);
    run = run ? b.CreateMul(run, inShape[i]) : inShape[i];
    if (!joinsNext[i]) {
      reducedShape.push_back(run);
      reducedAxisOf.push_back(i);
      run = nullptr;
    }
  }
  std::vector<Value *> outStrides = contiguousStrides(kept);
  Value *init = reductionIdentity(op.code, t);
  loops(
      kept,
      [&](const std::vector<Value *> &k) {
        Value *slot = entryAlloca(acc);
        b.CreateStore(init, slot);
        serialLoops(reducedShape, [&](const std::vector<Value *> &r) {
          std::vector<Value *> full(red.size(), b.getInt64(0));
          for (size_t i = 0, ki = 0; i < red.size(); ++i)
            if (!red[i])
              full[i] = k[ki++];
          for (size_t ri = 0; ri < r.size(); ++ri)
            full[reducedAxisOf[ri]] = r[ri];
          Value *x = valueAt(op.operands[0], full, strides);
          Value *next = reductionStep(op.code, b.CreateLoad(acc, slot), x);
          if (auto *inst = llvm::dyn_cast<llvm::Instruction>(next);
              inst && llvm::isa<llvm::FPMathOperator>(inst) &&
              op.code != OpCode::ReduceMax && op.code != OpCode::ReduceMin) {
            llvm::FastMathFlags fmf; // lanes, like NumPy's pairwise sums
            fmf.setAllowReassoc();
            fmf.setNoSignedZeros();
            inst->setFastMathFlags(fmf);
          }
          b.CreateStore(next, slot);
        });
        Value *v = b.CreateLoad(acc, slot);
        if (op.code == OpCode::ReduceMean)
          v = b.CreateFDiv(v, b.CreateSIToFP(count, acc));
        store(storedType(op.results[0]), dst, offset(k, outStrides), v);
      },
      count);
  return true;
}

std::vector<bool> Codegen::reducedAxes(const Operation &op) const {
  const auto &axes = op.intsAttr("axes");
  std::vector<bool> red(fn.type(op.operands[0]).rank(), axes.empty());
  for (int64_t a : axes)
    red[static_cast<size_t>(a)] = true;
  return red;
}

bool Codegen::reduce(const Operation &op) {
  const TensorType &in = fn.type(op.operands[0]);
  DType t = in.dtype;
  std::vector<bool> red = reducedAxes(op);
  std::vector<Value *> inShape = dims(in);
  std::vector<Value *> keep;
  for (size_t i = 0; i < in.rank(); ++i)
    keep.push_back(red[i] ? b.getInt64(1) : inShape[i]);
  Value *count = b.getInt64(1);
  for (size_t i = 0; i < in.rank(); ++i)
    if (red[i])
      count = b.CreateMul(count, inShape[i]);
  Value *n = product(keep);
  Value *dst = allocateResult(op);
  if (in.rank() >= 1 && red.back() &&
      std::count(red.begin(), red.end(), true) == 1 && isFloat(t))
    return reduceLastAxis(op, inShape, dst);
  if (in.rank() >= 2 && red.back() && t != DType::Bool &&
      std::find(red.begin(), red.end(), false) != red.end())
    return reduceKeptInParallel(op, inShape, dst);
  // Accumulate in the compute type (f32 for f16/bf16, i64 for ints).
  llvm::Type *acc = computeType(t);
  Value *accBuf = b.CreateCall(runtime(target.runtime().alloc),
                               {ctxArg, b.CreateMul(n, b.getInt64(8))});
  failOpIf(b.CreateIsNull(accBuf));
  Value *init = reductionIdentity(op.code, t);
  if (t == DType::Bool)
    acc = i64;
  loops({n}, [&](const std::vector<Value *> &i) {
    b.CreateStore(init, b.CreateGEP(acc, accBuf, i[0]));
  });
  std::vector<Value *> accStrides = contiguousStrides(keep);
  for (size_t i = 0; i < in.rank(); ++i)
    if (red[i])
      accStrides[i] = b.getInt64(0);
  std::map<ValueId, std::vector<Value *>> inStrides;
  leafStrides(op.operands[0], inShape, in.dims, inStrides);
  // Iterations share accumulators: one thread.
  serialLoops(inShape, [&](const std::vector<Value *> &idx) {
    Value *slot = b.CreateGEP(acc, accBuf, offset(idx, accStrides));
    Value *cur = b.CreateLoad(acc, slot);
    Value *x = valueAt(op.operands[0], idx, inStrides);
    if (t == DType::Bool)
      x = b.CreateZExt(x, i64);
    Value *r = reductionStep(op.code, cur, x);
    if (op.code != OpCode::ReduceMax && op.code != OpCode::ReduceMin &&
        isFloat(t)) {
      // Summation order is free (like NumPy's pairwise sums): lets the
      // vectorizer split the sum into lanes.
      llvm::FastMathFlags fmf;
      fmf.setAllowReassoc();
      llvm::cast<llvm::Instruction>(r)->setFastMathFlags(fmf);
    }
    b.CreateStore(r, slot);
  });
  loops({n}, [&](const std::vector<Value *> &i) {
    Value *v = b.CreateLoad(acc, b.CreateGEP(acc, accBuf, i[0]));
    if (op.code == OpCode::ReduceMean)
      v = b.CreateFDiv(v, b.CreateSIToFP(count, acc));
    if (t == DType::Bool)
      v = b.CreateICmpNE(v, b.getInt64(0));
    store(fn.type(op.results[0]).dtype, dst, i[0], v);
  });
  freeBuffer(accBuf);
  return true;
}

Codegen::MatmulDims Codegen::matmulDims(const Operation &op) {
  TensorType a = fn.type(op.operands[0]), c = fn.type(op.operands[1]);
  if (a.rank() == 1)
    a.dims.insert(a.dims.begin(), SymExpr(1));
  if (c.rank() == 1)
    c.dims.push_back(SymExpr(1));
  MatmulDims d;
  d.M = expr(a.dims[a.rank() - 2]);
  d.K = expr(a.dims[a.rank() - 1]);
  d.N = expr(c.dims[c.rank() - 1]);
  d.rightIs2d = c.rank() == 2;
  size_t batchRank = std::max(a.rank(), c.rank()) - 2;
  d.batch.resize(batchRank);
  d.sa.assign(batchRank, b.getInt64(0));
  d.sc.assign(batchRank, b.getInt64(0));
  // Batch strides of each operand (0 where it broadcasts).
  auto batchStrides = [&](const TensorType &x, Value *block,
                          std::vector<Value *> &s) {
    size_t r = x.rank() - 2, off = batchRank - r;
    Value *acc = block;
    for (size_t i = r; i-- > 0;) {
      Value *dim = expr(x.dims[i]);
      s[off + i] = b.CreateSelect(b.CreateICmpEQ(dim, b.getInt64(1)),
                                  b.getInt64(0), acc);
      acc = b.CreateMul(acc, dim);
    }
  };
  batchStrides(a, b.CreateMul(d.M, d.K), d.sa);
  batchStrides(c, b.CreateMul(d.K, d.N), d.sc);
  for (size_t i = 0; i < batchRank; ++i) {
    Value *size = b.getInt64(1);
    for (const TensorType *x : {&a, &c}) {
      size_t r = x->rank() - 2, off = batchRank - r;
      if (i >= off) {
        Value *xd = expr(x->dims[i - off]);
        size = b.CreateSelect(b.CreateICmpEQ(xd, b.getInt64(1)), size, xd);
      }
    }
    d.batch[i] = size;
  }
  return d;
}

bool Codegen::matmul(const Operation &op) {
  DType t = fn.type(op.operands[0]).dtype;
  MatmulDims md = matmulDims(op);
  Value *M = md.M, *K = md.K, *N = md.N;
  std::vector<Value *> &batch = md.batch, &sa = md.sa, &sc = md.sc;
  Value *dst = allocateResult(op);
  ValueId left = op.operands[0], right = op.operands[1];
  // An operand the plan reads transposed in place (at most one of them).
  bool transA = transposedOperand[left], transB = transposedOperand[right];
  Value *aBuf = transA ? bufs[producer[left]->operands[0]] : bufs[left];
  Value *bBuf = transB ? bufs[producer[right]->operands[0]] : bufs[right];
  RuntimeFn sgemm = transB   ? TSL_RT_FN(tsl_rt_sgemm_bt)
                    : transA ? TSL_RT_FN(tsl_rt_sgemm_at)
                             : TSL_RT_FN(tsl_rt_sgemm);
  Value *lda = transA ? M : K;
  Value *ldb = transB ? K : N;
  // A transposed A's batch entries are not one tall matrix.
  if (t == DType::F32 && md.rightIs2d && !transA) {
    // A 2-D right operand (a linear layer): the left operand's batch rows
    // are one tall matrix, so one GEMM call packs the weights once.
    Value *rows = b.CreateMul(product(batch), M);
    b.CreateCall(runtime(sgemm), {rows, N, K, aBuf, K, bBuf, ldb, dst, N});
    return true;
  }
  if (t == DType::F32) {
    // f32: the runtime's cache-blocked, vectorized kernel per batch.
    std::vector<Value *> outStrides = contiguousStrides(batch);
    Value *mn = b.CreateMul(M, N);
    llvm::Type *f32 = b.getFloatTy();
    auto gemm = [&](const std::vector<Value *> &bi) {
      Value *pa = b.CreateGEP(f32, aBuf, offset(bi, sa));
      Value *pb = b.CreateGEP(f32, bBuf, offset(bi, sc));
      Value *pc =
          b.CreateGEP(f32, dst, b.CreateMul(offset(bi, outStrides), mn));
      b.CreateCall(runtime(sgemm), {M, N, K, pa, lda, pb, ldb, pc, N});
    };
    // One GEMM per thread at a time; a single one splits itself.
    loops(batch, gemm, b.CreateMul(mn, K));
    return true;
  }
  llvm::Type *acc = computeType(t);
  bool fl = isFloat(t);
  Value *mn = b.CreateMul(M, N);
  Value *accBuf = b.CreateCall(runtime(target.runtime().alloc),
                               {ctxArg, b.CreateMul(mn, b.getInt64(8))});
  failOpIf(b.CreateIsNull(accBuf));
  std::vector<Value *> outStrides = contiguousStrides(batch);
  // Batch entries share the accumulators: one thread.
  serialLoops(batch, [&](const std::vector<Value *> &bi) {
    Value *baseA = offset(bi, sa), *baseC = offset(bi, sc);
    Value *baseO = b.CreateMul(offset(bi, outStrides), mn);
    loops({mn}, [&](const std::vector<Value *> &z) {
      b.CreateStore(fl ? llvm::ConstantFP::get(acc, 0.0) : b.getInt64(0),
                    b.CreateGEP(acc, accBuf, z[0]));
    });
    // i, k, j order: the innermost loop is contiguous in B and C.
    loops({M, K}, [&](const std::vector<Value *> &ik) {
      Value *av =
          load(t, bufs[op.operands[0]],
               b.CreateAdd(baseA, b.CreateAdd(b.CreateMul(ik[0], K), ik[1])));
      loops({N}, [&](const std::vector<Value *> &j) {
        Value *cv =
            load(t, bufs[op.operands[1]],
                 b.CreateAdd(baseC, b.CreateAdd(b.CreateMul(ik[1], N), j[0])));
        Value *slot =
            b.CreateGEP(acc, accBuf, b.CreateAdd(b.CreateMul(ik[0], N), j[0]));
        Value *cur = b.CreateLoad(acc, slot);
        Value *prod = fl ? b.CreateFMul(av, cv) : b.CreateMul(av, cv);
        b.CreateStore(fl ? b.CreateFAdd(cur, prod) : b.CreateAdd(cur, prod),
                      slot);
      });
    });
    loops({mn}, [&](const std::vector<Value *> &z) {
      store(t, dst, b.CreateAdd(baseO, z[0]),
            b.CreateLoad(acc, b.CreateGEP(acc, accBuf, z[0])));
    });
  });
  freeBuffer(accBuf);
  return true;
}

} // namespace backend

namespace {
/// Lowers callee \p k of \p fn into \p m as the internal function its
/// call ops call (a module of its own, linked in: its kernels of equal text
/// merge with the caller's).
Expected<void> linkCallee(const Function &fn, size_t k, llvm::LLVMContext &ctx,
                          const Target &target, const LoweringOptions &options,
                          llvm::Module &m) {
  LoweringOptions o = options;
  o.prefix = options.calleePrefix(k);
  o.opIndexBase =
      options.opIndexBase + static_cast<int32_t>(calleeFailureBase(fn, k));
  std::unique_ptr<backend::Codegen> cg =
      target.makeCodegen(fn.callees[k], ctx, o);
  Expected<std::unique_ptr<llvm::Module>> lowered = cg->run();
  if (!lowered)
    return lowered.error();
  std::unique_ptr<llvm::Module> callee = std::move(*lowered);
  // Only the body is called: its matcher and shape function go.
  for (const std::string &name : {o.matchName(), o.shapesName()})
    if (llvm::Function *f = callee->getFunction(name))
      f->eraseFromParent();
  if (llvm::Linker::linkModules(m, std::move(callee)))
    return makeError(ErrorKind::Internal,
                     "internal error: cannot link callee '" +
                         fn.callees[k].name + "'");
  if (llvm::Function *f = m.getFunction(o.kernelName()))
    f->setLinkage(llvm::GlobalValue::InternalLinkage);
  return {};
}
} // namespace

size_t bufferArrayLength(const Function &fn) {
  size_t scratch = fn.values.size();
  for (const Function &callee : fn.callees)
    scratch = std::max(scratch, bufferArrayLength(callee));
  return fn.values.size() + scratch;
}

Expected<std::unique_ptr<llvm::Module>>
lowerForTarget(const Function &fn, llvm::LLVMContext &ctx, const Target &target,
               std::vector<std::string> &checks, const LoweringOptions &options,
               DeviceKernels *kernels) {
  std::unique_ptr<backend::Codegen> cg = target.makeCodegen(fn, ctx, options);
  Expected<std::unique_ptr<llvm::Module>> lowered = cg->run();
  checks = cg->checks;
  if (kernels)
    cg->takeKernels(*kernels);
  if (!lowered)
    return lowered.error();
  std::unique_ptr<llvm::Module> m = std::move(*lowered);
  for (size_t k = 0; k < fn.callees.size(); ++k)
    if (Expected<void> linked = linkCallee(fn, k, ctx, target, options, *m);
        !linked)
      return linked.error();
  // Every frame of host code touches each page it allocates in order, so
  // that an overflow hits the guard page instead of memory below the
  // stack (frames are bounded, see bufferArrayLength, but a caller's stack
  // may be small).
  for (llvm::Function &f : *m)
    if (!f.isDeclaration())
      f.addFnAttr("probe-stack", "inline-asm");
  return m;
}

} // namespace tsl
