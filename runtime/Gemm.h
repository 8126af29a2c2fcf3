#pragma once
/// \file The runtime's f32 GEMM as other runtime kernels call it (private to
/// runtime/; generated code calls tsl_rt_sgemm). Besides a row-major B, it
/// takes B as a packer: a function that writes any block of a virtual B
/// matrix straight into the GEMM's packed panels, so an operand such as
/// convolution's im2col matrix is never stored whole.

#include <cstdint>

namespace tsl::rt {

/// Writes rows [k0, k0 + kc) and columns [j0, j0 + nr) of a virtual B
/// matrix into \p panel, row by row: panel[k * width + j] for k < kc and
/// j < width, zero for nr <= j < width. \p self is GemmB::self.
using GemmPanelPacker = void (*)(const void *self, int64_t k0, int64_t kc,
                                 int64_t j0, int64_t nr, int64_t width,
                                 float *panel);

/// The B operand of sgemm: a row-major matrix (\p data, leading dimension
/// \p ld; \p transposed: stored as [N, K]) when \p pack and \p packed are
/// null; else the panels \p pack writes; else \p packed: panels that
/// sgemmPackB wrote for the product's K and \p packedN >= N columns (the
/// product reads the first N), used in place with no packing.
struct GemmB {
  const float *data = nullptr;
  int64_t ld = 0;
  bool transposed = false;
  GemmPanelPacker pack = nullptr;
  const void *self = nullptr;
  const float *packed = nullptr;
  int64_t packedN = 0;
};

/// The A operand of sgemm: row-major [M, K] with leading dimension \p ld,
/// or, \p transposed, stored as [K, M] (a weight gradient's x^T read in
/// place).
struct GemmA {
  const float *data = nullptr;
  int64_t ld = 0;
  bool transposed = false;
};

/// Floats sgemmPackB writes for a K x N operand.
int64_t sgemmPackedFloats(int64_t K, int64_t N);

/// Packs the K x N operand \p B (a matrix or a packer, not \p packed) into
/// \p dst (sgemmPackedFloats(K, N) floats) as sgemm's default register tile
/// reads it: for a B that many products share (attention's keys and values
/// for every block of query rows), packed once instead of once per product.
void sgemmPackB(int64_t K, int64_t N, const GemmB &B, float *dst);

/// C[M, N] = A[M, K] @ B, plus \p rowBias[i] on row i when not null; C
/// row-major with leading dimension \p ldc, overwritten (K = 0 writes the
/// bias or zeros). Cache-blocked around the host's micro-kernel (AVX-512,
/// AVX2 or portable). Its packing scratch (about 2.1 MiB, plus 312 KiB per
/// pool thread) is allocated once per calling thread and reused; returns
/// false, with C untouched, when that allocation fails.
bool sgemm(int64_t M, int64_t N, int64_t K, const GemmA &A, const GemmB &B,
           float *C, int64_t ldc, const float *rowBias);

/// sgemm with a row-major A[M, K] of leading dimension \p lda.
inline bool sgemm(int64_t M, int64_t N, int64_t K, const float *A, int64_t lda,
                  const GemmB &B, float *C, int64_t ldc, const float *rowBias) {
  return sgemm(M, N, K, GemmA{A, lda, false}, B, C, ldc, rowBias);
}

} // namespace tsl::rt
