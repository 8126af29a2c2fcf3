#include "shapes/SymCond.h"

#include <algorithm>
#include <cctype>

namespace tsl {

const std::shared_ptr<const std::vector<SymCond>> &SymCond::noChildren() {
  static const std::shared_ptr<const std::vector<SymCond>> empty =
      std::make_shared<const std::vector<SymCond>>();
  return empty;
}

SymCond SymCond::truth(bool value) {
  SymCond c;
  c.kind_ = value ? Kind::True : Kind::False;
  return c;
}

SymCond SymCond::compare(Kind op, SymExpr lhs, SymExpr rhs) {
  SymExpr diff = lhs - rhs;
  if (diff.isConst()) {
    int64_t d = diff.constValue();
    switch (op) {
    case Kind::Eq:
      return truth(d == 0);
    case Kind::Ne:
      return truth(d != 0);
    case Kind::Lt:
      return truth(d < 0);
    case Kind::Le:
      return truth(d <= 0);
    case Kind::Gt:
      return truth(d > 0);
    case Kind::Ge:
      return truth(d >= 0);
    default:
      break;
    }
  }
  SymCond c;
  c.kind_ = op;
  c.lhs_ = lhs;
  c.rhs_ = rhs;
  return c;
}

SymCond SymCond::conj(SymCond a, SymCond b) {
  if (a.kind_ == Kind::False || b.kind_ == Kind::True)
    return a;
  if (b.kind_ == Kind::False || a.kind_ == Kind::True)
    return b;
  SymCond c;
  c.kind_ = Kind::And;
  c.children_ =
      std::make_shared<const std::vector<SymCond>>(std::vector<SymCond>{a, b});
  return c;
}

SymCond SymCond::disj(SymCond a, SymCond b) {
  if (a.kind_ == Kind::True || b.kind_ == Kind::False)
    return a;
  if (b.kind_ == Kind::True || a.kind_ == Kind::False)
    return b;
  SymCond c;
  c.kind_ = Kind::Or;
  c.children_ =
      std::make_shared<const std::vector<SymCond>>(std::vector<SymCond>{a, b});
  return c;
}

SymCond SymCond::negate(SymCond a) {
  switch (a.kind_) {
  case Kind::True:
    return truth(false);
  case Kind::False:
    return truth(true);
  case Kind::Eq:
    return compare(Kind::Ne, a.lhs_, a.rhs_);
  case Kind::Ne:
    return compare(Kind::Eq, a.lhs_, a.rhs_);
  case Kind::Lt:
    return compare(Kind::Ge, a.lhs_, a.rhs_);
  case Kind::Le:
    return compare(Kind::Gt, a.lhs_, a.rhs_);
  case Kind::Gt:
    return compare(Kind::Le, a.lhs_, a.rhs_);
  case Kind::Ge:
    return compare(Kind::Lt, a.lhs_, a.rhs_);
  case Kind::Not:
    return a.children()[0];
  default: {
    SymCond c;
    c.kind_ = Kind::Not;
    c.children_ =
        std::make_shared<const std::vector<SymCond>>(std::vector<SymCond>{a});
    return c;
  }
  }
}

static const char *opText(SymCond::Kind k) {
  switch (k) {
  case SymCond::Kind::Eq:
    return " == ";
  case SymCond::Kind::Ne:
    return " != ";
  case SymCond::Kind::Lt:
    return " < ";
  case SymCond::Kind::Le:
    return " <= ";
  case SymCond::Kind::Gt:
    return " > ";
  case SymCond::Kind::Ge:
    return " >= ";
  default:
    return " ? ";
  }
}

std::string SymCond::str() const {
  switch (kind_) {
  case Kind::True:
    return "true";
  case Kind::False:
    return "false";
  case Kind::And:
  case Kind::Or: {
    std::string out;
    for (size_t i = 0; i < children().size(); ++i) {
      const SymCond &c = children()[i];
      bool paren = c.kind_ == Kind::And || c.kind_ == Kind::Or;
      if (i)
        out += kind_ == Kind::And ? " && " : " || ";
      out += paren ? "(" + c.str() + ")" : c.str();
    }
    return out;
  }
  case Kind::Not:
    return "!(" + children()[0].str() + ")";
  default:
    return lhs_.str() + opText(kind_) + rhs_.str();
  }
}

std::vector<std::string> SymCond::symbols() const {
  std::vector<std::string> out;
  if (isComparison()) {
    out = lhs_.symbols();
    auto r = rhs_.symbols();
    out.insert(out.end(), r.begin(), r.end());
  }
  for (const SymCond &c : children()) {
    auto s = c.symbols();
    out.insert(out.end(), s.begin(), s.end());
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

SymCond SymCond::substitute(const std::map<std::string, SymExpr> &repl) const {
  switch (kind_) {
  case Kind::True:
  case Kind::False:
    return *this;
  case Kind::And:
    return conj(children()[0].substitute(repl), children()[1].substitute(repl));
  case Kind::Or:
    return disj(children()[0].substitute(repl), children()[1].substitute(repl));
  case Kind::Not:
    return negate(children()[0].substitute(repl));
  default:
    return compare(kind_, lhs_.substitute(repl), rhs_.substitute(repl));
  }
}

std::optional<bool> SymCond::evaluate(
    const std::function<std::optional<int64_t>(const std::string &)> &lookup)
    const {
  switch (kind_) {
  case Kind::True:
    return true;
  case Kind::False:
    return false;
  case Kind::And:
  case Kind::Or: {
    auto a = children()[0].evaluate(lookup);
    auto b = children()[1].evaluate(lookup);
    if (!a || !b)
      return std::nullopt;
    return kind_ == Kind::And ? (*a && *b) : (*a || *b);
  }
  case Kind::Not: {
    auto a = children()[0].evaluate(lookup);
    if (!a)
      return std::nullopt;
    return !*a;
  }
  default: {
    auto a = lhs_.evaluate(lookup), b = rhs_.evaluate(lookup);
    if (!a || !b)
      return std::nullopt;
    switch (kind_) {
    case Kind::Eq:
      return *a == *b;
    case Kind::Ne:
      return *a != *b;
    case Kind::Lt:
      return *a < *b;
    case Kind::Le:
      return *a <= *b;
    case Kind::Gt:
      return *a > *b;
    default:
      return *a >= *b;
    }
  }
  }
}

bool SymCond::operator==(const SymCond &o) const {
  if (kind_ != o.kind_)
    return false;
  if (isComparison())
    return lhs_ == o.lhs_ && rhs_ == o.rhs_;
  if (children().size() != o.children().size())
    return false;
  for (size_t i = 0; i < children().size(); ++i)
    if (!(children()[i] == o.children()[i]))
      return false;
  return true;
}

namespace {

/// Recursive-descent parser for dim expressions and conditions. Nesting is
/// bounded so hostile input cannot overflow the stack.
class TextParser {
public:
  explicit TextParser(const std::string &t) : text(t) {}

  bool parseCondTop(SymCond &out) {
    if (!cond(out))
      return false;
    return atEnd();
  }
  bool parseExprTop(SymExpr &out) {
    if (!expr(out))
      return false;
    return atEnd();
  }
  std::string error;

private:
  const std::string &text;
  size_t pos = 0;
  int depth = 0;

  bool fail(const std::string &msg) {
    if (error.empty())
      error = "column " + std::to_string(pos + 1) + ": " + msg;
    return false;
  }
  void skip() {
    while (pos < text.size() &&
           std::isspace(static_cast<unsigned char>(text[pos])))
      ++pos;
  }
  bool atEnd() {
    skip();
    return pos == text.size()
               ? true
               : fail("unexpected '" + std::string(1, text[pos]) + "'");
  }
  bool accept(const char *tok) {
    skip();
    size_t n = std::char_traits<char>::length(tok);
    if (text.compare(pos, n, tok) == 0) {
      // Do not split "==" into "=" or "<=" into "<".
      if ((n == 1 && (tok[0] == '<' || tok[0] == '>' || tok[0] == '!')) &&
          pos + 1 < text.size() && text[pos + 1] == '=')
        return false;
      pos += n;
      return true;
    }
    return false;
  }
  struct DepthGuard {
    int &d;
    explicit DepthGuard(int &d) : d(d) { ++d; }
    ~DepthGuard() { --d; }
  };

  bool cond(SymCond &out) {
    DepthGuard g(depth);
    if (depth > 200)
      return fail("expression nested too deeply");
    if (!condAnd(out))
      return false;
    while (accept("||")) {
      SymCond r;
      if (!condAnd(r))
        return false;
      out = SymCond::disj(out, r);
    }
    return true;
  }
  bool condAnd(SymCond &out) {
    if (!condUnary(out))
      return false;
    while (accept("&&")) {
      SymCond r;
      if (!condUnary(r))
        return false;
      out = SymCond::conj(out, r);
    }
    return true;
  }
  bool condUnary(SymCond &out) {
    DepthGuard g(depth);
    if (depth > 200)
      return fail("expression nested too deeply");
    if (accept("!")) {
      if (!condUnary(out))
        return false;
      out = SymCond::negate(out);
      return true;
    }
    skip();
    if (text.compare(pos, 4, "true") == 0) {
      pos += 4;
      out = SymCond::truth(true);
      return true;
    }
    if (text.compare(pos, 5, "false") == 0) {
      pos += 5;
      out = SymCond::truth(false);
      return true;
    }
    // A parenthesised condition, or a comparison whose lhs starts with '('.
    size_t save = pos;
    if (accept("(")) {
      std::string savedError = error;
      SymCond inner;
      if (cond(inner) && accept(")")) {
        skip();
        bool followedByOp =
            pos < text.size() &&
            std::string("+-*/%<>=!").find(text[pos]) != std::string::npos;
        if (!followedByOp) {
          out = inner;
          return true;
        }
      }
      pos = save;
      error = savedError;
    }
    SymExpr lhs, rhs;
    if (!expr(lhs))
      return false;
    static const std::pair<const char *, SymCond::Kind> ops[] = {
        {"==", SymCond::Kind::Eq}, {"!=", SymCond::Kind::Ne},
        {"<=", SymCond::Kind::Le}, {">=", SymCond::Kind::Ge},
        {"<", SymCond::Kind::Lt},  {">", SymCond::Kind::Gt}};
    for (auto &[tok, kind] : ops)
      if (accept(tok)) {
        if (!expr(rhs))
          return false;
        out = SymCond::compare(kind, lhs, rhs);
        return true;
      }
    return fail("expected a comparison operator");
  }

  bool expr(SymExpr &out) {
    DepthGuard g(depth);
    if (depth > 200)
      return fail("expression nested too deeply");
    if (!term(out))
      return false;
    for (;;) {
      if (accept("+")) {
        SymExpr r;
        if (!term(r))
          return false;
        out = out + r;
      } else if (accept("-")) {
        SymExpr r;
        if (!term(r))
          return false;
        out = out - r;
      } else {
        return true;
      }
    }
  }
  bool term(SymExpr &out) {
    if (!unary(out))
      return false;
    for (;;) {
      SymExpr r;
      if (accept("*")) {
        if (!unary(r))
          return false;
        out = out * r;
      } else if (accept("/")) {
        if (!unary(r))
          return false;
        out = SymExpr::floorDiv(out, r);
      } else if (accept("%")) {
        if (!unary(r))
          return false;
        out = SymExpr::mod(out, r);
      } else {
        return true;
      }
    }
  }
  bool unary(SymExpr &out) {
    DepthGuard g(depth);
    if (depth > 200)
      return fail("expression nested too deeply");
    if (accept("-")) {
      if (!unary(out))
        return false;
      out = -out;
      return true;
    }
    return primary(out);
  }
  bool primary(SymExpr &out) {
    skip();
    if (pos >= text.size())
      return fail("expected an expression");
    char c = text[pos];
    if (std::isdigit(static_cast<unsigned char>(c))) {
      uint64_t v = 0;
      while (pos < text.size() &&
             std::isdigit(static_cast<unsigned char>(text[pos]))) {
        v = v * 10 + (text[pos] - '0');
        if (v > (uint64_t)INT64_MAX)
          return fail("integer literal too large");
        ++pos;
      }
      out = SymExpr(static_cast<int64_t>(v));
      return true;
    }
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t start = pos;
      while (pos < text.size() &&
             (std::isalnum(static_cast<unsigned char>(text[pos])) ||
              text[pos] == '_'))
        ++pos;
      std::string name = text.substr(start, pos - start);
      if ((name == "min" || name == "max") && accept("(")) {
        SymExpr a, b;
        if (!expr(a) || !accept(",") || !expr(b) || !accept(")"))
          return fail("malformed " + name + "(a, b)");
        out = name == "min" ? SymExpr::min(a, b) : SymExpr::max(a, b);
        return true;
      }
      out = SymExpr::symbol(name);
      return true;
    }
    if (accept("(")) {
      if (!expr(out))
        return false;
      if (!accept(")"))
        return fail("expected ')'");
      return true;
    }
    return fail("unexpected '" + std::string(1, c) + "'");
  }
};

} // namespace

bool parseSymExpr(const std::string &text, SymExpr &out, std::string &error) {
  TextParser p(text);
  if (p.parseExprTop(out))
    return true;
  error = p.error;
  return false;
}

bool parseSymCond(const std::string &text, SymCond &out, std::string &error) {
  TextParser p(text);
  if (p.parseCondTop(out))
    return true;
  error = p.error;
  return false;
}

} // namespace tsl
