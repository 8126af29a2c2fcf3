#pragma once
/// \file Names for JIT-compiled code in `perf report`: with TSL_PERF_MAP set
/// (to anything but "" or "0"), every function a host JIT session links is
/// appended to /tmp/perf-PID.map ("START SIZE NAME" in hex, perf's format
/// for JIT code), so samples in kernels show as `tsl_k_<hash>`,
/// with the op it was first generated for when this process generated it
/// (kernels are shared by code: one kernel's samples are all its ops')
/// (`tsl_k_<hash> [reduce_sum, op 25 of cnn_grads]`: KernelOrigins.h),
/// `tsl_kernel` (a variant's host code) or `tsl_match` instead of `[JIT] tid
/// N`; a local function without a symbol of its own (a parallel loop's chunk
/// body) counts to the function before it in its section. Kernel names are
/// hashes of their code: `tslc emit --emit=llvm` of the same variant (the
/// same static sizes) prints them with their code, to tell which op a kernel
/// computes. Developer tooling: off by default; the sessions link with
/// JITLink instead of RuntimeDyld, the generated code is the same.

namespace llvm::orc {
class LLJITBuilder;
}

namespace tsl {

/// Makes \p builder's sessions link with JITLink (the map needs each
/// symbol's address and size from the link graph; the default layer on this
/// platform is RuntimeDyld's) and append the functions they link to the
/// perf map. The generated code is the same; only the linker differs.
void writePerfMap(llvm::orc::LLJITBuilder &builder);

} // namespace tsl
