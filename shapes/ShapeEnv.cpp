#include "shapes/ShapeEnv.h"

#include "shapes/Z3Solver.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace tsl {

const char *dimKindName(DimKind kind) {
  switch (kind) {
  case DimKind::Static:
    return "static";
  case DimKind::Dynamic:
    return "dynamic";
  case DimKind::Unbacked:
    return "unbacked";
  case DimKind::Auto:
    return "auto";
  }
  return "auto";
}

SymExpr ShapeEnv::addSymbol(SymbolInfo info) {
  std::string name = info.name;
  if (info.kind != DimKind::Unbacked && !info.hint && info.hi &&
      *info.hi == info.lo)
    info.hint = info.lo;
  symbolIndex_.emplace(name, symbols_.size());
  symbols_.push_back(std::move(info));
  return SymExpr::symbol(name);
}

SymExpr ShapeEnv::freshUnbacked(int64_t lo, std::optional<int64_t> hi,
                                std::string description, SourceRange origin) {
  std::string name;
  do {
    name = "u" + std::to_string(nextUnbacked_++);
  } while (lookup(name));
  SymbolInfo info;
  info.name = name;
  info.kind = DimKind::Unbacked;
  info.lo = lo;
  info.hi = hi;
  info.origin = origin;
  info.description = std::move(description);
  return addSymbol(std::move(info));
}

size_t ShapeEnv::indexOf(const std::string &name) const {
  auto it = symbolIndex_.find(name);
  return it == symbolIndex_.end() ? symbols_.size() : it->second;
}

const SymbolInfo *ShapeEnv::lookup(const std::string &name) const {
  size_t i = indexOf(name);
  return i < symbols_.size() ? &symbols_[i] : nullptr;
}

void ShapeEnv::addFact(const SymCond &cond) {
  if (cond.kind() != SymCond::Kind::And && cond.kind() != SymCond::Kind::True &&
      !addingGuard_)
    declaredFacts_.push_back(cond);
  if (cond.kind() == SymCond::Kind::And) {
    for (const SymCond &c : cond.children())
      addFact(c);
    return;
  }
  if (cond.kind() != SymCond::Kind::True)
    facts_.push_back(cond);
}

namespace {

using i128 = __int128;
constexpr i128 kInf = static_cast<i128>(1) << 100;

i128 clampInf(i128 v) { return v > kInf ? kInf : (v < -kInf ? -kInf : v); }
i128 satMul(i128 a, i128 b) {
  if (a == 0 || b == 0)
    return 0;
  bool neg = (a < 0) != (b < 0);
  i128 ma = a < 0 ? -a : a, mb = b < 0 ? -b : b;
  if (ma >= (static_cast<i128>(1) << 62) ||
      mb >= (static_cast<i128>(1) << 62)) {
    if (ma >= kInf || mb >= kInf || ma * 1.0L * mb >= 1.0L * kInf)
      return neg ? -kInf : kInf;
  }
  return clampInf(neg ? -(ma * mb) : ma * mb);
}

struct Interval {
  i128 lo = -kInf, hi = kInf;
};

i128 floorDiv128(i128 a, i128 b) {
  i128 q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0)))
    --q;
  return q;
}

Interval mulI(Interval a, Interval b) {
  i128 c[4] = {satMul(a.lo, b.lo), satMul(a.lo, b.hi), satMul(a.hi, b.lo),
               satMul(a.hi, b.hi)};
  return {*std::min_element(c, c + 4), *std::max_element(c, c + 4)};
}

class IntervalEval {
public:
  explicit IntervalEval(const ShapeEnv &env) : env(env) {}
  Interval of(SymExpr e) const {
    switch (e.kind()) {
    case SymExpr::Kind::Overflow:
      return {-kInf, kInf}; // no value: nothing can be concluded
    case SymExpr::Kind::Const:
      return {e.constValue(), e.constValue()};
    case SymExpr::Kind::Symbol: {
      const SymbolInfo *s = env.lookup(e.symbolName());
      if (!s)
        return {0, kInf}; // an undeclared size symbol is still a size
      Interval r{s->lo == INT64_MIN ? -kInf : static_cast<i128>(s->lo),
                 s->hi ? static_cast<i128>(*s->hi) : kInf};
      return r;
    }
    case SymExpr::Kind::Add: {
      Interval r{e.addConstant(), e.addConstant()};
      for (size_t i = 0; i < e.operands().size(); ++i) {
        Interval t = mulI(of(e.operands()[i]),
                          {e.coefficients()[i], e.coefficients()[i]});
        r.lo = clampInf(r.lo + t.lo);
        r.hi = clampInf(r.hi + t.hi);
      }
      return r;
    }
    case SymExpr::Kind::Mul: {
      Interval r{1, 1};
      for (size_t i = 0; i < e.operands().size(); ++i) {
        Interval f = of(e.operands()[i]);
        int64_t exp = e.coefficients()[i];
        for (int64_t k = 0; k < exp && k < 8; ++k)
          r = mulI(r, f);
        if (exp > 8)
          return {-kInf, kInf};
        // Even powers are non-negative.
        if (exp % 2 == 0 && r.lo < 0)
          r.lo = 0;
      }
      return r;
    }
    case SymExpr::Kind::FloorDiv: {
      Interval a = of(e.operands()[0]), b = of(e.operands()[1]);
      if (b.lo > 0 && b.lo == b.hi) {
        return {a.lo <= -kInf ? -kInf : floorDiv128(a.lo, b.lo),
                a.hi >= kInf ? kInf : floorDiv128(a.hi, b.lo)};
      }
      if (b.lo > 0 && a.lo >= 0)
        return {0, a.hi};
      return {-kInf, kInf};
    }
    case SymExpr::Kind::Mod: {
      Interval a = of(e.operands()[0]), b = of(e.operands()[1]);
      if (b.lo > 0) {
        if (a.lo >= 0 && a.hi < b.lo)
          return a;
        return {0, b.hi >= kInf ? kInf : b.hi - 1};
      }
      return {-kInf, kInf};
    }
    case SymExpr::Kind::Min: {
      Interval a = of(e.operands()[0]), b = of(e.operands()[1]);
      return {std::min(a.lo, b.lo), std::min(a.hi, b.hi)};
    }
    case SymExpr::Kind::Max: {
      Interval a = of(e.operands()[0]), b = of(e.operands()[1]);
      return {std::max(a.lo, b.lo), std::max(a.hi, b.hi)};
    }
    }
    return {};
  }

private:
  const ShapeEnv &env;
};

/// Replaces min/max atoms whose operands are ordered over the symbol ranges
/// by the smaller/larger operand (min(64*S, 512*S) is 64*S for S >= 0).
/// \p e with each min/max decided where \p le (`a <= b` holds: true, or
/// false when unknown) decides it.
template <class Le> SymExpr refineBy(SymExpr e, const Le &le) {
  if (e.isConst() || e.isSymbol())
    return e;
  switch (e.kind()) {
  case SymExpr::Kind::Min:
  case SymExpr::Kind::Max: {
    SymExpr a = refineBy(e.operands()[0], le),
            b = refineBy(e.operands()[1], le);
    bool isMin = e.kind() == SymExpr::Kind::Min;
    if (le(a, b))
      return isMin ? a : b;
    if (le(b, a))
      return isMin ? b : a;
    return isMin ? SymExpr::min(a, b) : SymExpr::max(a, b);
  }
  case SymExpr::Kind::FloorDiv:
    return SymExpr::floorDiv(refineBy(e.operands()[0], le),
                             refineBy(e.operands()[1], le));
  case SymExpr::Kind::Mod:
    return SymExpr::mod(refineBy(e.operands()[0], le),
                        refineBy(e.operands()[1], le));
  case SymExpr::Kind::Add: {
    SymExpr sum = e.addConstant();
    for (size_t i = 0; i < e.operands().size(); ++i)
      sum = sum + refineBy(e.operands()[i], le) * SymExpr(e.coefficients()[i]);
    return sum;
  }
  case SymExpr::Kind::Mul: {
    SymExpr prod = 1;
    for (size_t i = 0; i < e.operands().size(); ++i) {
      SymExpr f = refineBy(e.operands()[i], le);
      for (int64_t k = 0; k < e.coefficients()[i]; ++k)
        prod = prod * f;
    }
    return prod;
  }
  default:
    return e;
  }
}

/// \p e with min/max decided by the symbols' ranges.
SymExpr refine(SymExpr e, const IntervalEval &iv) {
  return refineBy(e,
                  [&](SymExpr a, SymExpr b) { return iv.of(a - b).hi <= 0; });
}

Truth notT(Truth t) {
  return t == Truth::True ? Truth::False
                          : (t == Truth::False ? Truth::True : Truth::Unknown);
}

/// The same condition up to the sides of an equation or inequation:
/// `a == b` and `b == a`, `a - b == 0` (SymExpr is canonical, so the
/// differences of the sides compare).
bool sameCondition(const SymCond &a, const SymCond &b) {
  if (a == b)
    return true;
  if (a.kind() != b.kind() ||
      (a.kind() != SymCond::Kind::Eq && a.kind() != SymCond::Kind::Ne))
    return false;
  SymExpr da = a.lhs() - a.rhs(), db = b.lhs() - b.rhs();
  return da == db || da == -db;
}

/// k when \p f says that symbol \p name is a multiple of k > 1
/// (`name % k == 0`, either way round).
std::optional<int64_t> divisorFact(const SymCond &f, const std::string &name) {
  if (f.kind() != SymCond::Kind::Eq)
    return std::nullopt;
  for (auto [m, zero] : {std::pair{f.lhs(), f.rhs()}, {f.rhs(), f.lhs()}}) {
    if (!zero.isConst(0) || m.kind() != SymExpr::Kind::Mod)
      continue;
    SymExpr x = m.operands()[0], k = m.operands()[1];
    if (x.isSymbol() && x.symbolName() == name && k.isConst() &&
        k.constValue() > 1)
      return k.constValue();
  }
  return std::nullopt;
}

/// A comparison of kind \p kind whose lhs - rhs is the constant \p d.
Truth decideConstant(SymCond::Kind kind, int64_t d) {
  auto of = [](bool b) { return b ? Truth::True : Truth::False; };
  switch (kind) {
  case SymCond::Kind::Eq:
    return of(d == 0);
  case SymCond::Kind::Ne:
    return of(d != 0);
  case SymCond::Kind::Ge:
    return of(d >= 0);
  case SymCond::Kind::Gt:
    return of(d > 0);
  case SymCond::Kind::Le:
    return of(d <= 0);
  case SymCond::Kind::Lt:
    return of(d < 0);
  default:
    return Truth::Unknown;
  }
}

} // namespace

Truth ShapeEnv::proveCheap(const SymCond &condIn) const {
  // Facts of the form `symbol == expr` rewrite the question first.
  std::map<std::string, SymExpr> repl;
  for (const SymCond &f : facts_) {
    if (f.kind() == SymCond::Kind::Eq) {
      if (f.lhs().isSymbol() && !f.rhs().containsSymbol(f.lhs().symbolName()))
        repl.emplace(f.lhs().symbolName(), f.rhs());
      else if (f.rhs().isSymbol() &&
               !f.lhs().containsSymbol(f.rhs().symbolName()))
        repl.emplace(f.rhs().symbolName(), f.lhs());
    }
  }
  SymCond cond = repl.empty() ? condIn : condIn.substitute(repl);
  switch (cond.kind()) {
  case SymCond::Kind::True:
    return Truth::True;
  case SymCond::Kind::False:
    return Truth::False;
  case SymCond::Kind::Not:
    return notT(proveCheap(cond.children()[0]));
  case SymCond::Kind::And: {
    Truth a = proveCheap(cond.children()[0]),
          b = proveCheap(cond.children()[1]);
    if (a == Truth::False || b == Truth::False)
      return Truth::False;
    return a == Truth::True && b == Truth::True ? Truth::True : Truth::Unknown;
  }
  case SymCond::Kind::Or: {
    Truth a = proveCheap(cond.children()[0]),
          b = proveCheap(cond.children()[1]);
    if (a == Truth::True || b == Truth::True)
      return Truth::True;
    return a == Truth::False && b == Truth::False ? Truth::False
                                                  : Truth::Unknown;
  }
  default:
    break;
  }
  for (const SymCond &f : facts_) {
    if (sameCondition(f, cond) || sameCondition(f, condIn))
      return Truth::True;
    SymCond neg = SymCond::negate(f);
    if (sameCondition(neg, cond) || sameCondition(neg, condIn))
      return Truth::False;
  }
  Truth t = proveComparison(cond);
  if (t != Truth::Unknown)
    return t;
  // `B * D == 4 * B * (D / 4)` with `D % 4 == 0`: D is 4 * D', so D / 4
  // is D' and the two sides are one polynomial.
  std::map<std::string, SymExpr> multiples = multiplesOf(cond);
  if (multiples.empty())
    return Truth::Unknown;
  SymExpr diff = (cond.lhs() - cond.rhs()).substitute(multiples);
  if (!diff.isConst())
    return Truth::Unknown;
  return decideConstant(cond.kind(), diff.constValue());
}

std::map<std::string, SymExpr>
ShapeEnv::multiplesOf(const SymCond &cond) const {
  std::map<std::string, SymExpr> repl;
  for (const std::string &name : cond.symbols()) {
    const SymbolInfo *s = lookup(name);
    int64_t k = s ? std::max<int64_t>(s->multipleOf, 1) : 1;
    for (const SymCond &f : facts_) {
      int64_t lcm; // a divisor whose lcm with k leaves int64 is left out
      if (std::optional<int64_t> m = divisorFact(f, name))
        if (!__builtin_mul_overflow(k / std::gcd(k, *m), *m, &lcm))
          k = lcm;
    }
    if (k <= 1)
      continue;
    std::string quotient = name + "/" + std::to_string(k);
    if (lookup(quotient))
      continue;
    repl.emplace(name, SymExpr::symbol(quotient) * SymExpr(k));
  }
  return repl;
}

Truth ShapeEnv::proveComparison(const SymCond &cond) const {
  IntervalEval iv(*this);
  SymExpr diff = refine(cond.lhs() - cond.rhs(), iv);
  Interval d = iv.of(diff);
  auto decideGe = [&](Interval x) { // x >= 0 ?
    if (x.lo >= 0)
      return Truth::True;
    if (x.hi < 0)
      return Truth::False;
    return Truth::Unknown;
  };
  switch (cond.kind()) {
  case SymCond::Kind::Eq:
  case SymCond::Kind::Ne: {
    Truth eq = Truth::Unknown;
    if (d.lo > 0 || d.hi < 0)
      eq = Truth::False;
    else if (d.lo == 0 && d.hi == 0)
      eq = Truth::True;
    else if (diff.kind() == SymExpr::Kind::Add) {
      // Divisibility: sum(c_i * m_i) + k == 0 needs gcd(c_i) | k.
      int64_t g = 0;
      for (size_t i = 0; i < diff.operands().size(); ++i) {
        int64_t c = diff.coefficients()[i];
        SymExpr m = diff.operands()[i];
        if (m.isSymbol())
          if (const SymbolInfo *s = lookup(m.symbolName()))
            c *= s->multipleOf;
        g = std::gcd(g, c < 0 ? -c : c);
      }
      if (g > 1 && diff.addConstant() % g != 0)
        eq = Truth::False;
    }
    return cond.kind() == SymCond::Kind::Eq ? eq : notT(eq);
  }
  case SymCond::Kind::Ge:
    return decideGe(d);
  case SymCond::Kind::Gt:
    return decideGe({d.lo - 1, d.hi - 1});
  case SymCond::Kind::Le:
    return decideGe({-d.hi, -d.lo});
  case SymCond::Kind::Lt:
    return decideGe({-d.hi - 1, -d.lo - 1});
  default:
    return Truth::Unknown;
  }
}

Z3Solver &ShapeEnv::z3() const {
  if (!z3_)
    z3_ = std::make_shared<Z3Solver>();
  return *z3_;
}

/// True when interval reasoning is already exact for \p cond: one
/// comparison, linear in symbols that no fact mentions.
static bool cheapIsComplete(const SymCond &cond,
                            const std::vector<SymCond> &facts) {
  if (!cond.isComparison())
    return false;
  SymExpr d = cond.lhs() - cond.rhs();
  auto atomOk = [](SymExpr e) { return e.isSymbol(); };
  if (d.kind() == SymExpr::Kind::Add) {
    for (const SymExpr &t : d.operands())
      if (!atomOk(t))
        return false;
  } else if (!d.isConst() && !atomOk(d)) {
    return false;
  }
  std::vector<std::string> syms = cond.symbols();
  for (const SymCond &f : facts)
    for (const std::string &s : f.symbols())
      for (const std::string &c : syms)
        if (s == c)
          return false;
  return true;
}

Truth ShapeEnv::prove(const SymCond &cond) const {
  Truth t = proveCheap(cond);
  if (t != Truth::Unknown || cheapIsComplete(cond, facts_))
    return t;
  return z3().decide(symbols_, facts_, cond).truth;
}

std::map<std::string, int64_t>
ShapeEnv::counterexample(const SymCond &cond) const {
  return z3().decide(symbols_, facts_, cond).counterexample;
}

void ShapeEnv::minimizeGuards() {
  std::vector<ShapeFact> kept;
  for (size_t i = 0; i < guards_.size(); ++i) {
    std::vector<SymCond> others = declaredFacts_;
    for (const ShapeFact &k : kept)
      others.push_back(k.cond);
    for (size_t j = i + 1; j < guards_.size(); ++j)
      others.push_back(guards_[j].cond);
    bool implied = false;
    for (const SymCond &o : others)
      implied |= o == guards_[i].cond;
    if (!implied)
      implied =
          z3().decide(symbols_, others, guards_[i].cond).truth == Truth::True;
    if (!implied)
      kept.push_back(guards_[i]);
  }
  guards_ = std::move(kept);
}

SymExpr ShapeEnv::simplifyWithFacts(SymExpr e) const {
  e = simplify(e);
  return simplify(refineBy(e, [&](SymExpr a, SymExpr b) {
    return prove(SymCond::le(a, b)) == Truth::True;
  }));
}

SymExpr ShapeEnv::simplify(SymExpr e) const {
  if (e.isConst())
    return e;
  e = refine(e, IntervalEval(*this)); // min/max decided by the ranges
  if (facts_.empty())
    return e;
  auto order = [&](const std::string &name) { return indexOf(name); };
  std::map<std::string, SymExpr> repl;
  for (const SymCond &f : facts_) {
    if (f.kind() != SymCond::Kind::Eq)
      continue;
    SymExpr a = f.lhs(), b = f.rhs();
    // Replace a symbol by a constant, or the later symbol by the earlier.
    if (b.isSymbol() &&
        (a.isConst() ||
         (a.isSymbol() && order(a.symbolName()) < order(b.symbolName()))))
      std::swap(a, b);
    if (a.isSymbol() && (b.isConst() || b.isSymbol()) &&
        !repl.count(a.symbolName()))
      repl.emplace(a.symbolName(), b);
  }
  if (repl.empty())
    return e;
  // Resolve chains (U -> V -> 4) a bounded number of times.
  SymExpr out = e;
  for (int k = 0; k < 4; ++k) {
    SymExpr next = out.substitute(repl);
    if (next == out)
      break;
    out = next;
  }
  return refine(out, IntervalEval(*this));
}

std::optional<int64_t> ShapeEnv::hintValue(SymExpr e) const {
  return e.evaluate([&](const std::string &name) -> std::optional<int64_t> {
    const SymbolInfo *s = lookup(name);
    if (!s || s->kind == DimKind::Unbacked)
      return std::nullopt;
    return s->hint;
  });
}

std::optional<bool> ShapeEnv::hintTruth(const SymCond &cond) const {
  return cond.evaluate([&](const std::string &name) -> std::optional<int64_t> {
    const SymbolInfo *s = lookup(name);
    if (!s || s->kind == DimKind::Unbacked)
      return std::nullopt;
    return s->hint;
  });
}

namespace {

/// A monomial's symbols and their powers; false when it is not a product of
/// symbols.
bool powersOf(SymExpr m, std::map<std::string, int64_t> &powers) {
  if (m.isSymbol()) {
    powers[m.symbolName()] = 1;
    return true;
  }
  if (m.kind() != SymExpr::Kind::Mul)
    return false;
  for (size_t i = 0; i < m.operands().size(); ++i) {
    if (!m.operands()[i].isSymbol())
      return false;
    powers[m.operands()[i].symbolName()] = m.coefficients()[i];
  }
  return true;
}

SymExpr productOf(const std::map<std::string, int64_t> &powers) {
  SymExpr p = 1;
  for (const auto &[name, power] : powers)
    for (int64_t k = 0; k < power; ++k)
      p = p * SymExpr::symbol(name);
  return p;
}

/// The integer r >= 0 with r^k == c, if there is one.
std::optional<int64_t> exactRoot(int64_t c, int64_t k) {
  if (c < 0 || k < 1)
    return std::nullopt;
  int64_t r = static_cast<int64_t>(std::llround(std::pow(double(c), 1.0 / k)));
  for (int64_t t = std::max<int64_t>(r - 1, 0); t <= r + 1; ++t) {
    i128 v = 1;
    for (int64_t i = 0; i < k && v <= c; ++i)
      v *= t;
    if (v == c)
      return t;
  }
  return std::nullopt;
}

} // namespace

SymCond ShapeEnv::cancelCommonFactors(const SymCond &cond) const {
  if (cond.kind() != SymCond::Kind::Eq)
    return cond;
  SymExpr d = cond.lhs() - cond.rhs();
  if (d.kind() != SymExpr::Kind::Add || d.addConstant() != 0 ||
      d.operands().size() < 2)
    return cond;
  std::vector<std::map<std::string, int64_t>> monomials(d.operands().size());
  for (size_t i = 0; i < monomials.size(); ++i)
    if (!powersOf(d.operands()[i], monomials[i]))
      return cond;
  // Symbols in every monomial, at their lowest power, that cannot be 0.
  std::map<std::string, int64_t> common = monomials[0];
  for (auto it = common.begin(); it != common.end();) {
    for (const auto &m : monomials) {
      auto f = m.find(it->first);
      it->second = f == m.end() ? 0 : std::min(it->second, f->second);
    }
    SymExpr s = SymExpr::symbol(it->first);
    if (it->second == 0 || prove(SymCond::ne(s, 0)) != Truth::True)
      it = common.erase(it);
    else
      ++it;
  }
  if (common.empty())
    return cond;
  SymExpr lhs = 0, rhs = 0;
  for (size_t i = 0; i < monomials.size(); ++i) {
    for (const auto &[name, power] : common)
      monomials[i][name] -= power;
    std::erase_if(monomials[i], [](const auto &e) { return e.second == 0; });
    int64_t c = d.coefficients()[i];
    if (c > 0)
      lhs = lhs + productOf(monomials[i]) * SymExpr(c);
    else
      rhs = rhs + productOf(monomials[i]) * SymExpr(-c);
  }
  // `R * R == 16` with R >= 0: R == 4 (or false when 16 has no such root).
  for (auto [x, c] : {std::pair{lhs, rhs}, std::pair{rhs, lhs}}) {
    std::map<std::string, int64_t> powers;
    if (c.isConst() && powersOf(x, powers) && powers.size() == 1) {
      SymExpr s = SymExpr::symbol(powers.begin()->first);
      if (prove(SymCond::ge(s, 0)) == Truth::True) {
        std::optional<int64_t> r =
            exactRoot(c.constValue(), powers.begin()->second);
        return r ? SymCond::eq(s, *r) : SymCond::truth(false);
      }
    }
  }
  return SymCond::eq(lhs, rhs);
}

ShapeEnv::Resolution ShapeEnv::require(const SymCond &original,
                                       SourceRange origin, std::string op,
                                       std::string reason) {
  // `I * R * R == 16 * I` with I >= 1: the guard `R == 4` on the backed
  // dim, not a runtime assertion over the unbacked one.
  SymCond cond = cancelCommonFactors(original);
  switch (prove(cond)) {
  case Truth::True:
    return Resolution::Proven;
  case Truth::False:
    return Resolution::Violated;
  case Truth::Unknown:
    break;
  }
  for (const std::string &name : cond.symbols())
    if (const SymbolInfo *s = lookup(name); s && s->loopVariable)
      return Resolution::Violated;
  if (std::optional<bool> hinted = hintTruth(cond)) {
    if (!*hinted)
      return Resolution::Violated;
    guards_.push_back({cond, origin, std::move(op), std::move(reason)});
    addingGuard_ = true;
    addFact(cond);
    addingGuard_ = false;
    return Resolution::Guarded;
  }
  assertions_.push_back({cond, origin, std::move(op), std::move(reason)});
  addingGuard_ = true; // an operation's assertion is not a declared fact
  addFact(cond);
  addingGuard_ = false;
  return Resolution::Asserted;
}

Truth ShapeEnv::choose(const SymCond &cond, SourceRange origin, std::string op,
                       std::string reason) {
  Truth t = prove(cond);
  if (t != Truth::Unknown)
    return t;
  std::optional<bool> hinted = hintTruth(cond);
  if (!hinted)
    return Truth::Unknown;
  SymCond taken = *hinted ? cond : SymCond::negate(cond);
  guards_.push_back({taken, origin, std::move(op), std::move(reason)});
  addingGuard_ = true;
  addFact(taken);
  addingGuard_ = false;
  return *hinted ? Truth::True : Truth::False;
}

} // namespace tsl
