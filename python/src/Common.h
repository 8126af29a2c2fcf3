#pragma once
/// \file Shared pieces of the Python extension tsl._tsl: raising tsl.Error
/// and the Python classes tsl/__init__.py registers. The extension is the
/// only code in the project that throws: nanobind returns a Python
/// exception to the interpreter by a C++ throw (nb::python_error), always
/// after the Python error is set; TSL's libraries below never throw.

#include "support/Error.h"

#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>

#include <string>

namespace tsl::py {

namespace nb = nanobind;

/// The Python class \p name that tsl/__init__.py registered with
/// `_tsl._register` (Error, Stats, Variant, GuardReport, Check, Expr).
/// Raises RuntimeError when the package did not register it (the extension
/// imported on its own).
nb::object pyClass(const char *name);

/// Keeps \p classes (name -> class) for pyClass (`_tsl._register`).
void registerClasses(nb::dict classes);

/// The `kind` attribute of tsl.Error for \p kind: "syntax", "type",
/// "shape", "io", "not_found", "invalid_argument", "no_variant",
/// "cache_limit", "runtime_check", "resource", "unsupported", "internal".
std::string kindName(ErrorKind kind);

/// Raises tsl.Error(message, kind): sets the Python error and throws
/// nb::python_error. \p message is the clang-style text
/// (`file:line:col: error: ...`, or `error: ...` without a location).
[[noreturn]] void raiseError(ErrorKind kind, const std::string &message);

/// Turns a library error into clang-style text: rendered diagnostics are
/// kept; a message that starts with its location (a failed run-time check:
/// `m.tsl:3:5: runtime check failed: ...`) becomes `m.tsl:3:5: error: ...`
/// with its source line and a caret; anything else gets an `error: `
/// prefix. The line comes from \p text when the location names the file
/// \p textName (a module compiled from a string), else from the file.
std::string clangStyle(const Error &error, const std::string &textName,
                       const std::string *text);

} // namespace tsl::py
