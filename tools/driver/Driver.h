#pragma once
/// \file The compilation pipeline shared by tslc and tsl-repl: argument
/// parsing (`NAME=VALUE`), loading, elaboration, verification and running.

#include "frontend/Elaborator.h"
#include "ir/Interpreter.h"
#include "support/Diagnostics.h"

#include <map>
#include <set>
#include <string>
#include <vector>

namespace tsl {

/// One `--arg NAME=VALUE`: VALUE is a `.npy` path, an integer, or
/// `TYPE[:INIT[:SEED]]` (`f32[4,8]`, `f32[4,8]:rand:7`, INIT one of rand
/// randn zeros ones arange; default randn with seed 0).
struct ArgSpec {
  std::string name;
  bool isInt = false;
  int64_t intValue = 0;
  bool hasData = false; ///< false for a type only (`tslc guards`)
  Tensor tensor;        ///< when hasData
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
};

/// Parses `NAME=VALUE`. With \p withData false, tensors are types only (no
/// allocation). Returns false with \p error.
bool parseArgSpec(const std::string &text, bool withData, ArgSpec &out,
                  std::string &error);

/// Fills a tensor: rand (uniform [0, 1); ints uniform in [0, 10); bool
/// 50%), randn (normal; ints in [-5, 5)), zeros, ones, arange.
bool initTensor(Tensor &t, const std::string &init, uint64_t seed,
                std::string &error);

/// Renders a run-time error like a diagnostic, with the source line when
/// the location's file is loaded.
void reportRunError(const RunError &error, SourceManager &sm,
                    DiagnosticEngine &diags);

/// Loads \p path, elaborates \p fnName for the given arguments (every
/// dimension dynamic when \p allDynamic; the IR pipeline as \p pipeline
/// asks: the host's by default, nvptxTarget().pipelineOptions() for the GPU;
/// the parameters \p donated donated, ElaborateOptions::donated)
/// and verifies the IR. Fails with a diagnostic on a load or elaboration error
/// or an argument given twice.
bool compileForArgs(ModuleLoader &loader, const std::string &path,
                    const std::string &fnName, const std::vector<ArgSpec> &args,
                    DiagnosticEngine &diags, Function &out,
                    bool allDynamic = false,
                    const PipelineOptions &pipeline = {},
                    const std::set<std::string> &donated = {});

/// Arguments in the function's parameter order, for the interpreter.
bool orderArgs(const Function &fn, const std::vector<ArgSpec> &args,
               std::vector<ArgValue> &out, std::string &error);

/// A variant's guards, runtime assertions and result types, as text (one
/// item per line) or as one JSON object (`tslc guards`, `:guards`).
std::string formatGuardReport(const Function &fn, bool json);

/// Prints results NumPy-style ("result i: " prefixes when several).
std::string formatResults(const std::vector<Tensor> &outputs);

} // namespace tsl
