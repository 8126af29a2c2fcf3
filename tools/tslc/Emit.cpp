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
#include "ir/Pipeline.h"

#include <fstream>
#include <iostream>
#include <sstream>

namespace tsl {

namespace {

/// What the stages print from: the loaded source (`.tsl` only) and the IR of
/// the selected functions (elaborated, or parsed from a `.tslir` file), as
/// the pipeline leaves it for the host and for the GPU (calls inlined).
struct EmitInput {
  const Options &options;
  const SourceManager &sm;
  const LoadedModule *source = nullptr;
  Module module; ///< the host's (when a stage needs it)
  Module device; ///< the GPU's (when a stage needs it)
  bool gpu() const { return options.target == "nvptx"; }
};

using StageFn = bool (*)(const EmitInput &in, std::string &out,
                         std::string &error);

/// What a stage prints from.
enum class Needs {
  Source,   ///< the AST (a `.tsl` file, no IR)
  TargetIr, ///< the IR of the host, or the GPU's with `--target nvptx`
  HostIr,   ///< the IR of the host
  GpuIr,    ///< the IR of the GPU
};

/// One stage `--emit` can print.
struct Stage {
  const char *name;
  Needs needs;
  StageFn print;
};

bool emitAst(const EmitInput &in, std::string &out, std::string &) {
  out += printAst(*in.source->ast, in.sm);
  return true;
}

/// The IR the host compiles, or with `--target nvptx` the GPU's.
bool emitIr(const EmitInput &in, std::string &out, std::string &) {
  out += printModule(in.gpu() ? in.device : in.module);
  return true;
}

/// Applies \p lower to every function of \p m, appending the texts.
template <typename Lower>
bool eachFunction(const Module &m, std::string &out, std::string &error,
                  Lower lower) {
  for (const Function &f : m.functions) {
    Expected<std::string> text = lower(f);
    if (!text) {
      error = text.error().message;
      return false;
    }
    out += *text;
  }
  return true;
}

/// The kernel plan for the host, or the GPU's with `--target nvptx`.
bool emitPlan(const EmitInput &in, std::string &out, std::string &) {
  const Target &target = in.gpu() ? nvptxTarget() : cpuTarget();
  for (const Function &f : (in.gpu() ? in.device : in.module).functions) {
    out += printKernelPlan(f, planKernels(f, target.caps()));
    for (const Function &callee : f.callees)
      out += printKernelPlan(callee, planKernels(callee, target.caps()));
  }
  return true;
}

bool emitLlvm(const EmitInput &in, std::string &out, std::string &error) {
  return eachFunction(in.module, out, error, lowerToLLVMText);
}

bool emitAsm(const EmitInput &in, std::string &out, std::string &error) {
  return eachFunction(in.module, out, error, lowerToAssembly);
}

bool emitPtx(const EmitInput &in, std::string &out, std::string &error) {
  return eachFunction(in.device, out, error, [&](const Function &f) {
    return lowerToPtx(f, in.options.arch);
  });
}

/// The stages in pipeline order (the order they print in).
const Stage kStages[] = {
    {"ast", Needs::Source, emitAst},     {"ir", Needs::TargetIr, emitIr},
    {"plan", Needs::TargetIr, emitPlan}, {"llvm", Needs::HostIr, emitLlvm},
    {"asm", Needs::HostIr, emitAsm},     {"ptx", Needs::GpuIr, emitPtx},
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

/// Elaborates \p names of the loaded source for the pipeline \p pipeline
/// into \p out, reporting to \p diags.
bool elaborateAll(const Options &o, const std::vector<std::string> &names,
                  const PipelineOptions &pipeline, ModuleLoader &loader,
                  DiagnosticEngine &diags, EmitInput &in, Module &out) {
  std::vector<ArgSpec> args;
  if (!parseArgs(o, false, args))
    return false;
  ElaborateOptions options;
  options.pipeline = pipeline;
  options.donated = o.donatedParams();
  for (const std::string &name : names) {
    Function fn;
    bool ok = o.args.empty()
                  ? elaborateFunction(*in.source, name, options, diags, fn)
                  : compileForArgs(loader, o.files[0], name, args, diags, fn,
                                   false, pipeline, options.donated);
    if (!ok)
      return false;
    out.functions.push_back(std::move(fn));
  }
  return true;
}

/// The IR of a `.tslir` file (all functions or `--fn`), as the host takes
/// it and, with the `inline-calls` pass, as the GPU does.
bool loadIr(const Options &o, bool host, bool gpu, SourceManager &sm,
            DiagnosticEngine &diags, EmitInput &in) {
  if (!o.args.empty()) {
    usageError("emit takes no --arg for a .tslir file (its IR is already "
               "a variant)");
    return false;
  }
  if (!o.printAfter.empty()) {
    usageError("--print-after needs a .tsl file (for IR text: tslc opt " +
               o.files[0] + " --pass=NAME)");
    return false;
  }
  if (o.fn.empty()) {
    if (!loadIrFile(o.files[0], sm, diags, in.module))
      return false;
  } else {
    std::vector<ArgSpec> none;
    Function fn;
    Options hostOnly = o; // the file's function as parsed
    hostOnly.target.clear();
    if (!compileSelected(hostOnly, false, sm, diags, none, fn))
      return false;
    in.module.functions.push_back(std::move(fn));
  }
  if (gpu) {
    in.device = host ? in.module : std::move(in.module);
    for (Function &f : in.device.functions) {
      PassContext ctx; // the GPU's host code has no calls
      (void)runPasses(f, "inline-calls", ctx); // a registered pass
    }
  }
  return true;
}

/// Loads the input and, when a stage needs IR, the functions (`--fn` or all
/// of them) for the host (\p host) and for the GPU (\p gpu): elaborated
/// from a `.tsl` file (for the `--arg` types when given, else symbolic) with
/// each target's pipeline options, or parsed from a `.tslir` file. The
/// first elaboration reports to \p diags and prints `--print-after`; the
/// second (both targets) is quiet: its warnings would repeat the first's.
bool loadInput(const Options &o, bool host, bool gpu, SourceManager &sm,
               DiagnosticEngine &diags, ModuleLoader &loader, EmitInput &in) {
  if (isIrFile(o.files[0]))
    return loadIr(o, host, gpu, sm, diags, in);
  configure(loader, o);
  in.source = loader.load(o.files[0]);
  if (!in.source || (!host && !gpu))
    return in.source != nullptr;
  std::vector<std::string> names;
  if (!o.fn.empty())
    names.push_back(o.fn);
  else
    for (const ast::FnDecl &f : in.source->ast->fns)
      names.push_back(f.name);
  // Host and GPU functions come from elaborations of their own: the host's
  // pipeline outlines calls, the GPU's keeps them inlined.
  PipelineOptions first =
      (host ? cpuTarget() : nvptxTarget()).pipelineOptions();
  if (!printAfterHook(o.printAfter, first) ||
      !elaborateAll(o, names, first, loader, diags, in,
                    host ? in.module : in.device))
    return false;
  if (!host || !gpu)
    return true;
  std::ostringstream quietText;
  DiagnosticEngine quiet(sm, quietText);
  if (elaborateAll(o, names, nvptxTarget().pipelineOptions(), loader, quiet, in,
                   in.device))
    return true;
  std::cerr << quietText.str();
  return false;
}

} // namespace

int cmdEmit(const Options &o, SourceManager &sm, DiagnosticEngine &diags) {
  if (o.files.size() != 1)
    return usageError("emit needs exactly one file");
  if (!o.donate.empty() && (o.fn.empty() || isIrFile(o.files[0])))
    return usageError("--donate needs --fn and a .tsl file (it names that "
                      "function's parameters)");
  std::vector<const Stage *> stages;
  if (!selectStages(o, stages))
    return 1;
  if (!o.target.empty() && o.target != "host" && o.target != "nvptx")
    return usageError("not supported: --target " + o.target +
                      " (available: host, nvptx)");
  bool host = false, gpu = false;
  for (const Stage *st : stages) {
    if (st->needs == Needs::Source && isIrFile(o.files[0]))
      return usageError(std::string("--emit=") + st->name +
                        " needs a .tsl file (" + o.files[0] + " is IR text)");
    host |= st->needs == Needs::HostIr ||
            (st->needs == Needs::TargetIr && o.target != "nvptx");
    gpu |= st->needs == Needs::GpuIr ||
           (st->needs == Needs::TargetIr && o.target == "nvptx");
  }
  if (!o.printAfter.empty() && !host && !gpu)
    return usageError("--print-after needs an IR stage (--emit=ir)");
  ModuleLoader loader(sm, diags);
  EmitInput in{o, sm, nullptr, {}, {}};
  if (!loadInput(o, host, gpu, sm, diags, loader, in)) {
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
