// The worker pool: between loops workers poll briefly, then sleep on a
// condition variable; a loop publishes (body, self, n) under the mutex with
// a new generation number, and every thread takes indices from one atomic
// counter. The caller returns once every index finished and every worker that
// joined the loop has left it, and a new loop is published only when no worker
// is inside an old one, so a late worker can never take an index of the next
// loop with the previous loop's body.
#include "runtime/ThreadPool.h"

#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <pthread.h>
#include <sched.h>
#include <thread>
#include <vector>

namespace tsl::rt {

namespace {

/// How long a worker polls for the next loop before it sleeps.
constexpr std::chrono::microseconds kSpinTime{50};

inline void spinPause() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

/// True on pool workers and on a caller while it runs a loop: a nested
/// loop runs inline.
thread_local bool inParallelLoop = false;
thread_local int poolIndex = 0;

/// The largest TSL_NUM_THREADS taken.
constexpr long kMaxThreads = 4096;

/// Stack size of workers started from now on (0: the system's default).
std::atomic<size_t> workerStackBytes{0};

/// The CPUs in the affinity mask (else the hardware's count, else 1).
int cpuThreads() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0)
    return std::max(1, CPU_COUNT(&set));
  unsigned hw = std::thread::hardware_concurrency();
  return hw ? static_cast<int>(hw) : 1;
}

/// TSL_NUM_THREADS when it is an integer from 1 to kMaxThreads, else the
/// CPUs; a value that is set but not such an integer ("0", "-1", "abc",
/// "1e3") is named in a warning, once per process.
int defaultThreads() {
  const char *env = std::getenv("TSL_NUM_THREADS");
  if (env && *env) {
    char *end = nullptr;
    errno = 0;
    long n = std::strtol(env, &end, 10);
    if (errno == 0 && end != env && *end == '\0' && n >= 1 && n <= kMaxThreads)
      return static_cast<int>(n);
  }
  int cpus = cpuThreads();
  static std::atomic<bool> warned{false};
  if (env && *env && !warned.exchange(true))
    std::fprintf(stderr,
                 "[tsl] warning: TSL_NUM_THREADS='%s' is not an integer from "
                 "1 to %ld; using %d threads (the CPUs this process may run "
                 "on)\n",
                 env, kMaxThreads, cpus);
  return cpus;
}

/// Says once per process that the pool runs on fewer threads than asked.
void warnThreadsNotStarted(int wanted, int started, int err) {
  static std::atomic<bool> warned{false};
  if (!warned.exchange(true))
    std::fprintf(stderr,
                 "[tsl] warning: could not start thread %d of the pool's %d "
                 "(%s); running on %d thread%s\n",
                 started + 1, wanted, std::strerror(err), started,
                 started == 1 ? "" : "s");
}

} // namespace

struct ThreadPool::State {
  std::mutex mutex;
  std::condition_variable wake, finished;
  std::vector<pthread_t> workers;
  /// The pool's size; lowered (under the mutex) when a worker cannot be
  /// started. Read without the mutex by size().
  std::atomic<int> threads{1};
  bool stop = false;
  /// Written under the mutex; read without it by workers spinning for
  /// the next loop.
  std::atomic<uint64_t> generation{0};
  // The loop in progress.
  Body body = nullptr;
  void *self = nullptr;
  int64_t count = 0;
  std::atomic<int64_t> next{0}, done{0};
  int joined = 0; ///< workers inside the current loop (under mutex)
  /// Held by the caller that owns the pool for one loop.
  std::mutex owner;

  /// Takes and runs indices of the current loop until none are left.
  void work(Body b, void *s, int64_t n) {
    for (int64_t i; (i = next.fetch_add(1)) < n;) {
      b(s, i);
      done.fetch_add(1);
    }
  }

  void workerLoop(int index) {
    inParallelLoop = true;
    poolIndex = index;
    uint64_t seen = 0;
    std::unique_lock<std::mutex> lock(mutex);
    for (;;) {
      if (!stop && generation.load() == seen) {
        // An op's loops come back to back: a short spin catches the next
        // one without a futex wake-up (tens of microseconds on a busy
        // machine); after that the worker sleeps.
        lock.unlock();
        auto until = std::chrono::steady_clock::now() + kSpinTime;
        while (generation.load(std::memory_order_relaxed) == seen &&
               std::chrono::steady_clock::now() < until)
          for (int i = 0; i < 16; ++i)
            spinPause();
        lock.lock();
      }
      wake.wait(lock, [&] { return stop || generation.load() != seen; });
      if (stop)
        return;
      seen = generation;
      Body b = body;
      void *s = self;
      int64_t n = count;
      ++joined;
      lock.unlock();
      work(b, s, n);
      lock.lock();
      if (--joined == 0)
        finished.notify_all();
    }
  }

  /// What a worker thread starts with.
  struct Start {
    State *state;
    int index;
  };
  static void *workerMain(void *arg) {
    Start start = *static_cast<Start *>(arg);
    std::free(arg);
    start.state->workerLoop(start.index);
    return nullptr;
  }

  /// Starts worker \p index (pthread_create: it reports a thread that
  /// cannot be had as an error code, where std::thread throws); 0 or the
  /// error.
  int startWorker(int index) {
    // malloc, not new (std::nothrow): a program that replaces the global
    // operator new and delete (as tests that count allocations do) may
    // leave the nothrow form alone, and the pair would not match.
    auto *start = static_cast<Start *>(std::malloc(sizeof(Start)));
    if (!start)
      return ENOMEM;
    *start = Start{this, index};
    pthread_attr_t attr;
    int err = pthread_attr_init(&attr);
    if (err) {
      std::free(start);
      return err;
    }
    if (size_t bytes = workerStackBytes.load(std::memory_order_relaxed))
      err = pthread_attr_setstacksize(&attr, bytes);
    pthread_t thread;
    if (!err)
      err = pthread_create(&thread, &attr, workerMain, start);
    pthread_attr_destroy(&attr);
    if (err) {
      std::free(start);
      return err;
    }
    workers.push_back(thread);
    return 0;
  }

  /// Starts the missing workers (under the mutex). One that cannot be
  /// started (no memory for its stack, a thread limit) leaves the pool at
  /// the threads it has, with a warning.
  void startWorkers() {
    int wanted = threads.load(std::memory_order_relaxed);
    while (static_cast<int>(workers.size()) < wanted - 1) {
      int index = static_cast<int>(workers.size()) + 1;
      if (int err = startWorker(index)) {
        threads.store(index, std::memory_order_relaxed);
        warnThreadsNotStarted(wanted, index, err);
        return;
      }
    }
  }

  void stopWorkers() {
    {
      std::lock_guard<std::mutex> lock(mutex);
      stop = true;
    }
    wake.notify_all();
    for (pthread_t t : workers)
      pthread_join(t, nullptr);
    workers.clear();
    stop = false;
  }
};

ThreadPool::ThreadPool() : state_(new State) {
  state_->threads = defaultThreads();
}

ThreadPool::~ThreadPool() {
  state_->stopWorkers();
  delete state_;
}

ThreadPool &ThreadPool::instance() {
  // Never destroyed: kernels may run from other static destructors.
  static ThreadPool *pool = new ThreadPool();
  return *pool;
}

int ThreadPool::size() const {
  return state_->threads.load(std::memory_order_relaxed);
}

void ThreadPool::setWorkerStackBytes(size_t bytes) {
  workerStackBytes.store(bytes, std::memory_order_relaxed);
}

int ThreadPool::threadIndex() { return poolIndex; }

bool ThreadPool::insideLoop() { return inParallelLoop; }

void ThreadPool::resize(int threads) {
  std::lock_guard<std::mutex> owner(state_->owner);
  state_->stopWorkers();
  state_->threads = threads >= 1 ? threads : defaultThreads();
}

void ThreadPool::run(int64_t n, Body body, void *self) {
  State &s = *state_;
  std::unique_lock<std::mutex> owner(s.owner, std::defer_lock);
  if (n <= 1 || s.threads.load(std::memory_order_relaxed) <= 1 ||
      inParallelLoop || !owner.try_lock()) {
    for (int64_t i = 0; i < n; ++i)
      body(self, i);
    return;
  }
  inParallelLoop = true;
  {
    // A worker that woke too late for the previous loop may still be in
    // it (finding nothing to take): it must leave before the counters are
    // reset, or it could run an index of this loop with that loop's body.
    std::unique_lock<std::mutex> lock(s.mutex);
    s.finished.wait(lock, [&] { return s.joined == 0; });
    s.startWorkers();
    s.body = body;
    s.self = self;
    s.count = n;
    s.next.store(0);
    s.done.store(0);
    ++s.generation;
  }
  s.wake.notify_all();
  s.work(body, self, n);
  {
    std::unique_lock<std::mutex> lock(s.mutex);
    s.finished.wait(lock, [&] { return s.done.load() == n && s.joined == 0; });
  }
  inParallelLoop = false;
}

} // namespace tsl::rt
