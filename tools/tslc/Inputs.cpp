// tslc's command line and inputs: options, `--arg` flags, `.tsl` and
// `.tslir` files.
#include "tools/tslc/Tslc.h"

#include "backend/cpu/CpuTarget.h"
#include "backend/nvptx/NvptxTarget.h"
#include "ir/IrText.h"
#include "ir/Pipeline.h"
#include "ir/Verifier.h"

#include <iostream>
#include <sstream>

namespace tsl {

bool parseOptions(int argc, char **argv, Options &o, std::string &error) {
  if (argc < 2) {
    error = "missing command";
    return false;
  }
  o.command = argv[1];
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&](const std::string &flag, std::string &out) {
      if (a.rfind(flag + "=", 0) == 0) {
        out = a.substr(flag.size() + 1);
        return true;
      }
      if (a == flag) {
        if (i + 1 >= argc) {
          error = flag + " needs a value";
          return false;
        }
        out = argv[++i];
        return true;
      }
      return false;
    };
    std::string v;
    if (a == "--json")
      o.json = true;
    else if (a == "--stats")
      o.stats = true;
    else if (a == "--all-dynamic")
      o.allDynamic = true;
    else if (a == "--list-passes")
      o.listPasses = true;
    else if (value("--fn", o.fn) || value("--emit", o.emit) ||
             value("-o", o.output) || value("--backend", o.backend) ||
             value("--calls", o.calls) || value("--target", o.target) ||
             value("--arch", o.arch) || value("--pass", o.passes) ||
             value("--print-after", o.printAfter) ||
             value("--donate", o.donate)) {
      if (!error.empty())
        return false;
    } else if (value("--arg", v)) {
      o.args.push_back(v);
    } else if (a.size() > 2 && a.rfind("-I", 0) == 0) {
      o.importDirs.push_back(a.substr(2));
    } else if (value("-I", v)) {
      o.importDirs.push_back(v);
    } else if (!error.empty()) {
      return false;
    } else if (!a.empty() && a[0] == '-') {
      error = "unknown option '" + a + "'";
      return false;
    } else {
      o.files.push_back(a);
    }
  }
  return error.empty();
}

std::set<std::string> Options::donatedParams() const {
  std::set<std::string> names;
  std::stringstream list(donate);
  for (std::string name; std::getline(list, name, ',');)
    if (!name.empty())
      names.insert(name);
  return names;
}

void configure(ModuleLoader &loader, const Options &o) {
  for (const std::string &dir : o.importDirs)
    loader.addImportDir(dir);
}

int usageError(const std::string &message) {
  std::cerr << "tslc: error: " << message
            << "\n(run 'tslc --help' for usage)\n";
  return 1;
}

bool parseArgs(const Options &o, bool withData, std::vector<ArgSpec> &out) {
  for (const std::string &a : o.args) {
    ArgSpec spec;
    std::string error;
    if (!parseArgSpec(a, withData, spec, error)) {
      usageError(error);
      return false;
    }
    out.push_back(std::move(spec));
  }
  return true;
}

bool isIrFile(const std::string &path) {
  static const std::string ext = ".tslir";
  return path.size() > ext.size() &&
         path.compare(path.size() - ext.size(), ext.size(), ext) == 0;
}

/// The location of `func @NAME` in \p file, or an invalid one.
static SourceRange functionRange(const SourceManager &sm, uint32_t file,
                                 const std::string &name) {
  std::string_view text = sm.text(file);
  std::string head = "func @" + name + "(";
  size_t at = text.find(head);
  if (at == std::string_view::npos)
    return SourceRange();
  return SourceRange(sm.locAt(file, at), sm.locAt(file, at + head.size() - 1));
}

bool loadIrFile(const std::string &path, SourceManager &sm,
                DiagnosticEngine &diags, Module &out) {
  std::string error;
  uint32_t file = sm.findFile(path);
  if (!file)
    file = sm.addFile(path, error);
  if (!file) {
    diags.error(SourceRange(), error);
    return false;
  }
  std::string text(sm.text(file));
  IrParseError parseError;
  if (!parseModule(text, out, parseError)) {
    diags.error(
        SourceRange(sm.locAt(file, parseError.offset),
                    sm.locAt(file, parseError.offset + parseError.length)),
        parseError.message);
    return false;
  }
  for (const Function &fn : out.functions) {
    if (Expected<void> verified = verifyFunction(fn); !verified) {
      diags.error(functionRange(sm, file, fn.name),
                  "function '" + fn.name +
                      "' does not verify: " + verified.error().message);
      return false;
    }
  }
  return true;
}

bool targetsGpu(const Options &o) {
  return o.target == "nvptx" || o.backend == "cuda" ||
         o.backend == "gpu-emulator";
}

/// compileSelected for a `.tslir` file: the function `--fn` as parsed.
static bool selectFromIr(const Options &o, bool withData, SourceManager &sm,
                         DiagnosticEngine &diags, std::vector<ArgSpec> &args,
                         Function &fn) {
  if (o.allDynamic) {
    usageError("--all-dynamic applies to .tsl files (the IR of '" + o.files[0] +
               "' is already a variant)");
    return false;
  }
  if (!withData && !o.args.empty()) {
    usageError(o.command + " takes no --arg for a .tslir file (its IR is "
                           "already a variant)");
    return false;
  }
  if (!parseArgs(o, withData, args))
    return false;
  Module module;
  if (!loadIrFile(o.files[0], sm, diags, module)) {
    diags.finish();
    return false;
  }
  for (Function &f : module.functions) {
    if (f.name != o.fn)
      continue;
    for (const ArgSpec &a : args) {
      bool known = false;
      for (const Param &p : f.params)
        known |= p.name == a.name;
      if (!known) {
        usageError("'" + f.name + "' has no parameter named '" + a.name + "'");
        return false;
      }
    }
    fn = std::move(f);
    if (targetsGpu(o) && !fn.callees.empty()) {
      PassContext ctx; // the GPU's host code has no calls
      (void)runPasses(fn, "inline-calls", ctx); // a registered pass
    }
    return true;
  }
  diags.error(SourceRange(),
              "no function named '" + o.fn + "' in " + o.files[0]);
  diags.finish();
  return false;
}

bool compileSelected(const Options &o, bool withData, SourceManager &sm,
                     DiagnosticEngine &diags, std::vector<ArgSpec> &args,
                     Function &fn) {
  if (isIrFile(o.files[0]))
    return selectFromIr(o, withData, sm, diags, args, fn);
  if (!parseArgs(o, withData, args))
    return false;
  ModuleLoader loader(sm, diags);
  configure(loader, o);
  if (compileForArgs(
          loader, o.files[0], o.fn, args, diags, fn, o.allDynamic,
          (targetsGpu(o) ? nvptxTarget() : cpuTarget()).pipelineOptions(),
          o.donatedParams()))
    return true;
  diags.finish();
  return false;
}

} // namespace tsl
