#pragma once
/// \file Private to ir/: what the passes that move ops out of loop bodies
/// (HoistAssertions.h, HoistInvariantOps.h) share.

#include "ir/Function.h"

#include <map>
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

/// Rebuilds fn's op list with the ops of \p before[i] just before op i and
/// the ops marked in \p moved left out (they are in \p before). Returns the
/// number of ops inserted.
size_t insertHoisted(Function &fn,
                     std::map<size_t, std::vector<Operation>> &before,
                     const std::vector<bool> &moved);

} // namespace tsl
