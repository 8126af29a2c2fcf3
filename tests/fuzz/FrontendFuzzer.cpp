// libFuzzer target for the frontend: any bytes go through parsing, module
// checks and generic elaboration of every function. The only acceptable
// outcomes are success or diagnostics: never a crash, a hang, a sanitizer
// report or an escaping exception. See docs/testing.md for how to run it.
//
// A module that checks is then run: each of its first four functions whose
// parameter types are plain (element types, named dims, constant extents)
// is elaborated at example arguments (every named dim one size, 0 to 3,
// chosen by the input; int parameters that value), verified, and run on the
// reference interpreter with small data. Runs are bounded so they cannot
// hang or exhaust memory: a function is skipped when a value it makes
// could hold more than 2^16 elements (unbacked sizes counted at 4,096),
// when its loops could run more than 64 iterations in all, or when it binds
// a size from data (item). An elaborated function that does not verify, or
// an interpreter run that notes an internal error, traps: the elaborator
// made IR it should not have.
#include "frontend/Elaborator.h"
#include "frontend/Parser.h"
#include "ir/Interpreter.h"
#include "ir/Verifier.h"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <sstream>

namespace {

/// TSL_FUZZ_VERBOSE=1: print each run's outcome.
const bool verbose = [] {
  const char *v = std::getenv("TSL_FUZZ_VERBOSE");
  return v && v[0] == '1';
}();

/// Elements a value may have for a run; unbacked sizes count as kUnbacked.
constexpr int64_t kMaxElements = int64_t(1) << 16;
constexpr int64_t kUnbacked = 4096;
/// Loop iterations a run may make, nested loops multiplied.
constexpr int64_t kMaxIterations = 64;

/// Example arguments of \p decl, every named dim \p size; false for types
/// beyond plain ones (packs, `?`, dim expressions, element-type parameters,
/// rank over 4, an argument over kMaxElements).
bool examplesFor(const tsl::ast::FnDecl &decl, int64_t size,
                 std::map<std::string, tsl::ExampleArg> &examples) {
  if (!decl.typeParams.empty())
    return false;
  for (const tsl::ast::Param &p : decl.params) {
    const tsl::ast::TypeExpr &t = p.type;
    if (t.base == "int") {
      examples[p.name] = tsl::ExampleArg{true, size, tsl::DType::I64, {}};
      continue;
    }
    std::optional<tsl::DType> dtype = tsl::parseDType(t.base);
    if (!dtype || t.dims.size() > 4)
      return false;
    std::vector<int64_t> shape;
    int64_t elements = 1;
    for (const tsl::ast::TypeDim &d : t.dims) {
      using Kind = tsl::ast::Expr::Kind;
      if (d.kind == tsl::ast::TypeDim::Kind::Inline)
        shape.push_back(size);
      else if (d.kind != tsl::ast::TypeDim::Kind::Expr || !d.expr)
        return false;
      else if (d.expr->kind == Kind::IntLit && d.expr->intValue >= 0 &&
               d.expr->intValue <= kMaxElements)
        shape.push_back(d.expr->intValue);
      else if (d.expr->kind == Kind::Name)
        shape.push_back(size);
      else
        return false;
      elements *= shape.back();
      if (elements > kMaxElements)
        return false;
    }
    examples[p.name] = tsl::ExampleArg{false, 0, *dtype, shape};
  }
  return true;
}

/// True when every value of \p fn (callees included) holds at most
/// kMaxElements under \p values and its loops make at most kMaxIterations
/// iterations in all; false for a function that binds sizes from data.
bool boundedRun(const tsl::Function &fn,
                const std::map<std::string, int64_t> &values) {
  auto lookup = [&](const std::string &name) -> std::optional<int64_t> {
    auto it = values.find(name);
    return it == values.end() ? kUnbacked : it->second;
  };
  for (const tsl::Value &v : fn.values) {
    int64_t elements = 1;
    for (const tsl::SymExpr &d : v.type.dims) {
      std::optional<int64_t> n = d.evaluate(lookup);
      if (!n || *n > kMaxElements ||
          __builtin_mul_overflow(elements, std::max<int64_t>(*n, 0),
                                 &elements) ||
          elements > kMaxElements)
        return false;
    }
  }
  int64_t iterations = 1;
  std::vector<int64_t> trips; // open loops' trip counts
  for (const tsl::Operation &op : fn.ops) {
    if (op.code == tsl::OpCode::Item)
      return false;
    if (op.code == tsl::OpCode::Loop) {
      std::optional<int64_t> lo = op.exprAttr("lo").evaluate(lookup),
                             hi = op.exprAttr("hi").evaluate(lookup);
      if (!lo || !hi)
        return false;
      int64_t trip = std::max<int64_t>(*hi - *lo, 1);
      if (trip > kMaxIterations ||
          __builtin_mul_overflow(iterations, trip, &iterations) ||
          iterations > kMaxIterations)
        return false;
      trips.push_back(trip);
    } else if (op.code == tsl::OpCode::EndLoop && !trips.empty()) {
      iterations /= trips.back();
      trips.pop_back();
    }
  }
  for (const tsl::Function &callee : fn.callees)
    if (!boundedRun(callee, values))
      return false;
  return true;
}

/// Small data for argument \p i: floats in [-2, 2), integers in [0, 3],
/// bools alternating.
void fill(tsl::Tensor &t, size_t i) {
  for (size_t k = 0; k < t.numel(); ++k) {
    uint32_t v = static_cast<uint32_t>((k + 1) * 2654435761u + i * 40503u);
    if (tsl::isFloat(t.dtype()))
      t.setF(k, (static_cast<double>(v >> 20) - 2048) / 1024);
    else
      t.setI(k, t.dtype() == tsl::DType::Bool ? k % 2 : (v >> 16) % 4);
  }
}

/// Elaborates \p name at dims of size \p size and runs it on the
/// interpreter, when the run is bounded.
void runFunction(const tsl::LoadedModule &module, const std::string &name,
                 const tsl::ast::FnDecl &decl, int64_t size,
                 tsl::DiagnosticEngine &diags) {
  tsl::ElaborateOptions options;
  std::map<std::string, tsl::ExampleArg> examples;
  if (!examplesFor(decl, size, examples))
    return;
  options.examples = examples;
  tsl::Function fn;
  if (!tsl::elaborateFunction(module, name, options, diags, fn))
    return;
  if (tsl::Expected<void> verified = tsl::verifyFunction(fn); !verified) {
    std::fprintf(stderr, "%s elaborated to IR that does not verify: %s\n",
                 name.c_str(), verified.error().message.c_str());
    __builtin_trap();
  }
  std::vector<tsl::ArgValue> args;
  for (const tsl::Param &p : fn.params) {
    const tsl::ExampleArg &ex = examples[p.name];
    tsl::ArgValue a;
    a.isInt = p.isInt;
    a.intValue = ex.intValue;
    if (!p.isInt) {
      a.tensor = tsl::Tensor::zeros(ex.dtype, ex.shape);
      fill(a.tensor, args.size());
    }
    args.push_back(std::move(a));
  }
  std::map<std::string, int64_t> values;
  tsl::RunError runError;
  if (!tsl::bindArguments(fn, args, values, runError) ||
      !boundedRun(fn, values))
    return;
  std::vector<tsl::Tensor> outputs;
  bool ok = tsl::interpret(fn, args, outputs, runError);
  if (verbose)
    std::fprintf(stderr, "ran %s at size %lld: %s\n", name.c_str(),
                 static_cast<long long>(size),
                 ok ? "ok" : runError.message.c_str());
  if (!ok && runError.message.find("internal error") != std::string::npos) {
    std::fprintf(stderr, "%s: the interpreter: %s\n", name.c_str(),
                 runError.message.c_str());
    __builtin_trap();
  }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  tsl::SourceManager sm;
  std::ostringstream sink;
  tsl::DiagnosticEngine diags(sm, sink);
  tsl::ModuleLoader loader(sm, diags);
  loader.setStdlibDir(TSL_FUZZ_STDLIB_DIR);
  const tsl::LoadedModule *module = loader.loadText(
      "fuzz.tsl", std::string(reinterpret_cast<const char *>(data), size));
  if (!module || !tsl::checkModule(*module, diags))
    return 0;
  // Dims of one size for the whole input, 0 to 3: a hash of its bytes.
  uint32_t hash = 2166136261u;
  for (size_t i = 0; i < size; ++i)
    hash = (hash ^ data[i]) * 16777619u;
  int runs = 0;
  for (const auto &[name, decl] : module->fns)
    if (runs++ < 4)
      runFunction(*module, name, *decl, hash % 4, diags);
  return 0;
}
