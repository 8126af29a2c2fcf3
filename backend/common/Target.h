#pragma once
/// \file A code generation target as the rest of the compiler sees it: its
/// name, what the kernel plan may do on it, the runtime functions that
/// allocate, free and report failures, and its lowering (makeCodegen: the
/// target's subclass of backend::Codegen, whose virtual hooks are the parts
/// of lowering that differ between targets). backend/cpu (CpuTarget.h) and
/// backend/nvptx (NvptxTarget.h) implement it. No LLVM headers.

#include "backend/common/KernelPlan.h"
#include "backend/common/Lowering.h"
#include "ir/Pipeline.h"

#include <memory>

namespace llvm {
class FunctionType;
class LLVMContext;
} // namespace llvm

namespace tsl {

namespace backend {
class Codegen;
} // namespace backend

/// A runtime function generated code calls: its C name and its LLVM type,
/// both taken from its declaration in runtime/KernelEntryPoints.def
/// (TSL_RT_FN, backend/common/RuntimeCalls.h).
struct RuntimeFn {
  const char *name;
  /// Builds the function's LLVM type in a context.
  llvm::FunctionType *(*type)(llvm::LLVMContext &);
};

/// The runtime functions (runtime/KernelAbi.h) host code calls.
struct RuntimeEntries {
  /// `ptr alloc(ctx, i64 bytes)`: null on failure (a negative size, out of
  /// memory; the runtime recorded why).
  RuntimeFn alloc;
  /// `void free(ctx, ptr)`: memory from `alloc`.
  RuntimeFn free;
  /// `void fail(ctx, i32 op)`: records that op failed (its message, if any,
  /// recorded before by `error`).
  RuntimeFn fail;
  /// `void error(ctx, ptr message)`: records a failure message.
  RuntimeFn error;
};

/// A code generation target. Implementations are stateless: the state of a
/// lowering lives in the Codegen makeCodegen returns, so one Target object
/// serves any number of concurrent lowerings.
class Target {
public:
  virtual ~Target() = default;

  /// The backend's name as messages spell it ("cpu", "cuda": "not
  /// supported on the cuda backend: ...").
  virtual const char *name() const = 0;

  /// What the kernel plan may do on this target (planKernels).
  virtual TargetCaps caps() const = 0;

  /// The IR pipeline this target's functions are elaborated with
  /// (ir/Pipeline.h): a target whose host code launches kernels
  /// (TargetCaps::launchesKernels) lowers no calls, so it keeps them
  /// inlined instead of outlining them.
  PipelineOptions pipelineOptions() const {
    PipelineOptions o;
    o.outlineCalls = !caps().launchesKernels;
    return o;
  }

  /// The runtime functions for allocation and failures.
  virtual RuntimeEntries runtime() const = 0;

  /// A lowering of \p fn for this target into a module of \p ctx: the
  /// target's subclass of the common lowering (backend::Codegen), which
  /// implements its hooks and holds its state. \p fn and \p ctx must
  /// outlive it.
  virtual std::unique_ptr<backend::Codegen>
  makeCodegen(const Function &fn, llvm::LLVMContext &ctx,
              LoweringOptions options) const = 0;
};

} // namespace tsl
