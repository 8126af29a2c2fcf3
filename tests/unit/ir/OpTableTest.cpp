// The op table (ir/OpInfo.h) against what its users derived by hand before
// it existed: the switches of the dead-code pass, the interpreter, the CPU
// backend's fusion test and the frontend's builtin map, written out here as
// tables. Then every element type through the shape rules of the ops whose
// rule checks only element types: a rule accepts exactly what acceptsDType
// says and gives the result type the table names.
#include "ir/OpInfo.h"
#include "ir/ShapeRules.h"
#include "support/Error.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

using namespace tsl;

namespace {

const DType kAllDTypes[] = {DType::Bool, DType::I8,   DType::I32, DType::I64,
                            DType::F16,  DType::BF16, DType::F32, DType::F64};

// Ir/Passes.cpp's hasEffect before the table.
const std::set<OpCode> kOldHasEffect = {
    OpCode::Assert, OpCode::Item,        OpCode::Nonzero, OpCode::MaskedSelect,
    OpCode::Unique, OpCode::IndexSelect, OpCode::Div};

// backend/cpu Codegen::isElementwise before the table: false for these.
const std::set<OpCode> kOldNotFusible = {
    OpCode::Reshape,   OpCode::Permute,    OpCode::Expand,
    OpCode::Slice,     OpCode::Pad,        OpCode::Concat,
    OpCode::Matmul,    OpCode::Full,       OpCode::Arange,
    OpCode::ReduceSum, OpCode::ReduceMean, OpCode::ReduceMax,
    OpCode::ReduceMin, OpCode::Argmax,     OpCode::Conv2d,
    OpCode::MaxPool2d, OpCode::Nonzero,    OpCode::MaskedSelect,
    OpCode::Unique,    OpCode::Item,       OpCode::IndexSelect,
    OpCode::Topk,      OpCode::Assert};

// ir/InterpKernels.cpp's runKernel: the ops it sent to elementwise().
const std::set<OpCode> kOldElementwiseKernel = {
    OpCode::Add,   OpCode::Sub,     OpCode::Mul,     OpCode::Div,
    OpCode::Pow,   OpCode::Maximum, OpCode::Minimum, OpCode::Lt,
    OpCode::Le,    OpCode::Gt,      OpCode::Ge,      OpCode::Eq,
    OpCode::Ne,    OpCode::And,     OpCode::Or,      OpCode::Neg,
    OpCode::Not,   OpCode::Exp,     OpCode::Log,     OpCode::Sqrt,
    OpCode::Rsqrt, OpCode::Tanh,    OpCode::Sigmoid, OpCode::Relu,
    OpCode::Gelu,  OpCode::Abs,     OpCode::Sin,     OpCode::Cos,
    OpCode::Where, OpCode::Cast};

// ... and to reduce().
const std::set<OpCode> kOldReduceKernel = {
    OpCode::ReduceSum, OpCode::ReduceMean, OpCode::ReduceMax, OpCode::ReduceMin,
    OpCode::Argmax};

// The CPU backend's layout() and concat().
const std::set<OpCode> kOldLayout = {OpCode::Reshape, OpCode::Permute,
                                     OpCode::Expand,  OpCode::Slice,
                                     OpCode::Pad,     OpCode::Concat};

// frontend/Builtins.cpp's unaryBuiltins() map, plus pow, nonzero and
// unique, whose handlers were the same code spelled out.
const std::set<std::string> kOldOneToOneBuiltins = {
    "exp",  "log", "sqrt", "rsqrt", "tanh", "sigmoid", "relu",
    "gelu", "abs", "sin",  "cos",   "pow",  "nonzero", "unique"};

// The ops that existed when the table replaced the switches; ops added
// since have no switch to agree with.
const std::set<std::string> kOpsBeforeTheTable = {
    "add",         "sub",        "mul",          "div",     "pow",
    "maximum",     "minimum",    "lt",           "le",      "gt",
    "ge",          "eq",         "ne",           "and",     "or",
    "neg",         "not",        "exp",          "log",     "sqrt",
    "rsqrt",       "tanh",       "sigmoid",      "relu",    "gelu",
    "abs",         "sin",        "cos",          "where",   "cast",
    "constant",    "sym_scalar", "full",         "arange",  "reduce_sum",
    "reduce_mean", "reduce_max", "reduce_min",   "argmax",  "matmul",
    "reshape",     "permute",    "expand",       "concat",  "slice",
    "pad",         "conv2d",     "max_pool2d",   "nonzero", "masked_select",
    "unique",      "item",       "index_select", "topk",    "assert"};

std::vector<OpCode> allOpCodes() {
  std::vector<OpCode> out;
  for (const OpTraits &t : kOpTable)
    out.push_back(t.code);
  return out;
}

TEST(OpTable, HasEveryOpInOrder) {
  EXPECT_GE(kNumOps, kOpsBeforeTheTable.size());
  std::set<std::string> names;
  for (const OpTraits &t : kOpTable)
    names.insert(std::string(t.name));
  for (const std::string &old : kOpsBeforeTheTable)
    EXPECT_TRUE(names.count(old)) << old;
  for (size_t i = 0; i < kNumOps; ++i) {
    EXPECT_EQ(static_cast<size_t>(kOpTable[i].code), i);
    EXPECT_FALSE(kOpTable[i].name.empty());
  }
}

TEST(OpTable, PredicatesAgreeWithTheSwitchesTheyReplace) {
  for (OpCode c : allOpCodes()) {
    std::string name(opName(c));
    if (!kOpsBeforeTheTable.count(name))
      continue; // added since: no switch to agree with
    EXPECT_EQ(hasEffect(c), kOldHasEffect.count(c) == 1) << name;
    EXPECT_EQ(isElementwiseOrScalar(c), kOldNotFusible.count(c) == 0) << name;
    EXPECT_EQ(isElementwise(c), kOldElementwiseKernel.count(c) == 1) << name;
    EXPECT_EQ(isReduction(c), kOldReduceKernel.count(c) == 1) << name;
    EXPECT_EQ(isLayout(c), kOldLayout.count(c) == 1) << name;
    EXPECT_EQ(!builtinSpelling(c).empty(),
              kOldOneToOneBuiltins.count(std::string(builtinSpelling(c))) == 1)
        << name;
  }
}

TEST(OpTable, EffectsAreConsistent) {
  for (OpCode c : allOpCodes()) {
    std::string name(opName(c));
    // Sizes are bound only by the ops whose result sizes depend on values.
    EXPECT_EQ(bindsSizes(c), categoryOf(c) == OpCategory::DataDependent)
        << name;
    EXPECT_EQ(hasEffect(c), mayFail(c) || bindsSizes(c) || isLoopMarker(c))
        << name;
    // Only the loop markers delimit a body.
    EXPECT_EQ(isLoopMarker(c), categoryOf(c) == OpCategory::Control) << name;
  }
  EXPECT_TRUE(mayFail(OpCode::Div));
  EXPECT_TRUE(mayFail(OpCode::Item));
  EXPECT_TRUE(bindsSizes(OpCode::Item));
  EXPECT_FALSE(mayFail(OpCode::Add));
}

TEST(OpTable, OperandCountsMatchTheCategory) {
  for (const OpTraits &t : kOpTable) {
    std::string name(t.name);
    switch (t.category) {
    case OpCategory::ElementwiseUnary:
      EXPECT_EQ(t.minOperands, 1) << name;
      EXPECT_EQ(t.maxOperands, 1) << name;
      break;
    case OpCategory::ElementwiseBinary:
      EXPECT_EQ(t.minOperands, 2) << name;
      EXPECT_EQ(t.maxOperands, 2) << name;
      EXPECT_TRUE(t.sameDType) << name;
      break;
    case OpCategory::Scalar:
    case OpCategory::Creation:
    case OpCategory::Check:
      EXPECT_EQ(t.maxOperands, 0) << name;
      EXPECT_EQ(t.operands, DTypeRule::None) << name;
      break;
    default:
      EXPECT_GE(t.maxOperands == -1 ? 1 : t.maxOperands, 1) << name;
    }
    EXPECT_EQ(t.result == ResultDType::None, t.numResults == 0) << name;
  }
}

// Written out from the old shape rules, independently of the table.
TEST(OpTable, AcceptsDTypeByHand) {
  EXPECT_TRUE(acceptsDType(OpCode::Add, 0, DType::I32));
  EXPECT_FALSE(acceptsDType(OpCode::Add, 1, DType::Bool));
  EXPECT_FALSE(acceptsDType(OpCode::Pow, 0, DType::I64));
  EXPECT_TRUE(acceptsDType(OpCode::Pow, 1, DType::BF16));
  EXPECT_TRUE(acceptsDType(OpCode::Maximum, 0, DType::Bool));
  EXPECT_TRUE(acceptsDType(OpCode::Lt, 0, DType::Bool));
  EXPECT_TRUE(acceptsDType(OpCode::And, 0, DType::I8));
  EXPECT_FALSE(acceptsDType(OpCode::Xor, 0, DType::F32));
  EXPECT_FALSE(acceptsDType(OpCode::Neg, 0, DType::Bool));
  EXPECT_TRUE(acceptsDType(OpCode::Not, 0, DType::Bool));
  EXPECT_FALSE(acceptsDType(OpCode::Exp, 0, DType::I32));
  EXPECT_TRUE(acceptsDType(OpCode::Cast, 0, DType::Bool));
  EXPECT_TRUE(acceptsDType(OpCode::Where, 0, DType::Bool));
  EXPECT_FALSE(acceptsDType(OpCode::Where, 0, DType::F32));
  EXPECT_TRUE(acceptsDType(OpCode::Where, 2, DType::I8));
  EXPECT_FALSE(acceptsDType(OpCode::Where, 3, DType::Bool)); // no operand 3
  EXPECT_FALSE(acceptsDType(OpCode::Constant, 0, DType::F32));
  EXPECT_FALSE(acceptsDType(OpCode::ReduceMean, 0, DType::I64));
  EXPECT_TRUE(acceptsDType(OpCode::ReduceMax, 0, DType::Bool));
  EXPECT_FALSE(acceptsDType(OpCode::ReduceSum, 0, DType::Bool));
  EXPECT_FALSE(acceptsDType(OpCode::Argmax, 0, DType::Bool));
  EXPECT_FALSE(acceptsDType(OpCode::Matmul, 0, DType::Bool));
  EXPECT_TRUE(acceptsDType(OpCode::Concat, 7, DType::Bool)); // variadic
  EXPECT_FALSE(acceptsDType(OpCode::Conv2d, 0, DType::I32));
  EXPECT_TRUE(acceptsDType(OpCode::MaxPool2d, 0, DType::I32));
  EXPECT_TRUE(acceptsDType(OpCode::MaskedSelect, 0, DType::F16));
  EXPECT_FALSE(acceptsDType(OpCode::MaskedSelect, 1, DType::I8));
  EXPECT_TRUE(acceptsDType(OpCode::Item, 0, DType::Bool));
  EXPECT_FALSE(acceptsDType(OpCode::Item, 0, DType::F64));
  EXPECT_TRUE(acceptsDType(OpCode::IndexSelect, 1, DType::I32));
  EXPECT_FALSE(acceptsDType(OpCode::IndexSelect, 1, DType::Bool));
  EXPECT_FALSE(acceptsDType(OpCode::Topk, 0, DType::Bool));
}

/// Runs \p code's shape rule on operands of element type \p t.
bool ruleAccepts(OpCode code, DType t, DType &result) {
  ShapeEnv env;
  Operation op{code, {}, {}, {}, {}};
  std::vector<TensorType> operands;
  TensorType rows{t, {SymExpr(2), SymExpr(3)}};
  switch (categoryOf(code)) {
  case OpCategory::ElementwiseUnary:
    operands = {rows};
    if (code == OpCode::Cast)
      op.attrs["dtype"] = DType::F16;
    break;
  case OpCategory::ElementwiseBinary:
    operands = {rows, rows};
    break;
  case OpCategory::Reduction:
    operands = {rows};
    op.attrs["axes"] = std::vector<int64_t>{1};
    op.attrs["keepdim"] = false;
    break;
  case OpCategory::Matmul:
    operands = {rows, TensorType{t, {SymExpr(3), SymExpr(4)}}};
    break;
  default:
    return false;
  }
  op.operands.resize(operands.size());
  ShapeContext ctx(env, op, operands, SourceRange());
  std::vector<TensorType> results;
  bool ok = inferResultTypes(ctx, results);
  EXPECT_FALSE(takeInternalError().has_value()) << opName(code);
  if (ok)
    result = results.at(0).dtype;
  return ok;
}

TEST(OpTable, ShapeRulesAcceptExactlyTheTablesDTypes) {
  for (OpCode c : allOpCodes()) {
    OpCategory k = categoryOf(c);
    if (k != OpCategory::ElementwiseUnary &&
        k != OpCategory::ElementwiseBinary && k != OpCategory::Reduction &&
        k != OpCategory::Matmul)
      continue;
    for (DType t : kAllDTypes) {
      DType result{};
      bool ok = ruleAccepts(c, t, result);
      std::string what =
          std::string(opName(c)) + " on " + std::string(dtypeName(t));
      EXPECT_EQ(ok, acceptsDType(c, 0, t)) << what;
      if (!ok)
        continue;
      switch (opTraits(c).result) {
      case ResultDType::Bool:
        EXPECT_EQ(result, DType::Bool) << what;
        break;
      case ResultDType::I64:
        EXPECT_EQ(result, DType::I64) << what;
        break;
      case ResultDType::FromAttr:
        EXPECT_EQ(result, DType::F16) << what;
        break;
      default:
        EXPECT_EQ(result, t) << what;
      }
    }
  }
}

TEST(OpTable, SameDTypeIsEnforcedForBinaryOps) {
  ShapeEnv env;
  Operation op{OpCode::Add, {0, 1}, {}, {}, {}};
  ShapeContext ctx(env, op,
                   {TensorType{DType::F32, {SymExpr(2)}},
                    TensorType{DType::F64, {SymExpr(2)}}},
                   SourceRange());
  std::vector<TensorType> results;
  EXPECT_FALSE(inferResultTypes(ctx, results));
  EXPECT_EQ(ctx.error, "mismatched element types f32 and f64 in 'add'");
}

} // namespace
