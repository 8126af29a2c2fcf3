#pragma once
/// \file Private to backend/cpu (it includes LLVM): compiling a lowered
/// module to object code one kernel at a time, on every core, reusing the
/// objects of kernels compiled before.

#include "backend/common/Lowering.h"
#include "backend/cpu/CpuKernel.h"

#include <llvm/IR/Module.h>

#include <memory>
#include <string>
#include <vector>

namespace tsl {

/// What compileToObjects did, for TSL_LOGS=perf and the compile-time
/// benchmark.
struct ObjectCompileStats {
  size_t kernelCalls = 0;  ///< calls of kernels in the module
  size_t kernels = 0;      ///< distinct kernels (each compiled once)
  size_t fromCache = 0;    ///< units whose object came from the cache
  size_t units = 0;        ///< objects made (the kernels and the rest)
  unsigned threads = 0;    ///< threads that compiled them
  double milliseconds = 0; ///< optimization and code generation
};

/// Compiles \p m (from lowerFunction, or several of them linked) into
/// object files: each kernel function (kKernelFunctionPrefix) alone, and
/// the rest (entry points, matchers, dispatchers, tables) together. Units
/// are optimized and compiled in parallel on compileThreads() threads, each
/// in its own LLVM context; a unit whose object \p cache (may be null) holds
/// is not compiled again. \p objects is in a fixed order (the rest, then
/// the kernels in module order). \p pic: position-independent code (shared
/// libraries, cached objects). An error when LLVM cannot target the host
/// (Unsupported) or fails (Internal).
Expected<void> compileToObjects(std::unique_ptr<llvm::Module> m, bool pic,
                                KernelObjectCache *cache,
                                std::vector<std::string> &objects,
                                ObjectCompileStats *stats = nullptr);

/// Threads compileToObjects uses: $TSL_COMPILE_THREADS when it is a
/// positive number, else the CPUs this process may run on.
unsigned compileThreads();

} // namespace tsl
