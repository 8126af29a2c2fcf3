// Shape checking speed: elaborates generated programs of about 1,000 and
// 5,000 operations with a dynamic batch dim and reports microseconds per
// operation (best of several runs), then checks determinism (two compiles
// give identical guards and IR). Prints one line per size; the peer
// (torch.compile(dynamic=True)) is measured by bench/shape_check.sh.
#include "frontend/Elaborator.h"
#include "ir/IrText.h"

#include <chrono>
#include <cstdio>
#include <sstream>

using namespace tsl;

namespace {

/// A residual MLP-like chain; `blocks` blocks of 8 IR ops each.
std::string program(int blocks) {
  std::string s =
      "dim B: dynamic;\ndim S: dynamic;\n"
      "fn f(x: f32[B, S, 64], w: f32[64, 64], g: f32[64]) -> f32[B, S, 64] {\n"
      "  let t0 = x;\n";
  for (int i = 1; i <= blocks; ++i) {
    std::string p = "t" + std::to_string(i - 1), t = "t" + std::to_string(i);
    s += "  let " + t + " = relu(" + p + " @ w) * g + " + p + " - mean(" + p +
         ", axis=-1, keepdim=true);\n";
  }
  s += "  return t" + std::to_string(blocks) + ";\n}\n";
  return s;
}

struct Result {
  double seconds = 0;
  double parseSeconds = 0;
  size_t ops = 0;
  std::string text;
};

Result compileOnce(const std::string &source) {
  Result r;
  SourceManager sm;
  std::ostringstream sink;
  DiagnosticEngine diags(sm, sink);
  auto start = std::chrono::steady_clock::now();
  ModuleLoader loader(sm, diags);
  const LoadedModule *m = loader.loadText("bench.tsl", source);
  r.parseSeconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  ElaborateOptions options;
  options.examples.emplace();
  ExampleArg x{false, 0, DType::F32, {8, 128, 64}},
      w{false, 0, DType::F32, {64, 64}}, g{false, 0, DType::F32, {64}};
  (*options.examples)["x"] = x;
  (*options.examples)["w"] = w;
  (*options.examples)["g"] = g;
  Function fn;
  if (!m || !elaborateFunction(*m, "f", options, diags, fn)) {
    std::fprintf(stderr, "bench program failed to compile:\n%s",
                 sink.str().c_str());
    std::exit(1);
  }
  r.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  r.ops = fn.ops.size();
  r.text = printFunction(fn);
  return r;
}

} // namespace

int main(int argc, char **argv) {
  int runs = argc > 1 ? std::atoi(argv[1]) : 5;
  for (int blocks : {167, 834}) {
    std::string source = program(blocks);
    Result best;
    best.seconds = 1e9;
    std::string first;
    bool deterministic = true;
    for (int i = 0; i < runs; ++i) {
      Result r = compileOnce(source);
      if (i == 0)
        first = r.text;
      else
        deterministic &= r.text == first;
      if (r.seconds < best.seconds)
        best = r;
    }
    std::printf("tsl shape check: %zu ops in %.2f ms = %.2f us/op (parse %.2f "
                "us/op, best of %d), "
                "deterministic: %s\n",
                best.ops, best.seconds * 1e3, best.seconds * 1e6 / best.ops,
                best.parseSeconds * 1e6 / best.ops, runs,
                deterministic ? "yes" : "NO");
  }
  return 0;
}
