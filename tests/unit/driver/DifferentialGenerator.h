#pragma once
/// \file The random program generator of the differential test
/// (DifferentialTest.cpp): float programs (elementwise chains with
/// broadcasting, every reduction, layout, data-dependent and creation op,
/// loops, outlined calls, attention), integer programs (floor division by
/// zero, bit ops, casts, matmul) and conv2d/max_pool2d programs, each with
/// two result tails.
///
/// Coverage is a property of the generator: program 2i of any seed has, as
/// its first tail, the probe of op i (mod the table's size) of ir/Ops.def,
/// so the first kCoveragePeriod programs of every seed use every op. The
/// odd programs are random: program 4j + 1 is the gradient program j
/// (grad and vjp of random float or conv expressions through the gradient
/// probes 2j and 2j + 1 of kGradProbes, so the first gradCoveragePeriod()
/// programs differentiate every op with a VJP rule), the others wholly
/// random.

#include "ir/Differentiate.h"
#include "ir/Function.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace tsl::diff {

/// One extent of a parameter's shape: a dim of the program, or a constant.
struct Extent {
  int dim = -1; ///< index into Program::dims, or -1
  int64_t value = 0;
};

struct Param {
  std::string name;
  bool isInt = false; ///< an `int dynamic` parameter
  DType dtype = DType::F32;
  std::vector<Extent> shape;
  enum class Data { Normal, SmallInt, Bool, Index } data = Data::Normal;
  int indexDim = 0; ///< Data::Index: the dim the indices range over
};

struct Program {
  std::string family, source;
  std::vector<std::string> dims; ///< dynamic dims
  std::vector<int64_t> exampleDims, maxDims;
  int64_t exampleInt = 2;
  std::vector<Param> params;
  /// A gradient program's twin returning its probes' values `(qa, qb)`
  /// instead of their gradients (compiled with an unchecked result type):
  /// the ops the gradients go through.
  std::string forward;
};

/// A result expression, with the statements it needs and its type.
struct Tail {
  std::string pre, expr, type;
};

/// A helper of float programs (tail 40 calls it three times): over 16 ops,
/// so its repeated calls become one callee (ir/OutlineCalls.h).
inline const std::string kCalledHelper =
    "fn g(h: f32[R, C], x: f32[R, C]) -> f32[R, C] {\n"
    "  let a = tanh(h) * 0.5 + x;\n"
    "  let b = a - max(a, axis=1, keepdim=true);\n"
    "  let c = exp(b) / (sum(exp(b), axis=1, keepdim=true) + 1.0);\n"
    "  return c * 2.0 + h * 0.25 - x;\n"
    "}\n";

/// The program families of the generator.
enum class Family { Float, Int, Conv };

/// A tail that uses one op of the table for sure: its family's names (e
/// and b of float programs, e, a, c, d of integer ones, e and x of conv
/// ones) and sizes; a `$` in pre and expr is the tail's unique name. The
/// operands of discontinuous ops are exact, as in the random tails.
struct Probe {
  const char *op;
  Family family;
  const char *pre, *expr, *type;
};

// clang-format off
inline const Probe kProbes[] = {
    {"add", Family::Float, "", "e + x1", "f32[?, ?]"},
    {"sub", Family::Float, "", "e - x2", "f32[?, ?]"},
    {"mul", Family::Float, "", "e * x1", "f32[?, ?]"},
    {"div", Family::Float, "", "e / (abs(x1) + 0.5)", "f32[?, ?]"},
    {"pow", Family::Float, "", "pow(abs(e) + 0.5, tanh(x1))", "f32[?, ?]"},
    {"maximum", Family::Float, "", "max(e, x2)", "f32[?, ?]"},
    {"minimum", Family::Float, "", "min(e, x1)", "f32[?, ?]"},
    {"lt", Family::Float, "", "b < x1", "bool[?, ?]"},
    {"le", Family::Float, "", "b <= x2", "bool[?, ?]"},
    {"gt", Family::Float, "", "b > x1", "bool[?, ?]"},
    {"ge", Family::Float, "", "b >= x2", "bool[?, ?]"},
    {"eq", Family::Float, "", "relu(b) == 0.0", "bool[?, ?]"},
    {"ne", Family::Float, "", "relu(b) != 0.0", "bool[?, ?]"},
    {"and", Family::Float, "", "(b > x1) && (b < x2)", "bool[?, ?]"},
    {"or", Family::Float, "", "(b > x1) || (b < x2)", "bool[?, ?]"},
    {"xor", Family::Int, "", "e ^ c", "i32[?, ?]"},
    {"neg", Family::Float, "", "-e", "f32[?, ?]"},
    {"not", Family::Float, "", "!(b > x1)", "bool[?, ?]"},
    {"exp", Family::Float, "", "exp(tanh(e) * 3.0)", "f32[?, ?]"},
    {"log", Family::Float, "", "log(abs(e) + 0.5)", "f32[?, ?]"},
    {"sqrt", Family::Float, "", "sqrt(abs(e))", "f32[?, ?]"},
    {"rsqrt", Family::Float, "", "rsqrt(abs(e) + 0.5)", "f32[?, ?]"},
    {"tanh", Family::Float, "", "tanh(e)", "f32[?, ?]"},
    {"sigmoid", Family::Float, "", "sigmoid(e)", "f32[?, ?]"},
    {"relu", Family::Float, "", "relu(e)", "f32[?, ?]"},
    {"gelu", Family::Float, "", "gelu(tanh(e) * 3.0)", "f32[?, ?]"},
    {"erf", Family::Float, "", "erf(e)", "f32[?, ?]"},
    {"abs", Family::Float, "", "abs(e)", "f32[?, ?]"},
    {"sin", Family::Float, "", "sin(tanh(e) * 3.0)", "f32[?, ?]"},
    {"cos", Family::Float, "", "cos(tanh(e) * 3.0)", "f32[?, ?]"},
    {"floor", Family::Float, "", "floor(b * 0.5)", "f32[?, ?]"},
    {"ceil", Family::Float, "", "ceil(b * 0.5)", "f32[?, ?]"},
    {"round", Family::Float, "", "round(b * 0.5)", "f32[?, ?]"},
    {"where", Family::Float, "", "where(b > x1, e, x2)", "f32[?, ?]"},
    {"cast", Family::Float, "", "cast(b, bf16)", "bf16[?, ?]"},
    {"constant", Family::Float, "", "e * 2.0", "f32[?, ?]"},
    {"sym_scalar", Family::Float, "", "e + N", "f32[?, ?]"},
    {"full", Family::Float, "", "zeros([N, M]) + ones([N, 1]) * e", "f32[?, ?]"},
    {"arange", Family::Float, "", "cast(arange(M), f32) + x1", "f32[?]"},
    {"reduce_sum", Family::Float, "", "sum(e, axis=1)", "f32[?]"},
    {"reduce_mean", Family::Float, "", "mean(e, axis=0, keepdim=true)", "f32[?, ?]"},
    {"reduce_max", Family::Float, "", "max(e, axis=-1)", "f32[?]"},
    {"reduce_min", Family::Float, "", "min(e, axis=0)", "f32[?]"},
    {"argmax", Family::Float, "", "argmax(b, axis=1)", "i64[?]"},
    {"argmin", Family::Float, "", "argmin(b, axis=0)", "i64[?]"},
    {"cumsum", Family::Float, "", "cumsum(e, axis=1, reverse=true)", "f32[?, ?]"},
    {"cumprod", Family::Float, "", "cumprod(e, axis=0)", "f32[?, ?]"},
    {"matmul", Family::Float, "", "transpose(e, 0, 1) @ e", "f32[?, ?]"},
    {"reshape", Family::Float, "", "reshape(e, [-1])", "f32[?]"},
    {"permute", Family::Float, "", "permute(reshape(e, [N, M, 1]), [2, 0, 1])", "f32[?, ?, ?]"},
    {"expand", Family::Float, "", "expand(x2 * 2.0, [2, -1, 4])", "f32[?, ?, ?]"},
    {"concat", Family::Float, "", "concat([e, e * 2.0], axis=0)", "f32[?, ?]"},
    {"slice", Family::Float, "", "e[1:, :]", "f32[?, ?]"},
    {"update_slice", Family::Float,
     "var $o = zeros([N, M]);\n  for $i in 0..N {\n    $o[$i] = e[$i] * cast($i + 1, f32);\n  }\n  ",
     "$o", "f32[?, ?]"},
    {"pad", Family::Float, "", "pad(e, [1, 2])", "f32[?, ?]"},
    {"conv2d", Family::Conv, "", "e", "f32[?, ?, ?, ?]"},
    {"max_pool2d", Family::Conv, "", "max_pool2d(x, 2)", "f32[?, ?, ?, ?]"},
    // The window ops' gradients are made by grad (not builtins).
    {"conv2d_weight_grad", Family::Conv, "", "grad(sum(e * e), wrt=w)", "f32[?, ?, ?, ?]"},
    {"max_pool2d_grad", Family::Conv, "", "grad(sum(max_pool2d(x, 2) * 1.5), wrt=x)", "f32[?, ?, ?, ?]"},
    {"attention", Family::Float,
     "let $s = e @ transpose(b, 0, 1) * 0.5;\n  let $e = exp($s - max($s, axis=-1, keepdim=true));\n  ",
     "$e / sum($e, axis=-1, keepdim=true) @ e", "f32[?, ?]"},
    {"nonzero", Family::Float, "", "nonzero((b > x1) && (b == b))", "i64[?, 2]"},
    {"masked_select", Family::Float, "", "masked_select(e, (b > x1) && (b == b))", "f32[?]"},
    {"unique", Family::Float, "", "unique(b)", "f32[?]"},
    {"item", Family::Float, "let $ = item(idx[0:1]);\n  check($ >= 0);\n  ",
     "full([$, 2], 1.5) + reshape(cast(arange($), f32), [-1, 1])", "f32[?, ?]"},
    {"index_select", Family::Float, "", "index_select(e, 0, idx)", "f32[?, ?]"},
    {"gather", Family::Float, "",
     "gather(e, 1, (reshape(arange(N), [N, 1]) + arange(M) * 3) % M)", "f32[?, ?]"},
    {"scatter", Family::Float, "",
     "scatter(e, 0, (reshape(arange(N), [N, 1]) * 2 + arange(M)) % N, e * 2.0)", "f32[?, ?]"},
    {"index_add", Family::Float, "", "index_add(e, 0, idx, zeros([2, M]) + x1 * 2.0)", "f32[?, ?]"},
    {"masked_scatter", Family::Float, "", "masked_scatter(e, (b > x1) && (b == b), e * 2.0 + 1.0)", "f32[?, ?]"},
    {"topk", Family::Float, "let ($v, $i) = topk(b, 1);\n  ", "$v + cast($i, f32)", "f32[?, ?]"},
    {"sort", Family::Float, "", "sort(b, axis=1)", "f32[?, ?]"},
    {"loop", Family::Float,
     "var $h = e;\n  for $i in 0..k {\n    $h = tanh($h) * 0.5 + e * cast($i, f32);\n  }\n  ",
     "$h", "f32[?, ?]"},
    {"end_loop", Family::Float,
     "var $h = e;\n  for $i in 0..k {\n    $h = tanh($h) * 0.5 + e;\n  }\n  ",
     "$h", "f32[?, ?]"},
    {"call", Family::Float, "", "g(g(g(e, x0), x0), x0)", "f32[?, ?]"},
    {"assert", Family::Float, "let $ = item(idx[0:1]);\n  check($ >= 0);\n  ",
     "full([$, 1], 0.5)", "f32[?, ?]"},
};
// clang-format on

/// The probe of the op named \p op, or null.
inline const Probe *probeFor(const std::string &op) {
  for (const Probe &p : kProbes)
    if (op == p.op)
      return &p;
  return nullptr;
}

/// An expression differentiated by a gradient program, one per op of the
/// table with a VJP rule (ir/Differentiate.h): its family's names (e and b
/// of float programs, e = the conv2d and x of conv ones), float valued, a
/// `$` in pre and expr the probe's unique name. Where a derivative has a
/// kink (max, min, abs, relu, sort, topk, where) it is taken at exact
/// operands (b, x1, x2) or at structural ties every backend computes
/// alike; sqrt's argument is kept from 0 (an unbounded derivative turns
/// one ulp into any difference), and exp, gelu, sin, cos and pow take
/// erf of their operand where the forward probes take tanh (see grad_).
struct GradProbe {
  const char *op;
  Family family;
  const char *pre, *expr;
};

// clang-format off
inline const GradProbe kGradProbes[] = {
    // The two conv probes first: grad program 0 pairs them.
    {"conv2d", Family::Conv, "", "e * e"},
    {"max_pool2d", Family::Conv, "", "max_pool2d(x, 2) * 1.5"},
    {"add", Family::Float, "", "e + x1"},
    {"sub", Family::Float, "", "e - x2"},
    {"mul", Family::Float, "", "e * x1"},
    {"div", Family::Float, "", "e / (abs(x1) + 0.5)"},
    {"pow", Family::Float, "", "pow(abs(e) + 0.5, erf(x1))"},
    {"maximum", Family::Float, "", "max(b, x2) * e"},
    {"minimum", Family::Float, "", "min(b, x1) * e"},
    {"neg", Family::Float, "", "-e"},
    {"exp", Family::Float, "", "exp(erf(e) * 3.0)"},
    {"log", Family::Float, "", "log(abs(e) + 0.5)"},
    {"sqrt", Family::Float, "", "sqrt(abs(e) + 0.25)"},
    {"rsqrt", Family::Float, "", "rsqrt(abs(e) + 0.5)"},
    {"tanh", Family::Float, "", "tanh(e)"},
    {"sigmoid", Family::Float, "", "sigmoid(e)"},
    {"relu", Family::Float, "", "relu(e)"},
    {"gelu", Family::Float, "", "gelu(erf(e) * 3.0)"},
    {"erf", Family::Float, "", "erf(e)"},
    {"abs", Family::Float, "", "abs(e)"},
    {"sin", Family::Float, "", "sin(erf(e) * 3.0)"},
    {"cos", Family::Float, "", "cos(erf(e) * 3.0)"},
    {"where", Family::Float, "", "where(b > x1, e, x2)"},
    {"cast", Family::Float, "", "cast(cast(e, f64) * 0.5, f32) + cast(cast(b, f16), f32) * x1"},
    {"reduce_sum", Family::Float, "", "sum(e, axis=1)"},
    {"reduce_mean", Family::Float, "", "mean(e, axis=0, keepdim=true)"},
    {"reduce_max", Family::Float, "", "max(e, axis=-1)"},
    {"reduce_min", Family::Float, "", "min(e, axis=0)"},
    {"cumsum", Family::Float, "", "cumsum(e, axis=1, reverse=true) + cumsum(e, axis=0)"},
    {"matmul", Family::Float, "", "(transpose(e, 0, 1) @ b) @ x1"},
    {"reshape", Family::Float, "", "reshape(e, [-1])"},
    {"permute", Family::Float, "", "permute(reshape(e, [N, M, 1]), [2, 0, 1])"},
    {"expand", Family::Float, "", "expand(x2 * 2.0 + sum(e, axis=1, keepdim=true), [2, -1, 4])"},
    {"concat", Family::Float, "", "concat([e, b * 2.0], axis=0)"},
    {"slice", Family::Float, "", "concat([reshape(e[1:, :], [-1]), reshape(e[::2, 1:M], [-1])], axis=0)"},
    {"update_slice", Family::Float,
     "var $o = e * 1.0;\n  $o[1:, :] = b[1:, :] * 0.5 + x1;\n  ", "$o"},
    {"pad", Family::Float, "", "pad(e, [1, 2])"},
    {"index_select", Family::Float, "", "index_select(e, 0, idx)"},
    {"gather", Family::Float, "",
     "gather(e, 1, (reshape(arange(N), [N, 1]) + arange(M) * 3) % M)"},
    {"scatter", Family::Float, "",
     "scatter(e, 0, (reshape(arange(N), [N, 1]) * 2 + arange(M)) % N, b * 2.0) + "
     "scatter_add(b, 1, (reshape(arange(N), [N, 1]) + arange(M) * 2) % M, e)"},
    {"index_add", Family::Float, "", "index_add(e, 0, idx, expand(x1 * 2.0, [K, -1]))"},
    {"masked_scatter", Family::Float, "", "masked_scatter(e, (b > x1) && (b == b), b * 2.0 + e)"},
    {"topk", Family::Float, "let ($v, $i) = topk(b, 1);\n  ", "$v * 2.0 + cast($i, f32)"},
    {"sort", Family::Float, "", "sort(b, axis=1) * x1"},
    {"masked_select", Family::Float, "", "masked_select(e, (b > x1) && (b == b))"},
    // Waiting for their rule (diffRuleOf: refused today), used once it is.
    {"loop", Family::Float,
     "var $h = e;\n  for $i in 0..k {\n    $h = tanh(erf($h)) * 0.5 + e * cast($i + 1, f32);\n  }\n  ",
     "$h"},
    {"end_loop", Family::Float,
     "var $o = zeros([N, M]);\n  for $i in 0..N {\n    $o[$i] = e[$i] * cast($i + 1, f32) + b[$i];\n  }\n  ",
     "$o"},
};
// clang-format on

/// The gradient probe of the op named \p op, or null.
inline const GradProbe *gradProbeFor(const std::string &op) {
  for (const GradProbe &p : kGradProbes)
    if (op == p.op)
      return &p;
  return nullptr;
}

/// The gradient probes in use, in table order: those whose op has a VJP
/// rule (a probe of an op refused today waits for its rule).
inline const std::vector<const GradProbe *> &activeGradProbes() {
  static const std::vector<const GradProbe *> active = [] {
    std::vector<const GradProbe *> v;
    for (const GradProbe &g : kGradProbes)
      for (const OpInfo &op : allOps())
        if (op.name == std::string(g.op) &&
            diffRuleOf(op.code).kind == DiffKind::Rule)
          v.push_back(&g);
    return v;
  }();
  return active;
}

/// Whether program \p index of a seed is a gradient program (4j + 1).
constexpr bool isGradProgram(int64_t index) { return index % 4 == 1; }

/// Every active gradient probe is in one of the first gradCoveragePeriod()
/// programs of any seed: gradient program j takes probes 2j and 2j + 1.
inline int64_t gradCoveragePeriod() {
  return 4 * ((static_cast<int64_t>(activeGradProbes().size()) + 1) / 2);
}

/// Every op of the table is in one of the first kCoveragePeriod programs
/// of any seed: program 2i's first tail is the probe of op i % kNumOps
/// (ir/OpInfo.h), the odd programs are wholly random.
constexpr int64_t kCoveragePeriod = 2 * static_cast<int64_t>(kNumOps);

class Generator {
public:
  explicit Generator(uint32_t seed) : rng_(seed) {}

  /// Program number \p index of a seed: every even one probes an op of the
  /// table in turn (kCoveragePeriod), every 4j + 1 is gradient program j
  /// (gradCoveragePeriod()), the rest of it random.
  Program next(int64_t index) {
    if (isGradProgram(index))
      return gradProgram(index / 4);
    const Probe *probe = nullptr;
    if (index % 2 == 0)
      probe = probeFor(allOps()[(index / 2) % allOps().size()].name);
    std::optional<Tail> forced;
    if (probe)
      forced = probeTail(*probe);
    Family family = probe ? probe->family : randomFamily();
    switch (family) {
    case Family::Float:
      return floatProgram(forced);
    case Family::Int:
      return intProgram(forced);
    default:
      return convProgram(forced);
    }
  }

private:
  std::mt19937 rng_;
  int tails_ = 0;

  size_t pick(size_t n) { return rng_() % n; }

  Family randomFamily() {
    uint32_t r = rng_() % 8;
    return r < 4 ? Family::Float : r < 6 ? Family::Int : Family::Conv;
  }

  /// \p p's tail, its `$` replaced by a fresh name.
  Tail probeTail(const Probe &p) {
    std::string q = "q" + std::to_string(tails_++);
    auto expand = [&](std::string text) {
      for (size_t at = text.find('$'); at != std::string::npos;
           at = text.find('$', at + q.size()))
        text.replace(at, 1, q);
      return text;
    };
    return {expand(p.pre), expand(p.expr), p.type};
  }

  /// Whether F generates for a gradient program. Then (1) no gradient
  /// flows through its casts to f16 and bf16 (their backward rounds the
  /// inexact cotangent, a discontinuous function of it; the cast probe
  /// rounds exact ones); (2) tanh's and sigmoid's arguments are bounded
  /// (through erf, whose derivative is computed from its argument): their
  /// derivatives come from their rounded results (1 - y^2, y (1 - y)) and
  /// lose all relative accuracy where they saturate, which chains of exp,
  /// products and broadcast sums amplify past the tolerance; (3) sqrt's
  /// argument stays >= 0.25.
  bool grad_ = false;

  /// \p x squashed into [-1, 1]: tanh, or erf in gradient programs.
  std::string bounded(const std::string &x) {
    return (grad_ ? "erf(" : "tanh(") + x + ")";
  }

  /// f32 values [N, M]-broadcastable; compared with a tolerance.
  std::string F(int depth) {
    static const char *leaves[] = {"x0",         "x1",       "x2",
                                   "(x2 * 1.5)", "(x1 + N)", "(x2 - M)",
                                   "(x0 * k)",   "x0"};
    if (depth == 0)
      return leaves[pick(8)];
    std::string a = F(depth - 1);
    switch (pick(22)) {
    case 0:
      return "(" + a + " + " + F(depth - 1) + ")";
    case 1:
      return "(" + a + " - " + F(depth - 1) + ")";
    case 2:
      return "(" + a + " * " + F(depth - 1) + ")";
    case 3:
      return "(" + a + " / (abs(" + F(depth - 1) + ") + 0.5))";
    case 4:
      return "pow(abs(" + a + ") + 0.5, " + bounded(F(depth - 1)) + ")";
    case 5:
      return "max(" + a + ", " + F(depth - 1) + ")";
    case 6:
      return "min(" + a + ", " + F(depth - 1) + ")";
    case 7:
      return "(-" + a + ")";
    case 8:
      return "exp(" + bounded(a) + " * 3.0)";
    case 9:
      return "log(abs(" + a + ") + 0.5)";
    case 10:
      return grad_ ? "sqrt(abs(" + a + ") + 0.25)" : "sqrt(abs(" + a + "))";
    case 11:
      return "rsqrt(abs(" + a + ") + 0.5)";
    case 12:
      return grad_ ? "tanh(erf(" + a + ") * 3.0)" : "tanh(" + a + ")";
    case 13:
      return grad_ ? "sigmoid(erf(" + a + ") * 6.0)" : "sigmoid(" + a + ")";
    case 14:
      return "relu(" + a + ")";
    case 15:
      return "gelu(" + bounded(a) + " * 3.0)";
    case 16:
      return "abs(" + a + ")";
    case 17:
      return "sin(erf(" + a + ") * 3.0)";
    case 18:
      return "cos(" + bounded(a) + " * 3.0)";
    case 19:
      return "where(" + C(depth - 1) + ", " + a + ", " + F(depth - 1) + ")";
    case 20:
      return "cast(cast(" + a + ", f64) * 0.5, f32)";
    default: {
      // Fused casts round (f16, bf16) or wrap (i32) as stored values do.
      // In gradient programs no gradient flows through them: the backward
      // of a cast to f16 or bf16 rounds the (inexact) cotangent to it, a
      // discontinuous function of it (the cast probe rounds exact ones).
      static const char *types[] = {"i32", "i64", "bool", "f16", "bf16"};
      std::string x = B(depth - 1);
      if (grad_)
        x = "stop_gradient(" + x + ")";
      return "cast(cast(" + x + ", " + types[pick(5)] + "), f32)";
    }
    }
  }

  /// f32 values every backend computes bit for bit alike.
  std::string B(int depth) {
    static const char *leaves[] = {"x0", "x1", "x2", "(x2 * 2.0)",
                                   "(x0 * 0.5)"};
    if (depth <= 0)
      return leaves[pick(5)];
    std::string a = B(depth - 1);
    switch (pick(8)) {
    case 0:
      return "(" + a + " + " + B(depth - 1) + ")";
    case 1:
      return "(" + a + " - " + B(depth - 1) + ")";
    case 2:
      return "(-" + a + ")";
    case 3:
      return "abs(" + a + ")";
    case 4:
      return "relu(" + a + ")";
    case 5:
      return "max(" + a + ", " + B(depth - 1) + ")";
    case 6:
      return "min(" + a + ", " + B(depth - 1) + ")";
    default:
      return "where(" + C(depth - 1) + ", " + a + ", " + B(depth - 1) + ")";
    }
  }

  /// bool values from exact operands.
  std::string C(int depth) {
    std::string a = B(depth - 1), b = B(depth - 1);
    switch (pick(depth > 0 ? 9 : 6)) {
    case 0:
      return "(" + a + " < " + b + ")";
    case 1:
      return "(" + a + " <= " + b + ")";
    case 2:
      return "(" + a + " > " + b + ")";
    case 3:
      return "(" + a + " >= " + b + ")";
    case 4:
      return "(relu(" + a + ") == 0.0)";
    case 5:
      return "(relu(" + a + ") != 0.0)";
    case 6:
      return "(" + C(depth - 1) + " && " + C(depth - 1) + ")";
    case 7:
      return "(" + C(depth - 1) + " || " + C(depth - 1) + ")";
    default:
      return "(!" + C(depth - 1) + ")";
    }
  }

  Tail floatTail() {
    std::string q = "q" + std::to_string(tails_++);
    switch (pick(44)) {
    case 0:
      return {"", "sum(e, axis=1)", "f32[?]"};
    case 1:
      return {"", "mean(e, axis=0, keepdim=true)", "f32[?, ?]"};
    case 2:
      return {"", "max(e, axis=-1)", "f32[?]"};
    case 3:
      return {"", "min(e, axis=0)", "f32[?]"};
    case 4:
      return {"", "sum(e)", "f32[]"};
    case 5:
      return {"", "mean(e)", "f32[]"};
    case 6:
      return {"", "argmax(b, axis=" + std::to_string(pick(2)) + ")", "i64[?]"};
    case 7:
      return {"", "argmax(b)", "i64[]"};
    case 8:
      return {"", "transpose(e, 0, 1) @ e", "f32[?, ?]"};
    case 9:
      return {"", "e @ x1", "f32[?]"};
    case 10:
      return {"", "concat([e, e * 2.0], axis=" + std::to_string(pick(2)) + ")",
              "f32[?, ?]"};
    case 11:
      return {"", "e[1:, :]", "f32[?, ?]"};
    case 12:
      return {"", "e[:, 0:M - 1]", "f32[?, ?]"};
    case 13:
      return {"", "reshape(e, [-1])", "f32[?]"};
    case 14:
      return {"", "reshape(e, [M, N])", "f32[?, ?]"};
    case 15:
      return {"", "pad(e, [1, 2])", "f32[?, ?]"};
    case 16:
      return {"", "expand(x2 * 2.0, [2, -1, 4])", "f32[?, ?, ?]"};
    case 17:
      return {"", "permute(reshape(e, [N, M, 1]), [2, 0, 1])", "f32[?, ?, ?]"};
    case 18:
      return {"let (" + q + "v, " + q + "i) = topk(b, " +
                  std::to_string(1 + pick(2)) + ");\n  ",
              q + "v + cast(" + q + "i, f32)", "f32[?, ?]"};
    case 19:
      return {"let (" + q + "v, " + q + "i) = topk(b, k);\n  ", q + "i",
              "i64[?, ?]"};
    case 20:
      return {"", "masked_select(e, " + C(1) + " && (b == b))", "f32[?]"};
    case 21:
      return {"", "nonzero(" + C(1) + " && (b == b))", "i64[?, 2]"};
    case 22:
      return {"", "unique(b)", "f32[?]"};
    case 23:
      return {"", "unique(cast(b * 2.0, i32))", "i32[?]"};
    case 24:
      return {"", "index_select(e, 0, idx)", "f32[?, ?]"};
    case 25:
      return {"let " + q + " = item(idx[0:1]);\n  check(" + q + " >= 0);\n  ",
              "full([" + q + ", 2], 1.5) + reshape(cast(arange(" + q +
                  "), f32), [-1, 1])",
              "f32[?, ?]"};
    case 26:
      return {"", "zeros([N, M]) + ones([N, 1]) * e", "f32[?, ?]"};
    case 27:
      return {"", "cast(arange(M), f32) + x1", "f32[?]"};
    case 28:
      return {"", C(2) + " || " + C(1) + " || (b != b)", "bool[?, ?]"};
    case 29:
      return {"", "cast(b, bf16)", "bf16[?, ?]"};
    case 30:
      return {"", "cast(b * 0.5, f16)", "f16[?, ?]"};
    case 31: // the attention pattern: fused into one attention op
      return {"let " + q + "s = e @ transpose(b, 0, 1) * 0.5;\n  let " + q +
                  "e = exp(" + q + "s - max(" + q +
                  "s, axis=-1, keepdim=true));\n  ",
              q + "e / sum(" + q + "e, axis=-1, keepdim=true) @ e",
              "f32[?, ?]"};
    case 32: // a loop carrying a value for k iterations (none when k <= 0)
      return {"var " + q + "h = e;\n  for " + q + "i in 0..k {\n    " + q +
                  "h = tanh(" + q + "h) * 0.5 + e * cast(" + q +
                  "i, f32);\n  }\n  ",
              q + "h", "f32[?, ?]"};
    case 33: // per-iteration results assigned into a tensor
      return {"var " + q + "o = zeros([N, M]);\n  for " + q +
                  "i in 0..N {\n  " + "  " + q + "o[" + q + "i] = e[" + q +
                  "i] * cast(" + q + "i + 1, f32);\n  }\n  ",
              q + "o", "f32[?, ?]"};
    case 34: // nested loops, the inner range from the outer variable
      return {"var " + q + "s = zeros([M]);\n  for " + q + "i in 0..N {\n  " +
                  "  for " + q + "j in " + q + "i..N {\n      " + q +
                  "s = " + q + "s + e[" + q + "j] * 0.25;\n    }\n  }\n  ",
              q + "s", "f32[?]"};
    case 35:
      return {"", "argmin(b, axis=" + std::to_string(pick(2)) + ")", "i64[?]"};
    case 36:
      return {"",
              std::string(pick(2) ? "cumsum" : "cumprod") +
                  "(e, axis=" + std::to_string(pick(2)) + ")",
              "f32[?, ?]"};
    case 37: // a permutation of each row (M = 0: a division by zero)
      return {"",
              "gather(e, 1, (reshape(arange(N), [N, 1]) + arange(M) * 3) % M)",
              "f32[?, ?]"};
    case 38:
      return {"", "sort(b, axis=" + std::to_string(pick(2)) + ")", "f32[?, ?]"};
    case 40: // repeated calls of a helper, outlined into one callee
      return {"", "g(g(g(e, x0), x0), x0)", "f32[?, ?]"};
    case 39: // duplicate targets along axis 0 (N = 0: a division by zero)
      return {"",
              std::string(pick(2) ? "scatter" : "scatter_add") +
                  "(e, 0, (reshape(arange(N), [N, 1]) * 2 + arange(M)) % N, "
                  "e * 2.0)",
              "f32[?, ?]"};
    case 41: // advanced indexing: rows (wild indices: negative, too large)
      return {"", "e[idx]", "f32[?, ?]"};
    case 42: // index tensors broadcast, negative columns (M = 0: division)
      return {"", "e[reshape(idx, [-1, 1]), (arange(M) * 5) % M - 1]",
              "f32[?, ?]"};
    case 43: // a bool mask of the leading dim (max: exact on every backend)
      return {"", "e[max(b, axis=1) > 0.0]", "f32[?, ?]"};

    default:
      return {"", "e", "f32[?, ?]"};
    }
  }

  Program floatProgram(const std::optional<Tail> &forced) {
    Program p;
    p.family = "float";
    p.dims = {"N", "M", "K"};
    p.exampleDims = {3, 4, 2};
    p.maxDims = {24, 24, 6};
    p.params = {{"x0", false, DType::F32, {{0}, {1}}},
                {"x1", false, DType::F32, {{1}}},
                {"x2", false, DType::F32, {{0}, {-1, 1}}},
                {"idx", false, DType::I64, {{2}}, Param::Data::Index, 0},
                {"k", true, DType::I64, {}}};
    std::string e = F(1 + static_cast<int>(pick(3)));
    std::string b = B(1 + static_cast<int>(pick(2)));
    Tail t1 = forced ? *forced : floatTail();
    Tail t2 = floatTail();
    return finish(
        p,
        kCalledHelper + "fn f(x0: f32[N, M], x1: f32[M], x2: f32[N, 1], idx: "
                        "i64[K], k: int dynamic)",
        "  let e = " + e + " + x0 * 0.0;\n  let b = " + b + " + x0 * 0.0;\n",
        t1, t2);
  }

  /// i32 values in a small range (no overflow); division by zero happens.
  std::string I(int depth) {
    static const char *leaves[] = {"a",       "c",       "d",
                                   "(a * 2)", "(c + N)", "(d - k)"};
    if (depth == 0)
      return leaves[pick(6)];
    std::string x = I(depth - 1);
    switch (pick(15)) {
    case 0:
      return "(" + x + " + " + I(depth - 1) + ")";
    case 1:
      return "(" + x + " - " + I(depth - 1) + ")";
    case 2:
      return "(" + x + " * " + I(0) + ")";
    case 3:
      return "(" + x + " / " + I(0) + ")";
    case 4:
      return "(" + x + " / (abs(" + I(0) + ") + 1))";
    case 5:
      return "max(" + x + ", " + I(depth - 1) + ")";
    case 6:
      return "min(" + x + ", " + I(depth - 1) + ")";
    case 7:
      return "abs(" + x + ")";
    case 8:
      return "(-" + x + ")";
    case 9:
      return "where((" + x + " > " + I(0) + ") || !(" + I(0) + " == " + I(0) +
             "), " + x + ", " + I(depth - 1) + ")";
    case 10:
      return "(" + x + " & " + I(depth - 1) + ")";
    case 11:
      return "(" + x + " | " + I(depth - 1) + ")";
    case 12:
      return "(" + x + " ^ " + I(0) + ")";
    case 13:
      return "(" + x + " ** 2)";
    default:
      return "cast(cast(" + x + ", f32) * 0.5, i32)";
    }
  }

  Tail intTail() {
    switch (pick(19)) {
    case 0:
      return {"", "sum(e, axis=1)", "i32[?]"};
    case 1:
      return {"", "sum(e)", "i32[]"};
    case 2:
      return {"", "max(e, axis=0)", "i32[?]"};
    case 3:
      return {"", "min(e, axis=1, keepdim=true)", "i32[?, ?]"};
    case 4:
      return {"", "argmax(e, axis=1)", "i64[?]"};
    case 5:
      return {"", "cast(e, f32) * 0.5", "f32[?, ?]"};
    case 6:
      return {"", "cast(e, i64) * 3", "i64[?, ?]"};
    case 7:
      return {"", "cast(where(e > 100, 100, where(e < -100, -100, e)), i8)",
              "i8[?, ?]"};
    case 8:
      return {"", "unique(e)", "i32[?]"};
    case 9:
      return {"", "nonzero(e > 0)", "i64[?, 2]"};
    case 10:
      return {"", "masked_select(e, e != 0)", "i32[?]"};
    case 11:
      return {"", "e @ transpose(e, 0, 1)", "i32[?, ?]"};
    case 12:
      return {"", "(e > 1) && !(e == 3)", "bool[?, ?]"};
    case 13:
      return {"", "concat([e, a], axis=0)[1:, :]", "i32[?, ?]"};
    case 14:
      return {"", "pad(e, [2, 0])", "i32[?, ?]"};
    case 15:
      return {"", "argmin(e)", "i64[]"};
    case 16:
      return {"", "cumprod(e, axis=" + std::to_string(pick(2)) + ")",
              "i32[?, ?]"};
    case 17: // ties keep their order
      return {"",
              "argsort(e, axis=" + std::to_string(pick(2)) +
                  ", descending=" + (pick(2) ? "true" : "false") + ")",
              "i64[?, ?]"};
    default:
      return {"", "e", "i32[?, ?]"};
    }
  }

  Program intProgram(const std::optional<Tail> &forced) {
    Program p;
    p.family = "int";
    p.dims = {"N", "M"};
    p.exampleDims = {3, 4};
    p.maxDims = {16, 16};
    p.params = {{"a", false, DType::I32, {{0}, {1}}, Param::Data::SmallInt},
                {"c", false, DType::I32, {{1}}, Param::Data::SmallInt},
                {"d", false, DType::I32, {{0}, {-1, 1}}, Param::Data::SmallInt},
                {"k", true, DType::I64, {}}};
    std::string e = I(1 + static_cast<int>(pick(2)));
    Tail t1 = forced ? *forced : intTail();
    Tail t2 = intTail();
    return finish(p,
                  "fn f(a: i32[N, M], c: i32[M], d: i32[N, 1], k: int dynamic)",
                  "  let e = " + e + " + a * 0;\n", t1, t2);
  }

  Program convProgram(const std::optional<Tail> &forced) {
    Program p;
    p.family = "conv";
    p.dims = {"N", "C", "H", "W", "O"};
    p.exampleDims = {2, 2, 7, 6, 3};
    p.maxDims = {3, 3, 11, 11, 4};
    int64_t kh = 1 + pick(3), kw = 1 + pick(3);
    p.params = {{"x", false, DType::F32, {{0}, {1}, {2}, {3}}},
                {"w", false, DType::F32, {{4}, {1}, {-1, kh}, {-1, kw}}},
                {"bias", false, DType::F32, {{4}}},
                {"k", true, DType::I64, {}}};
    std::string stride = std::to_string(1 + pick(2)),
                pad = std::to_string(pick(2));
    std::string conv = "conv2d(x, w" +
                       std::string(pick(2) ? ", bias=bias" : "") +
                       ", stride=" + stride + ", padding=" + pad + ")";
    std::string body = "  let e = " + conv + ";\n";
    std::vector<Tail> tails = {
        {"", "e", "f32[?, ?, ?, ?]"},
        {"", "relu(e) * 2.0", "f32[?, ?, ?, ?]"},
        {"", "max_pool2d(x, 2)", "f32[?, ?, ?, ?]"},
        {"",
         "max_pool2d(x, " + std::to_string(1 + pick(3)) +
             ", stride=" + std::to_string(1 + pick(2)) +
             ", padding=" + std::to_string(pick(2)) + ")",
         "f32[?, ?, ?, ?]"},
        {"", "sum(e, axis=1)", "f32[?, ?, ?]"},
        {"", "max_pool2d(relu(e), 1)", "f32[?, ?, ?, ?]"}};
    Tail t1 = forced ? *forced : tails[pick(tails.size())];
    Tail t2 = tails[pick(tails.size())];
    return finish(p,
                  "fn f(x: f32[N, C, H, W], w: f32[O, C, " +
                      std::to_string(kh) + ", " + std::to_string(kw) +
                      "], bias: f32[O], k: int dynamic)",
                  body, t1, t2);
  }

  /// The float program's parameters and its `let e`, `let b` lines.
  Program floatParams(std::string &body) {
    grad_ = true;
    Program p;
    p.family = "float-grad";
    p.dims = {"N", "M", "K"};
    p.exampleDims = {3, 4, 2};
    p.maxDims = {24, 24, 6};
    p.params = {{"x0", false, DType::F32, {{0}, {1}}},
                {"x1", false, DType::F32, {{1}}},
                {"x2", false, DType::F32, {{0}, {-1, 1}}},
                {"idx", false, DType::I64, {{2}}, Param::Data::Index, 0},
                {"k", true, DType::I64, {}}};
    std::string e = F(1 + static_cast<int>(pick(3)));
    std::string b = B(1 + static_cast<int>(pick(2)));
    body = "  let e = " + e + " + x0 * 0.0;\n  let b = " + b + " + x0 * 0.0;\n";
    return p;
  }

  /// The conv program's parameters and its `let e` line (padding below
  /// the kernel size: conv2d's gradient needs it).
  Program convParams(std::string &signature, std::string &body) {
    Program p;
    p.family = "conv-grad";
    p.dims = {"N", "C", "H", "W", "O"};
    p.exampleDims = {2, 2, 7, 6, 3};
    p.maxDims = {3, 3, 11, 11, 4};
    int64_t kh = 1 + pick(3), kw = 1 + pick(3);
    p.params = {{"x", false, DType::F32, {{0}, {1}, {2}, {3}}},
                {"w", false, DType::F32, {{4}, {1}, {-1, kh}, {-1, kw}}},
                {"bias", false, DType::F32, {{4}}},
                {"k", true, DType::I64, {}}};
    int64_t pad = std::min(kh, kw) > 1 ? pick(2) : 0;
    body = "  let e = conv2d(x, w" + std::string(pick(2) ? ", bias=bias" : "") +
           ", stride=" + std::to_string(1 + pick(2)) +
           ", padding=" + std::to_string(pad) + ");\n";
    signature = "fn f(x: f32[N, C, H, W], w: f32[O, C, " + std::to_string(kh) +
                ", " + std::to_string(kw) + "], bias: f32[O], k: int dynamic)";
    return p;
  }

  /// \p g's pre and expr with its `$` replaced by a fresh name.
  Tail gradProbeTail(const GradProbe &g) {
    Probe p{g.op, g.family, g.pre, g.expr, ""};
    return probeTail(p);
  }

  /// One or two distinct values to differentiate with respect to, from
  /// \p names (parameters and `let` values), with their types; one of
  /// them the root names[0], which every probe depends on (so every
  /// probe's op is differentiated).
  std::vector<std::pair<std::string, std::string>>
  pickWrt(const std::vector<std::pair<std::string, std::string>> &names) {
    size_t a = pick(names.size());
    std::vector<std::pair<std::string, std::string>> wrt = {names[a]};
    if (a != 0) {
      wrt.push_back(names[0]);
    } else if (pick(2)) {
      size_t b = pick(names.size() - 1);
      wrt.push_back(names[b >= a ? b + 1 : b]);
    }
    return wrt;
  }

  /// `let (g..) = <call>(<args>, wrt=...)`, its results appended to \p
  /// results and \p types.
  std::string
  gradLet(const std::string &call, const std::string &args,
          std::vector<std::string> &results, std::vector<std::string> &types,
          const std::vector<std::pair<std::string, std::string>> &wrt) {
    std::string names, list;
    for (size_t i = 0; i < wrt.size(); ++i) {
      std::string g = "g" + std::to_string(results.size());
      results.push_back(g);
      types.push_back(wrt[i].second);
      names += (i ? ", " : "") + g;
      list += (i ? ", " : "") + wrt[i].first;
    }
    if (wrt.size() > 1) {
      names = "(" + names + ")";
      list = "(" + list + ")";
    }
    return "  let " + names + " = " + call + "(" + args + ", wrt=" + list +
           ");\n";
  }

  /// Gradient program \p j: probes 2j and 2j + 1 (the second replaced by a
  /// random probe of the first's family when the families differ). Even j:
  /// grad of the sum of both; odd j: the vjp of the first with a
  /// cotangent of its values, and grad of the second's sum. The gradients
  /// are the results.
  Program gradProgram(int64_t j) {
    const std::vector<const GradProbe *> &probes = activeGradProbes();
    int64_t n = static_cast<int64_t>(probes.size());
    const GradProbe &first = *probes[(2 * j) % n];
    const GradProbe *second = probes[(2 * j + 1) % n];
    while (second->family != first.family)
      second = probes[pick(n)];
    return gradProgramOf(first, *second, j);
  }

public:
  /// The gradient program of probes \p first and \p second (of one
  /// family); \p j's parity chooses grad or vjp.
  Program gradProgramOf(const GradProbe &first, const GradProbe &second,
                        int64_t j) {
    std::string signature, body;
    Program p;
    std::vector<std::pair<std::string, std::string>> names;
    if (first.family == Family::Conv) {
      p = convParams(signature, body);
      names = {{"x", "f32[?, ?, ?, ?]"},
               {"w", "f32[?, ?, ?, ?]"},
               {"bias", "f32[?]"},
               {"e", "f32[?, ?, ?, ?]"}};
    } else {
      p = floatParams(body);
      signature = "fn f(x0: f32[N, M], x1: f32[M], x2: f32[N, 1], idx: "
                  "i64[K], k: int dynamic)";
      names = {{"x0", "f32[?, ?]"},
               {"x1", "f32[?]"},
               {"x2", "f32[?, ?]"},
               {"e", "f32[?, ?]"},
               {"b", "f32[?, ?]"}};
    }
    Tail a = gradProbeTail(first), b = gradProbeTail(second);
    body += "  " + a.pre + b.pre + "let qa = " + a.expr +
            ";\n  let qb = " + b.expr + ";\n";
    std::string dims;
    for (const std::string &d : p.dims)
      dims += "dim " + d + ": dynamic;\n";
    p.forward =
        dims + signature + " -> f32 {\n" + body + "  return (qa, qb);\n}\n";
    std::vector<std::string> results, types;
    if (j % 2 == 0) {
      body +=
          gradLet("grad", "sum(qa) + sum(qb)", results, types, pickWrt(names));
    } else {
      body += gradLet("vjp", "qa, tanh(stop_gradient(qa)) * 0.5 + 1.0", results,
                      types, pickWrt(names));
      body += gradLet("grad", "sum(qb)", results, types, pickWrt(names));
    }
    std::string resultList, typeList;
    for (size_t i = 0; i < results.size(); ++i) {
      resultList += (i ? ", " : "") + results[i];
      typeList += (i ? ", " : "") + types[i];
    }
    if (results.size() > 1) {
      resultList = "(" + resultList + ")";
      typeList = "(" + typeList + ")";
    }
    p.source = dims + signature + " -> " + typeList + " {\n" + body +
               "  return " + resultList + ";\n}\n";
    return p;
  }

private:
  Program finish(Program p, const std::string &signature,
                 const std::string &body, const Tail &t1, const Tail &t2) {
    std::string dims;
    for (const std::string &d : p.dims)
      dims += "dim " + d + ": dynamic;\n";
    p.source = dims + signature + " -> (" + t1.type + ", " + t2.type + ") {\n" +
               body + "  " + t1.pre + t2.pre + "return (" + t1.expr + ", " +
               t2.expr + ");\n}\n";
    return p;
  }
};

} // namespace tsl::diff
