// Single-precision matrix multiply for generated code: cache blocking
// (panels of B and A packed contiguously) around a register-blocked
// micro-kernel (12 x 32 for AVX-512, 6 x 16 for AVX2, 4 x 8 portable),
// chosen at run time by CPU features.
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
constexpr int64_t MR = 12, NR = 32; // 24 of the 32 zmm registers accumulate
#include "runtime/GemmKernel.inc"
} // namespace avx512
#pragma GCC pop_options

#pragma GCC push_options
#pragma GCC target("avx2,fma")
namespace avx2 {
typedef float Vec __attribute__((vector_size(32)));
constexpr int Lanes = 8;
constexpr int64_t MR = 6, NR = 16; // 12 of the 16 ymm registers accumulate
#include "runtime/GemmKernel.inc"
} // namespace avx2
#pragma GCC pop_options

namespace portable {
typedef float Vec __attribute__((vector_size(16)));
constexpr int Lanes = 4;
constexpr int64_t MR = 4, NR = 8;
#include "runtime/GemmKernel.inc"
} // namespace portable

using GemmFn = void (*)(int64_t, int64_t, int64_t, const float *, int64_t,
                        const float *, int64_t, float *, int64_t, bool);

GemmFn chooseGemm() {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f"))
    return avx512::gemm;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    return avx2::gemm;
  return portable::gemm;
}

} // namespace

extern "C" void tsl_rt_sgemm(int64_t M, int64_t N, int64_t K, const float *A,
                             int64_t lda, const float *B, int64_t ldb, float *C,
                             int64_t ldc) {
  static const GemmFn fn = chooseGemm();
  fn(M, N, K, A, lda, B, ldb, C, ldc, false);
}

extern "C" void tsl_rt_sgemm_bt(int64_t M, int64_t N, int64_t K, const float *A,
                                int64_t lda, const float *B, int64_t ldb,
                                float *C, int64_t ldc) {
  static const GemmFn fn = chooseGemm();
  fn(M, N, K, A, lda, B, ldb, C, ldc, true);
}
