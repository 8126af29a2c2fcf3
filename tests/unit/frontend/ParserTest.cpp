#include "frontend/Parser.h"

#include <chrono>
#include <gtest/gtest.h>
#include <sstream>

using namespace tsl;

namespace {

std::string repeat(const std::string &s, size_t n) {
  std::string out;
  out.reserve(s.size() * n);
  for (size_t i = 0; i < n; ++i)
    out += s;
  return out;
}

struct Parsed {
  std::unique_ptr<ast::Module> module;
  std::string errors;
};

Parsed parse(const std::string &text) {
  SourceManager sm;
  std::ostringstream out;
  DiagnosticEngine diags(sm, out);
  uint32_t f = sm.addBuffer("t.tsl", text);
  Parsed p;
  p.module = parseSource(sm, f, diags);
  p.errors = out.str();
  return p;
}

TEST(Parser, ParsesEveryDeclarationForm) {
  Parsed p = parse(R"(
import nn;
import "blocks/attn.tsl" as attn;
dim D = 768;
dim H: static;
dim B: dynamic;
dim S: dynamic in 1..4096;
dim K: dynamic, multiple_of 16;
dim U: unbacked in 0..1024;
fn f(x: f32[B: dynamic, 784], y: f32[*P, N], k: int dynamic, eps: f32 = 1e-5) -> (f32[N / 2], f32[?]) {
  let a: f32[B, 784] = x;
  let (b, c) = topk(y, k);
  check(N % 2 == 0, "even");
  if N > 16 { return (y[0:N / 2], b); } else if N == 0 { return (y, c); } else { return (y, b); }
}
)");
  ASSERT_NE(p.module, nullptr) << p.errors;
  EXPECT_EQ(p.module->imports.size(), 2u);
  EXPECT_EQ(p.module->dims.size(), 6u);
  ASSERT_EQ(p.module->fns.size(), 1u);
  EXPECT_EQ(p.module->fns[0].params.size(), 4u);
  EXPECT_EQ(p.module->fns[0].results.size(), 2u);
}

struct BadInput {
  std::string text;
  std::string message;
};

class Rejects : public ::testing::TestWithParam<BadInput> {};

TEST_P(Rejects, WithADiagnostic) {
  Parsed p = parse(GetParam().text);
  EXPECT_EQ(p.module, nullptr);
  EXPECT_NE(p.errors.find(GetParam().message), std::string::npos) << p.errors;
}

INSTANTIATE_TEST_SUITE_P(
    Parser, Rejects,
    ::testing::Values(
        BadInput{std::string(100000, '('), "nested too deeply"},
        BadInput{"fn f() { return " + std::string(100000, '[') + "; }",
                 "nested too deeply"},
        BadInput{std::string("fn \0\xff\xfe f", 9), "unexpected character"},
        BadInput{"fn f() { let s = \"abc; }", "unterminated string"},
        BadInput{"/* open", "unterminated /* comment"},
        BadInput{"fn f( { }", "t.tsl:1:7: error:"},
        BadInput{"dim X = 99999999999999999999999;", "too large"},
        // Postfix chains are not brackets: the expression depth bounds them.
        BadInput{"fn f() { return x" + repeat("[0]", 100000) + "; }",
                 "expression is nested too deeply (more than 256 levels)"},
        BadInput{"fn f() { return x" + repeat(".T", 100000) + "; }",
                 "t.tsl:1:528: error: expression is nested too deeply"},
        BadInput{"fn f() { return x" + repeat("(0)", 100000) + "; }",
                 "nested too deeply"},
        BadInput{"dim K: dynamic, multiple_of 0;", "t.tsl:1:29: error: "
                                                   "'multiple_of 0'"},
        BadInput{"dim S: dynamic in 10..2;", "t.tsl:1:19: error: empty range"},
        BadInput{std::string("fn f() { return x \xff; }"),
                 "unexpected character '\\xff'"}));

TEST(Parser, BinaryInputIsNotEchoed) {
  Parsed p = parse(std::string("fn f() \x01 secret\n"));
  EXPECT_EQ(p.module, nullptr);
  EXPECT_NE(p.errors.find("t.tsl:1:8: error: unexpected character '\\x01'"),
            std::string::npos)
      << p.errors;
  EXPECT_EQ(p.errors.find("secret"), std::string::npos) << p.errors;
}

TEST(Parser, ExpressionDepthIsRecorded) {
  Parsed p = parse("fn f(x: f32[N]) -> f32[N] { return x" + repeat("[:]", 255) +
                   "; }");
  ASSERT_NE(p.module, nullptr) << p.errors;
  EXPECT_EQ(p.module->fns[0].body.stmts[0].value->depth, kMaxExprDepth);
}

TEST(Parser, LongFlatInputsParseQuickly) {
  std::string sum = "fn f(x: f32[N]) -> f32[N] { return x";
  for (int i = 0; i < 50000; ++i)
    sum += " + x";
  sum += "; }";
  std::string negs =
      "fn g(x: f32[N]) -> f32[N] { return " + std::string(100000, '-') + "x; }";
  auto start = std::chrono::steady_clock::now();
  Parsed a = parse(sum), b = parse(negs);
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  EXPECT_NE(a.module, nullptr) << a.errors;
  EXPECT_NE(b.module, nullptr) << b.errors;
  EXPECT_LT(seconds, 30.0); // a hang guard, not a performance target
}

} // namespace
