#pragma once
/// \file Private to backend/cpu (it includes LLVM): the host target machine
/// and the optimization pipeline every CPU compile path shares.

#include "support/Error.h"

#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/IR/Module.h>
#include <llvm/Support/Error.h>
#include <llvm/Target/TargetMachine.h>

#include <memory>
#include <string>

namespace tsl {

/// Registers the native target once per process (thread-safe) and loads
/// libmvec, whose vector math the optimizer may call.
void initializeLLVM();

/// The text of \p err (consumed).
std::string errorText(llvm::Error err);

/// \p err (consumed) as an Error of \p kind: \p prefix, then its text.
Error llvmError(ErrorKind kind, llvm::Error err,
                const std::string &prefix = "");

/// How hard a module is optimized: O3 with vectorization (kernels,
/// matchers), O1 for code that only sequences calls to kernels, or nothing
/// (O0 and fast instruction selection) for such code when it is large.
enum class OptEffort { Full, Light, None };

/// Runs the O3 (Full), O1 (Light) or O0 (None) pipeline for the module's
/// target.
void optimize(llvm::Module &m, llvm::TargetMachine &tm,
              OptEffort effort = OptEffort::Full);

/// The host, or the CPU named by $TSL_TARGET_CPU (for example x86-64-v3 or
/// skylake-avx512; its own features, not the host's). An Unsupported
/// error ("cannot target the host CPU: ...") when LLVM cannot.
Expected<llvm::orc::JITTargetMachineBuilder> targetMachineBuilder();

/// A target machine for the selected CPU (position-independent when \p pic,
/// for shared libraries). An Unsupported error when LLVM cannot target it.
/// A target machine is not shared between threads.
Expected<std::unique_ptr<llvm::TargetMachine>>
targetMachine(bool pic, OptEffort effort = OptEffort::Full);

/// Sets the module's target, tags its functions with the CPU and features,
/// and optimizes it.
void prepareAndOptimize(llvm::Module &m, llvm::TargetMachine &tm,
                        OptEffort effort = OptEffort::Full);

} // namespace tsl
