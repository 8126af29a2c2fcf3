// Device mode of the loop-nest lowering (GPU variants, backend/nvptx): each
// op becomes a device function whose outermost loops are grid-stride loops
// over a flat index, so any grid computes the whole op; the host function
// allocates the op's results in device memory and launches it. Ops whose
// CPU lowering has loops that depend on each other (accumulate, then
// finish) get single-loop forms here with one thread per result element
// (reductions over one run of axes are block-tiled: CodegenDeviceReduce.cpp).
#include "backend/common/RuntimeCalls.h"
#include "backend/nvptx/DeviceCodegen.h"

#include <llvm/IR/IntrinsicInst.h>

#include <algorithm>
#include <string>

namespace tsl::backend {

namespace {

/// Threads per block no launch exceeds (every GPU we target).
constexpr uint64_t kMaxBlockThreads = 1024;

/// An upper bound of the (non-negative) host value \p v: exact for
/// constants and the casts, selects, minima, maxima, products and shifts
/// that launch shapes are computed with; UINT64_MAX when unknown.
uint64_t upperBound(Value *v, int depth = 0) {
  constexpr uint64_t unknown = UINT64_MAX;
  if (auto *c = llvm::dyn_cast<llvm::ConstantInt>(v))
    return c->isNegative() ? 0 : c->getZExtValue();
  if (depth > 16)
    return unknown;
  auto bound = [&](Value *x) { return upperBound(x, depth + 1); };
  if (auto *cast = llvm::dyn_cast<llvm::CastInst>(v))
    return bound(cast->getOperand(0));
  if (auto *sel = llvm::dyn_cast<llvm::SelectInst>(v))
    return std::max(bound(sel->getTrueValue()), bound(sel->getFalseValue()));
  if (auto *call = llvm::dyn_cast<llvm::IntrinsicInst>(v)) {
    switch (call->getIntrinsicID()) {
    case llvm::Intrinsic::smin:
    case llvm::Intrinsic::umin:
      return std::min(bound(call->getArgOperand(0)),
                      bound(call->getArgOperand(1)));
    case llvm::Intrinsic::smax:
    case llvm::Intrinsic::umax:
      return std::max(bound(call->getArgOperand(0)),
                      bound(call->getArgOperand(1)));
    default:
      return unknown;
    }
  }
  if (auto *op = llvm::dyn_cast<llvm::BinaryOperator>(v)) {
    uint64_t x = bound(op->getOperand(0)), y = bound(op->getOperand(1));
    switch (op->getOpcode()) {
    case llvm::Instruction::Mul:
      return x != 0 && y > unknown / x ? unknown : x * y;
    case llvm::Instruction::Shl:
      return y < 64 && x <= (unknown >> y) ? x << y : unknown;
    case llvm::Instruction::LShr:
    case llvm::Instruction::UDiv:
    case llvm::Instruction::SDiv:
      return x;
    default:
      return unknown;
    }
  }
  return unknown;
}

} // namespace

void DeviceContext::gridStrideLoops(const std::vector<Value *> &extents,
                                    const LoopBody &body) {
  stridedLoop(deviceThread, product(extents), deviceThreads, [&](Value *i) {
    // The flat index as one index per extent (row-major).
    std::vector<Value *> idx(extents.size());
    Value *rest = i;
    for (size_t d = extents.size(); d-- > 0;) {
      if (d == 0) {
        idx[d] = rest;
        break;
      }
      idx[d] = b.CreateURem(rest, extents[d]);
      rest = b.CreateUDiv(rest, extents[d]);
    }
    ++loopNesting;
    body(idx);
    --loopNesting;
  });
}

bool DeviceCodegen::launchUpdateInPlace(const Operation &op) {
  ValueId x = op.operands[0], v = op.operands[1], r = op.results[0];
  bufs[r] = bufs[x]; // the host's alias; the kernel writes the block only
  b.CreateStore(bufs[r], bufferSlot(r));
  std::vector<ValueId> used{r, v}, slots;
  int32_t k = emitDeviceKernel(
      used, [&] { return updateSliceAt(op, false); }, slots);
  if (k < 0)
    return false;
  emitLaunch(k, slots, gridFor(product(dims(fn.type(v)))));
  return true;
}

/// Words of the argument block before the symbols: the status pointer.
static constexpr size_t kArgsHeader = 1;
/// Kernel parameters are at most 4 KiB on every GPU we target.
static constexpr size_t kMaxArgWords = 4096 / 8;

int32_t DeviceContext::emitDeviceKernel(const std::vector<ValueId> &used,
                                        const std::function<bool()> &body,
                                        std::vector<ValueId> &slots,
                                        size_t extras) {
  int32_t number = numKernels++;
  auto *type = llvm::FunctionType::get(b.getVoidTy(), {ptr}, false);
  auto *device = llvm::Function::Create(type, llvm::Function::ExternalLinkage,
                                        "tsl_dev_" + std::to_string(number),
                                        *deviceModule);
  device->addParamAttr(0, llvm::Attribute::NoAlias);
  // Runtime declarations and globals go to the device module meanwhile.
  std::swap(mod, deviceModule);
  EmissionState host{kernel, b.GetInsertBlock(), buffersArg, symsArg, ctxArg,
                     bufs};
  kernel = device;
  sizesChecked.clear();
  b.SetInsertPoint(llvm::BasicBlock::Create(ctx, "entry", device));
  // args: [status, extras..., syms..., buffers by slot...] (KernelAbi.h).
  size_t numSyms = fn.symbols.size() + 1;
  deviceArgs = device->getArg(0);
  deviceStatus = b.CreateLoad(ptr, deviceArgs);
  symsArg = b.CreateConstGEP1_64(i64, deviceArgs, kArgsHeader + extras);
  buffersArg =
      b.CreateConstGEP1_64(i64, deviceArgs, kArgsHeader + extras + numSyms);
  ctxArg = nullptr; // device functions have no context
  std::map<ValueId, unsigned> slotOf;
  kernelSlots = &slotOf;
  std::fill(bufs.begin(), bufs.end(), nullptr);
  for (ValueId v : used)
    if (host.bufs[v] && !bufs[v])
      bufs[v] = loadBuffer(v);
  deviceThread =
      b.CreateAdd(b.CreateMul(gpuBlockIdx(), gpuBlockDim()), gpuThreadIdx());
  deviceThreads = b.CreateMul(gpuGridDim(), gpuBlockDim());
  inDevice = preallocated = true;
  bool ok = body();
  if (ok)
    b.CreateRetVoid();
  inDevice = preallocated = cooperative = false;
  kernelSlots = nullptr;
  deviceArgs = deviceStatus = nullptr;
  std::swap(mod, deviceModule);
  leaveFunction(std::move(host));
  slots.assign(slotOf.size(), 0);
  for (auto [v, s] : slotOf)
    slots[s] = v;
  size_t words = kArgsHeader + extras + numSyms + slots.size();
  if (ok && words > kMaxArgWords)
    ok = unsupported("a GPU kernel with " + std::to_string(words) +
                     " sizes and buffers (at most " +
                     std::to_string(kMaxArgWords) + ")");
  if (!ok)
    return -1;
  // The kernel entry (NVPTX) takes the block by value: its size in words.
  device->addFnAttr("tsl-arg-words", std::to_string(words));
  return number;
}

bool DeviceContext::deviceCopy(Value *dst, Value *src, const TensorType &t) {
  std::vector<ValueId> slots;
  int32_t k = emitDeviceKernel(
      {},
      [&] {
        Value *from = deviceExtra(0), *to = deviceExtra(1);
        gridStrideLoops({product(dims(t))}, [&](const std::vector<Value *> &i) {
          store(t.dtype, to, i[0], load(t.dtype, from, i[0]));
        });
        return true;
      },
      slots, 2);
  if (k < 0)
    return false;
  emitLaunch(k, slots, gridFor(product(dims(t))), {src, dst});
  return true;
}

Value *DeviceContext::deviceExtra(size_t i) {
  return b.CreateLoad(ptr,
                      b.CreateConstGEP1_64(i64, deviceArgs, kArgsHeader + i));
}

DeviceContext::DeviceGrid DeviceContext::gridFor(Value *total) {
  Value *t = b.getInt64(kDeviceThreads);
  return {b.CreateSDiv(b.CreateAdd(total, b.getInt64(kDeviceThreads - 1)), t),
          b.getInt32(kDeviceThreads)};
}

void DeviceContext::emitLaunch(int32_t number,
                               const std::vector<ValueId> &slots,
                               const DeviceGrid &grid,
                               const std::vector<Value *> &extras) {
  size_t numSyms = fn.symbols.size() + 1;
  size_t words = kArgsHeader + extras.size() + numSyms + slots.size();
  Value *args = entryAlloca(llvm::ArrayType::get(i64, words));
  for (size_t i = 0; i < extras.size(); ++i)
    b.CreateStore(extras[i], b.CreateConstGEP1_64(i64, args, kArgsHeader + i));
  Value *symsAt = b.CreateConstGEP1_64(i64, args, kArgsHeader + extras.size());
  b.CreateMemCpy(symsAt, llvm::MaybeAlign(8), symsArg, llvm::MaybeAlign(8),
                 numSyms * 8);
  for (size_t s = 0; s < slots.size(); ++s)
    b.CreateStore(bufs[slots[s]],
                  b.CreateConstGEP1_64(
                      i64, args, kArgsHeader + extras.size() + numSyms + s));
  Value *status = b.CreateCall(runtime(TSL_RT_FN(tsl_rt_dev_launch)),
                               {ctxArg, b.getInt32(number), grid.blocks,
                                grid.threads, b.getInt32(grid.sharedBytes),
                                args, b.getInt64(static_cast<int64_t>(words))});
  failIf(b.CreateICmpNE(status, b.getInt32(0)), [] {});
  // The kernel's thread bound (PTX .maxntid, GpuKernel.cpp): the most
  // threads any of its launches has per block, so ptxas keeps registers x
  // threads within the SM's register file.
  llvm::Function *device =
      deviceModule->getFunction("tsl_dev_" + std::to_string(number));
  uint64_t bound = std::min(upperBound(grid.threads), kMaxBlockThreads);
  uint64_t before = 0;
  if (device->hasFnAttribute("tsl-max-threads"))
    device->getFnAttribute("tsl-max-threads")
        .getValueAsString()
        .getAsInteger(10, before);
  device->addFnAttr("tsl-max-threads", std::to_string(std::max(before, bound)));
}

void DeviceContext::checkDeviceStatus() {
  if (!deviceMayFail)
    return;
  Value *status = b.CreateCall(runtime(TSL_RT_FN(tsl_rt_dev_check)), {ctxArg});
  // 1 + k: the kernel stored message k (1-based) with its op.
  for (size_t k = 0; k < deviceMessages.size(); ++k)
    failIf(b.CreateICmpEQ(status, b.getInt32(static_cast<int32_t>(k + 2))),
           [&] {
             b.CreateCall(runtime(TSL_RT_FN(tsl_rt_dev_error)),
                          {ctxArg, messageText(deviceMessages[k])});
           });
  failIf(b.CreateICmpNE(status, b.getInt32(0)), [] {});
}

void DeviceContext::failIf(Value *failed, const std::function<void()> &record,
                           const std::vector<Value *> &values) {
  if (!inDevice)
    return Emitter::failIf(failed, record, values);
  failBranch(failed, [&](llvm::BasicBlock *ok) { kernelFailure(ok, values); });
}

void DeviceContext::failMessageIf(Value *failed, const std::string &message,
                                  const std::vector<Value *> &values) {
  if (!inDevice)
    return Emitter::failMessageIf(failed, message, values);
  kernelFailMessageIf(failed, message, values);
}

void DeviceContext::kernelFailure(llvm::BasicBlock *ok,
                                  const std::vector<Value *> &values) {
  // No context on the device: 1 + the op index in the call's status word,
  // which the host checks where it waits (checkDeviceStatus); the high
  // half says which message (deviceMessage, set by failMessageIf). The
  // first failing thread wins, so that the values stored after the word
  // belong to the message it names.
  Value *won = b.CreateExtractValue(
      b.CreateAtomicCmpXchg(deviceStatus, b.getInt64(0),
                            b.getInt64((opIndex + 1) | (deviceMessage << 32)),
                            llvm::MaybeAlign(8),
                            llvm::AtomicOrdering::Monotonic,
                            llvm::AtomicOrdering::Monotonic),
      1);
  if (!values.empty()) {
    auto *record = llvm::BasicBlock::Create(ctx, "record", kernel);
    auto *recorded = llvm::BasicBlock::Create(ctx, "recorded", kernel);
    b.CreateCondBr(won, record, recorded);
    b.SetInsertPoint(record);
    for (size_t i = 0; i < values.size() && i < 2; ++i)
      b.CreateStore(b.CreateSExtOrTrunc(values[i], i64),
                    b.CreateConstGEP1_64(i64, deviceStatus, i + 1));
    b.CreateBr(recorded);
    b.SetInsertPoint(recorded);
  }
  deviceMayFail = true;
  if (cooperative)
    b.CreateBr(ok); // the call fails anyway; keep the barriers reachable
  else
    b.CreateRetVoid();
}

void DeviceContext::kernelFailMessageIf(Value *failed,
                                        const std::string &message,
                                        const std::vector<Value *> &values) {
  deviceMessages.push_back(message);
  deviceMessage = static_cast<int64_t>(deviceMessages.size());
  failIf(
      failed, [] {}, values);
  deviceMessage = 0;
}

Value *DeviceContext::readToHost(ValueId v) {
  llvm::Type *st = storageType(fn.type(v).dtype);
  Value *slot = entryAlloca(st);
  Value *status = b.CreateCall(
      runtime(TSL_RT_FN(tsl_rt_dev_read)),
      {ctxArg, slot, bufs[v],
       b.getInt64(static_cast<int64_t>(dtypeSize(fn.type(v).dtype)))});
  failIf(b.CreateICmpNE(status, b.getInt32(0)), [] {});
  checkDeviceStatus(); // a failed kernel explains a bad value
  return slot;
}

Value *DeviceContext::deviceWord() { return deviceScratch(b.getInt64(8)); }

Value *DeviceContext::deviceScratch(Value *bytes) {
  Value *p = b.CreateCall(runtime(target.runtime().alloc), {ctxArg, bytes});
  failOpIf(b.CreateIsNull(p));
  return p;
}

void DeviceContext::readSymbol(const std::string &name, Value *word) {
  Value *status = b.CreateCall(runtime(TSL_RT_FN(tsl_rt_dev_read)),
                               {ctxArg, symSlot(name), word, b.getInt64(8)});
  failIf(b.CreateICmpNE(status, b.getInt32(0)), [] {});
  checkDeviceStatus();
}

bool DeviceCodegen::deviceMatmul(const Operation &op) {
  DType t = fn.type(op.operands[0]).dtype;
  MatmulDims md = matmulDims(op);
  Value *dst = allocateResult(op);
  llvm::Type *acc = computeType(t);
  bool fl = isFloat(t);
  std::vector<Value *> extents = md.batch;
  extents.push_back(md.M);
  extents.push_back(md.N);
  std::vector<Value *> outStrides = contiguousStrides(extents);
  Value *slot = entryAlloca(acc);
  size_t nb = md.batch.size();
  ValueId left = op.operands[0], right = op.operands[1];
  // One thread per result element: the dot product of a row and a column.
  loops(extents, [&](const std::vector<Value *> &idx) {
    std::vector<Value *> bi(idx.begin(), idx.begin() + nb);
    Value *i = idx[nb], *j = idx[nb + 1];
    Value *rowA = b.CreateAdd(offset(bi, md.sa), b.CreateMul(i, md.K));
    Value *colB = b.CreateAdd(offset(bi, md.sc), j);
    b.CreateStore(fl ? llvm::ConstantFP::get(acc, 0.0)
                     : static_cast<Value *>(b.getInt64(0)),
                  slot);
    loops({md.K}, [&](const std::vector<Value *> &k) {
      Value *av = load(t, bufs[left], b.CreateAdd(rowA, k[0]));
      Value *bv =
          load(t, bufs[right], b.CreateAdd(colB, b.CreateMul(k[0], md.N)));
      Value *cur = b.CreateLoad(acc, slot);
      b.CreateStore(fl ? b.CreateFAdd(cur, b.CreateFMul(av, bv))
                       : b.CreateAdd(cur, b.CreateMul(av, bv)),
                    slot);
    });
    store(t, dst, offset(idx, outStrides), b.CreateLoad(acc, slot));
  });
  return true;
}

bool DeviceCodegen::devicePad(const Operation &op) {
  const TensorType &in = fn.type(op.operands[0]);
  const TensorType &out = fn.type(op.results[0]);
  DType t = out.dtype;
  std::vector<Value *> inShape = dims(in), outShape = dims(out);
  std::vector<Value *> own = contiguousStrides(inShape);
  std::vector<Value *> outStrides = contiguousStrides(outShape);
  Value *dst = allocateResult(op);
  Number value = op.numAttr("value");
  const auto &lo = op.exprsAttr("lo");
  std::vector<Value *> los;
  for (size_t i = 0; i < in.rank(); ++i)
    los.push_back(expr(lo[i]));
  Value *fill = value.isInt
                    ? convert(b.getInt64(value.i), DType::I64, t)
                    : convert(fconst(DType::F64, value.f), DType::F64, t);
  loops(outShape, [&](const std::vector<Value *> &idx) {
    Value *inside;
    Value *off = blockOffset(idx, los, inShape, own, inside);
    Value *v = loadWhere(inside, t, bufs[op.operands[0]], off, fill);
    store(t, dst, offset(idx, outStrides), v);
  });
  return true;
}

bool DeviceCodegen::vectorizableOnDevice(const Operation &op) const {
  if (!isElementwise(op.code) || op.results.size() != 1)
    return false;
  const TensorType &out = fn.type(op.results[0]);
  if (out.rank() == 0)
    return false;
  std::vector<ValueId> read;
  for (ValueId o : op.operands)
    leaves(o, read);
  // Every stored operand is read at the result's own flat index.
  for (ValueId l : read)
    if (fn.type(l).dims != out.dims)
      return false;
  return true;
}

bool DeviceCodegen::deviceVectorElementwise(const Operation &op) {
  const TensorType &out = fn.type(op.results[0]);
  Value *total = product(dims(out));
  Value *dst = allocateResult(op);
  std::vector<ValueId> read;
  for (ValueId o : op.operands)
    leaves(o, read);
  // All operands are contiguous with the result's shape: one flat index.
  std::map<ValueId, std::vector<Value *>> strides;
  for (ValueId l : read)
    strides[l] = {b.getInt64(1)};
  std::vector<Value *> pointers{dst};
  for (ValueId l : read)
    pointers.push_back(bufs[l]);
  bool ok = true;
  auto result = [&](Value *i) -> Value * {
    std::vector<Value *> vals;
    for (ValueId v : op.operands)
      vals.push_back(valueAt(v, {i}, strides));
    Value *r = compute(op, vals);
    if (!r)
      ok = unsupported(opInfo(op.code).name);
    return r;
  };
  auto element = [&](Value *i) {
    if (Value *r = result(i))
      store(out.dtype, dst, i, r);
  };
  // Four consecutive elements per thread and step: with every buffer
  // 16-byte aligned, each thread's loads and stores merge into 128-bit
  // ones (for f32) and a warp reads whole lines; otherwise (a view at an
  // odd offset) one element per step.
  Value *aligned = b.getTrue();
  for (Value *p : pointers)
    aligned = b.CreateAnd(
        aligned,
        b.CreateICmpEQ(b.CreateAnd(b.CreatePtrToInt(p, i64), b.getInt64(15)),
                       b.getInt64(0)));
  auto *vector = llvm::BasicBlock::Create(ctx, "aligned", kernel);
  auto *scalar = llvm::BasicBlock::Create(ctx, "unaligned", kernel);
  auto *done = llvm::BasicBlock::Create(ctx, "ewdone", kernel);
  b.CreateCondBr(aligned, vector, scalar);
  b.SetInsertPoint(vector);
  const llvm::DataLayout &layout = mod->getDataLayout();
  for (Value *p : pointers)
    b.CreateAlignmentAssumption(layout, p, 16);
  Value *quads = b.CreateSDiv(total, b.getInt64(4));
  stridedLoop(deviceThread, quads, deviceThreads, [&](Value *q) {
    // All loads before any store: the result may alias nothing, but LLVM
    // cannot tell, and it merges only accesses it may reorder.
    Value *r[4];
    for (int64_t k = 0; k < 4 && ok; ++k)
      r[k] = result(b.CreateAdd(b.CreateMul(q, b.getInt64(4)), b.getInt64(k)));
    for (int64_t k = 0; k < 4 && ok; ++k)
      store(out.dtype, dst,
            b.CreateAdd(b.CreateMul(q, b.getInt64(4)), b.getInt64(k)), r[k]);
  });
  stridedLoop(b.CreateAdd(b.CreateMul(quads, b.getInt64(4)), deviceThread),
              total, deviceThreads, element);
  b.CreateBr(done);
  b.SetInsertPoint(scalar);
  stridedLoop(deviceThread, total, deviceThreads, element);
  b.CreateBr(done);
  b.SetInsertPoint(done);
  return ok;
}

} // namespace tsl::backend
