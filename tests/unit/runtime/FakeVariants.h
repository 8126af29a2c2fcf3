// Hand-written variants for the call path tests (no compiler in
// tsl_unit_runtime): a function `scale(x: f32[N]) -> f32[N]` returning 2*x,
// whose matchers, kernels and result shapes are C++ functions, and a
// compiler hook that hands out such variants.
#pragma once

#include "runtime/FunctionTable.h"
#include "runtime/KernelAbi.h"
#include "runtime/Runtime.h"

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace tsl::rt::fake {

/// The one check of every fake matcher (its text in messages).
inline const char *kGuard = "guard N <= 100 (t.tsl:1:1, scale)";

/// Accepts any N (binds it as symbol 1).
inline int32_t matchAny(const int64_t *sizes, const int64_t *, int64_t *syms) {
  syms[1] = sizes[0];
  return 0;
}
/// Accepts N <= 100, else fails check 1.
inline int32_t matchAtMost100(const int64_t *sizes, const int64_t *,
                              int64_t *syms) {
  if (sizes[0] > 100)
    return 1;
  syms[1] = sizes[0];
  return 0;
}
/// Accepts N == 4 only (a variant specialized to the first call).
inline int32_t matchIs4(const int64_t *sizes, const int64_t *, int64_t *syms) {
  if (sizes[0] != 4)
    return 1;
  syms[1] = sizes[0];
  return 0;
}
/// Rejects every call.
inline int32_t matchNone(const int64_t *, const int64_t *, int64_t *) {
  return 1;
}

/// A native dispatcher over one variant that accepts any f32[N].
inline int32_t dispatchAny(const int64_t *signature, const int64_t *sizes,
                           const int64_t *ints, int64_t *syms) {
  if (signature[0] != 1 || signature[1] != argSignature(false, 6, 1))
    return -1;
  return matchAny(sizes, ints, syms);
}

/// out = 2 * x in a result the kernel allocates. x[0] picks a failure:
/// -1 a failed check (op 0) with a message, -2 a library kernel's error
/// (no op), -3 a failure that records nothing.
inline int32_t kernelDouble(void **buffers, int64_t *syms,
                            tsl_rt_context *ctx) {
  int64_t n = syms[1];
  const float *x = static_cast<const float *>(buffers[0]);
  if (n > 0 && x[0] == -1.0f) {
    tsl_rt_error(ctx, "x[0] is -1");
    tsl_rt_fail(ctx, 0);
    return 1;
  }
  if (n > 0 && x[0] == -2.0f) {
    tsl_rt_error(ctx, "a library kernel failed");
    return 1;
  }
  if (n > 0 && x[0] == -3.0f)
    return 1;
  auto *out = static_cast<float *>(tsl_rt_alloc(ctx, n * 4));
  if (!out)
    return 1;
  for (int64_t i = 0; i < n; ++i)
    out[i] = 2 * x[i];
  buffers[1] = out;
  return 0;
}

/// A result that aliases the argument (the runtime copies it).
inline int32_t kernelAlias(void **buffers, int64_t *, tsl_rt_context *) {
  buffers[1] = buffers[0];
  return 0;
}

/// The result has N elements.
inline void shapesN(const int64_t *syms, int64_t *shapes) {
  shapes[0] = syms[1];
}
/// The result claims 2^61 elements (no memory holds its copy).
inline void shapesHuge(const int64_t *, int64_t *shapes) {
  shapes[0] = int64_t(1) << 61;
}

/// A variant of `scale` with the given entry points.
inline VariantCode scaleVariant(MatchFn match, KernelFn kernel = kernelDouble,
                                ShapesFn shapes = shapesN) {
  VariantCode v;
  v.kernel = kernel;
  v.match = match;
  v.shapes = shapes;
  v.numValues = 2;
  v.numSymbols = 1;
  ParamInfo x;
  x.name = "x";
  x.dtype = 6; // f32
  x.rank = 1;
  x.value = 0;
  x.axisNames = {"N"};
  v.params = {x};
  v.results = {ResultInfo{6, 1, 1}};
  v.checks = {kGuard};
  v.ops = {OpInfoRt{"t.tsl:2:3", "runtime check failed: x[0] >= 0"}};
  return v;
}

/// A C API argument: host f32 data of \p ndim dims \p shape.
inline tsl_arg hostF32Arg(float *data, int64_t *shape, int32_t ndim = 1) {
  tsl_arg a{};
  a.tensor.data = data;
  a.tensor.device = {1, 0};
  a.tensor.ndim = ndim;
  a.tensor.dtype = {2, 32, 1};
  a.tensor.shape = shape;
  return a;
}

/// A compiler hook whose variants come from `make` (called with the call's
/// arguments and whether every dim must be dynamic); `nativeDispatcher`
/// installs dispatchAny (valid when variant 0 accepts any f32[N]).
class Compiler : public CompilerHook {
public:
  std::function<bool(const std::vector<CallArg> &, bool, VariantCode &,
                     Error &)>
      make = [](const std::vector<CallArg> &, bool, VariantCode &out, Error &) {
        out = scaleVariant(matchAny);
        return true;
      };
  bool nativeDispatcher = false;
  std::atomic<int> compiles{0};

  bool compile(const std::string &, const std::vector<CallArg> &args,
               const std::set<std::string> &, bool allDynamic, VariantCode &out,
               Error &error) override {
    ++compiles;
    return make(args, allDynamic, out, error);
  }
  Expected<void>
  compileDispatcher(const std::vector<const VariantCode *> &variants,
                    Dispatcher &out) override {
    if (!nativeDispatcher || variants.size() != 1)
      return makeError(ErrorKind::Unsupported,
                       "no native dispatcher in this test");
    out.fn = dispatchAny;
    return {};
  }
};

/// An f32 vector argument over \p data.
inline CallArg vectorArg(std::vector<float> &data) {
  CallArg a;
  a.dtype = 6;
  a.shape = {static_cast<int64_t>(data.size())};
  a.data = data.data();
  return a;
}

} // namespace tsl::rt::fake
