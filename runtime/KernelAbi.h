#pragma once
/// \file The C ABI between generated kernels and the runtime: the context a
/// kernel runs in (memory, errors) and the library kernels generated code
/// calls for operations it does not emit inline (convolution, pooling,
/// data-dependent sizes, top-k). No compiler is needed to use any of this.
///
/// A compiled variant is a function
///   int32_t kernel(void **buffers, int64_t *syms, tsl_rt_context *ctx);
/// `buffers` holds one pointer per IR value (the caller fills the
/// parameters; the kernel allocates the rest with tsl_rt_alloc), `syms`
/// one value per symbol (the caller binds input symbols; the kernel writes
/// unbacked ones). It returns 0, or non-zero after recording an error.
///
/// Element type codes are the values of tsl::DType: bool 0, i8 1, i32 2,
/// i64 3, f16 4, bf16 5, f32 6, f64 7.

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// Per-call state: an arena of allocations and the first error.
typedef struct tsl_rt_context tsl_rt_context;

/// Creates a context for one call (the runtime does; generated code never).
tsl_rt_context *tsl_rt_context_create(void);
/// Frees the context and every allocation it still owns (host and device).
void tsl_rt_context_destroy(tsl_rt_context *ctx);
/// Frees every allocation made in the context except \p keep (outputs).
void tsl_rt_context_release(tsl_rt_context *ctx, void *const *keep,
                            int32_t nkeep);
/// Hands \p p (an allocation of this context) to the caller: it is no longer
/// freed by the context and must be released with free(). Returns 0 when
/// \p p is not (or no longer) owned by the context.
int32_t tsl_rt_context_take(tsl_rt_context *ctx, void *p);
/// The error message recorded by a failed call ("" when none).
const char *tsl_rt_context_error(const tsl_rt_context *ctx);
/// The op index passed to tsl_rt_fail (-1 when the failure came from a
/// library kernel, whose message says what happened).
int32_t tsl_rt_context_failed_op(const tsl_rt_context *ctx);

/* The runtime functions generated code calls (allocation, failures, the
 * library kernels, GEMM): declared from runtime/KernelEntryPoints.def, where
 * each is documented. The device ones are declared below with the device
 * ABI they need. */
#define TSL_RT_ENTRY(Name, Slot, Ret, Params) Ret Name Params;
#include "runtime/KernelEntryPoints.def"

/* --- GPU variants -----------------------------------------------------
 * Their host code runs like a CPU kernel, but buffers hold device pointers
 * and every kernel of the plan is a device kernel the host code launches,
 * asynchronously, on one stream. A launch passes the kernel one argument
 * block of 64-bit words (by value: kernel parameters on a GPU):
 *   args[0]            the address of the call's status word (the runtime
 *                      fills it in),
 *   args[1 .. 1+S)     the symbol array (S = symbols + 1),
 *   args[1+S ..)       the buffers the kernel uses, numbered by first use.
 * A device kernel that fails a check stores 1 + its op index in the status
 * word (low 32 bits; the high bits number the message, if any), and the
 * values its message shows in the two words after it: the status block is
 * TSL_RT_STATUS_WORDS words, and only the first failing thread writes it
 * (compare-and-swap on the status word). Host code
 * reads the status (tsl_rt_dev_check) only where it must wait anyway: when
 * it reads a value back, and at the end of a call whose kernels can fail. */

/// The words of a call's status block: the status, then two values of the
/// failed check's message.
#define TSL_RT_STATUS_WORDS 3

/// The grid of one launch: \p blocks blocks of \p threads threads (a
/// multiple of 32, at most 1024) with \p shared_bytes of shared memory
/// each. Kernels are correct for any number of blocks >= 1 (they stride
/// over their work), so a device may run fewer.
typedef struct tsl_rt_grid {
  int64_t blocks;
  int32_t threads;
  int32_t shared_bytes;
} tsl_rt_grid;

/// One row-major batched GEMM for the device's library (tsl_rt_dev_gemm):
/// d[i] = a[i] @ b[i] for i < batch, each d[i] m×n and contiguous; a[i] is
/// stored [m, k] ([k, m] with flag 1), b[i] [k, n] ([n, k] with flag 2).
/// Strides between batch entries are in elements (0: broadcast).
typedef struct tsl_rt_gemm {
  int32_t dtype; /* element type code, as above */
  int32_t flags; /* 1: a transposed, 2: b transposed */
  int64_t batch, m, n, k;
  const void *a;
  int64_t stride_a;
  const void *b;
  int64_t stride_b;
  void *d;
  int64_t stride_d;
} tsl_rt_gemm;

/// The device a GPU variant runs on; the runtime sets it on the context.
typedef struct tsl_rt_device {
  void *self;
  /// Device memory of \p bytes, or null with *error set.
  void *(*alloc)(void *self, int64_t bytes, const char **error);
  /// Frees device memory from alloc (stream-ordered: later work of the
  /// call may reuse it, earlier work still reading it is not disturbed).
  void (*release)(void *self, void *p);
  /// Enqueues device kernel number \p kernel on \p grid with the argument
  /// block \p args (\p nargs words; the device sets args[0]). Does not
  /// wait for it. Null, or an error message.
  const char *(*launch)(void *self, int32_t kernel, const tsl_rt_grid *grid,
                        int64_t *args, int64_t nargs);
  /// Copies \p bytes of device memory to the host, after the work enqueued
  /// so far. Null, or an error.
  const char *(*read)(void *self, void *dst, const void *src, int64_t bytes);
  /// The call's status block (TSL_RT_STATUS_WORDS words) after the work
  /// enqueued so far (word 0 is 0: no device kernel failed). Null, or an
  /// error.
  const char *(*status)(void *self, int64_t *status);
  /// Enqueues \p gemm through the device's GEMM library: 0 done, 1 failed
  /// (*error set), 2 no library GEMM for it (the caller runs its own).
  int32_t (*gemm)(void *self, const tsl_rt_gemm *gemm, const char **error);
} tsl_rt_device;

/// Sets the device the context's GPU calls use (the runtime does, before
/// running a GPU variant; without one they record an error).
void tsl_rt_context_set_device(tsl_rt_context *ctx,
                               const tsl_rt_device *device);
/// Hands device allocation \p p to the caller (1), or 0 when not owned.
int32_t tsl_rt_context_take_device(tsl_rt_context *ctx, void *p);

/* tsl_rt_dev_alloc, tsl_rt_dev_free, tsl_rt_dev_launch, tsl_rt_dev_read,
 * tsl_rt_dev_check, tsl_rt_dev_gemm: see runtime/KernelEntryPoints.def. */
#define TSL_RT_DEVICE_ENTRY(Name, Ret, Params) Ret Name Params;
#include "runtime/KernelEntryPoints.def"

/* Ahead-of-time modules call the functions above through a table they
 * export as `tsl_rt_table` (void *[TSL_RT_NUM_SLOTS]); the runtime fills it
 * when it loads the module, so no symbol of the program needs exporting. */
enum tsl_rt_slot {
#define TSL_RT_ENTRY(Name, Slot, Ret, Params) Slot,
#include "runtime/KernelEntryPoints.def"
  TSL_RT_NUM_SLOTS
};
/* The slot of a runtime function by name (-1 when it has none: a device
 * entry point, or no entry point at all). */
int32_t tsl_rt_slot_of(const char *name);
/* Fills table[0..TSL_RT_NUM_SLOTS) with the runtime's functions. */
void tsl_rt_fill_table(void **table);

/* One runtime function generated code may call: its C name and address. */
typedef struct tsl_rt_entry_point {
  const char *name;
  void *address;
} tsl_rt_entry_point;

/* Every function of runtime/KernelEntryPoints.def (those with an AOT slot
 * in slot order, then the device ones), for a JIT to bind by name; *n gets
 * the count (n may be null). The array is static: never freed. */
const tsl_rt_entry_point *tsl_rt_entry_points(size_t *n);

#ifdef __cplusplus
}
#endif
