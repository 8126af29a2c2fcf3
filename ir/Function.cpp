#include "ir/Function.h"
#include "support/Error.h"

#include <algorithm>
#include <cassert>
#include <mutex>
#include <unordered_set>

namespace tsl {

const std::string &FileName::emptyName() {
  static const std::string empty;
  return empty;
}

const std::string *FileName::intern(std::string_view s) {
  if (s.empty())
    return &emptyName();
  // Node-based: a name's address never changes. Never freed, so a
  // Location may outlive anything (static data included).
  static auto *names = new std::unordered_set<std::string>();
  static std::mutex mutex;
  std::lock_guard<std::mutex> lock(mutex);
  return &*names->emplace(s).first;
}

AttrMap::AttrMap(std::map<std::string, Attr> m) {
  items_.reserve(m.size());
  for (auto &[name, value] : m)
    items_.emplace_back(name, std::move(value));
}

AttrMap::AttrMap(std::initializer_list<value_type> items) {
  for (const value_type &item : items)
    (*this)[item.first] = item.second;
}

static bool nameBefore(const AttrMap::value_type &item, std::string_view name) {
  return item.first < name;
}

Attr &AttrMap::operator[](const std::string &name) {
  auto it = std::lower_bound(items_.begin(), items_.end(),
                             std::string_view(name), nameBefore);
  if (it == items_.end() || it->first != name)
    it = items_.emplace(it, name, Attr());
  return it->second;
}

AttrMap::iterator AttrMap::find(std::string_view name) {
  auto it = std::lower_bound(items_.begin(), items_.end(), name, nameBefore);
  return it != items_.end() && it->first == name ? it : items_.end();
}

AttrMap::const_iterator AttrMap::find(std::string_view name) const {
  auto it = std::lower_bound(items_.begin(), items_.end(), name, nameBefore);
  return it != items_.end() && it->first == name ? it : items_.end();
}

std::string Location::str() const {
  if (!isValid())
    return "<unknown>";
  return file + ":" + std::to_string(line) + ":" + std::to_string(col);
}

/// The attribute \p name of \p op when it holds a \p kind. Anything else is
/// a bug in the caller (a name the op does not have, a missing required
/// attribute, the wrong accessor): noted as an internal error (see
/// takeInternalError) and read as the type's default. An optional attribute
/// that is absent reads as the default without an error.
template <typename T>
static const T &getAttr(const Operation &op, const std::string &name,
                        const char *kind) {
  static const T empty{};
  auto it = op.attrs.find(name);
  const OpInfo &info = opInfo(op.code);
  if (it != op.attrs.end()) {
    if (const T *v = std::get_if<T>(&it->second))
      return *v;
    noteInternalError("attribute '" + name + "' of '" + info.name +
                      "' read as " + kind + ", which it is not");
    return empty;
  }
  for (const AttrSpec &spec : info.attrs) {
    if (spec.name != name)
      continue;
    if (spec.kind != kind)
      noteInternalError("attribute '" + name + "' of '" + info.name + "' is " +
                        spec.kind + ", read as " + kind);
    else if (!spec.optional)
      noteInternalError("'" + std::string(info.name) +
                        "' lacks its attribute '" + name + "'");
    return empty;
  }
  noteInternalError("'" + std::string(info.name) + "' has no attribute '" +
                    name + "'");
  return empty;
}

int64_t Operation::intAttr(const std::string &name) const {
  return getAttr<int64_t>(*this, name, "int");
}
bool Operation::boolAttr(const std::string &name) const {
  return getAttr<bool>(*this, name, "bool");
}
DType Operation::dtypeAttr(const std::string &name) const {
  return getAttr<DType>(*this, name, "dtype");
}
Number Operation::numAttr(const std::string &name) const {
  return getAttr<Number>(*this, name, "num");
}
SymExpr Operation::exprAttr(const std::string &name) const {
  return getAttr<SymExpr>(*this, name, "expr");
}
const std::vector<SymExpr> &
Operation::exprsAttr(const std::string &name) const {
  return getAttr<std::vector<SymExpr>>(*this, name, "exprs");
}
const std::vector<int64_t> &Operation::intsAttr(const std::string &name) const {
  return getAttr<std::vector<int64_t>>(*this, name, "ints");
}
const SymCond &Operation::condAttr(const std::string &name) const {
  return getAttr<SymCond>(*this, name, "cond");
}
const std::string &Operation::strAttr(const std::string &name) const {
  return getAttr<std::string>(*this, name, "str");
}

ValueId Function::addValue(TensorType type, std::string name) {
  values.push_back({std::move(type), std::move(name)});
  return static_cast<ValueId>(values.size() - 1);
}

const SymbolInfo *Function::symbol(const std::string &name) const {
  for (const SymbolInfo &s : symbols)
    if (s.name == name)
      return &s;
  return nullptr;
}

const Operation *opAtFailureIndex(const Function &fn, size_t index,
                                  const Function **owner) {
  const Function *holder = &fn;
  for (size_t k = 0; index >= holder->ops.size(); ++k) {
    if (k >= fn.callees.size())
      return nullptr;
    index -= holder->ops.size();
    holder = &fn.callees[k];
  }
  if (owner)
    *owner = holder;
  return &holder->ops[index];
}

size_t calleeFailureBase(const Function &fn, size_t k) {
  size_t base = fn.ops.size();
  for (size_t i = 0; i < k && i < fn.callees.size(); ++i)
    base += fn.callees[i].ops.size();
  return base;
}

const Function *Module::find(const std::string &name) const {
  for (const Function &f : functions)
    if (f.name == name)
      return &f;
  return nullptr;
}

static std::vector<AttrSpec> parseAttrSpecs(const char *text) {
  std::vector<AttrSpec> out;
  std::string s(text);
  size_t pos = 0;
  while (pos < s.size()) {
    size_t comma = s.find(',', pos);
    if (comma == std::string::npos)
      comma = s.size();
    std::string item = s.substr(pos, comma - pos);
    size_t colon = item.find(':');
    AttrSpec spec;
    spec.name = item.substr(0, colon);
    spec.kind = item.substr(colon + 1);
    if (!spec.kind.empty() && spec.kind.back() == '?') {
      spec.optional = true;
      spec.kind.pop_back();
    }
    out.push_back(spec);
    pos = comma + 1;
  }
  return out;
}

const std::vector<OpInfo> &allOps() {
  static const std::vector<OpInfo> table = [] {
    std::vector<OpInfo> t;
#define TSL_OP(Id, Name, MinOps, MaxOps, Results, Attrs, Category, Operands,   \
               Same, Result, Effects, Builtin, Diff, How, Doc)                 \
  t.push_back({OpCode::Id, Name, MinOps, MaxOps, Results,                      \
               parseAttrSpecs(Attrs), Doc});
#include "ir/Ops.def"
    return t;
  }();
  return table;
}

const OpInfo &opInfo(OpCode code) {
  return allOps()[static_cast<size_t>(code)];
}

std::optional<OpCode> lookupOp(std::string_view name) {
  for (const OpInfo &info : allOps())
    if (name == info.name)
      return info.code;
  return std::nullopt;
}

} // namespace tsl
