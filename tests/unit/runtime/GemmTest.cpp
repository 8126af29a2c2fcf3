// The runtime's blocked GEMM against a double-precision reference, over
// sizes that exercise every edge of its tiles and blocks (including K = 0
// and the transposed-B and transposed-A forms), with both AVX-512 register
// tiles: 12 x 32 and, where it pads less (M = 5, 64; N = 48, 97), 8 x 48.
#include "runtime/KernelAbi.h"

#include <cmath>
#include <gtest/gtest.h>
#include <random>
#include <string>
#include <vector>

TEST(Gemm, MatchesReferenceOnEdgeSizes) {
  std::mt19937 rng(3);
  std::normal_distribution<float> normal;
  for (int64_t M : {1, 5, 12, 13, 64, 120, 121, 250})
    for (int64_t N : {1, 7, 32, 33, 48, 97, 100})
      for (int64_t K : {0, 1, 9, 256, 300})
        for (const char *form : {"plain", "b^T", "a^T"}) {
          std::string f = form;
          std::vector<float> A(M * K), B(K * N), Bt(N * K), C(M * N, 7.f);
          // A^T as stored [K, M] with a leading dimension wider than M.
          int64_t ldat = M + 3;
          std::vector<float> At(K * ldat, -1.f);
          for (float &x : A)
            x = normal(rng);
          for (float &x : B)
            x = normal(rng);
          for (int64_t k = 0; k < K; ++k)
            for (int64_t j = 0; j < N; ++j)
              Bt[j * K + k] = B[k * N + j];
          for (int64_t i = 0; i < M; ++i)
            for (int64_t k = 0; k < K; ++k)
              At[k * ldat + i] = A[i * K + k];
          if (f == "b^T")
            tsl_rt_sgemm_bt(M, N, K, A.data(), K, Bt.data(), K, C.data(), N);
          else if (f == "a^T")
            tsl_rt_sgemm_at(M, N, K, At.data(), ldat, B.data(), N, C.data(), N);
          else
            tsl_rt_sgemm(M, N, K, A.data(), K, B.data(), N, C.data(), N);
          for (int64_t i = 0; i < M; ++i)
            for (int64_t j = 0; j < N; ++j) {
              double ref = 0;
              for (int64_t k = 0; k < K; ++k)
                ref += double(A[i * K + k]) * B[k * N + j];
              ASSERT_NEAR(C[i * N + j], ref, 1e-3 * (1 + std::fabs(ref)))
                  << "M=" << M << " N=" << N << " K=" << K << " form=" << form;
            }
        }
}
