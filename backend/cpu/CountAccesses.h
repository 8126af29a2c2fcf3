#pragma once
/// \file The GPU emulator's counting instrumentation (runtime/GpuCounters.h):
/// a call of tsl_gpu_count_access before every load and store of the device
/// kernels a host JIT compiles, and of tsl_gpu_count_kernel at each
/// kernel's entry. Private to tsl_backend_cpu (createHostJit runs it).

namespace llvm {
class Module;
class TargetMachine;
} // namespace llvm

namespace tsl {

/// True when \p m defines device kernels (tsl_dev_N): a module the GPU
/// emulator runs.
bool hasDeviceKernels(const llvm::Module &m);

/// Optimizes \p m for \p tm as NVPTX would (O2 without the loop and SLP
/// vectorizers, then the load/store vectorizer), then instruments every
/// load and store of its functions, except those of allocas (a thread's
/// registers and stack) and of a kernel's argument block (the param space
/// on a GPU). Each gets its own site number; the kernel tsl_dev_N first
/// calls tsl_gpu_count_kernel(N). The hooks touch only memory the code
/// cannot see, so the host's optimization that follows keeps the accesses
/// as counted. Copies by memcpy/memset intrinsics are not counted.
void countDeviceAccesses(llvm::Module &m, llvm::TargetMachine &tm);

} // namespace tsl
