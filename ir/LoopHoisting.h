#pragma once
/// \file Private to ir/: what the passes that move ops out of loop bodies
/// (HoistAssertions.h, HoistInvariantOps.h) share.

#include "ir/Function.h"

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace tsl {

/// 1 + the index of the op that first mentions each symbol; backed dims and
/// int parameters (known before any op) map to 0. A size bound inside a
/// loop body (an unbacked size, the loop variable) is first mentioned by
/// the op that binds it: scoping keeps every other mention after it.
/// Assertions' conditions do not count as mentions.
std::map<std::string, size_t> firstMentions(const Function &fn);

/// The symbols an attribute mentions (of its expressions and conditions).
std::vector<std::string> attrSymbols(const Attr &a);

/// Whether every symbol of \p names is first mentioned before op \p at.
bool knownBefore(const std::vector<std::string> &names, size_t at,
                 const std::map<std::string, size_t> &first);

/// Decides whether op \p i, inside the loop whose op is at \p loopAt,
/// leaves it: the op to put just before the loop (it may be rewritten), or
/// nullopt to keep it. Called in op order, once per op of a loop body.
using HoistRule =
    std::function<std::optional<Operation>(size_t i, size_t loopAt)>;

/// Moves ops out of loop bodies, one loop level per round, until nothing
/// moves: each round makes a rule for the function as it stands (analyses
/// such as firstMentions are per round) and moves what it returns to just
/// before the innermost loop (in order). Returns the number of moves.
size_t
hoistOutOfLoops(Function &fn,
                const std::function<HoistRule(const Function &)> &makeRule);

} // namespace tsl
