// libFuzzer target for the C API (runtime/include/tsl/tsl_c.h): the input
// bytes choose a function, the arity, and per argument int or tensor,
// device, rank, element type, shape, strides, byte offset and null
// pointers; the call runs on a CPU runtime or on the GPU emulator. The
// module is loaded once (LLVMFuzzerInitialize) and its dims and ints are
// dynamic, so each function compiles one variant per runtime on its first
// fitting call; later calls that fit run compiled code, and calls that do
// not are rejected (or try a compile the elaborator refuses). Acceptable
// outcomes: a status with a message, or outputs that are then freed. Data
// pointers are valid for the sizes passed.
//
// Shapes are unbounded (edge values up to INT64_MAX and INT64_MIN, products
// that overflow), and offsets small (aligned or not) or wrapping the
// address space. The per-tensor limit is set to the data buffer's size
// (TSL_MAX_TENSOR_BYTES), so every tensor the runtime accepts lies inside
// the buffer: a call must reject the rest (overflowing, too large,
// misaligned, wrapping) without touching the data, and ASan checks that
// accepted ones stay inside it.
#include "tsl/tsl_c.h"

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

const char *kSource =
    "dim N: dynamic;\ndim M: dynamic;\n"
    "fn axpy(a: f32[N], b: f32[N], k: int dynamic) -> f32[N] {\n"
    "  return a * 2.0 + b + k;\n}\n"
    "fn rowsum(x: f32[N, 3]) -> (f32[N], f32[N, 3]) {\n"
    "  return (sum(x, axis=1), x);\n}\n"
    "fn mixed(x: i32[N, M], y: f64[M], m: bool[N, M]) -> (f64[N, M], i64[?]) "
    "{\n  return (cast(x, f64) + y, nonzero(m)[:, 0]);\n}\n"
    "fn need_even(a: f16[N], k: int dynamic) -> f16[N] {\n"
    "  check(N % 2 == 0, \"N must be even\");\n  return a;\n}\n"
    "fn scalar(s: f64[], t: i8[N]) -> f64[] {\n"
    "  return s + cast(sum(t), f64);\n}\n";
const char *kNames[] = {"axpy", "rowsum", "mixed", "need_even", "scalar"};
constexpr int kNumFns = 5;

struct Runtime {
  tsl_runtime *rt = nullptr;
  tsl_function *fns[kNumFns] = {};
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

void callOnce(Reader &in, Runtime &r) {
  uint8_t f = in.byte();
  tsl_function *fn = f == 255 ? nullptr : r.fns[f % kNumFns];
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
  uint8_t nulls = in.byte();
  tsl_tensor *outputs = nullptr;
  int32_t noutputs = 0;
  tsl_status s = tsl_function_call(fn, nulls == 1 ? nullptr : args.data(),
                                   nargs, nulls == 2 ? nullptr : &outputs,
                                   nulls == 3 ? nullptr : &noutputs);
  if (verbose)
    std::fprintf(stderr, "call %d: status %d %s\n", f, s,
                 s == TSL_OK ? "" : tsl_last_error());
  if (s == TSL_OK) {
    if (nulls >= 1 && nulls <= 3) {
      std::fprintf(stderr, "a call with a null pointer succeeded\n");
      __builtin_trap();
    }
    tsl_outputs_free(outputs, noutputs);
  } else if (s == TSL_COMPILE_ERROR) {
    ++r.compileErrors;
  } else if (tsl_last_error()[0] == 0) {
    std::fprintf(stderr, "status %d without a message\n", s);
    __builtin_trap();
  }
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
  std::ofstream(path) << kSource;
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
    for (int i = 0; i < kNumFns; ++i)
      if (tsl_module_get_function(module, kNames[i], &runtimes[d].fns[i]) !=
          TSL_OK) {
        std::fprintf(stderr, "capi fuzzer: %s: %s\n", kNames[i],
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
