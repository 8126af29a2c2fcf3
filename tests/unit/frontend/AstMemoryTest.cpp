// The AST's layout and allocation (issue 31: `tslc check` of a 120,000-line
// function under 1 KB per op). An expression and a statement are bounded in
// size, and a parsed file's expressions and lists come from its arena, on
// both parse paths.
#include "frontend/Ast.h"
#include "frontend/Parser.h"

#include <gtest/gtest.h>
#include <sstream>

using namespace tsl;

// ~360,000 expressions and 120,000 statements in a 120,000-line function:
// each byte here is 0.36 / 0.12 MB. Grow these only with a reason.
static_assert(sizeof(ast::Expr) <= 96, "ast::Expr grew");
static_assert(sizeof(ast::Stmt) <= 112, "ast::Stmt grew");
static_assert(sizeof(CompactVector<ast::ExprPtr>) == sizeof(void *),
              "CompactVector is one pointer");
static_assert(sizeof(ast::ExprPtr) == sizeof(void *), "ExprPtr is one pointer");

namespace {

const char *kSource = R"(dim N: dynamic;
fn f(x: f32[N], w: f32[N]) -> f32[N] {
  let a = -x + w * 2.0;
  let (b, c) = (a[0:N], a);
  var s = sum(b, axis=0);
  for i in 0..3 { s = s + 1.0; }
  if N > 2 { check(N > 0, "positive"); }
  return c + s;
}
)";

/// Every expression of \p e (itself included) in \p out.
void collect(const ast::Expr *e, std::vector<const ast::Expr *> &out) {
  if (!e)
    return;
  out.push_back(e);
  for (const ast::ExprPtr &o : e->operands)
    collect(o.get(), out);
  for (const ast::Arg &a : e->args)
    collect(a.value.get(), out);
  for (const ast::SliceItem &s : e->slices) {
    collect(s.start.get(), out);
    collect(s.stop.get(), out);
    collect(s.step.get(), out);
    collect(s.index.get(), out);
  }
}

void collect(const ast::Block &b, std::vector<const ast::Expr *> &out) {
  for (const ast::Stmt &st : b.stmts) {
    for (const ast::Expr *e : {st.value.get(), st.cond.get(), st.target.get(),
                               st.lo.get(), st.hi.get()})
      collect(e, out);
    for (const ast::ExprPtr &c : st.conds)
      collect(c.get(), out);
    for (const auto &inner : st.blocks)
      collect(*inner, out);
  }
}

void expectAllInArena(const ast::Module &m) {
  std::vector<const ast::Expr *> all;
  for (const ast::FnDecl &fn : m.fns)
    collect(fn.body, all);
  ASSERT_GT(all.size(), 20u);
  for (const ast::Expr *e : all)
    EXPECT_TRUE(e->inArena);
  EXPECT_GT(m.arena->capacity(), 0u);
  EXPECT_EQ(currentAstArena(), nullptr); // the parse's scope ended
}

TEST(AstMemory, FastPathAllocatesFromTheModulesArena) {
  SourceManager sm;
  std::ostringstream errs;
  DiagnosticEngine diags(sm, errs);
  uint32_t file = sm.addBuffer("t.tsl", kSource);
  ParsePath path;
  auto m = parseSource(sm, file, diags, &path);
  ASSERT_TRUE(m) << errs.str();
  EXPECT_EQ(path, ParsePath::Fast);
  expectAllInArena(*m);
}

TEST(AstMemory, ReportingPathAllocatesFromTheModulesArena) {
  SourceManager sm;
  std::ostringstream errs;
  DiagnosticEngine diags(sm, errs);
  uint32_t file = sm.addBuffer("t.tsl", kSource);
  auto m = parseSourceReporting(sm, file, diags);
  ASSERT_TRUE(m) << errs.str();
  expectAllInArena(*m);
}

TEST(AstMemory, OutsideAParseExpressionsComeFromTheHeap) {
  ast::ExprPtr e = ast::newExpr();
  EXPECT_FALSE(e->inArena);
  e->operands.push_back(ast::newExpr());
  e->text = std::string(40, 'n'); // a heap string, freed with the node
  BumpArena arena;
  {
    AstArenaScope scope(&arena);
    ast::ExprPtr a = ast::newExpr();
    EXPECT_TRUE(a->inArena);
    a->text = std::string(40, 'a');
    for (int i = 0; i < 100; ++i) // grows within the arena
      a->operands.push_back(ast::newExpr());
    e->operands.push_back(std::move(a)); // destroyed, not freed, with e
  }
  EXPECT_EQ(e->operands.size(), 2u);
  e.reset();
}

} // namespace
