#pragma once
/// \file The runtime's compiler hook: on a dispatch miss, elaborate the
/// function for the call's argument types (with the dims the runtime wants
/// dynamic) and compile it with the CPU backend. Compiled objects are kept
/// in an on-disk cache ($TSL_CACHE_DIR, default ~/.cache/tsl, `off` to
/// disable) keyed by the sources, the request, the target and the compiler
/// version, so a second process compiles nothing; entries whose checksum or
/// manifest does not match are rebuilt, never loaded.

#include "frontend/ModuleLoader.h"
#include "runtime/Variant.h"

#include <mutex>
#include <sstream>

namespace tsl {

namespace rt {
class GpuDevice;
}

class JitCompiler : public rt::CompilerHook {
public:
  /// Compiles functions of the .tsl file at \p path (loaded on first use).
  explicit JitCompiler(std::string path);

  bool compile(const std::string &function,
               const std::vector<rt::CallArg> &args,
               const std::set<std::string> &dynamicDims, bool allDynamic,
               rt::VariantCode &out, std::string &error) override;
  bool compileDispatcher(const std::vector<const rt::VariantCode *> &variants,
                         rt::Dispatcher &out, std::string &error) override;

  /// Compiles GPU variants for \p device from now on (null: the CPU).
  /// GPU variants bypass the on-disk cache.
  void setDevice(std::shared_ptr<rt::GpuDevice> device) {
    device_ = std::move(device);
  }

  /// Loads and checks the file; false with the diagnostics as text.
  bool check(std::string &error);

  /// Parameter names of \p function in order (empty if unknown).
  std::vector<std::string> parameterNames(const std::string &function);

private:
  bool ensureLoaded(std::string &error);
  /// $TSL_CACHE_DIR (or ~/.cache/tsl); empty when TSL_CACHE_DIR=off.
  static std::string cacheDirectory();
  std::string cacheKey(const std::string &function,
                       const std::vector<rt::CallArg> &args,
                       const std::set<std::string> &dynamicDims,
                       bool allDynamic);
  bool loadCached(const std::string &dir, const std::string &key,
                  const std::string &function, rt::VariantCode &out);
  void storeCached(const std::string &dir, const std::string &key,
                   const std::string &object, const std::string &manifest);

  std::string path_;
  std::mutex mutex_;
  SourceManager sm_;
  std::ostringstream diagnosticText_;
  DiagnosticEngine diags_;
  ModuleLoader loader_;
  const LoadedModule *module_ = nullptr;
  std::shared_ptr<rt::GpuDevice> device_;
};

} // namespace tsl
