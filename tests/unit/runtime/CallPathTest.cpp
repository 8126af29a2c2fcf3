// The call path of FunctionTable::call and the C API (tsl_function_call)
// over hand-written variants: results, and every error kind a call reports
// with its exact message (the messages the call path had before it stopped
// allocating on success).
#include "FakeVariants.h"
#include "runtime/Runtime.h"
#include "support/SizeLimits.h"

#include <cmath>
#include <gtest/gtest.h>

using namespace tsl;
using namespace tsl::rt;

namespace {

/// One call of \p table with one f32 vector; the error when it fails.
struct Outcome {
  bool ok = false;
  Error error;
  std::vector<Output> outputs;
  int variant = -1;
};

Outcome callWith(FunctionTable &table, std::vector<CallArg> args) {
  Outcome o;
  o.ok = table.call(args, o.outputs, o.variant, o.error);
  return o;
}

Outcome callVector(FunctionTable &table, std::vector<float> data) {
  return callWith(table, {fake::vectorArg(data)});
}

void freeOutputs(Outcome &o) {
  for (Output &out : o.outputs)
    std::free(out.data);
}

TEST(CallPath, ReturnsTheResultsAndReusesTheOutputsVector) {
  fake::Compiler compiler;
  FunctionTable table("scale", &compiler);
  std::vector<float> x{1, 2, 3};
  std::vector<CallArg> args{fake::vectorArg(x)};
  std::vector<Output> outputs(3); // more than one result: resized
  int variant = -1;
  Error error;
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(table.call(args, outputs, variant, error)) << error.message;
    ASSERT_EQ(outputs.size(), 1u);
    EXPECT_EQ(variant, 0);
    EXPECT_EQ(outputs[0].dtype, 6);
    EXPECT_FALSE(outputs[0].onDevice);
    EXPECT_EQ(outputs[0].shape, std::vector<int64_t>{3});
    const float *y = static_cast<const float *>(outputs[0].data);
    EXPECT_EQ(y[0], 2);
    EXPECT_EQ(y[2], 6);
    std::free(outputs[0].data);
  }
  EXPECT_EQ(compiler.compiles, 1);
}

TEST(CallPath, CopiesAResultThatAliasesAnArgument) {
  fake::Compiler compiler;
  compiler.make = [](const std::vector<CallArg> &, bool, VariantCode &out,
                     Error &) {
    out = fake::scaleVariant(fake::matchAny, fake::kernelAlias);
    return true;
  };
  FunctionTable table("scale", &compiler);
  std::vector<float> x{5, 6};
  Outcome o = callVector(table, x);
  ASSERT_TRUE(o.ok) << o.error.message;
  EXPECT_NE(o.outputs[0].data, x.data());
  EXPECT_EQ(static_cast<const float *>(o.outputs[0].data)[1], 6);
  freeOutputs(o);
}

TEST(CallPath, InvalidArgumentsAreReportedBeforeDispatch) {
  fake::Compiler compiler;
  FunctionTable table("scale", &compiler);
  std::vector<float> x{1, 2, 3, 4};
  CallArg a = fake::vectorArg(x);
  a.shape = {-1};
  Outcome o = callWith(table, {a});
  EXPECT_EQ(o.error.kind, ErrorKind::InvalidArgument);
  EXPECT_EQ(o.error.message, "argument 0 has a negative size");
  a.shape = {int64_t(1) << 40, int64_t(1) << 40};
  o = callWith(table, {a});
  EXPECT_EQ(o.error.kind, ErrorKind::InvalidArgument);
  EXPECT_EQ(o.error.message, "argument 0 (f32[1099511627776, "
                             "1099511627776]) has a size in bytes that does "
                             "not fit in 64 bits");
  a.shape = {4};
  a.data = nullptr;
  o = callWith(table, {a});
  EXPECT_EQ(o.error.kind, ErrorKind::InvalidArgument);
  EXPECT_EQ(o.error.message, "argument 0 (f32[4]) has no data");
  a.shape = {0}; // no bytes: no data needed
  o = callWith(table, {a});
  EXPECT_TRUE(o.ok) << o.error.message;
  freeOutputs(o);
  setMaxTensorBytes(8);
  o = callVector(table, x);
  setMaxTensorBytes(0);
  EXPECT_EQ(o.error.kind, ErrorKind::InvalidArgument);
  EXPECT_EQ(o.error.message,
            "argument 0 (f32[4]) is too large: a tensor of 16 bytes is larger "
            "than the limit of 8 bytes per tensor; set TSL_MAX_TENSOR_BYTES "
            "to raise it");
  // The first bad argument is the one named, ints are never checked.
  CallArg i;
  i.isInt = true;
  i.intValue = -5;
  CallArg empty = fake::vectorArg(x);
  empty.data = nullptr;
  o = callWith(table, {i, fake::vectorArg(x), empty});
  EXPECT_EQ(o.error.message, "argument 2 (f32[4]) has no data");
  EXPECT_EQ(compiler.compiles, 1); // only the empty call compiled
}

TEST(CallPath, NoVariantNamesTheFailingGuardWithItsValues) {
  FunctionTable table("scale", nullptr);
  Outcome o = callVector(table, {1});
  EXPECT_EQ(o.error.kind, ErrorKind::NoVariant);
  EXPECT_EQ(o.error.message,
            "no compiled variant of 'scale' serves this call (no variant "
            "compiled yet) and this runtime has no compiler");
  table.addVariant(fake::scaleVariant(fake::matchAtMost100));
  o = callVector(table, std::vector<float>(101, 1.0f));
  EXPECT_EQ(o.error.kind, ErrorKind::NoVariant);
  EXPECT_EQ(o.error.message,
            "no compiled variant of 'scale' serves this call (guard N <= 100 "
            "(t.tsl:1:1, scale) with N = 101 (argument 'x' dim 0)) and this "
            "runtime has no compiler");
  std::vector<float> m{1, 2, 3, 4};
  CallArg matrix = fake::vectorArg(m);
  matrix.shape = {2, 2};
  o = callWith(table, {matrix});
  EXPECT_EQ(o.error.message,
            "no compiled variant of 'scale' serves this call (rank or element "
            "types differ from variant 0) and this runtime has no compiler");
  o = callVector(table, {1, 2});
  ASSERT_TRUE(o.ok) << o.error.message;
  freeOutputs(o);
}

TEST(CallPath, TheCacheLimitEndsWithOneAllDynamicVariant) {
  fake::Compiler compiler;
  compiler.make = [](const std::vector<CallArg> &, bool allDynamic,
                     VariantCode &out, Error &) {
    out =
        fake::scaleVariant(allDynamic ? fake::matchAtMost100 : fake::matchIs4);
    return true;
  };
  TableOptions options;
  options.cacheLimit = 1;
  FunctionTable table("scale", &compiler, options);
  for (size_t n : {4, 5}) {
    Outcome o = callVector(table, std::vector<float>(n, 1.0f));
    ASSERT_TRUE(o.ok) << o.error.message;
    freeOutputs(o);
  }
  Outcome o = callVector(table, std::vector<float>(200, 1.0f));
  EXPECT_EQ(o.error.kind, ErrorKind::CacheLimit);
  EXPECT_EQ(o.error.message,
            "'scale' has 2 variants (the cache limit) and none serves this "
            "call: guard N <= 100 (t.tsl:1:1, scale) with N = 200 (argument "
            "'x' dim 0)");
  Stats st = table.stats();
  EXPECT_EQ(st.compiles, 2u);
  EXPECT_EQ(st.calls, 2u);
  EXPECT_EQ(st.recompileReasons,
            std::vector<std::string>{"guard N <= 100 (t.tsl:1:1, scale) with "
                                     "N = 5 (argument 'x' dim 0)"});
}

TEST(CallPath, ACompileErrorKeepsItsKind) {
  fake::Compiler compiler;
  compiler.make = [](const std::vector<CallArg> &args, bool, VariantCode &,
                     Error &error) {
    error = {ErrorKind::Shape,
             "t.tsl:1:1: error: no variant for " +
                 std::to_string(args[0].shape[0]),
             {}};
    return false;
  };
  FunctionTable table("scale", &compiler);
  Outcome o = callVector(table, {1, 2, 3});
  EXPECT_EQ(o.error.kind, ErrorKind::Shape);
  EXPECT_EQ(o.error.message, "t.tsl:1:1: error: no variant for 3");
}

TEST(CallPath, AVariantThatRejectsItsOwnCallIsInternal) {
  fake::Compiler compiler;
  compiler.make = [](const std::vector<CallArg> &, bool, VariantCode &out,
                     Error &) {
    out = fake::scaleVariant(fake::matchNone);
    return true;
  };
  FunctionTable table("scale", &compiler);
  Outcome o = callVector(table, {1});
  EXPECT_EQ(o.error.kind, ErrorKind::Internal);
  EXPECT_EQ(o.error.message,
            "the variant compiled for this call of 'scale' rejects it: guard N "
            "<= 100 (t.tsl:1:1, scale) with N = 1 (argument 'x' dim 0)");
}

TEST(CallPath, AGpuVariantWithoutAGpuIsInternal) {
  FunctionTable table("scale", nullptr);
  VariantCode v = fake::scaleVariant(fake::matchAny);
  v.device = std::make_shared<DeviceCode>();
  table.addVariant(std::move(v));
  Outcome o = callVector(table, {1});
  EXPECT_EQ(o.error.kind, ErrorKind::Internal);
  EXPECT_EQ(o.error.message,
            "a GPU variant of 'scale' on a runtime without a GPU");
}

TEST(CallPath, KernelFailuresAreRuntimeChecks) {
  fake::Compiler compiler;
  FunctionTable table("scale", &compiler);
  Outcome o = callVector(table, {-1, 2});
  EXPECT_EQ(o.error.kind, ErrorKind::RuntimeCheck);
  EXPECT_EQ(o.error.message,
            "t.tsl:2:3: runtime check failed: x[0] >= 0: x[0] is -1");
  EXPECT_EQ(o.error.location, "t.tsl:2:3");
  EXPECT_TRUE(o.outputs.empty());
  o = callVector(table, {-2});
  EXPECT_EQ(o.error.kind, ErrorKind::RuntimeCheck);
  EXPECT_EQ(o.error.message, "a library kernel failed");
  o = callVector(table, {-3});
  EXPECT_EQ(o.error.kind, ErrorKind::RuntimeCheck);
  EXPECT_EQ(o.error.message, "the kernel failed");
  // The thread's context forgets a failure: the next call succeeds.
  o = callVector(table, {1});
  ASSERT_TRUE(o.ok) << o.error.message;
  freeOutputs(o);
  EXPECT_EQ(table.stats().calls, 4u); // failed runs count as calls
}

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define TSL_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define TSL_SANITIZED 1
#endif
#endif

TEST(CallPath, AResultNoMemoryHoldsIsAResourceError) {
#ifdef TSL_SANITIZED
  GTEST_SKIP() << "sanitizers abort on a 2^63-byte malloc";
#endif
  fake::Compiler compiler;
  compiler.make = [](const std::vector<CallArg> &, bool, VariantCode &out,
                     Error &) {
    out =
        fake::scaleVariant(fake::matchAny, fake::kernelAlias, fake::shapesHuge);
    return true;
  };
  FunctionTable table("scale", &compiler);
  Outcome o = callVector(table, {1});
  EXPECT_EQ(o.error.kind, ErrorKind::Resource);
  EXPECT_EQ(o.error.message, "out of memory for a result");
  EXPECT_TRUE(o.outputs.empty());
}

// --- The C API over the same tables ---------------------------------------

/// A tsl_function over a table of `scale` (the CPU).
struct CFunction {
  fake::Compiler compiler;
  tsl_function fn;
  explicit CFunction(CompilerHook *hook = nullptr) {
    fn.table =
        std::make_unique<FunctionTable>("scale", hook ? hook : &compiler);
  }
};

tsl_status callC(tsl_function *fn, std::vector<tsl_arg> args,
                 std::string &error) {
  tsl_tensor *outs = nullptr;
  int32_t n = 0;
  tsl_status s = tsl_function_call(
      fn, args.data(), static_cast<int32_t>(args.size()), &outs, &n);
  error = s == TSL_OK ? "" : tsl_last_error();
  if (s == TSL_OK)
    tsl_outputs_free(outs, n);
  return s;
}

TEST(CallPathCApi, ReturnsTensorsTheCallerFrees) {
  CFunction f;
  float x[3] = {1, 2, 3};
  int64_t shape[1] = {3};
  tsl_arg a = fake::hostF32Arg(x, shape);
  for (int i = 0; i < 2; ++i) {
    tsl_tensor *outs = nullptr;
    int32_t n = 0;
    ASSERT_EQ(tsl_function_call(&f.fn, &a, 1, &outs, &n), TSL_OK)
        << tsl_last_error();
    ASSERT_EQ(n, 1);
    EXPECT_EQ(outs[0].ndim, 1);
    EXPECT_EQ(outs[0].shape[0], 3);
    EXPECT_EQ(outs[0].device.device_type, 1);
    EXPECT_EQ(outs[0].dtype.code, 2);
    EXPECT_EQ(outs[0].dtype.bits, 32);
    EXPECT_EQ(outs[0].strides, nullptr);
    EXPECT_EQ(outs[0].byte_offset, 0u);
    EXPECT_EQ(outs[1].data, nullptr); // the array's zeroed end
    EXPECT_EQ(static_cast<const float *>(outs[0].data)[2], 6);
    tsl_outputs_free(outs, n);
  }
  int32_t compiles = -1, calls = -1;
  ASSERT_EQ(tsl_function_stats(&f.fn, &compiles, &calls), TSL_OK);
  EXPECT_EQ(compiles, 1);
  EXPECT_EQ(calls, 2);
}

TEST(CallPathCApi, ArgumentErrorsKeepTheirStatusAndMessage) {
  CFunction f;
  float x[4] = {1, 2, 3, 4};
  int64_t shape[2] = {2, 2}, strides[2] = {1, 2};
  std::string e;
  tsl_tensor *outs = nullptr;
  int32_t n = 0;
  EXPECT_EQ(tsl_function_call(nullptr, nullptr, 0, &outs, &n),
            TSL_INVALID_ARGUMENT);
  EXPECT_STREQ(tsl_last_error(), "tsl_function_call: null argument");
  tsl_arg a = fake::hostF32Arg(x, shape);
  EXPECT_EQ(tsl_function_call_on_stream(&f.fn, &a, 1, &n, &outs, &n),
            TSL_INVALID_ARGUMENT);
  EXPECT_STREQ(tsl_last_error(),
               "tsl_function_call_on_stream: a stream needs a CUDA runtime");
  tsl_arg i{};
  i.is_int = 1;
  a.tensor.device = {2, 0};
  EXPECT_EQ(callC(&f.fn, {i, a}, e), TSL_INVALID_ARGUMENT);
  EXPECT_EQ(e, "argument 1 is on device 2:0 but this runtime runs on 1:0");
  a = fake::hostF32Arg(x, shape);
  a.tensor.dtype = {2, 32, 2};
  EXPECT_EQ(callC(&f.fn, {a}, e), TSL_INVALID_ARGUMENT);
  EXPECT_EQ(e, "argument 0 has an unsupported element type");
  a = fake::hostF32Arg(x, nullptr);
  EXPECT_EQ(callC(&f.fn, {a}, e), TSL_INVALID_ARGUMENT);
  EXPECT_EQ(e, "argument 0 has an invalid shape");
  a = fake::hostF32Arg(x, shape, 33);
  EXPECT_EQ(callC(&f.fn, {a}, e), TSL_INVALID_ARGUMENT);
  EXPECT_EQ(e, "argument 0 has an invalid shape");
  a = fake::hostF32Arg(x, shape, 2);
  a.tensor.strides = strides;
  EXPECT_EQ(callC(&f.fn, {a}, e), TSL_UNSUPPORTED);
  EXPECT_EQ(e, "argument 0 is not row-major contiguous");
  int64_t huge[2] = {int64_t(1) << 40, int64_t(1) << 40},
          hugeStrides[2] = {int64_t(1) << 40, 1};
  a = fake::hostF32Arg(x, huge, 2);
  a.tensor.strides = hugeStrides;
  EXPECT_EQ(callC(&f.fn, {a}, e), TSL_INVALID_ARGUMENT);
  EXPECT_EQ(e, "argument 0 has a size that does not fit in 64 bits");
  a = fake::hostF32Arg(x, shape);
  a.tensor.byte_offset = ~uint64_t(0);
  EXPECT_EQ(callC(&f.fn, {a}, e), TSL_INVALID_ARGUMENT);
  EXPECT_EQ(e, "argument 0 has a byte_offset past the end of memory");
  a = fake::hostF32Arg(x, shape);
  a.tensor.byte_offset = 2;
  EXPECT_EQ(callC(&f.fn, {a}, e), TSL_INVALID_ARGUMENT);
  EXPECT_EQ(e, "argument 0 is misaligned: data + byte_offset is not a "
               "multiple of 4 bytes, the size of its elements");
  int64_t negative[1] = {-4};
  a = fake::hostF32Arg(x, negative);
  EXPECT_EQ(callC(&f.fn, {a}, e), TSL_INVALID_ARGUMENT);
  EXPECT_EQ(e, "argument 0 has a negative size");
  EXPECT_EQ(f.compiler.compiles, 0);
}

TEST(CallPathCApi, CallErrorsMapToTheirStatus) {
  float x[2] = {1, 2}, fail[1] = {-1};
  int64_t one[1] = {1}, two[1] = {2}, many[1] = {101};
  std::string e;
  {
    tsl_function fn; // no compiler
    fn.table = std::make_unique<FunctionTable>("scale", nullptr);
    fn.table->addVariant(fake::scaleVariant(fake::matchAtMost100));
    std::vector<float> big(101, 1.0f);
    EXPECT_EQ(callC(&fn, {fake::hostF32Arg(big.data(), many)}, e),
              TSL_NO_VARIANT);
    EXPECT_EQ(e, "no compiled variant of 'scale' serves this call (guard N <= "
                 "100 (t.tsl:1:1, scale) with N = 101 (argument 'x' dim 0)) "
                 "and this runtime has no compiler");
  }
  CFunction f;
  EXPECT_EQ(callC(&f.fn, {fake::hostF32Arg(fail, one)}, e), TSL_RUNTIME_ERROR);
  EXPECT_EQ(e, "t.tsl:2:3: runtime check failed: x[0] >= 0: x[0] is -1");
  EXPECT_EQ(callC(&f.fn, {fake::hostF32Arg(x, two)}, e), TSL_OK);
  f.compiler.make = [](const std::vector<CallArg> &, bool, VariantCode &,
                       Error &error) {
    error = {ErrorKind::Unsupported, "not on this backend", {}};
    return false;
  };
  tsl_arg i{};
  i.is_int = 1; // no variant takes an int: compiles, which fails
  EXPECT_EQ(callC(&f.fn, {i}, e), TSL_UNSUPPORTED);
  EXPECT_EQ(e, "not on this backend");
}

} // namespace
