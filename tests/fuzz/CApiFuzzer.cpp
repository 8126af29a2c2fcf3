// libFuzzer target for the C API (runtime/include/tsl/tsl_c.h): the input
// bytes choose a function of the fuzz module (CApiFuzzModule.h: every op of
// the op table, a loop and outlined calls) and build a call of it, which
// runs on a CPU runtime or on the GPU emulator. The module is loaded once
// (LLVMFuzzerInitialize) and its dims and ints are dynamic, so each
// function compiles one variant per runtime on its first fitting call;
// later calls that fit run compiled code, and calls that do not are
// rejected (or try a compile the elaborator refuses). Acceptable outcomes: a
// status with a message, or outputs that are then read and freed.
//
// A call is one of two kinds:
//   - random: the arity and per argument int or tensor, device, rank,
//     element type, shape, strides, byte offset and null pointers. Shapes
//     are unbounded (edge values up to INT64_MAX and INT64_MIN, products
//     that overflow), and offsets small (aligned or not) or wrapping the
//     address space. The per-tensor limit is set to the data buffer's size
//     (TSL_MAX_TENSOR_BYTES), so every tensor the runtime accepts lies
//     inside the buffer: a call must reject the rest (overflowing, too
//     large, misaligned, wrapping) without touching the data, and ASan
//     checks that accepted ones stay inside it;
//   - fit (function byte >= 128): arguments of the function's signature,
//     each dim's size chosen by the input (0 and 1 most often, up to 39),
//     ints from -1 to 55, data from a seeded generator (zeros, small
//     integers, random values, or with NaN, infinities, -0 and indices out
//     of range), and now and then one extent off by one or one element type
//     changed. These run the compiled code of every op at empty and
//     single-element sizes; a success's outputs are read through.
#include "CApiFuzzModule.h"
#include "tsl/tsl_c.h"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <unistd.h>
#include <vector>

namespace {

/// Bytes the data buffer holds: every call's data fits in it.
constexpr uint64_t kMaxBytes = uint64_t(1) << 20;
/// Bytes past kMaxBytes, for small byte offsets.
constexpr uint64_t kSlackBytes = 64;

using tsl_fuzz::kFunctions;
using tsl_fuzz::kNumFunctions;

struct Runtime {
  tsl_runtime *rt = nullptr;
  tsl_function *fns[kNumFunctions] = {};
  int64_t compileErrors = 0; ///< calls that failed with TSL_COMPILE_ERROR
};
Runtime runtimes[2];
uint8_t *buffer = nullptr;
bool verbose = false; ///< TSL_FUZZ_VERBOSE=1: print every call's status

/// Reads the input front to back; zeros once it runs out.
struct Reader {
  const uint8_t *p;
  size_t n;
  uint8_t byte() {
    if (n == 0)
      return 0;
    --n;
    return *p++;
  }
  uint64_t u64() {
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i)
      v = v << 8 | byte();
    return v;
  }
};

int64_t edgeValue(Reader &in) {
  static const int64_t values[] = {-1,
                                   0,
                                   1,
                                   2,
                                   3,
                                   7,
                                   255,
                                   int64_t(1) << 20,
                                   int64_t(1) << 31,
                                   (int64_t(1) << 32) + 1,
                                   int64_t(1) << 62,
                                   INT64_MAX,
                                   INT64_MIN};
  return values[in.byte() % (sizeof(values) / sizeof(values[0]))];
}

tsl_dtype randomDtype(Reader &in) {
  static const tsl_dtype valid[] = {{2, 32, 1}, {2, 64, 1}, {2, 16, 1},
                                    {4, 16, 1}, {0, 8, 1},  {0, 32, 1},
                                    {0, 64, 1}, {6, 8, 1},  {1, 8, 1}};
  uint8_t c = in.byte();
  if (c < 240)
    return valid[c % (sizeof(valid) / sizeof(valid[0]))];
  tsl_dtype d;
  d.code = in.byte();
  d.bits = in.byte();
  d.lanes = static_cast<uint16_t>(in.byte() % 4);
  return d;
}

/// One tensor argument; \p shape and \p strides own its arrays.
void randomTensor(Reader &in, tsl_device device, tsl_tensor &t,
                  std::vector<int64_t> &shape, std::vector<int64_t> &strides) {
  uint8_t flags = in.byte();
  t.device = device;
  if (flags % 16 == 0) {
    static const int32_t types[] = {0, 2, 3, TSL_DEVICE_GPU_EMULATOR, -1};
    t.device.device_type = types[in.byte() % 5];
    t.device.device_id = static_cast<int8_t>(in.byte());
  }
  uint8_t r = in.byte();
  int32_t ndim = r < 240 ? r % 4 : (r == 240 ? -1 : 5 + r % 40);
  t.ndim = ndim;
  t.dtype = randomDtype(in);
  shape.assign(ndim > 0 ? ndim : 0, 0);
  for (int64_t &d : shape) {
    uint8_t s = in.byte();
    d = s < 200 ? s % 9 : (s < 230 ? s : edgeValue(in));
  }
  t.byte_offset = 0;
  uint8_t o = in.byte();
  if (o >= 248) // wraps the address space: rejected
    t.byte_offset = UINT64_MAX - (o & 7) * 8;
  else if (o >= 224) // inside the buffer's slack; misaligned ones rejected
    t.byte_offset = o % kSlackBytes;
  t.shape = flags % 32 == 1 ? nullptr : shape.data();
  t.strides = nullptr;
  if (flags % 8 == 2 && ndim > 0) {
    // Row-major compact strides (accepted), or random ones (rejected).
    strides.assign(ndim, 1);
    for (int i = ndim - 2; i >= 0; --i)
      if (__builtin_mul_overflow(strides[i + 1], shape[i + 1], &strides[i]))
        strides[i] = INT64_MAX;
    if (in.byte() % 2)
      strides[in.byte() % ndim] = edgeValue(in);
    t.strides = strides.data();
  }
  t.data = flags % 16 == 3 ? nullptr : buffer;
}

/// Reads every output through (ASan checks that the runtime allocated it)
/// and frees them.
void readOutputs(tsl_tensor *outputs, int32_t noutputs) {
  volatile uint8_t sink = 0;
  for (int32_t i = 0; i < noutputs; ++i) {
    const tsl_tensor &t = outputs[i];
    uint64_t bytes = (t.dtype.bits + 7) / 8;
    for (int32_t d = 0; d < t.ndim; ++d) {
      if (t.shape[d] < 0) {
        std::fprintf(stderr, "output %d has a negative extent\n", i);
        __builtin_trap();
      }
      bytes *= static_cast<uint64_t>(t.shape[d]);
    }
    if (bytes > 0 && !t.data) {
      std::fprintf(stderr, "output %d has no data\n", i);
      __builtin_trap();
    }
    const uint8_t *p = static_cast<const uint8_t *>(t.data) + t.byte_offset;
    for (uint64_t k = 0; k < bytes; ++k)
      sink = sink + p[k];
  }
  (void)sink;
  tsl_outputs_free(outputs, noutputs);
}

/// Calls \p fn and checks the outcome: a success with a null pointer or a
/// failure without a message traps.
void callAndCheck(Runtime &r, tsl_function *fn, int which, const tsl_arg *args,
                  int32_t nargs, uint8_t nulls) {
  tsl_tensor *outputs = nullptr;
  int32_t noutputs = 0;
  tsl_status s = tsl_function_call(fn, nulls == 1 ? nullptr : args, nargs,
                                   nulls == 2 ? nullptr : &outputs,
                                   nulls == 3 ? nullptr : &noutputs);
  if (verbose)
    std::fprintf(stderr, "call %d (%s): status %d %s\n", which,
                 fn ? kFunctions[which % kNumFunctions].name : "null", s,
                 s == TSL_OK ? "" : tsl_last_error());
  if (s == TSL_OK) {
    if (nulls >= 1 && nulls <= 3) {
      std::fprintf(stderr, "a call with a null pointer succeeded\n");
      __builtin_trap();
    }
    readOutputs(outputs, noutputs);
  } else if (s == TSL_COMPILE_ERROR) {
    ++r.compileErrors;
  } else if (tsl_last_error()[0] == 0) {
    std::fprintf(stderr, "status %d without a message\n", s);
    __builtin_trap();
  }
}

/// A call of random arguments: arity, kinds, devices, ranks, types, shapes,
/// strides, offsets and null pointers.
void randomCall(Reader &in, Runtime &r, tsl_function *fn, int which) {
  int32_t nargs = static_cast<int32_t>(in.byte() % 5);
  if (in.byte() == 255)
    nargs = -1;
  tsl_device device = &r == &runtimes[0]
                          ? tsl_device{1, 0}
                          : tsl_device{TSL_DEVICE_GPU_EMULATOR, 0};
  std::vector<tsl_arg> args(5);
  std::vector<std::vector<int64_t>> shapes(5), strides(5);
  for (int i = 0; i < 5; ++i) {
    std::memset(&args[i], 0, sizeof(tsl_arg));
    if (in.byte() % 5 == 0) {
      args[i].is_int = 1;
      uint8_t v = in.byte();
      args[i].int_value = v < 200 ? v % 7 - 1 : edgeValue(in);
    } else {
      randomTensor(in, device, args[i].tensor, shapes[i], strides[i]);
    }
  }
  callAndCheck(r, fn, which, args.data(), nargs, in.byte());
}

/// A size of a fit call's dim: 0 and 1 most often, then small, up to 39
/// (the module's conv dims up to 7, so every call fits in the buffer).
int64_t fitSize(Reader &in, bool small) {
  static const int64_t sizes[] = {0, 1, 1, 2, 3, 4, 5, 7};
  uint8_t b = in.byte();
  return b < 224 || small ? sizes[b % 8] : 8 + (b - 224);
}

/// Fills \p count elements of type \p t at \p p from a generator seeded
/// by \p seed: \p mode 0 zeros, 1 small integers (0 to 2), 2 random values
/// (integers from -4 to 4), 3 random values with specials (NaN, infinities, -0,
/// integers at their type's edges: indices out of range, item values far out).
void fillData(uint8_t *p, tsl_dtype t, uint64_t count, uint32_t seed,
              int mode) {
  bool known = t.lanes == 1 &&
               (t.code == 6   ? t.bits == 8
                : t.code == 0 ? t.bits == 8 || t.bits == 32 || t.bits == 64
                : t.code == 2 ? t.bits == 16 || t.bits == 32 || t.bits == 64
                              : false);
  if (!known)
    return; // a type the call rejects: zeros
  uint32_t x = seed * 2654435761u + 1;
  auto next = [&] {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    return x;
  };
  for (uint64_t k = 0; k < count; ++k) {
    uint32_t v = mode == 0 ? 0 : next();
    bool special = mode == 3 && v % 8 == 0;
    int64_t small = static_cast<int64_t>(v % 9) - 4;
    if (mode == 1) // valid indices of dims of 3 or more; item gives 0 to 2
      small = static_cast<int64_t>(k % 3);
    if (t.code == 6) {
      p[k] = mode == 0 ? 0 : v % 2;
    } else if (t.code == 0) {
      static const int64_t edges[] = {
          -1, 64, 65, 1000, INT32_MAX, INT32_MIN, INT64_MAX, INT64_MIN};
      int64_t i = special ? edges[(v >> 8) % 8] : small;
      if (t.bits == 8)
        p[k] = static_cast<uint8_t>(i);
      else if (t.bits == 32)
        reinterpret_cast<int32_t *>(p)[k] = static_cast<int32_t>(i);
      else
        reinterpret_cast<int64_t *>(p)[k] = i;
    } else {
      static const double specials[] = {NAN,  INFINITY, -INFINITY, -0.0,
                                        1e30, -1e30,    65504.0,   1e-40};
      double f = special     ? specials[(v >> 8) % 8]
                 : mode == 1 ? static_cast<double>(small)
                             : (static_cast<double>(v % 4096) - 2048) / 512;
      if (t.bits == 64) {
        reinterpret_cast<double *>(p)[k] = f;
      } else if (t.bits == 32) {
        reinterpret_cast<float *>(p)[k] = static_cast<float>(f);
      } else {
        _Float16 h = static_cast<_Float16>(f);
        std::memcpy(p + 2 * k, &h, 2);
      }
    }
  }
}

/// A call that fits function \p which's signature, sizes and data chosen
/// by the input; one flag byte in eight breaks one extent or element type.
void fitCall(Reader &in, Runtime &r, tsl_function *fn, int which) {
  const tsl_fuzz::FuzzFunction &f = kFunctions[which];
  uint8_t flags = in.byte();
  int64_t dims[tsl_fuzz::kNumDims];
  for (int d = 0; d < tsl_fuzz::kNumDims; ++d)
    dims[d] = fitSize(in, d >= 3); // B, C, H, W, O: small
  uint32_t seed = in.byte();
  int mode = in.byte() % 4;
  int broken = flags % 8 >= 6 ? in.byte() % f.numParams : -1;
  tsl_device device = &r == &runtimes[0]
                          ? tsl_device{1, 0}
                          : tsl_device{TSL_DEVICE_GPU_EMULATOR, 0};
  tsl_arg args[5];
  std::vector<int64_t> shapes[5];
  uint64_t used = 0;
  for (int i = 0; i < f.numParams; ++i) {
    const tsl_fuzz::FuzzParam &p = f.params[i];
    std::memset(&args[i], 0, sizeof(tsl_arg));
    if (p.isInt) {
      args[i].is_int = 1;
      uint8_t v = in.byte();
      args[i].int_value = v < 200 ? v % 8 - 1 : v - 200;
      continue;
    }
    tsl_tensor &t = args[i].tensor;
    for (const char *c = p.dims; *c; ++c) {
      const char *letter = std::strchr(tsl_fuzz::kDimLetters, *c);
      shapes[i].push_back(letter ? dims[letter - tsl_fuzz::kDimLetters]
                                 : *c - '0');
    }
    t.dtype = tsl_dtype{p.dtype.code, p.dtype.bits, 1};
    if (i == broken && flags % 8 == 6 && !shapes[i].empty())
      ++shapes[i][in.byte() % shapes[i].size()];
    else if (i == broken)
      t.dtype = randomDtype(in);
    uint64_t count = 1;
    for (int64_t e : shapes[i])
      count *= static_cast<uint64_t>(e);
    uint64_t bytes = count * ((t.dtype.bits + 7) / 8) * t.dtype.lanes;
    if (used + bytes > kMaxBytes) { // not at these sizes: kept for safety
      std::memset(buffer, 0, used);
      return;
    }
    fillData(buffer + used, t.dtype, count, seed + i, mode);
    t.data = buffer + used;
    used = (used + bytes + 63) / 64 * 64;
    t.device = device;
    t.ndim = static_cast<int32_t>(shapes[i].size());
    t.shape = shapes[i].data();
  }
  callAndCheck(r, fn, which, args, f.numParams, 0);
  std::memset(buffer, 0, used); // the next input starts from zeros
}

void callOnce(Reader &in, Runtime &r) {
  uint8_t f = in.byte();
  int which = f % 128 % kNumFunctions;
  tsl_function *fn = f == 255 ? nullptr : r.fns[which];
  if (f >= 128 && fn)
    fitCall(in, r, fn, which);
  else
    randomCall(in, r, fn, which);
  int32_t compiles = 0, calls = 0;
  (void)tsl_function_stats(fn, in.byte() == 1 ? nullptr : &compiles, &calls);
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  // Accepted tensors fit in the buffer (read once, before any call).
  setenv("TSL_MAX_TENSOR_BYTES", std::to_string(kMaxBytes).c_str(), 1);
  const char *v = std::getenv("TSL_FUZZ_VERBOSE");
  verbose = v && std::strcmp(v, "1") == 0;
  // The data of every call: zeros, 64-byte aligned.
  buffer =
      static_cast<uint8_t *>(std::aligned_alloc(64, kMaxBytes + kSlackBytes));
  std::memset(buffer, 0, kMaxBytes + kSlackBytes);
  std::string dir = std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp";
  std::string path =
      dir + "/tsl_capi_fuzz_" + std::to_string(getpid()) + ".tsl";
  std::ofstream(path) << tsl_fuzz::kModuleSource;
  for (int d = 0; d < 2; ++d) {
    tsl_runtime_options options{};
    options.device =
        d == 0 ? tsl_device{1, 0} : tsl_device{TSL_DEVICE_GPU_EMULATOR, 0};
    tsl_module *module = nullptr;
    if (tsl_runtime_create(&options, &runtimes[d].rt) != TSL_OK ||
        tsl_runtime_enable_jit(runtimes[d].rt) != TSL_OK ||
        tsl_module_load_source(runtimes[d].rt, path.c_str(), &module) !=
            TSL_OK) {
      std::fprintf(stderr, "capi fuzzer: set-up failed: %s\n",
                   tsl_last_error());
      std::abort();
    }
    for (int i = 0; i < kNumFunctions; ++i)
      if (tsl_module_get_function(module, kFunctions[i].name,
                                  &runtimes[d].fns[i]) != TSL_OK) {
        std::fprintf(stderr, "capi fuzzer: %s: %s\n", kFunctions[i].name,
                     tsl_last_error());
        std::abort();
      }
  }
  std::remove(path.c_str());
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  Reader in{data, size};
  // Up to four calls per input, each on the CPU or the GPU emulator.
  int calls = 1 + in.byte() % 4;
  for (int c = 0; c < calls; ++c)
    callOnce(in, runtimes[in.byte() % 2]);
  return 0;
}
