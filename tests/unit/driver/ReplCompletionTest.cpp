// The REPL completes builtins from frontend's builtinNames(), the table
// elaboration uses, instead of a list of its own.
#include "frontend/Elaborator.h"
#include "tools/driver/ReplSession.h"

#include <gtest/gtest.h>
#include <sstream>

using namespace tsl;

namespace {

TEST(ReplCompletion, OffersEveryBuiltin) {
  std::ostringstream out, err;
  ReplSession session(out, err);
  for (const std::string &name : builtinNames()) {
    std::vector<std::string> got = session.completions(name);
    EXPECT_NE(std::find(got.begin(), got.end(), name), got.end()) << name;
  }
  std::vector<std::string> ex = session.completions("ex");
  EXPECT_TRUE(std::is_sorted(ex.begin(), ex.end()));
  EXPECT_NE(std::find(ex.begin(), ex.end(), "exp"), ex.end());
  EXPECT_NE(std::find(ex.begin(), ex.end(), "expand"), ex.end());
  EXPECT_EQ(std::find(ex.begin(), ex.end(), "sum"), ex.end());
}

TEST(ReplCompletion, AddsKeywordsAndDefinedNames) {
  std::ostringstream out, err;
  ReplSession session(out, err);
  EXPECT_EQ(session.completions(":q"), std::vector<std::string>{":quit"});
  ASSERT_TRUE(session.execute("fn twice_it(x: f32[N]) -> f32[N] { return x * "
                              "2.0; }"))
      << err.str();
  std::vector<std::string> t = session.completions("t");
  EXPECT_NE(std::find(t.begin(), t.end(), "twice_it"), t.end());
  EXPECT_NE(std::find(t.begin(), t.end(), "topk"), t.end());
  EXPECT_NE(std::find(t.begin(), t.end(), "tanh"), t.end());
}

} // namespace
