#pragma once
/// \file JIT-compiling a lowered host module into this process (defined in
/// CpuKernel.cpp). A public header of tsl_backend_cpu for the other backend
/// libraries (backend/nvptx runs GPU variants' host code and the emulated
/// kernels with it); it includes LLVM's ORC headers, so nothing outside
/// backend/ includes it.

#include "runtime/Variant.h"

#include <llvm/ExecutionEngine/Orc/LLJIT.h>

#include <memory>
#include <string>

namespace tsl {

/// Optimizes \p m for the host (or $TSL_TARGET_CPU) and loads it into a
/// new ORC session whose runtime symbols (KernelAbi.h, libm) resolve to
/// this process. Errors: Unsupported (LLVM cannot target the CPU),
/// Resource (no memory for a session), Internal.
Expected<std::unique_ptr<llvm::orc::LLJIT>>
createHostJit(std::unique_ptr<llvm::Module> m,
              std::unique_ptr<llvm::LLVMContext> ctx);

/// The entry points of one variant in \p jit (kernel, matcher, result
/// shapes), by symbol name. False when one is missing.
bool lookupEntryPoints(llvm::orc::LLJIT &jit, const std::string &kernel,
                       const std::string &match, const std::string &shapes,
                       rt::VariantCode &out);

} // namespace tsl
