// The differentiation column of the op table (ir/Ops.def, diffRuleOf): every
// op either has a VJP rule or says why gradients stop at it or refuse it.
#include "ir/Differentiate.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <utility>

using namespace tsl;

TEST(DifferentiateTable, EveryOpHasARuleOrAReason) {
  size_t rules = 0;
  for (const OpTraits &op : kOpTable) {
    DiffRule r = diffRuleOf(op.code);
    if (r.kind == DiffKind::Rule) {
      ++rules;
      continue;
    }
    ASSERT_NE(r.reason, nullptr) << op.name;
    EXPECT_NE(std::string(r.reason), "") << op.name;
  }
  EXPECT_GT(rules, 0u);
}

TEST(DifferentiateTable, IntegerAndDataDependentOpsAreNotRules) {
  EXPECT_EQ(diffRuleOf(OpCode::Unique).kind, DiffKind::NotDifferentiable);
  EXPECT_EQ(diffRuleOf(OpCode::Item).kind, DiffKind::NotDifferentiable);
  EXPECT_EQ(diffRuleOf(OpCode::Argmax).kind, DiffKind::NoGradient);
  EXPECT_EQ(diffRuleOf(OpCode::Lt).kind, DiffKind::NoGradient);
}

TEST(DifferentiateTable, LoopsAreReversedAsAWhole) {
  // The sweep reverses a loop ... end_loop region (ir/VjpLoops.cpp); the
  // markers have no per-op rule of their own but are not refused.
  EXPECT_EQ(diffRuleOf(OpCode::Loop).kind, DiffKind::Rule);
  EXPECT_EQ(diffRuleOf(OpCode::EndLoop).kind, DiffKind::Rule);
}

TEST(DifferentiateTable, ColumnIsTheSwitchItReplaced) {
  // ir/Differentiate.cpp's diffRuleOf switch before the column (and the
  // ops added since: floor, ceil): the ops that are not rules, with the
  // reasons their errors end with (lit grad/errors.tsl quotes the
  // refusals'). Every other op is a rule.
  const std::map<OpCode, std::pair<DiffKind, std::string>> notRules = {
      {OpCode::Lt, {DiffKind::NoGradient, "a comparison: its result is bool"}},
      {OpCode::Le, {DiffKind::NoGradient, "a comparison: its result is bool"}},
      {OpCode::Gt, {DiffKind::NoGradient, "a comparison: its result is bool"}},
      {OpCode::Ge, {DiffKind::NoGradient, "a comparison: its result is bool"}},
      {OpCode::Eq, {DiffKind::NoGradient, "a comparison: its result is bool"}},
      {OpCode::Ne, {DiffKind::NoGradient, "a comparison: its result is bool"}},
      {OpCode::And, {DiffKind::NoGradient, "bool or integer operands"}},
      {OpCode::Or, {DiffKind::NoGradient, "bool or integer operands"}},
      {OpCode::Xor, {DiffKind::NoGradient, "bool or integer operands"}},
      {OpCode::Not, {DiffKind::NoGradient, "bool or integer operands"}},
      {OpCode::Constant, {DiffKind::NoGradient, "no operands"}},
      {OpCode::SymScalar, {DiffKind::NoGradient, "no operands"}},
      {OpCode::Full, {DiffKind::NoGradient, "no operands"}},
      {OpCode::Arange, {DiffKind::NoGradient, "no operands"}},
      {OpCode::Argmax, {DiffKind::NoGradient, "an integer result"}},
      {OpCode::Argmin, {DiffKind::NoGradient, "an integer result"}},
      {OpCode::Nonzero, {DiffKind::NoGradient, "an integer result"}},
      {OpCode::Assert, {DiffKind::NoGradient, "a check on sizes"}},
      {OpCode::Floor,
       {DiffKind::NoGradient, "piecewise constant: its gradient is zero"}},
      {OpCode::Ceil,
       {DiffKind::NoGradient, "piecewise constant: its gradient is zero"}},
      {OpCode::Round,
       {DiffKind::NoGradient, "piecewise constant: its gradient is zero"}},
      {OpCode::Unique,
       {DiffKind::NotDifferentiable,
        "its result's size and order depend on the values"}},
      {OpCode::Item,
       {DiffKind::NotDifferentiable, "it turns a value into a size"}},
      {OpCode::Cumprod, {DiffKind::NotSupported, "no rule yet"}},
      {OpCode::Attention, {DiffKind::NotSupported, "no rule yet"}},
      {OpCode::Call, {DiffKind::NotSupported, "no rule yet"}},
      // The window ops' gradients (made by their rules): a second
      // derivative.
      {OpCode::Conv2dWeightGrad,
       {DiffKind::NotSupported, "a second derivative through conv2d"}},
      {OpCode::MaxPool2dGrad,
       {DiffKind::NotSupported, "a second derivative through max_pool2d"}},
  };
  for (const OpTraits &op : kOpTable) {
    DiffRule r = diffRuleOf(op.code);
    auto it = notRules.find(op.code);
    if (it == notRules.end()) {
      EXPECT_EQ(r.kind, DiffKind::Rule) << op.name;
      EXPECT_EQ(std::string(r.reason), "") << op.name;
      continue;
    }
    EXPECT_EQ(r.kind, it->second.first) << op.name;
    EXPECT_EQ(std::string(r.reason), it->second.second) << op.name;
  }
}
