#pragma once
/// \file The host CPU as a code generation target (Target.h): ops are loop
/// nests and runtime library calls inside the kernel function, memory comes
/// from tsl_rt_alloc, and every fusion of the kernel plan is allowed (GEMM
/// operands read as B^T, row groups, outlined runs). The lowering is
/// CpuCodegen (CpuCodegen.h, private to backend/cpu). No LLVM headers.

#include "backend/common/Lowering.h"
#include "backend/common/Target.h"

#include <memory>
#include <string>
#include <vector>

namespace tsl {

/// The host CPU target. Stateless; use cpuTarget().
class CpuTarget final : public Target {
public:
  /// "cpu".
  const char *name() const override { return "cpu"; }
  /// Every capability; outlining above kOutlineOpsAbove ops.
  TargetCaps caps() const override;
  /// tsl_rt_alloc, tsl_rt_free, tsl_rt_fail, tsl_rt_error.
  RuntimeEntries runtime() const override;
  /// A CpuCodegen (CpuCodegen.h): loop nests and library calls in host
  /// memory, outer loops on the runtime's thread pool.
  std::unique_ptr<backend::Codegen>
  makeCodegen(const Function &fn, llvm::LLVMContext &ctx,
              LoweringOptions options) const override;
};

/// The one CpuTarget.
const Target &cpuTarget();

/// Lowers \p fn for the host CPU (lowerForTarget with cpuTarget()); \p
/// checks receives one description per check of tsl_match, in code order.
/// An Unsupported error when an op is not supported (lowerForTarget).
Expected<std::unique_ptr<llvm::Module>>
lowerFunction(const Function &fn, llvm::LLVMContext &ctx,
              std::vector<std::string> &checks,
              const LoweringOptions &options = {});

} // namespace tsl
