#pragma once
/// \file The runtime's compiler hook: on a dispatch miss, elaborate the
/// function for the call's argument types (with the dims the runtime wants
/// dynamic) and compile it with the CPU backend. Compiled objects are kept
/// in an on-disk cache ($TSL_CACHE_DIR, default ~/.cache/tsl, `off` to
/// disable) keyed by the sources, the request, the target and the compiler
/// version, so a second process compiles nothing. The cache directory must
/// be owned by the current user and writable by no one else (else it is
/// not used, with one warning); an entry is loaded only if its files are
/// regular files of that user, it was made for this very request and its
/// SHA-256 matches — anything else is a miss, never loaded (docs/design.md,
/// "The compile cache").

#include "frontend/ModuleLoader.h"
#include "runtime/Variant.h"

#include <mutex>
#include <optional>
#include <sstream>

namespace tsl {

struct Function;
class KernelObjectCache;
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
               rt::VariantCode &out, Error &error) override;
  /// compile() with the error's message only (tools that print it).
  bool compile(const std::string &function,
               const std::vector<rt::CallArg> &args,
               const std::set<std::string> &dynamicDims, bool allDynamic,
               rt::VariantCode &out, std::string &error);
  Expected<void>
  compileDispatcher(const std::vector<const rt::VariantCode *> &variants,
                    rt::Dispatcher &out) override;
  /// The parameter count of \p function; nullopt with compile()'s error
  /// when the module does not load or has no such function.
  std::optional<size_t> arity(const std::string &function,
                              Error &error) override;

  /// Compiles \p text instead of reading the file: the path given to the
  /// constructor only names it in diagnostics (the Python package's
  /// `tsl.compile`). File imports resolve from the current directory. Call
  /// before anything loads the source.
  void setSourceText(std::string text) { text_ = std::move(text); }

  /// Compiles GPU variants for \p device from now on (null: the CPU).
  /// GPU variants bypass the on-disk cache.
  void setDevice(std::shared_ptr<rt::GpuDevice> device) {
    device_ = std::move(device);
  }

  /// Loads and checks the file; false with the diagnostics as text.
  bool check(std::string &error);
  /// check() with the error's kind (the first error's: Syntax, Type, Shape
  /// or Io) and location; the message is the diagnostics as text.
  bool check(Error &error);

  /// Parameter names of \p function in order (empty if unknown).
  std::vector<std::string> parameterNames(const std::string &function);
  /// The names of the module's functions, sorted (empty when it does not
  /// load).
  std::vector<std::string> functionNames();

  /// The kernel objects of the on-disk compile cache (TSL_CACHE_DIR, as
  /// the runtime uses it) for tools that compile a Function themselves
  /// (`tslc run`, the REPL's :run); null when caching is off or the
  /// directory cannot be used (warned once, as the runtime does).
  static std::unique_ptr<KernelObjectCache> openKernelCache();

private:
  bool ensureLoaded(std::string &error);
  /// The diagnostics rendered since the last reset as an Error of the
  /// first error's kind (located there), trailing newlines trimmed when
  /// \p trim.
  Error diagnosticsError(bool trim) const;
  /// Compiles the elaborated \p fn with the backend for the device (CPU
  /// variants through the on-disk cache); the backend's error on failure.
  Expected<void> compileVariant(const Function &fn,
                                const std::set<std::string> &dynamicDims,
                                bool allDynamic, const std::string &function,
                                const std::vector<rt::CallArg> &args,
                                rt::VariantCode &out);
  /// Opens $TSL_CACHE_DIR (or ~/.cache/tsl), creating it 0700; -1 when the
  /// cache is off or the directory is refused or cannot be created (one
  /// warning per directory and process). \p path gets the directory's name.
  static int openCacheDirectory(std::string &path);
  /// The text the cache key is the digest of (and that an entry must
  /// repeat): compiler build, target, sources, function and request.
  std::string cacheRequest(const std::string &function,
                           const std::vector<rt::CallArg> &args,
                           const std::set<std::string> &dynamicDims,
                           bool allDynamic);
  bool loadCached(int dir, const std::string &key, const std::string &request,
                  const std::string &function,
                  const std::vector<rt::CallArg> &args, rt::VariantCode &out);
  void storeCached(int dir, const std::string &dirPath, const std::string &key,
                   const std::string &request, const std::string &object,
                   const std::string &manifest);

  std::string path_;
  std::optional<std::string> text_; ///< the source, when not read from path_
  std::mutex mutex_;
  SourceManager sm_;
  std::ostringstream diagnosticText_;
  DiagnosticEngine diags_;
  ModuleLoader loader_;
  const LoadedModule *module_ = nullptr;
  std::shared_ptr<rt::GpuDevice> device_;
};

} // namespace tsl
