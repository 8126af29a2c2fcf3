#pragma once
/// \file Syntax errors of the parser's reporting pass (private to the
/// frontend: it names ANTLR types). The fast pass bails at the first error;
/// the reporting pass reparses with these.

#include "support/Diagnostics.h"
#include "support/SourceManager.h"

#include "antlr4-runtime.h"

#include <string>
#include <string_view>

namespace tsl::syntax {

/// The token's bytes as written in \p source, quoted, with bytes outside
/// printable ASCII as \xNN (the token's own text would re-encode a byte
/// such as 0xff as the UTF-8 of U+00FF); "end of file" for EOF or null.
std::string describeToken(const antlr4::Token *t, std::string_view source);

/// Reports syntax errors as diagnostics: "expected X, found Y" with the
/// token's range, a fix where a keyword stands for a name. After an error,
/// errors before the next ';' or '}' are cascades and are dropped (one per
/// statement or item, as clang does), at most kMaxSyntaxErrors in all.
class SyntaxErrorListener : public antlr4::BaseErrorListener {
public:
  SyntaxErrorListener(const SourceManager &sm, uint32_t file,
                      DiagnosticEngine &diags)
      : sm(sm), file(file), diags(diags) {}
  /// Whether any syntax error was seen.
  bool failed = false;

  void syntaxError(antlr4::Recognizer *recognizer, antlr4::Token *offending,
                   size_t line, size_t col, const std::string &msg,
                   std::exception_ptr) override;

  /// A keyword where a name may have been meant (`let var = ...`, which
  /// parsed before `var` became a keyword): the fix renames it; empty for
  /// other tokens.
  static std::string keywordFix(antlr4::Token *t);

private:
  static constexpr int kMaxSyntaxErrors = 10;
  const SourceManager &sm;
  uint32_t file;
  DiagnosticEngine &diags;
  size_t resyncAt =
      0; ///< offset of the ';' or '}' ending the last error's region
  int reported = 0;
};

/// Error recovery of the reporting pass: panic mode to the end of the
/// statement (past its ';', or up to a '}'), where the listener reports the
/// next error, as clang does. ANTLR's default recovery computes the follow
/// set of every rule on the stack each time one rule unwinds: quadratic in
/// the nesting, which a postfix chain (`x(0)(0)...`: one rule context per
/// call) makes as deep as the input is long (10 s for 35 KB, found by the
/// fuzzer). Always makes progress: a rule failing again where it failed
/// before skips a token.
class StatementRecovery : public antlr4::DefaultErrorStrategy {
public:
  /// Finds the ';' and '}' token types in the parser's vocabulary.
  explicit StatementRecovery(const antlr4::dfa::Vocabulary &v);
  void recover(antlr4::Parser *parser, std::exception_ptr) override;

private:
  size_t semicolon = antlr4::Token::INVALID_TYPE;
  size_t closeBrace = antlr4::Token::INVALID_TYPE;
};

} // namespace tsl::syntax
