#include "shapes/ShapeEnv.h"

#include <gtest/gtest.h>

using namespace tsl;

namespace {

/// A prover case: symbols with ranges, facts, a condition, the answer.
struct ProveCase {
  const char *symbols; // "N:1..; M:0..10; K%16"
  const char *facts;   // "N == 4" (conditions joined by ';')
  const char *cond;
  Truth expected;
};

std::ostream &operator<<(std::ostream &os, const ProveCase &c) {
  return os << c.cond << " with [" << c.symbols << "] facts [" << c.facts
            << "]";
}

void setup(ShapeEnv &env, const std::string &symbols,
           const std::string &facts) {
  size_t pos = 0;
  while (pos < symbols.size()) {
    size_t end = symbols.find(';', pos);
    if (end == std::string::npos)
      end = symbols.size();
    std::string item = symbols.substr(pos, end - pos);
    while (!item.empty() && item[0] == ' ')
      item.erase(0, 1);
    SymbolInfo s;
    size_t colon = item.find(':'), pct = item.find('%');
    s.name = item.substr(0, std::min(colon, pct));
    if (colon != std::string::npos) {
      std::string range = item.substr(colon + 1);
      size_t dots = range.find("..");
      s.lo = std::stoll(range.substr(0, dots));
      if (dots + 2 < range.size())
        s.hi = std::stoll(range.substr(dots + 2));
    }
    if (pct != std::string::npos)
      s.multipleOf = std::stoll(item.substr(pct + 1));
    if (!s.name.empty())
      env.addSymbol(s);
    pos = end + 1;
  }
  pos = 0;
  while (pos < facts.size()) {
    size_t end = facts.find(';', pos);
    if (end == std::string::npos)
      end = facts.size();
    SymCond c;
    std::string err;
    ASSERT_TRUE(parseSymCond(facts.substr(pos, end - pos), c, err)) << err;
    env.addFact(c);
    pos = end + 1;
  }
}

class Prover : public ::testing::TestWithParam<ProveCase> {};

TEST_P(Prover, Decides) {
  const ProveCase &c = GetParam();
  ShapeEnv env;
  setup(env, c.symbols, c.facts);
  SymCond cond;
  std::string err;
  ASSERT_TRUE(parseSymCond(c.cond, cond, err)) << err;
  EXPECT_EQ(env.prove(cond), c.expected);
}

constexpr Truth T = Truth::True, F = Truth::False, U = Truth::Unknown;

INSTANTIATE_TEST_SUITE_P(
    Cheap, Prover,
    ::testing::Values(
        ProveCase{"N", "", "N + 1 > N", T}, ProveCase{"N", "", "N == N + 1", F},
        ProveCase{"N", "", "N >= 0", T}, ProveCase{"N", "", "N >= 1", U},
        ProveCase{"N:2..", "", "N == 1", F},
        ProveCase{"N:2..", "", "N != 1", T},
        ProveCase{"N:1..8", "", "N <= 8", T},
        ProveCase{"N:1..8", "", "N > 8", F}, ProveCase{"N; M", "", "N == M", U},
        ProveCase{"N; M", "N == M", "N == M", T},
        ProveCase{"N; M", "N == M", "N != M", F},
        ProveCase{"N; M", "N == 4", "N * 2 == 8", T},
        ProveCase{"S", "", "S * 2 == 3", F},
        ProveCase{"K%16", "", "K == 17", F},
        ProveCase{"K%16", "", "K == 32", U}, ProveCase{"S", "", "S % 2 < 2", T},
        ProveCase{"S", "", "S % 2 >= 0", T},
        ProveCase{"S:1..", "", "S * 12 > S", T},
        ProveCase{"U:1..", "", "U * 12 > U", T},
        ProveCase{"S", "", "min(64 * S, 512 * S) == 64 * S", T},
        ProveCase{"S:2..; T:1..", "", "S * T > T", T},
        ProveCase{"I:2..", "", "36 * I != 36", T},
        ProveCase{"H:3..", "", "(H - 3) / 1 + 1 >= 1", T},
        ProveCase{"N", "", "true", T}, ProveCase{"N", "", "false", F},
        ProveCase{"N:0..3", "", "N < 4 && N >= 0", T},
        ProveCase{"N:0..3", "", "N > 5 || N < 0", F},
        ProveCase{"N:5..9; M:0..4", "", "N > M", T},
        ProveCase{"N:5..9; M:0..4", "", "N + M <= 13", T},
        ProveCase{"N; M", "", "max(N, M) >= N", T}));

// Questions the cheap rules cannot answer: Z3 decides them (nonlinear
// arithmetic, floor division, facts that interact).
INSTANTIATE_TEST_SUITE_P(
    Z3, Prover,
    ::testing::Values(ProveCase{"I:1..; S", "I * S * S == 9 * I", "S == 3", T},
                      ProveCase{"I:1..; S", "", "I * S * S == 9 * I", U},
                      ProveCase{"I:1..; S", "S == 3", "I * S * S == 9 * I", T},
                      ProveCase{"I:1..; S", "S != 3", "I * S * S == 9 * I", F},
                      ProveCase{"I:0..; S", "I * S * S == 9 * I", "S == 3", U},
                      ProveCase{"I:2..", "", "36 * I != 36", T},
                      ProveCase{"I:1..", "", "36 * I != 36", U},
                      ProveCase{"S:2..; T:1..", "", "S * T >= 2 * T", T},
                      ProveCase{"S:1..; T:1..", "", "S * T > T", U},
                      ProveCase{"S", "S % 2 == 0", "2 * (S / 2) == S", T},
                      ProveCase{"S", "", "2 * (S / 2) == S", U},
                      ProveCase{"S", "S % 2 == 1", "2 * (S / 2) == S", F},
                      ProveCase{"S", "", "2 * (S / 2) <= S", T},
                      ProveCase{"S", "", "S - S / 2 >= S / 2", T},
                      ProveCase{"S:1..", "", "(S + 1) / 2 >= 1", T},
                      ProveCase{"N; M", "N == M", "N * N == M * M", T},
                      ProveCase{"N; M", "N <= M", "min(N, M) == N", T},
                      ProveCase{"N; M", "N <= M", "max(N, M) == N", U},
                      ProveCase{"N; M", "N < M", "max(N, M) == N", F},
                      ProveCase{"A; B", "A * B == 0; A >= 1", "B == 0", T},
                      ProveCase{"A; B", "A + B == 10; A - B == 4", "A == 7", T},
                      ProveCase{"A; B", "A + B == 10; A - B == 4", "B == 4", F},
                      ProveCase{"K%16", "", "K % 8 == 0", T},
                      ProveCase{"K%16", "", "K % 32 == 0", U},
                      ProveCase{"K%16", "K >= 1", "K >= 16", T},
                      ProveCase{"H:0..", "", "(H + 2 - 3) / 2 + 1 >= 1", U},
                      ProveCase{"H:3..", "", "(H + 2 - 3) / 2 + 1 >= 1", T},
                      ProveCase{"U:0..100", "U > 50", "U * 2 > 100", T},
                      ProveCase{"U:0..100; V:0..100", "U == V; U + V == 64",
                                "U == 32", T},
                      ProveCase{"B; S", "B * S == 12; B == 3", "S == 4", T},
                      ProveCase{"N", "N % 4 == 0", "N % 2 == 0", T},
                      ProveCase{"N", "N % 4 == 0", "N % 8 == 0", U},
                      ProveCase{"N:1..", "", "N * N >= N", T},
                      ProveCase{"N", "", "N * N >= 0", T}));

class CheapProver : public ::testing::TestWithParam<ProveCase> {};

TEST_P(CheapProver, DecidesWithoutZ3) {
  const ProveCase &c = GetParam();
  ShapeEnv env;
  setup(env, c.symbols, c.facts);
  SymCond cond;
  std::string err;
  ASSERT_TRUE(parseSymCond(c.cond, cond, err)) << err;
  EXPECT_EQ(env.proveCheap(cond), c.expected);
}

// Without Z3: a symbol known to be a multiple of k (multiple_of, a fact
// `s % k == 0`) is k times its quotient, so `s / k` is that quotient (the
// gradient of reshape(x, [B, 4, D / 4]) asks the first one); a fact matches
// its equation written the other way round.
INSTANTIATE_TEST_SUITE_P(
    Divisibility, CheapProver,
    ::testing::Values(
        ProveCase{"B; D", "D % 4 == 0", "B * D == 4 * B * (D / 4)", T},
        ProveCase{"B; D", "0 == D % 4", "4 * B * (D / 4) == B * D", T},
        ProveCase{"B; D%4", "", "B * D == 4 * B * (D / 4)", T},
        ProveCase{"B; D%8", "", "B * D == 4 * B * (D / 4)", T},
        ProveCase{"D", "D % 2 == 0; D % 3 == 0", "6 * (D / 6) == D", T},
        ProveCase{"D", "D % 4 == 0", "4 * (D / 4) == D + 1", F},
        ProveCase{"D", "D % 4 == 0", "4 * (D / 4) != D", F},
        ProveCase{"D", "D % 4 == 0", "4 * (D / 4) >= D", T},
        ProveCase{"N:-100..10", "N % 4 == 0", "4 * (N / 4) == N", T},
        // Divisors whose lcm leaves int64: the first one is used.
        ProveCase{"D", "D % 4294967311 == 0; D % 4294967291 == 0",
                  "4294967311 * (D / 4294967311) == D", T},
        // Not known to divide: undecided (Z3 may still decide it).
        ProveCase{"B; D", "", "B * D == 4 * B * (D / 4)", U},
        ProveCase{"B; D", "D % 2 == 0", "B * D == 4 * B * (D / 4)", U},
        ProveCase{"A; B; C", "A * B == 4 * C", "4 * C == A * B", T},
        ProveCase{"A; B; C", "A * B == 4 * C", "4 * C != A * B", F},
        ProveCase{"A; B; C", "A * B != 4 * C", "4 * C == A * B", F}));

// Z3, with facts that state one division twice (a fact and its reverse,
// as the gradient states them): each `x % 4` and `x / 4` is one quotient,
// not one per occurrence (one each put these past Z3's resource limit).
INSTANTIATE_TEST_SUITE_P(
    Z3SharedQuotients, Prover,
    ::testing::Values(ProveCase{"B; D", "(B * D) % 4 == 0; 0 == (B * D) % 4",
                                "4 * ((B * D) / 4) == B * D", T},
                      ProveCase{"B; C; D", "(C * D) % 4 == 0; 0 == (C * D) % 4",
                                "B * C * D == 4 * B * ((C * D) / 4)", T},
                      ProveCase{"B; C; D", "(C * D) % 4 == 0; 0 == (C * D) % 4",
                                "B * C * D == 4 * B * ((C * D) / 4) + 1", F}));

} // namespace

namespace {

/// cancelCommonFactors: symbols with ranges, an equation, what it becomes.
struct CancelCase {
  const char *symbols;
  const char *cond;
  const char *expected; // as SymCond::str() prints it
};

class CancelFactors : public ::testing::TestWithParam<CancelCase> {};

TEST_P(CancelFactors, DividesOutNonZeroFactors) {
  const CancelCase &c = GetParam();
  ShapeEnv env;
  setup(env, c.symbols, "");
  SymCond cond;
  std::string err;
  ASSERT_TRUE(parseSymCond(c.cond, cond, err)) << err;
  EXPECT_EQ(env.cancelCommonFactors(cond).str(), c.expected) << c.cond;
}

INSTANTIATE_TEST_SUITE_P(
    ShapeEnv, CancelFactors,
    ::testing::Values(
        // The held-out case: I unbacked 1..1024, R a dim.
        CancelCase{"I:1..1024; R:0..", "I * R * R == 16 * I", "R == 4"},
        CancelCase{"I:1..1024; R:0..", "I * R * R == 15 * I", "false"},
        CancelCase{"I:1..; R:0..", "I * R * R * R == 27 * I", "R == 3"},
        // Both sides keep a symbol: the equation of what is left.
        CancelCase{"I:1..; A:0..; B:0..", "I * A == I * B", "A == B"},
        CancelCase{"I:1..; A:0..; B:0..", "I * I * A == 2 * I * B",
                   "A * I == 2 * B"},
        // A factor that may be 0 stays (I == 0 satisfies it for any R).
        CancelCase{"I:0..; R:0..", "I * R * R == 16 * I",
                   "I * R * R == 16 * I"},
        // Nothing common, or not a product of symbols: unchanged.
        CancelCase{"A:1..; B:1..", "A * B == 16", "A * B == 16"},
        CancelCase{"A:1..; B:1..", "A * (B / 2) == 4 * A",
                   "A * (B / 2) == 4 * A"},
        CancelCase{"A:1..; B:1..", "A * B < 4 * A", "A * B < 4 * A"}));

} // namespace

namespace {

/// Facts forgotten at the end of a scope (a loop body) and others added in
/// their place, as many: a question Z3 answered under the first facts is
/// asked again under the others and must be decided under those.
TEST(Prover, AnswersUnderTheFactsOfTheMoment) {
  ShapeEnv env;
  setup(env, "N", "");
  SymCond cond, first, second;
  std::string err;
  ASSERT_TRUE(parseSymCond("N * N <= 16", cond, err)) << err;
  ASSERT_TRUE(parseSymCond("N <= 4", first, err)) << err;
  ASSERT_TRUE(parseSymCond("N <= 5", second, err)) << err;
  ShapeEnv::FactMark mark = env.markFacts();
  env.addFact(first);
  EXPECT_EQ(env.prove(cond), Truth::True);
  env.forgetFactsSince(mark);
  env.addFact(second);
  EXPECT_EQ(env.prove(cond), Truth::Unknown);
}

} // namespace
