// Soundness of variants: for a corpus and for randomly generated programs,
// every size assignment that passes a variant's guards either runs with the
// output shapes the symbolic rules predict (the interpreter checks every
// op's result against its symbolic type) or stops at a runtime assertion;
// every assignment the guards reject compiles to a different variant (some
// decision differs) or is invalid for the function.
#include "frontend/Elaborator.h"
#include "ir/Interpreter.h"
#include "ir/Verifier.h"

#include <gtest/gtest.h>
#include <random>
#include <sstream>

using namespace tsl;

namespace {

const char *kCorpus[] = {
    "dim N: dynamic; dim M: dynamic;\n"
    "fn f(x: f32[N, 3], y: f32[M, 3]) -> f32[N, 3] { return x + y; }",
    "dim N: dynamic; dim M: dynamic; dim K: dynamic;\n"
    "fn f(a: f32[N], b: f32[M], c: f32[K]) -> f32[N] { return a * b + c; }",
    "dim B: dynamic; dim K: dynamic;\n"
    "fn f(x: f32[B, K], w: f32[K, 4]) -> f32[B, 4] { return relu(x @ w); }",
    "dim B: dynamic; dim S: dynamic;\n"
    "fn f(x: f32[B, S, 4]) -> f32[?, 4] { return reshape(x, [-1, 4]); }",
    "dim N: dynamic; dim M: dynamic;\n"
    "fn f(a: f32[N, 2], b: f32[M, 2]) -> f32[?, 2] { return concat([a, b], "
    "axis=0); }",
    "dim N: dynamic;\n"
    "fn f(x: f32[N]) -> f32[?] { if N > 3 { return x[1:N - 1]; } return x; }",
    "dim N: dynamic;\n"
    "fn f(x: f32[N], k: int dynamic) -> f32[k] { let (v, i) = topk(x, k); "
    "return v; }",
    "dim H: dynamic; dim W: dynamic;\n"
    "fn f(x: f32[1, 2, H, W], w: f32[3, 2, 2, 2]) -> f32[1, 3, ?, ?] {\n"
    "  return max_pool2d(conv2d(x, w, padding=1), 2);\n}",
    "dim N: dynamic;\n"
    "fn f(x: f32[N]) -> f32[?] { return masked_select(x, x > 0.0) * 2.0; }",
    "dim N: dynamic; dim M: dynamic;\n"
    "fn f(x: f32[N, M]) -> f32[N] { return max(x, axis=1) + sum(x, axis=1); }",
    "dim N: dynamic;\n"
    "fn f(x: f32[N]) -> f32[?] { return pad(x, [2, 1]) + 1.0; }",
    "dim N: dynamic; dim M: dynamic;\n"
    "fn f(x: f32[N], y: f32[M]) -> f32[?] { let m = concat([x, y], axis=0); "
    "return m[N:]; }",
};

struct Compiled {
  bool ok = false;
  Function fn;
  std::string guards;
};

Compiled compile(const std::string &source,
                 const std::map<std::string, ExampleArg> &examples) {
  Compiled c;
  SourceManager sm;
  std::ostringstream sink;
  DiagnosticEngine diags(sm, sink);
  ModuleLoader loader(sm, diags);
  const LoadedModule *m = loader.loadText("p.tsl", source);
  if (!m)
    return c;
  ElaborateOptions options;
  options.examples = examples;
  if (!elaborateFunction(*m, "f", options, diags, c.fn))
    return c;
  Expected<void> verified = verifyFunction(c.fn);
  EXPECT_TRUE(verified) << verified.error().message << "\n" << source;
  for (const Check &g : c.fn.guards)
    c.guards += g.cond.str() + ";";
  c.ok = true;
  return c;
}

/// Parameter shapes of the source's `f`, from the first compile's param types
/// under an assignment of its symbols.
bool shapesFor(const Function &fn, const std::map<std::string, int64_t> &values,
               std::map<std::string, ExampleArg> &out) {
  for (const Param &p : fn.params) {
    ExampleArg a;
    if (p.isInt) {
      a.isInt = true;
      auto v = p.intExpr.evaluate(values);
      if (!v)
        return false;
      a.intValue = *v;
    } else {
      a.dtype = fn.type(p.value).dtype;
      for (const SymExpr &d : fn.type(p.value).dims) {
        auto v = d.evaluate(values);
        if (!v || *v < 0)
          return false;
        a.shape.push_back(*v);
      }
    }
    out[p.name] = a;
  }
  return true;
}

/// Checks one program compiled at \p hints over a grid of assignments.
/// Returns the number of assignments that ran.
int checkProgram(const std::string &source,
                 const std::map<std::string, ExampleArg> &hints,
                 std::mt19937 &rng) {
  Compiled variant = compile(source, hints);
  if (!variant.ok)
    return 0;
  std::vector<std::string> syms;
  for (const SymbolInfo &s : variant.fn.symbols)
    if (s.kind == DimKind::Dynamic)
      syms.push_back(s.name);
  const int64_t grid[] = {0, 1, 2, 3, 5};
  size_t combos = 1;
  for (size_t i = 0; i < syms.size(); ++i)
    combos *= 5;
  int ran = 0;
  for (size_t c = 0; c < combos; ++c) {
    std::map<std::string, int64_t> values;
    size_t rest = c;
    for (const std::string &s : syms) {
      values[s] = grid[rest % 5];
      rest /= 5;
    }
    std::map<std::string, ExampleArg> shapes;
    if (!shapesFor(variant.fn, values, shapes))
      continue;
    std::vector<ArgValue> args;
    for (const Param &p : variant.fn.params) {
      ArgValue a;
      a.isInt = p.isInt;
      a.intValue = shapes[p.name].intValue;
      if (!p.isInt) {
        a.tensor = Tensor::zeros(shapes[p.name].dtype, shapes[p.name].shape);
        std::normal_distribution<double> normal;
        for (size_t i = 0; i < a.tensor.numel(); ++i)
          a.tensor.setF(i, normal(rng));
      }
      args.push_back(a);
    }
    std::map<std::string, int64_t> bound;
    RunError bindError;
    bool passes = bindArguments(variant.fn, args, bound, bindError);
    if (passes) {
      std::vector<Tensor> outputs;
      RunError error;
      bool ok = interpret(variant.fn, args, outputs, error);
      // Passing the guards means: correct shapes, or a runtime assertion.
      EXPECT_TRUE(ok || error.message.rfind("runtime check failed", 0) == 0 ||
                  error.message.find("out of bounds") != std::string::npos ||
                  error.message.find("out of range") != std::string::npos)
          << source << "\nunsound for these sizes: " << error.message;
      ++ran;
    } else if (bindError.message.find("guard") != std::string::npos) {
      // Rejected by a guard: the sizes must lead to another decision.
      Compiled other = compile(source, shapes);
      EXPECT_TRUE(!other.ok || other.guards != variant.guards)
          << source << "\na guard rejects sizes that the same variant serves: "
          << bindError.message;
    }
  }
  return ran;
}

class Corpus : public ::testing::TestWithParam<const char *> {};

TEST_P(Corpus, GuardsAreSoundAndNotTooStrict) {
  std::mt19937 rng(7);
  // Hints: every dim 3 (and k = 2), which exercises the no-broadcast path.
  Compiled generic = compile(GetParam(), {});
  std::map<std::string, ExampleArg> hints;
  SourceManager sm;
  std::ostringstream sink;
  DiagnosticEngine diags(sm, sink);
  ModuleLoader loader(sm, diags);
  const LoadedModule *m = loader.loadText("p.tsl", GetParam());
  ASSERT_NE(m, nullptr) << sink.str();
  Function sym;
  ASSERT_TRUE(elaborateFunction(*m, "f", ElaborateOptions{}, diags, sym))
      << sink.str();
  std::map<std::string, int64_t> three;
  for (const SymbolInfo &s : sym.symbols)
    three[s.name] = s.isInt ? 2 : 3;
  ASSERT_TRUE(shapesFor(sym, three, hints));
  EXPECT_GT(checkProgram(GetParam(), hints, rng), 0);
  // Hints of 1 exercise the broadcasting decisions.
  std::map<std::string, int64_t> ones;
  for (const SymbolInfo &s : sym.symbols)
    ones[s.name] = s.isInt ? 1 : 1;
  hints.clear();
  ASSERT_TRUE(shapesFor(sym, ones, hints));
  checkProgram(GetParam(), hints, rng);
}

INSTANTIATE_TEST_SUITE_P(Soundness, Corpus, ::testing::ValuesIn(kCorpus));

TEST(Soundness, RandomPrograms) {
  std::mt19937 rng(2024);
  const char *dims[] = {"N", "M", "1", "3"};
  const char *ops[] = {"+", "*", "-"};
  int programs = 0, ran = 0;
  for (int trial = 0; trial < 60; ++trial) {
    std::string src = "dim N: dynamic; dim M: dynamic;\nfn f(";
    int nparams = 2 + static_cast<int>(rng() % 2);
    for (int p = 0; p < nparams; ++p) {
      int rank = 1 + static_cast<int>(rng() % 2);
      src += (p ? ", " : "") + std::string("x") + std::to_string(p) + ": f32[";
      for (int r = 0; r < rank; ++r)
        src += (r ? ", " : "") + std::string(dims[rng() % 4]);
      src += "]";
    }
    src += ") -> f32[?, ?] {\n  let t0 = x0;\n";
    int lets = 1 + static_cast<int>(rng() % 4);
    for (int l = 1; l <= lets; ++l) {
      std::string a = "t" + std::to_string(rng() % l);
      std::string b = "x" + std::to_string(rng() % nparams);
      src += "  let t" + std::to_string(l) + " = " + a + " " + ops[rng() % 3] +
             " " + b + ";\n";
    }
    src += "  return reshape(t" + std::to_string(lets) + ", [1, -1]);\n}\n";
    std::map<std::string, ExampleArg> hints;
    SourceManager sm;
    std::ostringstream sink;
    DiagnosticEngine diags(sm, sink);
    ModuleLoader loader(sm, diags);
    const LoadedModule *m = loader.loadText("r.tsl", src);
    ASSERT_NE(m, nullptr) << sink.str() << src;
    Function sym;
    if (!elaborateFunction(*m, "f", ElaborateOptions{}, diags, sym))
      continue;
    std::map<std::string, int64_t> values;
    for (const SymbolInfo &s : sym.symbols)
      values[s.name] = 1 + static_cast<int64_t>(rng() % 3);
    if (!shapesFor(sym, values, hints))
      continue;
    int r = checkProgram(src, hints, rng);
    programs += r > 0;
    ran += r;
  }
  EXPECT_GT(programs, 10); // enough random programs compiled and ran
  EXPECT_GT(ran, 100);
}

} // namespace
