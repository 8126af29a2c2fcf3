#pragma once
/// \file The symbols of one compilation, what is known about them, and the
/// decision policy of LANGUAGE.md §6 (prove, else guard from the hint, else
/// assert at run time, else report).

#include "shapes/SymCond.h"
#include "support/SourceManager.h"

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace tsl {

class Z3Solver;

/// How a dim or int parameter may vary (LANGUAGE.md §2).
enum class DimKind : uint8_t { Static, Dynamic, Unbacked, Auto };
const char *dimKindName(DimKind kind);

/// A tri-state answer: the prover never guesses.
enum class Truth : uint8_t { True, False, Unknown };

/// What the compiler knows about one symbol.
struct SymbolInfo {
  std::string name;
  DimKind kind = DimKind::Dynamic;
  /// The value seen when compiling (backed symbols only).
  std::optional<int64_t> hint;
  /// Inclusive lower bound; INT64_MIN for an unbounded `int` parameter.
  int64_t lo = 0;
  std::optional<int64_t> hi;
  int64_t multipleOf = 1;
  /// An `int` parameter rather than a tensor dim (may be negative).
  bool isInt = false;
  SourceRange origin;
  /// For unbacked symbols: what produced it ("the row count of nonzero(...)").
  std::string description;
  /// The variable of a `for` loop: a requirement on it must hold in every
  /// iteration, so one the prover cannot prove is an error, not a runtime
  /// assertion (not printed in the IR; the verifier does not need it).
  bool loopVariable = false;
};

/// A guard or runtime assertion with its provenance.
struct ShapeFact {
  SymCond cond;
  SourceRange origin;
  std::string op;
  std::string reason;
};

/// One compilation's symbols, facts, guards and assertions.
class ShapeEnv {
public:
  /// Adds a symbol; the name must not be in use. Returns the symbol.
  SymExpr addSymbol(SymbolInfo info);
  /// A fresh unbacked symbol u0, u1, ... with an inclusive range.
  SymExpr freshUnbacked(int64_t lo, std::optional<int64_t> hi,
                        std::string description, SourceRange origin);
  const SymbolInfo *lookup(const std::string &name) const;
  const std::vector<SymbolInfo> &symbols() const { return symbols_; }

  /// Records a condition assumed true from here on (a `check`, a guard).
  void addFact(const SymCond &cond);
  const std::vector<SymCond> &facts() const { return facts_; }
  /// How many facts there are, for forgetFactsSince.
  struct FactMark {
    size_t facts = 0, declared = 0;
  };
  FactMark markFacts() const { return {facts_.size(), declaredFacts_.size()}; }
  /// Forgets the facts added since \p mark: facts that hold only in a
  /// scope, such as `0 <= l < L` inside the body of `for l in 0..L` (after
  /// the loop, which may have run no iteration, they prove nothing).
  void forgetFactsSince(FactMark mark) {
    facts_.resize(std::min(facts_.size(), mark.facts));
    declaredFacts_.resize(std::min(declaredFacts_.size(), mark.declared));
  }

  /// Proves or refutes \p cond from its form, symbol ranges, divisibility
  /// and recorded facts (cheap rules first, then Z3); Unknown otherwise.
  /// Never uses hints.
  Truth prove(const SymCond &cond) const;
  /// prove() without the Z3 stage.
  Truth proveCheap(const SymCond &cond) const;
  /// Symbol values (within ranges and facts) where \p cond is false; empty
  /// when none was found.
  std::map<std::string, int64_t> counterexample(const SymCond &cond) const;
  /// Drops every guard implied by the other guards plus the declared
  /// ranges and facts, keeping the first of equivalent guards.
  void minimizeGuards();

  /// Rewrites \p e with the replacements the facts imply: `S == 4` turns S
  /// into 4, `U == V` turns the later symbol into the earlier one.
  SymExpr simplify(SymExpr e) const;
  /// simplify(), then each min/max the prover decides from the facts
  /// (`min(5, pos + 1)` is `pos + 1` after `check(pos < 5)`). Slower (it
  /// may call Z3): for what is printed and kept, such as result types.
  SymExpr simplifyWithFacts(SymExpr e) const;

  /// The value of \p e under the hints; nullopt if a symbol has no hint.
  std::optional<int64_t> hintValue(SymExpr e) const;
  std::optional<bool> hintTruth(const SymCond &cond) const;

  /// \p cond with the factors common to both sides of an equation divided
  /// out where they are provably non-zero (`I * R * R == 16 * I` with
  /// I >= 1 is `R * R == 16`), and `s^k == c` for a non-negative symbol
  /// solved (`R == 4`, or false when c has no integer root). Other
  /// conditions are returned as they are.
  SymCond cancelCommonFactors(const SymCond &cond) const;

  /// How a requirement was met.
  enum class Resolution { Proven, Guarded, Asserted, Violated };

  /// A requirement (`a == b` for an elementwise op, an index in bounds):
  /// proven → Proven; refuted, or not proven for every value of a loop
  /// variable it mentions → Violated; else if every symbol has a hint,
  /// the hint decides (true → a guard, false → Violated); else a runtime
  /// assertion is recorded (Asserted).
  Resolution require(const SymCond &cond, SourceRange origin, std::string op,
                     std::string reason);

  /// A choice (an `if`, "does this dim broadcast?"): proven → that answer;
  /// else the hint decides and the answer becomes a guard; Unknown when
  /// there is no hint (the caller reports or picks a documented default).
  Truth choose(const SymCond &cond, SourceRange origin, std::string op,
               std::string reason);

  const std::vector<ShapeFact> &guards() const { return guards_; }
  const std::vector<ShapeFact> &assertions() const { return assertions_; }

private:
  /// proveCheap's rules for one comparison: its sides' difference bounded
  /// by the symbols' ranges, or an equation whose coefficients' gcd does
  /// not divide its constant.
  Truth proveComparison(const SymCond &cond) const;
  /// Each symbol of \p cond known to be a multiple of k > 1 (its
  /// multiple_of, facts `s % k == 0`) mapped to k times a fresh quotient
  /// symbol named `s/k`: `s / k` then simplifies to that symbol.
  std::map<std::string, SymExpr> multiplesOf(const SymCond &cond) const;
  /// The index of \p name in symbols_, or symbols_.size().
  size_t indexOf(const std::string &name) const;

  std::vector<SymbolInfo> symbols_;
  /// symbols_ by name: a function of 10,000 `for` loops has a symbol per
  /// loop, and a linear lookup made checking it quadratic (450 s).
  std::unordered_map<std::string, size_t> symbolIndex_;
  std::vector<SymCond> facts_;
  std::vector<ShapeFact> guards_;
  std::vector<ShapeFact> assertions_;
  unsigned nextUnbacked_ = 0;
  /// Facts from declarations and check(...), not from guards or the
  /// assertions operations need (guard minimization may rely on these).
  std::vector<SymCond> declaredFacts_;
  bool addingGuard_ = false;
  mutable std::shared_ptr<Z3Solver> z3_;
  Z3Solver &z3() const;
};

} // namespace tsl
