// One native call chooses among a function's variants: the JIT table
// recompiles its dispatcher after each new variant, and the dispatcher
// picks the variant the call ran with (first match wins), rejects other
// signatures, and covers every variant.
#include "runtime/FunctionTable.h"
#include "tools/driver/JitCompiler.h"

#include <fstream>
#include <gtest/gtest.h>

namespace tsl {
namespace {

std::string writeModel() {
  std::string path = ::testing::TempDir() + "/dispatcher_test_model.tsl";
  std::ofstream(path) << "dim N: auto;\n"
                         "fn f(x: f32[N], k: int) -> f32[N] {\n"
                         "  if N > 16 { return x * 2.0 + k; }\n"
                         "  return x + k;\n"
                         "}\n";
  return path;
}

rt::CallArg tensor(std::vector<float> &data, std::vector<int64_t> shape) {
  rt::CallArg a;
  a.dtype = 6; // f32
  a.shape = std::move(shape);
  a.data = data.data();
  return a;
}

rt::CallArg integer(int64_t v) {
  rt::CallArg a;
  a.isInt = true;
  a.intValue = v;
  return a;
}

TEST(Dispatcher, ChoosesTheVariantEachCallRanWith) {
  JitCompiler jit(writeModel());
  rt::FunctionTable table("f", &jit);
  EXPECT_EQ(table.dispatcherCoverage(), 0u);
  std::vector<float> data(64, 1.0f);
  struct Case {
    int64_t n, k;
  };
  // Specialized first, then N and k dynamic, then the other side of N > 16.
  std::vector<Case> cases = {{4, 1}, {5, 2}, {32, 3}, {8, 3}, {40, 7}, {4, 1}};
  for (const Case &c : cases) {
    std::vector<rt::CallArg> args = {tensor(data, {c.n}), integer(c.k)};
    std::vector<rt::Output> out;
    int variant = -1;
    std::string error;
    ASSERT_TRUE(table.call(args, out, variant, error)) << error;
    for (rt::Output &o : out)
      std::free(o.data);
    EXPECT_EQ(table.dispatcherCoverage(), table.numVariants());
    std::vector<int64_t> syms;
    EXPECT_EQ(table.dispatch(args, syms), variant) << "N = " << c.n;
  }
  EXPECT_GE(table.numVariants(), 2u);
  // A rank, element type or arity the variants were not compiled for.
  std::vector<int64_t> syms;
  EXPECT_EQ(table.dispatch({tensor(data, {4, 4}), integer(1)}, syms), -1);
  rt::CallArg ints = tensor(data, {4});
  ints.dtype = 2; // i32
  EXPECT_EQ(table.dispatch({ints, integer(1)}, syms), -1);
  EXPECT_EQ(table.dispatch({tensor(data, {4})}, syms), -1);
  EXPECT_EQ(table.dispatch({integer(4), integer(1)}, syms), -1);
}

} // namespace
} // namespace tsl
