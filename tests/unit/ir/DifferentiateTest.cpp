// The differentiation table (ir/Differentiate.h): every op of ir/Ops.def
// either has a VJP rule or says why gradients stop at it or refuse it.
#include "ir/Differentiate.h"

#include <gtest/gtest.h>

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
