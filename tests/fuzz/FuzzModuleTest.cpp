// The C API fuzz target's module (CApiFuzzModule.h) against the op table:
// every function elaborates with example arguments of the signature the
// target's fit calls use, and together (callees included) they use every op
// of ir/Ops.def. An op added to the table fails this test until the fuzz
// module uses it, so the fuzz target's reach cannot silently shrink.
#include "CApiFuzzModule.h"

#include "frontend/Elaborator.h"
#include "ir/Function.h"

#include <cstring>
#include <gtest/gtest.h>
#include <set>
#include <sstream>

using namespace tsl;

namespace {

DType toDType(tsl_fuzz::FuzzDType t) {
  switch (t.code) {
  case 0:
    return t.bits == 8 ? DType::I8 : t.bits == 32 ? DType::I32 : DType::I64;
  case 2:
    return t.bits == 16 ? DType::F16 : t.bits == 32 ? DType::F32 : DType::F64;
  case 4:
    return DType::BF16;
  default:
    return DType::Bool;
  }
}

/// Example sizes of the module's dims (kDimLetters order) and int params.
const int64_t kExampleDims[] = {3, 4, 2, 2, 2, 5, 5, 3};
static_assert(sizeof(kExampleDims) / sizeof(kExampleDims[0]) ==
              tsl_fuzz::kNumDims);

std::map<std::string, ExampleArg> examplesOf(const tsl_fuzz::FuzzFunction &f) {
  std::map<std::string, ExampleArg> ex;
  for (int i = 0; i < f.numParams; ++i) {
    const tsl_fuzz::FuzzParam &p = f.params[i];
    if (p.isInt) {
      ex[p.name] = ExampleArg{true, 2, DType::I64, {}};
      continue;
    }
    std::vector<int64_t> shape;
    for (const char *c = p.dims; *c; ++c) {
      const char *letter = std::strchr(tsl_fuzz::kDimLetters, *c);
      shape.push_back(letter ? kExampleDims[letter - tsl_fuzz::kDimLetters]
                             : *c - '0');
    }
    ex[p.name] = ExampleArg{false, 0, toDType(p.dtype), shape};
  }
  return ex;
}

void collectOps(const Function &fn, std::set<OpCode> &used) {
  for (const Operation &op : fn.ops)
    used.insert(op.code);
  for (const Function &callee : fn.callees)
    collectOps(callee, used);
}

TEST(CApiFuzzModule, UsesEveryOpOfTheTable) {
  SourceManager sm;
  std::ostringstream sink;
  DiagnosticEngine diags(sm, sink);
  ModuleLoader loader(sm, diags);
  loader.setStdlibDir(TSL_FUZZ_STDLIB_DIR);
  const LoadedModule *m = loader.loadText("fuzz.tsl", tsl_fuzz::kModuleSource);
  ASSERT_NE(m, nullptr) << sink.str();
  std::set<OpCode> used;
  for (const tsl_fuzz::FuzzFunction &f : tsl_fuzz::kFunctions) {
    ElaborateOptions options;
    options.examples = examplesOf(f);
    Function fn;
    ASSERT_TRUE(elaborateFunction(*m, f.name, options, diags, fn))
        << f.name << ":\n"
        << sink.str();
    collectOps(fn, used);
  }
  for (const OpInfo &op : allOps())
    EXPECT_TRUE(used.count(op.code))
        << "no function of the C API fuzz module (tests/fuzz/"
           "CApiFuzzModule.h) uses "
        << op.name;
  EXPECT_EQ(used.size(), allOps().size());
}

} // namespace
