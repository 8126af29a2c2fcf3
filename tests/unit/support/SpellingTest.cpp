// editDistance and closestSpelling ("did you mean" hints) over a table.
#include "support/Spelling.h"

#include <gtest/gtest.h>

namespace tsl {
namespace {

struct DistanceCase {
  const char *a, *b;
  size_t distance;
};

TEST(Spelling, EditDistance) {
  const DistanceCase cases[] = {
      {"", "", 0},
      {"", "abc", 3},
      {"abc", "", 3},
      {"exp", "exp", 0},
      {"exq", "exp", 1},
      {"ex", "exp", 1},
      {"expp", "exp", 1},
      {"sofmax", "softmax", 1},
      {"sotfmax", "softmax", 1},
      {"hiden", "hidden", 1},
      {"kitten", "sitting", 3},
      {"ab", "ba", 1},
  };
  for (const DistanceCase &c : cases) {
    EXPECT_EQ(editDistance(c.a, c.b), c.distance) << c.a << " vs " << c.b;
    EXPECT_EQ(editDistance(c.b, c.a), c.distance) << c.b << " vs " << c.a;
  }
}

struct ClosestCase {
  const char *name;
  const char *expected; // null: no hint
};

TEST(Spelling, ClosestSpelling) {
  const std::vector<std::string> names = {
      "x", "exp", "exp2", "softmax", "sigmoid", "hidden", "layer_norm"};
  const ClosestCase cases[] = {
      {"exq", "exp"}, // first of the equally close
      {"sofmax", "softmax"},
      {"sigmiod", "sigmoid"},
      {"layernorm", "layer_norm"},
      {"qqqq", nullptr},
      {"z", nullptr},       // one letter: nothing is close enough
      {"softmax", nullptr}, // the name exists: no hint
  };
  for (const ClosestCase &c : cases) {
    std::optional<std::string> got = closestSpelling(c.name, names);
    if (c.expected)
      EXPECT_EQ(got.value_or("<none>"), c.expected) << c.name;
    else
      EXPECT_FALSE(got.has_value()) << c.name << " gave " << *got;
  }
}

} // namespace
} // namespace tsl
