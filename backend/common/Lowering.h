#pragma once
/// \file For the backend libraries: lowering one IR Function for a Target
/// to an LLVM module whose function `tsl_kernel` implements the kernel ABI
/// (runtime/KernelAbi.h), and the native dispatcher over variants. No LLVM
/// headers (LLVM types are declared, not defined, here).

#include "backend/common/KernelPlan.h"
#include "ir/Function.h"
#include "support/Error.h"

#include <memory>
#include <string>
#include <vector>

namespace llvm {
class Constant;
class LLVMContext;
class Module;
} // namespace llvm

namespace tsl {

class Target;

/// Names of the functions in the generated module.
inline constexpr const char *kKernelName = "tsl_kernel";
/// `i32 tsl_match(ptr sizes, ptr ints, ptr syms)`: binds the symbols from
/// the arguments' sizes (every axis of every tensor parameter, in order)
/// and int values, and checks static sizes, repeated names, derived dims,
/// declared ranges and the guards. Returns 0, or 1 + the index of the
/// first failing check in `checks`.
inline constexpr const char *kMatchName = "tsl_match";
/// `void tsl_result_shapes(ptr syms, ptr shapes)`: every result's dims, in
/// order, after the kernel ran (unbacked sizes included).
inline constexpr const char *kShapesName = "tsl_result_shapes";

/// Name prefix of the kernel functions of a lowered module (one per op or
/// row group, see LoweringOptions::outlineOpsAbove); the rest of the name is
/// a digest of the kernel's code, so equal kernels have equal names.
inline constexpr const char *kKernelFunctionPrefix = "tsl_k_";
/// A function attribute on host code: entry points, their segments and
/// callees (the functions that call kernels, callees and segments; not the
/// kernels, matchers, shape functions or dispatchers).
inline constexpr const char *kHostCodeAttribute = "tsl-host-code";
/// Name prefix of the chunk functions of parallel loops (internal to the
/// kernel or entry point that runs them; named by a digest of their code,
/// like kernels). Each compiled unit carries the ones its functions use.
inline constexpr const char *kBodyFunctionPrefix = "tsl_body_";

/// How a function is lowered.
struct LoweringOptions {
  /// Ahead of time: runtime functions are called through the exported
  /// `tsl_rt_table` that the loading runtime fills (KernelAbi.h).
  bool aot = false;
  /// Functions with more ops than this are lowered one kernel (op or row
  /// group) per LLVM function, structurally identical kernels sharing one
  /// (kOutlineOpsAbove), where the target outlines at all
  /// (TargetCaps::outlining); fewer: as one function.
  size_t outlineOpsAbove = kOutlineOpsAbove;
  /// Prefix of the three entry points ("": the default names above;
  /// "f_v0": f_v0_kernel, f_v0_match, f_v0_shapes).
  std::string prefix;
  /// Added to the op index a failure reports: a callee's ops are numbered
  /// after its caller's (calleeFailureBase).
  int32_t opIndexBase = 0;
  /// The prefix of callee \p k's entry points (its kernel function is
  /// internal to the caller's module, which calls it).
  std::string calleePrefix(size_t k) const {
    return (prefix.empty() ? std::string("tsl") : prefix) + "_callee" +
           std::to_string(k);
  }
  /// The entry points' names: kKernelName, kMatchName and kShapesName
  /// without a prefix, else the prefix and `_kernel`, `_match`, `_shapes`.
  std::string kernelName() const {
    return prefix.empty() ? kKernelName : prefix + "_kernel";
  }
  std::string matchName() const {
    return prefix.empty() ? kMatchName : prefix + "_match";
  }
  std::string shapesName() const {
    return prefix.empty() ? kShapesName : prefix + "_shapes";
  }
};

/// The number of pointers in the buffer array an entry point of \p fn takes
/// (its first argument): one per IR value, indexed by value, then a scratch
/// area from index `fn.values.size()` on that holds the argument array of
/// each kernel call and the buffer array of each callee call while it runs
/// (they run one after another, so one area serves them all). Keeping these
/// arrays in the caller's memory instead of on the stack bounds every
/// generated frame, whatever the size of the function: a kernel has at most
/// one argument per value, a callee needs its own buffer array length.
size_t bufferArrayLength(const Function &fn);

/// The device kernels of a target that launches kernels
/// (TargetCaps::launchesKernels): `void tsl_dev_<k>(ptr args)` for k = 0 ..
/// count - 1, in \p module; args is one block of 8-byte words: the address of
/// the call's status word, the extra pointers the host passes, the symbols,
/// then the buffers the kernel uses by slot (runtime/KernelAbi.h).
struct DeviceKernels {
  std::unique_ptr<llvm::Module> module;
  int32_t count = 0;
};

/// Lowers \p fn for \p target into a module with the entry points named by
/// \p options; \p checks receives one description per check of tsl_match,
/// in code order, and \p kernels (when given) the device kernels the host
/// code launches. An Unsupported error when an op is not supported on the
/// target ("not supported on the <name> backend: ..."), Internal when the
/// lowered code does not verify or link.
Expected<std::unique_ptr<llvm::Module>>
lowerForTarget(const Function &fn, llvm::LLVMContext &ctx, const Target &target,
               std::vector<std::string> &checks,
               const LoweringOptions &options = {},
               DeviceKernels *kernels = nullptr);

/// One variant as a dispatcher sees it: its signature (rt::DispatchFn) and
/// its matcher (a function of the module, or an address).
struct DispatchEntry {
  std::vector<int64_t> signature;
  llvm::Constant *match = nullptr;
};

/// Adds `i32 name(ptr signature, ptr sizes, ptr ints, ptr syms)` to \p m:
/// the index of the first entry whose signature equals the call's and whose
/// matcher returns 0, else -1 (rt::DispatchFn).
void emitDispatcher(llvm::Module &m, const std::string &name,
                    const std::vector<DispatchEntry> &entries);

} // namespace tsl
