// Optimal string alignment distance (Damerau-Levenshtein without repeated
// edits of one substring), as compilers use for "did you mean" hints.
#include "support/Spelling.h"

#include <algorithm>

namespace tsl {

size_t editDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> prev2(b.size() + 1), prev(b.size() + 1),
      row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j)
    prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      row[j] = std::min({prev[j] + 1, row[j - 1] + 1, prev[j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        row[j] = std::min(row[j], prev2[j - 2] + 1);
    }
    std::swap(prev2, prev);
    std::swap(prev, row);
  }
  return prev[b.size()];
}

std::optional<std::string>
closestSpelling(std::string_view name,
                const std::vector<std::string> &candidates) {
  size_t limit = name.size() <= 1   ? 0
                 : name.size() <= 4 ? 1
                 : name.size() <= 8 ? 2
                                    : 3;
  if (limit == 0)
    return std::nullopt; // any one letter is one edit from any other
  std::optional<std::string> best;
  size_t bestDistance = limit + 1;
  for (const std::string &c : candidates) {
    if (c == name)
      return std::nullopt;
    // Names far apart in length cannot be within the limit.
    size_t gap = c.size() > name.size() ? c.size() - name.size()
                                        : name.size() - c.size();
    if (gap > limit)
      continue;
    size_t d = editDistance(name, c);
    if (d < bestDistance) {
      bestDistance = d;
      best = c;
    }
  }
  return best;
}

} // namespace tsl
