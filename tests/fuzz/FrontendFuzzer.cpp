// libFuzzer target for the frontend: any bytes go through parsing, module
// checks and generic elaboration of every function. The only acceptable
// outcomes are success or diagnostics: never a crash, a hang, a sanitizer
// report or an escaping exception. See docs/testing.md for how to run it.
#include "frontend/Elaborator.h"
#include "frontend/Parser.h"

#include <cstddef>
#include <cstdint>
#include <sstream>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  tsl::SourceManager sm;
  std::ostringstream sink;
  tsl::DiagnosticEngine diags(sm, sink);
  tsl::ModuleLoader loader(sm, diags);
  loader.setStdlibDir(TSL_FUZZ_STDLIB_DIR);
  const tsl::LoadedModule *module = loader.loadText(
      "fuzz.tsl", std::string(reinterpret_cast<const char *>(data), size));
  if (module)
    tsl::checkModule(*module, diags);
  return 0;
}
