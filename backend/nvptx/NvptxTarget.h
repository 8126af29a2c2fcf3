#pragma once
/// \file NVIDIA GPUs as a code generation target (Target.h): host code (x86,
/// the kernel ABI) allocates results in device memory (tsl_rt_dev_alloc)
/// and launches device kernels (one or more per op, one per row group),
/// whose outermost loop is a grid-stride loop; item() reads back with
/// tsl_rt_dev_read. The kernel plan fuses elementwise trees and row groups
/// that recompute their intermediates (a block per row), with no B^T GEMM
/// operands and no outlined runs. The lowering is DeviceCodegen
/// (DeviceCodegen.h, private to backend/nvptx). No LLVM headers.

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
  /// launchesKernels and rowGroupsRecompute; no transposed GEMM operands
  /// or outlining.
  TargetCaps caps() const override;
  /// tsl_rt_dev_alloc, tsl_rt_dev_free, tsl_rt_fail, tsl_rt_error.
  RuntimeEntries runtime() const override;
  /// A DeviceCodegen (DeviceCodegen.h): host code that launches a device
  /// kernel per op (or row group), and the kernels.
  std::unique_ptr<backend::Codegen>
  makeCodegen(const Function &fn, llvm::LLVMContext &ctx,
              LoweringOptions options) const override;
};

/// The one NvptxTarget.
const Target &nvptxTarget();

/// Lowers \p fn for a GPU: the returned host module has the usual entry
/// points, with buffers in device memory and each op's loop nest launched
/// as device kernel `tsl_dev_<k>(ptr args)` of \p deviceModule (k = 0 ..
/// \p numKernels - 1; args as DeviceKernels (Lowering.h) says; grid-stride
/// loops, so any number of threads computes the whole op). Ops the device
/// path lacks are Unsupported errors ("not supported on the cuda backend:
/// ...").
Expected<std::unique_ptr<llvm::Module>>
lowerFunctionWithDevice(const Function &fn, llvm::LLVMContext &ctx,
                        std::vector<std::string> &checks,
                        std::unique_ptr<llvm::Module> &deviceModule,
                        int32_t &numKernels);

} // namespace tsl
