#include "ir/Interpreter.h"
#include "ir/TensorIO.h"

#include <cmath>
#include <cstdio>
#include <gtest/gtest.h>

using namespace tsl;

namespace {

struct HalfCase {
  float value;
  uint16_t half;
};

class Half : public ::testing::TestWithParam<HalfCase> {};

TEST_P(Half, ConvertsBothWays) {
  EXPECT_EQ(floatToHalf(GetParam().value), GetParam().half);
  EXPECT_EQ(halfToFloat(GetParam().half), GetParam().value);
}

INSTANTIATE_TEST_SUITE_P(
    Tensor, Half,
    ::testing::Values(HalfCase{0.0f, 0x0000}, HalfCase{1.0f, 0x3c00},
                      HalfCase{-2.0f, 0xc000}, HalfCase{65504.0f, 0x7bff},
                      HalfCase{0.5f, 0x3800},
                      HalfCase{5.9604644775390625e-08f, 0x0001},
                      HalfCase{INFINITY, 0x7c00}));

TEST(Tensor, HalfRoundsToNearestEvenAndOverflowsToInf) {
  EXPECT_EQ(floatToHalf(1.0f + 1.0f / 2048), 0x3c00); // tie: to even
  EXPECT_EQ(floatToHalf(1e6f), 0x7c00);
  EXPECT_TRUE(std::isnan(halfToFloat(floatToHalf(NAN))));
}

TEST(Tensor, BFloat16) {
  EXPECT_EQ(floatToBF16(1.0f), 0x3f80);
  EXPECT_EQ(bf16ToFloat(0x3f80), 1.0f);
  EXPECT_EQ(bf16ToFloat(floatToBF16(3.140625f)), 3.140625f);
}

TEST(Tensor, IntegerStoresWrapAndFloatToIntSaturates) {
  Tensor t = Tensor::zeros(DType::I8, {2});
  t.setI(0, 300);
  EXPECT_EQ(t.getI(0), 44);
  t.setF(1, 1e9);
  EXPECT_EQ(t.getI(1), 127);
  EXPECT_EQ(saturatingToInt(NAN), 0);
  EXPECT_EQ(saturatingToInt(1e30), INT64_MAX);
}

TEST(Tensor, RefusesHugeAllocations) {
  EXPECT_FALSE(
      Tensor::zeros(DType::F32, {int64_t(1) << 20, int64_t(1) << 20}).valid());
  EXPECT_FALSE(Tensor::zeros(DType::F32, {-1}).valid());
}

TEST(Npy, RoundTripsEveryElementType) {
  for (DType dt : {DType::Bool, DType::I8, DType::I32, DType::I64, DType::F16,
                   DType::BF16, DType::F32, DType::F64}) {
    Tensor t = Tensor::zeros(dt, {2, 3});
    for (size_t i = 0; i < t.numel(); ++i)
      t.setF(i, static_cast<double>(i % 2));
    std::string path = ::testing::TempDir() + "/rt.npy", error;
    ASSERT_TRUE(writeNpy(path, t, error)) << error;
    Tensor back;
    ASSERT_TRUE(readNpy(path, back, error)) << error;
    EXPECT_EQ(back.dtype(), dt);
    EXPECT_EQ(back.shape(), t.shape());
    for (size_t i = 0; i < t.numel(); ++i)
      EXPECT_EQ(back.getF(i), t.getF(i));
  }
}

TEST(Npy, RejectsBadFiles) {
  Tensor t;
  std::string error;
  EXPECT_FALSE(parseNpy("not numpy", t, error));
  EXPECT_FALSE(parseNpy(
      std::string("\x93NUMPY\x01\x00\x10\x00{'descr': '<f4'", 25), t, error));
  std::string header =
      "{'descr': '<c8', 'fortran_order': False, 'shape': (2,), }";
  std::string bytes =
      std::string("\x93NUMPY\x01\x00", 8) + char(header.size()) + '\0' + header;
  EXPECT_FALSE(parseNpy(bytes, t, error));
  EXPECT_NE(error.find("not supported"), std::string::npos);
}

TEST(Format, PrintsLikeNumPy) {
  Tensor t = Tensor::zeros(DType::F32, {2, 2});
  t.setF(0, 0.5);
  t.setF(1, -1);
  t.setF(2, 2);
  t.setF(3, 3.25);
  EXPECT_EQ(formatTensor(t), "[[ 0.5  -1.  ]\n [ 2.    3.25]]");
  Tensor b = Tensor::zeros(DType::Bool, {2});
  b.setI(1, 1);
  EXPECT_EQ(formatTensor(b), "[False  True]");
  Tensor i = Tensor::zeros(DType::I64, {3});
  i.setI(0, -12);
  i.setI(2, 7);
  EXPECT_EQ(formatTensor(i), "[-12   0   7]");
}

} // namespace
