// The IR text parser: malformed text, located errors, the verifier on parsed
// IR and the op table. (The round trip of elaborated programs is in
// tests/unit/frontend/IrRoundTripTest.cpp: it needs the frontend.)
#include "ir/IrText.h"
#include "ir/Verifier.h"

#include <gtest/gtest.h>

using namespace tsl;

namespace {

TEST(IrParser, RejectsMalformedText) {
  Module m;
  std::string error;
  EXPECT_FALSE(parseModule("func @f(%x: f32[N]) -> (f32[N]) {\n  %0 = nope(%x) "
                           ": f32[N]\n  return %0\n}",
                           m, error));
  EXPECT_NE(error.find("unknown op 'nope'"), std::string::npos) << error;
  EXPECT_FALSE(parseModule("func @f(%x: f32[N]) -> (f32[N]) {\n  return %1\n}",
                           m, error));
  EXPECT_FALSE(parseModule("func @f(", m, error));
  EXPECT_FALSE(parseModule(std::string("\x93garbage\0\xff", 11), m, error));
}

/// Parses \p text, which must fail; returns the error.
IrParseError parseError(const std::string &text) {
  Module m;
  IrParseError error;
  EXPECT_FALSE(parseModule(text, m, error)) << text;
  return error;
}

TEST(IrParser, ErrorsHaveTheLineColumnAndLengthOfTheBadToken) {
  const std::string header = "func @f(%x: f32[N]) -> (f32[N]) {\n";
  IrParseError e =
      parseError(header + "  %0 = nope(%x) : f32[N]\n  return %0\n}");
  EXPECT_EQ(e.message, "unknown op 'nope'");
  EXPECT_EQ(e.line, 2u);
  EXPECT_EQ(e.col, 8u);
  EXPECT_EQ(e.length, 4u);
  EXPECT_EQ(e.offset, header.size() + 7);

  e = parseError(header + "  return %1\n}");
  EXPECT_EQ(e.message, "use of undefined value %1");
  EXPECT_EQ(e.line, 2u);
  EXPECT_EQ(e.col, 10u);
  EXPECT_EQ(e.length, 2u);

  e = parseError(header + "  %0 = relu(%x) : q32[N]\n  return %0\n}");
  EXPECT_EQ(e.message, "unknown element type 'q32'");
  EXPECT_EQ(e.line, 2u);
  EXPECT_EQ(e.col, 19u);

  e = parseError(header +
                 "  %0 = relu(%x) {axis = 1} : f32[N]\n  return %0\n}");
  EXPECT_EQ(e.message, "op 'relu' has no attribute 'axis'");
  EXPECT_EQ(e.col, 18u);
  EXPECT_EQ(e.length, 4u);

  e = parseError(header + "  %0 = relu(%x) : f32[N]\n}");
  EXPECT_EQ(e.message, "missing return");
  EXPECT_EQ(e.line, 3u);
  EXPECT_EQ(e.col, 1u);

  e = parseError(header + "  return %x, %x\n}");
  EXPECT_EQ(e.message, "return gives 2 values but the signature declares 1");
  EXPECT_EQ(e.col, 3u);
}

TEST(IrParser, ErrorAtTheEndOfTheText) {
  const std::string text = "func @f(";
  IrParseError e = parseError(text);
  EXPECT_EQ(e.message, "expected a name");
  EXPECT_EQ(e.offset, text.size());
  EXPECT_EQ(e.line, 1u);
  EXPECT_EQ(e.col, text.size() + 1);
  EXPECT_EQ(e.length, 0u);
}

TEST(IrParser, LineMessageNamesTheLine) {
  Module m;
  std::string error;
  EXPECT_FALSE(parseModule(
      "\n\nfunc @f(%x: f32[N]) -> (f32[N]) {\n  return %y\n}", m, error));
  EXPECT_EQ(error, "line 4: use of undefined value %y");
}

TEST(Verifier, CatchesWrongResultTypes) {
  Module m;
  std::string error;
  ASSERT_TRUE(parseModule("func @f(%x: f32[N], %y: f32[N]) -> (f32[M]) {\n"
                          "  %0 = add(%x, %y) : f32[M]\n  return %0\n}",
                          m, error))
      << error;
  Expected<void> verified = verifyFunction(m.functions[0]);
  ASSERT_FALSE(verified);
  EXPECT_NE(verified.error().message.find("shape rule gives f32[N]"),
            std::string::npos)
      << verified.error().message;
}

TEST(OpTable, EveryOpHasNameAndDoc) {
  for (const OpInfo &info : allOps()) {
    EXPECT_TRUE(lookupOp(info.name).has_value()) << info.name;
    EXPECT_NE(std::string(info.doc), "") << info.name;
  }
}

} // namespace
