// The runtime's blocked GEMM where K spans several K blocks (each block after
// the first adds into C) and N spans several N blocks, against a
// double-precision reference: GemmTest's sizes all fit one block of each.
// Partial register tiles at every edge, both AVX-512 tiles (M = 64, N = 48
// picks 8 x 48) and both B layouts.
#include "runtime/KernelAbi.h"

#include <cmath>
#include <gtest/gtest.h>
#include <random>
#include <vector>

namespace {

struct Shape {
  int64_t M, N, K;
};

TEST(GemmBlocks, MatchesReferenceAcrossKAndNBlocks) {
  std::mt19937 rng(5);
  std::normal_distribution<float> normal;
  for (Shape s : {Shape{131, 1100, 1100}, Shape{64, 48, 1537},
                  Shape{13, 33, 513}, Shape{5, 2100, 700}})
    for (bool transposed : {false, true}) {
      const int64_t M = s.M, N = s.N, K = s.K;
      std::vector<float> A(M * K), B(K * N), Bt(N * K), C(M * N, 7.f);
      for (float &x : A)
        x = normal(rng);
      for (float &x : B)
        x = normal(rng);
      for (int64_t k = 0; k < K; ++k)
        for (int64_t j = 0; j < N; ++j)
          Bt[j * K + k] = B[k * N + j];
      if (transposed)
        tsl_rt_sgemm_bt(M, N, K, A.data(), K, Bt.data(), K, C.data(), N);
      else
        tsl_rt_sgemm(M, N, K, A.data(), K, B.data(), N, C.data(), N);
      std::vector<double> ref(N);
      for (int64_t i = 0; i < M; ++i) {
        std::fill(ref.begin(), ref.end(), 0.0);
        for (int64_t k = 0; k < K; ++k) {
          double a = A[i * K + k];
          for (int64_t j = 0; j < N; ++j)
            ref[j] += a * B[k * N + j];
        }
        for (int64_t j = 0; j < N; ++j)
          ASSERT_NEAR(C[i * N + j], ref[j], 1e-3 * (1 + std::fabs(ref[j])))
              << "M=" << M << " N=" << N << " K=" << K << " i=" << i
              << " j=" << j << " transposed=" << transposed;
      }
    }
}

} // namespace
