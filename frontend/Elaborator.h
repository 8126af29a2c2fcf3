#pragma once
/// \file Elaboration: a TSL function, instantiated for its argument types,
/// becomes one IR Function. Calls are inlined, `if`s on sizes are decided
/// (proof, or hint + guard), and every op's shape rule runs as it is built,
/// so type errors are reported at their source location.

#include "frontend/ModuleLoader.h"
#include "ir/Function.h"
#include "ir/Pipeline.h"

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>

namespace tsl {

/// An example argument: a concrete tensor type or an int value. Examples
/// are the "first call" that static and auto dims take their values from and
/// that dynamic dims take their hints from.
struct ExampleArg {
  bool isInt = false;
  int64_t intValue = 0;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
};

/// What a function returned, for tools that inspect values without a
/// declared result type (the REPL).
struct ProbeResult {
  enum class Kind { Tensor, Int, Cond, Tuple, Other } kind = Kind::Other;
  TensorType type;                   ///< Tensor
  SymExpr intValue;                  ///< Int
  SymCond cond;                      ///< Cond
  std::vector<ProbeResult> elements; ///< Tuple
  std::string description;           ///< Other: what it is
};

/// Called at the end of elaboration with the environment (symbols, facts,
/// the prover) and the returned value.
using ProbeFn = std::function<void(const ShapeEnv &, const ProbeResult &)>;

struct ElaborateOptions {
  /// Example arguments by parameter name. Without examples the function is
  /// checked generically: every non-constant dim is a symbol without a hint,
  /// and each undecidable `if` over dynamic dims is checked both ways.
  std::optional<std::map<std::string, ExampleArg>> examples;
  /// When set, the function's declared result is not checked; whatever it
  /// returns is described to the probe (tensors are still IR results).
  ProbeFn probe;
  /// Dims (and int parameters) that must be dynamic although declared or
  /// defaulted `auto` (automatic dynamic: their value changed between calls).
  std::set<std::string> forceDynamic;
  /// Every dim and int parameter that is not declared static becomes
  /// dynamic (the runtime's fallback past its cache limit).
  bool allDynamic = false;
  /// Tensor parameters whose buffers the caller donates (Param::donated);
  /// a name that is no tensor parameter is an error.
  std::set<std::string> donated;
  /// The IR pipeline's options (ir/Pipeline.h) for the target the function
  /// is compiled for: the GPU's keeps calls inlined. Default: the host's.
  PipelineOptions pipeline;
};

/// Elaborates \p fnName of \p module into \p out. Returns false after
/// reporting diagnostics.
bool elaborateFunction(const LoadedModule &module, const std::string &fnName,
                       const ElaborateOptions &options, DiagnosticEngine &diags,
                       Function &out);

/// Checks every function of \p module generically (`tslc check`).
bool checkModule(const LoadedModule &module, DiagnosticEngine &diags);

/// The name of every builtin function (exp, sum, reshape, ...), sorted: the
/// table elaboration resolves calls from, with the builtins Ops.def spells.
/// The REPL completes these.
const std::vector<std::string> &builtinNames();

} // namespace tsl
