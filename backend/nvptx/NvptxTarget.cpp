// The NVPTX target: its capabilities, runtime entries and lowering
// (DeviceCodegen: host code that launches device kernels,
// backend/nvptx/CodegenDevice*.cpp).
#include "backend/nvptx/NvptxTarget.h"
#include "backend/common/RuntimeCalls.h"

#include "backend/nvptx/DeviceCodegen.h"

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
  return {TSL_RT_FN(tsl_rt_dev_alloc), TSL_RT_FN(tsl_rt_dev_free),
          TSL_RT_FN(tsl_rt_fail), TSL_RT_FN(tsl_rt_error)};
}

std::unique_ptr<backend::Codegen>
NvptxTarget::makeCodegen(const Function &fn, llvm::LLVMContext &ctx,
                         LoweringOptions options) const {
  return std::make_unique<backend::DeviceCodegen>(fn, ctx, *this,
                                                  std::move(options));
}

const Target &nvptxTarget() {
  static const NvptxTarget target;
  return target;
}

Expected<std::unique_ptr<llvm::Module>>
lowerFunctionWithDevice(const Function &fn, llvm::LLVMContext &ctx,
                        std::vector<std::string> &checks,
                        std::unique_ptr<llvm::Module> &deviceModule,
                        int32_t &numKernels) {
  DeviceKernels kernels;
  Expected<std::unique_ptr<llvm::Module>> m = lowerForTarget(
      fn, ctx, nvptxTarget(), checks, LoweringOptions(), &kernels);
  deviceModule = std::move(kernels.module);
  numKernels = kernels.count;
  return m;
}

} // namespace tsl
