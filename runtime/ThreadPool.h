#pragma once
/// \file The runtime's one pool of worker threads.
/// Library kernels (GEMM, convolution, attention) split their outer loops
/// over it. One pool per process, sized from the CPU affinity mask or
/// TSL_NUM_THREADS; the thread that calls parallelFor works too. Only one
/// parallel loop runs on the pool at a time: a loop started while another
/// runs (a second caller thread, or a loop nested inside a parallel body)
/// runs on its caller's thread alone, so threads never exceed the pool's
/// size however many calls a program makes at once.

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace tsl::rt {

class ThreadPool {
public:
  /// One index of a loop: \p self is the callable parallelFor was given.
  using Body = void (*)(void *self, int64_t index);

  /// The process's pool (created on first use; workers start lazily).
  static ThreadPool &instance();

  /// Threads a loop may use, the caller's included (>= 1). When a worker
  /// thread cannot be started (a thread limit, no memory for its stack),
  /// the pool keeps the threads it started, says so once on stderr, and
  /// size() drops to their number.
  int size() const;

  /// Sets the thread count (>= 1; 0 restores the default: TSL_NUM_THREADS,
  /// else the CPUs in the affinity mask; an invalid TSL_NUM_THREADS is
  /// named in a warning, once). Waits for a running loop to end.
  void resize(int threads);

  /// The stack size of worker threads started from now on (after a
  /// resize()); 0, the default, is the system's. A size no thread can have
  /// makes every worker fail to start (the tests of that path use one).
  static void setWorkerStackBytes(size_t bytes);

  /// Runs body(self, i) for every i in [0, n), each exactly once, on up to
  /// size() threads, and returns when all have returned. Indices are handed
  /// out in increasing order, but which thread runs which is not fixed:
  /// bodies must write disjoint data (then results do not depend on the
  /// thread count). n <= 1, a pool of one thread, a nested call or a pool
  /// busy with another caller's loop run the loop on the calling thread.
  void run(int64_t n, Body body, void *self);

  /// The calling thread's slot in the loop it is running: 0 for a thread
  /// outside the pool (a caller), 1..size()-1 for workers. Within one loop
  /// no two threads share a slot, so per-thread scratch can be indexed by
  /// it.
  static int threadIndex();

  /// Whether the calling thread is inside a parallel loop (a worker, or a
  /// caller while its loop runs): a loop it starts runs on it alone, so a
  /// kernel can skip splitting work it would only run in turn.
  static bool insideLoop();

  /// run() over a callable: f(i) for i in [0, n).
  template <class F> void parallelFor(int64_t n, F &&f) {
    using Fn = std::remove_reference_t<F>;
    run(
        n, [](void *s, int64_t i) { (*static_cast<Fn *>(s))(i); },
        const_cast<void *>(static_cast<const void *>(&f)));
  }

  ThreadPool(const ThreadPool &) = delete;
  ThreadPool &operator=(const ThreadPool &) = delete;

private:
  ThreadPool();
  ~ThreadPool();
  struct State;
  State *state_;
};

} // namespace tsl::rt
