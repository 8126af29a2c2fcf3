// The attention fusion pass: which IR it rewrites, which it leaves alone,
// and that the fused op computes what the ops it replaced computed (both
// run on the interpreter, with random inputs).
#include "ir/FuseAttention.h"
#include "ir/Interpreter.h"
#include "ir/IrText.h"
#include "ir/Passes.h"
#include "ir/Verifier.h"

#include <cmath>
#include <gtest/gtest.h>
#include <random>

using namespace tsl;

namespace {

struct Case {
  const char *name;
  /// The function's IR text.
  const char *ir;
  /// Whether the pass forms an attention op.
  bool fuses;
};

// Shared pieces: the params, then %0 = k^T and %1 = q @ k^T.
#define PARAMS3 "(%q: f32[B, S, 8], %k: f32[B, T, 8], %v: f32[B, T, 5]"
#define SYMS "  symbol B: dynamic\n  symbol S: dynamic\n  symbol T: dynamic\n"
#define QK                                                                     \
  "  %0 = permute(%k) {perm = [0, 2, 1]} : f32[B, 8, T]\n"                     \
  "  %1 = matmul(%q, %0) : f32[B, S, T]\n"
// softmax over %X (the scores), then @ v, numbered from %10.
#define SOFTMAX_PV(X)                                                          \
  "  assert() {cond = T >= 1, message = \"reduction over a non-empty "         \
  "axis\"}\n"                                                                  \
  "  %10 = reduce_max(" X ") {axes = [2], keepdim = true} : f32[B, S, 1]\n"    \
  "  %11 = sub(" X ", %10) : f32[B, S, T]\n"                                   \
  "  %12 = exp(%11) : f32[B, S, T]\n"                                          \
  "  %13 = reduce_sum(%12) {axes = [2], keepdim = true} : f32[B, S, 1]\n"      \
  "  %14 = div(%12, %13) : f32[B, S, T]\n"                                     \
  "  %15 = matmul(%14, %v) : f32[B, S, 5]\n"
#define SCALE                                                                  \
  "  %2 = constant() {dtype = f32, value = 8} : f32[]\n"                       \
  "  %3 = rsqrt(%2) : f32[]\n"
// Key positions j as [1, T] (%21) and [T] (%20), query positions i as
// [S, 1] (%23), and -inf (%25), for the causal cut.
#define POSITIONS                                                              \
  "  %20 = arange() {dtype = i64, n = T} : i64[T]\n"                           \
  "  %21 = reshape(%20) {shape = [1, T]} : i64[1, T]\n"                        \
  "  %22 = arange() {dtype = i64, n = S} : i64[S]\n"                           \
  "  %23 = reshape(%22) {shape = [S, 1]} : i64[S, 1]\n"                        \
  "  %25 = constant() {dtype = f32, value = -inf} : f32[]\n"

const Case kCases[] = {
    {"unscaled",
     "func @f" PARAMS3
     ") -> (f32[B, S, 5]) {\n" SYMS QK SOFTMAX_PV("%1") "  return %15\n}\n",
     true},
    {"scale_right",
     "func @f" PARAMS3 ") -> (f32[B, S, 5]) {\n" SYMS QK SCALE
     "  %4 = mul(%1, %3) : f32[B, S, T]\n" SOFTMAX_PV("%4") "  return %15\n}\n",
     true},
    {"scale_left_divided",
     "func @f" PARAMS3 ") -> (f32[B, S, 5]) {\n" SYMS QK SCALE
     "  %4 = div(%1, %2) : f32[B, S, T]\n" SOFTMAX_PV("%4") "  return %15\n}\n",
     true},
    {"mask_right",
     "func @f" PARAMS3 ", %m: f32[S, T]) -> (f32[B, S, 5]) {\n" SYMS QK SCALE
     "  %4 = mul(%3, %1) : f32[B, S, T]\n"
     "  %5 = add(%4, %m) : f32[B, S, T]\n" SOFTMAX_PV("%5") "  return %15\n}\n",
     true},
    {"mask_left_broadcast",
     "func @f" PARAMS3 ", %m: f32[B, 1, T]) -> (f32[B, S, 5]) {\n" SYMS QK
     "  %5 = add(%m, %1) : f32[B, S, T]\n" SOFTMAX_PV("%5") "  return %15\n}\n",
     true},
    // nn.attention's causal=1: where(j <= i, scores, -inf).
    {"causal_keep",
     "func @f" PARAMS3 ") -> (f32[B, S, 5]) {\n" SYMS QK SCALE POSITIONS
     "  %4 = mul(%1, %3) : f32[B, S, T]\n"
     "  %24 = le(%21, %23) : bool[S, T]\n"
     "  %26 = where(%24, %4, %25) : f32[B, S, T]\n" SOFTMAX_PV(
         "%26") "  return %15\n}\n",
     true},
    // where(i < j, -inf, scores + mask), the key positions as [T].
    {"causal_drop_masked",
     "func @f" PARAMS3
     ", %m: f32[B, 1, T]) -> (f32[B, S, 5]) {\n" SYMS QK POSITIONS
     "  %5 = add(%1, %m) : f32[B, S, T]\n"
     "  %24 = lt(%23, %20) : bool[S, T]\n"
     "  %26 = where(%24, %25, %5) : f32[B, S, T]\n" SOFTMAX_PV(
         "%26") "  return %15\n}\n",
     true},
    // j >= i keeps the upper triangle: not attention's causal cut.
    {"anti_causal",
     "func @f" PARAMS3 ") -> (f32[B, S, 5]) {\n" SYMS QK POSITIONS
     "  %24 = ge(%21, %23) : bool[S, T]\n"
     "  %26 = where(%24, %1, %25) : f32[B, S, T]\n" SOFTMAX_PV(
         "%26") "  return %15\n}\n",
     false},
    // A finite fill (-1e9) is a different function of the scores.
    {"causal_finite_fill",
     "func @f" PARAMS3 ") -> (f32[B, S, 5]) {\n" SYMS QK POSITIONS
     "  %24 = le(%21, %23) : bool[S, T]\n"
     "  %27 = constant() {dtype = f32, value = -1e9} : f32[]\n"
     "  %26 = where(%24, %1, %27) : f32[B, S, T]\n" SOFTMAX_PV(
         "%26") "  return %15\n}\n",
     false},
    // The positions swapped (i along the keys, j along the queries).
    {"causal_axes_swapped",
     "func @f" PARAMS3 ") -> (f32[B, S, 5]) {\n" SYMS QK POSITIONS
     "  %24 = le(%23, %21) : bool[S, T]\n"
     "  %26 = where(%24, %1, %25) : f32[B, S, T]\n" SOFTMAX_PV(
         "%26") "  return %15\n}\n",
     false},
    // i8 positions (which wrap past 127) are not taken for the cut.
    {"causal_narrow_positions",
     "func @f" PARAMS3 ") -> (f32[B, S, 5]) {\n" SYMS QK
     "  %20 = arange() {dtype = i8, n = T} : i8[T]\n"
     "  %22 = arange() {dtype = i8, n = S} : i8[S]\n"
     "  %23 = reshape(%22) {shape = [S, 1]} : i8[S, 1]\n"
     "  %25 = constant() {dtype = f32, value = -inf} : f32[]\n"
     "  %24 = le(%20, %23) : bool[S, T]\n"
     "  %26 = where(%24, %1, %25) : f32[B, S, T]\n" SOFTMAX_PV(
         "%26") "  return %15\n}\n",
     false},
    // The scores are a second result: they must be stored, so no fusion.
    {"scores_escape",
     "func @f" PARAMS3 ") -> (f32[B, S, 5], f32[B, S, T]) {\n" SYMS QK
         SOFTMAX_PV("%1") "  return %15, %1\n}\n",
     false},
    // A mask that widens the scores ([S, T] + [B, 1, 1, T]) is not a mask.
    {"mask_widens",
     "func @f" PARAMS3 ", %m: f32[2, 1, 1, T]) -> (f32[2, B, S, 5]) {\n" SYMS QK
     "  %5 = add(%1, %m) : f32[2, B, S, T]\n"
     "  assert() {cond = T >= 1, message = \"non-empty\"}\n"
     "  %10 = reduce_max(%5) {axes = [3], keepdim = true} : f32[2, B, S, 1]\n"
     "  %11 = sub(%5, %10) : f32[2, B, S, T]\n"
     "  %12 = exp(%11) : f32[2, B, S, T]\n"
     "  %13 = reduce_sum(%12) {axes = [3], keepdim = true} : f32[2, B, S, 1]\n"
     "  %14 = div(%12, %13) : f32[2, B, S, T]\n"
     "  %15 = matmul(%14, %v) : f32[2, B, S, 5]\n  return %15\n}\n",
     false},
    // A scale that is not 0-d scales each key differently: not attention's.
    {"vector_scale",
     "func @f" PARAMS3 ", %s: f32[T]) -> (f32[B, S, 5]) {\n" SYMS QK
     "  %4 = mul(%1, %s) : f32[B, S, T]\n" SOFTMAX_PV("%4") "  return %15\n}\n",
     false},
};

class FuseAttentionTest : public ::testing::TestWithParam<Case> {};

std::vector<ArgValue> randomArgs(const Function &fn) {
  std::mt19937 rng(7);
  std::normal_distribution<double> normal;
  std::map<std::string, int64_t> sizes = {{"B", 2}, {"S", 3}, {"T", 4}};
  std::vector<ArgValue> args;
  for (const Param &p : fn.params) {
    std::vector<int64_t> shape;
    for (const SymExpr &d : fn.type(p.value).dims)
      shape.push_back(d.isConst() ? d.constValue() : sizes[d.symbolName()]);
    ArgValue a;
    a.tensor = Tensor::zeros(fn.type(p.value).dtype, shape);
    for (size_t i = 0; i < a.tensor.numel(); ++i)
      a.tensor.setF(i, normal(rng));
    args.push_back(a);
  }
  return args;
}

TEST_P(FuseAttentionTest, FusesOnlyTheWholePatternAndKeepsTheValues) {
  const Case &c = GetParam();
  Module module;
  std::string error;
  ASSERT_TRUE(parseModule(c.ir, module, error)) << error;
  Function fn = module.functions[0];
  std::vector<ArgValue> args = randomArgs(fn);
  std::vector<Tensor> before, after;
  RunError runError;
  ASSERT_TRUE(interpret(fn, args, before, runError)) << runError.message;

  EXPECT_EQ(fuseAttention(fn), c.fuses ? 1u : 0u);
  eliminateDeadCode(fn);
  Expected<void> verified = verifyFunction(fn);
  ASSERT_TRUE(verified) << verified.error().message;
  size_t attentions = 0, exps = 0, asserts = 0;
  for (const Operation &op : fn.ops) {
    attentions += op.code == OpCode::Attention;
    exps += op.code == OpCode::Exp;
    asserts += op.code == OpCode::Assert;
  }
  EXPECT_EQ(attentions, c.fuses ? 1u : 0u);
  EXPECT_EQ(exps, c.fuses ? 0u : 1u) << printFunction(fn);
  EXPECT_EQ(asserts, 1u) << "the softmax's non-empty check must stay";

  ASSERT_TRUE(interpret(fn, args, after, runError)) << runError.message;
  ASSERT_EQ(before.size(), after.size());
  for (size_t r = 0; r < before.size(); ++r) {
    ASSERT_EQ(before[r].shape(), after[r].shape());
    for (size_t i = 0; i < before[r].numel(); ++i)
      EXPECT_NEAR(before[r].getF(i), after[r].getF(i), 1e-5) << "element " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Patterns, FuseAttentionTest,
                         ::testing::ValuesIn(kCases),
                         [](const auto &info) { return info.param.name; });

} // namespace
