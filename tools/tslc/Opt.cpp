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
  Expected<std::vector<std::string>> parsed =
      parsePassList(names, /*allowAll=*/true);
  if (!parsed) {
    usageError("--print-after: " + parsed.error().message);
    return false;
  }
  options.afterPass = [list = std::move(*parsed)](std::string_view pass,
                                                  const Function &fn) {
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
  if (Expected<std::vector<std::string>> names = parsePassList(o.passes, false);
      !names)
    return usageError(names.error().message);
  if (!printAfterHook(o.printAfter, ctx.options))
    return 1;
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
    Expected<void> ran = runPasses(fn, o.passes, ctx);
    if (ran)
      ran = verifyFunction(fn);
    if (!ran) {
      std::cerr << "tslc: error: internal error: after --pass=" << o.passes
                << ", '" << fn.name
                << "' does not verify: " << ran.error().message << "\n";
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
