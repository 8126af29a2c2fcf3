#pragma once
/// \file The fast path's parser of statements and expressions (private to the
/// frontend: it names ANTLR types). It reads ANTLR's token stream and builds
/// the AST as it goes, with no parse tree: a parse tree costs ~1 KB per
/// operand (one context per precedence level), 2.75 GB for a 5 MB
/// expression. It accepts exactly the grammar's `stmt` and `expr` (TSL.g4)
/// and builds what the tree-walking builder builds from them; at a syntax
/// error it stops and reports nothing: the caller reparses the file with
/// ANTLR's error reporting. Type expressions are parsed by ANTLR (a hook).

#include "frontend/Ast.h"
#include "support/Diagnostics.h"

#include "antlr4-runtime.h"

#include <functional>
#include <string_view>
#include <vector>

namespace tsl::syntax {

/// A token stream that frees the tokens already read once their AST is built
/// (releaseConsumed), keeping the one before the next token (a rule that
/// ends reads it as its stop token). Only forward parsing may follow a
/// release: a reparse needs a fresh stream.
class ReleasingTokenStream : public antlr4::CommonTokenStream {
public:
  using antlr4::CommonTokenStream::CommonTokenStream;
  /// Frees every token before index() - 1.
  void releaseConsumed() {
    size_t end = index() > 1 ? index() - 1 : 0;
    for (; released_ < end && released_ < _tokens.size(); ++released_)
      _tokens[released_].reset();
  }

private:
  size_t released_ = 0;
};

/// Parses statements (with their expressions) from a token stream into the
/// AST. One instance per file; the stream's indices are byte offsets into
/// the file's text.
class DirectParser {
public:
  /// Parses a type expression at the stream's position (ANTLR's typeExpr
  /// rule and the tree builder); false after a syntax error (it may throw
  /// ANTLR's ParseCancellationException instead) or a reported error.
  using TypeHook = std::function<bool(ast::TypeExpr &)>;

  DirectParser(ReleasingTokenStream &ts, const antlr4::dfa::Vocabulary &vocab,
               const SourceManager &sm, uint32_t file, DiagnosticEngine &diags,
               TypeHook typeExpr);

  /// Parses one statement (`stmt` of the grammar) into \p st. False at a
  /// syntax error (syntaxError set, nothing reported, the stream left
  /// anywhere) or after an error it reported (failed set).
  bool stmt(ast::Stmt &st);

  bool syntaxError = false;
  bool failed = false;

  /// What a token is, for the parser's decisions (keywords and punctuation
  /// by their literal in the grammar).
  enum class Tok : uint8_t;

private:
  struct PowerSegment;

  Tok la(size_t k = 1);
  /// Consumes the next token; its byte range in \p begin, \p end.
  void take(uint32_t *begin = nullptr, uint32_t *end = nullptr);
  bool expect(Tok t, uint32_t *begin = nullptr, uint32_t *end = nullptr);
  std::string_view nextText();
  uint32_t nextBegin();
  SourceRange range(uint32_t begin, uint32_t end) const;
  bool fail();

  bool block(ast::Block &b);
  bool letOrVar(ast::Stmt &st, bool isVar);
  bool forStmt(ast::Stmt &st);
  bool checkStmt(ast::Stmt &st);
  bool ifStmt(ast::Stmt &st);
  bool exprOrAssign(ast::Stmt &st);
  bool ident(std::string &name, SourceRange &r);

  ast::ExprPtr expr();
  ast::ExprPtr binary(int level);
  ast::ExprPtr unary();
  ast::ExprPtr foldPower(std::vector<PowerSegment> &segments);
  ast::ExprPtr postfix();
  bool callArgs(ast::Expr &call);
  bool sliceItems(ast::Expr &index);
  ast::ExprPtr primary();
  ast::ExprPtr group(bool square);
  bool setDepth(ast::Expr &e, SourceRange where);
  bool startsExpr(Tok t) const;
  bool intLiteral(std::string_view text, SourceRange r, int64_t &out);
  ast::ExprPtr make(ast::Expr::Kind kind, uint32_t begin);

  ReleasingTokenStream &ts;
  const SourceManager &sm;
  uint32_t file;
  std::string_view text;
  DiagnosticEngine &diags;
  TypeHook typeExpr;
  std::vector<Tok> kinds;  ///< token type -> what it is
  uint32_t lastEnd = 0;    ///< the end offset of the last token consumed
  size_t sinceRelease = 0; ///< tokens consumed since the last release
};

/// Unescapes the body of a string literal (without its quotes): `\n`, `\t`,
/// and `\c` for any other c.
std::string unescapeString(std::string_view s);

} // namespace tsl::syntax
