// Gradient checks (issue 32): for every op with a VJP rule
// (ir/Differentiate.cpp), `grad` of a loss through it against central finite
// differences of the loss, in f64 on the interpreter, at shapes with sizes
// 0 and 1 and broadcasts. Each variant with `grad` must also have exactly
// the guards of its loss alone: the backward asks no new size question.
#include "frontend/Elaborator.h"
#include "ir/Differentiate.h"
#include "ir/Interpreter.h"
#include "ir/Verifier.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <sstream>

using namespace tsl;

namespace {

using Shapes = std::map<std::string, std::vector<int64_t>>;

struct Param {
  const char *name;
  const char *type; ///< "f64[N, M]"; i64 parameters are indices
};

struct Case {
  const char *name;
  std::vector<Param> params;
  /// Statements that end by defining `y`, the 0-d loss.
  const char *body;
  /// The parameters differentiated, in order.
  std::vector<std::string> wrt;
  /// The shapes to check at (each parameter's).
  std::vector<Shapes> shapes;
  /// Integer parameters hold (7 i + 3) % intMod.
  int64_t intMod = 3;
  /// |fd - grad| <= tol * (1 + |fd|).
  double tol = 1e-6;
};

/// gtest names a failing case by its name.
void PrintTo(const Case &c, std::ostream *os) { *os << c.name; }

const char *kHeader = "import nn;\n"
                      "dim N: dynamic; dim M: dynamic; dim K: dynamic;\n"
                      "dim B: dynamic; dim L: dynamic;\n";

std::string typeOf(const Case &c, const std::string &name) {
  for (const Param &p : c.params)
    if (name == p.name)
      return p.type;
  return "?";
}

std::string source(const Case &c) {
  std::string params;
  for (const Param &p : c.params)
    params += std::string(params.empty() ? "" : ", ") + p.name + ": " + p.type;
  std::string wrt, results;
  for (const std::string &w : c.wrt) {
    wrt += (wrt.empty() ? "" : ", ") + w;
    results += (results.empty() ? "" : ", ") + typeOf(c, w);
  }
  if (c.wrt.size() > 1)
    wrt = "(" + wrt + ")", results = "(" + results + ")";
  return std::string(kHeader) + "fn loss(" + params + ") -> f64 {\n  " +
         c.body + "\n  return y;\n}\nfn f(" + params + ") -> " + results +
         " {\n  " + c.body + "\n  return grad(y, wrt=" + wrt + ");\n}\n";
}

bool compile(const std::string &text, const std::string &fnName,
             const std::map<std::string, ExampleArg> &examples, Function &out,
             std::string &diagnostics) {
  SourceManager sm;
  std::ostringstream sink;
  DiagnosticEngine diags(sm, sink);
  ModuleLoader loader(sm, diags);
  const LoadedModule *m = loader.loadText("grad.tsl", text);
  ElaborateOptions options;
  options.examples = examples;
  bool ok = m && elaborateFunction(*m, fnName, options, diags, out);
  diagnostics = sink.str();
  if (!ok)
    return false;
  if (Expected<void> verified = verifyFunction(out); !verified) {
    diagnostics += "verifier: " + verified.error().message;
    return false;
  }
  return ok;
}

std::string guardText(const Function &fn) {
  std::string s;
  for (const Check &g : fn.guards)
    s += g.cond.str() + "; ";
  return s;
}

Tensor copyOf(const Tensor &t) {
  Tensor c = Tensor::zeros(t.dtype(), t.shape());
  for (size_t i = 0; i < t.numel(); ++i)
    c.copyElement(i, t, i);
  return c;
}

double run(const Function &fn, const std::vector<ArgValue> &args,
           std::vector<Tensor> &outs) {
  RunError error;
  outs.clear();
  EXPECT_TRUE(interpret(fn, args, outs, error)) << error.message;
  return outs.empty() || outs[0].numel() == 0 ? NAN : outs[0].getF(0);
}

void check(const Case &c, const Shapes &shapes, unsigned seed) {
  std::string text = source(c), diagnostics;
  std::map<std::string, ExampleArg> examples;
  std::vector<ArgValue> args;
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  for (const Param &p : c.params) {
    bool isInt = std::string(p.type).rfind("i64", 0) == 0;
    ExampleArg e;
    e.dtype = isInt ? DType::I64 : DType::F64;
    e.shape = shapes.at(p.name);
    examples[p.name] = e;
    ArgValue a;
    a.tensor = Tensor::zeros(e.dtype, e.shape);
    for (size_t i = 0; i < a.tensor.numel(); ++i)
      if (isInt)
        a.tensor.setI(i, (7 * static_cast<int64_t>(i) + 3) % c.intMod);
      else
        a.tensor.setF(i, uniform(rng));
    args.push_back(a);
  }
  Function lossFn, gradFn;
  ASSERT_TRUE(compile(text, "loss", examples, lossFn, diagnostics))
      << diagnostics << text;
  ASSERT_TRUE(compile(text, "f", examples, gradFn, diagnostics))
      << diagnostics << text;
  EXPECT_EQ(guardText(lossFn), guardText(gradFn)) << text;
  std::vector<Tensor> grads, outs;
  run(gradFn, args, grads);
  ASSERT_EQ(grads.size(), c.wrt.size());
  for (size_t w = 0; w < c.wrt.size(); ++w) {
    size_t k = 0;
    while (c.params[k].name != c.wrt[w])
      ++k;
    const Tensor &g = grads[w];
    ASSERT_EQ(g.shape(), args[k].tensor.shape()) << c.wrt[w];
    Tensor base = args[k].tensor;
    for (size_t i = 0; i < base.numel(); ++i) {
      const double h = 1e-6, x = base.getF(i);
      std::vector<ArgValue> moved = args;
      moved[k].tensor = copyOf(base);
      moved[k].tensor.setF(i, x + h);
      double up = run(lossFn, moved, outs);
      moved[k].tensor.setF(i, x - h);
      double down = run(lossFn, moved, outs);
      double fd = (up - down) / (2 * h);
      EXPECT_NEAR(g.getF(i), fd, c.tol * (1 + std::fabs(fd)))
          << c.name << ": d/d" << c.wrt[w] << "[" << i << "]";
    }
  }
}

Shapes nm(int64_t n, int64_t m) { return {{"a", {n, m}}, {"c", {n, m}}}; }
/// \p s with \p more added.
Shapes with(Shapes s, const Shapes &more) {
  for (const auto &[k, v] : more)
    s[k] = v;
  return s;
}

std::vector<Case> unaryCases() {
  std::vector<Case> out;
  for (const char *op :
       {"-", "exp", "log1", "sqrt1", "rsqrt1", "tanh", "sigmoid", "relu",
        "gelu", "erf", "abs", "sin", "cos"}) {
    std::string e = op;
    std::string expr = e == "-" ? "-a"
                       : e.back() == '1'
                           ? e.substr(0, e.size() - 1) + "(a * a + 0.5)"
                           : e + "(a)";
    static std::vector<std::string> bodies; // keeps the c_str alive
    bodies.push_back("let y = sum(" + expr + " * c);");
    out.push_back({op,
                   {{"a", "f64[N, M]"}, {"c", "f64[N, M]"}},
                   bodies.back().c_str(),
                   {"a"},
                   {nm(2, 3), nm(0, 3), nm(1, 1)}});
  }
  return out;
}

std::vector<Case> elementwiseCases() {
  std::vector<Param> abc = {
      {"a", "f64[N, M]"}, {"b", "f64[M]"}, {"c", "f64[N, M]"}};
  std::vector<Shapes> bs = {with(nm(2, 3), {{"b", {3}}}),
                            with(nm(0, 3), {{"b", {3}}}),
                            with(nm(1, 1), {{"b", {1}}})};
  std::vector<Param> kb = {
      {"a", "f64[N, M]"}, {"b", "f64[K, M]"}, {"c", "f64[N, M]"}};
  // K = 1 against N = 3: a size-1 broadcast the forward guards; K = 3: equal.
  std::vector<Shapes> ks = {with(nm(3, 2), {{"b", {1, 2}}}),
                            with(nm(3, 2), {{"b", {3, 2}}})};
  return {
      {"add", abc, "let y = sum((a + b) * c);", {"a", "b"}, bs},
      {"add_size1_guard", kb, "let y = sum((a + b) * c);", {"a", "b"}, ks},
      {"sub", abc, "let y = sum((a - b) * c);", {"a", "b"}, bs},
      {"mul", kb, "let y = sum(a * b * c);", {"a", "b"}, ks},
      {"mul_bcast", abc, "let y = sum(a * b * c);", {"a", "b"}, bs},
      {"div", abc, "let y = sum(c * a / (b * b + 1.0));", {"a", "b"}, bs},
      {"pow", abc, "let y = sum(pow(a * a + 1.0, b) * c);", {"a", "b"}, bs},
      {"maximum", abc, "let y = sum(max(a, b) * c);", {"a", "b"}, bs},
      {"minimum", abc, "let y = sum(min(a, b) * c);", {"a", "b"}, bs},
      {"where",
       abc,
       "let y = sum(where(a > 0.0, a * b, b) * c);",
       {"a", "b"},
       bs},
      {"cast",
       abc,
       "let y = sum(cast(cast(a, f32), f64) * c);",
       {"a"},
       bs,
       3,
       1e-2},
      {"scalar_literal", abc, "let y = sum((2.0 * a - 1.0) * c);", {"a"}, bs},
  };
}

std::vector<Case> reductionCases() {
  std::vector<Param> and_d = {
      {"a", "f64[N, M]"}, {"c", "f64[N, M]"}, {"d", "f64[N]"}};
  std::vector<Shapes> ds = {with(nm(2, 3), {{"d", {2}}}),
                            with(nm(0, 3), {{"d", {0}}}),
                            with(nm(1, 1), {{"d", {1}}})};
  return {
      {"sum_axis", and_d, "let y = sum(sum(a, axis=1) * d);", {"a"}, ds},
      {"sum_all", and_d, "let y = sum(a * c);", {"a"}, ds},
      {"sum_keepdim",
       and_d,
       "let y = sum(sum(a, axis=0, keepdim=true) * c);",
       {"a"},
       ds},
      {"mean_axis", and_d, "let y = sum(mean(a, axis=1) * d);", {"a"}, ds},
      {"mean_all",
       and_d,
       "let y = mean(a * c) + sum(d);",
       {"a"},
       {with(nm(2, 3), {{"d", {2}}}), with(nm(1, 1), {{"d", {1}}})}},
      {"max_axis", and_d, "let y = sum(max(a, axis=1) * d);", {"a"}, ds},
      {"min_axis", and_d, "let y = sum(min(a, axis=1) * d);", {"a"}, ds},
      {"max_keepdim",
       and_d,
       "let y = sum((a - max(a, axis=0, keepdim=true)) * c);",
       {"a"},
       {with(nm(2, 3), {{"d", {2}}}), with(nm(1, 1), {{"d", {1}}})}},
      {"cumsum", and_d, "let y = sum(cumsum(a, 1) * c);", {"a"}, ds},
      {"cumsum_reverse",
       and_d,
       "let y = sum(cumsum(a * a, 0, reverse=true) * c);",
       {"a"},
       ds},
  };
}

std::vector<Case> matmulCases() {
  return {
      {"matmul",
       {{"a", "f64[N, K]"}, {"b", "f64[K, M]"}, {"c", "f64[N, M]"}},
       "let y = sum((a @ b) * c);",
       {"a", "b"},
       {{{"a", {2, 3}}, {"b", {3, 4}}, {"c", {2, 4}}},
        {{"a", {2, 0}}, {"b", {0, 4}}, {"c", {2, 4}}},
        {{"a", {1, 1}}, {"b", {1, 1}}, {"c", {1, 1}}}}},
      {"matmul_batch_bcast",
       {{"a", "f64[B, N, K]"}, {"b", "f64[K, M]"}, {"c", "f64[B, N, M]"}},
       "let y = sum((a @ b) * c);",
       {"a", "b"},
       {{{"a", {2, 2, 3}}, {"b", {3, 2}}, {"c", {2, 2, 2}}},
        {{"a", {0, 2, 3}}, {"b", {3, 2}}, {"c", {0, 2, 2}}}}},
      {"matmul_batch_size1",
       {{"a", "f64[B, N, K]"}, {"b", "f64[L, K, M]"}, {"c", "f64[B, N, M]"}},
       "let y = sum((a @ b) * c);",
       {"a", "b"},
       {{{"a", {2, 2, 3}}, {"b", {1, 3, 2}}, {"c", {2, 2, 2}}},
        {{"a", {2, 2, 3}}, {"b", {2, 3, 2}}, {"c", {2, 2, 2}}}}},
      {"vector_matrix",
       {{"a", "f64[K]"}, {"b", "f64[K, M]"}, {"c", "f64[M]"}},
       "let y = sum((a @ b) * c);",
       {"a", "b"},
       {{{"a", {3}}, {"b", {3, 2}}, {"c", {2}}},
        {{"a", {1}}, {"b", {1, 1}}, {"c", {1}}}}},
      {"matrix_vector",
       {{"a", "f64[N, K]"}, {"b", "f64[K]"}, {"c", "f64[N]"}},
       "let y = sum((a @ b) * c);",
       {"a", "b"},
       {{{"a", {2, 3}}, {"b", {3}}, {"c", {2}}}}},
      {"dot",
       {{"a", "f64[K]"}, {"b", "f64[K]"}},
       "let y = a @ b;",
       {"a", "b"},
       {{{"a", {3}}, {"b", {3}}}, {{"a", {0}}, {"b", {0}}}}},
  };
}

std::vector<Case> layoutCases() {
  std::vector<Param> ac = {{"a", "f64[N, M]"}, {"c", "f64[N, M]"}};
  return {
      {"reshape",
       {{"a", "f64[N, M]"}, {"c", "f64[M, N]"}},
       "let y = sum(reshape(a, [M, N]) * c);",
       {"a"},
       {{{"a", {2, 3}}, {"c", {3, 2}}}, {{"a", {0, 3}}, {"c", {3, 0}}}}},
      // The backward asks B * N == 4 * B * (N / 4) again: the check proves it.
      {"reshape_divided_dim",
       {{"a", "f64[B, N]"}, {"w", "f64[N]"}},
       "check(N % 4 == 0); "
       "let r = reshape(reshape(a * w, [B, 4, N / 4]), [B, N]); "
       "let y = sum(r * r);",
       {"a", "w"},
       {{{"a", {3, 8}}, {"w", {8}}},
        {{"a", {1, 4}}, {"w", {4}}},
        {{"a", {2, 0}}, {"w", {0}}}}},
      {"transpose",
       {{"a", "f64[N, M]"}, {"c", "f64[M, N]"}},
       "let y = sum(transpose(a, 0, 1) * c);",
       {"a"},
       {{{"a", {2, 3}}, {"c", {3, 2}}}, {{"a", {1, 1}}, {"c", {1, 1}}}}},
      {"permute",
       {{"a", "f64[B, N, M]"}, {"c", "f64[M, B, N]"}},
       "let y = sum(permute(a, [2, 0, 1]) * c);",
       {"a"},
       {{{"a", {2, 3, 4}}, {"c", {4, 2, 3}}}}},
      {"expand",
       {{"a", "f64[1, M]"}, {"c", "f64[N, M]"}},
       "let y = sum(expand(a, [N, M]) * c);",
       {"a"},
       {{{"a", {1, 3}}, {"c", {2, 3}}}, {{"a", {1, 3}}, {"c", {0, 3}}}}},
      {"slice",
       ac,
       "let y = sum(a[:, 1:] * c[:, 1:]);",
       {"a"},
       {nm(2, 3), nm(0, 3), nm(1, 1)}},
      {"slice_step",
       {{"a", "f64[N, M]"}, {"c", "f64[N, M]"}},
       "let y = sum(a[::2, 1::3] * c[::2, 1::3]) + sum(a[1::2] * c[1::2]);",
       {"a"},
       {nm(5, 7), nm(4, 2)}},
      {"index_row",
       ac,
       "let y = sum(a[0] * c[0]);",
       {"a"},
       {nm(2, 3), nm(1, 1)}},
      {"concat",
       {{"a", "f64[N, M]"}, {"b", "f64[K, M]"}, {"c", "f64[N + K, M]"}},
       "let y = sum(concat([a, b], axis=0) * c);",
       {"a", "b"},
       {{{"a", {2, 3}}, {"b", {1, 3}}, {"c", {3, 3}}},
        {{"a", {0, 3}}, {"b", {2, 3}}, {"c", {2, 3}}}}},
      {"pad",
       {{"a", "f64[N]"}, {"c", "f64[N + 3]"}},
       "let y = sum(pad(a, [1, 2]) * c);",
       {"a"},
       {{{"a", {3}}, {"c", {6}}}, {{"a", {0}}, {"c", {3}}}}},
      {"update_slice",
       {{"a", "f64[N, M]"}, {"b", "f64[M]"}, {"c", "f64[N, M]"}},
       "var z = a * 1.0; z[0, :] = b * 2.0; let y = sum(z * c);",
       {"a", "b"},
       {with(nm(2, 3), {{"b", {3}}}), with(nm(1, 1), {{"b", {1}}})}},
  };
}

std::vector<Case> indexingCases() {
  return {
      {"index_select",
       {{"a", "f64[N, M]"}, {"i", "i64[K]"}, {"c", "f64[K, M]"}},
       "let y = sum(index_select(a, 0, i) * c);",
       {"a"},
       {{{"a", {3, 2}}, {"i", {5}}, {"c", {5, 2}}},
        {{"a", {3, 2}}, {"i", {0}}, {"c", {0, 2}}}}},
      {"gather",
       {{"a", "f64[N, M]"}, {"i", "i64[N, K]"}, {"c", "f64[N, K]"}},
       "let y = sum(gather(a, 1, i) * c);",
       {"a"},
       {{{"a", {2, 3}}, {"i", {2, 4}}, {"c", {2, 4}}}}},
      {"scatter_add",
       {{"a", "f64[N, M]"},
        {"i", "i64[N, K]"},
        {"s", "f64[N, K]"},
        {"c", "f64[N, M]"}},
       "let y = sum(scatter_add(a, 1, i, s * s) * c);",
       {"a", "s"},
       {{{"a", {2, 3}}, {"i", {2, 4}}, {"s", {2, 4}}, {"c", {2, 3}}}}},
      {"conv2d",
       {{"x", "f64[B, K, N, M]"},
        {"w", "f64[L, K, 3, 2]"},
        {"b", "f64[L]"},
        {"c", "f64[B, L, N, M - 1]"}},
       "let y = sum(conv2d(x, w, b, padding=[1, 0]) * c);",
       {"x", "w", "b"},
       {{{"x", {2, 2, 4, 3}},
         {"w", {3, 2, 3, 2}},
         {"b", {3}},
         {"c", {2, 3, 4, 2}}},
        {{"x", {1, 1, 1, 2}},
         {"w", {1, 1, 3, 2}},
         {"b", {1}},
         {"c", {1, 1, 1, 1}}}}},
      {"conv2d_padded",
       {{"x", "f64[B, K, N, M]"},
        {"w", "f64[L, K, 3, 3]"},
        {"c", "f64[B, L, N, M]"}},
       "let y = sum(conv2d(x, w, padding=1) * c);",
       {"x", "w"},
       {{{"x", {1, 2, 3, 4}}, {"w", {2, 2, 3, 3}}, {"c", {1, 2, 3, 4}}},
        {{"x", {1, 2, 1, 4}}, {"w", {2, 2, 3, 3}}, {"c", {1, 2, 1, 4}}}}},
      {"conv2d_stride",
       {{"x", "f64[B, K, N, M]"}, {"w", "f64[L, K, 3, 2]"}, {"b", "f64[L]"}},
       "let h = conv2d(x, w, b, stride=[2, 3], padding=[1, 1]); "
       "let y = sum(h * h);",
       {"x", "w", "b"},
       {{{"x", {2, 2, 5, 7}}, {"w", {3, 2, 3, 2}}, {"b", {3}}},
        {{"x", {1, 1, 1, 1}}, {"w", {1, 1, 3, 2}}, {"b", {1}}},
        {{"x", {1, 2, 6, 4}}, {"w", {2, 2, 3, 2}}, {"b", {2}}}}},
      {"max_pool2d",
       {{"x", "f64[B, K, N, M]"},
        {"c", "f64[B, K, (N - 2) / 2 + 1, (M + 2 - 3) / 2 + 1]"}},
       "let y = sum(max_pool2d(x, [2, 3], [2, 2], [0, 1]) * c);",
       {"x"},
       {{{"x", {2, 2, 4, 5}}, {"c", {2, 2, 2, 3}}},
        {{"x", {1, 1, 2, 1}}, {"c", {1, 1, 1, 1}}},
        {{"x", {1, 2, 5, 4}}, {"c", {1, 2, 2, 2}}}}},
      {"max_pool2d_stride1",
       {{"x", "f64[B, K, N, M]"}, {"c", "f64[B, K, N - 1, M - 1]"}},
       "let y = sum(max_pool2d(x, 2, 1) * c);",
       {"x"},
       {{{"x", {2, 2, 4, 5}}, {"c", {2, 2, 3, 4}}}}},
      {"scatter_overwrite",
       {{"a", "f64[N, M]"},
        {"i", "i64[N, K]"},
        {"s", "f64[N, K]"},
        {"c", "f64[N, M]"}},
       "let y = sum(scatter(a * a, 1, i, s * s) * c);",
       {"a", "s"},
       {{{"a", {2, 5}}, {"i", {2, 2}}, {"s", {2, 2}}, {"c", {2, 5}}}},
       5},
      {"masked_select",
       {{"a", "f64[N, M]"}, {"c", "f64[N, M]"}},
       "let s = masked_select(a, c > 0.0); let y = sum(s * s * s);",
       {"a"},
       {nm(2, 3), nm(0, 3), nm(1, 1), nm(3, 4)}},
      {"index_add",
       {{"a", "f64[N, M]"},
        {"i", "i64[K]"},
        {"s", "f64[K, M]"},
        {"c", "f64[N, M]"}},
       "let y = sum(index_add(a * a, 0, i, s * s) * c);",
       {"a", "s"},
       {{{"a", {3, 2}}, {"i", {5}}, {"s", {5, 2}}, {"c", {3, 2}}},
        {{"a", {3, 2}}, {"i", {0}}, {"s", {0, 2}}, {"c", {3, 2}}},
        {{"a", {4, 0}}, {"i", {2}}, {"s", {2, 0}}, {"c", {4, 0}}}}},
      {"index_add_inner_axis",
       {{"a", "f64[N, M]"},
        {"i", "i64[K]"},
        {"s", "f64[N, K]"},
        {"c", "f64[N, M]"}},
       "let y = sum(index_add(a, 1, i, s * s) * c);",
       {"a", "s"},
       {{{"a", {2, 1}}, {"i", {3}}, {"s", {2, 3}}, {"c", {2, 1}}},
        {{"a", {1, 1}}, {"i", {1}}, {"s", {1, 1}}, {"c", {1, 1}}}},
       1},
      {"masked_scatter",
       {{"a", "f64[N, M]"}, {"c", "f64[N, M]"}, {"s", "f64[K]"}},
       "let y = sum(masked_scatter(a * a, c > 0.0, s * s) * c);",
       {"a", "s"},
       {{{"a", {2, 3}}, {"c", {2, 3}}, {"s", {7}}},
        {{"a", {0, 3}}, {"c", {0, 3}}, {"s", {2}}},
        {{"a", {1, 1}}, {"c", {1, 1}}, {"s", {1}}}}},
      {"masked_scatter_broadcast_mask",
       {{"a", "f64[N, M]"}, {"d", "f64[M]"}, {"s", "f64[K, 2]"}},
       "let y = sum(masked_scatter(a, d > 0.0, s * s) * a);",
       {"a", "s"},
       {{{"a", {3, 2}}, {"d", {2}}, {"s", {4, 2}}},
        {{"a", {1, 1}}, {"d", {1}}, {"s", {1, 2}}}}},
      {"topk",
       {{"a", "f64[N, M]"}, {"c", "f64[N, 2]"}},
       "let (v, j) = topk(a, 2); let y = sum(v * c);",
       {"a"},
       {{{"a", {2, 4}}, {"c", {2, 2}}}}},
      {"sort",
       {{"a", "f64[N, M]"}, {"c", "f64[N, M]"}},
       "let y = sum(sort(a, 1) * c);",
       {"a"},
       {nm(2, 4), nm(0, 4)}},
  };
}

std::vector<Case> nnCases() {
  std::vector<Param> ac = {{"a", "f64[N, M]"}, {"c", "f64[N, M]"}};
  return {
      {"softmax",
       ac,
       "let y = sum(nn.softmax(a) * c);",
       {"a"},
       {nm(2, 3), nm(0, 3), nm(1, 1)}},
      {"log_softmax",
       ac,
       "let y = sum(nn.log_softmax(a, axis=0) * c);",
       {"a"},
       {nm(2, 3), nm(1, 1)}},
      {"layer_norm",
       {{"a", "f64[N, M]"},
        {"w", "f64[M]"},
        {"b", "f64[M]"},
        {"c", "f64[N, M]"}},
       "let y = sum(nn.layer_norm(a, w, b) * c);",
       {"a", "w", "b"},
       {with(nm(2, 3), {{"w", {3}}, {"b", {3}}}),
        with(nm(0, 3), {{"w", {3}}, {"b", {3}}})}},
      {"linear_cross_entropy",
       {{"x", "f64[N, K]"},
        {"w", "f64[K, M]"},
        {"b", "f64[M]"},
        {"l", "i64[N]"}},
       "let y = nn.cross_entropy(nn.linear(x, w, b), l);",
       {"x", "w", "b"},
       {{{"x", {4, 3}}, {"w", {3, 3}}, {"b", {3}}, {"l", {4}}},
        {{"x", {1, 2}}, {"w", {2, 3}}, {"b", {3}}, {"l", {1}}}}},
      {"attention_mask",
       {{"q", "f64[B, M, N, K]"},
        {"k", "f64[B, M, N, K]"},
        {"v", "f64[B, M, N, K]"},
        {"m", "f64[L, 1, 1, N]"}},
       "let y = mean(nn.attention(q, k, v, m) * nn.attention(q, k, v, m));",
       {"q", "k", "v", "m"},
       {{{"q", {1, 2, 3, 2}},
         {"k", {1, 2, 3, 2}},
         {"v", {1, 2, 3, 2}},
         {"m", {1, 1, 1, 3}}},
        {{"q", {3, 2, 3, 2}},
         {"k", {3, 2, 3, 2}},
         {"v", {3, 2, 3, 2}},
         {"m", {1, 1, 1, 3}}}}},
      {"gelu_tanh_mlp",
       {{"x", "f64[N, K]"}, {"w", "f64[K, M]"}, {"b", "f64[M]"}},
       "let y = mean(nn.gelu_tanh(nn.linear(x, w, b)));",
       {"x", "w", "b"},
       {{{"x", {2, 3}}, {"w", {3, 2}}, {"b", {2}}}}},
  };
}

std::vector<Case> layerCases() {
  return {
      {"embedding",
       {{"i", "i64[N, K]"}, {"t", "f64[M, L]"}, {"c", "f64[N, K, L]"}},
       "let y = sum(nn.embedding(i, t) * c);",
       {"t"},
       {{{"i", {2, 3}}, {"t", {3, 2}}, {"c", {2, 3, 2}}},
        {{"i", {0, 3}}, {"t", {3, 2}}, {"c", {0, 3, 2}}}}},
      {"batch_norm",
       {{"x", "f64[N, M, K]"},
        {"rm", "f64[M]"},
        {"rv", "f64[M]"},
        {"w", "f64[M]"},
        {"b", "f64[M]"},
        {"c", "f64[N, M, K]"}},
       "let y = sum(nn.batch_norm(x, rm, rv * rv + 0.5, w, b) * c);",
       {"x", "rm", "rv", "w", "b"},
       {{{"x", {2, 3, 2}},
         {"rm", {3}},
         {"rv", {3}},
         {"w", {3}},
         {"b", {3}},
         {"c", {2, 3, 2}}}}},
      {"encoder_layer",
       {{"x", "f64[B, N, K]"},
        {"wq", "f64[K, K]"},
        {"wk", "f64[K, K]"},
        {"wv", "f64[K, K]"},
        {"wo", "f64[K, K]"},
        {"g1", "f64[K]"},
        {"b1", "f64[K]"},
        {"w1", "f64[K, M]"},
        {"c1", "f64[M]"},
        {"w2", "f64[M, K]"},
        {"c2", "f64[K]"},
        {"g2", "f64[K]"},
        {"b2", "f64[K]"},
        {"c", "f64[B, N, K]"}},
       "let y = sum(nn.encoder_layer(x, 2, wq, wk, wv, wo, g1, b1, w1, c1, "
       "w2, c2, g2, b2) * c);",
       {"x", "wq", "wk", "w1", "g2"},
       {{{"x", {1, 3, 4}},
         {"wq", {4, 4}},
         {"wk", {4, 4}},
         {"wv", {4, 4}},
         {"wo", {4, 4}},
         {"g1", {4}},
         {"b1", {4}},
         {"w1", {4, 3}},
         {"c1", {3}},
         {"w2", {3, 4}},
         {"c2", {4}},
         {"g2", {4}},
         {"b2", {4}},
         {"c", {1, 3, 4}}}}},
  };
}

/// Reverse mode through `for` loops (ir/VjpLoops.cpp): static, dynamic and
/// zero trip counts, a carried RNN state, a carried `out[t] = h`, stacked
/// weights, a nested loop and an unbacked trip count.
std::vector<Case> loopCases() {
  return {
      {"loop_static",
       {{"a", "f64[N, M]"}, {"b", "f64[M]"}, {"c", "f64[N, M]"}},
       "var h = a; for t in 0..3 { h = tanh(h * b + 0.5); } "
       "let y = sum(h * c);",
       {"a", "b"},
       {with(nm(2, 3), {{"b", {3}}}), with(nm(1, 1), {{"b", {1}}})}},
      {"loop_dynamic",
       {{"a", "f64[N]"}, {"w", "f64[N]"}, {"xs", "f64[L, N]"}},
       "var h = a; for t in 0..L { h = sin(h * w + xs[t]); } "
       "let y = sum(h * h);",
       {"a", "w", "xs"},
       {{{"a", {3}}, {"w", {3}}, {"xs", {4, 3}}},
        {{"a", {3}}, {"w", {3}}, {"xs", {1, 3}}},
        {{"a", {3}}, {"w", {3}}, {"xs", {0, 3}}}}},
      {"loop_rnn",
       {{"h0", "f64[B, N]"}, {"w", "f64[N, N]"}, {"xs", "f64[L, B, N]"}},
       "var h = h0; for t in 0..L { h = tanh(h @ w + xs[t]); } "
       "let y = sum(h * h);",
       {"h0", "w", "xs"},
       {{{"h0", {2, 3}}, {"w", {3, 3}}, {"xs", {3, 2, 3}}},
        {{"h0", {1, 2}}, {"w", {2, 2}}, {"xs", {0, 1, 2}}}}},
      {"loop_out_rows",
       {{"h0", "f64[N]"},
        {"w", "f64[N, N]"},
        {"xs", "f64[L, N]"},
        {"c", "f64[L, N]"}},
       "var h = h0; var out = zeros([L, N], f64); "
       "for t in 0..L { h = tanh(h @ w + xs[t]); out[t] = h; } "
       "let y = sum(out * c);",
       {"h0", "w", "xs"},
       {{{"h0", {3}}, {"w", {3, 3}}, {"xs", {4, 3}}, {"c", {4, 3}}},
        {{"h0", {2}}, {"w", {2, 2}}, {"xs", {0, 2}}, {"c", {0, 2}}}}},
      {"loop_max_over_rows",
       {{"a", "f64[S, N]"}, {"w", "f64[L, N]"}, {"c", "f64[S, N]"}},
       "var h = a; for l in 0..L { h = h * w[l] - max(h, axis=0); } "
       "let y = sum(h * c);",
       {"a", "w"},
       {{{"a", {4, 3}}, {"w", {2, 3}}, {"c", {4, 3}}},
        {{"a", {1, 2}}, {"w", {3, 2}}, {"c", {1, 2}}}}},
      {"loop_stacked_weights",
       {{"x", "f64[B, N]"},
        {"ws", "f64[L, N, N]"},
        {"bs", "f64[L, N]"},
        {"c", "f64[B, N]"}},
       "var h = x; for l in 0..L { h = tanh(h @ ws[l] + bs[l]); } "
       "let y = sum(h * c);",
       {"x", "ws", "bs"},
       {{{"x", {2, 3}}, {"ws", {4, 3, 3}}, {"bs", {4, 3}}, {"c", {2, 3}}},
        {{"x", {1, 2}}, {"ws", {1, 2, 2}}, {"bs", {1, 2}}, {"c", {1, 2}}}}},
      {"loop_nested",
       {{"a", "f64[N]"}, {"w", "f64[K, N]"}, {"xs", "f64[L, N]"}},
       "var h = a; for t in 0..L { var g = h * 0.5; "
       "for u in 0..K { g = sin(g * w[u]) + xs[t]; h = h + g * 0.25; } } "
       "let y = sum(h * h);",
       {"a", "w", "xs"},
       {{{"a", {2}}, {"w", {3, 2}}, {"xs", {2, 2}}},
        {{"a", {2}}, {"w", {0, 2}}, {"xs", {2, 2}}}}},
      {"loop_triangular",
       {{"a", "f64[N]"}, {"w", "f64[N]"}, {"xs", "f64[L, N]"}},
       "var h = a; for t in 0..L { for u in 0..t { "
       "h = sin(h * w + xs[u] * cast(t, f64)); } } let y = sum(h * h);",
       {"a", "w", "xs"},
       {{{"a", {2}}, {"w", {2}}, {"xs", {4, 2}}},
        {{"a", {2}}, {"w", {2}}, {"xs", {1, 2}}}}},
      {"loop_from",
       {{"w", "f64[N]"}, {"xs", "f64[L, N]"}, {"k", "f64[K]"}},
       "var h = w; for t in K..L { "
       "h = tanh(h * w + xs[t] * cast(t, f64)); } let y = sum(h * h);",
       {"w", "xs"},
       {{{"w", {2}}, {"xs", {4, 2}}, {"k", {1}}},
        {{"w", {2}}, {"xs", {2, 2}}, {"k", {3}}}}},
      {"loop_masked",
       {{"a", "f64[N]"}, {"xs", "f64[L, N]"}},
       "var h = a; for t in 0..L { let x = xs[t]; "
       "h = h * 0.5 + sum(masked_select(h * x, x > 0.0) * 2.0); } "
       "let y = sum(h * h);",
       {"a", "xs"},
       {{{"a", {3}}, {"xs", {4, 3}}}}},
      // A chain of ops whose rules read no values (neg, add) between the
      // recomputed masked_select and the sum: recomputed too, so the
      // cotangent has the recomputed size.
      {"loop_masked_chain",
       {{"a", "f64[N]"}, {"xs", "f64[L, N]"}},
       "var h = a; for t in 0..L { let x = xs[t]; "
       "h = h * 0.5 + sum(-(masked_select(h * x, x > 0.0) + 1.0)); } "
       "let y = sum(h * h);",
       {"a", "xs"},
       {{{"a", {3}}, {"xs", {4, 3}}}}},
      {"loop_unbacked",
       {{"a", "f64[N]"}, {"w", "f64[N]"}, {"m", "i64[K]"}},
       "let n = item(sum(m)); var h = a; "
       "for t in 0..n { h = tanh(h * w + 0.25); } let y = sum(h);",
       {"a", "w"},
       {{{"a", {3}}, {"w", {3}}, {"m", {2}}},
        {{"a", {3}}, {"w", {3}}, {"m", {0}}}},
       4},
  };
}

std::vector<Case> allCases() {
  std::vector<Case> all;
  for (auto part :
       {unaryCases(), elementwiseCases(), reductionCases(), matmulCases(),
        layoutCases(), indexingCases(), nnCases(), layerCases(), loopCases()})
    all.insert(all.end(), part.begin(), part.end());
  return all;
}

class GradCheck : public ::testing::TestWithParam<Case> {};

TEST_P(GradCheck, MatchesFiniteDifferences) {
  const Case &c = GetParam();
  // Checked for every size (no example: symbols without hints), the
  // backward still adds no check of its own (the elaborator refuses one).
  {
    SourceManager sm;
    std::ostringstream sink;
    DiagnosticEngine diags(sm, sink);
    ModuleLoader loader(sm, diags);
    const LoadedModule *m = loader.loadText("grad.tsl", source(c));
    EXPECT_TRUE(m && checkModule(*m, diags)) << sink.str() << source(c);
  }
  unsigned seed = 1;
  for (const Shapes &s : c.shapes) {
    SCOPED_TRACE(c.name + std::string(" at shape set ") + std::to_string(seed));
    check(c, s, seed++);
  }
}

INSTANTIATE_TEST_SUITE_P(Rules, GradCheck, ::testing::ValuesIn(allCases()),
                         [](const auto &info) {
                           std::string n = info.param.name;
                           for (char &ch : n)
                             if (!isalnum(static_cast<unsigned char>(ch)))
                               ch = '_';
                           return n == "_" ? std::string("neg") : n;
                         });

} // namespace
