#pragma once
/// \file Which op each generated kernel was first made for, for profiling
/// (TSL_PERF_MAP, backend/cpu/PerfMap.h): kernels are named by a hash of
/// their code, which says nothing in `perf report`. Recorded only while
/// TSL_PERF_MAP is set; process-wide and thread-safe.

#include <string>
#include <string_view>

namespace tsl {

/// Whether TSL_PERF_MAP asks for a perf map (set, not "" or "0"; read once
/// per process).
bool perfMapEnabled();

/// Notes that kernel \p kernel was generated for \p origin ("reduce_sum,
/// op 25 of cnn_grads"); the first note of a name stays. Does nothing
/// unless perfMapEnabled().
void recordKernelOrigin(std::string_view kernel, std::string origin);

/// What recordKernelOrigin noted for \p kernel; "" when nothing (a kernel
/// loaded from the compile cache, or another function).
std::string kernelOrigin(std::string_view kernel);

} // namespace tsl
