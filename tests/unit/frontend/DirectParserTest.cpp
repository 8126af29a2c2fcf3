// The fast pass builds the AST straight from the tokens (DirectParser); the
// reporting pass builds it from ANTLR's parse tree. Wherever the grammar
// accepts a file, both must build the same AST (every node, range and
// operator), and the fast pass must accept it without falling back.
#include "frontend/Parser.h"

#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <sstream>

using namespace tsl;

namespace {

struct Dumper {
  std::string out;
  void r(SourceRange x) {
    out += "<" + std::to_string(x.begin.offset) + "-" +
           std::to_string(x.end.offset) + ">";
  }
  void e(const ast::Expr *x) {
    if (!x) {
      out += "null ";
      return;
    }
    out += "(" + std::to_string(static_cast<int>(x->kind)) + " d" +
           std::to_string(x->depth) + " ";
    r(x->range);
    if (x->kind == ast::Expr::Kind::IntLit)
      out += " i" + std::to_string(x->intValue);
    if (x->kind == ast::Expr::Kind::FloatLit)
      out += " f" + std::to_string(x->floatValue);
    if (x->kind == ast::Expr::Kind::BoolLit)
      out += " b" + std::to_string(x->boolValue);
    out += " t'" + x->text + "'";
    for (const ast::Operator &o : x->ops) {
      out += " op" + o.text();
      r(o.range);
    }
    for (const auto &o : x->operands)
      e(o.get());
    for (const ast::Arg &a : x->args) {
      out += " arg'" + a.name + "'";
      r(a.nameRange);
      e(a.value.get());
    }
    for (const ast::SliceItem &s : x->slices) {
      out += s.isRange ? " range" : " index";
      r(s.range);
      e(s.start.get());
      e(s.stop.get());
      e(s.step.get());
      e(s.index.get());
    }
    out += ")";
  }
  void type(const ast::TypeExpr &t) {
    out += "type " + t.base + std::to_string(t.hasDims);
    r(t.range);
    for (const ast::TypeDim &d : t.dims) {
      out += " dim" + std::to_string(static_cast<int>(d.kind)) + d.name;
      r(d.range);
      e(d.expr.get());
    }
  }
  void block(const ast::Block &b) {
    out += "{";
    r(b.range);
    for (const ast::Stmt &s : b.stmts)
      stmt(s);
    out += "}";
  }
  void stmt(const ast::Stmt &s) {
    out += "\nstmt" + std::to_string(static_cast<int>(s.kind));
    r(s.range);
    for (size_t i = 0; i < s.names.size(); ++i) {
      out += " " + s.names[i];
      r(s.nameRanges[i]);
    }
    out += s.tuplePattern ? " tuple" : "";
    if (s.ascription)
      type(*s.ascription);
    out += " msg" + std::to_string(s.hasMessage) + "'" + s.message + "'";
    for (const ast::Expr *x :
         {s.value.get(), s.cond.get(), s.target.get(), s.lo.get(), s.hi.get()})
      e(x);
    for (const auto &c : s.conds)
      e(c.get());
    for (const auto &b : s.blocks)
      block(*b);
  }
  void module(const ast::Module &m) {
    for (const ast::FnDecl &f : m.fns) {
      out += "\nfn " + f.name;
      r(f.range);
      r(f.nameRange);
      for (const ast::Param &p : f.params) {
        out += " param " + p.name;
        type(p.type);
        e(p.defaultValue.get());
      }
      for (const ast::TypeExpr &t : f.results)
        type(t);
      block(f.body);
    }
    for (const ast::DimDecl &d : m.dims) {
      out += "\ndim " + d.name;
      e(d.value.get());
    }
  }
};

struct Outcome {
  bool ok = false;
  ParsePath path = ParsePath::Fast;
  std::string ast, errors;
};

Outcome parseWith(const std::string &text, bool reporting) {
  SourceManager sm;
  std::ostringstream diagOut;
  DiagnosticEngine diags(sm, diagOut);
  uint32_t file = sm.addBuffer("t.tsl", text);
  Outcome o;
  std::unique_ptr<ast::Module> m = reporting
                                       ? parseSourceReporting(sm, file, diags)
                                       : parseSource(sm, file, diags, &o.path);
  o.errors = diagOut.str();
  if ((o.ok = m != nullptr)) {
    Dumper d;
    d.module(*m);
    o.ast = std::move(d.out);
  }
  return o;
}

/// Both passes on \p text: equal ASTs, and no fallback, where the grammar
/// accepts it.
void expectSameAst(const std::string &text, const std::string &what) {
  Outcome fast = parseWith(text, false);
  Outcome tree = parseWith(text, true);
  if (!tree.ok)
    return; // a syntax or literal error: reported by the reporting pass
  if (fast.errors.find("brackets nested too deeply") != std::string::npos)
    return; // the lexical pass before both bounds the nesting
  ASSERT_TRUE(fast.ok) << what << ": " << fast.errors;
  EXPECT_EQ(fast.path, ParsePath::Fast) << what;
  EXPECT_EQ(fast.ast, tree.ast) << what;
}

TEST(DirectParser, BuildsWhatTheParseTreeBuilds) {
  expectSameAst(R"(
dim N: dynamic;
fn g(var: f32[N], k: int = 2 * 3) -> (f32[N], int) {
  let (a, b,) = (var, k,);
  let c: f32[N] = -!-a ** -b ** 2 ** c;
  var d = [1, 2.5e3, true, false, "s\"t\n", [], [x,], (x)];
  var = var + 1;
  d[0] = a @ b * c / d % e - f + g & h ^ i | j == k && l < m || n;
  d[1:2, :, ::2, 1:, :3:, 0] = x[0].T(y, z = 1, var = 2,)(q,);
  for i in 0..N * 2 { check(i >= 0, "bad\\"); check(i != 1); }
  if a > b { return; } else if a <= b { f(); } else if c { } else { x; }
  if a { (a, b) = t; }
  return (a.b.c, x[-1]);
}
)",
                "constructs");
}

TEST(DirectParser, BuildsWhatTheParseTreeBuildsForEveryTslFile) {
  namespace fs = std::filesystem;
  size_t files = 0;
  for (const char *dir : {"tests", "examples", "stdlib"}) {
    fs::path root = fs::path(TSL_SOURCE_DIR) / dir;
    if (!fs::exists(root))
      continue;
    for (const auto &entry : fs::recursive_directory_iterator(root)) {
      if (entry.path().extension() != ".tsl" || !entry.is_regular_file())
        continue;
      std::ifstream in(entry.path(), std::ios::binary);
      std::stringstream text;
      text << in.rdbuf();
      expectSameAst(text.str(), entry.path().string());
      ++files;
    }
  }
  EXPECT_GT(files, 100u);
}

TEST(DirectParser, ALongPowerChainIsAnErrorNotACrash) {
  std::string text = "fn f(x: f32[4]) -> f32[4] { return x";
  for (int i = 0; i < 100000; ++i)
    text += " ** x";
  text += "; }";
  Outcome fast = parseWith(text, false);
  EXPECT_FALSE(fast.ok);
  EXPECT_NE(fast.errors.find("nested too deeply"), std::string::npos)
      << fast.errors;
}

} // namespace
