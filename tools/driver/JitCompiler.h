#pragma once
/// \file The runtime's compiler hook: on a dispatch miss, elaborate the
/// function for the call's argument types (with the dims the runtime wants
/// dynamic) and compile it with the CPU backend.

#include "frontend/ModuleLoader.h"
#include "runtime/Variant.h"

#include <mutex>
#include <sstream>

namespace tsl {

class JitCompiler : public rt::CompilerHook {
public:
  /// Compiles functions of the .tsl file at \p path (loaded on first use).
  explicit JitCompiler(std::string path);

  bool compile(const std::string &function, const std::vector<rt::CallArg> &args,
               const std::set<std::string> &dynamicDims, bool allDynamic, rt::VariantCode &out,
               std::string &error) override;

  /// Loads and checks the file; false with the diagnostics as text.
  bool check(std::string &error);

  /// Parameter names of \p function in order (empty if unknown).
  std::vector<std::string> parameterNames(const std::string &function);

private:
  bool ensureLoaded(std::string &error);

  std::string path_;
  std::mutex mutex_;
  SourceManager sm_;
  std::ostringstream diagnosticText_;
  DiagnosticEngine diags_;
  ModuleLoader loader_;
  const LoadedModule *module_ = nullptr;
};

} // namespace tsl
