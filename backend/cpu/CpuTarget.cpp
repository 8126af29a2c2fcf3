// The host CPU target: the common lowering as it is, in host memory.
#include "backend/cpu/CpuTarget.h"

#include "backend/common/Codegen.h"

namespace tsl {

TargetCaps CpuTarget::caps() const { return TargetCaps(); }

RuntimeEntries CpuTarget::runtime() const {
  return {"tsl_rt_alloc", "tsl_rt_free", "tsl_rt_fail", "tsl_rt_error"};
}

bool CpuTarget::lowerOp(backend::Codegen &cg, const Operation &op) const {
  return cg.lowerOp(op);
}

bool CpuTarget::lowerRowGroup(backend::Codegen &cg, const RowGroup &g) const {
  return cg.lowerRowGroup(g);
}

bool CpuTarget::copyBuffer(backend::Codegen &cg, llvm::Value *dst,
                           llvm::Value *src, const TensorType &t) const {
  cg.copyBytes(dst, src, cg.byteSize(t));
  return true;
}

llvm::Value *CpuTarget::readToHost(backend::Codegen &cg, ValueId v) const {
  return cg.buffer(v);
}

void CpuTarget::parallelLoop(backend::Codegen &cg,
                             const std::vector<llvm::Value *> &extents,
                             llvm::Value *work, const LoopBody &body) const {
  cg.hostParallelLoops(extents, work, body);
}

const Target &cpuTarget() {
  static const CpuTarget target;
  return target;
}

std::unique_ptr<llvm::Module> lowerFunction(const Function &fn,
                                            llvm::LLVMContext &ctx,
                                            std::vector<std::string> &checks,
                                            std::string &error,
                                            const LoweringOptions &options) {
  return lowerForTarget(fn, ctx, cpuTarget(), checks, error, options);
}

} // namespace tsl
