// `tslc emit FILE --emit=STAGE[,STAGE...]`: prints stages of the pipeline,
// in pipeline order, from a table of stages.
#include "tools/tslc/Tslc.h"

#include "backend/common/KernelPlan.h"
#include "backend/cpu/CpuKernel.h"
#include "backend/cpu/CpuTarget.h"
#include "backend/nvptx/GpuKernel.h"
#include "backend/nvptx/NvptxTarget.h"
#include "frontend/AstPrinter.h"
#include "ir/IrText.h"
#include "ir/OutlineCalls.h"

#include <fstream>
#include <iostream>
#include <sstream>

namespace tsl {

namespace {

/// What the stages print from: the loaded source (`.tsl` only) and the IR of
/// the selected functions (elaborated, or parsed from a `.tslir` file).
struct EmitInput {
  const Options &options;
  const SourceManager &sm;
  const LoadedModule *source = nullptr;
  Module module;
};

using StageFn = bool (*)(const EmitInput &in, std::string &out,
                         std::string &error);

/// One stage `--emit` can print.
struct Stage {
  const char *name;
  /// True when the stage prints the AST (needs a `.tsl` file, and no IR).
  bool fromSource;
  StageFn print;
};

bool emitAst(const EmitInput &in, std::string &out, std::string &) {
  out += printAst(*in.source->ast, in.sm);
  return true;
}

bool emitIr(const EmitInput &in, std::string &out, std::string &) {
  out += printModule(in.module);
  return true;
}

/// Applies \p lower to every function, appending the texts.
template <typename Lower>
bool eachFunction(const EmitInput &in, std::string &out, std::string &error,
                  Lower lower) {
  for (const Function &f : in.module.functions) {
    std::string text;
    if (!lower(f, text, error))
      return false;
    out += text;
  }
  return true;
}

/// The kernel plan for the host, or the GPU's with `--target nvptx`.
bool emitPlan(const EmitInput &in, std::string &out, std::string &) {
  const Target &target =
      in.options.target == "nvptx" ? nvptxTarget() : cpuTarget();
  for (const Function &f : in.module.functions) {
    if (target.caps().launchesKernels && !f.callees.empty()) {
      Function flat = f; // as the GPU lowers it (GpuKernel.cpp: lowerBoth)
      inlineCalls(flat);
      out += printKernelPlan(flat, planKernels(flat, target.caps()));
      continue;
    }
    out += printKernelPlan(f, planKernels(f, target.caps()));
    for (const Function &callee : f.callees)
      out += printKernelPlan(callee, planKernels(callee, target.caps()));
  }
  return true;
}

bool emitLlvm(const EmitInput &in, std::string &out, std::string &error) {
  return eachFunction(in, out, error, lowerToLLVMText);
}

bool emitAsm(const EmitInput &in, std::string &out, std::string &error) {
  return eachFunction(in, out, error, lowerToAssembly);
}

bool emitPtx(const EmitInput &in, std::string &out, std::string &error) {
  return eachFunction(
      in, out, error,
      [&](const Function &f, std::string &text, std::string &err) {
        return lowerToPtx(f, in.options.arch, text, err);
      });
}

/// The stages in pipeline order (the order they print in).
const Stage kStages[] = {
    {"ast", true, emitAst},    {"ir", false, emitIr},
    {"plan", false, emitPlan}, {"llvm", false, emitLlvm},
    {"asm", false, emitAsm},   {"ptx", false, emitPtx},
};

std::string stageNames() {
  std::string s;
  for (const Stage &st : kStages)
    s += std::string(s.empty() ? "" : ", ") + st.name;
  return s;
}

/// The stages `--emit` names, in pipeline order, each once. `--target
/// nvptx` makes asm mean ptx. False with a usage error when one is unknown.
bool selectStages(const Options &o, std::vector<const Stage *> &out) {
  if (o.emit.empty()) {
    usageError("emit needs --emit=STAGE[,STAGE...] (stages: " + stageNames() +
               ")");
    return false;
  }
  std::vector<bool> wanted(std::size(kStages), false);
  std::stringstream list(o.emit);
  std::string name;
  while (std::getline(list, name, ',')) {
    if (name == "asm" && o.target == "nvptx")
      name = "ptx";
    size_t i = 0;
    while (i < std::size(kStages) && name != kStages[i].name)
      ++i;
    if (i == std::size(kStages)) {
      usageError("not supported: --emit=" + name +
                 " (available: " + stageNames() + ")");
      return false;
    }
    wanted[i] = true;
  }
  for (size_t i = 0; i < std::size(kStages); ++i)
    if (wanted[i])
      out.push_back(&kStages[i]);
  return true;
}

/// Loads the input and, when a stage needs IR, the functions (`--fn` or all
/// of them): elaborated from a `.tsl` file (for the `--arg` types when
/// given, else symbolic) or parsed from a `.tslir` file. Reports failures.
bool loadInput(const Options &o, bool needIr, SourceManager &sm,
               DiagnosticEngine &diags, ModuleLoader &loader, EmitInput &in) {
  if (isIrFile(o.files[0])) {
    if (!o.args.empty()) {
      usageError("emit takes no --arg for a .tslir file (its IR is already "
                 "a variant)");
      return false;
    }
    Function fn;
    if (o.fn.empty())
      return loadIrFile(o.files[0], sm, diags, in.module);
    std::vector<ArgSpec> none;
    if (!compileSelected(o, false, sm, diags, none, fn))
      return false;
    in.module.functions.push_back(std::move(fn));
    return true;
  }
  configure(loader, o);
  in.source = loader.load(o.files[0]);
  if (!in.source || !needIr)
    return in.source != nullptr;
  std::vector<std::string> names;
  if (!o.fn.empty())
    names.push_back(o.fn);
  else
    for (const ast::FnDecl &f : in.source->ast->fns)
      names.push_back(f.name);
  std::vector<ArgSpec> args;
  if (!parseArgs(o, false, args))
    return false;
  for (const std::string &name : names) {
    Function fn;
    bool ok =
        o.args.empty()
            ? elaborateFunction(*in.source, name, ElaborateOptions{}, diags, fn)
            : compileForArgs(loader, o.files[0], name, args, diags, fn);
    if (!ok)
      return false;
    in.module.functions.push_back(std::move(fn));
  }
  return true;
}

} // namespace

int cmdEmit(const Options &o, SourceManager &sm, DiagnosticEngine &diags) {
  if (o.files.size() != 1)
    return usageError("emit needs exactly one file");
  std::vector<const Stage *> stages;
  if (!selectStages(o, stages))
    return 1;
  if (!o.target.empty() && o.target != "host" && o.target != "nvptx")
    return usageError("not supported: --target " + o.target +
                      " (available: host, nvptx)");
  bool needIr = false;
  for (const Stage *st : stages) {
    if (st->fromSource && isIrFile(o.files[0]))
      return usageError(std::string("--emit=") + st->name +
                        " needs a .tsl file (" + o.files[0] + " is IR text)");
    needIr |= !st->fromSource;
  }
  ModuleLoader loader(sm, diags);
  EmitInput in{o, sm, nullptr, {}};
  if (!loadInput(o, needIr, sm, diags, loader, in)) {
    diags.finish();
    return 1;
  }
  std::string text;
  for (const Stage *st : stages) {
    if (stages.size() > 1)
      text += std::string("==== ") + st->name + " ====\n";
    std::string error;
    if (!st->print(in, text, error)) {
      std::cerr << "tslc: error: " << error << "\n";
      return 1;
    }
  }
  if (o.output.empty()) {
    std::cout << text;
  } else if (!(std::ofstream(o.output, std::ios::binary) << text)) {
    std::cerr << "tslc: error: cannot write '" << o.output << "'\n";
    return 1;
  }
  return 0;
}

} // namespace tsl
