#pragma once
/// \file The textual form of the IR. Printing then parsing then printing
/// gives identical text (tested).

#include "ir/Function.h"

#include <string>
#include <vector>

namespace tsl {

/// Prints one function in the textual IR form.
std::string printFunction(const Function &fn);
/// Prints every function of a module, separated by blank lines.
std::string printModule(const Module &module);
/// The name printFunction gives each value of \p fn, indexed by ValueId:
/// `%` and the parameter's name, else `%0`, `%1`, ... numbering op results
/// in definition order.
std::vector<std::string> valueNames(const Function &fn);

/// Parses the textual IR. Returns false with \p error ("line L: ...") on
/// malformed text; never crashes on any input.
bool parseModule(const std::string &text, Module &out, std::string &error);

} // namespace tsl
