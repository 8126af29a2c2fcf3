// The only file that includes z3++.h (ARCHITECTURE.md).
#include "shapes/Z3Solver.h"

#include <z3++.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

namespace tsl {

struct Z3Solver::Impl {
  z3::context ctx;
  std::map<std::string, z3::expr> symbols;
  /// Side conditions defining fresh quotient/remainder variables.
  std::vector<z3::expr> side;
  /// The quotient and remainder of each division lowered in this query,
  /// by the dividend's and divisor's ids: `D % 4` in a fact and `D / 4` in
  /// the goal share one quotient, so `D % 4 == 0` makes D equal to 4 times
  /// the very quotient the goal names (with one pair per occurrence the
  /// nonlinear search had to find that and ran out of its budget).
  /// The entry holds the dividend and divisor too: an id names one term
  /// only while that term lives.
  struct Division {
    z3::expr a, b, q, r;
  };
  std::map<std::pair<unsigned, unsigned>, Division> divisions;
  unsigned fresh = 0;

  z3::expr symbol(const std::string &name) {
    auto it = symbols.find(name);
    if (it != symbols.end())
      return it->second;
    z3::expr e = ctx.int_const(name.c_str());
    symbols.emplace(name, e);
    return e;
  }

  /// Floor division and modulo: a = b*q + r with r between 0 and b
  /// (exclusive), on b's side of zero.
  std::pair<z3::expr, z3::expr> divMod(const z3::expr &a, const z3::expr &b) {
    auto key = std::make_pair(a.id(), b.id());
    if (auto it = divisions.find(key); it != divisions.end())
      return {it->second.q, it->second.r};
    std::string id = std::to_string(fresh++);
    z3::expr q = ctx.int_const(("__q" + id).c_str());
    z3::expr r = ctx.int_const(("__r" + id).c_str());
    z3::expr zero = ctx.int_val(0);
    side.push_back(z3::implies(b != zero, a == b * q + r));
    side.push_back(z3::implies(b > zero, r >= zero && r < b));
    side.push_back(z3::implies(b < zero, r <= zero && r > b));
    divisions.emplace(key, Division{a, b, q, r});
    return {q, r};
  }

  z3::expr lower(SymExpr e) {
    switch (e.kind()) {
    case SymExpr::Kind::Const:
      return ctx.int_val(e.constValue());
    case SymExpr::Kind::Overflow: // no value: an unconstrained integer
      return ctx.int_const(("__overflow" + std::to_string(fresh++)).c_str());
    case SymExpr::Kind::Symbol:
      return symbol(e.symbolName());
    case SymExpr::Kind::Add: {
      z3::expr sum = ctx.int_val(e.addConstant());
      for (size_t i = 0; i < e.operands().size(); ++i)
        sum = sum + ctx.int_val(e.coefficients()[i]) * lower(e.operands()[i]);
      return sum;
    }
    case SymExpr::Kind::Mul: {
      z3::expr prod = ctx.int_val(1);
      for (size_t i = 0; i < e.operands().size(); ++i) {
        z3::expr f = lower(e.operands()[i]);
        for (int64_t k = 0; k < e.coefficients()[i]; ++k)
          prod = prod * f;
      }
      return prod;
    }
    case SymExpr::Kind::FloorDiv:
    case SymExpr::Kind::Mod: {
      auto [q, r] = divMod(lower(e.operands()[0]), lower(e.operands()[1]));
      return e.kind() == SymExpr::Kind::FloorDiv ? q : r;
    }
    case SymExpr::Kind::Min:
    case SymExpr::Kind::Max: {
      z3::expr a = lower(e.operands()[0]), b = lower(e.operands()[1]);
      return e.kind() == SymExpr::Kind::Min ? z3::ite(a <= b, a, b)
                                            : z3::ite(a >= b, a, b);
    }
    }
    return ctx.int_val(0);
  }

  z3::expr lower(const SymCond &c) {
    switch (c.kind()) {
    case SymCond::Kind::True:
      return ctx.bool_val(true);
    case SymCond::Kind::False:
      return ctx.bool_val(false);
    case SymCond::Kind::And:
      return lower(c.children()[0]) && lower(c.children()[1]);
    case SymCond::Kind::Or:
      return lower(c.children()[0]) || lower(c.children()[1]);
    case SymCond::Kind::Not:
      return !lower(c.children()[0]);
    default:
      break;
    }
    z3::expr a = lower(c.lhs()), b = lower(c.rhs());
    switch (c.kind()) {
    case SymCond::Kind::Eq:
      return a == b;
    case SymCond::Kind::Ne:
      return a != b;
    case SymCond::Kind::Lt:
      return a < b;
    case SymCond::Kind::Le:
      return a <= b;
    case SymCond::Kind::Gt:
      return a > b;
    default:
      return a >= b;
    }
  }
};

Z3Solver::Z3Solver() : impl_(std::make_unique<Impl>()) {}
Z3Solver::~Z3Solver() = default;

Z3Solver::Answer Z3Solver::decide(const std::vector<SymbolInfo> &symbols,
                                  const std::vector<SymCond> &facts,
                                  const SymCond &cond) {
  // The facts themselves, not their count: facts forgotten at the end of
  // a scope and as many others added gave the first facts' answer.
  std::string key = cond.str() + "|" + std::to_string(symbols.size());
  for (const SymCond &f : facts)
    key += "|" + f.str();
  auto cached = cache_.find(key);
  if (cached != cache_.end())
    return cached->second;
  ++queries_;
  Answer answer;
  static const bool log = std::getenv("TSL_LOG_Z3") != nullptr;
  auto start = std::chrono::steady_clock::now();
  try {
    Impl &z = *impl_;
    z.side.clear();
    z.divisions.clear();
    z3::solver solver(z.ctx);
    z3::params p(z.ctx);
    // rlimit bounds the work deterministically; Z3 4.8's preprocessing
    // does not always count against it, so a generous wall-clock cap
    // backs it up (it only fires on pathological nonlinear queries).
    p.set("rlimit", 150000u);
    p.set("timeout", 2000u);
    p.set("random_seed", 0u);
    solver.set(p);
    std::vector<z3::expr> base;
    std::vector<std::string> names;
    for (const std::string &n : cond.symbols())
      names.push_back(n);
    for (const SymCond &f : facts)
      for (const std::string &n : f.symbols())
        names.push_back(n);
    // Every symbol holds an int64 at run time, and every size computed from
    // symbols is evaluated with overflow checks (a run whose sizes leave
    // int64 stops with an error), so reasoning over unbounded integers with
    // each symbol in its int64 range is exact for every run that goes on.
    for (const SymbolInfo &s : symbols) {
      z3::expr v = z.symbol(s.name);
      base.push_back(v >= z.ctx.int_val(s.lo));
      base.push_back(v <= z.ctx.int_val(s.hi ? *s.hi : INT64_MAX));
      if (s.multipleOf > 1) {
        auto [q, r] = z.divMod(v, z.ctx.int_val(s.multipleOf));
        (void)q;
        base.push_back(r == z.ctx.int_val(0));
      }
    }
    for (const std::string &n : names) {
      bool declared = false;
      for (const SymbolInfo &s : symbols)
        declared |= s.name == n;
      if (!declared) { // a size
        base.push_back(z.symbol(n) >= z.ctx.int_val(0));
        base.push_back(z.symbol(n) <= z.ctx.int_val(INT64_MAX));
      }
    }
    for (const SymCond &f : facts)
      base.push_back(z.lower(f));
    z3::expr goal = z.lower(cond);
    for (const z3::expr &e : base)
      solver.add(e);
    for (const z3::expr &e : z.side)
      solver.add(e);
    // Can the condition be false?
    solver.push();
    solver.add(!goal);
    for (const z3::expr &e : z.side)
      solver.add(e);
    z3::check_result canFail = solver.check();
    if (canFail == z3::sat) {
      z3::model m = solver.get_model();
      for (const std::string &n : cond.symbols()) {
        z3::expr v = m.eval(z.symbol(n), true);
        int64_t value;
        if (v.is_numeral_i64(value))
          answer.counterexample[n] = value;
      }
    }
    solver.pop();
    if (canFail == z3::unsat) {
      answer.truth = Truth::True;
    } else {
      solver.push();
      solver.add(goal);
      for (const z3::expr &e : z.side)
        solver.add(e);
      z3::check_result canHold = solver.check();
      solver.pop();
      if (canHold == z3::unsat)
        answer.truth = Truth::False;
    }
  } catch (const z3::exception &) {
    answer = Answer();
  }
  if (log)
    std::fprintf(stderr, "z3: %s with %zu facts -> %s in %.1f ms\n",
                 cond.str().c_str(), facts.size(),
                 answer.truth == Truth::True    ? "true"
                 : answer.truth == Truth::False ? "false"
                                                : "unknown",
                 std::chrono::duration<double, std::milli>(
                     std::chrono::steady_clock::now() - start)
                     .count());
  cache_[key] = answer;
  return answer;
}

} // namespace tsl
