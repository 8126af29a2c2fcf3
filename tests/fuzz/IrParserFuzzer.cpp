// libFuzzer target for the textual IR parser (ir/IrParser.cpp): any bytes
// are parsed; a module that parses is verified (every shape rule re-run)
// and printed, and the printed text must parse again and print the same
// (print -> parse -> print is the identity, ir/IrText.h). Acceptable
// outcomes: an error message, or a module that round-trips. Anything else
// (a crash, a sanitizer report, a round trip that changes the text) traps.
#include "ir/IrText.h"
#include "ir/Verifier.h"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string text(reinterpret_cast<const char *>(data), size);
  tsl::Module module;
  std::string error;
  if (!tsl::parseModule(text, module, error))
    return 0;
  for (const tsl::Function &fn : module.functions)
    (void)tsl::verifyFunction(fn);
  std::string printed = tsl::printModule(module);
  tsl::Module again;
  if (!tsl::parseModule(printed, again, error)) {
    std::fprintf(stderr, "printed IR does not parse: %s\n%s\n", error.c_str(),
                 printed.c_str());
    __builtin_trap();
  }
  std::string reprinted = tsl::printModule(again);
  if (reprinted != printed) {
    std::fprintf(stderr,
                 "print -> parse -> print changed the text:\n%s\n---\n%s\n",
                 printed.c_str(), reprinted.c_str());
    __builtin_trap();
  }
  return 0;
}
