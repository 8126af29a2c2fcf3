#pragma once
/// \file Hash-consed symbolic integer expressions in canonical form.
///
/// Every expression is interned: two structurally equal expressions are the
/// same node, so equality is pointer equality. The canonical form is a sum of
/// monomials with integer coefficients plus a constant; a monomial is a
/// product of atoms with positive exponents; an atom is a symbol, a floor
/// division, a modulo, a min or a max. Construction simplifies as it goes
/// (constant folding, like-term collection, exact division by constants,
/// `(c*X + Y) / c == X + Y / c`, `min(a, a) == a`, ...).
///
/// Sizes are exact 64-bit integers. Arithmetic whose exact result (or any
/// coefficient of it) leaves int64 gives the poison expression `overflow()`,
/// as NaN does for floats: it absorbs every later operation, prints as
/// `<overflow>`, never evaluates, and the elaborator reports it with the
/// location of the expression that produced it. Evaluation under an
/// assignment (`evaluate`) reports overflow of any step the same way.

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace tsl {

struct SymNode;

/// A handle to an interned symbolic integer expression. Default-constructed
/// handles are the constant 0.
class SymExpr {
public:
  enum class Kind : uint8_t {
    Const,
    Symbol,
    Add,
    Mul,
    FloorDiv,
    Mod,
    Min,
    Max,
    Overflow ///< an exact value that does not fit in int64 (poison)
  };

  SymExpr();
  SymExpr(int64_t value); // NOLINT: integers convert implicitly
  SymExpr(int value) : SymExpr(static_cast<int64_t>(value)) {} // NOLINT

  /// The constant \p value (the same as the implicit conversion).
  static SymExpr constant(int64_t value);
  /// The symbol named \p name. Symbols are identified by name.
  static SymExpr symbol(const std::string &name);
  /// Floor division `a / b`, rounding toward negative infinity (as Python's
  /// `//`): -7 / 2 = -4. Constants fold; INT64_MIN / -1 is overflow().
  /// By a positive constant c the quotient is normalised: multiples of c
  /// leave the division (`(c*X + Y) / c = X + Y / c`), nested divisions
  /// combine (`(X / a) / c = X / (a*c)`), and a numerator provably in
  /// [0, c) gives 0. An exact symbolic divisor cancels (`(N*M) / N = M`:
  /// sound because evaluation fails wherever N is 0). Division by the
  /// constant 0 stays an unevaluated node: evaluate() returns nullopt.
  /// Overflow in either operand gives overflow().
  static SymExpr floorDiv(SymExpr a, SymExpr b);
  /// The remainder of floor division, `a - b * floorDiv(a, b)`: it has the
  /// sign of \p b, so by a positive constant c it lies in [0, c) (-7 % 2 =
  /// 1). By c, multiples of c drop out (`(c*X + 1) % c = 1`), a remainder
  /// provably in [0, c) is itself, and `(X % a) % c = X % c` when c divides
  /// a; by 1 or -1 it is 0, and a symbolic divisor that divides exactly
  /// gives 0. Modulo the constant 0 stays unevaluated (evaluate() returns
  /// nullopt). Overflow in either operand gives overflow().
  static SymExpr mod(SymExpr a, SymExpr b);
  /// The smaller of \p a and \p b: folded when they are equal or their
  /// difference has a known sign (a constant, or bounded by the operands'
  /// form), and min(a, min(a, b)) is min(a, b); else a Min node with its
  /// operands in canonical order. Overflow in either gives overflow().
  static SymExpr min(SymExpr a, SymExpr b);
  /// The larger of \p a and \p b, simplified as min() is.
  static SymExpr max(SymExpr a, SymExpr b);
  /// The poison expression: a size that does not fit in 64 bits.
  static SymExpr overflow();

  Kind kind() const;
  bool isConst() const { return kind() == Kind::Const; }
  bool isConst(int64_t v) const { return isConst() && constValue() == v; }
  bool isSymbol() const { return kind() == Kind::Symbol; }
  /// True for the poison expression (see the file comment).
  bool isOverflow() const { return kind() == Kind::Overflow; }
  /// The value of a constant (0 for anything else).
  int64_t constValue() const;
  /// The name of a symbol (empty for anything else).
  const std::string &symbolName() const;
  /// Operands: for FloorDiv/Mod/Min/Max the two operands; for Add the
  /// monomials; for Mul the atoms.
  const std::vector<SymExpr> &operands() const;
  /// For Add: the coefficient of each monomial; for Mul: each exponent.
  const std::vector<int64_t> &coefficients() const;
  /// For Add: the constant term.
  int64_t addConstant() const;

  SymExpr operator+(SymExpr o) const;
  SymExpr operator-(SymExpr o) const;
  SymExpr operator*(SymExpr o) const;
  SymExpr operator-() const;

  bool operator==(const SymExpr &o) const { return node_ == o.node_; }
  bool operator!=(const SymExpr &o) const { return node_ != o.node_; }
  /// A deterministic structural order (never pointer order).
  static int compare(SymExpr a, SymExpr b);
  bool operator<(const SymExpr &o) const { return compare(*this, o) < 0; }

  size_t hash() const;
  /// Nesting depth of the expression tree (1 for a constant or symbol).
  unsigned depth() const;
  const SymNode *node() const { return node_; }

  /// Printed in TSL dim-expression syntax: `N * S + 1`, `(H - 1) / 2 + 1`.
  std::string str() const;

  /// Names of the symbols in the expression, sorted, without duplicates.
  std::vector<std::string> symbols() const;
  bool containsSymbol(const std::string &name) const;

  /// Replaces symbols by expressions (symbols not in the map stay).
  SymExpr substitute(const std::map<std::string, SymExpr> &repl) const;

  /// Evaluates under an assignment. nullopt when a symbol is unassigned,
  /// on division or modulo by zero, or on int64 overflow.
  std::optional<int64_t> evaluate(
      const std::function<std::optional<int64_t>(const std::string &)> &lookup)
      const;
  std::optional<int64_t>
  evaluate(const std::map<std::string, int64_t> &values) const;

private:
  explicit SymExpr(const SymNode *n) : node_(n) {}
  const SymNode *node_;
  friend struct SymBuilder;
};

/// Greatest common divisor of the coefficients and the constant of \p e when
/// it is a polynomial, i.e. a d with e == d * (integer expression). 0 for 0.
int64_t commonFactor(SymExpr e);

} // namespace tsl

template <> struct std::hash<tsl::SymExpr> {
  size_t operator()(const tsl::SymExpr &e) const { return e.hash(); }
};
