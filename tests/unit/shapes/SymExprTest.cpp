#include "shapes/SymCond.h"

#include <gtest/gtest.h>

#include <random>

using namespace tsl;

namespace {

SymExpr parse(const std::string &s) {
  SymExpr e;
  std::string err;
  EXPECT_TRUE(parseSymExpr(s, e, err)) << s << ": " << err;
  return e;
}

struct CanonCase {
  const char *input;
  const char *canonical;
};

class Canonical : public ::testing::TestWithParam<CanonCase> {};

TEST_P(Canonical, PrintsCanonicalForm) {
  EXPECT_EQ(parse(GetParam().input).str(), GetParam().canonical);
}

INSTANTIATE_TEST_SUITE_P(
    SymExpr, Canonical,
    ::testing::Values(
        CanonCase{"1 + 2 * 3", "7"}, CanonCase{"N + N", "2 * N"},
        CanonCase{"N - N", "0"}, CanonCase{"N * S + 1", "N * S + 1"},
        CanonCase{"S * N + 1", "N * S + 1"},
        CanonCase{"(N + 1) * (N - 1)", "N * N - 1"},
        CanonCase{"(H - 1) / 2 + 1", "(H + 1) / 2"},
        CanonCase{"(H - 3) / 2 + 1", "(H + 1) / 2 - 1"},
        CanonCase{"(2 * N + 4) / 2", "N + 2"},
        CanonCase{"(2 * N + 1) / 2", "N"}, CanonCase{"(S * 2 + S) / 3", "S"},
        CanonCase{"N / 2 / 3", "N / 6"}, CanonCase{"(2 * N) % 2", "0"},
        CanonCase{"(2 * N + 3) % 2", "1"}, CanonCase{"N % 3 % 3", "N % 3"},
        CanonCase{"N % 6 % 3", "N % 3"}, CanonCase{"min(N, N)", "N"},
        CanonCase{"min(N, N + 1)", "N"}, CanonCase{"max(N, N + 1)", "N + 1"},
        CanonCase{"min(B, A)", "min(A, B)"}, CanonCase{"min(3, 5)", "3"},
        CanonCase{"max(-2, 7)", "7"}, CanonCase{"-7 / 2", "-4"},
        CanonCase{"-7 % 2", "1"}, CanonCase{"N / 1", "N"},
        CanonCase{"N % 1", "0"}, CanonCase{"0 - N", "-N"},
        CanonCase{"3 * (N - 2) + 6", "3 * N"},
        CanonCase{"A * B * C / A", "B * C"}, CanonCase{"A * B * C % A", "0"},
        CanonCase{"(2 * A * B + 4 * A) / (2 * A)", "B + 2"},
        CanonCase{"(A * B + 1) / A", "(A * B + 1) / A"},
        CanonCase{"A * A / A", "A"}));

TEST(SymExpr, HashConsedEquality) {
  EXPECT_EQ(parse("N * S + 1"), parse("1 + S * N"));
  EXPECT_NE(parse("N + 1"), parse("N + 2"));
  EXPECT_EQ(parse("N * S").hash(), parse("S * N").hash());
}

TEST(SymExpr, EvaluateAndSubstitute) {
  SymExpr e = parse("(H + 2 * P - K) / S + 1");
  std::map<std::string, int64_t> v{{"H", 32}, {"P", 1}, {"K", 3}, {"S", 2}};
  EXPECT_EQ(*e.evaluate(v), 16);
  EXPECT_FALSE(
      e.evaluate(std::map<std::string, int64_t>{{"H", 1}}).has_value());
  SymExpr s = e.substitute({{"P", SymExpr(0)}, {"S", SymExpr(1)}});
  EXPECT_EQ(s.str(), "H - K + 1");
}

TEST(SymExpr, EvaluateReportsDivisionByZeroAndOverflow) {
  EXPECT_FALSE(parse("N / M").evaluate(
      std::map<std::string, int64_t>{{"N", 1}, {"M", 0}}));
  EXPECT_FALSE(parse("N * N").evaluate(
      std::map<std::string, int64_t>{{"N", int64_t(1) << 40}}));
}

TEST(SymExpr, Symbols) {
  auto syms = parse("min(B, A) * C + A").symbols();
  EXPECT_EQ(syms, (std::vector<std::string>{"A", "B", "C"}));
}

TEST(SymExpr, ParseErrors) {
  SymExpr e;
  std::string err;
  EXPECT_FALSE(parseSymExpr("N +", e, err));
  EXPECT_FALSE(parseSymExpr("min(N)", e, err));
  EXPECT_FALSE(parseSymExpr(std::string(1000, '(') + "N", e, err));
  EXPECT_NE(err.find("nested too deeply"), std::string::npos);
}

TEST(SymCond, PrintAndParse) {
  SymCond c;
  std::string err;
  ASSERT_TRUE(parseSymCond("N == M && S % 2 == 0", c, err)) << err;
  EXPECT_EQ(c.str(), "N == M && S % 2 == 0");
  ASSERT_TRUE(parseSymCond("!(A < B) || (N + 1) * 2 >= 4", c, err)) << err;
  EXPECT_EQ(c.str(), "A >= B || 2 * N + 2 >= 4");
  EXPECT_EQ(SymCond::lt(SymExpr(1), SymExpr(2)).kind(), SymCond::Kind::True);
}

} // namespace

namespace {

// Size arithmetic is exact: a result (or a coefficient) outside int64 is
// the poison expression, never a wrapped value (2^64 + 5 used to be 5).
class Overflows : public ::testing::TestWithParam<const char *> {};

TEST_P(Overflows, GivesThePoisonExpression) {
  SymExpr e = parse(GetParam());
  EXPECT_TRUE(e.isOverflow()) << GetParam() << " gave " << e.str();
  EXPECT_EQ(e.str(), "<overflow>");
  EXPECT_FALSE(e.evaluate(std::map<std::string, int64_t>{{"N", 1}}));
}

INSTANTIATE_TEST_SUITE_P(
    SymExpr, Overflows,
    ::testing::Values(
        "4294967296 * 4294967296 + 5", "4611686018427387904 * 4",
        "9223372036854775807 + 1", "-9223372036854775807 - 2",
        "0 - (-9223372036854775807 - 1)",
        "(-9223372036854775807 - 1) / (0 - 1)", "N * 4611686018427387904 * 4",
        "N * 4611686018427387904 + N * 4611686018427387904",
        "(N + 4611686018427387904) * 2", "min(N, 9223372036854775807 + 1)",
        "max(N * 4294967296 * 4294967296, 3)", "(4294967296 * 4294967296) / 2",
        "(4294967296 * 4294967296) % 7"));

struct EdgeCase {
  const char *input;
  const char *canonical;
};

class FitsAtTheEdge : public ::testing::TestWithParam<EdgeCase> {};

TEST_P(FitsAtTheEdge, IsExact) {
  EXPECT_EQ(parse(GetParam().input).str(), GetParam().canonical);
}

INSTANTIATE_TEST_SUITE_P(
    SymExpr, FitsAtTheEdge,
    ::testing::Values(
        EdgeCase{"4611686018427387903 * 2 + 1", "9223372036854775807"},
        EdgeCase{"-9223372036854775807 - 1", "-9223372036854775808"},
        EdgeCase{"N * 4611686018427387904", "4611686018427387904 * N"},
        // min/max compare by subtraction; a difference that leaves int64
        // only stops the simplification.
        EdgeCase{"min(N, -9223372036854775807 - 1)",
                 "min(-9223372036854775808, N)"}));

TEST(SymExpr, EvaluateReportsOverflowOfAnyStep) {
  SymExpr e = parse("N * N + 2");
  EXPECT_EQ(*e.evaluate(std::map<std::string, int64_t>{{"N", 3037000499}}),
            int64_t(3037000499) * 3037000499 + 2);
  EXPECT_FALSE(e.evaluate(std::map<std::string, int64_t>{{"N", 4294967296}}));
  EXPECT_FALSE(parse("N * 4611686018427387904")
                   .evaluate(std::map<std::string, int64_t>{{"N", 3}}));
}

} // namespace

namespace {

/// A random expression over A, B, C and small constants, of at most
/// \p depth levels, built through the simplifier.
SymExpr randomExpr(std::mt19937 &rng, int depth) {
  std::uniform_int_distribution<int> pick(0, depth > 0 ? 9 : 1);
  std::uniform_int_distribution<int> small(-9, 9), positive(1, 9);
  switch (pick(rng)) {
  case 0:
    return SymExpr::constant(small(rng));
  case 1:
    return SymExpr::symbol(std::string(1, char('A' + positive(rng) % 3)));
  case 2:
  case 3:
    return randomExpr(rng, depth - 1) + randomExpr(rng, depth - 1);
  case 4:
    return randomExpr(rng, depth - 1) - randomExpr(rng, depth - 1);
  case 5:
    return randomExpr(rng, depth - 1) * randomExpr(rng, depth - 1);
  case 6: // divisors that cannot be zero: constants or a positive form
    return SymExpr::floorDiv(randomExpr(rng, depth - 1),
                             SymExpr::constant(positive(rng)));
  case 7:
    return SymExpr::mod(randomExpr(rng, depth - 1),
                        SymExpr::constant(positive(rng)));
  case 8:
    return SymExpr::min(randomExpr(rng, depth - 1), randomExpr(rng, depth - 1));
  default:
    return SymExpr::max(randomExpr(rng, depth - 1), randomExpr(rng, depth - 1));
  }
}

} // namespace

// Every printed expression reads back, in TSL's own syntax, as the same
// function of its symbols: the printer puts in the parentheses the grammar
// needs (`2 * (E / 2)`, not `2 * E / 2`, which means (2 * E) / 2). Reading
// back may simplify further (the parser builds bottom-up with the facts of
// each step), so the check is the value at random points, and that a
// second round trip prints the same text.
TEST(SymExpr, PrintParseRoundTripOnRandomExpressions) {
  std::mt19937 rng(20261124);
  std::uniform_int_distribution<int64_t> value(-30, 30);
  for (int i = 0; i < 20000; ++i) {
    SymExpr e = randomExpr(rng, 4);
    if (e.kind() == SymExpr::Kind::Overflow)
      continue;
    SymExpr back, again;
    std::string err;
    ASSERT_TRUE(parseSymExpr(e.str(), back, err)) << e.str() << ": " << err;
    for (int p = 0; p < 8; ++p) {
      std::map<std::string, int64_t> at{
          {"A", value(rng)}, {"B", value(rng)}, {"C", value(rng)}};
      ASSERT_EQ(e.evaluate(at), back.evaluate(at))
          << e.str() << " read back as " << back.str() << " at A=" << at["A"]
          << " B=" << at["B"] << " C=" << at["C"];
    }
    ASSERT_TRUE(parseSymExpr(back.str(), again, err)) << back.str();
    ASSERT_EQ(again.str(), back.str());
  }
}

TEST(SymExpr, QuotientTimesConstantKeepsItsParentheses) {
  SymExpr e = SymExpr::constant(2) *
              SymExpr::floorDiv(SymExpr::symbol("E"), SymExpr::constant(2));
  EXPECT_EQ(e.str(), "2 * (E / 2)");
  SymExpr m = SymExpr::constant(3) *
              SymExpr::mod(SymExpr::symbol("E"), SymExpr::constant(4));
  EXPECT_EQ(m.str(), "3 * (E % 4)");
}
