// Device mode: what cooperating threads share. Device code reaches thread
// indices, barriers, warp shuffles and shared memory through the primitives
// of runtime/DevicePrimitives.def, declared here and defined per target: by
// NVVM intrinsics when compiling to PTX (GpuKernel.cpp), by the emulator on
// the host (runtime/GpuEmulator.cpp).
#include "backend/nvptx/DeviceCodegen.h"

namespace tsl::backend {

namespace {

/// A primitive's declaration in \p m. Thread indices and the shared-memory
/// address are the same for every call of a thread (readnone); barriers and
/// shuffles are convergent: no pass may make them depend on more control
/// flow than the source did.
llvm::FunctionCallee primitive(llvm::Module &m, const char *name,
                               llvm::FunctionType *type, bool convergent) {
  llvm::FunctionCallee callee = m.getOrInsertFunction(name, type);
  if (auto *f = llvm::dyn_cast<llvm::Function>(callee.getCallee())) {
    f->addFnAttr(llvm::Attribute::NoUnwind);
    if (convergent)
      f->addFnAttr(llvm::Attribute::Convergent);
    else
      f->setDoesNotAccessMemory();
  }
  return callee;
}

} // namespace

void DeviceContext::loopWhile(Value *from,
                              const std::function<Value *(Value *)> &cond,
                              const std::function<Value *(Value *)> &next,
                              const std::function<void(Value *)> &body) {
  llvm::BasicBlock *pre = b.GetInsertBlock();
  auto *header = llvm::BasicBlock::Create(ctx, "stride", kernel);
  auto *loop = llvm::BasicBlock::Create(ctx, "stridebody", kernel);
  auto *exit = llvm::BasicBlock::Create(ctx, "stridedone", kernel);
  b.CreateBr(header);
  b.SetInsertPoint(header);
  llvm::PHINode *i = b.CreatePHI(from->getType(), 2);
  i->addIncoming(from, pre);
  b.CreateCondBr(cond(i), loop, exit);
  b.SetInsertPoint(loop);
  body(i);
  i->addIncoming(next(i), b.GetInsertBlock());
  b.CreateBr(header);
  b.SetInsertPoint(exit);
}

void DeviceContext::stridedLoop(Value *from, Value *to, Value *step,
                                const std::function<void(Value *)> &body) {
  loopWhile(
      from, [&](Value *i) { return b.CreateICmpSLT(i, to); },
      [&](Value *i) { return b.CreateAdd(i, step); }, body);
}

void DeviceContext::blockStrideLoop(Value *count,
                                    const std::function<void(Value *)> &body) {
  stridedLoop(gpuBlockIdx(), count, gpuGridDim(), body);
}

void DeviceContext::onThreadZero(const std::function<void()> &body) {
  ifThen(b.CreateICmpEQ(gpuThreadIdx(), b.getInt64(0)), body);
}

Value *DeviceContext::gpuIndex(const char *name) {
  auto *type = llvm::FunctionType::get(i32, false);
  return b.CreateZExt(b.CreateCall(primitive(*mod, name, type, false)), i64);
}

void DeviceContext::gpuBarrier() {
  auto *type = llvm::FunctionType::get(b.getVoidTy(), false);
  b.CreateCall(primitive(*mod, "tsl_gpu_barrier", type, true));
}

Value *DeviceContext::gpuShared() {
  auto *type = llvm::FunctionType::get(ptr, false);
  return b.CreateCall(primitive(*mod, "tsl_gpu_shared", type, false));
}

void DeviceContext::gpuMma16816(int32_t kind, Value *a, Value *bFrag,
                                Value *acc) {
  auto *type =
      llvm::FunctionType::get(b.getVoidTy(), {i32, ptr, ptr, ptr}, false);
  b.CreateCall(primitive(*mod, "tsl_gpu_mma_16816", type, true),
               {b.getInt32(kind), a, bFrag, acc});
}

Value *DeviceContext::gpuShuffleXor(Value *v, int32_t laneMask) {
  auto *type = llvm::FunctionType::get(i32, {i32, i32}, false);
  llvm::FunctionCallee shfl = primitive(*mod, "tsl_gpu_shfl_xor", type, true);
  llvm::Type *t = v->getType();
  unsigned bits = t->getPrimitiveSizeInBits();
  Value *asInt = t->isIntegerTy() ? v : b.CreateBitCast(v, b.getIntNTy(bits));
  Value *out;
  if (bits == 64) { // two 32-bit halves
    Value *lo =
        b.CreateCall(shfl, {b.CreateTrunc(asInt, i32), b.getInt32(laneMask)});
    Value *hi = b.CreateCall(shfl, {b.CreateTrunc(b.CreateLShr(asInt, 32), i32),
                                    b.getInt32(laneMask)});
    out = b.CreateOr(b.CreateZExt(lo, i64),
                     b.CreateShl(b.CreateZExt(hi, i64), 32));
  } else {
    Value *wide = bits == 32 ? asInt : b.CreateZExt(asInt, i32);
    out = b.CreateCall(shfl, {wide, b.getInt32(laneMask)});
    if (bits != 32)
      out = b.CreateTrunc(out, b.getIntNTy(bits));
  }
  return t->isIntegerTy() ? out : b.CreateBitCast(out, t);
}

Value *DeviceContext::warpReduce(
    Value *partial, const std::function<Value *(Value *, Value *)> &combine) {
  // A butterfly: after step `mask` every lane holds the combination of the
  // 2 * mask lanes around it, so no broadcast is needed at the end.
  Value *v = partial;
  for (int32_t mask = 16; mask >= 1; mask /= 2)
    v = combine(v, gpuShuffleXor(v, mask));
  return v;
}

Value *DeviceContext::blockReduce(
    Value *partial, Value *identity,
    const std::function<Value *(Value *, Value *)> &combine,
    int32_t sharedOffset) {
  llvm::Type *t = partial->getType();
  Value *v = warpReduce(partial, combine);
  Value *tid = gpuThreadIdx();
  Value *lane = b.CreateAnd(tid, b.getInt64(31));
  Value *warp = b.CreateLShr(tid, b.getInt64(5));
  Value *warps = b.CreateLShr(gpuBlockDim(), b.getInt64(5));
  Value *shared = b.CreateConstGEP1_64(b.getInt8Ty(), gpuShared(),
                                       static_cast<uint64_t>(sharedOffset));
  // Lane 0 of each warp leaves its result in slot `warp`; after the
  // barrier every warp combines the slots the same way, so every thread
  // gets the same value without a second round through shared memory.
  ifThen(b.CreateICmpEQ(lane, b.getInt64(0)),
         [&] { b.CreateStore(v, b.CreateGEP(t, shared, warp)); });
  gpuBarrier();
  // Lane l reads slot l; lanes past the warp count bring the identity.
  Value *inRange = b.CreateICmpULT(lane, warps);
  Value *slot = b.CreateSelect(inRange, lane, b.getInt64(0));
  Value *mine = b.CreateSelect(
      inRange, b.CreateLoad(t, b.CreateGEP(t, shared, slot)), identity);
  Value *total = warpReduce(mine, combine);
  // Everyone read the slots before anyone writes them again.
  gpuBarrier();
  return total;
}

std::pair<Value *, Value *> DeviceContext::blockArgReduce(
    Value *value, Value *index,
    const std::function<Value *(Value *, Value *, Value *, Value *)> &first) {
  llvm::Type *vt = value->getType();
  auto pick = [&](Value *&v, Value *&i, Value *ov, Value *oi) {
    Value *keep = first(v, i, ov, oi);
    v = b.CreateSelect(keep, v, ov);
    i = b.CreateSelect(keep, i, oi);
  };
  auto warpPick = [&](Value *&v, Value *&i) {
    for (int32_t mask = 16; mask >= 1; mask /= 2)
      pick(v, i, gpuShuffleXor(v, mask), gpuShuffleXor(i, mask));
  };
  Value *v = value, *i = index;
  warpPick(v, i);
  Value *tid = gpuThreadIdx();
  Value *lane = b.CreateAnd(tid, b.getInt64(31));
  Value *warp = b.CreateLShr(tid, b.getInt64(5));
  Value *warps = b.CreateLShr(gpuBlockDim(), b.getInt64(5));
  // 32 values (8-byte slots), then 32 indices.
  Value *values = gpuShared();
  Value *indices = b.CreateConstGEP1_64(b.getInt8Ty(), values, 32 * 8);
  ifThen(b.CreateICmpEQ(lane, b.getInt64(0)), [&] {
    b.CreateStore(v, b.CreateGEP(i64, values, warp)); // 8-byte slots
    b.CreateStore(i, b.CreateGEP(i64, indices, warp));
  });
  gpuBarrier();
  // Lanes past the warp count repeat slot 0: a duplicate changes no pick.
  Value *slot =
      b.CreateSelect(b.CreateICmpULT(lane, warps), lane, b.getInt64(0));
  Value *sv = b.CreateLoad(vt, b.CreateGEP(i64, values, slot));
  Value *si = b.CreateLoad(i64, b.CreateGEP(i64, indices, slot));
  warpPick(sv, si);
  gpuBarrier();
  return {sv, si};
}

Value *DeviceContext::gpuShuffleIdx(Value *v, Value *srcLane) {
  auto *type = llvm::FunctionType::get(i32, {i32, i32}, false);
  llvm::FunctionCallee shfl = primitive(*mod, "tsl_gpu_shfl_idx", type, true);
  Value *lane = b.CreateTrunc(srcLane, i32);
  llvm::Type *t = v->getType();
  if (t->getPrimitiveSizeInBits() == 32) // one shuffle
    return b.CreateBitCast(b.CreateCall(shfl, {b.CreateBitCast(v, i32), lane}),
                           t);
  if (t != i64) // f64: as its bits
    return b.CreateBitCast(gpuShuffleIdx(b.CreateBitCast(v, i64), srcLane), t);
  Value *lo = b.CreateCall(shfl, {b.CreateTrunc(v, i32), lane});
  Value *hi =
      b.CreateCall(shfl, {b.CreateTrunc(b.CreateLShr(v, 32), i32), lane});
  return b.CreateOr(b.CreateZExt(lo, i64),
                    b.CreateShl(b.CreateZExt(hi, i64), 32));
}

std::pair<Value *, Value *>
DeviceContext::blockExclusiveScan(Value *count, int32_t sharedOffset) {
  Value *tid = gpuThreadIdx();
  Value *lane = b.CreateAnd(tid, b.getInt64(31));
  Value *warp = b.CreateLShr(tid, b.getInt64(5));
  Value *warps = b.CreateLShr(gpuBlockDim(), b.getInt64(5));
  // Inclusive scan within the warp (Hillis-Steele over shuffles).
  Value *x = count;
  for (int64_t d = 1; d < 32; d *= 2) {
    Value *from = b.CreateSelect(b.CreateICmpUGE(lane, b.getInt64(d)),
                                 b.CreateSub(lane, b.getInt64(d)), lane);
    Value *y = gpuShuffleIdx(x, from);
    x = b.CreateAdd(x, b.CreateSelect(b.CreateICmpUGE(lane, b.getInt64(d)), y,
                                      b.getInt64(0)));
  }
  Value *shared = b.CreateConstGEP1_64(b.getInt8Ty(), gpuShared(),
                                       static_cast<uint64_t>(sharedOffset));
  // The last lane of each warp holds the warp's total.
  ifThen(b.CreateICmpEQ(lane, b.getInt64(31)),
         [&] { b.CreateStore(x, b.CreateGEP(i64, shared, warp)); });
  gpuBarrier();
  // Each thread adds the totals of the warps before its own (at most 31
  // loads from shared memory) and sums all of them for the block.
  Value *before = entryAlloca(i64), *all = entryAlloca(i64);
  b.CreateStore(b.getInt64(0), before);
  b.CreateStore(b.getInt64(0), all);
  ++loopNesting; // sequential, per thread
  loops({warps}, [&](const std::vector<Value *> &w) {
    Value *t = b.CreateLoad(i64, b.CreateGEP(i64, shared, w[0]));
    b.CreateStore(b.CreateAdd(b.CreateLoad(i64, all), t), all);
    Value *earlier = b.CreateICmpULT(w[0], warp);
    b.CreateStore(b.CreateAdd(b.CreateLoad(i64, before),
                              b.CreateSelect(earlier, t, b.getInt64(0))),
                  before);
  });
  --loopNesting;
  Value *exclusive =
      b.CreateAdd(b.CreateLoad(i64, before), b.CreateSub(x, count));
  Value *total = b.CreateLoad(i64, all);
  gpuBarrier(); // the slots may be written again
  return {exclusive, total};
}

} // namespace tsl::backend
