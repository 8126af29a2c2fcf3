#pragma once
/// \file tsl.prove and tsl.simplify: the REPL's `:prove` and `:simplify`
/// (tools/driver/ReplSession) as functions. Function::guards lives in
/// Analysis.cpp too (declared in Function.h).

#include "python/src/Common.h"

#include <string>

namespace tsl::py {

/// `(answer, counterexample)` for condition \p expr over the declarations
/// \p dims ("dim I: unbacked in 1..1000; dim S: dynamic;", statements such
/// as `check(...)` too): answer True, False or None (unknown);
/// counterexample a dict name -> int when the answer is False and the
/// prover found one, else None. Raises tsl.Error for text that does not
/// parse or names unknown symbols.
nb::object prove(const std::string &expr, const std::string &dims);

/// tsl.Expr, the simplified form of size expression \p expr (its str() is
/// the text `:simplify` prints). Raises tsl.Error like prove().
nb::object simplify(const std::string &expr, const std::string &dims);

} // namespace tsl::py
