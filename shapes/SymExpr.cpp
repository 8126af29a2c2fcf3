#include "shapes/SymExpr.h"

#include <algorithm>
#include <deque>
#include <mutex>
#include <numeric>
#include <optional>
#include <unordered_set>

namespace tsl {

struct SymNode {
  SymExpr::Kind kind;
  int64_t value = 0;
  std::string name;
  std::vector<SymExpr> ops;
  std::vector<int64_t> coeffs;
  size_t hash = 0;
  uint32_t depth = 1;
};

namespace {

// Exact int64 arithmetic: false when the result does not fit.
bool checkedAdd(int64_t a, int64_t b, int64_t &r) {
  return !__builtin_add_overflow(a, b, &r);
}
bool checkedMul(int64_t a, int64_t b, int64_t &r) {
  return !__builtin_mul_overflow(a, b, &r);
}

/// Floor division; the caller excludes b == 0 and INT64_MIN / -1.
int64_t floorDivConst(int64_t a, int64_t b) {
  if (b == -1)
    return -a;
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0)))
    --q;
  return q;
}
int64_t floorModConst(int64_t a, int64_t b) {
  if (b == -1)
    return 0;
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0)))
    r += b;
  return r;
}

size_t combine(size_t h, size_t v) {
  return h ^ (v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2));
}

struct NodeHash {
  size_t operator()(const SymNode *n) const { return n->hash; }
};
struct NodeEq {
  bool operator()(const SymNode *a, const SymNode *b) const {
    return a->kind == b->kind && a->value == b->value && a->name == b->name &&
           a->ops == b->ops && a->coeffs == b->coeffs;
  }
};

struct InternTable {
  std::mutex mutex;
  std::unordered_set<const SymNode *, NodeHash, NodeEq> set;
  std::deque<SymNode> storage;
};

InternTable &table() {
  static InternTable *t = new InternTable; // intentionally immortal
  return *t;
}

} // namespace

struct SymBuilder {
  static SymExpr intern(SymNode n) {
    size_t h = std::hash<int>()(static_cast<int>(n.kind));
    h = combine(h, std::hash<int64_t>()(n.value));
    h = combine(h, std::hash<std::string>()(n.name));
    for (const SymExpr &op : n.ops)
      h = combine(h, op.hash());
    for (int64_t c : n.coeffs)
      h = combine(h, std::hash<int64_t>()(c));
    n.hash = h;
    for (const SymExpr &op : n.ops)
      n.depth = std::max<uint32_t>(n.depth, op.depth() + 1);
    InternTable &t = table();
    std::lock_guard<std::mutex> lock(t.mutex);
    auto it = t.set.find(&n);
    if (it != t.set.end())
      return SymExpr(*it);
    t.storage.push_back(std::move(n));
    const SymNode *stored = &t.storage.back();
    t.set.insert(stored);
    return SymExpr(stored);
  }
};

namespace {

SymExpr makeConst(int64_t v) {
  SymNode n;
  n.kind = SymExpr::Kind::Const;
  n.value = v;
  return SymBuilder::intern(std::move(n));
}

// A monomial: atoms with positive exponents, sorted by SymExpr order.
using Monomial = std::vector<std::pair<SymExpr, int64_t>>;

bool monoLess(const Monomial &a, const Monomial &b) {
  // Higher total degree first, then structural order.
  int64_t da = 0, db = 0;
  for (auto &f : a)
    da += f.second;
  for (auto &f : b)
    db += f.second;
  if (da != db)
    return da > db;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    int c = SymExpr::compare(a[i].first, b[i].first);
    if (c != 0)
      return c < 0;
    if (a[i].second != b[i].second)
      return a[i].second > b[i].second;
  }
  return a.size() < b.size();
}

struct MonoCmp {
  bool operator()(const Monomial &a, const Monomial &b) const {
    return monoLess(a, b);
  }
};

/// A polynomial under construction. `overflow` records that a coefficient
/// left int64; fromPoly then gives the poison expression.
struct Poly {
  std::map<Monomial, int64_t, MonoCmp> terms;
  int64_t constant = 0;
  bool overflow = false;

  void addConstant(int64_t c) {
    overflow |= !checkedAdd(constant, c, constant);
  }
  void addTerm(const Monomial &m, int64_t c) {
    if (c == 0)
      return;
    if (m.empty()) {
      addConstant(c);
      return;
    }
    int64_t &slot = terms[m];
    overflow |= !checkedAdd(slot, c, slot);
    if (slot == 0)
      terms.erase(m);
  }
  /// c1 * c2, noting overflow.
  int64_t mul(int64_t c1, int64_t c2) {
    int64_t r = 0;
    overflow |= !checkedMul(c1, c2, r);
    return r;
  }
};

Monomial monomialOf(SymExpr e) {
  if (e.kind() == SymExpr::Kind::Mul) {
    Monomial m;
    for (size_t i = 0; i < e.operands().size(); ++i)
      m.push_back({e.operands()[i], e.coefficients()[i]});
    return m;
  }
  return {{e, 1}};
}

Poly toPoly(SymExpr e) {
  Poly p;
  switch (e.kind()) {
  case SymExpr::Kind::Const:
    p.constant = e.constValue();
    break;
  case SymExpr::Kind::Add:
    p.constant = e.addConstant();
    for (size_t i = 0; i < e.operands().size(); ++i)
      p.terms[monomialOf(e.operands()[i])] = e.coefficients()[i];
    break;
  default:
    p.terms[monomialOf(e)] = 1;
  }
  return p;
}

SymExpr monomialExpr(const Monomial &m) {
  if (m.size() == 1 && m[0].second == 1)
    return m[0].first;
  SymNode n;
  n.kind = SymExpr::Kind::Mul;
  for (auto &[atom, exp] : m) {
    n.ops.push_back(atom);
    n.coeffs.push_back(exp);
  }
  return SymBuilder::intern(std::move(n));
}

SymExpr overflowNode() {
  SymNode n;
  n.kind = SymExpr::Kind::Overflow;
  return SymBuilder::intern(std::move(n));
}

SymExpr fromPoly(const Poly &p) {
  if (p.overflow)
    return overflowNode();
  if (p.terms.empty())
    return makeConst(p.constant);
  if (p.terms.size() == 1 && p.constant == 0 && p.terms.begin()->second == 1)
    return monomialExpr(p.terms.begin()->first);
  SymNode n;
  n.kind = SymExpr::Kind::Add;
  n.value = p.constant;
  for (auto &[m, c] : p.terms) {
    n.ops.push_back(monomialExpr(m));
    n.coeffs.push_back(c);
  }
  return SymBuilder::intern(std::move(n));
}

Monomial mulMono(const Monomial &a, const Monomial &b) {
  Monomial out;
  size_t i = 0, j = 0;
  while (i < a.size() || j < b.size()) {
    if (j == b.size() ||
        (i < a.size() && SymExpr::compare(a[i].first, b[j].first) < 0)) {
      out.push_back(a[i++]);
    } else if (i == a.size() || SymExpr::compare(b[j].first, a[i].first) < 0) {
      out.push_back(b[j++]);
    } else {
      out.push_back({a[i].first, a[i].second + b[j].second});
      ++i;
      ++j;
    }
  }
  return out;
}

SymExpr makeBinaryAtom(SymExpr::Kind kind, SymExpr a, SymExpr b) {
  SymNode n;
  n.kind = kind;
  n.ops = {a, b};
  return SymBuilder::intern(std::move(n));
}

// Bounds that hold for every value of every symbol, used for simplifying
// min/max/mod without an environment.
struct Bounds {
  bool hasLo = false, hasHi = false;
  int64_t lo = 0, hi = 0;
};

Bounds naiveBounds(SymExpr e);

/// a / b when b is one term c*m (c != 0, m a non-empty monomial) dividing
/// every term of a exactly (coefficients and exponents); nullopt otherwise.
std::optional<SymExpr> exactDivide(SymExpr a, SymExpr b) {
  Poly pb = toPoly(b);
  if (pb.constant != 0 || pb.terms.size() != 1)
    return std::nullopt;
  const Monomial &m = pb.terms.begin()->first;
  int64_t c = pb.terms.begin()->second;
  if (c == 0)
    return std::nullopt;
  Poly pa = toPoly(a);
  if (pa.constant != 0)
    return std::nullopt;
  Poly q;
  for (auto &[term, coeff] : pa.terms) {
    if (coeff % c != 0 || (coeff == INT64_MIN && c == -1))
      return std::nullopt;
    Monomial rest;
    size_t j = 0;
    for (auto &[atom, exp] : term) {
      int64_t e = exp;
      if (j < m.size() && m[j].first == atom) {
        e -= m[j].second;
        ++j;
      }
      if (e < 0)
        return std::nullopt;
      if (e > 0)
        rest.push_back({atom, e});
    }
    if (j != m.size())
      return std::nullopt;
    q.addTerm(rest, coeff / c);
  }
  return fromPoly(q);
}

} // namespace

SymExpr::SymExpr() : node_(makeConst(0).node_) {}
SymExpr::SymExpr(int64_t value) : node_(makeConst(value).node_) {}

SymExpr SymExpr::constant(int64_t value) { return makeConst(value); }
SymExpr SymExpr::overflow() { return overflowNode(); }

SymExpr SymExpr::symbol(const std::string &name) {
  SymNode n;
  n.kind = Kind::Symbol;
  n.name = name;
  return SymBuilder::intern(std::move(n));
}

SymExpr::Kind SymExpr::kind() const { return node_->kind; }
int64_t SymExpr::constValue() const {
  return node_->kind == Kind::Const ? node_->value : 0;
}
const std::string &SymExpr::symbolName() const { return node_->name; }
const std::vector<SymExpr> &SymExpr::operands() const { return node_->ops; }
const std::vector<int64_t> &SymExpr::coefficients() const {
  return node_->coeffs;
}
int64_t SymExpr::addConstant() const {
  return node_->kind == Kind::Add ? node_->value : 0;
}
size_t SymExpr::hash() const { return node_->hash; }
unsigned SymExpr::depth() const { return node_->depth; }

SymExpr SymExpr::operator+(SymExpr o) const {
  if (isOverflow() || o.isOverflow())
    return overflowNode();
  Poly p = toPoly(*this);
  Poly q = toPoly(o);
  p.addConstant(q.constant);
  for (auto &[m, c] : q.terms)
    p.addTerm(m, c);
  return fromPoly(p);
}

SymExpr SymExpr::operator-() const {
  if (isOverflow())
    return *this;
  Poly p = toPoly(*this);
  p.constant = p.mul(p.constant, -1);
  for (auto &t : p.terms)
    t.second = p.mul(t.second, -1);
  return fromPoly(p);
}

SymExpr SymExpr::operator-(SymExpr o) const { return *this + (-o); }

SymExpr SymExpr::operator*(SymExpr o) const {
  if (isOverflow() || o.isOverflow())
    return overflowNode();
  Poly p = toPoly(*this);
  Poly q = toPoly(o);
  Poly r;
  r.constant = r.mul(p.constant, q.constant);
  for (auto &[m, c] : p.terms)
    r.addTerm(m, r.mul(c, q.constant));
  for (auto &[m, c] : q.terms)
    r.addTerm(m, r.mul(c, p.constant));
  for (auto &[m1, c1] : p.terms)
    for (auto &[m2, c2] : q.terms)
      r.addTerm(mulMono(m1, m2), r.mul(c1, c2));
  return fromPoly(r);
}

int64_t commonFactor(SymExpr e) {
  Poly p = toPoly(e);
  int64_t g = p.constant < 0 ? -p.constant : p.constant;
  for (auto &t : p.terms)
    g = std::gcd(g, t.second < 0 ? -t.second : t.second);
  return g;
}

SymExpr SymExpr::floorDiv(SymExpr a, SymExpr b) {
  if (a.isOverflow() || b.isOverflow())
    return overflowNode();
  if (b.isConst()) {
    int64_t c = b.constValue();
    if (c == 1)
      return a;
    if (c == 0)
      return makeBinaryAtom(Kind::FloorDiv, a, b);
    if (a.isConst())
      return a.constValue() == INT64_MIN && c == -1
                 ? overflowNode()
                 : makeConst(floorDivConst(a.constValue(), c));
    if (c > 0) {
      // (c*X + Y) / c == X + Y / c for integer X.
      Poly p = toPoly(a);
      Poly exact, rest;
      for (auto &[m, k] : p.terms) {
        if (k % c == 0)
          exact.addTerm(m, k / c);
        else
          rest.addTerm(m, k);
      }
      exact.constant = floorDivConst(p.constant, c);
      rest.constant = floorModConst(p.constant, c);
      SymExpr restExpr = fromPoly(rest);
      SymExpr whole = fromPoly(exact);
      if (restExpr.isConst())
        return whole; // rest is in [0, c)
      // (X / a) / c == X / (a*c) for positive constants.
      int64_t combined = 0;
      if (restExpr.kind() == Kind::FloorDiv &&
          restExpr.operands()[1].isConst() &&
          restExpr.operands()[1].constValue() > 0 &&
          checkedMul(restExpr.operands()[1].constValue(), c, combined))
        return whole + floorDiv(restExpr.operands()[0], makeConst(combined));
      Bounds bd = naiveBounds(restExpr);
      if (bd.hasLo && bd.hasHi && bd.lo >= 0 && bd.hi < c)
        return whole;
      return whole + makeBinaryAtom(Kind::FloorDiv, restExpr, b);
    }
  }
  // (m*X) / m == X: exact division by a symbolic term (division by zero is
  // an error wherever the expression is evaluated, so this is sound).
  if (!b.isConst())
    if (auto q = exactDivide(a, b))
      return *q;
  return makeBinaryAtom(Kind::FloorDiv, a, b);
}

SymExpr SymExpr::mod(SymExpr a, SymExpr b) {
  if (a.isOverflow() || b.isOverflow())
    return overflowNode();
  if (b.isConst()) {
    int64_t c = b.constValue();
    if (c == 1 || c == -1)
      return makeConst(0);
    if (c == 0)
      return makeBinaryAtom(Kind::Mod, a, b);
    if (a.isConst())
      return makeConst(floorModConst(a.constValue(), c));
    if (c > 0) {
      Poly p = toPoly(a);
      Poly rest;
      for (auto &[m, k] : p.terms) {
        int64_t r = floorModConst(k, c);
        if (r != 0)
          rest.addTerm(m, r);
      }
      rest.constant = floorModConst(p.constant, c);
      SymExpr restExpr = fromPoly(rest);
      if (restExpr.isConst())
        return makeConst(floorModConst(restExpr.constValue(), c));
      Bounds bd = naiveBounds(restExpr);
      if (bd.hasLo && bd.hasHi && bd.lo >= 0 && bd.hi < c)
        return restExpr;
      // (X % a) % c == X % c when c divides a.
      if (restExpr.kind() == Kind::Mod && restExpr.operands()[1].isConst() &&
          restExpr.operands()[1].constValue() % c == 0)
        return mod(restExpr.operands()[0], b);
      return makeBinaryAtom(Kind::Mod, restExpr, b);
    }
  }
  if (!b.isConst() && exactDivide(a, b))
    return makeConst(0);
  return makeBinaryAtom(Kind::Mod, a, b);
}

static SymExpr minMax(SymExpr::Kind kind, SymExpr a, SymExpr b) {
  bool isMin = kind == SymExpr::Kind::Min;
  if (a == b)
    return a;
  if (a.isOverflow() || b.isOverflow())
    return SymExpr::overflow();
  SymExpr diff = a - b; // poison (no simplification) when a - b overflows
  if (diff.isConst())
    return (diff.constValue() <= 0) == isMin ? a : b;
  Bounds bd = naiveBounds(diff);
  if (bd.hasLo && bd.lo >= 0)
    return isMin ? b : a;
  if (bd.hasHi && bd.hi <= 0)
    return isMin ? a : b;
  // min(a, min(a, b)) == min(a, b)
  for (int side = 0; side < 2; ++side) {
    SymExpr outer = side ? b : a, inner = side ? a : b;
    if (inner.kind() == kind &&
        (inner.operands()[0] == outer || inner.operands()[1] == outer))
      return inner;
  }
  if (SymExpr::compare(b, a) < 0)
    std::swap(a, b);
  return makeBinaryAtom(kind, a, b);
}

SymExpr SymExpr::min(SymExpr a, SymExpr b) { return minMax(Kind::Min, a, b); }
SymExpr SymExpr::max(SymExpr a, SymExpr b) { return minMax(Kind::Max, a, b); }

int SymExpr::compare(SymExpr a, SymExpr b) {
  if (a.node_ == b.node_)
    return 0;
  if (a.kind() != b.kind())
    return a.kind() < b.kind() ? -1 : 1;
  switch (a.kind()) {
  case Kind::Const:
    return a.constValue() < b.constValue() ? -1 : 1;
  case Kind::Symbol:
    return a.symbolName() < b.symbolName()
               ? -1
               : (a.symbolName() == b.symbolName() ? 0 : 1);
  default:
    break;
  }
  if (a.node_->value != b.node_->value)
    return a.node_->value < b.node_->value ? -1 : 1;
  const auto &x = a.operands(), &y = b.operands();
  for (size_t i = 0; i < x.size() && i < y.size(); ++i)
    if (int c = compare(x[i], y[i]))
      return c;
  if (x.size() != y.size())
    return x.size() < y.size() ? -1 : 1;
  const auto &cx = a.coefficients(), &cy = b.coefficients();
  for (size_t i = 0; i < cx.size() && i < cy.size(); ++i)
    if (cx[i] != cy[i])
      return cx[i] < cy[i] ? -1 : 1;
  return 0;
}

namespace {

// Precedence levels for printing: 0 sum, 1 product/division, 2 atom.
void print(SymExpr e, std::string &out, int context);

void printMonomial(SymExpr m, std::string &out) {
  if (m.kind() == SymExpr::Kind::Mul) {
    bool first = true;
    for (size_t i = 0; i < m.operands().size(); ++i)
      for (int64_t k = 0; k < m.coefficients()[i]; ++k) {
        if (!first)
          out += " * ";
        first = false;
        print(m.operands()[i], out, 2);
      }
  } else {
    print(m, out, 1);
  }
}

void print(SymExpr e, std::string &out, int context) {
  switch (e.kind()) {
  case SymExpr::Kind::Const:
    if (e.constValue() < 0 && context > 0)
      out += "(" + std::to_string(e.constValue()) + ")";
    else
      out += std::to_string(e.constValue());
    return;
  case SymExpr::Kind::Symbol:
    out += e.symbolName();
    return;
  case SymExpr::Kind::Overflow:
    out += "<overflow>";
    return;
  case SymExpr::Kind::Min:
  case SymExpr::Kind::Max:
    out += e.kind() == SymExpr::Kind::Min ? "min(" : "max(";
    print(e.operands()[0], out, 0);
    out += ", ";
    print(e.operands()[1], out, 0);
    out += ")";
    return;
  case SymExpr::Kind::FloorDiv:
  case SymExpr::Kind::Mod: {
    bool paren = context > 1;
    if (paren)
      out += "(";
    print(e.operands()[0], out, 1);
    out += e.kind() == SymExpr::Kind::FloorDiv ? " / " : " % ";
    print(e.operands()[1], out, 2);
    if (paren)
      out += ")";
    return;
  }
  case SymExpr::Kind::Mul: {
    bool paren = context > 1;
    if (paren)
      out += "(";
    printMonomial(e, out);
    if (paren)
      out += ")";
    return;
  }
  case SymExpr::Kind::Add: {
    bool paren = context > 0;
    if (paren)
      out += "(";
    bool first = true;
    for (size_t i = 0; i < e.operands().size(); ++i) {
      int64_t c = e.coefficients()[i];
      bool neg = c < 0;
      uint64_t mag =
          neg ? 0 - static_cast<uint64_t>(c) : static_cast<uint64_t>(c);
      if (first)
        out += neg ? "-" : "";
      else
        out += neg ? " - " : " + ";
      first = false;
      SymExpr m = e.operands()[i];
      // A quotient or remainder right of `*` or of a leading `-` needs
      // its parentheses: `2 * E / 2` reads as (2 * E) / 2, and `-E / 2` as
      // (-E) / 2, which floor division rounds differently.
      bool quotient =
          m.kind() == SymExpr::Kind::FloorDiv || m.kind() == SymExpr::Kind::Mod;
      if (mag != 1)
        out += std::to_string(mag) + " * ";
      if (quotient && (mag != 1 || (neg && i == 0)))
        print(m, out, 2);
      else
        printMonomial(m, out);
    }
    int64_t k = e.addConstant();
    if (k != 0) {
      uint64_t mag =
          k < 0 ? 0 - static_cast<uint64_t>(k) : static_cast<uint64_t>(k);
      out += k < 0 ? " - " : " + ";
      out += std::to_string(mag);
    }
    if (paren)
      out += ")";
    return;
  }
  }
}

void collectSymbols(SymExpr e, std::vector<std::string> &out) {
  if (e.isSymbol()) {
    out.push_back(e.symbolName());
    return;
  }
  for (const SymExpr &op : e.operands())
    collectSymbols(op, out);
}

Bounds naiveBounds(SymExpr e) {
  Bounds b;
  switch (e.kind()) {
  case SymExpr::Kind::Const:
    b.hasLo = b.hasHi = true;
    b.lo = b.hi = e.constValue();
    return b;
  case SymExpr::Kind::Symbol:
  case SymExpr::Kind::Mul:
  case SymExpr::Kind::Overflow:
    // No sign assumption: int parameters may be negative. Ranges live in
    // the ShapeEnv, which the prover consults.
    return b;
  case SymExpr::Kind::FloorDiv:
  case SymExpr::Kind::Mod: {
    Bounds x = naiveBounds(e.operands()[0]);
    SymExpr d = e.operands()[1];
    if (!d.isConst() || d.constValue() <= 0)
      return b;
    int64_t c = d.constValue();
    if (e.kind() == SymExpr::Kind::Mod) {
      b.hasLo = b.hasHi = true;
      b.lo = 0;
      b.hi = c - 1;
      return b;
    }
    if (x.hasLo) {
      b.hasLo = true;
      b.lo = floorDivConst(x.lo, c);
    }
    if (x.hasHi) {
      b.hasHi = true;
      b.hi = floorDivConst(x.hi, c);
    }
    return b;
  }
  case SymExpr::Kind::Min:
  case SymExpr::Kind::Max: {
    Bounds x = naiveBounds(e.operands()[0]), y = naiveBounds(e.operands()[1]);
    if (e.kind() == SymExpr::Kind::Min) {
      b.hasLo = x.hasLo && y.hasLo;
      b.lo = std::min(x.lo, y.lo);
      b.hasHi = x.hasHi || y.hasHi;
      b.hi =
          x.hasHi && y.hasHi ? std::min(x.hi, y.hi) : (x.hasHi ? x.hi : y.hi);
    } else {
      b.hasHi = x.hasHi && y.hasHi;
      b.hi = std::max(x.hi, y.hi);
      b.hasLo = x.hasLo || y.hasLo;
      b.lo =
          x.hasLo && y.hasLo ? std::max(x.lo, y.lo) : (x.hasLo ? x.lo : y.lo);
    }
    return b;
  }
  case SymExpr::Kind::Add: {
    // Only sums whose terms all have non-negative coefficients get a bound
    // (avoids overflow reasoning here; the prover does the full job).
    b.hasLo = true;
    b.lo = e.addConstant();
    for (size_t i = 0; i < e.operands().size(); ++i) {
      Bounds t = naiveBounds(e.operands()[i]);
      int64_t c = e.coefficients()[i];
      if (c < 0 || !t.hasLo || t.lo < 0 || t.lo > (1LL << 31) ||
          c > (1LL << 31))
        return Bounds{};
      if (!checkedAdd(b.lo, c * t.lo, b.lo))
        return Bounds{};
    }
    return b;
  }
  }
  return b;
}

} // namespace

std::string SymExpr::str() const {
  std::string out;
  print(*this, out, 0);
  return out;
}

std::vector<std::string> SymExpr::symbols() const {
  std::vector<std::string> out;
  collectSymbols(*this, out);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

bool SymExpr::containsSymbol(const std::string &name) const {
  if (isSymbol())
    return symbolName() == name;
  for (const SymExpr &op : operands())
    if (op.containsSymbol(name))
      return true;
  return false;
}

SymExpr SymExpr::substitute(const std::map<std::string, SymExpr> &repl) const {
  switch (kind()) {
  case Kind::Const:
  case Kind::Overflow:
    return *this;
  case Kind::Symbol: {
    auto it = repl.find(symbolName());
    return it == repl.end() ? *this : it->second;
  }
  case Kind::Add: {
    SymExpr sum = addConstant();
    for (size_t i = 0; i < operands().size(); ++i)
      sum = sum + operands()[i].substitute(repl) * SymExpr(coefficients()[i]);
    return sum;
  }
  case Kind::Mul: {
    SymExpr prod = 1;
    for (size_t i = 0; i < operands().size(); ++i) {
      SymExpr f = operands()[i].substitute(repl);
      for (int64_t k = 0; k < coefficients()[i]; ++k)
        prod = prod * f;
    }
    return prod;
  }
  case Kind::FloorDiv:
    return floorDiv(operands()[0].substitute(repl),
                    operands()[1].substitute(repl));
  case Kind::Mod:
    return mod(operands()[0].substitute(repl), operands()[1].substitute(repl));
  case Kind::Min:
    return min(operands()[0].substitute(repl), operands()[1].substitute(repl));
  case Kind::Max:
    return max(operands()[0].substitute(repl), operands()[1].substitute(repl));
  }
  return *this;
}

std::optional<int64_t> SymExpr::evaluate(
    const std::function<std::optional<int64_t>(const std::string &)> &lookup)
    const {
  switch (kind()) {
  case Kind::Const:
    return constValue();
  case Kind::Symbol:
    return lookup(symbolName());
  case Kind::Overflow:
    return std::nullopt;
  case Kind::Add: {
    int64_t sum = addConstant();
    for (size_t i = 0; i < operands().size(); ++i) {
      auto v = operands()[i].evaluate(lookup);
      int64_t t;
      if (!v || !checkedMul(*v, coefficients()[i], t) ||
          !checkedAdd(sum, t, sum))
        return std::nullopt;
    }
    return sum;
  }
  case Kind::Mul: {
    int64_t prod = 1;
    for (size_t i = 0; i < operands().size(); ++i) {
      auto v = operands()[i].evaluate(lookup);
      if (!v)
        return std::nullopt;
      for (int64_t k = 0; k < coefficients()[i]; ++k)
        if (!checkedMul(prod, *v, prod))
          return std::nullopt;
    }
    return prod;
  }
  default: {
    auto a = operands()[0].evaluate(lookup);
    auto b = operands()[1].evaluate(lookup);
    if (!a || !b)
      return std::nullopt;
    switch (kind()) {
    case Kind::FloorDiv:
      if (*b == 0 || (*a == INT64_MIN && *b == -1))
        return std::nullopt;
      return floorDivConst(*a, *b);
    case Kind::Mod:
      if (*b == 0)
        return std::nullopt;
      return floorModConst(*a, *b);
    case Kind::Min:
      return std::min(*a, *b);
    default:
      return std::max(*a, *b);
    }
  }
  }
}

std::optional<int64_t>
SymExpr::evaluate(const std::map<std::string, int64_t> &values) const {
  return evaluate([&](const std::string &name) -> std::optional<int64_t> {
    auto it = values.find(name);
    if (it == values.end())
      return std::nullopt;
    return it->second;
  });
}

} // namespace tsl
