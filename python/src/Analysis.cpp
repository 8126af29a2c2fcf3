// fn.guards(...), tsl.prove and tsl.simplify: tslc guards and the REPL's
// :prove and :simplify as Python functions.
#include "python/src/Analysis.h"
#include "python/src/Function.h"

#include "frontend/ModuleLoader.h"
#include "ir/Function.h"
#include "tools/driver/Driver.h"
#include "tools/driver/ReplSession.h"

#include <sstream>

namespace tsl::py {

using namespace nb::literals;

namespace {

/// `NAME=VALUE` for parseArgSpec from one keyword of fn.guards(...).
std::string exampleSpec(const ModuleState &module, const std::string &name,
                        nb::handle value) {
  if (PyUnicode_Check(value.ptr()))
    return name + "=" + nb::cast<std::string>(value);
  if (PyLong_Check(value.ptr()))
    return name + "=" + nb::cast<std::string>(nb::str(value));
  // An array: its element type and shape.
  ImportedTensor imported;
  rt::CallArg arg;
  if (!importTensor(value, module.placement, name, imported, arg, "example"))
    raiseError(ErrorKind::InvalidArgument,
               "error: example '" + name + "'" +
                   " must be a type such as \"f32[4, 8]\", an int, or an "
                   "array");
  std::string type = std::string(dtypeName(arg.dtype)) + "[";
  for (size_t i = 0; i < arg.shape.size(); ++i)
    type += (i ? "," : "") + std::to_string(arg.shape[i]);
  return name + "=" + type + "]";
}

nb::object checkObject(const SymCond &cond, const Location &loc,
                       const std::string &reason, const std::string &op) {
  return pyClass("Check")("expr"_a = cond.str(), "origin"_a = loc.str(),
                          "reason"_a = reason, "op"_a = op);
}

std::string trimmed(std::string s) {
  while (!s.empty() && s.back() == '\n')
    s.pop_back();
  return s;
}

/// Runs the declarations of \p dims (split at ';', one REPL entry each) and
/// then \p command in a fresh REPL session; returns what the command
/// printed, or raises tsl.Error with the REPL's diagnostics.
std::string replCommand(const std::string &dims, const std::string &command) {
  std::ostringstream out, err;
  bool ok = true;
  size_t before = 0;
  {
    nb::gil_scoped_release unlocked;
    ReplSession session(out, err);
    size_t start = 0;
    while (ok && start < dims.size()) {
      size_t end = std::min(dims.find(';', start), dims.size());
      std::string entry = dims.substr(start, end - start);
      start = end + 1;
      if (entry.find_first_not_of(" \t\r\n") == std::string::npos)
        continue;
      ok = session.execute(entry.substr(entry.find_first_not_of(" \t\r\n")) +
                           ";");
    }
    before = out.str().size();
    if (ok)
      ok = session.execute(command);
  }
  if (!ok)
    raiseError(ErrorKind::Type, trimmed(err.str()));
  return trimmed(out.str().substr(before));
}

} // namespace

nb::object guardReport(const ModuleState &module, const std::string &function,
                       nb::kwargs examples) {
  std::vector<ArgSpec> specs;
  for (auto [key, value] : examples) {
    std::string text = exampleSpec(module, nb::cast<std::string>(key), value);
    ArgSpec spec;
    std::string error;
    if (!parseArgSpec(text, /*withData=*/false, spec, error))
      raiseError(ErrorKind::InvalidArgument, "error: " + error);
    specs.push_back(std::move(spec));
  }
  SourceManager sm;
  std::ostringstream text;
  DiagnosticEngine diags(sm, text);
  ::tsl::Function fn;
  bool ok;
  {
    nb::gil_scoped_release unlocked;
    ModuleLoader loader(sm, diags);
    if (module.text)
      loader.loadText(module.name, *module.text);
    ok = compileForArgs(loader, module.name, function, specs, diags, fn);
  }
  if (!ok) {
    const Diagnostic *first = diags.firstError();
    raiseError(first ? first->kind : ErrorKind::Internal, trimmed(text.str()));
  }
  nb::list guards, assertions, results;
  for (const Check &g : fn.guards)
    guards.append(checkObject(g.cond, g.loc, g.reason, g.op));
  for (const Operation &op : fn.ops)
    if (op.code == OpCode::Assert)
      assertions.append(checkObject(op.condAttr("cond"), op.loc,
                                    op.strAttr("message"), "check"));
  for (ValueId r : fn.results)
    results.append(fn.type(r).str());
  return pyClass("GuardReport")(
      "function"_a = function, "guards"_a = guards, "assertions"_a = assertions,
      "results"_a = results,
      "text"_a = trimmed(formatGuardReport(fn, /*json=*/false)));
}

nb::object prove(const std::string &expr, const std::string &dims) {
  std::string answer = replCommand(dims, ":prove " + expr);
  if (answer == "true")
    return nb::make_tuple(true, nb::none());
  if (answer == "unknown")
    return nb::make_tuple(nb::none(), nb::none());
  const std::string prefix = "false (counterexample: ";
  if (answer.rfind(prefix, 0) != 0 || answer.back() != ')')
    return nb::make_tuple(false, nb::none());
  // "I = 4, S = 4"
  nb::dict counterexample;
  std::string list =
      answer.substr(prefix.size(), answer.size() - prefix.size() - 1);
  size_t start = 0;
  while (start < list.size()) {
    size_t end = std::min(list.find(", ", start), list.size());
    std::string item = list.substr(start, end - start);
    size_t eq = item.find(" = ");
    if (eq != std::string::npos) {
      std::string value = item.substr(eq + 3);
      counterexample[item.substr(0, eq).c_str()] =
          nb::int_(nb::str(value.c_str()));
    }
    start = end + 2;
  }
  return nb::make_tuple(false, counterexample);
}

nb::object simplify(const std::string &expr, const std::string &dims) {
  return pyClass("Expr")(replCommand(dims, ":simplify " + expr));
}

} // namespace tsl::py
