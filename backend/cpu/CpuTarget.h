#pragma once
/// \file The host CPU as a code generation target (Target.h): ops are loop
/// nests and runtime library calls inside the kernel function, memory comes
/// from tsl_rt_alloc, and every fusion of the kernel plan is allowed (GEMM
/// operands read as B^T, row groups, outlined runs). No LLVM headers.

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
  /// The common lowering (Codegen::lowerOp).
  bool lowerOp(backend::Codegen &cg, const Operation &op) const override;
  /// The value's own buffer: host memory.
  bool lowerRowGroup(backend::Codegen &cg, const RowGroup &g) const override;
  llvm::Value *readToHost(backend::Codegen &cg, ValueId v) const override;
  bool copyBuffer(backend::Codegen &cg, llvm::Value *dst, llvm::Value *src,
                  const TensorType &t) const override;
  /// Chunks of the outer indices on the runtime's thread pool
  /// (Codegen::hostParallelLoops).
  void parallelLoop(backend::Codegen &cg,
                    const std::vector<llvm::Value *> &extents,
                    llvm::Value *work, const LoopBody &body) const override;
};

/// The one CpuTarget.
const Target &cpuTarget();

/// Lowers \p fn for the host CPU (lowerForTarget with cpuTarget()); \p
/// checks receives one description per check of tsl_match, in code order.
/// Null with \p error when an op is not supported.
std::unique_ptr<llvm::Module>
lowerFunction(const Function &fn, llvm::LLVMContext &ctx,
              std::vector<std::string> &checks, std::string &error,
              const LoweringOptions &options = {});

} // namespace tsl
