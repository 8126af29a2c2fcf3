#pragma once
/// \file The last stage of the prover: Z3 over integer arithmetic with
/// floor division, modulo, min and max. This header keeps Z3 out of every
/// other file; shapes/Z3Solver.cpp is the only file that includes z3++.h.

#include "shapes/ShapeEnv.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace tsl {

/// One Z3 context for one compilation, with a resource limit (`rlimit`, not
/// a wall-clock timeout) and a fixed seed so answers are deterministic, and a
/// cache of answered queries.
class Z3Solver {
public:
  Z3Solver();
  ~Z3Solver();
  Z3Solver(const Z3Solver &) = delete;
  Z3Solver &operator=(const Z3Solver &) = delete;

  struct Answer {
    Truth truth = Truth::Unknown;
    /// When the condition can be false: symbol values where it is.
    std::map<std::string, int64_t> counterexample;
  };

  /// Decides \p cond for every assignment of \p symbols (within their
  /// ranges and divisibility) that satisfies \p facts. Unknown when Z3 gives
  /// up within the resource limit. Never throws.
  Answer decide(const std::vector<SymbolInfo> &symbols,
                const std::vector<SymCond> &facts, const SymCond &cond);

  /// Number of queries that reached Z3 (not answered from the cache).
  unsigned queries() const { return queries_; }

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::map<std::string, Answer> cache_;
  unsigned queries_ = 0;
};

} // namespace tsl
