#pragma once
/// \file What the runtime knows about one compiled variant: native entry
/// points (kernel, argument matcher with guards, result shapes) and the
/// metadata to explain failures. Produced by a compiler (the driver's JIT)
/// or loaded from an AOT artifact; the runtime itself compiles nothing.

#include "runtime/KernelAbi.h"
#include "support/Error.h"

#include <map>
#include <memory>
#include <optional>
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
/// Chooses among a function's variants in one native call: the index of
/// the first variant whose signature equals \p signature and whose matcher
/// accepts the call (its symbols bound into syms), or -1. `signature[0]` is
/// the number of arguments, then one argSignature() per argument.
using DispatchFn = int32_t (*)(const int64_t *signature, const int64_t *sizes,
                               const int64_t *ints, int64_t *syms);

/// Bytes per element of element type code \p dtype (KernelAbi.h).
inline size_t elementBytes(int32_t dtype) {
  static const size_t sizes[] = {1, 1, 4, 8, 2, 2, 4, 8};
  return dtype >= 0 && dtype < 8 ? sizes[dtype] : 1;
}

/// What a call must match exactly rather than through guards: an int
/// argument, or a tensor's element type and rank.
inline int64_t argSignature(bool isInt, int32_t dtype, size_t rank) {
  return isInt ? -1
               : static_cast<int64_t>(static_cast<uint64_t>(dtype) << 32 |
                                      static_cast<uint32_t>(rank));
}

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
  /// The kernel's buffer array holds numValues + 1 pointers: one per IR
  /// value and the scratch area after them (backend bufferArrayLength).
  size_t numValues = 0;
  size_t numSymbols = 0;
  std::vector<ParamInfo> params;
  std::vector<ResultInfo> results;
  std::vector<std::string> checks; ///< descriptions of match's checks
  std::vector<OpInfoRt> ops;
  /// auto dims and int params specialized to a value in this variant.
  std::map<std::string, int64_t> specialized;
  std::string description; ///< for logs: "sizes: B dynamic, D = 64"
  bool fromCache = false;  ///< loaded from the on-disk compile cache
  /// GPU variants: the device kernels the host code launches (buffers are
  /// device memory); null for CPU variants.
  std::shared_ptr<struct DeviceCode> device;
  std::shared_ptr<void> keepAlive; ///< owns the code (a JIT session)

  /// The signature a dispatcher compares calls with (see DispatchFn).
  std::vector<int64_t> signature() const {
    std::vector<int64_t> s{static_cast<int64_t>(params.size())};
    for (const ParamInfo &p : params)
      s.push_back(argSignature(p.isInt, p.dtype, static_cast<size_t>(p.rank)));
    return s;
  }
};

/// A native dispatcher over a table's first `count` variants.
struct Dispatcher {
  DispatchFn fn = nullptr;
  size_t count = 0;
  std::shared_ptr<void> keepAlive; ///< owns the code
};

/// One argument of a call, as the runtime sees it.
struct CallArg {
  bool isInt = false;
  int64_t intValue = 0;
  int32_t dtype = 0;
  std::vector<int64_t> shape;
  const void *data = nullptr;
  /// The table donates this argument's buffer (TableOptions::donated): the
  /// compiler may write results into it.
  bool donated = false;
};

/// One argument of a call as a view of the caller's memory: what the call
/// path reads (FunctionTable::call), so that a call copies no shapes.
/// `shape` holds `rank` sizes (null when the rank is 0) and must stay valid
/// during the call; ints ignore it.
struct ArgRef {
  bool isInt = false;
  int64_t intValue = 0;
  int32_t dtype = 0;
  size_t rank = 0;
  const int64_t *shape = nullptr;
  const void *data = nullptr;

  /// A view of \p a (valid while \p a is).
  static ArgRef of(const CallArg &a) {
    return {a.isInt,        a.intValue,     a.dtype,
            a.shape.size(), a.shape.data(), a.data};
  }
  /// An owning copy (for a compiler hook, which keeps what it needs).
  CallArg toCallArg() const {
    CallArg a;
    a.isInt = isInt;
    a.intValue = intValue;
    a.dtype = dtype;
    a.shape.assign(shape, shape + rank);
    a.data = data;
    return a;
  }
};

/// Compiles a new variant on a dispatch miss (registered by the driver).
class CompilerHook {
public:
  virtual ~CompilerHook() = default;
  /// Compiles \p function for a call's arguments. \p dynamicDims must be
  /// dynamic; with \p allDynamic every dim not declared static is. False
  /// with \p error: its kind says why (Syntax, Type, Shape: the source;
  /// NotFound: no such function; InvalidArgument: the call's arity;
  /// Unsupported: the backend; Internal: a bug).
  virtual bool compile(const std::string &function,
                       const std::vector<CallArg> &args,
                       const std::set<std::string> &dynamicDims,
                       bool allDynamic, VariantCode &out, Error &error) = 0;
  /// The number of parameters of \p function, so that a call's arity is
  /// checked before its arguments are gathered. nullopt when the hook
  /// cannot tell (the default), or, with \p error set as compile() would
  /// set it, when \p function cannot be compiled for any arguments (no
  /// such function, a module that does not load).
  virtual std::optional<size_t> arity(const std::string &function,
                                      Error &error) {
    (void)function;
    (void)error;
    return std::nullopt;
  }
  /// Compiles one native function choosing among \p variants in order.
  /// An error when it cannot; the table then tries each variant's matcher
  /// in turn, which chooses the same variant.
  virtual Expected<void>
  compileDispatcher(const std::vector<const VariantCode *> &variants,
                    Dispatcher &out) = 0;
};

} // namespace tsl::rt
