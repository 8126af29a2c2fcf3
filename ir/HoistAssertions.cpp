#include "ir/HoistAssertions.h"

#include <map>
#include <optional>
#include <string>
#include <type_traits>

namespace tsl {
namespace {

void addSymbols(const std::vector<std::string> &names, size_t at,
                std::map<std::string, size_t> &first) {
  for (const std::string &n : names)
    first.emplace(n, at); // keeps the earliest mention
}

void addAttrSymbols(const Attr &a, size_t at,
                    std::map<std::string, size_t> &first) {
  std::visit(
      [&](const auto &v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, SymExpr> || std::is_same_v<T, SymCond>)
          addSymbols(v.symbols(), at, first);
        else if constexpr (std::is_same_v<T, std::vector<SymExpr>>)
          for (const SymExpr &e : v)
            addSymbols(e.symbols(), at, first);
      },
      a);
}

/// The index of the op that first mentions each symbol; backed dims and
/// int parameters (known before any op) map to 0. A size bound inside a
/// loop body (an unbacked size, the loop variable) is first mentioned by
/// the op that binds it: scoping keeps every other mention after it.
std::map<std::string, size_t> firstMentions(const Function &fn) {
  std::map<std::string, size_t> first;
  for (const SymbolInfo &s : fn.symbols)
    if (s.kind != DimKind::Unbacked && !s.loopVariable)
      first.emplace(s.name, 0);
  for (ValueId p = 0; p < fn.values.size(); ++p)
    if (!fn.values[p].name.empty())
      for (const SymExpr &d : fn.values[p].type.dims)
        addSymbols(d.symbols(), 0, first);
  for (size_t i = 0; i < fn.ops.size(); ++i) {
    const Operation &op = fn.ops[i];
    for (const auto &[name, attr] : op.attrs)
      if (op.code != OpCode::Assert)
        addAttrSymbols(attr, i, first);
    for (ValueId r : op.results)
      for (const SymExpr &d : fn.type(r).dims)
        addSymbols(d.symbols(), i, first);
  }
  return first;
}

/// Moves every assertion that can leave its innermost loop to just before
/// that loop (one level out); returns how many moved. The first mentions
/// are those of the op list before the pass, which the moves keep valid:
/// an assertion mentions nothing it would move ahead of.
size_t hoistOneLevel(Function &fn, const ShapeEnv *env) {
  std::map<std::string, size_t> first = firstMentions(fn);
  std::vector<size_t> open; // indices of the open loop ops
  std::map<size_t, std::vector<Operation>> before; // by loop op index
  std::vector<bool> moved(fn.ops.size(), false);
  for (size_t i = 0; i < fn.ops.size(); ++i) {
    const Operation &op = fn.ops[i];
    if (op.code == OpCode::Loop)
      open.push_back(i);
    else if (op.code == OpCode::EndLoop)
      open.pop_back();
    if (op.code != OpCode::Assert || open.empty())
      continue;
    size_t loopAt = open.back();
    bool invariant = true;
    for (const std::string &s : op.condAttr("cond").symbols()) {
      auto it = first.find(s);
      invariant &= it != first.end() && it->second < loopAt;
    }
    if (!invariant)
      continue;
    const Operation &loop = fn.ops[loopAt];
    SymCond runs = SymCond::lt(loop.exprAttr("lo"), loop.exprAttr("hi"));
    Operation hoisted = op;
    if (!env || env->prove(runs) != Truth::True)
      hoisted.attrs["cond"] =
          SymCond::disj(SymCond::negate(runs), op.condAttr("cond"));
    before[loopAt].push_back(std::move(hoisted));
    moved[i] = true;
  }
  if (before.empty())
    return 0;
  std::vector<Operation> ops;
  size_t count = 0;
  for (size_t i = 0; i < fn.ops.size(); ++i) {
    if (auto it = before.find(i); it != before.end())
      for (Operation &a : it->second) {
        ops.push_back(std::move(a));
        ++count;
      }
    if (!moved[i])
      ops.push_back(std::move(fn.ops[i]));
  }
  fn.ops = std::move(ops);
  return count;
}

} // namespace

size_t hoistLoopInvariantAssertions(Function &fn, const ShapeEnv *env) {
  size_t moved = 0;
  while (size_t n = hoistOneLevel(fn, env))
    moved += n;
  return moved;
}

} // namespace tsl
