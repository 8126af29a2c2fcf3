#pragma once
/// \file The TSL abstract syntax tree. Every node carries its source range.
/// Binary operators of one precedence level are one n-ary node and prefix
/// operators one run; the parser also bounds the depth of every expression
/// tree (kMaxExprDepth, postfix chains such as `x[0][0]...` included), so no
/// recursive walk of the AST can overflow the stack.

#include "frontend/CompactVector.h"
#include "shapes/ShapeEnv.h"
#include "support/Arena.h"
#include "support/SourceManager.h"

#include <algorithm>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tsl::ast {

struct Expr;
/// Destroys an expression and frees it unless it came from an arena.
struct ExprDeleter {
  void operator()(Expr *e) const;
};
/// An owned expression: from the current AST arena (support/Arena.h) while
/// a file is parsed, else from the heap.
using ExprPtr = std::unique_ptr<Expr, ExprDeleter>;
/// A fresh expression (from the current AST arena when there is one).
ExprPtr newExpr();

/// A named argument or a positional one (empty name).
struct Arg {
  std::string name;
  SourceRange nameRange;
  ExprPtr value;
};

/// One item of a subscript: `i`, or `a:b` or `a:b:s` with any part
/// omitted.
struct SliceItem {
  bool isRange = false;
  ExprPtr start, stop, step; // range bounds and step (may be null)
  ExprPtr index;             // single index
  SourceRange range;
};

/// An operator of a Chain or Prefix node: its spelling, shared by every
/// node, and where it is.
class Operator {
public:
  Operator(std::string_view spelling, SourceRange range)
      : range(range), spelling_(intern(spelling)) {}
  /// The spelling ("+", "**", "!", ...).
  const std::string &text() const { return *spelling_; }
  operator const std::string &() const { return *spelling_; }
  SourceRange range;

private:
  static const std::string *intern(std::string_view s) {
    static const std::string kSpellings[] = {
        "||", "&&", "==", "!=", "<", "<=", ">",  ">=", "|", "^", "&",
        "+",  "-",  "*",  "/",  "%", "@",  "**", "!",  ".", "?"};
    for (const std::string &k : kSpellings)
      if (k == s)
        return &k;
    return &kSpellings[std::size(kSpellings) - 1];
  }
  const std::string *spelling_;
};

/// Expressions. Lists are CompactVectors and the literal values share
/// storage: a node is 96 bytes (a 120,000-line function has ~360,000).
struct Expr {
  enum class Kind : uint8_t {
    IntLit,    ///< intValue
    FloatLit,  ///< floatValue
    BoolLit,   ///< boolValue
    StringLit, ///< text
    Name,      ///< text
    Chain,  ///< operands[0] ops[0] operands[1] ...; ops are "+", "@", "<", ...
    Prefix, ///< ops applied right-to-left to operands[0]
    Call,   ///< callee operands[0], args
    Member, ///< operands[0] . text
    Index,  ///< operands[0] [ slices ]
    Tuple,  ///< (a, b, ...)
    List,   ///< [a, b, ...]
    Paren,  ///< (a)
  };
  Kind kind;
  /// Allocated by newExpr from an arena (ExprDeleter does not free it).
  bool inArena = false;
  /// 1 for a leaf, else 1 + the deepest operand, argument or slice bound
  /// (at most kMaxExprDepth; set by the parser).
  uint32_t depth = 1;
  SourceRange range;
  union {
    int64_t intValue = 0; ///< IntLit
    double floatValue;    ///< FloatLit
    bool boolValue;       ///< BoolLit
  };
  std::string text;
  CompactVector<ExprPtr> operands;
  /// Chain: ops[i] between operands[i] and operands[i + 1]; Prefix: the
  /// run; Member: "." at the member's name.
  CompactVector<Operator> ops;
  CompactVector<Arg> args;
  CompactVector<SliceItem> slices;
};

inline void ExprDeleter::operator()(Expr *e) const {
  bool inArena = e->inArena;
  e->~Expr();
  if (!inArena)
    ::operator delete(e);
}

inline ExprPtr newExpr() {
  BumpArena *arena = currentAstArena();
  void *raw = arena ? arena->allocate(sizeof(Expr), alignof(Expr))
                    : ::operator new(sizeof(Expr));
  Expr *e = new (raw) Expr();
  e->inArena = arena != nullptr;
  return ExprPtr(e);
}

/// 1 + the depth of \p e's deepest child (operands, argument values, slice
/// bounds and indices): what the parsers store in Expr::depth.
inline uint32_t depthFromChildren(const Expr &e) {
  uint32_t d = 0;
  auto see = [&](const ExprPtr &x) {
    if (x)
      d = std::max(d, x->depth);
  };
  for (const ExprPtr &o : e.operands)
    see(o);
  for (const Arg &a : e.args)
    see(a.value);
  for (const SliceItem &si : e.slices) {
    see(si.start);
    see(si.stop);
    see(si.step);
    see(si.index);
  }
  return d + 1;
}

/// `dim X: dynamic in 1..8, multiple_of 4` (also used for inline dims).
struct DimSpec {
  DimKind kind = DimKind::Dynamic;
  std::optional<int64_t> lo, hi;
  int64_t multipleOf = 1;
  SourceRange range;
};

/// One entry of a tensor type's dim list.
struct TypeDim {
  enum class Kind { Expr, Pack, Inline, Unknown };
  Kind kind = Kind::Expr;
  std::string name; // Pack, Inline
  ExprPtr expr;     // Expr
  DimSpec spec;     // Inline
  SourceRange range;
};

/// `f32[B, 784]`, `f32`, `int`, `int dynamic`.
struct TypeExpr {
  std::string base; // element type name or "int"
  bool hasDims = false;
  std::optional<DimKind> intKind;
  std::vector<TypeDim> dims;
  SourceRange range;
  SourceRange baseRange;
};

struct Param {
  std::string name;
  SourceRange nameRange;
  TypeExpr type;
  ExprPtr defaultValue;
};

/// `T: float` in `fn f<T: float>(...)`: an element-type parameter. The
/// parser accepts any bound name; elaboration rejects a bound other than
/// `float` and a parameter no value parameter's type uses.
struct TypeParam {
  std::string name;
  SourceRange nameRange;
  std::string bound;
  SourceRange boundRange;
};

/// A string that is rarely set (a check's message), held out of line: one
/// pointer, none allocated while empty. Reads as a const std::string&.
class BoxedString {
public:
  BoxedString() = default;
  BoxedString(BoxedString &&) = default;
  BoxedString &operator=(BoxedString &&) = default;
  BoxedString &operator=(std::string s) {
    p_ = s.empty() ? nullptr : std::make_unique<std::string>(std::move(s));
    return *this;
  }
  operator const std::string &() const { return str(); }
  const std::string &str() const { return p_ ? *p_ : emptyString(); }
  bool empty() const { return !p_; }
  friend std::string operator+(const std::string &a, const BoxedString &b) {
    return a + b.str();
  }
  friend std::string operator+(const char *a, const BoxedString &b) {
    return a + b.str();
  }
  friend std::string operator+(const BoxedString &a, const std::string &b) {
    return a.str() + b;
  }
  friend std::string operator+(const BoxedString &a, const char *b) {
    return a.str() + b;
  }

private:
  static const std::string &emptyString() {
    static const std::string empty;
    return empty;
  }
  std::unique_ptr<std::string> p_;
};

struct Block;

/// A statement (120,000 of them in a 120,000-line function: 112 bytes
/// each, the check message out of line).
struct Stmt {
  /// Var: `var NAME (: TYPE)? = value;` (names[0], ascription, value).
  /// Assign: `target = value;` (target a name or a subscript of one).
  /// For: `for NAME in lo..hi { blocks[0] }` (names[0]).
  enum class Kind : uint8_t {
    Let,
    Var,
    Assign,
    For,
    Check,
    If,
    Return,
    ExprStmt
  };
  Kind kind;
  bool tuplePattern = false; // Let
  bool hasMessage = false;   // Check
  SourceRange range;
  // Let, Var, For
  CompactVector<std::string> names;
  CompactVector<SourceRange> nameRanges;
  std::unique_ptr<TypeExpr> ascription; // may be null
  ExprPtr value; // Let value, Return value (may be null), ExprStmt
  // Check
  ExprPtr cond;
  BoxedString message;
  // Assign
  ExprPtr target;
  // For
  ExprPtr lo, hi;
  // If: conds[i] guards blocks[i]; an else block is the extra last block.
  // For: blocks[0] is the body.
  CompactVector<ExprPtr> conds;
  CompactVector<std::unique_ptr<Block>> blocks;
};

struct Block {
  std::vector<Stmt> stmts;
  SourceRange range;
};

struct FnDecl {
  std::string name;
  SourceRange nameRange;
  /// `<T: float>`: element types the function is generic over (in order).
  std::vector<TypeParam> typeParams;
  std::vector<Param> params;
  std::vector<TypeExpr> results;
  bool tupleResult = false;
  bool hasResult = false;
  Block body;
  SourceRange range;
};

struct DimDecl {
  std::string name;
  SourceRange nameRange;
  ExprPtr value; // `dim D = 768;`
  DimSpec spec;
  SourceRange range;
};

struct ImportDecl {
  std::string name; // stdlib module name, or the alias
  std::string path; // relative path (empty for stdlib)
  SourceRange range;
};

/// One parsed file.
struct Module {
  /// Where its expressions and AST lists were allocated (support/Arena.h):
  /// the first member, so the last destroyed.
  std::unique_ptr<BumpArena> arena = std::make_unique<BumpArena>();
  std::string path;
  uint32_t file = 0;
  std::vector<ImportDecl> imports;
  std::vector<DimDecl> dims;
  std::vector<FnDecl> fns;
};

} // namespace tsl::ast
