#pragma once
/// \file Conditions over symbolic integers: comparisons combined with
/// `&&`, `||` and `!`. Small value types (not interned).

#include "shapes/SymExpr.h"

#include <memory>
#include <string>
#include <vector>

namespace tsl {

/// A boolean condition on symbolic integers.
class SymCond {
public:
  enum class Kind : uint8_t {
    True,
    False,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    And,
    Or,
    Not
  };

  SymCond() : kind_(Kind::True) {}
  static SymCond truth(bool value);
  /// A comparison; folds to True/False when both sides are constants.
  static SymCond compare(Kind op, SymExpr lhs, SymExpr rhs);
  static SymCond eq(SymExpr a, SymExpr b) { return compare(Kind::Eq, a, b); }
  static SymCond ne(SymExpr a, SymExpr b) { return compare(Kind::Ne, a, b); }
  static SymCond lt(SymExpr a, SymExpr b) { return compare(Kind::Lt, a, b); }
  static SymCond le(SymExpr a, SymExpr b) { return compare(Kind::Le, a, b); }
  static SymCond gt(SymExpr a, SymExpr b) { return compare(Kind::Gt, a, b); }
  static SymCond ge(SymExpr a, SymExpr b) { return compare(Kind::Ge, a, b); }
  static SymCond conj(SymCond a, SymCond b);
  static SymCond disj(SymCond a, SymCond b);
  static SymCond negate(SymCond a);

  Kind kind() const { return kind_; }
  bool isComparison() const { return kind_ >= Kind::Eq && kind_ <= Kind::Ge; }
  bool isConst() const { return kind_ == Kind::True || kind_ == Kind::False; }
  SymExpr lhs() const { return lhs_; }
  SymExpr rhs() const { return rhs_; }
  const std::vector<SymCond> &children() const { return *children_; }

  /// TSL syntax: `N == M`, `S % 2 == 0 && T >= 1`, `!(A < B)`.
  std::string str() const;
  std::vector<std::string> symbols() const;
  SymCond substitute(const std::map<std::string, SymExpr> &repl) const;
  /// Evaluates under an assignment; nullopt when some value is missing.
  std::optional<bool> evaluate(
      const std::function<std::optional<int64_t>(const std::string &)> &lookup)
      const;
  bool operator==(const SymCond &o) const;

private:
  Kind kind_;
  SymExpr lhs_, rhs_;
  /// One empty child list shared by every leaf condition: a fresh one per
  /// condition was a heap allocation for every value a large function
  /// makes (600,000 at 120,000 lines).
  static const std::shared_ptr<const std::vector<SymCond>> &noChildren();
  std::shared_ptr<const std::vector<SymCond>> children_ = noChildren();
};

/// Parses a dim expression in TSL syntax (`N * 2 + 1`, `min(A, B)`, `S / 2`).
/// Returns false and sets \p error (with a column) on malformed text.
bool parseSymExpr(const std::string &text, SymExpr &out, std::string &error);
/// Parses a condition (`N == M && S % 2 == 0`, `!(A < B)`, `true`).
bool parseSymCond(const std::string &text, SymCond &out, std::string &error);

} // namespace tsl
