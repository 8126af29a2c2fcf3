#include "frontend/AstPrinter.h"

namespace tsl {

namespace {

struct Printer {
  const SourceManager &sm;
  std::string out;

  std::string pos(SourceRange r) {
    LineCol lc = sm.lineCol(r.begin);
    return " <" + std::to_string(lc.line) + ":" + std::to_string(lc.col) + ">";
  }
  void line(int indent, const std::string &text) {
    out += std::string(2 * indent, ' ') + text + "\n";
  }
  static std::string kindText(DimKind k) { return dimKindName(k); }
  std::string spec(const ast::DimSpec &s) {
    std::string t = kindText(s.kind);
    if (s.lo || s.hi)
      t += " in " + (s.lo ? std::to_string(*s.lo) : "") + ".." +
           (s.hi ? std::to_string(*s.hi) : "");
    if (s.multipleOf != 1)
      t += ", multiple_of " + std::to_string(s.multipleOf);
    return t;
  }
  void type(int indent, const std::string &label, const ast::TypeExpr &t) {
    std::string s = label + "Type " + t.base;
    if (t.intKind)
      s += " " + kindText(*t.intKind);
    line(indent, s + pos(t.range));
    for (const ast::TypeDim &d : t.dims) {
      switch (d.kind) {
      case ast::TypeDim::Kind::Pack:
        line(indent + 1, "Pack *" + d.name + pos(d.range));
        break;
      case ast::TypeDim::Kind::Inline:
        line(indent + 1,
             "InlineDim " + d.name + ": " + spec(d.spec) + pos(d.range));
        break;
      case ast::TypeDim::Kind::Unknown:
        line(indent + 1, "UnknownDim ?" + pos(d.range));
        break;
      case ast::TypeDim::Kind::Expr:
        expr(indent + 1, *d.expr);
        break;
      }
    }
  }
  void expr(int indent, const ast::Expr &e) {
    using K = ast::Expr::Kind;
    std::string p = pos(e.range);
    switch (e.kind) {
    case K::IntLit:
      line(indent, "Int " + std::to_string(e.intValue) + p);
      return;
    case K::FloatLit: {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%g", e.floatValue);
      line(indent, std::string("Float ") + buf + p);
      return;
    }
    case K::BoolLit:
      line(indent, std::string("Bool ") + (e.boolValue ? "true" : "false") + p);
      return;
    case K::StringLit:
      line(indent, "String \"" + e.text + "\"" + p);
      return;
    case K::Name:
      line(indent, "Name " + e.text + p);
      return;
    case K::Chain: {
      std::string ops;
      for (auto &o : e.ops)
        ops += " " + o.text();
      line(indent, "Binary" + ops + p);
      break;
    }
    case K::Prefix: {
      std::string ops;
      for (auto &o : e.ops)
        ops += o.text();
      line(indent, "Unary " + ops + p);
      break;
    }
    case K::Call:
      line(indent, "Call" + p);
      break;
    case K::Member:
      line(indent, "Member ." + e.text + p);
      break;
    case K::Index:
      line(indent, "Index" + p);
      break;
    case K::Tuple:
      line(indent, "Tuple" + p);
      break;
    case K::List:
      line(indent, "List" + p);
      break;
    case K::Paren:
      line(indent, "Paren" + p);
      break;
    }
    for (const auto &o : e.operands)
      expr(indent + 1, *o);
    for (const ast::Arg &a : e.args) {
      if (!a.name.empty())
        line(indent + 1, "Named " + a.name);
      expr(indent + (a.name.empty() ? 1 : 2), *a.value);
    }
    for (const ast::SliceItem &s : e.slices) {
      if (!s.isRange) {
        expr(indent + 1, *s.index);
        continue;
      }
      line(indent + 1, "Range" + pos(s.range));
      if (s.start)
        expr(indent + 2, *s.start);
      if (s.stop)
        expr(indent + 2, *s.stop);
      if (s.step) {
        line(indent + 2, "Step");
        expr(indent + 3, *s.step);
      }
    }
  }
  void block(int indent, const ast::Block &b) {
    for (const ast::Stmt &s : b.stmts) {
      std::string p = pos(s.range);
      switch (s.kind) {
      case ast::Stmt::Kind::Let: {
        std::string names;
        for (auto &n : s.names)
          names += (names.empty() ? "" : ", ") + n;
        line(indent, "Let " + (s.tuplePattern ? "(" + names + ")" : names) + p);
        if (s.ascription)
          type(indent + 1, "", *s.ascription);
        expr(indent + 1, *s.value);
        break;
      }
      case ast::Stmt::Kind::Var:
        line(indent, "Var " + s.names[0] + p);
        if (s.ascription)
          type(indent + 1, "", *s.ascription);
        expr(indent + 1, *s.value);
        break;
      case ast::Stmt::Kind::Assign:
        line(indent, "Assign" + p);
        expr(indent + 1, *s.target);
        expr(indent + 1, *s.value);
        break;
      case ast::Stmt::Kind::For:
        line(indent, "For " + s.names[0] + p);
        expr(indent + 1, *s.lo);
        expr(indent + 1, *s.hi);
        block(indent + 1, *s.blocks[0]);
        break;
      case ast::Stmt::Kind::Check:
        line(indent,
             "Check" +
                 (s.hasMessage ? " \"" + s.message + "\"" : std::string()) + p);
        expr(indent + 1, *s.cond);
        break;
      case ast::Stmt::Kind::If:
        line(indent, "If" + p);
        for (size_t i = 0; i < s.blocks.size(); ++i) {
          if (i < s.conds.size()) {
            line(indent + 1, "Cond");
            expr(indent + 2, *s.conds[i]);
            line(indent + 1, "Then");
          } else {
            line(indent + 1, "Else");
          }
          block(indent + 2, *s.blocks[i]);
        }
        break;
      case ast::Stmt::Kind::Return:
        line(indent, "Return" + p);
        if (s.value)
          expr(indent + 1, *s.value);
        break;
      case ast::Stmt::Kind::ExprStmt:
        line(indent, "ExprStmt" + p);
        expr(indent + 1, *s.value);
        break;
      }
    }
  }
};

} // namespace

std::string printAst(const ast::Module &m, const SourceManager &sm) {
  Printer p{sm, {}};
  p.line(0, "Module " + m.path);
  for (const ast::ImportDecl &i : m.imports)
    p.line(1,
           "Import " +
               (i.path.empty() ? i.name : "\"" + i.path + "\" as " + i.name) +
               p.pos(i.range));
  for (const ast::DimDecl &d : m.dims) {
    if (d.value) {
      p.line(1, "Dim " + d.name + " =" + p.pos(d.range));
      p.expr(2, *d.value);
    } else {
      p.line(1, "Dim " + d.name + ": " + p.spec(d.spec) + p.pos(d.range));
    }
  }
  for (const ast::FnDecl &f : m.fns) {
    p.line(1, "Fn " + f.name + p.pos(f.range));
    for (const ast::TypeParam &tp : f.typeParams)
      p.line(2, "TypeParam " + tp.name + ": " + tp.bound + p.pos(tp.nameRange));
    for (const ast::Param &param : f.params) {
      p.line(2, "Param " + param.name + p.pos(param.nameRange));
      p.type(3, "", param.type);
      if (param.defaultValue) {
        p.line(3, "Default");
        p.expr(4, *param.defaultValue);
      }
    }
    for (const ast::TypeExpr &t : f.results)
      p.type(2, "Result", t);
    p.block(2, f.body);
  }
  return p.out;
}

} // namespace tsl
