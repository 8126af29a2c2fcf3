// What the loop hoisting passes share (LoopHoisting.h).
#include "ir/LoopHoisting.h"
#include "ir/OpInfo.h"

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

} // namespace

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
        addAttrSymbols(attr, i + 1, first);
    for (ValueId r : op.results)
      for (const SymExpr &d : fn.type(r).dims)
        addSymbols(d.symbols(), i + 1, first);
  }
  return first;
}

std::vector<std::string> attrSymbols(const Attr &a) {
  std::map<std::string, size_t> names;
  addAttrSymbols(a, 0, names);
  std::vector<std::string> out;
  for (const auto &[name, at] : names)
    out.push_back(name);
  return out;
}

bool knownBefore(const std::vector<std::string> &names, size_t at,
                 const std::map<std::string, size_t> &first) {
  for (const std::string &n : names)
    if (auto it = first.find(n); it == first.end() || it->second > at)
      return false;
  return true;
}

size_t
hoistOutOfLoops(Function &fn,
                const std::function<HoistRule(const Function &)> &makeRule) {
  size_t total = 0;
  while (true) {
    HoistRule rule = makeRule(fn);
    std::vector<size_t> open;                        // open loop ops
    std::map<size_t, std::vector<Operation>> before; // by loop op index
    std::vector<bool> moved(fn.ops.size(), false);
    for (size_t i = 0; i < fn.ops.size(); ++i) {
      OpCode code = fn.ops[i].code;
      if (code == OpCode::Loop)
        open.push_back(i);
      else if (code == OpCode::EndLoop)
        open.pop_back();
      if (open.empty() || isLoopMarker(code))
        continue;
      if (std::optional<Operation> op = rule(i, open.back())) {
        before[open.back()].push_back(std::move(*op));
        moved[i] = true;
      }
    }
    if (before.empty())
      return total;
    std::vector<Operation> ops;
    for (size_t i = 0; i < fn.ops.size(); ++i) {
      if (auto it = before.find(i); it != before.end())
        for (Operation &op : it->second) {
          ops.push_back(std::move(op));
          ++total;
        }
      if (!moved[i])
        ops.push_back(std::move(fn.ops[i]));
    }
    fn.ops = std::move(ops);
  }
}

} // namespace tsl
