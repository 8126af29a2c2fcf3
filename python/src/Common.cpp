// tsl.Error and the registered Python classes.
#include "python/src/Common.h"

#include <algorithm>
#include <fstream>

namespace tsl::py {

namespace {
/// The classes tsl/__init__.py registered (a dict; one reference kept for
/// the life of the process, never released during interpreter shutdown).
PyObject *registry = nullptr;

/// Line \p line (1-based) of \p path's text, or of \p text when given;
/// false when there is no such line.
bool sourceLine(const std::string &path, const std::string *text, unsigned line,
                std::string &out) {
  std::string content;
  if (!text) {
    std::ifstream in(path, std::ios::binary);
    if (!in)
      return false;
    // A few MiB at most: only to show one line of a source file.
    content.resize(64u << 20);
    in.read(content.data(), static_cast<std::streamsize>(content.size()));
    content.resize(static_cast<size_t>(in.gcount()));
    text = &content;
  }
  size_t start = 0;
  for (unsigned l = 1; l < line; ++l) {
    start = text->find('\n', start);
    if (start == std::string::npos)
      return false;
    ++start;
  }
  size_t end = std::min(text->find('\n', start), text->size());
  out = text->substr(start, std::min<size_t>(end - start, 400));
  for (char &c : out)
    if (c == '\t')
      c = ' ';
  return true;
}

/// Splits "file:line:col" (the file may hold colons).
bool splitLocation(const std::string &loc, std::string &file, unsigned &line,
                   unsigned &col) {
  size_t c2 = loc.rfind(':');
  if (c2 == std::string::npos || c2 == 0)
    return false;
  size_t c1 = loc.rfind(':', c2 - 1);
  if (c1 == std::string::npos)
    return false;
  auto number = [&](size_t from, size_t to, unsigned &out) {
    out = 0;
    for (size_t i = from; i < to; ++i) {
      if (loc[i] < '0' || loc[i] > '9' || out > 1000000000u)
        return false;
      out = out * 10 + static_cast<unsigned>(loc[i] - '0');
    }
    return to > from;
  };
  if (!number(c1 + 1, c2, line) || !number(c2 + 1, loc.size(), col))
    return false;
  file = loc.substr(0, c1);
  return line > 0 && col > 0;
}

} // namespace

nb::object pyClass(const char *name) {
  PyObject *cls = registry ? PyDict_GetItemString(registry, name) : nullptr;
  if (!cls) {
    PyErr_Format(PyExc_RuntimeError,
                 "tsl._tsl: the class '%s' is not registered (import tsl, "
                 "not tsl._tsl alone)",
                 name);
    throw nb::python_error();
  }
  return nb::borrow(cls);
}

void registerClasses(nb::dict classes) {
  Py_XDECREF(registry);
  registry = classes.ptr();
  Py_INCREF(registry);
}

std::string kindName(ErrorKind kind) {
  // support/Error.h's name with '_' for ' ' ("not found" -> "not_found"): a
  // Python identifier-like value for tsl.Error.kind.
  std::string name = errorKindName(kind);
  std::replace(name.begin(), name.end(), ' ', '_');
  return name;
}

void raiseError(ErrorKind kind, const std::string &message) {
  nb::object cls = pyClass("Error");
  nb::object args = nb::make_tuple(message, kindName(kind));
  PyErr_SetObject(cls.ptr(), args.ptr());
  throw nb::python_error();
}

std::string clangStyle(const Error &error, const std::string &textName,
                       const std::string *text) {
  std::string m = error.message;
  while (!m.empty() && m.back() == '\n')
    m.pop_back();
  std::string first = m.substr(0, m.find('\n'));
  // Rendered diagnostics (compile errors) stay as they are.
  if (first.rfind("error: ", 0) == 0 ||
      first.find(": error: ") != std::string::npos ||
      first.find(": warning: ") != std::string::npos)
    return m;
  std::string file;
  unsigned line = 0, col = 0;
  if (error.location.empty() || first.rfind(error.location + ": ", 0) != 0 ||
      !splitLocation(error.location, file, line, col))
    return "error: " + m;
  // A failed run-time check: "m.tsl:3:5: runtime check failed: ...".
  std::string out =
      error.location + ": error: " + m.substr(error.location.size() + 2);
  std::string source;
  if (sourceLine(file, file == textName ? text : nullptr, line, source)) {
    out += "\n" + source + "\n" +
           std::string(std::min<size_t>(col - 1, source.size()), ' ') + "^";
  }
  return out;
}

} // namespace tsl::py
