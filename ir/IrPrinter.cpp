#include "ir/IrText.h"

#include <cmath>
#include <cstdio>

namespace tsl {

namespace {

std::string quote(const std::string &s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\')
      out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + "\"";
}

std::string printDouble(double v) {
  if (std::isnan(v))
    return "nan";
  if (std::isinf(v))
    return v > 0 ? "inf" : "-inf";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  std::string s = buf;
  // Prefer the shortest text that reads back exactly.
  for (int prec = 1; prec < 17; ++prec) {
    std::snprintf(buf, sizeof buf, "%.*g", prec, v);
    if (std::strtod(buf, nullptr) == v) {
      s = buf;
      break;
    }
  }
  if (s.find_first_of(".eEn") == std::string::npos)
    s += ".0";
  return s;
}

std::string printExprs(const std::vector<SymExpr> &v) {
  std::string out = "[";
  for (size_t i = 0; i < v.size(); ++i)
    out += (i ? ", " : "") + v[i].str();
  return out + "]";
}

std::string printAttr(const Attr &a) {
  struct Visitor {
    std::string operator()(int64_t v) const { return std::to_string(v); }
    std::string operator()(double v) const { return printDouble(v); }
    std::string operator()(const Number &n) const {
      return n.isInt ? std::to_string(n.i) : printDouble(n.f);
    }
    std::string operator()(bool v) const { return v ? "true" : "false"; }
    std::string operator()(DType t) const { return dtypeName(t); }
    std::string operator()(const SymExpr &e) const { return e.str(); }
    std::string operator()(const std::vector<SymExpr> &v) const {
      return printExprs(v);
    }
    std::string operator()(const std::vector<int64_t> &v) const {
      std::string out = "[";
      for (size_t i = 0; i < v.size(); ++i)
        out += (i ? ", " : "") + std::to_string(v[i]);
      return out + "]";
    }
    std::string operator()(const SymCond &c) const { return c.str(); }
    std::string operator()(const std::string &s) const { return quote(s); }
  };
  return std::visit(Visitor{}, a);
}

std::string printLoc(const Location &loc) {
  if (!loc.isValid())
    return "";
  return " loc(" + quote(loc.file) + ":" + std::to_string(loc.line) + ":" +
         std::to_string(loc.col) + ":" + std::to_string(loc.length) + ")";
}

} // namespace

std::vector<std::string> valueNames(const Function &fn) {
  std::vector<std::string> names(fn.values.size());
  unsigned next = 0;
  for (size_t i = 0; i < fn.values.size(); ++i)
    names[i] = fn.values[i].name.empty() ? "%" + std::to_string(next++)
                                         : "%" + fn.values[i].name;
  // Unnamed values are numbered in definition order (parameters are named).
  next = 0;
  for (const Operation &op : fn.ops)
    for (ValueId r : op.results)
      if (fn.values[r].name.empty())
        names[r] = "%" + std::to_string(next++);
  return names;
}

namespace {

/// `@name(params) -> (results)`.
std::string printSignature(const Function &fn,
                           const std::vector<std::string> &names) {
  std::string out = "@" + fn.name + "(";
  for (size_t i = 0; i < fn.params.size(); ++i) {
    const Param &p = fn.params[i];
    if (i)
      out += ", ";
    if (p.isInt)
      out += p.name + ": int = " + p.intExpr.str();
    else
      out += names[p.value] + ": " + fn.type(p.value).str();
  }
  out += ") -> (";
  for (size_t i = 0; i < fn.results.size(); ++i)
    out += (i ? ", " : "") + fn.type(fn.results[i]).str();
  return out + ")";
}

std::string printSymbol(const SymbolInfo &s) {
  std::string out = "symbol " + s.name + ": " + dimKindName(s.kind);
  if (s.isInt)
    out += " int";
  if (s.hint)
    out += " hint=" + std::to_string(*s.hint);
  if (s.lo == INT64_MIN)
    out += " lo=-inf";
  else if (s.lo != 0)
    out += " lo=" + std::to_string(s.lo);
  if (s.hi)
    out += " hi=" + std::to_string(*s.hi);
  if (s.multipleOf != 1)
    out += " multiple_of=" + std::to_string(s.multipleOf);
  if (!s.description.empty())
    out += " desc=" + quote(s.description);
  return out;
}

std::string printOperation(const Function &fn, const Operation &op,
                           const std::vector<std::string> &names) {
  std::string out;
  for (size_t i = 0; i < op.results.size(); ++i)
    out += (i ? ", " : "") + names[op.results[i]];
  if (!op.results.empty())
    out += " = ";
  out += opInfo(op.code).name;
  out += "(";
  for (size_t i = 0; i < op.operands.size(); ++i)
    out += (i ? ", " : "") + names[op.operands[i]];
  out += ")";
  if (!op.attrs.empty()) {
    out += " {";
    bool first = true;
    for (const auto &[name, value] : op.attrs) {
      out += (first ? "" : ", ") + name + " = " + printAttr(value);
      first = false;
    }
    out += "}";
  }
  if (!op.results.empty()) {
    out += " : ";
    for (size_t i = 0; i < op.results.size(); ++i)
      out += (i ? ", " : "") + fn.type(op.results[i]).str();
  }
  return out + printLoc(op.loc);
}

/// The ops and the return line of \p fn, each line indented by \p indent.
std::string printBody(const Function &fn, size_t indent) {
  std::vector<std::string> names = valueNames(fn);
  std::string out;
  size_t depth = 0; // loop bodies are indented (the parser ignores it)
  for (const Operation &op : fn.ops) {
    if (op.code == OpCode::EndLoop && depth > 0)
      --depth;
    out += std::string(indent + 2 * depth, ' ');
    if (op.code == OpCode::Loop)
      ++depth;
    out += printOperation(fn, op, names) + "\n";
  }
  out += std::string(indent, ' ') + "return";
  for (size_t i = 0; i < fn.results.size(); ++i)
    out += (i ? ", " : " ") + names[fn.results[i]];
  return out + "\n";
}

} // namespace

std::string printFunction(const Function &fn) {
  std::string out = "func " + printSignature(fn, valueNames(fn)) + " {\n";
  for (const SymbolInfo &s : fn.symbols)
    out += "  " + printSymbol(s) + "\n";
  for (const Check &g : fn.guards)
    out += "  guard {cond = " + g.cond.str() + ", op = " + quote(g.op) +
           ", reason = " + quote(g.reason) + "}" + printLoc(g.loc) + "\n";
  // Callees read the caller's symbols: only their signatures and bodies.
  for (const Function &callee : fn.callees)
    out += "  callee " + printSignature(callee, valueNames(callee)) + " {\n" +
           printBody(callee, 4) + "  }\n";
  return out + printBody(fn, 2) + "}\n";
}

std::string printModule(const Module &module) {
  std::string out;
  for (size_t i = 0; i < module.functions.size(); ++i)
    out += (i ? "\n" : "") + printFunction(module.functions[i]);
  return out;
}

} // namespace tsl
