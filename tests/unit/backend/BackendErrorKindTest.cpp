// The backends' failures keep their kind (support/Error.h), so the C API
// and Python report the real one: an op a target cannot compile is
// Unsupported, a bad architecture InvalidArgument, a file that cannot be
// written Io, a bug Internal.
#include "backend/cpu/CpuKernel.h"
#include "backend/nvptx/GpuKernel.h"
#include "ir/IrText.h"
#include "support/Error.h"

#include <gtest/gtest.h>

using namespace tsl;

namespace {

const char *kModule = R"IR(
func @scale(%x: f32[N]) -> (f32[N]) {
  symbol N: dynamic
  %0 = constant() {dtype = f32, value = 2.0} : f32[]
  %1 = mul(%x, %0) : f32[N]
  return %1
}

func @int_attention(%q: i32[S, D], %k: i32[T, D], %v: i32[T, E]) -> (i32[S, E]) {
  symbol S: dynamic
  symbol T: dynamic
  symbol D: dynamic
  symbol E: dynamic
  %s = constant() {dtype = i32, value = 1} : i32[]
  %r = attention(%q, %k, %v, %s) {causal = false} : i32[S, E]
  return %r
}
)IR";

struct BackendErrorKind : ::testing::Test {
  Module module;
  void SetUp() override {
    std::string error;
    ASSERT_TRUE(parseModule(kModule, module, error)) << error;
  }
  const Function &fn(const std::string &name) {
    for (const Function &f : module.functions)
      if (f.name == name)
        return f;
    ADD_FAILURE() << "no function " << name;
    return module.functions.front();
  }
};

TEST(Expected, HoldsAValueOrAnError) {
  Expected<int> value = 7;
  ASSERT_TRUE(value);
  EXPECT_EQ(*value, 7);
  Expected<int> failed = makeError(ErrorKind::Io, "cannot read 'x'");
  ASSERT_FALSE(failed);
  EXPECT_EQ(failed.error().kind, ErrorKind::Io);
  EXPECT_EQ(failed.error().message, "cannot read 'x'");
  Expected<void> ok;
  EXPECT_TRUE(ok);
  Expected<void> notOk = makeError(ErrorKind::Internal, "internal error: x");
  ASSERT_FALSE(notOk);
  EXPECT_EQ(notOk.error().kind, ErrorKind::Internal);
}

TEST_F(BackendErrorKind, UnknownGpuArchitectureIsInvalidArgument) {
  Expected<std::string> ptx = lowerToPtx(fn("scale"), "sm_70");
  ASSERT_FALSE(ptx);
  EXPECT_EQ(ptx.error().kind, ErrorKind::InvalidArgument);
  EXPECT_EQ(ptx.error().message,
            "unknown GPU architecture 'sm_70' (sm_80 or sm_90)");
}

TEST_F(BackendErrorKind, OpWithoutDeviceLoweringIsUnsupported) {
  Expected<std::unique_ptr<GpuKernel>> kernel =
      GpuKernel::compile(fn("int_attention"), GpuTarget::Emulator);
  ASSERT_FALSE(kernel);
  EXPECT_EQ(kernel.error().kind, ErrorKind::Unsupported);
  EXPECT_NE(kernel.error().message.find(
                "not supported on the cuda backend: attention on i32"),
            std::string::npos)
      << kernel.error().message;
}

TEST_F(BackendErrorKind, UnwritableLibraryIsIo) {
  Expected<void> built =
      buildSharedLibrary({fn("scale")}, "/nonexistent-tsl-dir/scale.so");
  ASSERT_FALSE(built);
  EXPECT_EQ(built.error().kind, ErrorKind::Io);
  EXPECT_NE(built.error().message.find("cannot write '/nonexistent-tsl-dir/"),
            std::string::npos)
      << built.error().message;
}

TEST_F(BackendErrorKind, CudaWithoutADeviceIsUnsupported) {
  Expected<std::unique_ptr<GpuKernel>> kernel =
      GpuKernel::compile(fn("scale"), GpuTarget::Cuda);
  if (kernel)
    GTEST_SKIP() << "a CUDA device is present";
  EXPECT_EQ(kernel.error().kind, ErrorKind::Unsupported)
      << kernel.error().message;
}

TEST_F(BackendErrorKind, CompiledFunctionRuns) {
  Expected<std::unique_ptr<CpuKernel>> kernel = CpuKernel::compile(fn("scale"));
  ASSERT_TRUE(kernel) << kernel.error().message;
  std::vector<ArgValue> args(1);
  args[0].tensor = Tensor::zeros(DType::F32, {3});
  args[0].tensor.setF(1, 1.5);
  std::vector<Tensor> out;
  RunError e;
  ASSERT_TRUE((*kernel)->run(args, out, e)) << e.message;
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].getF(1), 3.0);
}

} // namespace
