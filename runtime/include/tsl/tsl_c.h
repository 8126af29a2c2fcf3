/* The TSL runtime's C ABI: load a compiled TSL module and call its
 * functions with tensors in caller memory. Variants are chosen per call by
 * native guard code; with a compiler installed (tsl_runtime_enable_jit from
 * the tsl_driver library) a call no variant serves compiles a new one.
 *
 * Every function returns a status; on failure tsl_last_error() gives a
 * message (per thread) naming the argument, dim, guard or check. Nothing
 * here aborts or throws on bad input. */
#ifndef TSL_C_H
#define TSL_C_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum tsl_status {
  TSL_OK = 0,
  TSL_INVALID_ARGUMENT =
      1,                 /* null pointers, wrong arity, rank, dtype or size */
  TSL_NOT_FOUND = 2,     /* no such file or function */
  TSL_COMPILE_ERROR = 3, /* the source has errors (the message has them) */
  TSL_NO_VARIANT = 4, /* no variant serves the call and none can be compiled */
  TSL_RUNTIME_ERROR =
      5, /* a failed check(...) or index bound, with its source line */
  TSL_UNSUPPORTED = 6 /* a device, layout or feature this runtime lacks */
} tsl_status;

/* Layout-compatible with DLPack's DLDevice, DLDataType and DLTensor. */
typedef struct tsl_device {
  int32_t device_type; /* 1 = CPU (kDLCPU), 2 = CUDA (kDLCUDA), or
                          TSL_DEVICE_GPU_EMULATOR */
  int32_t device_id;
} tsl_device;
/* The GPU emulator: GPU variants with their device memory in host memory
 * and each kernel launch run as a few simulated threads (a test device for
 * machines without a GPU; tensors on it are host pointers). */
#define TSL_DEVICE_GPU_EMULATOR 0x7e57
typedef struct tsl_dtype {
  uint8_t code; /* 0 int, 2 float, 4 bfloat, 6 bool (kDLInt, kDLFloat,
                   kDLBfloat, kDLBool) */
  uint8_t bits;
  uint16_t lanes; /* 1 */
} tsl_dtype;
typedef struct tsl_tensor {
  void *data;
  tsl_device device;
  int32_t ndim;
  tsl_dtype dtype;
  int64_t *shape;
  int64_t *strides; /* NULL or row-major compact */
  uint64_t byte_offset;
} tsl_tensor;

/* One argument: a tensor, or an integer for an `int` parameter. */
typedef struct tsl_arg {
  int32_t is_int;
  int64_t int_value;
  tsl_tensor tensor;
} tsl_arg;

typedef struct tsl_runtime_options {
  int32_t
      cache_limit; /* variants per function before the all-dynamic one; 0: 8 */
  /* Where functions run: {0, 0} or {1, 0} the CPU; {2, n} CUDA device n
   * (tsl_runtime_create fails with TSL_UNSUPPORTED "no CUDA driver: ..."
   * where there is none); arguments and outputs are on this device. */
  tsl_device device;
} tsl_runtime_options;

typedef struct tsl_runtime tsl_runtime;
typedef struct tsl_module tsl_module;
typedef struct tsl_function tsl_function;

/* The last error message of the calling thread ("" when none). */
const char *tsl_last_error(void);

tsl_status tsl_runtime_create(const tsl_runtime_options *options,
                              tsl_runtime **out);
/* Frees the runtime with its modules and functions. */
void tsl_runtime_destroy(tsl_runtime *rt);

/* Loads a .tsl source file (compiled on demand; needs a compiler). */
tsl_status tsl_module_load_source(tsl_runtime *rt, const char *path,
                                  tsl_module **out);
/* Loads an ahead-of-time module built by `tslc build` (a shared library):
 * runs with the runtime alone; a call no variant serves is TSL_NO_VARIANT
 * naming the failing guard. The path is resolved to an absolute one (never
 * searched on the library path), and the file must match the digest that
 * `tslc build` wrote beside it (`<path>.tslsum`): a missing, malformed or
 * mismatching digest is TSL_INVALID_ARGUMENT, before any of its code runs.
 * The digest detects corruption, not someone who can write both files. */
tsl_status tsl_module_load_aot(tsl_runtime *rt, const char *path,
                               tsl_module **out);
tsl_status tsl_module_get_function(tsl_module *module, const char *name,
                                   tsl_function **out);

/* The function `name` with the parameters at indices donated[0..ndonated)
 * donated, as JAX's donate_argnums: a handle of its own (its own variants,
 * compiled to write results into those buffers: an optimizer step's new
 * weights and moments in place of the old, a KV cache appended to without a
 * copy). Every call then takes over each donated argument's buffer, which
 * must be a whole malloc'd block (data with byte_offset 0), such as an
 * output of an earlier call: on success it is one output's data (written in
 * place) or freed, and the caller must not read, write or free it again; on
 * failure it stays the caller's, its contents unspecified when the kernel
 * ran. A donated argument sharing memory with another argument is
 * TSL_INVALID_ARGUMENT. An index outside the parameters is
 * TSL_INVALID_ARGUMENT, an int parameter's a compile error at the first
 * call; GPU runtimes and AOT modules are TSL_UNSUPPORTED. */
tsl_status tsl_module_get_function_donating(tsl_module *module,
                                            const char *name,
                                            const int32_t *donated,
                                            int32_t ndonated,
                                            tsl_function **out);

/* Calls a function. On success *outputs points to *noutputs tensors the
 * runtime allocated (row-major, on the runtime's device); free them with
 * tsl_outputs_free. Tensor arguments must be on the runtime's device, with
 * data + byte_offset aligned to the element size and a byte size within
 * the per-tensor limit (TSL_MAX_TENSOR_BYTES, 16 GiB by default); others
 * are TSL_INVALID_ARGUMENT naming the argument.
 * Safe to call concurrently from several threads. A call a compiled variant
 * serves takes no lock and allocates only what it returns, up to 16
 * arguments and 8 results with 64 dims among each (larger calls keep
 * their bookkeeping on the heap). */
tsl_status tsl_function_call(tsl_function *fn, const tsl_arg *args,
                             int32_t nargs, tsl_tensor **outputs,
                             int32_t *noutputs);
/* The same on a GPU runtime with the caller's stream (a CUstream): copies
 * and launches go to it, and the call returns synchronized with it. A null
 * stream is the runtime's own; a CPU runtime takes only null.
 *
 * On a GPU runtime every call that enqueued device work waits for its
 * stream before returning (cuStreamSynchronize), so its outputs are
 * complete for the host and for any stream, and its arguments may be
 * reused at once; an asynchronous device error is TSL_RUNTIME_ERROR.
 * Outputs go back with tsl_outputs_free to the cache of the stream the
 * call ran on, reusable at once by later calls on it: finish other
 * streams' work that reads them first. */
tsl_status tsl_function_call_on_stream(tsl_function *fn, const tsl_arg *args,
                                       int32_t nargs, void *stream,
                                       tsl_tensor **outputs, int32_t *noutputs);
void tsl_outputs_free(tsl_tensor *outputs, int32_t noutputs);

/* Weights from a safetensors file (tsl/tsl_c.h's only file format): the
 * file is mapped read-only and checked (a truncated file, a header that
 * lies about sizes or offsets, malformed JSON or a dtype TSL lacks is
 * TSL_INVALID_ARGUMENT naming the problem; a missing file TSL_NOT_FOUND);
 * each tensor is then a view of the mapping (zero copy; a tensor stored
 * misaligned for its element type is copied once), valid until
 * tsl_weights_close, and can be passed straight to tsl_function_call. */
typedef struct tsl_weights tsl_weights;
tsl_status tsl_weights_open(const char *path, tsl_weights **out);
void tsl_weights_close(tsl_weights *weights);
/* The number of tensors (in the header's order). */
int32_t tsl_weights_count(const tsl_weights *weights);
/* Tensor `index`: its name (NUL-terminated) and a view of it (CPU, row-major;
 * shape valid until close). TSL_INVALID_ARGUMENT for an index out of range. */
tsl_status tsl_weights_get(const tsl_weights *weights, int32_t index,
                           const char **name, tsl_tensor *out);
/* The tensor named `name`; TSL_NOT_FOUND when there is none. */
tsl_status tsl_weights_find(const tsl_weights *weights, const char *name,
                            tsl_tensor *out);

/* Installs the JIT compiler (defined in the tsl_driver library, not in the
 * runtime): tsl_module_load_source then compiles variants on demand. */
tsl_status tsl_runtime_enable_jit(tsl_runtime *rt);

/* Which events the runtime and compiler log to stderr, for the whole
 * process and every function (existing ones too): a comma-separated list of
 * recompiles, guards, dynamic, perf, gpu-counters ("all": every one but
 * gpu-counters, which changes how GPU-emulator kernels compile; "" or
 * "none": no logs), as TSL_LOGS takes them. NULL goes back to $TSL_LOGS. An unknown
 * name is TSL_INVALID_ARGUMENT (and changes nothing). */
tsl_status tsl_set_logs(const char *spec);

/* How many variants were compiled and how many calls ran so far. */
tsl_status tsl_function_stats(tsl_function *fn, int32_t *compiles,
                              int32_t *calls);

#ifdef __cplusplus
}
#endif

#endif /* TSL_C_H */
