#pragma once
/// \file tsl.Function: one function of a loaded module, called on arrays
/// (its own variant table: a miss compiles a variant with the module's
/// JIT compiler), with its statistics, variants and guard reports.

#include "python/src/Common.h"
#include "python/src/DlPack.h"
#include "runtime/FunctionTable.h"
#include "tools/driver/JitCompiler.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace tsl::rt {
class GpuDevice;
}

namespace tsl::py {

/// What a module's functions share: its source, compiler and device.
struct ModuleState {
  std::string name;                   ///< the path, or compile()'s name
  std::optional<std::string> text;    ///< compile()'s source text
  std::string backend;                ///< "cpu", "cuda:N" or "gpu-emulator"
  Placement placement;                ///< where arguments must live
  std::shared_ptr<rt::GpuDevice> gpu; ///< null on the CPU
  std::unique_ptr<JitCompiler> jit;
  std::vector<std::string> functions; ///< sorted names
};

class Function {
public:
  Function(std::shared_ptr<ModuleState> module, std::string name,
           std::vector<std::string> params);

  /// Calls the function: \p args (a tuple) and \p kwargs (a dict, or an
  /// invalid handle when there are none) by parameter name, tensors through
  /// DLPack, ints as ints. One tsl.Tensor, a tuple of them for several
  /// results, None for none. Raises tsl.Error.
  nb::object call(nb::handle args, nb::handle kwargs);
  /// tsl.Stats of the calls so far.
  nb::object stats() const;
  /// A list of tsl.Variant, in dispatch order.
  nb::object variants() const;
  /// tsl.GuardReport for example argument types (`x="f32[10]"`, `k=3`, or
  /// an array whose type is taken); raises tsl.Error for a compile error.
  nb::object guards(nb::kwargs examples) const;

  const std::string &name() const { return name_; }
  const std::vector<std::string> &params() const { return params_; }
  const ModuleState &module() const { return *module_; }

private:
  /// Puts positional and keyword arguments in parameter order.
  void orderArgs(nb::handle args, nb::handle kwargs,
                 std::vector<nb::handle> &ordered) const;

  std::shared_ptr<ModuleState> module_;
  std::string name_;
  std::vector<std::string> params_;
  std::unique_ptr<rt::FunctionTable> table_;
};

/// Registers tsl._tsl.Function.
void bindFunction(nb::module_ &m);

/// The guard report of \p function of \p module for \p examples
/// (Function::guards).
nb::object guardReport(const ModuleState &module, const std::string &function,
                       nb::kwargs examples);

} // namespace tsl::py
