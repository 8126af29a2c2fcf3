// The op families the lowering dispatches on (backend/common/OpFamily.h):
// derived from the op table's categories with a few exceptions. Whether
// every op of a family has its lowering is checked at compile time (the
// static_asserts of CodegenDispatch.cpp, CodegenElementMath.cpp and
// nvptx/CodegenDeviceDispatch.cpp); these tests pin the derivation.
#include "backend/common/OpFamily.h"

#include <gtest/gtest.h>

using namespace tsl;
using tsl::backend::OpFamily;
using tsl::backend::opFamily;

namespace {

TEST(OpFamily, ExceptionsLeaveTheirCategory) {
  EXPECT_EQ(categoryOf(OpCode::Argmax), OpCategory::Reduction);
  EXPECT_EQ(opFamily(OpCode::Argmax), OpFamily::ArgReduction);
  EXPECT_EQ(opFamily(OpCode::Argmin), OpFamily::ArgReduction);
  EXPECT_EQ(categoryOf(OpCode::Cumsum), OpCategory::Library);
  EXPECT_EQ(opFamily(OpCode::Cumsum), OpFamily::Scan);
  EXPECT_EQ(opFamily(OpCode::Cumprod), OpFamily::Scan);
}

TEST(OpFamily, CategoriesGiveFamilies) {
  EXPECT_EQ(opFamily(OpCode::ReduceSum), OpFamily::Reduction);
  EXPECT_EQ(opFamily(OpCode::Constant), OpFamily::Value);
  EXPECT_EQ(opFamily(OpCode::Arange), OpFamily::Value);
  EXPECT_EQ(opFamily(OpCode::Pad), OpFamily::Layout);
  EXPECT_EQ(opFamily(OpCode::Sort), OpFamily::Library);
  EXPECT_EQ(opFamily(OpCode::Item), OpFamily::DataDependent);
  EXPECT_EQ(opFamily(OpCode::Assert), OpFamily::Check);
  EXPECT_EQ(opFamily(OpCode::EndLoop), OpFamily::Control);
  EXPECT_EQ(opFamily(OpCode::Call), OpFamily::Call);
}

TEST(OpFamily, EveryElementwiseOpIsElementwise) {
  for (size_t i = 0; i < kNumOps; ++i) {
    auto code = static_cast<OpCode>(i);
    EXPECT_EQ(isElementwise(code), opFamily(code) == OpFamily::Elementwise)
        << opName(code);
    EXPECT_LT(static_cast<size_t>(opFamily(code)), backend::kNumOpFamilies)
        << opName(code);
  }
}

} // namespace
