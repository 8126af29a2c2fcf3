#pragma once
/// \file Private to frontend/: the elaborator's state and helpers.

#include "frontend/Elaborator.h"
#include "frontend/NameUses.h"
#include "ir/OutlineCalls.h"
#include "ir/ShapeRules.h"

#include <map>
#include <set>
#include <string>
#include <vector>

namespace tsl {

/// A compile-time value during elaboration.
struct SemValue {
  enum class Kind {
    None,
    Tensor,
    Int,
    Float,
    Cond,
    Tuple,
    List,
    String,
    DType,
    Module,
    Fn,
    Builtin,
    Shape
  };
  Kind kind = Kind::None;
  ValueId tensor = 0;
  SymExpr i;
  double f = 0;
  SymCond c;
  std::vector<SemValue> elems; // Tuple, List, Shape (Ints)
  std::string s;               // String, Builtin name
  DType dtype = DType::F32;
  const LoadedModule *module = nullptr; // Module, Fn
  const ast::FnDecl *fn = nullptr;
  SourceRange range;
  /// How deeply tuples/lists (Tuple, List) or `&&`/`||`/`!` (Cond) are nested
  /// in this value (0 for a leaf). Values are built from earlier values
  /// (`let c = c0 && c0;` repeated), so the bound is checked as they grow:
  /// copying, printing and negating them recurse.
  uint32_t nest = 0;

  static SemValue ofTensor(ValueId v, SourceRange r) {
    SemValue s;
    s.kind = Kind::Tensor;
    s.tensor = v;
    s.range = r;
    return s;
  }
  static SemValue ofInt(SymExpr e, SourceRange r) {
    SemValue s;
    s.kind = Kind::Int;
    s.i = e;
    s.range = r;
    return s;
  }
  static SemValue ofFloat(double v, SourceRange r) {
    SemValue s;
    s.kind = Kind::Float;
    s.f = v;
    s.range = r;
    return s;
  }
  static SemValue ofCond(SymCond c, SourceRange r) {
    SemValue s;
    s.kind = Kind::Cond;
    s.c = c;
    s.range = r;
    return s;
  }
};

const char *kindName(SemValue::Kind k);

/// The deepest nesting of eval, evalDimExpr and execBlock accepted, counted
/// across inlined calls (an AST is at most kMaxExprDepth deep, but calls nest
/// up to 64 bodies). Deeper elaboration is an error instead of a stack
/// overflow.
constexpr unsigned kMaxEvalDepth = 1000;
/// The deepest nesting of tuples, lists or condition operators in a value.
constexpr unsigned kMaxValueNesting = 256;

/// One inlined function body being elaborated.
struct Frame {
  const LoadedModule *module = nullptr;
  const ast::FnDecl *decl = nullptr;
  std::vector<std::map<std::string, SemValue>> scopes;
  std::map<std::string, SymExpr> dims;
  std::map<std::string, std::vector<SymExpr>> packs;
  /// The names declared with `var` (scope index, name): assignable.
  std::set<std::pair<size_t, std::string>> vars;
  /// Open `for` bodies of this function (a `return` inside one is an error).
  unsigned loops = 0;
  /// Bound type parameters: `T` -> its element type and what bound it
  /// ("argument 'x'"), for mismatch messages.
  std::map<std::string, std::pair<DType, std::string>> typeArgs;
  /// Leaves the innermost scope, forgetting which of its names were vars.
  void popScope() {
    scopes.pop_back();
    while (!vars.empty() && vars.rbegin()->first >= scopes.size())
      vars.erase(std::prev(vars.end()));
  }
  /// The name counts of the function's body (\p usesBody) when it is long
  /// enough to count (NameUses.h): after each of its statements the
  /// bindings that no later statement reads are dropped.
  NameUses *uses = nullptr;
  const ast::Block *usesBody = nullptr;
  /// Drops \p st's last reads' bindings, if \p st is a statement of
  /// usesBody.
  void finished(const ast::Block &block, const ast::Stmt &st) {
    if (!uses || &block != usesBody)
      return;
    for (std::string_view name : uses->finished(st)) {
      std::string key(name);
      for (size_t k = 0; k < scopes.size(); ++k) {
        scopes[k].erase(key);
        vars.erase({k, key});
      }
    }
  }
};

/// A call's arguments after evaluation.
struct CallArg {
  std::string name;
  SourceRange nameRange;
  SemValue value;
};

/// A variable a loop body assigns: its name and first assignment.
struct LoopAssignment {
  std::string name;
  SourceRange where;
};

class Elaborator {
public:
  Elaborator(DiagnosticEngine &diags, bool generic)
      : diags(diags), generic(generic) {}

  /// Elaborates \p decl as the entry function into \p out: binds its
  /// parameters (from \p examples, or generically when null), runs the
  /// body and finishes the Function (results, dead code, guards).
  bool elaborateEntry(const LoadedModule &module, const ast::FnDecl &decl,
                      const std::map<std::string, ExampleArg> *examples,
                      Function &out);
  /// Rejects example names that are no parameter and repeated parameters.
  bool checkEntryParams(const ast::FnDecl &decl,
                        const std::map<std::string, ExampleArg> *examples);
  /// After the body: describes the result to the probe, or checks it
  /// against the declared result types; then the IR pipeline
  /// (ir/Pipeline.h: outlining, DCE, ..., guard minimization) and the symbols
  /// and guards copied into \p out.
  bool finishEntry(const ast::FnDecl &decl, Frame &frame, SemValue &result,
                   Function &out);

  /// For ElaborateOptions::probe: skip result checks and describe results.
  ProbeFn probe;
  /// ElaborateOptions::forceDynamic and allDynamic.
  std::set<std::string> forceDynamic;
  bool allDynamic = false;
  /// ElaborateOptions::donated.
  std::set<std::string> donated;
  /// ElaborateOptions::pipeline.
  PipelineOptions pipeline;
  /// Runs the IR pipeline on fn (finishEntry); a print-after hook sees the
  /// function with the symbols and guards the environment holds then.
  void runIrPipeline();
  ProbeResult describe(const SemValue &v);

  /// Generic checking explores each undecidable `if` both ways: the path of
  /// decisions taken so far and where the next run must differ.
  std::vector<bool> path;
  size_t pathIndex = 0;

  DiagnosticEngine &diags;
  const SourceManager &sm() const { return diags.sources(); }

  // --- shared helpers (Elaborator.cpp) ---
  bool error(SourceRange range, std::string message, std::string fix = {});
  bool errorWithNotes(SourceRange range, std::string message,
                      std::vector<DiagNote> notes, std::string fix = {});
  Location locOf(SourceRange range) const;
  std::string sourceText(SourceRange range) const;
  bool emit(OpCode code, std::vector<ValueId> operands, AttrMap attrs,
            SourceRange range, std::vector<ValueId> &results);
  bool emit1(OpCode code, std::vector<ValueId> operands, AttrMap attrs,
             SourceRange range, ValueId &result);
  /// Reports \p e when it is the overflow poison ("size 'D * D' overflows
  /// 64 bits", with \p detail such as "D * D = 2^64" in parentheses) or too
  /// complex; true when it is fine. \p symbolic: the operation that
  /// overflowed had a symbolic operand, so it overflows for some values
  /// only (N * 2^64 fits for N = 0); `check` then warns and stops
  /// checking the function (stoppedUncheckable) instead of refusing it.
  bool checkSize(SymExpr e, SourceRange range, const std::string &detail = {},
                 bool symbolic = false);
  /// Set by checkModule: the elaboration checks the function for every size
  /// (`tslc check`) rather than compiling a variant.
  bool checkingAllSizes = false;
  /// Set when checkSize stopped a `check` at a size that overflows for
  /// some values only (a warning, not an error), or notConstant at a value
  /// only a call gives.
  bool stoppedUncheckable = false;
  /// Reports that \p e is not a constant (\p message then its text), and
  /// returns false; in a `check` where \p e depends only on `int static`
  /// parameters (constants in every compiled variant), stops checking the
  /// function quietly instead (stoppedUncheckable).
  bool notConstant(const SymExpr &e, SourceRange range,
                   const std::string &message);
  /// Reports a type of constant dims whose byte size leaves int64.
  bool checkStaticBytes(const TensorType &t, SourceRange range);
  bool requireCond(const SymCond &cond, SourceRange range,
                   const std::string &op, const std::string &reason,
                   const std::string &message);

  /// For a requirement \p cond on a loop variable that failed: a note
  /// with values that break it and a suggested fix, added to \p d.
  void loopCounterexample(const SymCond &cond, SourceRange range,
                          Diagnostic &d);
  /// Warns about guards that pin a dim declared dynamic to one value.
  void warnPinnedDynamicDims();

  // --- calls and statements (Elaborator.cpp) ---
  bool callFunction(const LoadedModule &module, const ast::FnDecl &decl,
                    std::vector<CallArg> args, SourceRange range,
                    SemValue &out);
  bool execBlock(const ast::Block &block, Frame &frame, bool &returned,
                 SemValue &result);
  bool bindType(const ast::TypeExpr &pattern, TensorType actual, Frame &frame,
                SourceRange where, const std::string &what);

  // --- parameters and type parameters (ElabParams.cpp) ---
  /// Rejects a function's malformed type parameters: a bound other than
  /// `float`, a repeated name, a name that is an element type or a value
  /// parameter or dim of the signature, one no parameter's type uses.
  bool checkTypeParams(const ast::FnDecl &decl);
  /// Binds type parameter \p tp to \p actual at its first use, or checks
  /// \p actual against its binding ("argument 'y' of 'f' has element type
  /// f16 but T is f32 from argument 'x'"); \p actual must be a float type.
  bool bindTypeParam(const ast::TypeParam &tp, DType actual, Frame &frame,
                     SourceRange where, const std::string &what);
  /// Binds call argument \p v to parameter \p p of \p decl in \p frame.
  /// With \p mayDefer, a literal for a parameter typed by a type parameter
  /// not yet bound sets \p deferred and binds nothing (the caller binds it
  /// after the other arguments); without it that is an error.
  bool bindArgument(const ast::FnDecl &decl, const ast::Param &p, SemValue v,
                    Frame &frame, bool mayDefer, bool &deferred);
  /// Evaluates a size expression in a type. With \p unbound, a dim not yet
  /// bound stands as the symbol "\x01NAME" and its name is listed once (in
  /// order of first use): the caller solves the expression for it (derived
  /// dims such as 2*N). Without \p unbound, an unbound dim is an error.
  bool evalDimExpr(const ast::Expr &e, Frame &frame, SymExpr &out,
                   std::vector<std::string> *unbound);
  bool decide(const SymCond &cond, const ast::Expr &source, bool &value);

  // --- expressions (ElabExpr.cpp) ---
  bool eval(const ast::Expr &e, Frame &frame, SemValue &out);
  bool lookupName(const std::string &name, SourceRange range, Frame &frame,
                  SemValue &out);
  /// Reports \p name as unknown, with a hint: the standard library module
  /// to import, or the closest name in scope ("did you mean").
  bool unknownName(const std::string &name, SourceRange range,
                   const Frame &frame);
  bool toTensor(const SemValue &v, std::optional<DType> like, SourceRange range,
                ValueId &out);
  /// `x.T` (every axis reversed, as NumPy's; a matrix's transpose) or, with
  /// \p matrices, `x.mT` (the last two axes swapped; rank >= 2).
  bool transposed(ValueId x, bool matrices, SourceRange range,
                  SourceRange memberRange, SemValue &out);
  /// `a % b` on tensors (Python's remainder: the sign of b) for integer
  /// types; "not supported" on floats.
  bool tensorRemainder(SemValue a, SemValue b, SourceRange range,
                       SourceRange opRange, SemValue &out);
  bool binary(const std::string &op, SemValue a, SemValue b,
              SourceRange opRange, SourceRange range, SemValue &out);
  bool unaryOp(const std::string &op, SemValue a, SourceRange range,
               SemValue &out);
  bool tensorBinary(OpCode code, SemValue a, SemValue b, SourceRange range,
                    SemValue &out);
  /// `a & b`, `a | b`, `a ^ b` (ElabOperators.cpp): on conditions the
  /// logical operators; on tensors (bool: logical, integer: bitwise) the
  /// and/or/xor ops; floats and sizes are errors.
  bool bitwise(const std::string &op, SemValue a, SemValue b,
               SourceRange opRange, SourceRange range, SemValue &out);
  /// `a ** b`: float tensors through pow; integer tensors and sizes with a
  /// constant exponent in 0..64 by repeated squaring; compile-time floats.
  bool power(SemValue a, SemValue b, SourceRange opRange, SourceRange range,
             SemValue &out);
  bool asInt(const SemValue &v, const std::string &what, SymExpr &out);
  bool asConstInt(const SemValue &v, const std::string &what, int64_t &out);
  bool asIntList(const SemValue &v, const std::string &what,
                 std::vector<SymExpr> &out);
  bool asConstIntList(const SemValue &v, const std::string &what,
                      std::vector<int64_t> &out);
  bool normalizeAxis(int64_t axis, size_t rank, SourceRange range,
                     int64_t &out);
  bool indexTensor(const ast::Expr &e, const SemValue &base, Frame &frame,
                   SemValue &out);
  /// The block a subscript of a tensor of type \p t selects: per axis its
  /// start, size (an index: size 1) and step, and the dims of the result
  /// (indexed axes dropped, a size-1 axis for each `None`). Bounds are
  /// required in range as for reading.
  struct SliceRegion {
    std::vector<SymExpr> starts, sizes, keepDims;
    /// Per axis: every steps-th element (`x[::2]`); 1 when none is given.
    std::vector<int64_t> steps;
    /// The `None` items (axes of size 1 the subscript adds).
    size_t newAxes = 0;
    /// Whether integer and bool tensors may index (reading: advanced
    /// indexing); when false a tensor index is a "not supported" error.
    bool allowTensors = false;
    /// Whether the subscript is assigned through (only a bool mask may).
    bool assigning = false;
    /// A tensor index: its value, the first axis of x it takes (a bool
    /// mask takes one per dim) and the position of that axis in keepDims
    /// (where the region keeps the whole axis).
    struct TensorIndex {
      SemValue value;
      size_t axis = 0, keepPos = 0;
    };
    std::vector<TensorIndex> tensorIndices;
    bool strided() const {
      for (int64_t s : steps)
        if (s != 1)
          return true;
      return false;
    }
  };
  bool resolveSlices(const ast::Expr &e, const TensorType &t, Frame &frame,
                     SliceRegion &region);
  /// \p x's block \p region selects (a slice, then a reshape to keepDims).
  bool emitRegion(ValueId x, const SliceRegion &region, SourceRange range,
                  ValueId &out);

  // --- advanced indexing (ElabIndexing.cpp) ---
  /// Records the tensor \p v indexing \p t at \p axis in \p region (the
  /// whole axis kept; a bool mask takes one axis per dim and advances
  /// \p axis past them); an error for a float tensor, a mask of rank 0 or
  /// one with more dims than remain, or a region without allowTensors.
  bool takeTensorIndex(const SemValue &v, const TensorType &t, size_t &axis,
                       SliceRegion &region);
  /// `x[...]` with tensor indices (\p region from resolveSlices): integer
  /// tensors broadcast together and pick elements, each checked against
  /// its axis at run time (negative counts from the end); a bool mask
  /// selects the positions where it is true (an unbacked count).
  bool advancedIndex(const ast::Expr &e, ValueId x, const TensorType &t,
                     const SliceRegion &region, SemValue &out);
  /// Whether the subscript \p target of a tensor of type \p t with tensor
  /// indices (\p region) can be assigned through: one bool mask of the
  /// leading dims and nothing else; otherwise an error ("not supported").
  bool maskAssignable(const ast::Expr &target, const TensorType &t,
                      const SliceRegion &region);
  /// `y[mask] = v` (\p x is y, \p v of y's element type): a 0-d value, or
  /// one that broadcasts to the dims after the mask's, replaces every
  /// selected element or row (where); a value of one more dim gives its
  /// rows in row-major order of the mask (masked_scatter, whose run-time
  /// check requires enough of them).
  bool assignThroughMask(const ast::Expr &target, ValueId x,
                         const SliceRegion &region, ValueId v,
                         SourceRange valueRange, ValueId &out);

  // --- mutable variables and loops (ElabLoop.cpp) ---
  /// `NAME = value;`, or `NAME[subscript] = value;` (a copy of the tensor
  /// with the block replaced by value, broadcast). NAME must be a `var`.
  bool execAssign(const ast::Stmt &st, Frame &frame);
  /// `for NAME in lo..hi { body }`: a loop op whose body is elaborated
  /// once, with NAME a symbol in [lo, hi); the vars the body assigns are
  /// carried and must keep their types.
  bool execFor(const ast::Stmt &st, Frame &frame);
  /// How many `for` bodies being elaborated have a range that is empty at
  /// compile time (`0..T` with T = 0): their requirements hold vacuously
  /// (requireCond), and execFor drops what they emitted.
  unsigned emptyLoops = 0;
  /// Forgets the ops and values emitted from \p ops and \p values on (the
  /// body of a loop that runs no iteration).
  void dropEmittedSince(size_t ops, size_t values);
  /// \p x with the block \p target selects replaced by \p value
  /// (broadcast to the block; same element type) as a new value \p out.
  bool assignBlock(const ast::Expr &target, ValueId x, const SemValue &value,
                   Frame &frame, ValueId &out);
  /// After one elaboration of the body of loop \p st: the carried values
  /// of the next iteration (\p scope, the loop's scope, holds them), each
  /// required to keep its type (\p inside: the values at the start of an
  /// iteration); else an error showing the type before and after.
  bool carriedTypesKept(const ast::Stmt &st,
                        const std::vector<LoopAssignment> &carried,
                        const std::vector<ValueId> &inside,
                        const std::map<std::string, SemValue> &scope,
                        std::vector<ValueId> &next);

  // --- builtins (Builtins.cpp) ---
  /// Whether \p name is a builtin function (see builtinNames()).
  static bool isBuiltin(const std::string &name);
  /// Elaborates a call of builtin \p name through its handler; false after
  /// reporting an error (arguments that do not bind, wrong kinds, the op's
  /// shape rule).
  bool callBuiltin(const std::string &name, std::vector<CallArg> &args,
                   SourceRange range, SemValue &out);

  // --- gradients (ElabGrad.cpp) ---
  /// `grad(y, wrt=...)` (\p cotangent null) or `vjp(y, cotangent,
  /// wrt=...)`: the ops y depends on differentiated (ir/Differentiate.h);
  /// \p out the gradient, or a tuple of them when \p wrt is a tuple.
  bool gradient(const std::string &name, const SemValue &y,
                const SemValue *cotangent, const SemValue &wrt,
                SourceRange range, SemValue &out);
  /// Values made by stop_gradient: no gradient flows through them.
  std::set<ValueId> stoppedGradients;

  ShapeEnv env;
  /// Per `for` variable name, the next suffix to try for its symbol (t,
  /// t_1, t_2, ...): trying from 1 in every loop was quadratic in loops.
  std::map<std::string, int> loopSymbolSuffix;
  Function fn;
  /// 1 + the index of the op that defines each value, by value id; 0 for
  /// none (for local simplifications).
  std::vector<uint32_t> producerOp;
  /// The op that defines \p v, or null.
  const Operation *producerOf(ValueId v) const {
    return v < producerOp.size() && producerOp[v] ? &fn.ops[producerOp[v] - 1]
                                                  : nullptr;
  }
  bool isZeroFill(ValueId v) const;
  bool generic;
  std::vector<const ast::FnDecl *> callStack;
  size_t inlinedCalls = 0;
  /// The ops each inlined call produced, for outlineRepeatedCalls.
  std::vector<InlinedCall> callRuns;

  // --- recursion bounds ---
  /// Current nesting of eval, evalDimExpr and execBlock (see kMaxEvalDepth).
  unsigned evalDepth = 0;
  /// Counts one level of nesting for its lifetime; ok() is false (after an
  /// error at the range) past kMaxEvalDepth.
  class DepthScope {
  public:
    DepthScope(Elaborator &el, SourceRange range);
    ~DepthScope() { --el_.evalDepth; }
    DepthScope(const DepthScope &) = delete;
    DepthScope &operator=(const DepthScope &) = delete;
    bool ok() const { return ok_; }

  private:
    Elaborator &el_;
    bool ok_;
  };
  /// Sets \p v.nest to 1 + \p inner; past kMaxValueNesting reports an error
  /// at \p range and returns false.
  bool setNest(SemValue &v, uint32_t inner, SourceRange range);
  /// Module-level dims with a value being evaluated (cycle detection).
  std::vector<const ast::DimDecl *> dimStack;
  /// Evaluates `dim NAME = EXPR;` in \p frame; a dim defined in terms of
  /// itself is an error naming the cycle.
  bool evalDimDecl(const ast::DimDecl &decl, Frame &frame, SourceRange use,
                   SymExpr &out);
};

/// "a op b = exact value" when \p a and \p b are constants and op is + - *
/// (the exact value may leave int64: for overflow messages); else empty.
std::string sizeOverflowDetail(SymExpr a, const std::string &op, SymExpr b);

/// Solves `pattern(N) == actual` for the one unknown N of a linear pattern:
/// pattern == offset + coeff * N with a positive constant coeff.
bool solveForUnknown(SymExpr pattern, const std::string &unknown,
                     SymExpr actual, SymExpr &coeff, SymExpr &offset);

/// The type parameter of \p frame's function named \p name, or null.
const ast::TypeParam *typeParamOf(const std::string &name, const Frame &frame);
/// The element type \p name stands for in \p frame: an element type's
/// name, or a bound type parameter; nullopt otherwise.
std::optional<DType> elementTypeOf(const std::string &name, const Frame &frame);

/// Checks a callee's returned value against its declared result types,
/// binding result dims (materializes int results declared as tensors).
bool matchResults(Elaborator &el, const ast::FnDecl &decl, Frame &frame,
                  SemValue &result, SourceRange callRange);

} // namespace tsl
