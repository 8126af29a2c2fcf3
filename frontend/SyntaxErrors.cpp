// Syntax errors of the reporting parse (SyntaxErrors.h).
#include "frontend/SyntaxErrors.h"

#include "TSLLexer.h"

#include <cctype>
#include <cstdio>

namespace tsl::syntax {

using tslgen::TSLLexer;

std::string describeToken(const antlr4::Token *t, std::string_view source) {
  if (!t || t->getType() == antlr4::Token::EOF)
    return "end of file";
  size_t start = t->getStartIndex(), stop = t->getStopIndex();
  std::string_view text;
  if (start <= stop && stop < source.size())
    text = source.substr(start, stop - start + 1);
  std::string shown;
  for (unsigned char c : text.substr(0, 20)) {
    if (c < 0x20 || c >= 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      shown += buf;
    } else {
      shown += static_cast<char>(c);
    }
  }
  return "'" + shown + "'";
}

void SyntaxErrorListener::syntaxError(antlr4::Recognizer *recognizer,
                                      antlr4::Token *offending, size_t line,
                                      size_t col, const std::string &msg,
                                      std::exception_ptr) {
  // Recovery: after an error the parser resynchronizes; errors before
  // the next ';' or '}' are usually cascades of the first, so a new one
  // is reported only past that point (one per statement or item, as
  // clang does), up to kMaxSyntaxErrors.
  size_t at = offending && offending->getType() != antlr4::Token::EOF
                  ? offending->getStartIndex()
                  : sm.text(file).size();
  if (failed && (at <= resyncAt || reported >= kMaxSyntaxErrors))
    return;
  failed = true;
  ++reported;
  std::string_view text = sm.text(file);
  resyncAt = std::min(text.find_first_of(";}", at), text.size());
  SourceRange range;
  if (offending && offending->getType() != antlr4::Token::EOF) {
    range = SourceRange(sm.locAt(file, offending->getStartIndex()),
                        sm.locAt(file, offending->getStopIndex() + 1));
  } else {
    range = SourceRange(sm.locAt(file, sm.text(file).size()));
  }
  std::string message;
  auto *parser = dynamic_cast<antlr4::Parser *>(recognizer);
  std::string expected;
  if (parser) {
    try {
      antlr4::misc::IntervalSet set = parser->getExpectedTokens();
      std::vector<ssize_t> types = set.toList();
      // Where a name is expected, the soft keyword 'var' is one too.
      const antlr4::dfa::Vocabulary &vocab = parser->getVocabulary();
      if (set.contains(static_cast<size_t>(TSLLexer::IDENT)))
        std::erase_if(types, [&](ssize_t t) {
          return vocab.getLiteralName(t) == "'var'";
        });
      if (!types.empty() && types.size() <= 4) {
        for (size_t i = 0; i < types.size(); ++i) {
          std::string name = parser->getVocabulary().getDisplayName(types[i]);
          if (name == "IDENT")
            name = "a name";
          else if (name == "INT")
            name = "an integer";
          else if (name == "STRING")
            name = "a string";
          else if (name == "EOF" || name == "<EOF>")
            name = "end of file";
          expected += (i ? (i + 1 == types.size() ? " or " : ", ") : "") + name;
        }
      }
    } catch (...) {
      expected.clear();
    }
  }
  if (msg.rfind("missing", 0) == 0 && !expected.empty())
    message = "expected " + expected + " before " +
              describeToken(offending, sm.text(file));
  else if (!expected.empty())
    message = "expected " + expected + ", found " +
              describeToken(offending, sm.text(file));
  else
    message = "unexpected " + describeToken(offending, sm.text(file));
  diags.error(ErrorKind::Syntax, range, message, keywordFix(offending));
}

std::string SyntaxErrorListener::keywordFix(antlr4::Token *t) {
  if (!t || t->getType() == antlr4::Token::EOF ||
      t->getType() == TSLLexer::IDENT)
    return {};
  std::string text = t->getText();
  bool word =
      !text.empty() &&
      (std::isalpha(static_cast<unsigned char>(text[0])) || text[0] == '_');
  for (char c : text)
    word &= std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  if (!word)
    return {};
  return "'" + text +
         "' is a keyword; if it is meant as a name, rename it "
         "(for example '" +
         text + "_')";
}

StatementRecovery::StatementRecovery(const antlr4::dfa::Vocabulary &v) {
  for (size_t t = 0; t <= v.getMaxTokenType(); ++t) {
    if (v.getLiteralName(t) == "';'")
      semicolon = t;
    else if (v.getLiteralName(t) == "'}'")
      closeBrace = t;
  }
}

void StatementRecovery::recover(antlr4::Parser *parser, std::exception_ptr) {
  antlr4::TokenStream *in = parser->getTokenStream();
  auto state = static_cast<ssize_t>(parser->getState());
  if (static_cast<int>(in->index()) == lastErrorIndex) {
    // The rules around the error unwinding (nothing to skip), or a loop
    // re-entering a rule that failed here before: skip a token so that
    // parsing moves on.
    if (lastErrorStates.contains(state))
      parser->consume();
    else
      lastErrorStates.add(state);
    lastErrorIndex = static_cast<int>(in->index());
    return;
  }
  size_t t = in->LA(1);
  for (; t != antlr4::Token::EOF && t != semicolon && t != closeBrace;
       t = in->LA(1))
    parser->consume();
  if (t == semicolon) // the statement's end: the next one parses afresh
    parser->consume();
  lastErrorIndex = static_cast<int>(in->index());
  lastErrorStates.clear();
  lastErrorStates.add(state);
}

} // namespace tsl::syntax
