// The bitwise operators `&`, `|`, `^` and the power operator `**`
// (docs/language.md, "Operations").
#include "frontend/ElaboratorImpl.h"

#include <cmath>

namespace tsl {

namespace {

/// The largest constant exponent `**` expands into multiplications on
/// integer tensors and sizes (by squaring: at most 2 * 6 steps).
constexpr int64_t kMaxIntExponent = 64;

} // namespace

bool Elaborator::bitwise(const std::string &op, SemValue a, SemValue b,
                         SourceRange opRange, SourceRange range,
                         SemValue &out) {
  using K = SemValue::Kind;
  if (a.kind == K::Cond && b.kind == K::Cond) { // conditions on sizes
    SymCond c = op == "&" ? SymCond::conj(a.c, b.c)
                : op == "|"
                    ? SymCond::disj(a.c, b.c)
                    : SymCond::disj(SymCond::conj(a.c, SymCond::negate(b.c)),
                                    SymCond::conj(SymCond::negate(a.c), b.c));
    out = SemValue::ofCond(c, range);
    return setNest(out, std::max(a.nest, b.nest) + 1, range);
  }
  if (a.kind == K::Int && b.kind == K::Int)
    return error(opRange, "not supported: '" + op + "' on ints (sizes)",
                 "for conditions write && or ||; for tensors, make one first");
  bool tensorOrCond =
      (a.kind == K::Tensor || a.kind == K::Cond || a.kind == K::Int) &&
      (b.kind == K::Tensor || b.kind == K::Cond || b.kind == K::Int) &&
      (a.kind == K::Tensor || b.kind == K::Tensor);
  if (!tensorOrCond)
    return error(opRange, "'" + op + "' cannot combine " + kindName(a.kind) +
                              " and " + kindName(b.kind));
  OpCode code = op == "&" ? OpCode::And : op == "|" ? OpCode::Or : OpCode::Xor;
  return tensorBinary(code, a, b, range, out);
}

bool Elaborator::power(SemValue a, SemValue b, SourceRange opRange,
                       SourceRange range, SemValue &out) {
  using K = SemValue::Kind;
  auto constExponent = [&](int64_t &e) {
    return b.kind == K::Int && b.i.isConst() && (e = b.i.constValue()) >= 0 &&
           e <= kMaxIntExponent;
  };
  int64_t e = 0;
  if (a.kind == K::Int && b.kind == K::Int) { // sizes
    if (!constExponent(e))
      return error(opRange, "'**' on ints needs a constant exponent in 0.." +
                                std::to_string(kMaxIntExponent) + ", got " +
                                b.i.str());
    SymExpr r = 1, base = a.i;
    for (; e > 0; e >>= 1, base = base * base)
      if (e & 1)
        r = r * base;
    if (!checkSize(r, range))
      return false;
    out = SemValue::ofInt(r, range);
    return true;
  }
  if ((a.kind == K::Float || a.kind == K::Int) &&
      (b.kind == K::Float || b.kind == K::Int)) {
    if ((a.kind == K::Int && !a.i.isConst()) ||
        (b.kind == K::Int && !b.i.isConst()))
      return error(opRange,
                   "cannot combine a size with a float at compile time",
                   "make a tensor first, for example cast(arange(1), f32)");
    double x = a.kind == K::Float ? a.f : double(a.i.constValue());
    double y = b.kind == K::Float ? b.f : double(b.i.constValue());
    out = SemValue::ofFloat(std::pow(x, y), range);
    return true;
  }
  if (a.kind != K::Tensor && b.kind != K::Tensor)
    return error(opRange, std::string("'**' cannot combine ") +
                              kindName(a.kind) + " and " + kindName(b.kind));
  DType t = fn.type(a.kind == K::Tensor ? a.tensor : b.tensor).dtype;
  if (isFloat(t))
    return tensorBinary(OpCode::Pow, a, b, range, out);
  // Integer tensors: x ** e for a constant e, by squaring (PyTorch's
  // result for a non-negative exponent; its type is x's).
  if (a.kind != K::Tensor || !constExponent(e))
    return error(opRange,
                 std::string("'**' on ") + dtypeName(t) +
                     " tensors needs a tensor base and a constant exponent "
                     "in 0.." +
                     std::to_string(kMaxIntExponent),
                 "cast to a float type for other exponents");
  if (e == 0) { // ones of x's type and shape
    SemValue zero;
    return tensorBinary(OpCode::Mul, a, SemValue::ofInt(0, range), range,
                        zero) &&
           tensorBinary(OpCode::Add, zero, SemValue::ofInt(1, range), range,
                        out);
  }
  SemValue r, base = a;
  bool first = true;
  for (; e > 0; e >>= 1) {
    if (e & 1) {
      if (first)
        r = base;
      else if (!tensorBinary(OpCode::Mul, r, base, range, r))
        return false;
      first = false;
    }
    if (e > 1 && !tensorBinary(OpCode::Mul, base, base, range, base))
      return false;
  }
  out = r;
  out.range = range;
  return true;
}

} // namespace tsl
