#include "ir/IrText.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <unordered_map>

namespace tsl {

namespace {

class IrParser {
public:
  explicit IrParser(const std::string &text) : text(text) {}

  bool parse(Module &out) {
    for (;;) {
      skipSpace();
      if (pos >= text.size())
        return true;
      Function fn;
      if (!function(fn))
        return false;
      out.functions.push_back(std::move(fn));
    }
  }

  std::string error;      ///< the first failure's message (empty: none)
  size_t errorOffset = 0; ///< where it is, a byte offset into the text
  size_t errorLength = 0; ///< how many bytes it spans (0: a position)

private:
  const std::string &text;
  size_t pos = 0;
  /// Where the last name, integer, string or balanced text began.
  size_t tokenStart = 0;
  std::unordered_map<std::string, ValueId> names;

  /// Records the first failure, at the current position.
  bool fail(const std::string &msg) { return failAt(pos, 0, msg); }
  /// Records the first failure, spanning [at, at + length).
  bool failAt(size_t at, size_t length, const std::string &msg) {
    if (error.empty()) {
      error = msg;
      errorOffset = std::min(at, text.size());
      errorLength = std::min(length, text.size() - errorOffset);
    }
    return false;
  }
  /// Fails spanning the last token (see tokenStart), which must end at the
  /// current position.
  bool failToken(const std::string &msg) {
    return failAt(tokenStart, pos - tokenStart, msg);
  }
  void skipSpace() {
    while (pos < text.size()) {
      if (std::isspace(static_cast<unsigned char>(text[pos]))) {
        ++pos;
      } else if (text.compare(pos, 2, "//") == 0) {
        while (pos < text.size() && text[pos] != '\n')
          ++pos;
      } else {
        break;
      }
    }
  }
  /// True when only blanks remain on the current line.
  bool atLineEnd() const {
    size_t p = pos;
    while (p < text.size() &&
           (text[p] == ' ' || text[p] == '\t' || text[p] == '\r'))
      ++p;
    return p >= text.size() || text[p] == '\n';
  }
  bool peek(const char *tok) {
    skipSpace();
    return text.compare(pos, std::char_traits<char>::length(tok), tok) == 0;
  }
  bool accept(const char *tok) {
    if (!peek(tok))
      return false;
    pos += std::char_traits<char>::length(tok);
    return true;
  }
  bool expect(const char *tok) {
    if (accept(tok))
      return true;
    return fail(std::string("expected '") + tok + "'");
  }
  bool ident(std::string &out) {
    skipSpace();
    size_t start = tokenStart = pos;
    while (pos < text.size() &&
           (std::isalnum(static_cast<unsigned char>(text[pos])) ||
            text[pos] == '_'))
      ++pos;
    if (start == pos)
      return fail("expected a name");
    out = text.substr(start, pos - start);
    return true;
  }
  bool integer(int64_t &out) {
    skipSpace();
    size_t start = tokenStart = pos;
    if (pos < text.size() && text[pos] == '-')
      ++pos;
    while (pos < text.size() &&
           std::isdigit(static_cast<unsigned char>(text[pos])))
      ++pos;
    std::string s = text.substr(start, pos - start);
    if (s.empty() || s == "-")
      return failAt(start, 0, "expected an integer");
    errno = 0;
    out = std::strtoll(s.c_str(), nullptr, 10);
    if (errno == ERANGE)
      return failToken("integer out of range");
    return true;
  }
  bool string(std::string &out) {
    skipSpace();
    if (pos >= text.size() || text[pos] != '"')
      return fail("expected a string");
    tokenStart = pos;
    ++pos;
    out.clear();
    while (pos < text.size() && text[pos] != '"') {
      if (text[pos] == '\\' && pos + 1 < text.size()) {
        ++pos;
        out += text[pos] == 'n' ? '\n' : text[pos];
      } else {
        out += text[pos];
      }
      ++pos;
    }
    if (pos >= text.size())
      return failAt(tokenStart, 1, "unterminated string");
    ++pos;
    return true;
  }
  /// Text up to a top-level stop character (not consumed).
  std::string balanced(const char *stops) {
    skipSpace();
    size_t start = tokenStart = pos;
    int depth = 0;
    while (pos < text.size()) {
      char c = text[pos];
      if (depth == 0 && std::strchr(stops, c))
        break;
      if (c == '(' || c == '[')
        ++depth;
      if (c == ')' || c == ']') {
        if (depth == 0)
          break;
        --depth;
      }
      if (c == '\n')
        break;
      ++pos;
    }
    std::string s = text.substr(start, pos - start);
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back())))
      s.pop_back();
    return s;
  }
  bool expr(SymExpr &out, const char *stops) {
    std::string s = balanced(stops), err;
    if (!parseSymExpr(s, out, err))
      return failAt(tokenStart, s.size(),
                    "bad size expression '" + s + "': " + err);
    return true;
  }
  bool type(TensorType &out) {
    std::string name;
    if (!ident(name))
      return false;
    auto dt = parseDType(name);
    if (!dt)
      return failToken("unknown element type '" + name + "'");
    out.dtype = *dt;
    out.dims.clear();
    if (!expect("["))
      return false;
    if (accept("]"))
      return true;
    for (;;) {
      SymExpr d;
      if (!expr(d, ",]"))
        return false;
      out.dims.push_back(d);
      if (accept("]"))
        return true;
      if (!expect(","))
        return false;
    }
  }
  bool valueRef(ValueId &out) {
    if (!expect("%"))
      return false;
    std::string n;
    if (!ident(n))
      return false;
    auto it = names.find(n);
    if (it == names.end())
      return failAt(tokenStart - 1, n.size() + 1,
                    "use of undefined value %" + n);
    out = it->second;
    return true;
  }
  bool location(Location &loc) {
    if (!accept("loc("))
      return true;
    std::string file;
    if (!string(file) || !expect(":"))
      return false;
    loc.file = file;
    int64_t l, c, n;
    if (!integer(l) || !expect(":") || !integer(c) || !expect(":") ||
        !integer(n) || !expect(")"))
      return false;
    if (l < 0 || c < 0 || n < 0 || l > UINT32_MAX || c > UINT32_MAX ||
        n > UINT32_MAX)
      return fail("bad location");
    loc.line = static_cast<unsigned>(l);
    loc.col = static_cast<unsigned>(c);
    loc.length = static_cast<unsigned>(n);
    return true;
  }
  bool number(Number &out) {
    skipSpace();
    std::string s = balanced(",}]");
    if (s == "nan" || s == "inf" || s == "-inf") {
      out = Number::ofFloat(std::strtod(s.c_str(), nullptr));
      return true;
    }
    if (s.empty())
      return failAt(tokenStart, 0, "expected a number");
    char *end = nullptr;
    if (s.find_first_of(".eE") == std::string::npos) {
      errno = 0;
      long long v = std::strtoll(s.c_str(), &end, 10);
      if (*end || errno == ERANGE)
        return failAt(tokenStart, s.size(), "bad integer '" + s + "'");
      out = Number::ofInt(v);
    } else {
      double v = std::strtod(s.c_str(), &end);
      if (*end)
        return failAt(tokenStart, s.size(), "bad number '" + s + "'");
      out = Number::ofFloat(v);
    }
    return true;
  }
  bool attrValue(const std::string &kind, Attr &out) {
    if (kind == "int") {
      int64_t v;
      if (!integer(v))
        return false;
      out = v;
    } else if (kind == "float") {
      Number n;
      if (!number(n))
        return false;
      out = n.f;
    } else if (kind == "num") {
      Number n;
      if (!number(n))
        return false;
      out = n;
    } else if (kind == "bool") {
      if (accept("true"))
        out = true;
      else if (accept("false"))
        out = false;
      else
        return fail("expected true or false");
    } else if (kind == "dtype") {
      std::string n;
      if (!ident(n))
        return false;
      auto dt = parseDType(n);
      if (!dt)
        return failToken("unknown element type '" + n + "'");
      out = *dt;
    } else if (kind == "expr") {
      SymExpr e;
      if (!expr(e, ",}"))
        return false;
      out = e;
    } else if (kind == "exprs" || kind == "ints") {
      if (!expect("["))
        return false;
      std::vector<SymExpr> es;
      std::vector<int64_t> is;
      if (!accept("]")) {
        for (;;) {
          if (kind == "ints") {
            int64_t v;
            if (!integer(v))
              return false;
            is.push_back(v);
          } else {
            SymExpr e;
            if (!expr(e, ",]"))
              return false;
            es.push_back(e);
          }
          if (accept("]"))
            break;
          if (!expect(","))
            return false;
        }
      }
      if (kind == "ints")
        out = is;
      else
        out = es;
    } else if (kind == "cond") {
      std::string s = balanced(",}"), err;
      SymCond c;
      if (!parseSymCond(s, c, err))
        return failAt(tokenStart, s.size(),
                      "bad condition '" + s + "': " + err);
      out = c;
    } else if (kind == "str") {
      std::string s;
      if (!string(s))
        return false;
      out = s;
    } else {
      return fail("unknown attribute kind " + kind);
    }
    return true;
  }

  bool symbolLine(Function &fn) {
    SymbolInfo s;
    if (!ident(s.name) || !expect(":"))
      return false;
    std::string kind;
    if (!ident(kind))
      return false;
    if (kind == "static")
      s.kind = DimKind::Static;
    else if (kind == "dynamic")
      s.kind = DimKind::Dynamic;
    else if (kind == "unbacked")
      s.kind = DimKind::Unbacked;
    else if (kind == "auto")
      s.kind = DimKind::Auto;
    else
      return failToken("unknown dim kind '" + kind + "'");
    while (!atLineEnd()) {
      std::string key;
      if (!ident(key))
        return false;
      size_t keyStart = tokenStart;
      if (key == "int") {
        s.isInt = true;
        continue;
      }
      if (!expect("="))
        return false;
      if (key == "desc") {
        if (!string(s.description))
          return false;
        continue;
      }
      if (key == "lo" && accept("-inf")) {
        s.lo = INT64_MIN;
        continue;
      }
      int64_t v;
      if (!integer(v))
        return false;
      if (key == "hint")
        s.hint = v;
      else if (key == "lo")
        s.lo = v;
      else if (key == "hi")
        s.hi = v;
      else if (key == "multiple_of")
        s.multipleOf = v;
      else
        return failAt(keyStart, key.size(),
                      "unknown symbol property '" + key + "'");
    }
    fn.symbols.push_back(s);
    return true;
  }

  bool guardLine(Function &fn) {
    Check g;
    Attr cond, op, reason;
    if (!expect("{") || !expect("cond") || !expect("=") ||
        !attrValue("cond", cond) || !expect(",") || !expect("op") ||
        !expect("=") || !attrValue("str", op) || !expect(",") ||
        !expect("reason") || !expect("=") || !attrValue("str", reason) ||
        !expect("}") || !location(g.loc))
      return false;
    g.cond = std::get<SymCond>(cond);
    g.op = std::get<std::string>(op);
    g.reason = std::get<std::string>(reason);
    fn.guards.push_back(g);
    return true;
  }

  bool operation(Function &fn, std::vector<std::string> resultNames) {
    Operation op;
    std::string opName;
    if (!ident(opName))
      return false;
    size_t opStart = tokenStart;
    auto code = lookupOp(opName);
    if (!code)
      return failToken("unknown op '" + opName + "'");
    op.code = *code;
    const OpInfo &info = opInfo(*code);
    if (!expect("("))
      return false;
    if (!accept(")")) {
      for (;;) {
        ValueId v = 0;
        if (!valueRef(v))
          return false;
        op.operands.push_back(v);
        if (accept(")"))
          break;
        if (!expect(","))
          return false;
      }
    }
    if (accept("{")) {
      for (;;) {
        std::string name;
        if (!ident(name) || !expect("="))
          return false;
        const AttrSpec *spec = nullptr;
        for (const AttrSpec &s : info.attrs)
          if (s.name == name)
            spec = &s;
        if (!spec)
          return failAt(tokenStart, name.size(),
                        "op '" + opName + "' has no attribute '" + name + "'");
        Attr value;
        if (!attrValue(spec->kind, value))
          return false;
        op.attrs[name] = value;
        if (accept("}"))
          break;
        if (!expect(","))
          return false;
      }
    }
    size_t numResults = info.numResults == -2 ? resultNames.size()
                        : info.numResults < 0
                            ? op.operands.size()
                            : static_cast<size_t>(info.numResults);
    if (resultNames.size() != numResults)
      return failAt(opStart, opName.size(),
                    "op '" + opName + "' has " + std::to_string(numResults) +
                        " results");
    if (!resultNames.empty()) {
      if (!expect(":"))
        return false;
      for (size_t i = 0; i < resultNames.size(); ++i) {
        if (i && !expect(","))
          return false;
        TensorType t;
        if (!type(t))
          return false;
        if (names.count(resultNames[i]))
          return failAt(opStart, opName.size(),
                        "value %" + resultNames[i] + " is defined twice");
        ValueId v = fn.addValue(t);
        names[resultNames[i]] = v;
        op.results.push_back(v);
      }
    }
    if (!location(op.loc))
      return false;
    fn.ops.push_back(std::move(op));
    return true;
  }

  /// `func @name(...) -> (...) { ... }`, or, with \p caller, a callee of
  /// it after its `callee` keyword: its values are its own, its symbols the
  /// caller's, and it holds no symbols, guards or callees.
  bool function(Function &fn, const Function *caller = nullptr) {
    names.clear();
    if ((!caller && !expect("func")) || !expect("@") || !ident(fn.name) ||
        !expect("("))
      return false;
    if (!accept(")")) {
      for (;;) {
        Param p;
        if (accept("%")) {
          TensorType t;
          if (!ident(p.name))
            return false;
          size_t nameStart = tokenStart;
          if (!expect(":") || !type(t))
            return false;
          if (names.count(p.name))
            return failAt(nameStart - 1, p.name.size() + 1,
                          "parameter %" + p.name + " is defined twice");
          p.value = fn.addValue(t, p.name);
          names[p.name] = p.value;
        } else {
          p.isInt = true;
          if (!ident(p.name) || !expect(":") || !expect("int") ||
              !expect("=") || !expr(p.intExpr, ",)"))
            return false;
        }
        fn.params.push_back(p);
        if (accept(")"))
          break;
        if (!expect(","))
          return false;
      }
    }
    std::vector<TensorType> resultTypes;
    if (!expect("->") || !expect("("))
      return false;
    if (!accept(")")) {
      for (;;) {
        TensorType t;
        if (!type(t))
          return false;
        resultTypes.push_back(t);
        if (accept(")"))
          break;
        if (!expect(","))
          return false;
      }
    }
    if (!expect("{"))
      return false;
    for (;;) {
      if (accept("}"))
        return failAt(pos - 1, 1, "missing return");
      if (caller && (peek("symbol") || peek("guard") || peek("callee")))
        return failAt(pos, 0, "a callee has no symbols, guards or callees");
      if (accept("symbol")) {
        if (!symbolLine(fn))
          return false;
        continue;
      }
      if (accept("guard")) {
        if (!guardLine(fn))
          return false;
        continue;
      }
      if (accept("callee")) {
        // The callee's values are its own: the caller's names wait.
        std::unordered_map<std::string, ValueId> callerNames = std::move(names);
        Function callee;
        if (!function(callee, &fn))
          return false;
        fn.callees.push_back(std::move(callee));
        names = std::move(callerNames);
        continue;
      }
      if (peek("return")) {
        size_t returnStart = pos;
        pos += 6;
        skipSpace();
        while (peek("%")) {
          ValueId v;
          if (!valueRef(v))
            return false;
          fn.results.push_back(v);
          if (!accept(","))
            break;
        }
        if (fn.results.size() != resultTypes.size())
          return failAt(returnStart, 6,
                        "return gives " + std::to_string(fn.results.size()) +
                            " values but the signature declares " +
                            std::to_string(resultTypes.size()));
        for (size_t i = 0; i < resultTypes.size(); ++i)
          if (!(fn.type(fn.results[i]) == resultTypes[i]))
            return failAt(returnStart, 6,
                          "returned value " + std::to_string(i) + " has type " +
                              fn.type(fn.results[i]).str() +
                              ", the signature says " + resultTypes[i].str());
        // Callees read all of their caller's symbols, wherever the symbol
        // lines are.
        for (Function &callee : fn.callees)
          callee.symbols = fn.symbols;
        return expect("}");
      }
      std::vector<std::string> results;
      while (accept("%")) {
        std::string n;
        if (!ident(n))
          return false;
        results.push_back(n);
        if (accept("="))
          break;
        if (!expect(","))
          return false;
      }
      if (!operation(fn, results))
        return false;
    }
  }
};

} // namespace

bool parseModule(const std::string &text, Module &out, IrParseError &error) {
  IrParser p(text);
  if (p.parse(out))
    return true;
  error.message = p.error;
  error.offset = p.errorOffset;
  error.length = p.errorLength;
  error.line = 1;
  size_t lineStart = 0;
  for (size_t i = 0; i < p.errorOffset; ++i)
    if (text[i] == '\n') {
      ++error.line;
      lineStart = i + 1;
    }
  error.col = static_cast<unsigned>(p.errorOffset - lineStart + 1);
  return false;
}

bool parseModule(const std::string &text, Module &out, std::string &error) {
  IrParseError located;
  if (parseModule(text, out, located))
    return true;
  error = "line " + std::to_string(located.line) + ": " + located.message;
  return false;
}

} // namespace tsl
