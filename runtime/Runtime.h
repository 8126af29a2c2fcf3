#pragma once
/// \file The objects behind the C ABI (tsl_c.h).

#include "runtime/FunctionTable.h"
#include "runtime/GpuDevice.h"
#include "tsl/tsl_c.h"

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

namespace tsl::rt {

/// Creates a compiler for a source file (variants for \p device, or the
/// CPU when null), or fails with the source's error (its kind: Syntax, Type,
/// Shape for a file that does not check; Io or NotFound for a file or an
/// import that cannot be read).
using CompilerFactory = std::function<Expected<std::unique_ptr<CompilerHook>>(
    const std::string &path, const std::shared_ptr<GpuDevice> &device)>;

/// Installs the compiler used by tsl_module_load_source (the driver does).
void setCompilerFactory(tsl_runtime *rt, CompilerFactory factory);

/// The DLPack element type of element type code \p dtype (KernelAbi.h).
tsl_dtype dlpackOf(int32_t dtype);

/// Records the calling thread's last error and returns \p status.
tsl_status fail(tsl_status status, std::string message);

/// The status the C API returns for an error of kind \p kind: Syntax, Type,
/// Shape and Internal are TSL_COMPILE_ERROR (an internal error arises while
/// compiling; the message says it is one), Io and NotFound
/// TSL_NOT_FOUND, InvalidArgument TSL_INVALID_ARGUMENT, NoVariant and
/// CacheLimit TSL_NO_VARIANT, RuntimeCheck and Resource TSL_RUNTIME_ERROR,
/// Unsupported TSL_UNSUPPORTED.
tsl_status statusFor(ErrorKind kind);

} // namespace tsl::rt

struct tsl_function {
  std::unique_ptr<tsl::rt::FunctionTable> table;
  tsl_device device{1, 0}; ///< where arguments and outputs live
};

struct tsl_module {
  std::string path;
  std::unique_ptr<tsl::rt::CompilerHook> compiler;
  std::mutex mutex;
  std::map<std::string, std::unique_ptr<tsl_function>> functions;
  size_t cacheLimit = 8;
  std::shared_ptr<tsl::rt::GpuDevice> gpu; ///< the runtime's GPU, or null
  tsl_device device{1, 0};
};

struct tsl_runtime {
  tsl_runtime_options options{};
  std::shared_ptr<tsl::rt::GpuDevice> gpu; ///< null: the CPU
  tsl::rt::CompilerFactory compilerFactory;
  std::mutex mutex;
  std::vector<std::unique_ptr<tsl_module>> modules;
};
