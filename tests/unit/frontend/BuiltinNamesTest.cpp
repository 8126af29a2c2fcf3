// builtinNames() (frontend/Elaborator.h) is the table calls are resolved
// from: the same names as before it existed, every builtin Ops.def spells,
// each one reaching its handler, and the spelled ones building their op.
#include "frontend/Elaborator.h"
#include "ir/OpInfo.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <sstream>

using namespace tsl;

namespace {

// frontend/Builtins.cpp's unaryBuiltins() and otherBuiltins() before the
// table, and the hand-written builtins added since (issues 16, 32 and 35).
const std::set<std::string> kOldNames = {
    "clamp",         "stack",         "unsqueeze",   "exp",
    "log",           "sqrt",          "rsqrt",       "tanh",
    "sigmoid",       "relu",          "gelu",        "abs",
    "sin",           "cos",           "pow",         "max",
    "min",           "where",         "cast",        "sum",
    "mean",          "argmax",        "matmul",      "reshape",
    "transpose",     "permute",       "expand",      "concat",
    "pad",           "arange",        "zeros",       "ones",
    "full",          "conv2d",        "max_pool2d",  "nonzero",
    "masked_select", "unique",        "item",        "index_select",
    "topk",          "size",          "numel",       "argmin",
    "cumsum",        "cumprod",       "gather",      "sort",
    "argsort",       "scatter",       "scatter_add", "grad",
    "vjp",           "stop_gradient", "index_add",   "masked_scatter",
    "squeeze",       "var",           "std",         "masked_fill"};

/// Checks \p source generically; the diagnostics as text, and \p fn the
/// elaborated `f` when it succeeded.
std::string elaborate(const std::string &source, Function *fn = nullptr) {
  SourceManager sm;
  std::ostringstream text;
  DiagnosticEngine diags(sm, text);
  ModuleLoader loader(sm, diags);
  const LoadedModule *m = loader.loadText("builtins.tsl", source);
  if (!m)
    return text.str();
  ElaborateOptions options;
  options.probe = [](const ShapeEnv &, const ProbeResult &) {};
  Function f;
  if (elaborateFunction(*m, "f", options, diags, f) && fn)
    *fn = std::move(f);
  return text.str();
}

TEST(BuiltinNames, AreSortedUniqueAndTheSameAsBefore) {
  const std::vector<std::string> &names = builtinNames();
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
  EXPECT_EQ(std::adjacent_find(names.begin(), names.end()), names.end());
  for (const std::string &old : kOldNames)
    EXPECT_TRUE(std::binary_search(names.begin(), names.end(), old)) << old;
  // Names added since come from the op table's Builtin column.
  std::set<std::string> spelled;
  for (const OpTraits &op : kOpTable)
    spelled.insert(std::string(op.builtin));
  for (const std::string &name : names)
    EXPECT_TRUE(kOldNames.count(name) || spelled.count(name)) << name;
}

TEST(BuiltinNames, IncludeEverySpellingOfTheOpTable) {
  const std::vector<std::string> &names = builtinNames();
  for (const OpTraits &op : kOpTable) {
    if (op.builtin.empty())
      continue;
    EXPECT_TRUE(
        std::binary_search(names.begin(), names.end(), std::string(op.builtin)))
        << op.builtin;
  }
}

TEST(BuiltinNames, EachNameReachesItsHandler) {
  // Called without arguments, every builtin binds its parameters and asks
  // for the first one (an unknown name would be "unknown name 'NAME'").
  for (const std::string &name : builtinNames()) {
    std::string errors =
        elaborate("fn f() -> i64 { let y = " + name + "(); return 0; }");
    EXPECT_NE(errors.find("'" + name + "' needs argument"), std::string::npos)
        << name << ": " << errors;
  }
  EXPECT_NE(elaborate("fn f() -> i64 { let y = nope(); return 0; }")
                .find("unknown name 'nope'"),
            std::string::npos);
}

TEST(BuiltinNames, SpelledBuiltinsBuildTheirOp) {
  for (const OpTraits &op : kOpTable) {
    if (op.builtin.empty())
      continue;
    std::string b(op.builtin);
    std::string call = op.maxOperands == 2 ? b + "(x, x)" : b + "(x)";
    Function fn;
    std::string errors =
        elaborate("fn f(x: f32[N]) { let y = " + call + "; return y; }", &fn);
    // Ops with data-dependent sizes return other types; only the op matters.
    bool found = false;
    for (const Operation &o : fn.ops)
      found |= o.code == op.code;
    EXPECT_TRUE(found) << b << ": " << errors;
  }
}

} // namespace
