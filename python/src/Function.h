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
  /// The function \p name of \p module; calls donate the parameters
  /// marked in \p donated (by index; see donate()).
  Function(std::shared_ptr<ModuleState> module, std::string name,
           std::vector<std::string> params, std::vector<bool> donated = {});

  /// `fn.donate("w", "m")`: the same function with those parameters'
  /// buffers donated to each call (JAX's donate_argnames), in a variant
  /// table of its own: a donated tsl.Tensor's memory becomes a result's
  /// (an optimizer's update written in place) or is freed, and the tensor
  /// raises tsl.Error when read again; a NumPy array (or a tsl.Tensor a
  /// DLPack consumer still reads) is copied first and left as it was.
  /// Raises tsl.Error for an unknown name or on a GPU module.
  Function *donate(nb::args names) const;

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
  /// Whether parameter \p i is donated.
  bool donates(size_t i) const { return i < donated_.size() && donated_[i]; }
  const ModuleState &module() const { return *module_; }

private:
  /// Puts positional and keyword arguments in parameter order.
  void orderArgs(nb::handle args, nb::handle kwargs,
                 std::vector<nb::handle> &ordered) const;
  /// Sets \p arg to donated argument \p i (\p obj) in memory the call may
  /// take over (DonatedArg remembers how to undo it).
  struct DonatedArg;
  void donateArg(size_t i, nb::handle obj, ImportedTensor &imported,
                 rt::CallArg &arg, std::vector<DonatedArg> &donated) const;

  std::shared_ptr<ModuleState> module_;
  std::string name_;
  std::vector<std::string> params_;
  std::vector<bool> donated_; ///< by parameter index (empty: none)
  std::unique_ptr<rt::FunctionTable> table_;
};

/// Registers tsl._tsl.Function.
void bindFunction(nb::module_ &m);

/// The guard report of \p function of \p module for \p examples
/// (Function::guards).
nb::object guardReport(const ModuleState &module, const std::string &function,
                       nb::kwargs examples);

} // namespace tsl::py
