#pragma once
/// \file What the files of tslc share: the parsed command line, usage
/// errors, and reading its inputs, TSL source (`.tsl`) or IR text
/// (`.tslir`, as `tslc emit --emit=ir` prints it).

#include "frontend/ModuleLoader.h"
#include "ir/Function.h"
#include "tools/driver/Driver.h"

#include <set>
#include <string>
#include <vector>

namespace tsl {

/// The command line of tslc.
struct Options {
  std::string command;
  std::vector<std::string> files;
  std::vector<std::string> importDirs; ///< -I DIR
  std::string fn;
  std::vector<std::string> args;
  std::string emit; ///< --emit: stage names, comma-separated
  std::string output;
  std::string backend = "cpu";
  std::string target; ///< "" (the host) or "nvptx"
  std::string arch = "sm_90";
  std::string calls;
  std::string passes;      ///< opt --pass: pass names, comma-separated
  std::string printAfter;  ///< emit --print-after: pass names or "all"
  bool listPasses = false; ///< opt --list-passes
  bool json = false;
  bool stats = false;
  bool allDynamic = false;
  /// --donate: parameters of --fn whose buffers calls donate
  /// (comma-separated; `emit` plans with them, Param::donated).
  std::string donate;
  /// The --donate names.
  std::set<std::string> donatedParams() const;
};

/// Parses argv[1..]: the command, then flags and files in any order.
/// False with \p error on an unknown flag or a flag without its value.
bool parseOptions(int argc, char **argv, Options &o, std::string &error);

/// Prints "tslc: error: MESSAGE" and the usage hint to stderr; returns 1
/// (the exit status).
int usageError(const std::string &message);

/// Applies the options that affect loading (-I).
void configure(ModuleLoader &loader, const Options &o);

/// Parses every `--arg` (with tensor data when \p withData); reports a bad
/// one as a usage error and returns false.
bool parseArgs(const Options &o, bool withData, std::vector<ArgSpec> &out);

/// True when the command compiles for the GPU (`--target nvptx`, or
/// `--backend cuda` or `gpu-emulator`).
bool targetsGpu(const Options &o);

/// True when \p path names IR text (ends in `.tslir`).
bool isIrFile(const std::string &path);

/// Reads the IR text file \p path into \p sm, parses it and verifies every
/// function. Reports a failure as a diagnostic and returns false: a file
/// that cannot be read, a parse error at its `file:line:col` (with the
/// line and a caret), or a function that does not verify (at its `func`).
bool loadIrFile(const std::string &path, SourceManager &sm,
                DiagnosticEngine &diags, Module &out);

/// The function `--fn` of the single input file, ready to run or compile.
/// `.tsl`: parses the `--arg` flags (with data when \p withData) and
/// elaborates for them. `.tslir`: loads the file and takes the function as
/// it is (its IR is already a variant; for the GPU, its calls inlined by
/// the `inline-calls` pass); `--arg` is parsed when \p withData (the values
/// to run it on) and refused otherwise, as is --all-dynamic. The pipeline
/// runs with the options of the target (targetsGpu).
/// Reports the failure (usage error or diagnostics) and returns false.
bool compileSelected(const Options &o, bool withData, SourceManager &sm,
                     DiagnosticEngine &diags, std::vector<ArgSpec> &args,
                     Function &fn);

/// Sets \p options.afterPass to print the IR to stderr after each pass
/// \p names lists (comma-separated, or `all`), as LLVM's -print-after does:
/// a `// *** IR Dump After PASS on FN ***` line, then the function. Empty
/// \p names: nothing. False after a usage error on an unknown name.
bool printAfterHook(const std::string &names, PipelineOptions &options);

/// `tslc opt`: runs IR passes by name on IR text and prints the IR
/// (tools/tslc/Opt.cpp).
int cmdOpt(const Options &o, SourceManager &sm, DiagnosticEngine &diags);

/// `tslc emit`: prints the stages named by `--emit` (tools/tslc/Emit.cpp).
int cmdEmit(const Options &o, SourceManager &sm, DiagnosticEngine &diags);

} // namespace tsl
