#pragma once
/// \file NVIDIA GPUs as a code generation target (Target.h): host code (x86,
/// the kernel ABI) allocates results in device memory (tsl_rt_dev_alloc)
/// and launches one device kernel per op, whose outermost loop is a
/// grid-stride loop; item() reads back with tsl_rt_dev_read. The kernel
/// plan fuses elementwise trees only (no B^T GEMM operands, row groups or
/// outlined runs). No LLVM headers.

#include "backend/common/Lowering.h"
#include "backend/common/Target.h"

#include <memory>
#include <string>
#include <vector>

namespace tsl {

/// The NVPTX target (also what the GPU emulator runs). Stateless; use
/// nvptxTarget().
class NvptxTarget final : public Target {
public:
  /// "cuda" ("not supported on the cuda backend: ...").
  const char *name() const override { return "cuda"; }
  /// launchesKernels; no transposed GEMM operands, row groups or outlining.
  TargetCaps caps() const override;
  /// tsl_rt_dev_alloc, tsl_rt_dev_free, tsl_rt_fail, tsl_rt_error.
  RuntimeEntries runtime() const override;
  /// Host code: the op's results in device memory and its kernel(s) and
  /// launch(es) (Codegen::launchOnDevice); assert, reshape and item stay on
  /// the host.
  bool lowerOp(backend::Codegen &cg, const Operation &op) const override;
  /// Waits for the kernels' status word when one of them can fail.
  void lowerCallEnd(backend::Codegen &cg) const override;
  /// A host copy of element 0 (tsl_rt_dev_read into a stack slot).
  bool lowerRowGroup(backend::Codegen &cg, const RowGroup &g) const override;
  llvm::Value *readToHost(backend::Codegen &cg, ValueId v) const override;
  bool copyBuffer(backend::Codegen &cg, llvm::Value *dst, llvm::Value *src,
                  const TensorType &t) const override;
  /// In a device kernel, one grid-stride loop over the flattened extents;
  /// in host code, sequential loops.
  void parallelLoop(backend::Codegen &cg,
                    const std::vector<llvm::Value *> &extents,
                    llvm::Value *work, const LoopBody &body) const override;
};

/// The one NvptxTarget.
const Target &nvptxTarget();

/// Lowers \p fn for a GPU: the returned host module has the usual entry
/// points, with buffers in device memory and each op's loop nest launched
/// as device kernel `tsl_dev_<k>(ptr buffers, ptr syms, i64 thread, i64
/// threads)` of \p deviceModule (k = 0 .. \p numKernels - 1; grid-stride
/// loops, so any number of threads computes the whole op). Ops the device
/// path lacks fail with "not supported on the cuda backend: ...".
std::unique_ptr<llvm::Module>
lowerFunctionWithDevice(const Function &fn, llvm::LLVMContext &ctx,
                        std::vector<std::string> &checks, std::string &error,
                        std::unique_ptr<llvm::Module> &deviceModule,
                        int32_t &numKernels);

} // namespace tsl
