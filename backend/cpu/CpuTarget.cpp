// The host CPU target: its capabilities, runtime entries and lowering
// (CpuCodegen).
#include "backend/cpu/CpuTarget.h"
#include "backend/common/RuntimeCalls.h"

#include "backend/cpu/CpuCodegen.h"

namespace tsl {

TargetCaps CpuTarget::caps() const { return TargetCaps(); }

RuntimeEntries CpuTarget::runtime() const {
  return {TSL_RT_FN(tsl_rt_alloc), TSL_RT_FN(tsl_rt_free),
          TSL_RT_FN(tsl_rt_fail), TSL_RT_FN(tsl_rt_error)};
}

std::unique_ptr<backend::Codegen>
CpuTarget::makeCodegen(const Function &fn, llvm::LLVMContext &ctx,
                       LoweringOptions options) const {
  return std::make_unique<backend::CpuCodegen>(fn, ctx, *this,
                                               std::move(options));
}

const Target &cpuTarget() {
  static const CpuTarget target;
  return target;
}

Expected<std::unique_ptr<llvm::Module>>
lowerFunction(const Function &fn, llvm::LLVMContext &ctx,
              std::vector<std::string> &checks,
              const LoweringOptions &options) {
  return lowerForTarget(fn, ctx, cpuTarget(), checks, options);
}

} // namespace tsl
