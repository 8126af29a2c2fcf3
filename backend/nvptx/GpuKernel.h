#pragma once
/// \file A TSL function compiled for NVIDIA GPUs: host code (x86, JIT) that
/// launches one device kernel per op, the kernels lowered through LLVM's
/// NVPTX target to PTX (sm_80 or sm_90). Grid sizes come from the symbolic
/// sizes at launch; kernels use grid-stride loops, so any grid is correct.
///
/// The same kernels can also run on the CPU under an emulator (each block's
/// threads as fibers with barriers, warp shuffles and shared memory): that
/// tests the device lowering, the cooperative kernels and the launch
/// protocol on machines without a GPU (CI). It is a test device, not a
/// fast one.
///
/// Every entry point takes a function without calls: elaborate it with the
/// GPU's pipeline options (nvptxTarget().pipelineOptions(), Target.h), or
/// run the `inline-calls` pass on IR that has them.

#include "ir/Interpreter.h"
#include "support/Error.h"

#include <memory>
#include <string>
#include <vector>

namespace tsl {

namespace rt {
class GpuDevice;
struct VariantCode;
} // namespace rt

/// Compiles \p fn into a runtime variant for \p device: host entry points
/// (kernel, matcher, shapes) plus the device kernels (VariantCode::device).
/// Errors: Unsupported (an op without a device lowering, no libdevice),
/// Resource (the driver refuses the module), Internal.
Expected<void> compileGpuVariant(const Function &fn,
                                 const std::shared_ptr<rt::GpuDevice> &device,
                                 rt::VariantCode &out);

/// Lowers \p fn's device kernels to PTX for \p arch ("sm_80", "sm_90";
/// another is InvalidArgument). Transcendental functions come from
/// libdevice (CUDA toolkit; found at $CUDA_HOME or /usr/local/cuda);
/// without it they are Unsupported.
Expected<std::string> lowerToPtx(const Function &fn, const std::string &arch);

/// Where a GpuKernel runs.
enum class GpuTarget {
  Cuda,     ///< the first CUDA device, through the driver API
  Emulator, ///< the kernels compiled for the host, threads simulated
};

class GpuKernel {
public:
  ~GpuKernel();
  /// Compiles \p fn for \p target. Unsupported: an op without a device
  /// lowering, or no CUDA driver or device; Resource: a PTX the driver
  /// rejects.
  static Expected<std::unique_ptr<GpuKernel>> compile(const Function &fn,
                                                      GpuTarget target);
  /// Copies the arguments to the device, runs the host code (which
  /// launches the kernels) and copies the results back. Errors name the
  /// failed op's source line, as on the CPU.
  bool run(const std::vector<ArgValue> &args, std::vector<Tensor> &outputs,
           RunError &error) const;

private:
  GpuKernel();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

} // namespace tsl
