// Calls of outlined functions (ir/OutlineCalls.h) on hand-written IR: the
// verifier's rules for callees and call ops (a table of broken modules),
// inlineCalls against the interpreter, and outlineRepeatedCalls on recorded
// runs (which runs it takes, which it leaves inlined).
#include "ir/OutlineCalls.h"
#include "ir/Interpreter.h"
#include "ir/IrText.h"
#include "ir/Verifier.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace tsl;

namespace {

/// f(x) = g(g(x)) with g(a) = tanh(a) * 2 + a, as IR text; \p callee and
/// \p calls replace the callee and the call lines.
std::string module(const std::string &callee, const std::string &calls) {
  return "func @f(%x: f32[N]) -> (f32[N]) {\n"
         "  symbol N: dynamic\n" +
         callee + calls + "  return %1\n}\n";
}
const std::string kCallee =
    "  callee @g(%a: f32[N]) -> (f32[N]) {\n"
    "    %0 = tanh(%a) : f32[N]\n"
    "    %1 = constant() {dtype = f32, value = 2.0} : f32[]\n"
    "    %2 = mul(%0, %1) : f32[N]\n"
    "    %3 = add(%2, %a) : f32[N]\n"
    "    return %3\n"
    "  }\n";
const std::string kCalls = "  %0 = call(%x) {callee = 0} : f32[N]\n"
                           "  %1 = call(%0) {callee = 0} : f32[N]\n";

Function parseOne(const std::string &text) {
  Module m;
  std::string error;
  EXPECT_TRUE(parseModule(text, m, error)) << error << "\n" << text;
  return m.functions.empty() ? Function() : m.functions[0];
}

TEST(OutlineCalls, TheVerifierChecksCalleesAndCalls) {
  struct Case {
    std::string callee, calls, problem;
  } cases[] = {
      {kCallee, kCalls, ""},
      {kCallee, "  %0 = call(%x) {callee = 1} : f32[N]\n" + kCalls.substr(37),
       "calls callee 1 of 1"},
      {kCallee,
       "  %0 = call(%x, %x) {callee = 0} : f32[N]\n" + kCalls.substr(37),
       "passes 2 operands"},
      {kCallee, "  %0 = call(%x) {callee = 0} : f32[2]\n" + kCalls.substr(37),
       "result 0 has type f32[2]"},
      {"  callee @g(%a: f32[N]) -> (f32[N]) {\n    return %a\n  }\n", kCalls,
       "returns a value that none of its ops makes"},
      {"  callee @g(%a: f32[N]) -> (f32[N]) {\n"
       "    %0 = reshape(%a) {shape = [N]} : f32[N]\n    return %0\n  }\n",
       kCalls, "a layout op's"},
  };
  for (const Case &c : cases) {
    Function fn = parseOne(module(c.callee, c.calls));
    Expected<void> verified = verifyFunction(fn);
    std::string error = verified ? "" : verified.error().message;
    EXPECT_EQ(bool(verified), c.problem.empty()) << c.calls << error;
    EXPECT_NE(error.find(c.problem), std::string::npos) << error;
  }
}

TEST(OutlineCalls, CalleesNoCallReachesAreVerifiedToo) {
  Function fn = parseOne("func @f(%x: f32[N]) -> (f32[N]) {\n"
                         "  callee @g(%a: f32[N]) -> (f32[2]) {\n"
                         "    %0 = tanh(%a) : f32[2]\n    return %0\n  }\n"
                         "  symbol N: dynamic\n"
                         "  %0 = tanh(%x) : f32[N]\n  return %0\n}\n");
  // Symbol lines after the callee still reach it.
  ASSERT_EQ(fn.callees.size(), 1u);
  EXPECT_EQ(fn.callees[0].symbols.size(), 1u);
  Expected<void> verified = verifyFunction(fn);
  ASSERT_FALSE(verified);
  EXPECT_EQ(verified.error().kind, ErrorKind::Internal);
  EXPECT_NE(verified.error().message.find("callee 'g' is not valid"),
            std::string::npos)
      << verified.error().message;
}

TEST(OutlineCalls, InliningGivesWhatTheCallsGive) {
  Function called = parseOne(module(kCallee, kCalls));
  Function flat = called;
  inlineCalls(flat);
  EXPECT_TRUE(flat.callees.empty());
  EXPECT_EQ(flat.ops.size(), 8u);
  Expected<void> verified = verifyFunction(flat);
  EXPECT_TRUE(verified) << verified.error().message;
  Tensor x = Tensor::zeros(DType::F32, {5});
  for (int64_t i = 0; i < 5; ++i)
    x.setF(i, 0.5 * static_cast<double>(i) - 1.0);
  std::vector<ArgValue> args(1);
  args[0].tensor = x;
  std::vector<Tensor> a, b;
  RunError runError;
  ASSERT_TRUE(interpret(called, args, a, runError)) << runError.message;
  ASSERT_TRUE(interpret(flat, args, b, runError)) << runError.message;
  for (int64_t i = 0; i < 5; ++i) {
    double v = 0.5 * static_cast<double>(i) - 1.0;
    for (int k = 0; k < 2; ++k)
      v = static_cast<float>(static_cast<float>(std::tanh(v)) * 2.0f + v);
    EXPECT_FLOAT_EQ(a[0].getF(i), static_cast<float>(v)) << i;
    EXPECT_EQ(a[0].getF(i), b[0].getF(i)) << i;
  }
}

TEST(OutlineCalls, OutlinesEqualRunsAndLeavesTheRest) {
  // The inlined form of f: two runs of g's four ops, then a different run.
  Function fn =
      parseOne("func @f(%x: f32[N]) -> (f32[N]) {\n  symbol N: dynamic\n"
               "  %0 = tanh(%x) : f32[N]\n"
               "  %1 = constant() {dtype = f32, value = 2.0} : f32[]\n"
               "  %2 = mul(%0, %1) : f32[N]\n  %3 = add(%2, %x) : f32[N]\n"
               "  %4 = tanh(%3) : f32[N]\n"
               "  %5 = constant() {dtype = f32, value = 2.0} : f32[]\n"
               "  %6 = mul(%4, %5) : f32[N]\n  %7 = add(%6, %3) : f32[N]\n"
               "  %8 = tanh(%7) : f32[N]\n"
               "  %9 = constant() {dtype = f32, value = 3.0} : f32[]\n"
               "  %10 = mul(%8, %9) : f32[N]\n  %11 = add(%10, %7) : f32[N]\n"
               "  return %11\n}\n");
  std::vector<InlinedCall> runs = {
      {0, 4, "g", {}}, {4, 8, "g", {}}, {8, 12, "g", {}}};
  Function under = fn;
  EXPECT_EQ(outlineRepeatedCalls(under, runs, 5, 2), 0u); // under 5 ops
  EXPECT_EQ(outlineRepeatedCalls(fn, runs, 4, 2), 2u);
  ASSERT_EQ(fn.callees.size(), 1u);
  EXPECT_EQ(fn.callees[0].name, "g");
  ASSERT_EQ(fn.ops.size(), 6u); // two calls, the third run inlined
  EXPECT_EQ(fn.ops[0].code, OpCode::Call);
  EXPECT_EQ(fn.ops[1].code, OpCode::Call);
  EXPECT_EQ(fn.ops[1].operands[0], fn.ops[0].results[0]);
  EXPECT_EQ(fn.ops[2].code, OpCode::Tanh);
  Expected<void> verified = verifyFunction(fn);
  EXPECT_TRUE(verified) << verified.error().message;
  // Its text reads back to the same function.
  Function again = parseOne(printFunction(fn));
  EXPECT_EQ(printFunction(again), printFunction(fn));
}

TEST(OutlineCalls, ReplaysTheLayoutOpsWhoseResultsTheCallerReads) {
  // Two runs of g(a) = permute(permute(tanh(a))) + a; later ops read each
  // run's first permute (a view of tanh's result, made inside the run).
  Function fn = parseOne("func @f(%x: f32[M, N]) -> (f32[M, N], f32[N, M]) {\n"
                         "  symbol M: dynamic\n  symbol N: dynamic\n"
                         "  %0 = tanh(%x) : f32[M, N]\n"
                         "  %1 = permute(%0) {perm = [1, 0]} : f32[N, M]\n"
                         "  %2 = permute(%1) {perm = [1, 0]} : f32[M, N]\n"
                         "  %3 = add(%2, %x) : f32[M, N]\n"
                         "  %4 = tanh(%3) : f32[M, N]\n"
                         "  %5 = permute(%4) {perm = [1, 0]} : f32[N, M]\n"
                         "  %6 = permute(%5) {perm = [1, 0]} : f32[M, N]\n"
                         "  %7 = add(%6, %3) : f32[M, N]\n"
                         "  %8 = mul(%5, %1) : f32[N, M]\n"
                         "  return %7, %8\n}\n");
  Function inlined = fn;
  std::vector<InlinedCall> runs = {{0, 4, "g", {}}, {4, 8, "g", {}}};
  ASSERT_EQ(outlineRepeatedCalls(fn, runs, 4, 2), 2u);
  ASSERT_EQ(fn.callees.size(), 1u);
  // The callee gives tanh's result (not the view) and the sum; the caller
  // makes the view again after each call.
  ASSERT_EQ(fn.callees[0].results.size(), 2u);
  ASSERT_EQ(fn.ops.size(), 5u);
  EXPECT_EQ(fn.ops[0].code, OpCode::Call);
  EXPECT_EQ(fn.ops[1].code, OpCode::Permute);
  EXPECT_EQ(fn.ops[1].operands[0], fn.ops[0].results[0]);
  EXPECT_EQ(fn.ops[2].code, OpCode::Call);
  EXPECT_EQ(fn.ops[2].operands[0], fn.ops[0].results[1]);
  EXPECT_EQ(fn.ops[3].code, OpCode::Permute);
  EXPECT_EQ(fn.ops[4].code, OpCode::Mul);
  EXPECT_EQ(fn.ops[4].operands[0], fn.ops[3].results[0]);
  EXPECT_EQ(fn.ops[4].operands[1], fn.ops[1].results[0]);
  Expected<void> verified = verifyFunction(fn);
  EXPECT_TRUE(verified) << verified.error().message;
  // The same values as the inlined function's.
  Tensor x = Tensor::zeros(DType::F32, {2, 3});
  for (int64_t i = 0; i < 6; ++i)
    x.setF(i, 0.25 * static_cast<double>(i) - 0.5);
  std::vector<ArgValue> args(1);
  args[0].tensor = x;
  std::vector<Tensor> a, b;
  RunError runError;
  ASSERT_TRUE(interpret(fn, args, a, runError)) << runError.message;
  ASSERT_TRUE(interpret(inlined, args, b, runError)) << runError.message;
  ASSERT_EQ(a.size(), 2u);
  for (size_t k = 0; k < 2; ++k)
    for (int64_t i = 0; i < 6; ++i)
      EXPECT_EQ(a[k].getF(i), b[k].getF(i)) << k << " " << i;
}

TEST(OutlineCalls, CallsOfAKindGiveWhatAnyOfThemNeeds) {
  // Two runs of g(a) = tanh(a) + a; later ops read the first run's tanh but
  // not the second's: both runs call one callee, which gives both values.
  Function fn =
      parseOne("func @f(%x: f32[N]) -> (f32[N]) {\n  symbol N: dynamic\n"
               "  %0 = tanh(%x) : f32[N]\n  %1 = add(%0, %x) : f32[N]\n"
               "  %2 = tanh(%1) : f32[N]\n  %3 = add(%2, %1) : f32[N]\n"
               "  %4 = mul(%0, %3) : f32[N]\n  return %4\n}\n");
  Function inlined = fn;
  std::vector<InlinedCall> runs = {{0, 2, "g", {}}, {2, 4, "g", {}}};
  ASSERT_EQ(outlineRepeatedCalls(fn, runs, 2, 2), 2u);
  ASSERT_EQ(fn.callees.size(), 1u);
  EXPECT_EQ(fn.callees[0].results.size(), 2u);
  ASSERT_EQ(fn.ops.size(), 3u);
  EXPECT_EQ(fn.ops[1].results.size(), 2u); // its tanh given, unread
  EXPECT_EQ(fn.ops[2].operands[0], fn.ops[0].results[0]);
  Expected<void> verified = verifyFunction(fn);
  EXPECT_TRUE(verified) << verified.error().message;
  Tensor x = Tensor::zeros(DType::F32, {4});
  for (int64_t i = 0; i < 4; ++i)
    x.setF(i, 0.5 * static_cast<double>(i) - 1.0);
  std::vector<ArgValue> args(1);
  args[0].tensor = x;
  std::vector<Tensor> a, b;
  RunError runError;
  ASSERT_TRUE(interpret(fn, args, a, runError)) << runError.message;
  ASSERT_TRUE(interpret(inlined, args, b, runError)) << runError.message;
  for (int64_t i = 0; i < 4; ++i)
    EXPECT_EQ(a[0].getF(i), b[0].getF(i)) << i;
}

} // namespace
