#pragma once
/// \file The textual form of the IR. Printing then parsing then printing
/// gives identical text (tested).

#include "ir/Function.h"

#include <string>

namespace tsl {

/// Prints one function in the textual IR form.
std::string printFunction(const Function &fn);
/// Prints every function of a module, separated by blank lines.
std::string printModule(const Module &module);

/// Parses the textual IR. Returns false with \p error ("line L: ...") on
/// malformed text; never crashes on any input.
bool parseModule(const std::string &text, Module &out, std::string &error);

} // namespace tsl
