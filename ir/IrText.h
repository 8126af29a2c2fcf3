#pragma once
/// \file The textual form of the IR. Printing then parsing then printing
/// gives identical text (tested).

#include "ir/Function.h"

#include <cstddef>
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

/// Where and why IR text failed to parse.
struct IrParseError {
  std::string message; ///< lower case, no location ("unknown op 'nope'")
  size_t offset = 0;   ///< byte offset of the error in the text
  size_t length = 0;   ///< bytes the offending token spans (0: a position)
  unsigned line = 0;   ///< 1-based line of `offset`
  unsigned col = 0;    ///< 1-based column of `offset` (bytes)
};

/// Parses the textual IR (any number of functions) and appends them to
/// \p out. Returns false on malformed text with the first error and its
/// location in \p error (an error at the end of the text has offset
/// text.size()); \p out then holds the functions parsed before the bad one.
/// Never crashes on any input. The functions are not verified
/// (verifyFunction).
bool parseModule(const std::string &text, Module &out, IrParseError &error);

/// parseModule with the error as one string, "line L: message".
bool parseModule(const std::string &text, Module &out, std::string &error);

} // namespace tsl
