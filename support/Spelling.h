#pragma once
/// \file "Did you mean ...?": the candidate closest to a misspelt name.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tsl {

/// Edits (insertions, deletions, substitutions, swaps of adjacent
/// characters) that turn \p a into \p b.
size_t editDistance(std::string_view a, std::string_view b);

/// The candidate closest to \p name by editDistance when it is close enough
/// to be a misspelling (at most 1 edit for names of 2 to 4 characters, 2 up
/// to 8, then 3; never for one letter), the first of equally close ones; none
/// when no candidate is, or \p name is itself a candidate.
std::optional<std::string>
closestSpelling(std::string_view name,
                const std::vector<std::string> &candidates);

} // namespace tsl
