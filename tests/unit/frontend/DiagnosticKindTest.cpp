// Diagnostics carry an ErrorKind (support/Error.h): the parser's are Syntax,
// element-type errors Type, size rules Shape; the JIT turns the first one
// into the Error the C API maps to a status.
#include "frontend/Elaborator.h"

#include <gtest/gtest.h>
#include <sstream>

using namespace tsl;

namespace {

/// The kind of the first error from checking \p source generically.
std::optional<ErrorKind> firstErrorKind(const std::string &source) {
  SourceManager sm;
  std::ostringstream text;
  DiagnosticEngine diags(sm, text);
  ModuleLoader loader(sm, diags);
  const LoadedModule *m = loader.loadText("kind.tsl", source);
  if (m)
    checkModule(*m, diags);
  const Diagnostic *first = diags.firstError();
  if (!first)
    return std::nullopt;
  return first->kind;
}

TEST(DiagnosticKind, ParserErrorsAreSyntax) {
  EXPECT_EQ(firstErrorKind("fn f(x: f32[N]) -> f32[N] { return x + ; }"),
            ErrorKind::Syntax);
  EXPECT_EQ(firstErrorKind("fn f() -> i64 { return 99999999999999999999; }"),
            ErrorKind::Syntax);
}

TEST(DiagnosticKind, ElementTypesAreType) {
  EXPECT_EQ(firstErrorKind("fn f(x: i32[N]) -> i32[N] { return exp(x); }"),
            ErrorKind::Type);
  EXPECT_EQ(
      firstErrorKind("fn f(x: f32[N], y: f64[N]) -> f32[N] { return x + y; }"),
      ErrorKind::Type);
  EXPECT_EQ(firstErrorKind("fn f(x: f32[N]) -> f32[N] { return nope(x); }"),
            ErrorKind::Type);
}

TEST(DiagnosticKind, SizeRulesAreShape) {
  EXPECT_EQ(firstErrorKind("fn f(x: f32[2, 3], y: f32[4, 5]) -> f32[2, 5] { "
                           "return x @ y; }"),
            ErrorKind::Shape);
  EXPECT_EQ(firstErrorKind("fn f(x: f32[3]) -> f32[3] { check(3 > 4); return "
                           "x; }"),
            ErrorKind::Shape);
}

TEST(DiagnosticKind, NoErrorNoKind) {
  EXPECT_EQ(firstErrorKind("fn f(x: f32[N]) -> f32[N] { return x; }"),
            std::nullopt);
}

} // namespace
