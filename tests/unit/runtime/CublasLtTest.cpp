// cuBLASLt is opened at run time and never required: a missing library or
// one without the entry points TSL calls is an explanation, not a crash,
// and the real library (where the CUDA toolkit or a PyTorch wheel put it)
// loads with every entry point even on a machine without a GPU.
#include "runtime/CublasLt.h"

#include <gtest/gtest.h>

using tsl::rt::probeCublasLt;

TEST(CublasLt, MissingLibraryIsExplained) {
  std::string why;
  EXPECT_EQ(probeCublasLt({"/nonexistent/libcublasLt.so.13"}, why), "");
  EXPECT_NE(why.find("cuBLASLt cannot be loaded"), std::string::npos) << why;
  EXPECT_NE(why.find("/nonexistent/libcublasLt.so.13"), std::string::npos)
      << why;
}

TEST(CublasLt, LibraryWithoutEntryPointsIsRejected) {
  std::string why;
  EXPECT_EQ(probeCublasLt({"libm.so.6"}, why), "");
  EXPECT_NE(why.find("libm.so.6 lacks cublasLtCreate"), std::string::npos)
      << why;
}

TEST(CublasLt, TheToolkitsLibraryResolvesEveryEntryPoint) {
  std::string why;
  std::string path = probeCublasLt({"libcublasLt.so.13", "libcublasLt.so.12",
                                    "/usr/local/cuda/lib64/libcublasLt.so.13",
                                    "/usr/local/cuda/lib64/libcublasLt.so.12"},
                                   why);
  if (path.empty())
    GTEST_SKIP() << "no cuBLASLt on this machine: " << why;
  EXPECT_EQ(why, "");
  EXPECT_NE(path.find("libcublasLt.so.1"), std::string::npos);
}
