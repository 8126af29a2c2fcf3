// Single-precision matrix multiply for generated code: cache blocking
// (panels of B and A packed contiguously) around a register-blocked
// micro-kernel (8 rows x 32 columns of accumulators), compiled for AVX-512
// and AVX2 with a portable fallback, chosen at run time by CPU features.
#include "runtime/KernelAbi.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {


#pragma GCC push_options
#pragma GCC target("avx512f,fma")
namespace avx512 {
typedef float Vec __attribute__((vector_size(64)));
constexpr int Lanes = 16;
#include "runtime/GemmKernel.inc"
} // namespace avx512
#pragma GCC pop_options

#pragma GCC push_options
#pragma GCC target("avx2,fma")
namespace avx2 {
typedef float Vec __attribute__((vector_size(32)));
constexpr int Lanes = 8;
#include "runtime/GemmKernel.inc"
} // namespace avx2
#pragma GCC pop_options

namespace portable {
typedef float Vec __attribute__((vector_size(16)));
constexpr int Lanes = 4;
#include "runtime/GemmKernel.inc"
} // namespace portable

using GemmFn = void (*)(int64_t, int64_t, int64_t, const float *, int64_t, const float *, int64_t,
                        float *, int64_t, bool);

GemmFn chooseGemm() {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f"))
    return avx512::gemm;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    return avx2::gemm;
  return portable::gemm;
}

} // namespace

extern "C" void tsl_rt_sgemm(int64_t M, int64_t N, int64_t K, const float *A, int64_t lda,
                             const float *B, int64_t ldb, float *C, int64_t ldc) {
  static const GemmFn fn = chooseGemm();
  fn(M, N, K, A, lda, B, ldb, C, ldc, false);
}

extern "C" void tsl_rt_sgemm_bt(int64_t M, int64_t N, int64_t K, const float *A, int64_t lda,
                                const float *B, int64_t ldb, float *C, int64_t ldc) {
  static const GemmFn fn = chooseGemm();
  fn(M, N, K, A, lda, B, ldb, C, ldc, true);
}
