#pragma once
/// \file What the runtime knows about one compiled variant: native entry
/// points (kernel, argument matcher with guards, result shapes) and the
/// metadata to explain failures. Produced by a compiler (the driver's JIT)
/// or loaded from an AOT artifact; the runtime itself compiles nothing.

#include "runtime/KernelAbi.h"

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace tsl::rt {

using KernelFn = int32_t (*)(void **buffers, int64_t *syms,
                             tsl_rt_context *ctx);
/// 0 when a call's sizes and ints fit the variant (symbols bound into
/// syms), else 1 + the index of the failing check.
using MatchFn = int32_t (*)(const int64_t *sizes, const int64_t *ints,
                            int64_t *syms);
using ShapesFn = void (*)(const int64_t *syms, int64_t *shapes);

/// One parameter as the variant expects it.
struct ParamInfo {
  std::string name;
  bool isInt = false;
  int32_t dtype = 0; ///< element type code (KernelAbi.h)
  int32_t rank = 0;
  int32_t value = -1; ///< buffer index of a tensor parameter
  std::vector<std::string> axisNames;
};

struct ResultInfo {
  int32_t dtype = 0;
  int32_t rank = 0;
  int32_t value = 0; ///< buffer index
};

/// Where an op that can fail at run time comes from, and what it checks.
struct OpInfoRt {
  std::string location; ///< file:line:col
  std::string
      what; ///< "runtime check failed: N % 2 == 0: message" or the op name
};

struct VariantCode {
  KernelFn kernel = nullptr;
  MatchFn match = nullptr;
  ShapesFn shapes = nullptr;
  size_t numValues = 0;
  size_t numSymbols = 0;
  std::vector<ParamInfo> params;
  std::vector<ResultInfo> results;
  std::vector<std::string> checks; ///< descriptions of match's checks
  std::vector<OpInfoRt> ops;
  /// auto dims and int params specialized to a value in this variant.
  std::map<std::string, int64_t> specialized;
  std::string description;         ///< for logs: "sizes: B dynamic, D = 64"
  bool fromCache = false;          ///< loaded from the on-disk compile cache
  std::shared_ptr<void> keepAlive; ///< owns the code (a JIT session)
};

/// One argument of a call, as the runtime sees it.
struct CallArg {
  bool isInt = false;
  int64_t intValue = 0;
  int32_t dtype = 0;
  std::vector<int64_t> shape;
  const void *data = nullptr;
};

/// Compiles a new variant on a dispatch miss (registered by the driver).
class CompilerHook {
public:
  virtual ~CompilerHook() = default;
  /// Compiles \p function for a call's arguments. \p dynamicDims must be
  /// dynamic; with \p allDynamic every dim not declared static is.
  virtual bool compile(const std::string &function,
                       const std::vector<CallArg> &args,
                       const std::set<std::string> &dynamicDims,
                       bool allDynamic, VariantCode &out,
                       std::string &error) = 0;
};

} // namespace tsl::rt
