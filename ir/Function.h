#pragma once
/// \file The tensor IR: a function is a flat list of operations in SSA form
/// over tensor values whose types use symbolic dims. Calls and `if`s are
/// resolved during elaboration; the control flow left is structured loops
/// (loop/end_loop) and calls of callees that repeated calls were outlined
/// into (ir/OutlineCalls.h).

#include "ir/OpInfo.h"
#include "ir/Type.h"
#include "shapes/ShapeEnv.h"

#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace tsl {

/// A file name as Locations hold it: one pointer to a process-wide copy of
/// each distinct name (never freed; a program names few files). Every op
/// held its own copy of its file's path, 64 bytes per op for a path longer
/// than 15 characters. Reads as a const std::string&.
class FileName {
public:
  FileName() : s_(&emptyName()) {}
  FileName(std::string_view s) : s_(intern(s)) {}
  FileName(const std::string &s) : s_(intern(s)) {}
  FileName(const char *s) : s_(intern(s)) {}
  operator const std::string &() const { return *s_; }
  const std::string &str() const { return *s_; }
  bool empty() const { return s_->empty(); }
  size_t size() const { return s_->size(); }
  const char *c_str() const { return s_->c_str(); }
  friend bool operator==(const FileName &a, const FileName &b) {
    return a.s_ == b.s_;
  }
  friend bool operator==(const FileName &a, const std::string &b) {
    return *a.s_ == b;
  }
  friend bool operator==(const FileName &a, const char *b) {
    return *a.s_ == b;
  }
  friend std::string operator+(const FileName &a, const std::string &b) {
    return *a.s_ + b;
  }
  friend std::string operator+(const std::string &a, const FileName &b) {
    return a + *b.s_;
  }

private:
  static const std::string &emptyName();
  static const std::string *intern(std::string_view s);
  const std::string *s_;
};

/// A source position that survives printing and parsing of the IR.
struct Location {
  FileName file;
  unsigned line = 0;
  unsigned col = 0;
  unsigned length = 0;
  bool isValid() const { return line != 0; }
  /// `file:line:col`.
  std::string str() const;
  bool operator==(const Location &) const = default;
};

/// A number attribute that remembers whether it was written as an integer.
struct Number {
  double f = 0;
  int64_t i = 0;
  bool isInt = false;
  static Number ofInt(int64_t v) { return {static_cast<double>(v), v, true}; }
  static Number ofFloat(double v) {
    return {v, static_cast<int64_t>(0), false};
  }
  bool operator==(const Number &o) const {
    return isInt == o.isInt &&
           (isInt ? i == o.i : (f == o.f || (f != f && o.f != o.f)));
  }
};

using Attr = std::variant<int64_t, double, Number, bool, DType, SymExpr,
                          std::vector<SymExpr>, std::vector<int64_t>, SymCond,
                          std::string>;

using ValueId = uint32_t;

/// One SSA value: a tensor with a (symbolic) type.
struct Value {
  TensorType type;
  /// Parameter name for parameters; empty otherwise.
  std::string name;
};

/// An op's attributes: (name, value) pairs sorted by name, so printing is
/// deterministic; the part of std::map's interface the IR uses, in one
/// vector (a std::map is 48 bytes per op and a node per attribute).
class AttrMap {
public:
  using value_type = std::pair<std::string, Attr>;
  using iterator = std::vector<value_type>::iterator;
  using const_iterator = std::vector<value_type>::const_iterator;

  AttrMap() = default;
  /// From a std::map (kept for tests and callers that build one).
  AttrMap(std::map<std::string, Attr> m);
  AttrMap(std::initializer_list<value_type> items);

  /// The attribute \p name, default-constructed (int64_t 0) when absent.
  Attr &operator[](const std::string &name);
  iterator find(std::string_view name);
  const_iterator find(std::string_view name) const;
  size_t count(std::string_view name) const { return find(name) != end(); }
  iterator begin() { return items_.begin(); }
  iterator end() { return items_.end(); }
  const_iterator begin() const { return items_.begin(); }
  const_iterator end() const { return items_.end(); }
  bool empty() const { return items_.empty(); }
  size_t size() const { return items_.size(); }

private:
  std::vector<value_type> items_; ///< sorted by name, names distinct
};

/// One operation.
struct Operation {
  OpCode code;
  std::vector<ValueId> operands;
  std::vector<ValueId> results;
  AttrMap attrs;
  Location loc;

  /// Typed attribute access. The name must be an attribute of this op (its
  /// Ops.def spec) read with the accessor of its kind: int, bool, dtype,
  /// num, expr, exprs, ints, cond, str. A misuse (unknown name, wrong
  /// kind, a required attribute that is missing) is an internal error,
  /// noted for the thread (support/Error.h: takeInternalError, which shape
  /// rules, the verifier, the interpreter and the JIT check) and read as
  /// the type's default; an absent optional attribute reads as the default.
  int64_t intAttr(const std::string &name) const;
  bool boolAttr(const std::string &name) const;
  DType dtypeAttr(const std::string &name) const;
  Number numAttr(const std::string &name) const;
  SymExpr exprAttr(const std::string &name) const;
  const std::vector<SymExpr> &exprsAttr(const std::string &name) const;
  const std::vector<int64_t> &intsAttr(const std::string &name) const;
  const SymCond &condAttr(const std::string &name) const;
  const std::string &strAttr(const std::string &name) const;
};

/// A guard or assertion as the IR keeps it.
struct Check {
  SymCond cond;
  Location loc;
  std::string op;
  std::string reason;
};

/// One parameter of a compiled function: a tensor value or an `int`.
struct Param {
  std::string name;
  bool isInt = false;
  ValueId value = 0; ///< tensor parameters
  SymExpr intExpr;   ///< int parameters: a symbol or a constant
  /// The caller donates the argument's buffer (JAX's donate_argnums): the
  /// call may write into it once nothing reads its old contents, and a
  /// result may be returned in it (KernelPlan::writesInto, in-place
  /// update_slice). Set on the function being compiled, never on callees.
  bool donated = false;
};

/// A compiled variant of a TSL function.
struct Function {
  std::string name;
  std::vector<Param> params;
  std::vector<ValueId> results;
  std::vector<Value> values;
  std::vector<Operation> ops;
  /// Every symbol the function mentions: input dims, int parameters and
  /// unbacked sizes produced inside.
  std::vector<SymbolInfo> symbols;
  /// Conditions a call's sizes must meet for this variant (dispatch).
  std::vector<Check> guards;
  /// `auto` dims and int parameters this variant specialized to the
  /// value of the call it was compiled for (automatic dynamic watches them).
  std::map<std::string, int64_t> specialized;
  /// For each tensor parameter (in order) the dim name of each axis, ""
  /// when the axis is an expression; lets a runtime read a call's value of
  /// each named dim.
  std::vector<std::vector<std::string>> axisNames;
  /// Functions this one calls (`call` ops name them by index): bodies of
  /// repeated calls outlined once (ir/OutlineCalls.h). A callee reads its
  /// caller's symbols (its `symbols` are a copy) and has no guards and no
  /// callees of its own.
  std::vector<Function> callees;

  ValueId addValue(TensorType type, std::string name = {});
  const TensorType &type(ValueId v) const { return values[v].type; }
  const SymbolInfo *symbol(const std::string &name) const;
};

/// Generated code names a failing op by one index (tsl_rt_fail): the
/// function's own ops first, then each callee's in order. The op at
/// \p index, or null past them all; \p owner (when given) receives the
/// function that holds it (its values are that function's).
const Operation *opAtFailureIndex(const Function &fn, size_t index,
                                  const Function **owner = nullptr);
/// The failure index of the first op of callee \p k of \p fn.
size_t calleeFailureBase(const Function &fn, size_t k);

/// A set of functions (for example the variants compiled from one file).
struct Module {
  std::vector<Function> functions;
  const Function *find(const std::string &name) const;
};

/// One attribute of an op as Ops.def declares it.
struct AttrSpec {
  std::string name;
  /// int float num bool dtype expr exprs ints cond str.
  std::string kind;
  /// May be absent (then its accessor reads the type's default).
  bool optional = false;
};
/// Static description of one op (from Ops.def): the operand and result
/// counts, attributes and documentation the verifier, printer and parser
/// use. Categories, element types and effects are in OpTraits (OpInfo.h).
struct OpInfo {
  OpCode code;
  const char *name;
  int minOperands;
  int maxOperands; ///< -1 for variadic
  int numResults;  ///< -1: one per operand (loop, end_loop); -2: the callee's
  std::vector<AttrSpec> attrs;
  const char *doc;
};

/// The description of \p code (a valid OpCode).
const OpInfo &opInfo(OpCode code);
/// Looks an op up by its IR name ("add", "reduce_sum").
std::optional<OpCode> lookupOp(std::string_view name);
/// All ops, in table order.
const std::vector<OpInfo> &allOps();

} // namespace tsl
