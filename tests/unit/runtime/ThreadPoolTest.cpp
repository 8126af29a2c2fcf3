// The runtime's thread pool: every index runs exactly once, nested and
// concurrent loops run inline (never more threads than the pool's size),
// and the parallel GEMM and conv2d give bit-identical results for any thread
// count.
#include "runtime/ThreadPool.h"
#include "runtime/KernelAbi.h"

#include <atomic>
#include <cstring>
#include <gtest/gtest.h>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

using tsl::rt::ThreadPool;

namespace {

/// Restores the default size when a test ends.
struct PoolSize {
  explicit PoolSize(int n) { ThreadPool::instance().resize(n); }
  ~PoolSize() { ThreadPool::instance().resize(0); }
};

TEST(ThreadPool, RunsEveryIndexOnceOnDistinctSlots) {
  PoolSize size(4);
  ASSERT_EQ(ThreadPool::instance().size(), 4);
  for (int64_t n : {0, 1, 2, 3, 7, 1000}) {
    std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
    std::atomic<int> badSlot{0};
    ThreadPool::instance().parallelFor(n, [&](int64_t i) {
      hits[static_cast<size_t>(i)].fetch_add(1);
      int slot = ThreadPool::threadIndex();
      if (slot < 0 || slot >= 4)
        badSlot.fetch_add(1);
    });
    for (int64_t i = 0; i < n; ++i)
      EXPECT_EQ(hits[static_cast<size_t>(i)].load(), 1) << "n=" << n;
    EXPECT_EQ(badSlot.load(), 0);
  }
}

TEST(ThreadPool, NestedLoopsRunOnTheirCallersThread) {
  PoolSize size(3);
  std::atomic<int> wrongThread{0}, total{0};
  ThreadPool::instance().parallelFor(6, [&](int64_t) {
    std::thread::id outer = std::this_thread::get_id();
    ThreadPool::instance().parallelFor(5, [&](int64_t) {
      if (std::this_thread::get_id() != outer)
        wrongThread.fetch_add(1);
      total.fetch_add(1);
    });
  });
  EXPECT_EQ(total.load(), 30);
  EXPECT_EQ(wrongThread.load(), 0);
}

TEST(ThreadPool, ConcurrentCallersNeverExceedThePoolSize) {
  PoolSize size(2);
  std::atomic<int> running{0}, most{0}, total{0};
  auto caller = [&] {
    for (int round = 0; round < 50; ++round)
      ThreadPool::instance().parallelFor(8, [&](int64_t) {
        int now = running.fetch_add(1) + 1;
        for (int seen = most.load(); now > seen;)
          most.compare_exchange_weak(seen, now);
        std::this_thread::yield();
        running.fetch_sub(1);
        total.fetch_add(1);
      });
  };
  std::thread a(caller), b(caller);
  a.join();
  b.join();
  EXPECT_EQ(total.load(), 2 * 50 * 8);
  // The pool's 2 threads plus the second caller running its loop inline.
  EXPECT_LE(most.load(), 3);
}

// A worker thread that cannot be started (here: every one, asked for a
// stack no address space holds, so pthread_create really fails) leaves the
// pool on the threads it has, said once on stderr, and every loop still
// runs each index once. std::thread threw std::system_error there: with
// TSL_NUM_THREADS=4096 under a memory limit, the process aborted.
TEST(ThreadPool, WorkersThatCannotStartLeaveThePoolSmaller) {
  ThreadPool::setWorkerStackBytes(size_t(1) << 62);
  std::string first, second;
  std::vector<std::atomic<int>> hits(100);
  {
    PoolSize size(4);
    ::testing::internal::CaptureStderr();
    ThreadPool::instance().parallelFor(
        100, [&](int64_t i) { hits[static_cast<size_t>(i)].fetch_add(1); });
    first = ::testing::internal::GetCapturedStderr();
    EXPECT_EQ(ThreadPool::instance().size(), 1);
    // Asked again (a resize), the workers fail again: no second warning.
    ThreadPool::instance().resize(3);
    ::testing::internal::CaptureStderr();
    ThreadPool::instance().parallelFor(
        100, [&](int64_t i) { hits[static_cast<size_t>(i)].fetch_add(1); });
    second = ::testing::internal::GetCapturedStderr();
    EXPECT_EQ(ThreadPool::instance().size(), 1);
  }
  ThreadPool::setWorkerStackBytes(0);
  for (size_t i = 0; i < hits.size(); ++i)
    EXPECT_EQ(hits[i].load(), 2) << i;
  const std::string head = "[tsl] warning: could not start thread 2 of the "
                           "pool's 4 (",
                    tail = "); running on 1 thread\n";
  EXPECT_EQ(first.compare(0, head.size(), head), 0) << first;
  EXPECT_TRUE(first.size() > tail.size() &&
              first.compare(first.size() - tail.size(), tail.size(), tail) == 0)
      << first;
  EXPECT_EQ(second, "");
  // With the default stack the workers start again.
  PoolSize size(4);
  std::atomic<int> total{0};
  ThreadPool::instance().parallelFor(1000,
                                     [&](int64_t) { total.fetch_add(1); });
  EXPECT_EQ(total.load(), 1000);
  EXPECT_EQ(ThreadPool::instance().size(), 4);
}

/// C = A @ B through tsl_rt_sgemm with \p threads pool threads.
std::vector<float> gemm(int threads, int64_t M, int64_t N, int64_t K,
                        const std::vector<float> &a,
                        const std::vector<float> &b) {
  PoolSize size(threads);
  std::vector<float> c(static_cast<size_t>(M * N), -1.f);
  tsl_rt_sgemm(M, N, K, a.data(), K, b.data(), N, c.data(), N);
  return c;
}

TEST(ThreadPool, ParallelGemmMatchesOneThreadBitForBit) {
  std::mt19937 rng(3);
  std::normal_distribution<float> normal;
  // Shapes with one row block (split by B panels), many row blocks, partial
  // tiles and several K blocks.
  struct Shape {
    int64_t M, N, K;
  };
  for (Shape s :
       {Shape{7, 3000, 300}, Shape{500, 130, 517}, Shape{241, 1025, 64}}) {
    std::vector<float> a(static_cast<size_t>(s.M * s.K)),
        b(static_cast<size_t>(s.K * s.N));
    for (float &x : a)
      x = normal(rng);
    for (float &x : b)
      x = normal(rng);
    std::vector<float> one = gemm(1, s.M, s.N, s.K, a, b);
    for (int threads : {2, 3, 8}) {
      std::vector<float> many = gemm(threads, s.M, s.N, s.K, a, b);
      EXPECT_EQ(std::memcmp(one.data(), many.data(), one.size() * 4), 0)
          << s.M << "x" << s.N << "x" << s.K << " on " << threads << " threads";
    }
    // And the values are right: one row against a direct sum.
    for (int64_t j = 0; j < s.N; j += 97) {
      double want = 0;
      for (int64_t k = 0; k < s.K; ++k)
        want += static_cast<double>(a[static_cast<size_t>(k)]) *
                b[static_cast<size_t>(k * s.N + j)];
      EXPECT_NEAR(one[static_cast<size_t>(j)], want, 1e-3);
    }
  }
}

/// The shape of a conv2d with 3x3 weights and padding 1.
struct ConvShape {
  int64_t N, C, H, W, O;
};

/// conv2d of \p x [N, C, H, W] by \p w [O, C, 3, 3], padding 1, with the
/// bias \p b, on a pool of \p threads.
std::vector<float> conv(int threads, ConvShape s, const std::vector<float> &x,
                        const std::vector<float> &w,
                        const std::vector<float> &b) {
  PoolSize size(threads);
  int64_t xs[4] = {s.N, s.C, s.H, s.W}, ws[4] = {s.O, s.C, 3, 3};
  std::vector<float> out(static_cast<size_t>(s.N * s.O * s.H * s.W));
  tsl_rt_context *ctx = tsl_rt_context_create();
  EXPECT_EQ(tsl_rt_conv2d(ctx, /*f32*/ 6, x.data(), xs, w.data(), ws, b.data(),
                          1, 1, 1, 1, out.data()),
            0);
  tsl_rt_context_destroy(ctx);
  return out;
}

TEST(ThreadPool, ParallelConvMatchesOneThreadBitForBit) {
  std::mt19937 rng(4);
  std::normal_distribution<float> normal;
  // Images shared out whole (N a multiple of the threads, or many images)
  // and images in turn with each GEMM split (N = 3 on 2 or 8 threads); the
  // direct path (5 channels) and Winograd's (32 channels, 12 x 12 tiles).
  for (ConvShape s :
       {ConvShape{1, 5, 9, 11, 48}, ConvShape{3, 5, 9, 11, 48},
        ConvShape{4, 5, 9, 11, 48}, ConvShape{24, 5, 9, 11, 48},
        ConvShape{2, 32, 24, 24, 32}, ConvShape{3, 32, 24, 23, 33}}) {
    std::vector<float> x(static_cast<size_t>(s.N * s.C * s.H * s.W)),
        w(static_cast<size_t>(s.O * s.C * 9)), b(static_cast<size_t>(s.O));
    for (std::vector<float> *v : {&x, &w, &b})
      for (float &e : *v)
        e = normal(rng);
    std::vector<float> one = conv(1, s, x, w, b);
    for (int threads : {2, 3, 8}) {
      std::vector<float> many = conv(threads, s, x, w, b);
      EXPECT_EQ(std::memcmp(one.data(), many.data(), one.size() * 4), 0)
          << "N=" << s.N << " C=" << s.C << " on " << threads << " threads";
    }
    // And the values are right: output channel 0 of the last image at (4, 5).
    double want = b[0];
    for (int64_t c = 0; c < s.C; ++c)
      for (int64_t kh = 0; kh < 3; ++kh)
        for (int64_t kw = 0; kw < 3; ++kw)
          want += static_cast<double>(x[static_cast<size_t>(
                      (((s.N - 1) * s.C + c) * s.H + 3 + kh) * s.W + 4 + kw)]) *
                  w[static_cast<size_t>((c * 3 + kh) * 3 + kw)];
    EXPECT_NEAR(one[static_cast<size_t>(((s.N - 1) * s.O * s.H + 4) * s.W + 5)],
                want, 1e-4 * s.C);
  }
}

} // namespace
