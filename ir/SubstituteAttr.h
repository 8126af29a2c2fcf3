#pragma once
/// \file Private to ir/: an attribute with symbols replaced, for the passes
/// that copy or compare loop bodies under another loop symbol
/// (VjpLoops.cpp, MergeReplayLoops.cpp).

#include "ir/Function.h"

#include <map>
#include <string>

namespace tsl {

/// \p a with each symbol named in \p subst replaced in its expressions and
/// conditions; other attributes unchanged.
inline Attr substituted(const Attr &a,
                        const std::map<std::string, SymExpr> &subst) {
  if (const SymExpr *e = std::get_if<SymExpr>(&a))
    return e->substitute(subst);
  if (const auto *es = std::get_if<std::vector<SymExpr>>(&a)) {
    std::vector<SymExpr> out;
    for (const SymExpr &e : *es)
      out.push_back(e.substitute(subst));
    return out;
  }
  if (const SymCond *c = std::get_if<SymCond>(&a))
    return c->substitute(subst);
  return a;
}

} // namespace tsl
