// The interpreter's elementwise math (ir/InterpKernels.cpp's ScalarMath
// table) against the values the per-op switches gave before it: every
// elementwise op of the op table on fixed i64, bool and f64 inputs, with the
// edge cases the interpreter, as the oracle, must keep (wrapping integers,
// floor division, NaN through maximum and minimum, the error "integer
// division by zero"). A new elementwise op fails CoversEveryElementwiseOp
// until it has a row here.
#include "ir/Interpreter.h"
#include "ir/IrText.h"
#include "ir/OpInfo.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <set>
#include <string>

using namespace tsl;

namespace {

constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
const double kNaN = std::nan("");

/// Runs `op(x[, y])` on 1-d tensors of \p type; false with \p error set when
/// the interpreter fails.
bool run(const std::string &op, const std::string &type,
         const std::vector<Tensor> &in, Tensor &out, std::string &error) {
  std::string resultType = type;
  std::set<std::string> comparisons = {"lt", "le", "gt", "ge", "eq", "ne"};
  if (comparisons.count(op))
    resultType = "bool";
  std::string params = "%x: " + type + "[N]";
  std::string operands = "%x";
  if (in.size() == 2) {
    params += ", %y: " + type + "[N]";
    operands += ", %y";
  }
  std::string text = "func @f(" + params + ") -> (" + resultType +
                     "[N]) {\n  symbol N: dynamic\n  %0 = " + op + "(" +
                     operands + ") : " + resultType + "[N]\n  return %0\n}\n";
  Module m;
  if (!parseModule(text, m, error))
    return false;
  std::vector<ArgValue> args(in.size());
  for (size_t i = 0; i < in.size(); ++i)
    args[i].tensor = in[i];
  std::vector<Tensor> outs;
  RunError runError;
  if (!interpret(m.functions[0], args, outs, runError)) {
    error = runError.message;
    return false;
  }
  out = outs[0];
  return true;
}

Tensor ints(DType t, const std::vector<int64_t> &v) {
  Tensor r = Tensor::zeros(t, {static_cast<int64_t>(v.size())});
  for (size_t i = 0; i < v.size(); ++i)
    r.setI(i, v[i]);
  return r;
}

Tensor floats(const std::vector<double> &v) {
  Tensor r = Tensor::zeros(DType::F64, {static_cast<int64_t>(v.size())});
  for (size_t i = 0; i < v.size(); ++i)
    r.setF(i, v[i]);
  return r;
}

/// One op on integer (or bool) operands and the results it must give.
struct IntCase {
  std::string op;
  DType type;
  std::vector<int64_t> x, y, want;
};

/// One op on f64 operands and the results it must give (NaN: NaN).
struct FloatCase {
  std::string op;
  std::vector<double> x, y, want;
};

const std::vector<int64_t> kX = {7, -7, kMax, kMin, 0};
const std::vector<int64_t> kY = {-2, 2, 1, -1, 3};

const std::vector<IntCase> kIntCases = {
    {"add", DType::I64, kX, kY, {5, -5, kMin, kMax, 3}},
    {"sub", DType::I64, kX, kY, {9, -9, kMax - 1, kMin + 1, -3}},
    {"mul", DType::I64, kX, kY, {-14, -14, kMax, kMin, 0}},
    // Floor division; kMin / -1 wraps.
    {"div", DType::I64, kX, kY, {-4, -4, kMax, kMin, 0}},
    {"maximum", DType::I64, kX, kY, {7, 2, kMax, -1, 3}},
    {"minimum", DType::I64, kX, kY, {-2, -7, 1, kMin, 0}},
    {"lt", DType::I64, kX, kY, {0, 1, 0, 1, 1}},
    {"le", DType::I64, {1, 2, 3}, {2, 2, 2}, {1, 1, 0}},
    {"gt", DType::I64, kX, kY, {1, 0, 1, 0, 0}},
    {"ge", DType::I64, {1, 2, 3}, {2, 2, 2}, {0, 1, 1}},
    {"eq", DType::I64, {1, 2, 3}, {2, 2, 2}, {0, 1, 0}},
    {"ne", DType::I64, {1, 2, 3}, {2, 2, 2}, {1, 0, 1}},
    {"and", DType::I64, {6, -1, 12}, {3, 5, 10}, {2, 5, 8}},
    {"or", DType::I64, {6, -1, 12}, {3, 5, 10}, {7, -1, 14}},
    {"xor", DType::I64, {6, -1, 12}, {3, 5, 10}, {5, -6, 6}},
    {"and", DType::Bool, {0, 0, 1, 1}, {0, 1, 0, 1}, {0, 0, 0, 1}},
    {"or", DType::Bool, {0, 0, 1, 1}, {0, 1, 0, 1}, {0, 1, 1, 1}},
    {"xor", DType::Bool, {0, 0, 1, 1}, {0, 1, 0, 1}, {0, 1, 1, 0}},
    {"maximum", DType::Bool, {0, 0, 1, 1}, {0, 1, 0, 1}, {0, 1, 1, 1}},
    {"neg", DType::I64, {5, -3, kMin, 0}, {}, {-5, 3, kMin, 0}},
    {"not", DType::Bool, {0, 1}, {}, {1, 0}},
    {"abs", DType::I64, {5, -3, kMin, 0}, {}, {5, 3, kMin, 0}},
    {"relu", DType::I64, {5, -3, kMin, 0}, {}, {5, 0, 0, 0}},
};

const std::vector<double> kFx = {1.5, -2.5, kNaN, 3.0, kNaN};
const std::vector<double> kFy = {2.0, 0.5, 1.0, kNaN, kNaN};

const std::vector<FloatCase> kFloatCases = {
    {"add", kFx, kFy, {3.5, -2.0, kNaN, kNaN, kNaN}},
    {"sub", kFx, kFy, {-0.5, -3.0, kNaN, kNaN, kNaN}},
    {"mul", kFx, kFy, {3.0, -1.25, kNaN, kNaN, kNaN}},
    {"div",
     {1.0, -1.0, 0.0, 6.0},
     {0.0, 0.0, 0.0, 4.0},
     {INFINITY, -INFINITY, kNaN, 1.5}},
    {"pow", {2.0, 4.0, -8.0}, {3.0, 0.5, 1.0 / 3.0}, {8.0, 2.0, kNaN}},
    // A NaN on either side gives NaN.
    {"maximum", kFx, kFy, {2.0, 0.5, kNaN, kNaN, kNaN}},
    {"minimum", kFx, kFy, {1.5, -2.5, kNaN, kNaN, kNaN}},
    {"lt", kFx, kFy, {1, 1, 0, 0, 0}},
    {"le", kFx, kFy, {1, 1, 0, 0, 0}},
    {"gt", kFx, kFy, {0, 0, 0, 0, 0}},
    {"ge", kFx, kFy, {0, 0, 0, 0, 0}},
    {"eq", {1.0, kNaN, 0.0}, {1.0, kNaN, -0.0}, {1, 0, 1}},
    {"ne", {1.0, kNaN, 0.0}, {1.0, kNaN, -0.0}, {0, 1, 0}},
    {"neg", {1.5, -0.0, kNaN}, {}, {-1.5, 0.0, kNaN}},
    {"exp", {0.0, 1.0}, {}, {1.0, std::exp(1.0)}},
    {"log", {1.0, 0.0, -1.0}, {}, {0.0, -INFINITY, kNaN}},
    {"sqrt", {4.0, -1.0}, {}, {2.0, kNaN}},
    {"rsqrt", {4.0, 0.0}, {}, {0.5, INFINITY}},
    {"tanh", {0.0, 100.0, -100.0}, {}, {0.0, 1.0, -1.0}},
    {"sigmoid", {0.0, 1000.0, -1000.0}, {}, {0.5, 1.0, 0.0}},
    {"relu", {-1.0, 2.0, kNaN}, {}, {0.0, 2.0, kNaN}},
    {"gelu",
     {0.0, 1.0},
     {},
     {0.0, 0.5 * (1.0 + std::erf(1.0 / std::sqrt(2.0)))}},
    {"erf", {0.0, 1.0}, {}, {0.0, std::erf(1.0)}},
    {"abs", {-1.5, -0.0, kNaN}, {}, {1.5, 0.0, kNaN}},
    {"sin", {0.0, 1.0}, {}, {0.0, std::sin(1.0)}},
    {"cos", {0.0, 1.0}, {}, {1.0, std::cos(1.0)}},
    {"floor", {-1.5, -0.0, 2.0, 0.75, kNaN}, {}, {-2.0, -0.0, 2.0, 0.0, kNaN}},
    {"ceil", {-1.5, -0.25, 2.0, 0.75, kNaN}, {}, {-1.0, -0.0, 2.0, 1.0, kNaN}},
    {"round", {-2.5, -0.5, 1.5, 0.75, kNaN}, {}, {-2.0, -0.0, 2.0, 1.0, kNaN}},
};

TEST(InterpElementwise, IntegerMath) {
  for (const IntCase &c : kIntCases) {
    std::string type(dtypeName(c.type));
    std::vector<Tensor> in = {ints(c.type, c.x)};
    if (!c.y.empty())
      in.push_back(ints(c.type, c.y));
    Tensor out;
    std::string error;
    ASSERT_TRUE(run(c.op, type, in, out, error)) << c.op << ": " << error;
    ASSERT_EQ(out.numel(), c.want.size()) << c.op;
    for (size_t i = 0; i < c.want.size(); ++i)
      EXPECT_EQ(out.getI(i), c.want[i]) << c.op << " " << type << " at " << i;
  }
}

TEST(InterpElementwise, FloatMath) {
  for (const FloatCase &c : kFloatCases) {
    std::vector<Tensor> in = {floats(c.x)};
    if (!c.y.empty())
      in.push_back(floats(c.y));
    Tensor out;
    std::string error;
    ASSERT_TRUE(run(c.op, "f64", in, out, error)) << c.op << ": " << error;
    ASSERT_EQ(out.numel(), c.want.size()) << c.op;
    for (size_t i = 0; i < c.want.size(); ++i) {
      double got = out.getF(i), want = c.want[i];
      if (std::isnan(want))
        EXPECT_TRUE(std::isnan(got)) << c.op << " at " << i << ": " << got;
      else
        EXPECT_EQ(got, want) << c.op << " at " << i;
      if (want == 0.0 && !std::isnan(got)) { // the sign of zero is kept
        EXPECT_EQ(std::signbit(got), std::signbit(want)) << c.op << " at " << i;
      }
    }
  }
}

TEST(InterpElementwise, IntegerDivisionByZeroFails) {
  Tensor out;
  std::string error;
  EXPECT_FALSE(run("div", "i64",
                   {ints(DType::I64, {1, 2}), ints(DType::I64, {1, 0})}, out,
                   error));
  EXPECT_NE(error.find("div: integer division by zero"), std::string::npos)
      << error;
}

TEST(InterpElementwise, CoversEveryElementwiseOp) {
  std::set<std::string> tested;
  for (const IntCase &c : kIntCases)
    tested.insert(c.op);
  for (const FloatCase &c : kFloatCases)
    tested.insert(c.op);
  for (const OpTraits &t : kOpTable) {
    bool math = t.category == OpCategory::ElementwiseUnary ||
                t.category == OpCategory::ElementwiseBinary;
    if (math && t.code != OpCode::Cast) {
      EXPECT_TRUE(tested.count(std::string(t.name)))
          << "no case for elementwise op '" << t.name << "'";
    }
  }
}

} // namespace
