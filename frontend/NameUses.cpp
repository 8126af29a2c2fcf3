// Counting the names a function body spells (NameUses.h).
#include "frontend/NameUses.h"

#include <algorithm>

namespace tsl {

namespace {

template <typename F> void visitExpr(const ast::Expr *e, F &see);

template <typename F> void visitType(const ast::TypeExpr &t, F &see) {
  for (const ast::TypeDim &d : t.dims) {
    if (!d.name.empty())
      see(d.name);
    visitExpr(d.expr.get(), see);
  }
}

template <typename F> void visitExpr(const ast::Expr *e, F &see) {
  if (!e)
    return;
  if (e->kind == ast::Expr::Kind::Name || e->kind == ast::Expr::Kind::Member)
    see(e->text);
  for (const ast::ExprPtr &o : e->operands)
    visitExpr(o.get(), see);
  for (const ast::Arg &a : e->args)
    visitExpr(a.value.get(), see);
  for (const ast::SliceItem &s : e->slices) {
    visitExpr(s.start.get(), see);
    visitExpr(s.stop.get(), see);
    visitExpr(s.step.get(), see);
    visitExpr(s.index.get(), see);
  }
}

template <typename F> void visitStmt(const ast::Stmt &st, F &see) {
  if (st.ascription)
    visitType(*st.ascription, see);
  visitExpr(st.value.get(), see);
  visitExpr(st.cond.get(), see);
  visitExpr(st.target.get(), see);
  visitExpr(st.lo.get(), see);
  visitExpr(st.hi.get(), see);
  for (const ast::ExprPtr &c : st.conds)
    visitExpr(c.get(), see);
  for (const std::unique_ptr<ast::Block> &b : st.blocks)
    for (const ast::Stmt &inner : b->stmts)
      visitStmt(inner, see);
}

} // namespace

NameUses::NameUses(const ast::Block &body) {
  std::vector<std::string_view> all;
  auto see = [&](std::string_view name) { all.push_back(name); };
  for (const ast::Stmt &st : body.stmts)
    visitStmt(st, see);
  std::sort(all.begin(), all.end());
  for (std::string_view name : all)
    if (!counts_.empty() && counts_.back().first == name)
      ++counts_.back().second;
    else
      counts_.emplace_back(name, 1);
}

std::vector<std::string_view> NameUses::finished(const ast::Stmt &st) {
  std::vector<std::string_view> done;
  auto see = [&](std::string_view name) {
    auto it = std::lower_bound(
        counts_.begin(), counts_.end(), name,
        [](const auto &entry, std::string_view n) { return entry.first < n; });
    if (it != counts_.end() && it->first == name && it->second > 0 &&
        --it->second == 0)
      done.push_back(name);
  };
  visitStmt(st, see);
  return done;
}

} // namespace tsl
