// The NVPTX target: the hooks that make the common lowering emit host code
// that launches device kernels (backend/nvptx/CodegenDevice*.cpp).
#include "backend/nvptx/NvptxTarget.h"

#include "backend/common/Codegen.h"

namespace tsl {

TargetCaps NvptxTarget::caps() const {
  TargetCaps caps;
  caps.transposedGemmOperand = false; // device matmuls read B as stored
  caps.rowGroupsRecompute = true;     // a block per row, nothing shared
  caps.outlining = false;             // each op is its own kernel already
  caps.launchesKernels = true;
  return caps;
}

RuntimeEntries NvptxTarget::runtime() const {
  return {"tsl_rt_dev_alloc", "tsl_rt_dev_free", "tsl_rt_fail", "tsl_rt_error"};
}

bool NvptxTarget::lowerOp(backend::Codegen &cg, const Operation &op) const {
  return cg.launchOnDevice(op);
}

void NvptxTarget::lowerCallEnd(backend::Codegen &cg) const {
  cg.checkDeviceStatus();
}

bool NvptxTarget::lowerRowGroup(backend::Codegen &cg, const RowGroup &g) const {
  return cg.launchRowGroup(g);
}

bool NvptxTarget::copyBuffer(backend::Codegen &cg, llvm::Value *dst,
                             llvm::Value *src, const TensorType &t) const {
  return cg.deviceCopy(dst, src, t);
}

llvm::Value *NvptxTarget::readToHost(backend::Codegen &cg, ValueId v) const {
  return cg.readToHost(v);
}

void NvptxTarget::parallelLoop(backend::Codegen &cg,
                               const std::vector<llvm::Value *> &extents,
                               llvm::Value *, const LoopBody &body) const {
  if (cg.inKernel())
    cg.gridStrideLoops(extents, body);
  else
    cg.serialLoops(extents, body);
}

const Target &nvptxTarget() {
  static const NvptxTarget target;
  return target;
}

std::unique_ptr<llvm::Module>
lowerFunctionWithDevice(const Function &fn, llvm::LLVMContext &ctx,
                        std::vector<std::string> &checks, std::string &error,
                        std::unique_ptr<llvm::Module> &deviceModule,
                        int32_t &numKernels) {
  DeviceKernels kernels;
  std::unique_ptr<llvm::Module> m = lowerForTarget(
      fn, ctx, nvptxTarget(), checks, error, LoweringOptions(), &kernels);
  deviceModule = std::move(kernels.module);
  numKernels = kernels.count;
  return m;
}

} // namespace tsl
