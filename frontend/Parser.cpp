#include "frontend/Parser.h"
#include "frontend/DirectParser.h"
#include "frontend/SyntaxErrors.h"

#include "TSLLexer.h"
#include "TSLParser.h"
#include "antlr4-runtime.h"

#include <algorithm>
#include <cctype>
#include <cmath>

namespace tsl {

namespace {

using syntax::describeToken;
using syntax::DirectParser;
using syntax::ReleasingTokenStream;
using syntax::StatementRecovery;
using syntax::SyntaxErrorListener;
using tslgen::TSLLexer;
using tslgen::TSLParser;

/// An input stream whose code points are the file's bytes, so token indices
/// are byte offsets and invalid UTF-8 cannot throw.
class ByteInputStream : public antlr4::ANTLRInputStream {
public:
  explicit ByteInputStream(std::string_view bytes) {
    _data.reserve(bytes.size());
    for (unsigned char c : bytes)
      _data.push_back(static_cast<char32_t>(c));
    p = 0;
  }
};

/// Builds the AST from a parse tree that parsed without errors.
class AstBuilder {
public:
  AstBuilder(const SourceManager &sm, uint32_t file, DiagnosticEngine &diags,
             ReleasingTokenStream *releasing = nullptr)
      : sm(sm), file(file), diags(diags), releasing(releasing) {}

  SourceRange rangeOf(antlr4::ParserRuleContext *ctx) {
    if (!ctx || !ctx->getStart())
      return {};
    antlr4::Token *stop = ctx->getStop() ? ctx->getStop() : ctx->getStart();
    size_t end = stop->getStopIndex() + 1;
    if (stop->getType() == antlr4::Token::EOF ||
        end < ctx->getStart()->getStartIndex())
      end = ctx->getStart()->getStartIndex();
    return SourceRange(sm.locAt(file, ctx->getStart()->getStartIndex()),
                       sm.locAt(file, end));
  }
  SourceRange rangeOf(antlr4::Token *t) {
    if (!t)
      return {};
    return SourceRange(sm.locAt(file, t->getStartIndex()),
                       sm.locAt(file, t->getStopIndex() + 1));
  }
  SourceRange rangeOf(antlr4::tree::TerminalNode *n) {
    return n ? rangeOf(n->getSymbol()) : SourceRange();
  }

  bool parseInt(antlr4::Token *t, int64_t &out) {
    std::string s = t->getText();
    uint64_t v = 0;
    for (char c : s) {
      if (v > (static_cast<uint64_t>(INT64_MAX) - (c - '0')) / 10) {
        diags.error(ErrorKind::Syntax, rangeOf(t),
                    "integer literal '" + s + "' is too large");
        return false;
      }
      v = v * 10 + static_cast<uint64_t>(c - '0');
    }
    out = static_cast<int64_t>(v);
    return true;
  }

  bool build(TSLParser::ModuleContext *ctx, ast::Module &m) {
    for (auto *it : ctx->item())
      if (!item(it, m))
        return false;
    return !failed;
  }

  /// Builds the module item by item, and a function statement by statement,
  /// straight from the token stream: each piece's parse tree is freed once
  /// its AST is built, so the parse tree never holds more than one top-level
  /// statement (a 120,000-line function would otherwise keep ~2 KB of parse
  /// tree per line alive at once). The parser must bail on the first syntax
  /// error (BailErrorStrategy, which throws ParseCancellationException):
  /// the caller then reparses the whole file to report it. Returns false
  /// after an AST error (already reported) or at a syntax error found
  /// outside the parser (\p syntaxError set).
  bool buildIncremental(TSLParser &parser, ast::Module &m, bool &syntaxError) {
    syntaxError = false;
    antlr4::TokenStream &ts = *parser.getTokenStream();
    const size_t fnType = literalType(parser, "'fn'");
    while (ts.LA(1) != antlr4::Token::EOF) {
      if (ts.LA(1) == fnType) {
        ast::FnDecl f;
        if (!fnIncremental(parser, f, syntaxError))
          return false;
        m.fns.push_back(std::move(f));
      } else if (!item(parser.item(), m)) {
        return false;
      }
      pieceDone(parser);
    }
    return !failed;
  }

private:
  /// After the AST of one piece (an item, a statement) is built: frees its
  /// parse tree and its tokens.
  void pieceDone(TSLParser &parser) {
    parser.getTreeTracker().reset();
    if (releasing)
      releasing->releaseConsumed();
  }

  static size_t literalType(TSLParser &parser, const std::string &literal) {
    const antlr4::dfa::Vocabulary &v = parser.getVocabulary();
    for (size_t t = 1; t <= v.getMaxTokenType(); ++t)
      if (v.getLiteralName(t) == literal)
        return t;
    return antlr4::Token::INVALID_TYPE;
  }

  /// `fn NAME (PARAMS) -> RESULTS { STMT* }` with one parse tree per
  /// parameter list, result list and statement.
  bool fnIncremental(TSLParser &parser, ast::FnDecl &f, bool &syntaxError) {
    antlr4::TokenStream &ts = *parser.getTokenStream();
    auto expect = [&](const char *literal) -> antlr4::Token * {
      if (ts.LA(1) != literalType(parser, literal)) {
        syntaxError = true;
        return nullptr;
      }
      antlr4::Token *t = ts.LT(1);
      ts.consume();
      return t;
    };
    antlr4::Token *fnTok = expect("'fn'");
    if (!fnTok)
      return false;
    SourceRange fnRange = rangeOf(fnTok); // the token is freed before the end
    if (ts.LA(1) != TSLParser::IDENT)
      return syntaxError = true, false;
    antlr4::Token *name = ts.LT(1);
    ts.consume();
    f.name = name->getText();
    f.nameRange = rangeOf(name);
    if (ts.LA(1) == literalType(parser, "'<'") &&
        !typeParams(parser.typeParams(), f))
      return false;
    if (!expect("'('"))
      return false;
    if (ts.LA(1) != literalType(parser, "')'") &&
        !params(parser.paramList(), f))
      return false;
    if (!expect("')'"))
      return false;
    if (ts.LA(1) == literalType(parser, "'->'")) {
      ts.consume();
      if (!results(parser.resultTypes(), f))
        return false;
    }
    pieceDone(parser);
    antlr4::Token *open = expect("'{'");
    if (!open)
      return false;
    SourceRange openRange = rangeOf(open);
    const size_t closeType = literalType(parser, "'}'");
    DirectParser direct(*releasing, parser.getVocabulary(), sm, file, diags,
                        [&](ast::TypeExpr &t) {
                          bool ok = typeExpr(parser.typeExpr(), t);
                          parser.getTreeTracker().reset();
                          return ok;
                        });
    while (ts.LA(1) != closeType && ts.LA(1) != antlr4::Token::EOF) {
      ast::Stmt st;
      if (!direct.stmt(st)) {
        syntaxError = direct.syntaxError;
        return failed = failed || direct.failed, false;
      }
      f.body.stmts.push_back(std::move(st));
      pieceDone(parser);
    }
    antlr4::Token *close = expect("'}'");
    if (!close)
      return false;
    f.body.stmts.shrink_to_fit();
    SourceRange end = rangeOf(close);
    f.body.range = SourceRange(openRange.begin, end.end);
    f.range = SourceRange(fnRange.begin, end.end);
    return !failed;
  }

  bool item(TSLParser::ItemContext *item, ast::Module &m) {
    {
      if (auto *imp = item->importDecl()) {
        ast::ImportDecl d;
        d.range = rangeOf(imp);
        if (imp->path) {
          std::string raw = imp->path->getText();
          d.path = unescape(raw.substr(1, raw.size() - 2));
          d.name = imp->alias->getText();
        } else {
          d.name = imp->name->getText();
        }
        m.imports.push_back(std::move(d));
      } else if (auto *dim = item->dimDecl()) {
        ast::DimDecl d;
        d.name = dim->IDENT()->getText();
        d.nameRange = rangeOf(dim->IDENT());
        d.range = rangeOf(dim);
        if (dim->value) {
          d.value = expr(dim->value);
          d.spec.kind = DimKind::Static;
        } else if (!dimSpec(dim->dimSpec(), d.spec)) {
          return false;
        }
        m.dims.push_back(std::move(d));
      } else if (auto *fn = item->fnDecl()) {
        ast::FnDecl f;
        if (!fnDecl(fn, f))
          return false;
        m.fns.push_back(std::move(f));
      }
    }
    return !failed;
  }

  const SourceManager &sm;
  uint32_t file;
  DiagnosticEngine &diags;
  ReleasingTokenStream *releasing = nullptr;
  bool failed = false;

  static std::string unescape(const std::string &s) {
    return syntax::unescapeString(s);
  }

  bool signedInt(TSLParser::SignedIntContext *ctx, int64_t &out) {
    if (!parseInt(ctx->INT()->getSymbol(), out))
      return failed = true, false;
    if (ctx->getStart()->getText() == "-")
      out = -out;
    return true;
  }

  bool dimSpec(TSLParser::DimSpecContext *ctx, ast::DimSpec &spec) {
    spec.range = rangeOf(ctx);
    std::string k = ctx->dimKind()->getText();
    spec.kind = k == "static"     ? DimKind::Static
                : k == "dynamic"  ? DimKind::Dynamic
                : k == "unbacked" ? DimKind::Unbacked
                                  : DimKind::Auto;
    if (auto *r = ctx->rangeSpec()) {
      int64_t lo;
      if (!signedInt(r->lo, lo))
        return false;
      spec.lo = lo;
      if (r->hi) {
        int64_t hi;
        if (!signedInt(r->hi, hi))
          return false;
        spec.hi = hi;
        if (hi < lo) {
          diags.error(ErrorKind::Syntax, rangeOf(r),
                      "empty range " + std::to_string(lo) + ".." +
                          std::to_string(hi) +
                          ": the upper bound is below the lower bound",
                      "write the range as " + std::to_string(hi) + ".." +
                          std::to_string(lo));
          return failed = true, false;
        }
      }
    }
    if (ctx->multiple) {
      int64_t m;
      if (!parseInt(ctx->multiple, m))
        return failed = true, false;
      if (m == 0) {
        diags.error(ErrorKind::Syntax, rangeOf(ctx->multiple),
                    "'multiple_of 0' is not a divisibility fact",
                    "use 'multiple_of 1' or remove it");
        return failed = true, false;
      }
      spec.multipleOf = m;
    }
    return true;
  }

  bool typeExpr(TSLParser::TypeExprContext *ctx, ast::TypeExpr &t) {
    t.range = rangeOf(ctx);
    t.base = ctx->IDENT()->getText();
    t.baseRange = rangeOf(ctx->IDENT());
    if (auto *k = ctx->dimKind()) {
      std::string s = k->getText();
      t.intKind = s == "static"     ? DimKind::Static
                  : s == "dynamic"  ? DimKind::Dynamic
                  : s == "unbacked" ? DimKind::Unbacked
                                    : DimKind::Auto;
    }
    // '[' present?
    for (auto *child : ctx->children)
      if (child->getText() == "[")
        t.hasDims = true;
    for (auto *d : ctx->typeDim()) {
      ast::TypeDim td;
      td.range = rangeOf(d);
      if (auto *p = dynamic_cast<TSLParser::PackDimContext *>(d)) {
        td.kind = ast::TypeDim::Kind::Pack;
        td.name = p->IDENT()->getText();
      } else if (auto *in = dynamic_cast<TSLParser::InlineDimContext *>(d)) {
        td.kind = ast::TypeDim::Kind::Inline;
        td.name = in->IDENT()->getText();
        if (!dimSpec(in->dimSpec(), td.spec))
          return false;
      } else if (dynamic_cast<TSLParser::UnknownDimContext *>(d)) {
        td.kind = ast::TypeDim::Kind::Unknown;
      } else if (auto *e = dynamic_cast<TSLParser::ExprDimContext *>(d)) {
        td.kind = ast::TypeDim::Kind::Expr;
        td.expr = expr(e->expr());
      }
      t.dims.push_back(std::move(td));
    }
    return !failed;
  }

  bool fnDecl(TSLParser::FnDeclContext *ctx, ast::FnDecl &f) {
    f.name = ctx->IDENT()->getText();
    f.nameRange = rangeOf(ctx->IDENT());
    f.range = rangeOf(ctx);
    if (auto *tp = ctx->typeParams(); tp && !typeParams(tp, f))
      return false;
    if (auto *pl = ctx->paramList(); pl && !params(pl, f))
      return false;
    if (auto *r = ctx->resultTypes(); r && !results(r, f))
      return false;
    return block(ctx->block(), f.body);
  }

  bool typeParams(TSLParser::TypeParamsContext *ctx, ast::FnDecl &f) {
    for (auto *p : ctx->typeParam()) {
      ast::TypeParam tp;
      tp.name = p->IDENT(0)->getText();
      tp.nameRange = rangeOf(p->IDENT(0));
      tp.bound = p->bound->getText();
      tp.boundRange = rangeOf(p->bound);
      f.typeParams.push_back(std::move(tp));
    }
    return !failed;
  }

  bool params(TSLParser::ParamListContext *pl, ast::FnDecl &f) {
    {
      for (auto *p : pl->param()) {
        ast::Param param;
        param.name = p->ident()->getText();
        param.nameRange = rangeOf(p->ident());
        if (!typeExpr(p->typeExpr(), param.type))
          return false;
        if (p->defaultValue)
          param.defaultValue = expr(p->defaultValue);
        f.params.push_back(std::move(param));
      }
    }
    return !failed;
  }

  bool results(TSLParser::ResultTypesContext *r, ast::FnDecl &f) {
    {
      f.hasResult = true;
      f.tupleResult = r->getStart()->getText() == "(";
      for (auto *t : r->typeExpr()) {
        ast::TypeExpr te;
        if (!typeExpr(t, te))
          return false;
        f.results.push_back(std::move(te));
      }
    }
    return !failed;
  }

  bool block(TSLParser::BlockContext *ctx, ast::Block &b) {
    b.range = rangeOf(ctx);
    for (auto *s : ctx->stmt()) {
      ast::Stmt st;
      if (!stmt(s, st))
        return false;
      b.stmts.push_back(std::move(st));
    }
    return !failed;
  }

  /// The optional `: TYPE` of a `let` or `var` into \p st.
  bool ascription(TSLParser::TypeExprContext *ctx, ast::Stmt &st) {
    if (!ctx)
      return true;
    ast::TypeExpr t;
    if (!typeExpr(ctx, t))
      return false;
    st.ascription = std::make_unique<ast::TypeExpr>(std::move(t));
    return true;
  }

  bool stmt(TSLParser::StmtContext *s, ast::Stmt &st) {
    {
      st.range = rangeOf(s);
      if (auto *let = dynamic_cast<TSLParser::LetStmtContext *>(s)) {
        st.kind = ast::Stmt::Kind::Let;
        auto *target = let->letTarget();
        st.tuplePattern = target->getStart()->getText() == "(";
        for (auto *id : target->ident()) {
          st.names.push_back(id->getText());
          st.nameRanges.push_back(rangeOf(id));
        }
        if (!ascription(let->typeExpr(), st))
          return false;
        st.value = expr(let->expr());
      } else if (auto *var = dynamic_cast<TSLParser::VarStmtContext *>(s)) {
        st.kind = ast::Stmt::Kind::Var;
        st.names.push_back(var->ident()->getText());
        st.nameRanges.push_back(rangeOf(var->ident()));
        if (!ascription(var->typeExpr(), st))
          return false;
        st.value = expr(var->expr());
      } else if (auto *loop = dynamic_cast<TSLParser::ForStmtContext *>(s)) {
        st.kind = ast::Stmt::Kind::For;
        st.names.push_back(loop->ident()->getText());
        st.nameRanges.push_back(rangeOf(loop->ident()));
        st.lo = expr(loop->lo);
        st.hi = expr(loop->hi);
        auto body = std::make_unique<ast::Block>();
        if (!block(loop->block(), *body))
          return false;
        st.blocks.push_back(std::move(body));
      } else if (auto *as = dynamic_cast<TSLParser::AssignStmtContext *>(s)) {
        st.kind = ast::Stmt::Kind::Assign;
        st.target = exprOf(as->target);
        st.value = expr(as->value);
      } else if (auto *chk = dynamic_cast<TSLParser::CheckStmtContext *>(s)) {
        st.kind = ast::Stmt::Kind::Check;
        st.cond = expr(chk->cond);
        if (chk->message) {
          std::string raw = chk->message->getText();
          st.message = unescape(raw.substr(1, raw.size() - 2));
          st.hasMessage = true;
        }
      } else if (auto *ifs = dynamic_cast<TSLParser::IfStmtContext *>(s)) {
        st.kind = ast::Stmt::Kind::If;
        for (auto *c : ifs->expr())
          st.conds.push_back(expr(c));
        for (auto *blk : ifs->block()) {
          auto b2 = std::make_unique<ast::Block>();
          if (!block(blk, *b2))
            return false;
          st.blocks.push_back(std::move(b2));
        }
      } else if (auto *ret = dynamic_cast<TSLParser::ReturnStmtContext *>(s)) {
        st.kind = ast::Stmt::Kind::Return;
        if (ret->expr())
          st.value = expr(ret->expr());
      } else if (auto *es = dynamic_cast<TSLParser::ExprStmtContext *>(s)) {
        st.kind = ast::Stmt::Kind::ExprStmt;
        st.value = expr(es->expr());
      }
    }
    return !failed;
  }

  /// Sets \p e's depth from its children. Past kMaxExprDepth it reports an
  /// error at \p where (the first time) and returns false: the caller stops
  /// growing the tree, so even a failed parse never holds a deep tree.
  bool setDepth(ast::Expr &e, SourceRange where) {
    e.depth = ast::depthFromChildren(e);
    if (e.depth <= kMaxExprDepth)
      return true;
    if (!failed)
      diags.error(ErrorKind::Syntax, where,
                  "expression is nested too deeply (more than " +
                      std::to_string(kMaxExprDepth) + " levels)",
                  "split the expression with 'let' bindings");
    failed = true;
    return false;
  }

  ast::ExprPtr make(ast::Expr::Kind kind, SourceRange range) {
    auto e = ast::newExpr();
    e->kind = kind;
    e->range = range;
    return e;
  }

  template <typename Sub, typename Op>
  ast::ExprPtr chain(antlr4::ParserRuleContext *ctx,
                     const std::vector<Sub *> &subs,
                     const std::vector<Op *> &ops) {
    if (subs.size() == 1)
      return exprOf(subs[0]);
    auto e = make(ast::Expr::Kind::Chain, rangeOf(ctx));
    for (auto *s : subs)
      e->operands.push_back(exprOf(s));
    for (auto *o : ops) {
      e->ops.emplace_back(o->getText(), rangeOf(o));
    }
    setDepth(*e, SourceRange(e->range.begin));
    return e;
  }

  ast::ExprPtr expr(TSLParser::ExprContext *ctx) {
    return exprOf(ctx->orExpr());
  }
  ast::ExprPtr exprOf(TSLParser::OrExprContext *ctx) {
    if (ctx->andExpr().size() == 1)
      return exprOf(ctx->andExpr(0));
    auto e = make(ast::Expr::Kind::Chain, rangeOf(ctx));
    for (auto *s : ctx->andExpr())
      e->operands.push_back(exprOf(s));
    for (size_t i = 1; i < ctx->andExpr().size(); ++i) {
      e->ops.emplace_back("||", rangeOf(ctx->andExpr(i)));
    }
    setDepth(*e, SourceRange(e->range.begin));
    return e;
  }
  ast::ExprPtr exprOf(TSLParser::AndExprContext *ctx) {
    if (ctx->cmpExpr().size() == 1)
      return exprOf(ctx->cmpExpr(0));
    auto e = make(ast::Expr::Kind::Chain, rangeOf(ctx));
    for (auto *s : ctx->cmpExpr())
      e->operands.push_back(exprOf(s));
    for (size_t i = 1; i < ctx->cmpExpr().size(); ++i) {
      e->ops.emplace_back("&&", rangeOf(ctx->cmpExpr(i)));
    }
    setDepth(*e, SourceRange(e->range.begin));
    return e;
  }
  ast::ExprPtr exprOf(TSLParser::CmpExprContext *ctx) {
    std::vector<TSLParser::CmpOpContext *> ops;
    if (ctx->cmpOp())
      ops.push_back(ctx->cmpOp());
    return chain(ctx, ctx->bitOrExpr(), ops);
  }
  ast::ExprPtr exprOf(TSLParser::BitOrExprContext *ctx) {
    return chain(ctx, ctx->bitXorExpr(), ctx->bitOrOp());
  }
  ast::ExprPtr exprOf(TSLParser::BitXorExprContext *ctx) {
    return chain(ctx, ctx->bitAndExpr(), ctx->bitXorOp());
  }
  ast::ExprPtr exprOf(TSLParser::BitAndExprContext *ctx) {
    return chain(ctx, ctx->addExpr(), ctx->bitAndOp());
  }
  ast::ExprPtr exprOf(TSLParser::PowerExprContext *ctx) {
    if (!ctx->powOp())
      return exprOf(ctx->postfixExpr());
    auto e = make(ast::Expr::Kind::Chain, rangeOf(ctx));
    e->operands.push_back(exprOf(ctx->postfixExpr()));
    e->operands.push_back(exprOf(ctx->unaryExpr()));
    e->ops.emplace_back("**", rangeOf(ctx->powOp()));
    setDepth(*e, SourceRange(e->range.begin));
    return e;
  }
  ast::ExprPtr exprOf(TSLParser::AddExprContext *ctx) {
    return chain(ctx, ctx->mulExpr(), ctx->addOp());
  }
  ast::ExprPtr exprOf(TSLParser::MulExprContext *ctx) {
    return chain(ctx, ctx->unaryExpr(), ctx->mulOp());
  }
  ast::ExprPtr exprOf(TSLParser::UnaryExprContext *ctx) {
    auto inner = exprOf(ctx->powerExpr());
    if (ctx->prefixOp().empty())
      return inner;
    auto e = make(ast::Expr::Kind::Prefix, rangeOf(ctx));
    for (auto *o : ctx->prefixOp()) {
      e->ops.emplace_back(o->getText(), rangeOf(o));
    }
    e->operands.push_back(std::move(inner));
    setDepth(*e, SourceRange(e->range.begin));
    return e;
  }
  ast::ExprPtr exprOf(TSLParser::PostfixExprContext *ctx) {
    ast::ExprPtr cur = primary(ctx->primary());
    SourceRange begin = rangeOf(ctx->primary());
    for (auto *p : ctx->postfix()) {
      SourceRange range(begin.begin, rangeOf(p).end);
      if (auto *call = dynamic_cast<TSLParser::CallPostfixContext *>(p)) {
        auto e = make(ast::Expr::Kind::Call, range);
        e->operands.push_back(std::move(cur));
        if (auto *al = call->argList()) {
          for (auto *a : al->arg()) {
            ast::Arg arg;
            if (a->ident()) {
              arg.name = a->ident()->getText();
              arg.nameRange = rangeOf(a->ident());
            }
            arg.value = expr(a->expr());
            e->args.push_back(std::move(arg));
          }
        }
        cur = std::move(e);
      } else if (auto *mem =
                     dynamic_cast<TSLParser::MemberPostfixContext *>(p)) {
        auto e = make(ast::Expr::Kind::Member, range);
        e->text = mem->IDENT()->getText();
        e->ops.emplace_back(".", rangeOf(mem->IDENT()));
        e->operands.push_back(std::move(cur));
        cur = std::move(e);
      } else if (auto *idx =
                     dynamic_cast<TSLParser::IndexPostfixContext *>(p)) {
        auto e = make(ast::Expr::Kind::Index, range);
        e->operands.push_back(std::move(cur));
        for (auto *si : idx->sliceItem()) {
          ast::SliceItem item;
          item.range = rangeOf(si);
          if (si->index) {
            item.index = expr(si->index);
          } else {
            item.isRange = true;
            if (si->start)
              item.start = expr(si->start);
            if (si->stop)
              item.stop = expr(si->stop);
            if (si->step)
              item.step = expr(si->step);
          }
          e->slices.push_back(std::move(item));
        }
        cur = std::move(e);
      }
      if (!setDepth(*cur, rangeOf(p)))
        break; // stop growing: `x[0][0]...` must not build a deep tree
    }
    return cur;
  }
  ast::ExprPtr primary(TSLParser::PrimaryContext *ctx) {
    SourceRange r = rangeOf(ctx);
    if (auto *i = dynamic_cast<TSLParser::IntLitContext *>(ctx)) {
      auto e = make(ast::Expr::Kind::IntLit, r);
      if (!parseInt(i->INT()->getSymbol(), e->intValue))
        failed = true;
      return e;
    }
    if (auto *f = dynamic_cast<TSLParser::FloatLitContext *>(ctx)) {
      auto e = make(ast::Expr::Kind::FloatLit, r);
      e->floatValue = std::strtod(f->FLOAT()->getText().c_str(), nullptr);
      if (!std::isfinite(e->floatValue)) {
        diags.error(ErrorKind::Syntax, r,
                    "float literal '" + f->FLOAT()->getText() +
                        "' is out of range");
        failed = true;
      }
      return e;
    }
    if (dynamic_cast<TSLParser::BoolLitContext *>(ctx)) {
      auto e = make(ast::Expr::Kind::BoolLit, r);
      e->boolValue = ctx->getText() == "true";
      return e;
    }
    if (auto *s = dynamic_cast<TSLParser::StringLitContext *>(ctx)) {
      auto e = make(ast::Expr::Kind::StringLit, r);
      std::string raw = s->STRING()->getText();
      e->text = unescape(raw.substr(1, raw.size() - 2));
      return e;
    }
    if (auto *n = dynamic_cast<TSLParser::NameRefContext *>(ctx)) {
      auto e = make(ast::Expr::Kind::Name, r);
      e->text = n->ident()->getText();
      return e;
    }
    if (auto *p = dynamic_cast<TSLParser::ParenExprContext *>(ctx)) {
      bool tuple = p->expr().size() > 1 || p->trailing;
      auto e = make(tuple ? ast::Expr::Kind::Tuple : ast::Expr::Kind::Paren, r);
      for (auto *x : p->expr())
        e->operands.push_back(expr(x));
      setDepth(*e, SourceRange(r.begin));
      return e;
    }
    auto *l = dynamic_cast<TSLParser::ListExprContext *>(ctx);
    auto e = make(ast::Expr::Kind::List, r);
    if (l)
      for (auto *x : l->expr())
        e->operands.push_back(expr(x));
    setDepth(*e, SourceRange(r.begin));
    return e;
  }
};

/// Whether \p first may start a module (`import`, `dim`, `fn`): the parser
/// gets past it. A file that does not begin so is not shown in diagnostics.
bool beginsLikeTsl(const TSLLexer &lexer, const antlr4::Token &first) {
  std::string name = lexer.getVocabulary().getLiteralName(first.getType());
  return name == "'import'" || name == "'dim'" || name == "'fn'";
}

/// The lexical pass over the whole file, one token at a time (no token is
/// kept): hides a file that is not TSL, reports bad characters (a run of
/// them once), unterminated strings and comments, and brackets nested past
/// kMaxNesting. False after an error; \p count: how many tokens there are.
bool scanTokens(TSLLexer &lexer, SourceManager &sm, uint32_t file,
                DiagnosticEngine &diags, size_t &count) {
  std::string_view text = sm.text(file);
  const unsigned errorsBefore = diags.errorCount();
  unsigned depth = 0;
  bool ok = true;
  std::unique_ptr<antlr4::Token> run; // the first of a run of bad chars
  size_t runEnd = 0, runLength = 0;   // its last one's stop, its length
  auto flushRun = [&] {
    if (!run)
      return;
    SourceRange range(sm.locAt(file, run->getStartIndex()),
                      sm.locAt(file, runEnd + 1));
    diags.error(ErrorKind::Syntax, range,
                "unexpected character " + describeToken(run.get(), text) +
                    (runLength > 1
                         ? " (and " + std::to_string(runLength - 1) + " more)"
                         : ""));
    run.reset();
  };
  count = 0;
  for (std::unique_ptr<antlr4::Token> t = lexer.nextToken();
       t->getType() != antlr4::Token::EOF; t = lexer.nextToken()) {
    if (count++ == 0 && !beginsLikeTsl(lexer, *t))
      // Not TSL (a password file, a binary, a file meant for another
      // tool): diagnostics give the location and the offending token,
      // never a line of it.
      sm.hideTextFrom(file, 0);
    SourceRange range(sm.locAt(file, t->getStartIndex()),
                      sm.locAt(file, t->getStopIndex() + 1));
    if (run && t->getType() == TSLLexer::BAD_CHAR &&
        t->getStartIndex() == runEnd + 1) {
      runEnd = t->getStopIndex();
      ++runLength;
      continue;
    }
    flushRun();
    switch (t->getType()) {
    case TSLLexer::BAD_CHAR: {
      unsigned char first = static_cast<unsigned char>(
          text[std::min<size_t>(t->getStartIndex(), text.size() - 1)]);
      if (first < 0x20 || first >= 0x7f) {
        // Not text (binary data, non-ASCII, a file that is not source):
        // diagnostics show nothing of it past this byte, and report no
        // more of its bytes.
        sm.hideTextFrom(file, t->getStopIndex() + 1);
        diags.error(ErrorKind::Syntax, range,
                    "unexpected character " + describeToken(t.get(), text),
                    "TSL source is ASCII outside comments and strings");
        return false;
      }
      runEnd = t->getStopIndex();
      runLength = 1;
      run = std::move(t);
      ok = false;
      break;
    }
    case TSLLexer::UNTERMINATED_STRING:
      diags.error(ErrorKind::Syntax, SourceRange(range.begin),
                  "unterminated string literal",
                  "close the string with '\"' on the same line");
      ok = false;
      break;
    case TSLLexer::UNTERMINATED_COMMENT:
      diags.error(ErrorKind::Syntax, SourceRange(range.begin),
                  "unterminated /* comment", "close it with '*/'");
      ok = false;
      break;
    default: {
      std::string s = t->getText();
      if (s == "(" || s == "[" || s == "{") {
        if (++depth > kMaxNesting && ok) {
          diags.error(ErrorKind::Syntax, range,
                      "brackets nested too deeply (more than " +
                          std::to_string(kMaxNesting) + " levels)",
                      "split the expression with 'let' bindings");
          return false;
        }
      } else if ((s == ")" || s == "]" || s == "}") && depth > 0) {
        --depth;
      }
    }
    }
    if (diags.errorCount() - errorsBefore >= 20)
      break;
  }
  flushRun();
  return ok;
}

/// The full LL parse with error recovery, over a fresh token stream of the
/// whole file: reports every syntax error (after SLL failed). Returns the
/// module when there was none after all.
std::unique_ptr<ast::Module> parseReportingErrors(TSLLexer &lexer,
                                                  SourceManager &sm,
                                                  uint32_t file,
                                                  DiagnosticEngine &diags) {
  lexer.reset();
  antlr4::CommonTokenStream stream(&lexer);
  TSLParser parser(&stream);
  parser.removeErrorListeners();
  SyntaxErrorListener listener(sm, file, diags);
  parser.setErrorHandler(
      std::make_shared<StatementRecovery>(parser.getVocabulary()));
  parser.addErrorListener(&listener);
  parser.getInterpreter<antlr4::atn::ParserATNSimulator>()->setPredictionMode(
      antlr4::atn::PredictionMode::LL);
  TSLParser::ModuleContext *tree = parser.module();
  if (listener.failed)
    return nullptr;
  auto module = std::make_unique<ast::Module>();
  module->path = sm.name(file);
  module->file = file;
  AstArenaScope arena(module->arena.get());
  AstBuilder builder(sm, file, diags);
  if (!builder.build(tree, *module))
    return nullptr;
  return module;
}

} // namespace

std::unique_ptr<ast::Module> parseSourceReporting(SourceManager &sm,
                                                  uint32_t file,
                                                  DiagnosticEngine &diags) {
  try {
    ByteInputStream input(sm.text(file));
    TSLLexer lexer(&input);
    lexer.removeErrorListeners();
    return parseReportingErrors(lexer, sm, file, diags);
  } catch (...) {
    diags.error(ErrorKind::Internal, SourceRange(sm.locAt(file, 0)),
                "internal parser error");
  }
  return nullptr;
}

std::unique_ptr<ast::Module> parseSource(SourceManager &sm, uint32_t file,
                                         DiagnosticEngine &diags,
                                         ParsePath *path) {
  if (path)
    *path = ParsePath::Fast;
  std::string_view text = sm.text(file);
  unsigned errorsBefore = diags.errorCount();
  try {
    ByteInputStream input(text);
    TSLLexer lexer(&input);
    lexer.removeErrorListeners();
    // Lexical errors and the nesting bound come first, over the tokens one
    // at a time: the parse below lexes again, and frees each statement's
    // tokens once its AST is built, so the tokens of a large file are
    // never all alive at once.
    size_t count = 0;
    if (!scanTokens(lexer, sm, file, diags, count))
      return nullptr;
    auto module = std::make_unique<ast::Module>();
    module->path = sm.name(file);
    module->file = file;
    if (count == 0) // only comments and blanks: an empty module
      return module;
    // Fast SLL prediction first, one item (and one statement of a
    // function) at a time, building the AST as it goes; full LL with error
    // reporting over the whole file only when SLL fails (the standard
    // two-stage ANTLR strategy; SLL never accepts invalid input).
    lexer.reset();
    ReleasingTokenStream stream(&lexer);
    TSLParser parser(&stream);
    parser.removeErrorListeners();
    parser.setErrorHandler(std::make_shared<antlr4::BailErrorStrategy>());
    parser.getInterpreter<antlr4::atn::ParserATNSimulator>()->setPredictionMode(
        antlr4::atn::PredictionMode::SLL);
    bool syntaxError = false;
    {
      AstArenaScope arena(module->arena.get()); // ends before module.reset()
      AstBuilder builder(sm, file, diags, &stream);
      bool built = false;
      try {
        built = builder.buildIncremental(parser, *module, syntaxError);
      } catch (const antlr4::ParseCancellationException &) {
        syntaxError = true;
      }
      if (built)
        return module;
      if (!syntaxError || diags.errorCount() != errorsBefore)
        return nullptr; // the builder reported an error (report no more)
    }
    module.reset();
    parser.getTreeTracker().reset();
    if (path)
      *path = ParsePath::Reporting;
    return parseReportingErrors(lexer, sm, file, diags);
  } catch (const std::exception &e) {
    diags.error(ErrorKind::Internal, SourceRange(sm.locAt(file, 0)),
                std::string("internal parser error: ") + e.what());
  } catch (...) {
    diags.error(ErrorKind::Internal, SourceRange(sm.locAt(file, 0)),
                "internal parser error");
  }
  return nullptr;
}

} // namespace tsl
