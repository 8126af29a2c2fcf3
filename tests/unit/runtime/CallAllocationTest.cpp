// A call a variant already serves allocates nothing through operator new
// (no vectors, strings or contexts) on the calling thread: through
// FunctionTable::call over ArgRefs, through its std::vector API with
// reused vectors, and through tsl_function_call (whose only allocations
// are the results it returns, with malloc). This file replaces the global
// operator new of tsl_unit_runtime with one that counts each thread's
// calls; it is malloc otherwise.
#include "FakeVariants.h"
#include "runtime/Runtime.h"

#include <cstdlib>
#include <gtest/gtest.h>
#include <new>

namespace {
thread_local size_t newCalls = 0;
} // namespace

// GCC pairs the new-expressions it inlines with these free() calls and
// warns (-Wmismatched-new-delete); they are this operator new's own pairs.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"

void *operator new(std::size_t bytes) {
  ++newCalls;
  if (void *p = std::malloc(bytes ? bytes : 1))
    return p;
  throw std::bad_alloc();
}
// The nothrow form too: the library's default one would allocate with
// its own operator new while the plain delete below frees with free()
// (std::stable_sort's temporary buffer does exactly that: ASan reported
// the mismatch once a test reached topk, and the thread pool's start).
void *operator new(std::size_t bytes, const std::nothrow_t &) noexcept {
  ++newCalls;
  return std::malloc(bytes ? bytes : 1);
}
void operator delete(void *p) noexcept { std::free(p); }
void operator delete(void *p, std::size_t) noexcept { std::free(p); }
void operator delete(void *p, const std::nothrow_t &) noexcept { std::free(p); }

using namespace tsl;
using namespace tsl::rt;

namespace {

/// The argument of every call below (a vector of 11 floats), as CallArgs
/// and as a view.
struct Call {
  std::vector<float> x = std::vector<float>(11, 1.0f);
  std::vector<CallArg> args{fake::vectorArg(x)};
  ArgRef ref = ArgRef::of(args[0]);
};

/// Calls \p table \p n times over ArgRefs; false when one fails.
bool callRefs(FunctionTable &table, const Call &c, int n) {
  Results results;
  int variant;
  Error error;
  for (int i = 0; i < n; ++i) {
    if (!table.call(std::span<const ArgRef>(&c.ref, 1), results, variant,
                    error))
      return false;
    std::free(results.items[0].data);
  }
  return true;
}

class CallAllocation : public ::testing::TestWithParam<bool> {};

TEST_P(CallAllocation, ASteadyStateCallAllocatesNothing) {
  fake::Compiler compiler;
  compiler.nativeDispatcher = GetParam();
  FunctionTable table("scale", &compiler);
  Call c;
  ASSERT_TRUE(callRefs(table, c, 1)); // compiles
  EXPECT_EQ(table.dispatcherCoverage(), GetParam() ? 1u : 0u);
  // The call log of the first 100,000 calls takes a chunk per 4,096 calls.
  size_t before = newCalls;
  ASSERT_TRUE(callRefs(table, c, 100000));
  EXPECT_LE(newCalls - before, 25u);

  before = newCalls;
  ASSERT_TRUE(callRefs(table, c, 1000));
  EXPECT_EQ(newCalls - before, 0u) << "FunctionTable::call over ArgRefs";

  std::vector<Output> outputs;
  int variant;
  Error error;
  ASSERT_TRUE(table.call(c.args, outputs, variant, error)); // sizes outputs
  std::free(outputs[0].data);
  before = newCalls;
  for (int i = 0; i < 1000; ++i) {
    ASSERT_TRUE(table.call(c.args, outputs, variant, error));
    std::free(outputs[0].data);
  }
  EXPECT_EQ(newCalls - before, 0u) << "FunctionTable::call, reused vectors";
  EXPECT_EQ(table.stats().calls, 102002u);
}

TEST(CallAllocation, AKernelOfManyBuffersAllocatesNothing) {
  // More buffers than a call keeps on its stack: the thread's own array.
  fake::Compiler compiler;
  compiler.make = [](const std::vector<CallArg> &, bool, VariantCode &out,
                     Error &) {
    out = fake::scaleVariant(fake::matchAny);
    out.numValues = 1000;
    return true;
  };
  FunctionTable table("scale", &compiler);
  Call c;
  ASSERT_TRUE(callRefs(table, c, 100001)); // compiles, fills the call log
  size_t before = newCalls;
  ASSERT_TRUE(callRefs(table, c, 1000));
  EXPECT_EQ(newCalls - before, 0u);
}

INSTANTIATE_TEST_SUITE_P(Dispatch, CallAllocation, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool> &info) {
                           return info.param ? "NativeDispatcher" : "Matchers";
                         });

TEST(CallAllocationCApi, ASteadyStateCallAllocatesNothingThroughNew) {
  fake::Compiler compiler;
  tsl_function fn;
  fn.table = std::make_unique<FunctionTable>("scale", &compiler);
  float x[11] = {};
  int64_t shape[1] = {11};
  tsl_arg a = fake::hostF32Arg(x, shape);
  auto call = [&] {
    tsl_tensor *outs = nullptr;
    int32_t n = 0;
    if (tsl_function_call(&fn, &a, 1, &outs, &n) != TSL_OK)
      return false;
    tsl_outputs_free(outs, n);
    return true;
  };
  ASSERT_TRUE(call()) << tsl_last_error(); // compiles
  for (int i = 0; i < 100000; ++i)         // fills the call log
    ASSERT_TRUE(call());
  size_t before = newCalls;
  for (int i = 0; i < 1000; ++i)
    ASSERT_TRUE(call());
  EXPECT_EQ(newCalls - before, 0u);
}

} // namespace
