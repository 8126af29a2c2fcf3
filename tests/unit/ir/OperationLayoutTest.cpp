// The op's layout (issue 31: an op of a 120,000-line function costs what
// Operation, its values and their lists take): attributes in one sorted
// vector, a location naming its file by one shared pointer.
#include "ir/Function.h"

#include <gtest/gtest.h>

namespace tsl {
namespace {

static_assert(sizeof(Operation) <= 104, "Operation grew");
static_assert(sizeof(Location) <= 24, "Location grew");
static_assert(sizeof(FileName) == sizeof(void *), "FileName is one pointer");

TEST(OperationLayout, AttrMapKeepsNamesSortedAndDistinct) {
  AttrMap m;
  EXPECT_TRUE(m.empty());
  m["keepdim"] = false;
  m["axes"] = std::vector<int64_t>{1};
  m["dtype"] = DType::F16;
  m["axes"] = std::vector<int64_t>{0, 2};
  ASSERT_EQ(m.size(), 3u);
  std::vector<std::string> names;
  for (const auto &[name, value] : m)
    names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{"axes", "dtype", "keepdim"}));
  auto it = m.find("axes");
  ASSERT_NE(it, m.end());
  EXPECT_EQ(std::get<std::vector<int64_t>>(it->second),
            (std::vector<int64_t>{0, 2}));
  EXPECT_EQ(m.find("axis"), m.end());
  EXPECT_EQ(m.count("dtype"), 1u);
  EXPECT_EQ(m.count("zzz"), 0u);

  std::map<std::string, Attr> fromElaborator{{"b", int64_t(2)}, {"a", true}};
  AttrMap converted(fromElaborator);
  ASSERT_EQ(converted.size(), 2u);
  EXPECT_EQ(converted.begin()->first, "a");
  AttrMap listed{{"z", int64_t(1)}, {"c", int64_t(3)}};
  EXPECT_EQ(listed.begin()->first, "c");
}

TEST(OperationLayout, FileNamesAreSharedAndReadAsStrings) {
  std::string path = "/some/rather/long/directory/model.tsl";
  FileName a(path);
  FileName b{std::string_view(path)};
  EXPECT_EQ(&a.str(), &b.str()); // one copy of the name
  EXPECT_TRUE(a == b);
  EXPECT_TRUE(a == path);
  EXPECT_TRUE(a == "/some/rather/long/directory/model.tsl");
  EXPECT_FALSE(a == "other.tsl");
  FileName none;
  EXPECT_TRUE(none.empty());
  EXPECT_TRUE(none == FileName(""));
  Location loc;
  loc.file = path;
  loc.line = 3;
  loc.col = 7;
  EXPECT_EQ(loc.str(), path + ":3:7");
  const std::string &asString = loc.file;
  EXPECT_EQ(asString, path);
}

} // namespace
} // namespace tsl
