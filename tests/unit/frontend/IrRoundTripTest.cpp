// Elaborated programs through the IR text: print -> parse -> print is the
// identity and the parsed IR verifies. (In the frontend's tests because the
// programs come from TSL source; tests/unit/ir/IrTextTest.cpp has the
// parser's own tests.)
#include "frontend/Elaborator.h"
#include "ir/IrText.h"
#include "ir/Verifier.h"

#include <gtest/gtest.h>
#include <sstream>

using namespace tsl;

namespace {

/// Elaborates a source snippet generically and returns the printed IR.
std::string irOf(const std::string &source, const std::string &fnName,
                 Function &fn) {
  SourceManager sm;
  std::ostringstream errors;
  DiagnosticEngine diags(sm, errors);
  ModuleLoader loader(sm, diags);
  loader.setStdlibDir(std::string(TSL_SOURCE_DIR) + "/stdlib");
  const LoadedModule *m = loader.loadText("test.tsl", source);
  EXPECT_NE(m, nullptr) << errors.str();
  if (!m)
    return {};
  EXPECT_TRUE(elaborateFunction(*m, fnName, ElaborateOptions{}, diags, fn))
      << errors.str();
  return printFunction(fn);
}

const char *kPrograms[] = {
    "fn f(x: f32[B, 784], w: f32[784, 10]) -> f32[B, 10] { return relu(x @ w) "
    "* 2.0; }",
    "import nn;\nfn f(x: f32[B, S, D]) -> f32[B, S, D] { return nn.softmax(x); "
    "}",
    "fn f(m: bool[N, M], x: f32[N, M]) -> (i64[?, 2], f32[?]) { return "
    "(nonzero(m), masked_select(x, m)); }",
    "fn f(x: f32[N, C, H, W], w: f32[O, C, 3, 3]) -> f32[N, O, H - 2, W - 2] { "
    "return conv2d(x, w); }",
    "fn f(x: f32[N], k: int dynamic) -> (f32[k], i64[k]) { return topk(x, k); "
    "}",
    "fn f(x: f32[A, B]) -> f32[B, A + 2] { return pad(transpose(x, 0, 1), [1, "
    "1]); }",
    "fn f(x: f32[S]) -> f32[?] { check(S >= 4, \"need four\"); return x[1:S - "
    "1]; }",
    "fn f(x: i64[1]) -> i64[?] { let n = item(x); check(n >= 0); return "
    "arange(n); }",
};

class RoundTrip : public ::testing::TestWithParam<const char *> {};

TEST_P(RoundTrip, PrintParsePrintIsIdentical) {
  Function fn;
  std::string first = irOf(GetParam(), "f", fn);
  ASSERT_FALSE(first.empty());
  Expected<void> verified = verifyFunction(fn);
  EXPECT_TRUE(verified) << verified.error().message << "\n" << first;
  std::string error;
  Module parsed;
  ASSERT_TRUE(parseModule(first, parsed, error)) << error << "\n" << first;
  ASSERT_EQ(parsed.functions.size(), 1u);
  EXPECT_EQ(printFunction(parsed.functions[0]), first);
  Expected<void> reverified = verifyFunction(parsed.functions[0]);
  EXPECT_TRUE(reverified) << reverified.error().message;
}

INSTANTIATE_TEST_SUITE_P(Ir, RoundTrip, ::testing::ValuesIn(kPrograms));

} // namespace
