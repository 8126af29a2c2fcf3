// cuBLASLt's fallbacks over two fake libraries (tests/unit/runtime/fake):
// a library that loads but cannot create a handle (CUDA 13's cuBLAS on an
// older driver) is passed over for the next one, TSL_LOGS=perf names the
// library that serves and the ones passed over, and a cublasLtMatmul error
// after a good heuristic sends the GEMM to TSL's kernel (Unavailable, a
// warning once) instead of failing the call.
#include "FakeCudaDriver.h"
#include "runtime/CublasLt.h"
#include "runtime/GpuDevice.h"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdlib>

using namespace tsl::rt;

namespace {

const std::string kServes = TSL_FAKE_CUBLASLT_SERVES;
const std::string kRefuses = TSL_FAKE_CUBLASLT_REFUSES;

std::shared_ptr<CudaDevice> openFake() {
  std::string error;
  std::shared_ptr<CudaDevice> cuda =
      CudaDevice::open(fake::fakeCudaDriver(), 0, error);
  EXPECT_TRUE(cuda) << error;
  return cuda;
}

/// A function of the serving fake library (the same handle TSL opened).
template <typename F> F fakeFunction(const char *name) {
  void *lib = dlopen(kServes.c_str(), RTLD_NOW | RTLD_LOCAL);
  EXPECT_NE(lib, nullptr) << dlerror();
  return lib ? reinterpret_cast<F>(dlsym(lib, name)) : nullptr;
}

TEST(CublasLtFallback, ALibraryThatCannotCreateAHandleIsPassedOver) {
  fake::FakeCuda::reset();
  std::shared_ptr<CudaDevice> cuda = openFake();
  ASSERT_TRUE(cuda);
  std::string why;
  std::unique_ptr<CublasLtGemm> g =
      CublasLtGemm::open(*cuda, {kRefuses, kServes}, why);
  ASSERT_TRUE(g) << why;
  EXPECT_EQ(g->path(), kServes);
  EXPECT_EQ(g->refused(), kRefuses + ": cublasLtCreate failed: "
                                     "CUBLAS_STATUS_NOT_INITIALIZED");
}

TEST(CublasLtFallback, WhenNoLibraryServesEachOneSaysWhy) {
  fake::FakeCuda::reset();
  std::shared_ptr<CudaDevice> cuda = openFake();
  ASSERT_TRUE(cuda);
  std::string why;
  EXPECT_FALSE(CublasLtGemm::open(
      *cuda, {kRefuses, "/nonexistent/libcublasLt.so.12"}, why));
  EXPECT_EQ(why.rfind("no cuBLASLt serves this device (" + kRefuses +
                          ": cublasLtCreate failed: "
                          "CUBLAS_STATUS_NOT_INITIALIZED; "
                          "/nonexistent/libcublasLt.so.12: ",
                      0),
            0u)
      << why;
}

TEST(CublasLtFallback, WhenNoLibraryLoadsTheMessageSaysSo) {
  fake::FakeCuda::reset();
  std::shared_ptr<CudaDevice> cuda = openFake();
  ASSERT_TRUE(cuda);
  std::string why;
  EXPECT_FALSE(CublasLtGemm::open(
      *cuda,
      {"/nonexistent/libcublasLt.so.13", "/nonexistent/libcublasLt.so.12"},
      why));
  EXPECT_EQ(why.rfind("cuBLASLt cannot be loaded "
                      "(/nonexistent/libcublasLt.so.13: ",
                      0),
            0u)
      << why;
  EXPECT_NE(why.find("; /nonexistent/libcublasLt.so.12: "), std::string::npos)
      << why;
}

TEST(CublasLtFallback, TheCandidatesComeFromTheEnvironment) {
  std::string why;
  ::setenv("TSL_CUBLASLT_PATH", "/a/libcublasLt.so.13:/b/libcublasLt.so.12", 1);
  EXPECT_EQ(cublasLtCandidates(why),
            (std::vector<std::string>{"/a/libcublasLt.so.13",
                                      "/b/libcublasLt.so.12"}));
  ::unsetenv("TSL_CUBLASLT_PATH");
  EXPECT_EQ(
      cublasLtCandidates(why),
      (std::vector<std::string>{"libcublasLt.so.13", "libcublasLt.so.12"}));
  ::setenv("TSL_CUBLASLT", "off", 1);
  EXPECT_TRUE(cublasLtCandidates(why).empty());
  EXPECT_EQ(why, "cuBLASLt disabled by TSL_CUBLASLT=off");
  ::unsetenv("TSL_CUBLASLT");
}

TEST(CublasLtFallback, ThePerfLogNamesTheLibraryThatServes) {
  fake::FakeCuda::reset();
  ::setenv("TSL_CUBLASLT_PATH", (kRefuses + ":" + kServes).c_str(), 1);
  std::shared_ptr<GpuDevice> gpu = GpuDevice::fromCuda(openFake());
  std::string path = gpu->gemmPath();
  ::unsetenv("TSL_CUBLASLT_PATH");
  EXPECT_EQ(path, "cuBLASLt (" + kServes + "; passed over: " + kRefuses +
                      ": cublasLtCreate failed: "
                      "CUBLAS_STATUS_NOT_INITIALIZED)");
}

TEST(CublasLtFallback, AMatmulErrorFallsBackToTslsKernelOnce) {
  fake::FakeCuda::reset();
  std::shared_ptr<CudaDevice> cuda = openFake();
  ASSERT_TRUE(cuda);
  std::string why;
  std::unique_ptr<CublasLtGemm> g = CublasLtGemm::open(*cuda, {kServes}, why);
  ASSERT_TRUE(g) << why;
  auto setStatus =
      fakeFunction<void (*)(int)>("fake_cublaslt_set_matmul_status");
  auto matmuls = fakeFunction<int (*)()>("fake_cublaslt_matmuls");
  ASSERT_TRUE(setStatus && matmuls);
  alignas(256) static float a[16], b[16], d[16];
  tsl_rt_gemm p{6, 0, 1, 4, 4, 4, a, 0, b, 0, d, 0};
  int before = matmuls();
  setStatus(0);
  std::string error;
  EXPECT_EQ(g->run(p, nullptr, error), GemmOutcome::Done) << error;
  EXPECT_EQ(matmuls(), before + 1);
  // A failing matmul: TSL's kernel runs it (Unavailable), said once.
  setStatus(13);
  tsl_rt_gemm q{6, 0, 1, 8, 8, 4, a, 0, b, 0, d, 0};
  testing::internal::CaptureStderr();
  EXPECT_EQ(g->run(q, nullptr, error), GemmOutcome::Unavailable) << error;
  std::string said = testing::internal::GetCapturedStderr();
  EXPECT_EQ(said, "[tsl] warning: cuBLASLt (" + kServes +
                      "): cublasLtMatmul failed: "
                      "CUBLAS_STATUS_EXECUTION_FAILED: this GEMM (and any "
                      "other the library fails) runs on TSL's generated "
                      "kernel\n");
  EXPECT_EQ(matmuls(), before + 2);
  // The same problem no longer asks the library, and says nothing more.
  testing::internal::CaptureStderr();
  EXPECT_EQ(g->run(q, nullptr, error), GemmOutcome::Unavailable);
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
  EXPECT_EQ(matmuls(), before + 2);
  // Other problems still run on the library.
  setStatus(0);
  EXPECT_EQ(g->run(p, nullptr, error), GemmOutcome::Done) << error;
  EXPECT_EQ(matmuls(), before + 3);
}

} // namespace
