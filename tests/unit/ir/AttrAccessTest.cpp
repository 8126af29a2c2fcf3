// Operation::*Attr: reading an attribute by a name the op does not have, with
// the wrong accessor, or a required one that is missing is an internal error
// (support/Error.h), not a silent default; the shape rules, the verifier and
// the interpreter report it.
#include "ir/Interpreter.h"
#include "ir/ShapeRules.h"
#include "ir/Verifier.h"
#include "support/Error.h"

#include <gtest/gtest.h>

using namespace tsl;

namespace {

Operation reduceSum(bool withAttrs) {
  Operation op{OpCode::ReduceSum, {0}, {1}, {}, {}};
  if (withAttrs) {
    op.attrs["axes"] = std::vector<int64_t>{0};
    op.attrs["keepdim"] = false;
  }
  return op;
}

TEST(AttrAccess, DeclaredAttributesReadWithoutError) {
  takeInternalError(); // start clean
  Operation op = reduceSum(true);
  EXPECT_EQ(op.intsAttr("axes"), std::vector<int64_t>{0});
  EXPECT_FALSE(op.boolAttr("keepdim"));
  EXPECT_FALSE(takeInternalError().has_value());
}

TEST(AttrAccess, AnUnknownNameIsAnInternalError) {
  takeInternalError();
  Operation op = reduceSum(true);
  EXPECT_TRUE(op.intsAttr("axis").empty()); // the default, as before
  std::optional<Error> e = takeInternalError();
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->kind, ErrorKind::Internal);
  EXPECT_EQ(e->message, "internal error: 'reduce_sum' has no attribute 'axis'");
  EXPECT_FALSE(takeInternalError().has_value()); // taken once
}

TEST(AttrAccess, TheWrongAccessorIsAnInternalError) {
  takeInternalError();
  Operation op = reduceSum(true);
  op.intAttr("keepdim"); // a bool read as an int
  std::optional<Error> e = takeInternalError();
  ASSERT_TRUE(e.has_value());
  EXPECT_NE(e->message.find("attribute 'keepdim' of 'reduce_sum'"),
            std::string::npos)
      << e->message;
  Operation bare = reduceSum(false);
  bare.intAttr("keepdim"); // missing, and the wrong kind
  e = takeInternalError();
  ASSERT_TRUE(e.has_value());
  EXPECT_NE(e->message.find("is bool, read as int"), std::string::npos)
      << e->message;
}

TEST(AttrAccess, TheFirstErrorIsKeptUntilTaken) {
  takeInternalError();
  Operation op = reduceSum(false);
  op.intsAttr("axes");
  op.strAttr("nothing");
  std::optional<Error> e = takeInternalError();
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->message,
            "internal error: 'reduce_sum' lacks its attribute 'axes'");
}

TEST(AttrAccess, ShapeRulesReportAMissingAttribute) {
  takeInternalError();
  ShapeEnv env;
  Operation op = reduceSum(false);
  ShapeContext ctx(env, op, {TensorType{DType::F32, {SymExpr(4)}}},
                   SourceRange());
  std::vector<TensorType> results;
  // Before: reduced every axis, as if `axes` were empty.
  EXPECT_FALSE(inferResultTypes(ctx, results));
  EXPECT_NE(ctx.error.find("internal error: 'reduce_sum' lacks"),
            std::string::npos)
      << ctx.error;
  EXPECT_FALSE(takeInternalError().has_value());
}

TEST(AttrAccess, TheInterpreterReportsAMissingAttribute) {
  takeInternalError();
  Function fn;
  fn.name = "f";
  ValueId x = fn.addValue({DType::F32, {SymExpr(4)}}, "x");
  ValueId r = fn.addValue({DType::F32, {}});
  fn.params.push_back({"x", false, x, SymExpr()});
  Operation op = reduceSum(false);
  op.operands = {x};
  op.results = {r};
  fn.ops.push_back(op);
  fn.results = {r};
  Expected<void> verified = verifyFunction(fn);
  ASSERT_FALSE(verified);
  EXPECT_NE(verified.error().message.find("lacks attribute 'axes'"),
            std::string::npos)
      << verified.error().message;
  takeInternalError();

  ArgValue arg;
  arg.tensor = Tensor::zeros(DType::F32, {4});
  std::vector<Tensor> outputs;
  RunError error;
  EXPECT_FALSE(interpret(fn, {arg}, outputs, error));
  EXPECT_EQ(error.message,
            "reduce_sum: internal error: 'reduce_sum' lacks its attribute "
            "'axes'");
}

} // namespace
