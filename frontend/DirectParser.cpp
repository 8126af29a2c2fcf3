#include "frontend/DirectParser.h"
#include "frontend/Parser.h"

#include <cmath>
#include <cstdlib>

namespace tsl::syntax {

enum class DirectParser::Tok : uint8_t {
  Other,
  Eof,
  Int,
  Float,
  String,
  Ident,
  Let,
  Var,
  For,
  In,
  Check,
  If,
  Else,
  Return,
  True,
  False,
  LParen,
  RParen,
  LBracket,
  RBracket,
  LBrace,
  RBrace,
  Comma,
  Semi,
  Colon,
  Assign,
  DotDot,
  Dot,
  OrOr,
  AndAnd,
  EqEq,
  Ne,
  Lt,
  Le,
  Gt,
  Ge,
  Pipe,
  Caret,
  Amp,
  Plus,
  Minus,
  Star,
  Slash,
  Percent,
  At,
  StarStar,
  Bang,
};

namespace {

using Tok = DirectParser::Tok;

/// The grammar's literals and token names, and what each is.
const std::pair<std::string_view, Tok> kTokenNames[] = {
    {"INT", Tok::Int},     {"FLOAT", Tok::Float},   {"STRING", Tok::String},
    {"IDENT", Tok::Ident}, {"'let'", Tok::Let},     {"'var'", Tok::Var},
    {"'for'", Tok::For},   {"'in'", Tok::In},       {"'check'", Tok::Check},
    {"'if'", Tok::If},     {"'else'", Tok::Else},   {"'return'", Tok::Return},
    {"'true'", Tok::True}, {"'false'", Tok::False}, {"'('", Tok::LParen},
    {"')'", Tok::RParen},  {"'['", Tok::LBracket},  {"']'", Tok::RBracket},
    {"'{'", Tok::LBrace},  {"'}'", Tok::RBrace},    {"','", Tok::Comma},
    {"';'", Tok::Semi},    {"':'", Tok::Colon},     {"'='", Tok::Assign},
    {"'..'", Tok::DotDot}, {"'.'", Tok::Dot},       {"'||'", Tok::OrOr},
    {"'&&'", Tok::AndAnd}, {"'=='", Tok::EqEq},     {"'!='", Tok::Ne},
    {"'<'", Tok::Lt},      {"'<='", Tok::Le},       {"'>'", Tok::Gt},
    {"'>='", Tok::Ge},     {"'|'", Tok::Pipe},      {"'^'", Tok::Caret},
    {"'&'", Tok::Amp},     {"'+'", Tok::Plus},      {"'-'", Tok::Minus},
    {"'*'", Tok::Star},    {"'/'", Tok::Slash},     {"'%'", Tok::Percent},
    {"'@'", Tok::At},      {"'**'", Tok::StarStar}, {"'!'", Tok::Bang},
};

/// Binary precedence levels, loosest first (orExpr ... mulExpr); the level
/// after the last is unaryExpr.
constexpr int kUnaryLevel = 8;

bool isLevelOp(int level, Tok t) {
  switch (level) {
  case 0:
    return t == Tok::OrOr;
  case 1:
    return t == Tok::AndAnd;
  case 2:
    return t == Tok::EqEq || t == Tok::Ne || t == Tok::Lt || t == Tok::Le ||
           t == Tok::Gt || t == Tok::Ge;
  case 3:
    return t == Tok::Pipe;
  case 4:
    return t == Tok::Caret;
  case 5:
    return t == Tok::Amp;
  case 6:
    return t == Tok::Plus || t == Tok::Minus;
  case 7:
    return t == Tok::Star || t == Tok::Slash || t == Tok::Percent ||
           t == Tok::At;
  default:
    return false;
  }
}

/// Tokens are released this often while a statement is parsed, so a long
/// expression never holds all its tokens.
constexpr size_t kReleaseEvery = 4096;

} // namespace

std::string unescapeString(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 1 < s.size()) {
      char c = s[++i];
      out += c == 'n' ? '\n' : c == 't' ? '\t' : c;
    } else {
      out += s[i];
    }
  }
  return out;
}

/// One `PREFIX* postfixExpr` of a `**` chain and the `**` after it.
struct DirectParser::PowerSegment {
  uint32_t begin = 0;
  std::vector<ast::Operator> prefixes;
  ast::ExprPtr operand;
  SourceRange powRange;
};

DirectParser::DirectParser(ReleasingTokenStream &ts,
                           const antlr4::dfa::Vocabulary &vocab,
                           const SourceManager &sm, uint32_t file,
                           DiagnosticEngine &diags, TypeHook typeExpr)
    : ts(ts), sm(sm), file(file), text(sm.text(file)), diags(diags),
      typeExpr(std::move(typeExpr)) {
  kinds.assign(vocab.getMaxTokenType() + 1, Tok::Other);
  for (size_t t = 1; t < kinds.size(); ++t) {
    std::string literal = vocab.getLiteralName(t);
    std::string symbolic = vocab.getSymbolicName(t);
    for (const auto &[name, tok] : kTokenNames)
      if (name == literal || name == symbolic)
        kinds[t] = tok;
  }
}

DirectParser::Tok DirectParser::la(size_t k) {
  size_t t = ts.LA(static_cast<ssize_t>(k));
  if (t == antlr4::Token::EOF)
    return Tok::Eof;
  return t < kinds.size() ? kinds[t] : Tok::Other;
}

void DirectParser::take(uint32_t *begin, uint32_t *end) {
  antlr4::Token *t = ts.LT(1);
  if (begin)
    *begin = static_cast<uint32_t>(t->getStartIndex());
  lastEnd = static_cast<uint32_t>(t->getStopIndex() + 1);
  if (end)
    *end = lastEnd;
  ts.consume();
  if (++sinceRelease == kReleaseEvery) {
    sinceRelease = 0;
    ts.releaseConsumed();
  }
}

bool DirectParser::expect(Tok t, uint32_t *begin, uint32_t *end) {
  if (la() != t)
    return fail();
  take(begin, end);
  return true;
}

std::string_view DirectParser::nextText() {
  antlr4::Token *t = ts.LT(1);
  size_t b = std::min(t->getStartIndex(), text.size());
  size_t e = std::min(t->getStopIndex() + 1, text.size());
  return text.substr(b, e > b ? e - b : 0);
}

uint32_t DirectParser::nextBegin() {
  return static_cast<uint32_t>(ts.LT(1)->getStartIndex());
}

SourceRange DirectParser::range(uint32_t begin, uint32_t end) const {
  return SourceRange(sm.locAt(file, begin), sm.locAt(file, end));
}

bool DirectParser::fail() {
  syntaxError = true;
  return false;
}

bool DirectParser::startsExpr(Tok t) const {
  switch (t) {
  case Tok::Int:
  case Tok::Float:
  case Tok::String:
  case Tok::Ident:
  case Tok::Var:
  case Tok::True:
  case Tok::False:
  case Tok::LParen:
  case Tok::LBracket:
  case Tok::Minus:
  case Tok::Bang:
    return true;
  default:
    return false;
  }
}

ast::ExprPtr DirectParser::make(ast::Expr::Kind kind, uint32_t begin) {
  auto e = ast::newExpr();
  e->kind = kind;
  e->range = range(begin, lastEnd);
  return e;
}

// ---------------------------------------------------------------------------
// Statements.

bool DirectParser::stmt(ast::Stmt &st) {
  uint32_t begin = nextBegin();
  bool ok;
  switch (la()) {
  case Tok::Let:
    ok = letOrVar(st, false);
    break;
  case Tok::Var: // a keyword only where a name follows (`var = 1;`)
    ok = la(2) == Tok::Ident || la(2) == Tok::Var ? letOrVar(st, true)
                                                  : exprOrAssign(st);
    break;
  case Tok::For:
    ok = forStmt(st);
    break;
  case Tok::Check:
    ok = checkStmt(st);
    break;
  case Tok::If:
    ok = ifStmt(st);
    break;
  case Tok::Return:
    take();
    st.kind = ast::Stmt::Kind::Return;
    if (la() != Tok::Semi && !(st.value = expr()))
      return false;
    ok = expect(Tok::Semi);
    break;
  default:
    ok = exprOrAssign(st);
  }
  st.range = range(begin, lastEnd);
  return ok && !failed;
}

bool DirectParser::block(ast::Block &b) {
  uint32_t begin = nextBegin();
  if (!expect(Tok::LBrace))
    return false;
  while (la() != Tok::RBrace && la() != Tok::Eof) {
    ast::Stmt st;
    if (!stmt(st))
      return false;
    b.stmts.push_back(std::move(st));
  }
  if (!expect(Tok::RBrace))
    return false;
  b.range = range(begin, lastEnd);
  return true;
}

bool DirectParser::ident(std::string &name, SourceRange &r) {
  if (la() != Tok::Ident && la() != Tok::Var)
    return fail();
  name = nextText();
  uint32_t b, e;
  take(&b, &e);
  r = range(b, e);
  return true;
}

bool DirectParser::letOrVar(ast::Stmt &st, bool isVar) {
  take();
  st.kind = isVar ? ast::Stmt::Kind::Var : ast::Stmt::Kind::Let;
  auto name = [&] {
    st.names.emplace_back();
    st.nameRanges.emplace_back();
    return ident(st.names.back(), st.nameRanges.back());
  };
  if (!isVar && la() == Tok::LParen) {
    st.tuplePattern = true;
    take();
    if (!name())
      return false;
    while (la() == Tok::Comma) {
      take();
      if (la() == Tok::RParen)
        break;
      if (!name())
        return false;
    }
    if (!expect(Tok::RParen))
      return false;
  } else if (!name()) {
    return false;
  }
  if (la() == Tok::Colon) {
    take();
    ast::TypeExpr t;
    if (!typeExpr(t))
      return failed = true, false;
    st.ascription = std::make_unique<ast::TypeExpr>(std::move(t));
  }
  if (!expect(Tok::Assign) || !(st.value = expr()))
    return false;
  return expect(Tok::Semi);
}

bool DirectParser::forStmt(ast::Stmt &st) {
  take();
  st.kind = ast::Stmt::Kind::For;
  st.names.emplace_back();
  st.nameRanges.emplace_back();
  if (!ident(st.names[0], st.nameRanges[0]) || !expect(Tok::In) ||
      !(st.lo = expr()) || !expect(Tok::DotDot) || !(st.hi = expr()))
    return false;
  auto body = std::make_unique<ast::Block>();
  if (!block(*body))
    return false;
  st.blocks.push_back(std::move(body));
  return true;
}

bool DirectParser::checkStmt(ast::Stmt &st) {
  take();
  st.kind = ast::Stmt::Kind::Check;
  if (!expect(Tok::LParen) || !(st.cond = expr()))
    return false;
  if (la() == Tok::Comma) {
    take();
    if (la() != Tok::String)
      return fail();
    std::string_view raw = nextText();
    st.message = unescapeString(raw.substr(1, raw.size() - 2));
    st.hasMessage = true;
    take();
  }
  return expect(Tok::RParen) && expect(Tok::Semi);
}

bool DirectParser::ifStmt(ast::Stmt &st) {
  take();
  st.kind = ast::Stmt::Kind::If;
  auto branch = [&](bool hasCond) {
    if (hasCond) {
      ast::ExprPtr c = expr();
      if (!c)
        return false;
      st.conds.push_back(std::move(c));
    }
    auto b = std::make_unique<ast::Block>();
    if (!block(*b))
      return false;
    st.blocks.push_back(std::move(b));
    return true;
  };
  if (!branch(true))
    return false;
  while (la() == Tok::Else) {
    take();
    bool elseIf = la() == Tok::If;
    if (elseIf)
      take();
    if (!branch(elseIf))
      return false;
    if (!elseIf)
      break;
  }
  return true;
}

bool DirectParser::exprOrAssign(ast::Stmt &st) {
  ast::ExprPtr e = expr();
  if (!e)
    return false;
  // `target=postfixExpr '=' value=expr ';'`: only a postfix expression
  // (no operator outside brackets) is a target.
  if (la() == Tok::Assign && e->kind != ast::Expr::Kind::Chain &&
      e->kind != ast::Expr::Kind::Prefix) {
    take();
    st.kind = ast::Stmt::Kind::Assign;
    st.target = std::move(e);
    if (!(st.value = expr()))
      return false;
  } else {
    st.kind = ast::Stmt::Kind::ExprStmt;
    st.value = std::move(e);
  }
  return expect(Tok::Semi);
}

// ---------------------------------------------------------------------------
// Expressions. Each returns null at a syntax error or a reported error.

ast::ExprPtr DirectParser::expr() { return binary(0); }

ast::ExprPtr DirectParser::binary(int level) {
  if (level == kUnaryLevel)
    return unary();
  ast::ExprPtr first = binary(level + 1);
  if (!first || !isLevelOp(level, la()))
    return first;
  auto e = make(ast::Expr::Kind::Chain, 0);
  e->operands.push_back(std::move(first));
  while (isLevelOp(level, la())) {
    std::string_view op = nextText();
    uint32_t b, end;
    take(&b, &end);
    ast::ExprPtr rhs = binary(level + 1);
    if (!rhs)
      return nullptr;
    // `||` and `&&` are located at their right operand.
    e->ops.emplace_back(op, level <= 1 ? rhs->range : range(b, end));
    e->operands.push_back(std::move(rhs));
    if (level == 2) // `cmpExpr: bitOrExpr (cmpOp bitOrExpr)?`
      break;
  }
  e->range = SourceRange(e->operands.front()->range.begin,
                         e->operands.back()->range.end);
  if (!setDepth(*e, SourceRange(e->range.begin)))
    return nullptr;
  return e;
}

/// `unaryExpr: prefixOp* powerExpr; powerExpr: postfixExpr (powOp
/// unaryExpr)?`, read as a flat run of segments (a long `**` chain must not
/// recurse), then built from the right.
ast::ExprPtr DirectParser::unary() {
  std::vector<PowerSegment> segments;
  for (;;) {
    PowerSegment s;
    s.begin = nextBegin();
    while (la() == Tok::Minus || la() == Tok::Bang) {
      std::string_view op = nextText();
      uint32_t b, e;
      take(&b, &e);
      s.prefixes.emplace_back(std::move(op), range(b, e));
    }
    if (!(s.operand = postfix()))
      return nullptr;
    bool pow = la() == Tok::StarStar;
    if (!pow && segments.empty() && s.prefixes.empty())
      return std::move(s.operand); // the common case: a bare operand
    if (pow) {
      uint32_t b, e;
      take(&b, &e);
      s.powRange = range(b, e);
    }
    segments.push_back(std::move(s));
    if (!pow)
      return foldPower(segments);
  }
}

ast::ExprPtr DirectParser::foldPower(std::vector<PowerSegment> &segments) {
  const SourceLoc end = segments.back().operand->range.end;
  ast::ExprPtr acc;
  for (size_t i = segments.size(); i-- > 0;) {
    PowerSegment &s = segments[i];
    ast::ExprPtr power = std::move(s.operand);
    if (acc) {
      auto e = ast::newExpr();
      e->kind = ast::Expr::Kind::Chain;
      e->range = SourceRange(power->range.begin, end);
      e->operands.push_back(std::move(power));
      e->operands.push_back(std::move(acc));
      e->ops.emplace_back("**", s.powRange);
      if (!setDepth(*e, SourceRange(e->range.begin)))
        return nullptr;
      power = std::move(e);
    }
    if (s.prefixes.empty()) {
      acc = std::move(power);
      continue;
    }
    auto e = ast::newExpr();
    e->kind = ast::Expr::Kind::Prefix;
    e->range = SourceRange(sm.locAt(file, s.begin), end);
    for (const ast::Operator &op : s.prefixes)
      e->ops.push_back(op);
    e->operands.push_back(std::move(power));
    if (!setDepth(*e, SourceRange(e->range.begin)))
      return nullptr;
    acc = std::move(e);
  }
  return acc;
}

ast::ExprPtr DirectParser::postfix() {
  const uint32_t begin = nextBegin();
  ast::ExprPtr cur = primary();
  while (cur) {
    const Tok t = la();
    if (t != Tok::LParen && t != Tok::Dot && t != Tok::LBracket)
      break;
    const uint32_t postfixBegin = nextBegin();
    take();
    ast::ExprPtr e;
    if (t == Tok::LParen) {
      e = make(ast::Expr::Kind::Call, begin);
      e->operands.push_back(std::move(cur));
      if (la() != Tok::RParen && !callArgs(*e))
        return nullptr;
      if (!expect(Tok::RParen))
        return nullptr;
    } else if (t == Tok::Dot) {
      e = make(ast::Expr::Kind::Member, begin);
      if (la() != Tok::Ident)
        return fail(), nullptr;
      e->text = nextText();
      uint32_t b, end;
      take(&b, &end);
      e->ops.emplace_back(".", range(b, end));
      e->operands.push_back(std::move(cur));
    } else {
      e = make(ast::Expr::Kind::Index, begin);
      e->operands.push_back(std::move(cur));
      if (!sliceItems(*e) || !expect(Tok::RBracket))
        return nullptr;
    }
    e->range = range(begin, lastEnd);
    if (!setDepth(*e, range(postfixBegin, lastEnd)))
      return nullptr;
    cur = std::move(e);
  }
  return cur;
}

/// `argList: arg (',' arg)* ','?; arg: (ident '=')? expr`, before the ')'.
bool DirectParser::callArgs(ast::Expr &call) {
  for (;;) {
    ast::Arg a;
    if ((la() == Tok::Ident || la() == Tok::Var) && la(2) == Tok::Assign) {
      ident(a.name, a.nameRange);
      take();
    }
    if (!(a.value = expr()))
      return false;
    call.args.push_back(std::move(a));
    if (la() != Tok::Comma)
      return true;
    take();
    if (la() == Tok::RParen)
      return true;
  }
}

/// `sliceItem (',' sliceItem)* ','?` before the ']'; `sliceItem: start=expr?
/// ':' stop=expr? (':' step=expr?)? | index=expr`.
bool DirectParser::sliceItems(ast::Expr &index) {
  for (;;) {
    ast::SliceItem item;
    const uint32_t begin = nextBegin();
    ast::ExprPtr first;
    if (la() != Tok::Colon && !(first = expr()))
      return false;
    if (la() == Tok::Colon) {
      item.isRange = true;
      item.start = std::move(first);
      take();
      if (startsExpr(la()) && !(item.stop = expr()))
        return false;
      if (la() == Tok::Colon) {
        take();
        if (startsExpr(la()) && !(item.step = expr()))
          return false;
      }
    } else {
      item.index = std::move(first);
    }
    item.range = range(begin, lastEnd);
    index.slices.push_back(std::move(item));
    if (la() != Tok::Comma)
      return true;
    take();
    if (la() == Tok::RBracket)
      return true;
  }
}

ast::ExprPtr DirectParser::primary() {
  const uint32_t begin = nextBegin();
  const Tok t = la();
  switch (t) {
  case Tok::Int: {
    std::string_view digits = nextText();
    take();
    auto e = make(ast::Expr::Kind::IntLit, begin);
    if (!intLiteral(digits, e->range, e->intValue))
      return nullptr;
    return e;
  }
  case Tok::Float: {
    std::string digits(nextText());
    take();
    auto e = make(ast::Expr::Kind::FloatLit, begin);
    e->floatValue = std::strtod(digits.c_str(), nullptr);
    if (!std::isfinite(e->floatValue)) {
      diags.error(ErrorKind::Syntax, e->range,
                  "float literal '" + digits + "' is out of range");
      failed = true;
      return nullptr;
    }
    return e;
  }
  case Tok::True:
  case Tok::False: {
    take();
    auto e = make(ast::Expr::Kind::BoolLit, begin);
    e->boolValue = t == Tok::True;
    return e;
  }
  case Tok::String: {
    std::string_view raw = nextText();
    take();
    auto e = make(ast::Expr::Kind::StringLit, begin);
    e->text = unescapeString(raw.substr(1, raw.size() - 2));
    return e;
  }
  case Tok::Ident:
  case Tok::Var: {
    std::string_view name = nextText();
    take();
    auto e = make(ast::Expr::Kind::Name, begin);
    e->text = name;
    return e;
  }
  case Tok::LParen:
  case Tok::LBracket:
    return group(t == Tok::LBracket);
  default:
    return fail(), nullptr;
  }
}

/// `'(' expr (',' expr)* trailing=','? ')'` (a tuple, or a parenthesized
/// expression) or `'[' (expr (',' expr)* ','?)? ']'` (a list).
ast::ExprPtr DirectParser::group(bool square) {
  const uint32_t begin = nextBegin();
  take();
  const Tok close = square ? Tok::RBracket : Tok::RParen;
  std::vector<ast::ExprPtr> items;
  bool trailing = false;
  if (!square || la() != close) {
    for (;;) {
      ast::ExprPtr x = expr();
      if (!x)
        return nullptr;
      items.push_back(std::move(x));
      if (la() != Tok::Comma)
        break;
      take();
      if (la() == close) {
        trailing = true;
        break;
      }
    }
  }
  if (!expect(close))
    return nullptr;
  ast::Expr::Kind kind = square ? ast::Expr::Kind::List
                         : items.size() > 1 || trailing
                             ? ast::Expr::Kind::Tuple
                             : ast::Expr::Kind::Paren;
  auto e = make(kind, begin);
  e->operands.reserve(items.size());
  for (ast::ExprPtr &x : items)
    e->operands.push_back(std::move(x));
  if (!setDepth(*e, SourceRange(e->range.begin)))
    return nullptr;
  return e;
}

bool DirectParser::intLiteral(std::string_view digits, SourceRange r,
                              int64_t &out) {
  uint64_t v = 0;
  for (char c : digits) {
    if (v > (static_cast<uint64_t>(INT64_MAX) - (c - '0')) / 10) {
      diags.error(ErrorKind::Syntax, r,
                  "integer literal '" + std::string(digits) + "' is too large");
      failed = true;
      return false;
    }
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  out = static_cast<int64_t>(v);
  return true;
}

/// As the tree builder's setDepth: past kMaxExprDepth, reports at \p where
/// and fails.
bool DirectParser::setDepth(ast::Expr &e, SourceRange where) {
  e.depth = ast::depthFromChildren(e);
  if (e.depth <= kMaxExprDepth)
    return true;
  diags.error(ErrorKind::Syntax, where,
              "expression is nested too deeply (more than " +
                  std::to_string(kMaxExprDepth) + " levels)",
              "split the expression with 'let' bindings");
  failed = true;
  return false;
}

} // namespace tsl::syntax
