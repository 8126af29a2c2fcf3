// safetensors weights: files read through the C API as views of the mapped
// file, and every malformed header or file refused with its reason (never a
// read past the data).
#include "runtime/Safetensors.h"
#include "tsl/tsl.h"

#include <cstring>
#include <fstream>
#include <gtest/gtest.h>
#include <string>
#include <vector>

namespace {

/// A safetensors file's bytes: the header length, \p header, then \p data.
std::string fileBytes(const std::string &header, const std::string &data) {
  std::string out(8, '\0');
  uint64_t n = header.size();
  for (int i = 0; i < 8; ++i)
    out[i] = static_cast<char>(n >> (8 * i));
  return out + header + data;
}

std::string writeFile(const std::string &name, const std::string &bytes) {
  std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

std::string floats(std::vector<float> v) {
  return std::string(reinterpret_cast<const char *>(v.data()),
                     v.size() * sizeof(float));
}

TEST(Safetensors, TensorsAreViewsOfTheFile) {
  std::string header =
      R"({"__metadata__": {"format": "pt"},
          "w": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16]},
          "b": {"shape": [2], "data_offsets": [16, 24], "dtype": "F32"},
          "ids": {"dtype": "I64", "shape": [1], "data_offsets": [24, 32]},
          "empty": {"dtype": "F16", "shape": [0, 3], "data_offsets": [32, 32]}})";
  header.resize((header.size() + 7) / 8 * 8, ' '); // data 8-byte aligned
  int64_t id = 7;
  std::string path = writeFile(
      "weights.safetensors",
      fileBytes(header, floats({1, 2, 3, 4}) + floats({5, 6}) +
                            std::string(reinterpret_cast<char *>(&id), 8)));
  tsl::Weights w;
  ASSERT_TRUE(tsl::Weights::open(path, w).ok()) << tsl_last_error();
  ASSERT_EQ(w.size(), 4u);
  EXPECT_EQ(w.name(0), "w");
  EXPECT_EQ(w.name(3), "empty");
  tsl::Arg b;
  ASSERT_TRUE(w.find("b", b).ok());
  tsl_arg raw = b.raw();
  EXPECT_EQ(raw.tensor.ndim, 1);
  EXPECT_EQ(raw.tensor.shape[0], 2);
  EXPECT_EQ(static_cast<float *>(raw.tensor.data)[1], 6.0f);
  EXPECT_EQ(raw.tensor.dtype.code, 2);
  EXPECT_EQ(raw.tensor.dtype.bits, 32);
  tsl::Arg missing;
  tsl::Status s = w.find("nope", missing);
  EXPECT_EQ(s.code, TSL_NOT_FOUND);
  EXPECT_EQ(s.message, "the weights have no tensor 'nope'");

  tsl_weights *raw_w = nullptr;
  ASSERT_EQ(tsl_weights_open(path.c_str(), &raw_w), TSL_OK);
  const char *name = nullptr;
  tsl_tensor t{};
  ASSERT_EQ(tsl_weights_get(raw_w, 2, &name, &t), TSL_OK);
  EXPECT_STREQ(name, "ids");
  EXPECT_EQ(*static_cast<int64_t *>(t.data), 7);
  EXPECT_EQ(tsl_weights_get(raw_w, 4, &name, &t), TSL_INVALID_ARGUMENT);
  tsl_weights_close(raw_w);
}

TEST(Safetensors, AMisalignedTensorIsCopiedAligned) {
  std::string header =
      R"({"flag": {"dtype": "BOOL", "shape": [1], "data_offsets": [0, 1]},
          "x": {"dtype": "F32", "shape": [2], "data_offsets": [1, 9]}})";
  header.resize((header.size() + 7) / 8 * 8, ' ');
  std::string path = writeFile("misaligned.safetensors",
                               fileBytes(header, "\x01" + floats({1.5f, -2})));
  tsl::Weights w;
  ASSERT_TRUE(tsl::Weights::open(path, w).ok()) << tsl_last_error();
  tsl::Arg x;
  ASSERT_TRUE(w.find("x", x).ok());
  const float *data = static_cast<const float *>(x.raw().tensor.data);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(data) % alignof(float), 0u);
  EXPECT_EQ(data[0], 1.5f);
  EXPECT_EQ(data[1], -2.0f);
}

struct BadHeader {
  const char *json;
  uint64_t dataBytes;
  const char *message;
};

class SafetensorsHeader : public ::testing::TestWithParam<BadHeader> {};

TEST_P(SafetensorsHeader, IsRefusedWithItsReason) {
  auto r =
      tsl::rt::parseSafetensorsHeader(GetParam().json, GetParam().dataBytes);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, tsl::ErrorKind::InvalidArgument);
  EXPECT_EQ(r.error().message, GetParam().message);
}

INSTANTIATE_TEST_SUITE_P(
    Safetensors, SafetensorsHeader,
    ::testing::Values(
        BadHeader{"", 0, "malformed header: expected '{' at byte 0"},
        BadHeader{
            R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]})",
            4, "malformed header: expected '}' at byte 60"},
        BadHeader{
            R"({"a": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1]}})",
            1,
            "tensor 'a' has dtype U8, which TSL has no element type for "
            "(bool, i8, i32, i64, f16, bf16, f32, f64)"},
        BadHeader{
            R"({"a": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}})",
            8,
            "tensor 'a' has data_offsets [0, 8) holding 8 bytes, but its "
            "dtype and shape need 12"},
        BadHeader{
            R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [8, 16]}})",
            12,
            "tensor 'a' has data_offsets up to byte 16 of a data section "
            "of 12 bytes"},
        BadHeader{
            R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [8, 0]}})",
            16, "tensor 'a' has data_offsets that end before they begin"},
        BadHeader{
            R"({"a": {"dtype": "F64", "shape": [4611686018427387904, 4], "data_offsets": [0, 0]}})",
            0, "tensor 'a' has a shape whose byte size overflows"},
        BadHeader{
            R"({"a": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 0]}})",
            0, "malformed header: expected a non-negative integer at byte 33"},
        BadHeader{
            R"({"a": {"dtype": "F32", "shape": [1.5], "data_offsets": [0, 0]}})",
            0, "malformed header: expected an integer at byte 34"},
        BadHeader{R"({"a": {"dtype": "F32", "data_offsets": [0, 0]}})", 0,
                  "tensor 'a' has no shape"},
        BadHeader{
            R"({"a": {"dtype": "F32", "shape": [], "data_offsets": [0, 4]},
                      "a": {"dtype": "F32", "shape": [], "data_offsets": [4, 8]}})",
            8, "tensor 'a' is named twice"},
        BadHeader{R"({"a\ud800": {}})", 0,
                  "malformed header: an unpaired surrogate at byte 9"},
        BadHeader{
            R"({"__metadata__": [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}")",
            0, "malformed header: nesting deeper than 64 at byte 82"},
        BadHeader{R"({} x)", 0,
                  "malformed header: text after the header's object"}));

TEST(Safetensors, BrokenFilesAreRefused) {
  std::string good =
      R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}})";
  struct Case {
    std::string bytes, message;
  } cases[] = {
      {"\x05\0\0", "shorter than its 8-byte header length"},
      {fileBytes(good, floats({1})),
       "tensor 'a' has data_offsets up to byte 8 of a data section of 4 bytes"},
      {fileBytes(good, "").substr(0, 20),
       "its header length 61 is past the end of the file (20 bytes): "
       "truncated?"},
      {std::string("\xff\xff\xff\xff\xff\xff\xff\x7f", 8) + "{}",
       "its header length 9223372036854775807 is over 100 MB"},
  };
  for (const Case &c : cases) {
    std::string path = writeFile("broken.safetensors", c.bytes);
    tsl_weights *w = nullptr;
    EXPECT_EQ(tsl_weights_open(path.c_str(), &w), TSL_INVALID_ARGUMENT);
    EXPECT_EQ(std::string(tsl_last_error()),
              "'" + path + "' is not a safetensors file: " + c.message);
  }
  tsl_weights *w = nullptr;
  EXPECT_EQ(tsl_weights_open("/nonexistent/w.safetensors", &w), TSL_NOT_FOUND);
  EXPECT_EQ(std::string(tsl_last_error()),
            "cannot open '/nonexistent/w.safetensors': No such file or "
            "directory");
  EXPECT_EQ(tsl_weights_open(::testing::TempDir().c_str(), &w),
            TSL_INVALID_ARGUMENT);
}

} // namespace
