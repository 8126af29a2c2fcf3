// Device mode: what cooperating threads share. Device code reaches thread
// indices, barriers, warp shuffles and shared memory through the primitives
// of runtime/DevicePrimitives.def, declared here and defined per target: by
// NVVM intrinsics when compiling to PTX (GpuKernel.cpp), by the emulator on
// the host (runtime/GpuEmulator.cpp).
#include "backend/common/Codegen.h"

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

Value *Codegen::gpuIndex(const char *name) {
  auto *type = llvm::FunctionType::get(i32, false);
  return b.CreateZExt(b.CreateCall(primitive(*mod, name, type, false)), i64);
}

void Codegen::gpuBarrier() {
  auto *type = llvm::FunctionType::get(b.getVoidTy(), false);
  b.CreateCall(primitive(*mod, "tsl_gpu_barrier", type, true));
}

Value *Codegen::gpuShared() {
  auto *type = llvm::FunctionType::get(ptr, false);
  return b.CreateCall(primitive(*mod, "tsl_gpu_shared", type, false));
}

Value *Codegen::gpuShuffleXor(Value *v, int32_t laneMask) {
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

Value *
Codegen::blockReduce(Value *partial, Value *identity,
                     const std::function<Value *(Value *, Value *)> &combine,
                     int32_t sharedOffset) {
  llvm::Type *t = partial->getType();
  // Within each warp: a butterfly, after which every lane has the warp's
  // combination.
  auto warpReduce = [&](Value *v) {
    for (int32_t mask = 16; mask >= 1; mask /= 2)
      v = combine(v, gpuShuffleXor(v, mask));
    return v;
  };
  Value *v = warpReduce(partial);
  Value *tid = gpuThreadIdx();
  Value *lane = b.CreateAnd(tid, b.getInt64(31));
  Value *warp = b.CreateLShr(tid, b.getInt64(5));
  Value *warps = b.CreateLShr(gpuBlockDim(), b.getInt64(5));
  Value *shared = b.CreateConstGEP1_64(b.getInt8Ty(), gpuShared(),
                                       static_cast<uint64_t>(sharedOffset));
  // Lane 0 of each warp leaves its result in slot `warp`; after the
  // barrier every warp combines the slots the same way, so every thread
  // gets the same value without a second round through shared memory.
  llvm::BasicBlock *write = llvm::BasicBlock::Create(ctx, "warpout", kernel);
  llvm::BasicBlock *joined = llvm::BasicBlock::Create(ctx, "warpsdone", kernel);
  b.CreateCondBr(b.CreateICmpEQ(lane, b.getInt64(0)), write, joined);
  b.SetInsertPoint(write);
  b.CreateStore(v, b.CreateGEP(t, shared, warp));
  b.CreateBr(joined);
  b.SetInsertPoint(joined);
  gpuBarrier();
  // Lane l reads slot l; lanes past the warp count bring the identity.
  Value *inRange = b.CreateICmpULT(lane, warps);
  Value *slot = b.CreateSelect(inRange, lane, b.getInt64(0));
  Value *mine = b.CreateSelect(
      inRange, b.CreateLoad(t, b.CreateGEP(t, shared, slot)), identity);
  Value *total = warpReduce(mine);
  // Everyone read the slots before anyone writes them again.
  gpuBarrier();
  return total;
}

} // namespace tsl::backend
