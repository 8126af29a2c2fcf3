#include "support/Diagnostics.h"

#include <gtest/gtest.h>
#include <sstream>

using namespace tsl;

TEST(Diagnostics, RendersLocationLineAndCaret) {
  SourceManager sm;
  uint32_t f = sm.addBuffer("m.tsl", "fn f() {\n  let x = y + 1;\n}\n");
  std::ostringstream out;
  DiagnosticEngine diags(sm, out);
  Diagnostic d;
  d.range = SourceRange(sm.locAt(f, 19), sm.locAt(f, 20));
  d.message = "unknown name 'y'";
  d.notes.push_back({SourceRange(sm.locAt(f, 0)), "in this function"});
  d.fix = "declare it first";
  diags.report(d);
  EXPECT_EQ(out.str(), "m.tsl:2:11: error: unknown name 'y'\n"
                       "  let x = y + 1;\n"
                       "          ^\n"
                       "m.tsl:1:1: note: in this function\n"
                       "fn f() {\n"
                       "^\n"
                       "m.tsl:2:11: note: fix: declare it first\n"
                       "  let x = y + 1;\n"
                       "          ^\n");
  EXPECT_EQ(diags.errorCount(), 1u);
}

TEST(Diagnostics, JsonIsOneObjectPerLineAndEscapes) {
  SourceManager sm;
  uint32_t f = sm.addBuffer("a\"b.tsl", "x\n");
  std::ostringstream out;
  DiagnosticEngine diags(sm, out);
  diags.setJson(true);
  diags.error(SourceRange(sm.locAt(f, 0), sm.locAt(f, 1)), "bad \x01 byte");
  EXPECT_EQ(
      out.str(),
      "{\"severity\": \"error\", \"message\": \"bad \\u0001 byte\", "
      "\"location\": {\"file\": \"a\\\"b.tsl\", \"line\": 1, \"col\": 1, "
      "\"end_line\": 1, \"end_col\": 2}, \"notes\": [], \"fix\": null}\n");
}

TEST(Diagnostics, CapsTheNumberOfErrorsShown) {
  SourceManager sm;
  std::ostringstream out;
  DiagnosticEngine diags(sm, out);
  diags.setMaxErrors(2);
  for (int i = 0; i < 5; ++i)
    diags.error(SourceRange(), "e");
  diags.finish();
  EXPECT_EQ(out.str(), "error: e\nerror: e\nnote: 3 more errors not shown\n");
}

TEST(Diagnostics, NotSupportedIsItsOwnKind) {
  SourceManager sm;
  std::ostringstream out;
  DiagnosticEngine diags(sm, out);
  diags.error(SourceRange(), "not supported: gradient through a 'for' loop");
  diags.error(SourceRange(), "unknown name 'y'");
  diags.error(ErrorKind::Shape, SourceRange(), "not supported: this shape");
  ASSERT_EQ(diags.diagnostics().size(), 3u);
  EXPECT_EQ(diags.diagnostics()[0].kind, ErrorKind::Unsupported);
  EXPECT_EQ(diags.diagnostics()[1].kind, ErrorKind::Type);
  EXPECT_EQ(diags.diagnostics()[2].kind, ErrorKind::Shape);
}

TEST(SourceManager, LineAndColumn) {
  SourceManager sm;
  uint32_t f = sm.addBuffer("f", "ab\ncd\r\nef");
  EXPECT_EQ(sm.lineCol(sm.locAt(f, 4)).line, 2u);
  EXPECT_EQ(sm.lineCol(sm.locAt(f, 4)).col, 2u);
  EXPECT_EQ(sm.lineText(sm.locAt(f, 3)), "cd");
  EXPECT_EQ(sm.describe(sm.locAt(f, 7)), "f:3:1");
}
