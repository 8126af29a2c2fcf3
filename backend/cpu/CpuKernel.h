#pragma once
/// \file A TSL function compiled for the host CPU: IR lowered to LLVM IR,
/// optimized (O3, host CPU features) and loaded with ORC LLJIT. The kernel
/// follows the ABI of runtime/KernelAbi.h.

#include "backend/common/KernelPlan.h"
#include "ir/Interpreter.h"
#include "runtime/KernelAbi.h"
#include "support/Error.h"

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace tsl {

namespace rt {
struct Dispatcher;
struct VariantCode;
} // namespace rt

/// Where the objects of single kernels are kept between compiles, so that
/// an edit recompiles only the kernels it changed. Keys are hex digests of
/// a kernel's code; implementations add what else the object depends on
/// (the compiler build, the target) and must be safe to call from one
/// thread at a time.
class KernelObjectCache {
public:
  virtual ~KernelObjectCache() = default;
  /// The object stored under \p key; false when there is none (or it is
  /// unusable).
  virtual bool load(const std::string &key, std::string &object) = 0;
  /// Stores \p object under \p key; failures are the cache's to report.
  virtual void store(const std::string &key, const std::string &object) = 0;
};

/// Several object files as one string (for caches that keep one entry per
/// compile), and back. unpackObjects is false on malformed input.
std::string packObjects(const std::vector<std::string> &objects);
bool unpackObjects(const std::string &packed,
                   std::vector<std::string> &objects);

/// Lowers \p fn to LLVM IR text (for `tslc emit --emit=llvm`). An
/// Unsupported error when an op is not supported by the backend.
Expected<std::string> lowerToLLVMText(const Function &fn);

/// Lowers, optimizes for the host CPU and prints native assembly (`tslc
/// emit --emit=asm`). Errors as lowerToLLVMText.
Expected<std::string> lowerToAssembly(const Function &fn);

/// Compiles \p fns (variants, possibly of several functions) ahead of time
/// into a shared library the runtime loads without a compiler
/// (tsl_module_load_aot). Links with $CC (default `cc`). Errors: Io (a
/// file cannot be written), Unsupported (an op, or the link failed).
Expected<void> buildSharedLibrary(const std::vector<Function> &fns,
                                  const std::string &outPath);

/// Identifies what compiled code depends on besides the source: LLVM's
/// target triple, the host CPU and its features (cache keys).
std::string hostTargetId();

/// Compiles \p fns ahead of time into relocatable objects (in memory, one
/// per distinct kernel and one for the rest) and the manifest describing
/// their variants (the on-disk compile cache). Kernels found in \p cache
/// (may be null) are not compiled again; new ones are stored there.
Expected<void> compileObject(const std::vector<Function> &fns,
                             std::vector<std::string> &objects,
                             std::string &manifest,
                             KernelObjectCache *cache = nullptr);
/// Loads objects made by compileObject into a JIT session and appends their
/// variants by function name to \p out. An InvalidArgument error (never a
/// crash) on a bad manifest or object.
Expected<void>
loadObjectVariants(const std::vector<std::string> &objects,
                   const std::string &manifest,
                   std::vector<std::pair<std::string, rt::VariantCode>> &out);

/// Fills a variant's metadata from \p fn (everything but entry points):
/// parameters, results, the matcher's check descriptions, op locations.
void fillVariantMetadata(const Function &fn,
                         const std::vector<std::string> &checks,
                         rt::VariantCode &out);

/// The error of a failed kernel call: the failed op's location and what it
/// checks (with the symbol values it saw), or the library kernel's message.
void describeKernelFailure(const Function &fn, tsl_rt_context *ctx,
                           const std::vector<int64_t> &syms, RunError &error);

/// Binds the arguments as the interpreter does (checking them) and lays
/// out the kernel's symbol array: one value per symbol (unbacked ones 0
/// until the kernel writes them) and the extra slot. False with \p error.
bool bindSymbols(const Function &fn, const std::vector<ArgValue> &args,
                 std::vector<int64_t> &syms, RunError &error);

/// After a successful call: each result of \p fn, shaped from the symbols
/// (unbacked sizes included) and copied out of \p buffers with \p copy
/// (memcpy, or from device memory). False with \p error on failure.
bool readResults(
    const Function &fn, const std::vector<int64_t> &syms,
    const std::vector<void *> &buffers,
    const std::function<bool(void *dst, const void *src, size_t bytes,
                             std::string &error)> &copy,
    std::vector<Tensor> &outputs, RunError &error);

/// Compiles one native function that chooses among \p variants (loaded in
/// this process) in order: rt::DispatchFn.
Expected<void>
compileDispatcher(const std::vector<const rt::VariantCode *> &variants,
                  rt::Dispatcher &out);

/// A compiled, loaded kernel. Thread-compatible: run() may be called from
/// several threads at once (each call has its own context).
class CpuKernel {
public:
  ~CpuKernel();
  /// Compiles \p fn: an Unsupported error for an op the CPU backend
  /// lacks, Internal for a bug, Resource when JIT memory runs out. Functions
  /// with more than \p outlineOpsAbove ops are lowered one kernel per LLVM
  /// function (0: every function; SIZE_MAX: the whole function as one).
  /// Kernels found in \p cache (may be null: the on-disk compile cache's
  /// kernel objects, as JitCompiler::openKernelCache gives it) are not
  /// compiled again; new ones are stored there.
  static Expected<std::unique_ptr<CpuKernel>>
  compile(const Function &fn, size_t outlineOpsAbove = kOutlineOpsAbove,
          KernelObjectCache *cache = nullptr);
  /// Compiles \p fn into a runtime variant (entry points, metadata, and
  /// the JIT session kept alive by the variant). Errors as compile().
  static Expected<void> compileVariant(const Function &fn,
                                       rt::VariantCode &out);
  /// Binds the arguments (as the interpreter does), runs the kernel and
  /// copies the results into fresh tensors.
  bool run(const std::vector<ArgValue> &args, std::vector<Tensor> &outputs,
           RunError &error) const;

private:
  CpuKernel();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

} // namespace tsl
