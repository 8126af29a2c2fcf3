// `tslc opt FILE.tslir --pass=NAME[,NAME...]`: runs IR passes by name on IR
// text and prints the IR, as mlir-opt does; and the `--print-after` hook
// that `tslc emit` shares.
#include "tools/tslc/Tslc.h"

#include "ir/IrText.h"
#include "ir/Pipeline.h"
#include "ir/Verifier.h"

#include <fstream>
#include <iomanip>
#include <iostream>

namespace tsl {

bool printAfterHook(const std::string &names, PipelineOptions &options) {
  if (names.empty())
    return true;
  std::vector<std::string> list;
  std::string error;
  if (!parsePassList(names, /*allowAll=*/true, list, error)) {
    usageError("--print-after: " + error);
    return false;
  }
  options.afterPass = [list](std::string_view pass, const Function &fn) {
    for (const std::string &n : list)
      if (n == "all" || n == pass) {
        std::cerr << "// *** IR Dump After " << pass << " on " << fn.name
                  << " ***\n"
                  << printFunction(fn) << "\n";
        return;
      }
  };
  return true;
}

namespace {

int listPasses() {
  for (const PassInfo &p : registeredPasses())
    std::cout << "  " << std::left << std::setw(18) << p.name << p.description
              << (p.inPipeline ? "" : " [opt only]") << "\n";
  return 0;
}

} // namespace

int cmdOpt(const Options &o, SourceManager &sm, DiagnosticEngine &diags) {
  if (o.listPasses)
    return listPasses();
  if (o.files.size() != 1 || o.passes.empty())
    return usageError("opt needs one .tslir file and --pass=NAME[,NAME...] "
                      "(--list-passes lists them)");
  if (!isIrFile(o.files[0]))
    return usageError("opt needs IR text (.tslir, as emit --emit=ir prints "
                      "it), not '" +
                      o.files[0] + "'");
  PassContext ctx;
  std::vector<std::string> names;
  std::string error;
  if (!parsePassList(o.passes, false, names, error) ||
      !printAfterHook(o.printAfter, ctx.options))
    return error.empty() ? 1 : usageError(error);
  Module module;
  if (!loadIrFile(o.files[0], sm, diags, module)) {
    diags.finish();
    return 1;
  }
  bool found = o.fn.empty();
  for (Function &fn : module.functions) {
    if (!o.fn.empty() && fn.name != o.fn)
      continue;
    found = true;
    if (!runPasses(fn, o.passes, ctx, error) || !verifyFunction(fn, error)) {
      std::cerr << "tslc: error: internal error: after --pass=" << o.passes
                << ", '" << fn.name << "' does not verify: " << error << "\n";
      return 1;
    }
  }
  if (!found)
    return usageError("no function named '" + o.fn + "' in " + o.files[0]);
  std::string text = printModule(module);
  if (o.output.empty())
    std::cout << text;
  else if (!(std::ofstream(o.output, std::ios::binary) << text)) {
    std::cerr << "tslc: error: cannot write '" << o.output << "'\n";
    return 1;
  }
  return 0;
}

} // namespace tsl
