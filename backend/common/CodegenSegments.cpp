// Host code in segments: the entry point of a large outlined function calls
// one internal function per run of kSegmentOps ops instead of holding every
// kernel call itself. Unoptimized host code (ObjectCompiler's
// kLargeHostCode) gives each value that lives across a block or a call a
// stack slot of its own, so one function of 6,000 kernel calls had a 96 KB
// frame; a segment's frame is bounded by its ops, whatever the function's
// size. Everything a segment reads comes from the buffer and symbol arrays
// (reloadBuffers), so segments share no SSA values: a buffer pointer of
// another function that escaped a reload fails the module's verification.
#include "backend/common/Codegen.h"

namespace tsl::backend {

void Codegen::placeInSegment(size_t i) {
  if (!segmenting)
    return;
  size_t depth = openLoops.size();
  if (fn.ops[i].code == OpCode::EndLoop) {
    // A segment opened inside this loop's body ends with the body; the
    // end_loop belongs to the segment that began the loop.
    if (!segments.empty() && segments.back().depth == depth)
      closeSegment();
    return;
  }
  if (segments.empty() || segments.back().ops >= kSegmentOps) {
    if (!segments.empty() && segments.back().depth == depth)
      closeSegment();
    openSegment(depth);
  }
  ++segments.back().ops;
}

void Codegen::openSegment(size_t depth) {
  auto *type = llvm::FunctionType::get(i32, {ptr, ptr, ptr}, false);
  auto *f = llvm::Function::Create(
      type, llvm::Function::InternalLinkage,
      options.kernelName() + ".segment" + std::to_string(numSegments++), *mod);
  f->addFnAttr(llvm::Attribute::NoInline); // else the entry is one frame
  f->addFnAttr(kHostCodeAttribute);
  for (unsigned a = 0; a < 3; ++a)
    f->addParamAttr(a, llvm::Attribute::NoAlias);
  Value *status = b.CreateCall(f, {buffersArg, symsArg, ctxArg});
  failIf(b.CreateICmpNE(status, b.getInt32(0)), nullptr); // recorded
  segments.push_back({kernel, b.GetInsertBlock(), depth, 0});
  kernel = f;
  sizesChecked.clear();
  buffersArg = f->getArg(0);
  symsArg = f->getArg(1);
  ctxArg = f->getArg(2);
  b.SetInsertPoint(llvm::BasicBlock::Create(ctx, "entry", f));
}

void Codegen::closeSegment() {
  Segment s = segments.back();
  segments.pop_back();
  b.CreateRet(b.getInt32(0));
  kernel = s.caller;
  sizesChecked.clear();
  buffersArg = kernel->getArg(0);
  symsArg = kernel->getArg(1);
  ctxArg = kernel->getArg(2);
  b.SetInsertPoint(s.block);
}

} // namespace tsl::backend
