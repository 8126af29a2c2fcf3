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

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// Per-call state: an arena of allocations and the first error.
typedef struct tsl_rt_context tsl_rt_context;

/// Creates and destroys a context (the runtime does; generated code never).
tsl_rt_context *tsl_rt_context_create(void);
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

/// Allocates \p bytes (64-byte aligned) owned by the context; null (with
/// an error recorded) when the size is negative or too large.
void *tsl_rt_alloc(tsl_rt_context *ctx, int64_t bytes);
/// Frees an allocation of this context early (its last use has passed), so
/// later allocations of the same call can reuse the memory.
void tsl_rt_free(tsl_rt_context *ctx, void *p);
/// Records that the assertion or check of IR op \p op failed.
void tsl_rt_fail(tsl_rt_context *ctx, int32_t op);
/// Records an error with a message (library kernels).
void tsl_rt_error(tsl_rt_context *ctx, const char *message);

int32_t tsl_rt_conv2d(tsl_rt_context *ctx, int32_t dtype, const void *x,
                      const int64_t *xshape, const void *w,
                      const int64_t *wshape, const void *bias, int64_t sh,
                      int64_t sw, int64_t ph, int64_t pw, void *out);
int32_t tsl_rt_max_pool2d(tsl_rt_context *ctx, int32_t dtype, const void *x,
                          const int64_t *xshape, int64_t kh, int64_t kw,
                          int64_t sh, int64_t sw, int64_t ph, int64_t pw,
                          void *out);
/// Row-major indices of non-zero elements: allocates *out as i64[count, rank].
int32_t tsl_rt_nonzero(tsl_rt_context *ctx, int32_t dtype, const void *x,
                       const int64_t *shape, int32_t rank, void **out,
                       int64_t *count);
int32_t tsl_rt_masked_select(tsl_rt_context *ctx, int32_t dtype, const void *x,
                             const void *mask, int64_t numel, void **out,
                             int64_t *count);
int32_t tsl_rt_unique(tsl_rt_context *ctx, int32_t dtype, const void *x,
                      int64_t numel, void **out, int64_t *count);
int32_t tsl_rt_index_select(tsl_rt_context *ctx, int32_t dtype, const void *x,
                            const int64_t *shape, int32_t rank, int32_t axis,
                            int32_t idxDtype, const void *idx, int64_t nidx,
                            void *out);
int32_t tsl_rt_topk(tsl_rt_context *ctx, int32_t dtype, const void *x,
                    int64_t rows, int64_t n, int64_t k, void *values,
                    void *indices);
/// C[M, N] = A[M, K] @ B[K, N] in f32 (row-major with leading dimensions),
/// cache-blocked with a vectorized micro-kernel for the host's CPU features.
void tsl_rt_sgemm(int64_t M, int64_t N, int64_t K, const float *A, int64_t lda,
                  const float *B, int64_t ldb, float *C, int64_t ldc);
/// C[M, N] = A[M, K] @ B^T with B stored row-major as [N, K] (attention's
/// q @ k^T without materializing the transpose).
void tsl_rt_sgemm_bt(int64_t M, int64_t N, int64_t K, const float *A,
                     int64_t lda, const float *B, int64_t ldb, float *C,
                     int64_t ldc);
/// argmax over one axis (axis < 0: the flattened tensor), writing i64.
int32_t tsl_rt_argmax(tsl_rt_context *ctx, int32_t dtype, const void *x,
                      const int64_t *shape, int32_t rank, int32_t axis,
                      void *out);

/* --- GPU variants -----------------------------------------------------
 * Their host code runs like a CPU kernel, but buffers hold device pointers
 * and every loop nest is a device kernel the host code launches. Device
 * kernels report a failed check by storing 1 + its op index in the last
 * symbol slot (`syms[nsyms - 1]`, low 32 bits; the high bits number the
 * message, if any), which the launch copies back. */

/// The device a GPU variant runs on; the runtime sets it on the context.
typedef struct tsl_rt_device {
  void *self;
  /// Device memory of \p bytes, or null with *error set.
  void *(*alloc)(void *self, int64_t bytes, const char **error);
  void (*release)(void *self, void *p);
  /// Runs device kernel number \p kernel over \p total work items with
  /// the buffer and symbol arrays (copied to the device first, the symbols
  /// copied back after). Null, or an error message.
  const char *(*launch)(void *self, int32_t kernel, int64_t total,
                        void **buffers, int64_t nbuffers, int64_t *syms,
                        int64_t nsyms);
  /// Copies \p bytes of device memory to the host. Null, or an error.
  const char *(*read)(void *self, void *dst, const void *src, int64_t bytes);
} tsl_rt_device;

void tsl_rt_context_set_device(tsl_rt_context *ctx,
                               const tsl_rt_device *device);
/// Device memory owned by the context (released at its end unless taken
/// with tsl_rt_context_take_device); null with an error recorded.
void *tsl_rt_dev_alloc(tsl_rt_context *ctx, int64_t bytes);
void tsl_rt_dev_free(tsl_rt_context *ctx, void *p);
/// Hands device allocation \p p to the caller (1), or 0 when not owned.
int32_t tsl_rt_context_take_device(tsl_rt_context *ctx, void *p);
/// Launches a device kernel (see tsl_rt_device). Returns 0, or non-zero
/// after recording the launch error or the failed op: 1, or 1 + k when the
/// kernel stored message number k (1-based) in the status slot's high half.
int32_t tsl_rt_dev_launch(tsl_rt_context *ctx, int32_t kernel, int64_t total,
                          void **buffers, int64_t nbuffers, int64_t *syms,
                          int64_t nsyms);
/// Copies device memory to the host; non-zero after recording an error.
int32_t tsl_rt_dev_read(tsl_rt_context *ctx, void *dst, const void *src,
                        int64_t bytes);

/* Ahead-of-time modules call the functions above through a table they
 * export as `tsl_rt_table` (void *[TSL_RT_NUM_SLOTS]); the runtime fills it
 * when it loads the module, so no symbol of the program needs exporting. */
enum tsl_rt_slot {
  TSL_RT_ALLOC,
  TSL_RT_FAIL,
  TSL_RT_ERROR,
  TSL_RT_CONV2D,
  TSL_RT_MAX_POOL2D,
  TSL_RT_NONZERO,
  TSL_RT_MASKED_SELECT,
  TSL_RT_UNIQUE,
  TSL_RT_INDEX_SELECT,
  TSL_RT_TOPK,
  TSL_RT_ARGMAX,
  TSL_RT_SGEMM,
  TSL_RT_FREE,
  TSL_RT_SGEMM_BT,
  TSL_RT_NUM_SLOTS
};
/* The slot of a runtime function by name (-1 when it has none). */
int32_t tsl_rt_slot_of(const char *name);
/* Fills table[0..TSL_RT_NUM_SLOTS) with the runtime's functions. */
void tsl_rt_fill_table(void **table);

#ifdef __cplusplus
}
#endif
