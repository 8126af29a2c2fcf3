#pragma once
/// \file Private to backend/cpu: lowering one IR Function to an LLVM module
/// whose function `tsl_kernel` implements the kernel ABI.

#include "ir/Function.h"

#include <memory>
#include <string>

namespace llvm {
class LLVMContext;
class Module;
} // namespace llvm

namespace tsl {

/// The name of the kernel function in the generated module.
inline constexpr const char *kKernelName = "tsl_kernel";

std::unique_ptr<llvm::Module> lowerFunction(const Function &fn, llvm::LLVMContext &ctx,
                                            std::string &error);

} // namespace tsl
