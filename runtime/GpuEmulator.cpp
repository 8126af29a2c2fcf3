// The GPU emulator: each thread of a block is a fiber (ucontext), the host
// thread is the scheduler. A fiber runs until it waits in a primitive
// (barrier, shuffle) or its kernel returns, then switches back to the
// scheduler, which decides from the threads' states what can run next (or
// that nothing ever can: a deadlock error). Fibers are pooled per host
// thread: each loops forever running the kernel of whichever thread it is
// given, so a launch neither creates contexts nor maps stacks once the pool
// is large enough.
#include "runtime/GpuEmulator.h"

#include "runtime/GpuCounters.h"

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <limits>
#include <memory>
#include <new>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>
#include <vector>

#if defined(__SANITIZE_ADDRESS__)
#define TSL_EMU_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TSL_EMU_ASAN 1
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define TSL_EMU_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define TSL_EMU_TSAN 1
#endif
#endif

#ifdef TSL_EMU_ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif
#ifdef TSL_EMU_TSAN
#include <sanitizer/tsan_interface.h>
#endif

namespace tsl::rt {
namespace {

constexpr int32_t kWarpSize = 32;
constexpr int32_t kMaxThreads = 1024;
#if defined(TSL_EMU_ASAN) || defined(TSL_EMU_TSAN)
constexpr size_t kStackBytes = 256 * 1024; // instrumented frames are larger
#else
constexpr size_t kStackBytes = 64 * 1024;
#endif

[[noreturn]] void fiberMain();

/// One pooled fiber: its context and its stack (a guard page below).
struct Fiber {
  ucontext_t context;
  void *mapping = nullptr; ///< guard page + stack
  size_t mappingBytes = 0;
  char *stack = nullptr; ///< lowest usable address
  void *tsan = nullptr;  ///< TSan's fiber state
};

/// (Re)starts \p f at the top of fiberMain.
bool startFiber(Fiber &f) {
  if (getcontext(&f.context) != 0)
    return false;
  f.context.uc_stack.ss_sp = f.stack;
  f.context.uc_stack.ss_size = kStackBytes;
  f.context.uc_link = nullptr;
  makecontext(&f.context, fiberMain, 0);
  return true;
}

/// The fibers of one host thread, reused across its launches.
class FiberPool {
public:
  FiberPool() = default;
  FiberPool(const FiberPool &) = delete;
  FiberPool &operator=(const FiberPool &) = delete;
  ~FiberPool() {
    for (auto &f : fibers_)
      release(*f);
  }

  /// At least \p n fibers, each idle (at the top of fiberMain's loop).
  bool reserve(size_t n, std::string &error) {
    while (fibers_.size() < n) {
      auto f = std::make_unique<Fiber>();
      if (!create(*f)) {
        error = "emulator: out of memory for fiber stacks";
        return false;
      }
      fibers_.push_back(std::move(f));
    }
    return true;
  }
  Fiber &operator[](size_t i) { return *fibers_[i]; }

  /// Makes fiber \p i idle again after it was abandoned inside a kernel.
  void reset(size_t i) {
    Fiber &f = *fibers_[i];
#ifdef TSL_EMU_ASAN
    // Frames that never returned left their redzones poisoned.
    ASAN_UNPOISON_MEMORY_REGION(f.stack, kStackBytes);
#endif
#ifdef TSL_EMU_TSAN
    // Its shadow call stack still holds the abandoned frames.
    __tsan_destroy_fiber(f.tsan);
    f.tsan = __tsan_create_fiber(0);
#endif
    startFiber(f); // cannot fail: getcontext failed before, not now
  }

private:
  static bool create(Fiber &f) {
    size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    f.mappingBytes = kStackBytes + page;
    void *p =
        mmap(nullptr, f.mappingBytes, PROT_READ | PROT_WRITE,
             MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
    if (p == MAP_FAILED)
      return false;
    f.mapping = p;
    f.stack = static_cast<char *>(p) + page;
    if (mprotect(p, page, PROT_NONE) != 0 || !startFiber(f)) {
      munmap(p, f.mappingBytes);
      f.mapping = nullptr;
      return false;
    }
#ifdef TSL_EMU_TSAN
    f.tsan = __tsan_create_fiber(0);
#endif
    return true;
  }
  static void release(Fiber &f) {
#ifdef TSL_EMU_TSAN
    if (f.tsan)
      __tsan_destroy_fiber(f.tsan);
#endif
    if (f.mapping)
      munmap(f.mapping, f.mappingBytes);
  }

  std::vector<std::unique_ptr<Fiber>> fibers_;
};

thread_local FiberPool pool;

enum class Wait : uint8_t { Ready, Barrier, Shuffle, Done };
/// The warp-collective primitive a lane waits in (Wait::Shuffle).
enum class ShuffleKind : uint8_t { Xor, Idx, Mma };

/// One emulated thread of the running block.
struct Thread {
  Wait wait = Wait::Ready;
  bool inKernel = false; ///< started and not returned: its fiber is busy
  ShuffleKind kind = ShuffleKind::Xor;
  int32_t value = 0, operand = 0, result = 0; ///< shuffle in, out
  /// tsl_gpu_mma_16816: the lane's A (4 words) and B (2 words) fragments
  /// and its accumulators (in, then out); `operand` holds the kind.
  uint32_t frag[6] = {};
  float acc[4] = {};
};

const char *collectiveName(ShuffleKind k) {
  switch (k) {
  case ShuffleKind::Xor:
    return "tsl_gpu_shfl_xor";
  case ShuffleKind::Idx:
    return "tsl_gpu_shfl_idx";
  case ShuffleKind::Mma:
    return "tsl_gpu_mma_16816";
  }
  return "?";
}

/// The f32 value of f16 bits \p h (exact).
float halfToFloat(uint32_t h) {
  uint32_t sign = (h >> 15) & 1, exp = (h >> 10) & 31, man = h & 1023;
  float v;
  if (exp == 0) // zero or subnormal: man * 2^-24
    v = std::ldexp(static_cast<float>(man), -24);
  else if (exp == 31)
    v = man ? std::numeric_limits<float>::quiet_NaN()
            : std::numeric_limits<float>::infinity();
  else
    v = std::ldexp(static_cast<float>(man | 1024), static_cast<int>(exp) - 25);
  return sign ? -v : v;
}

/// Element \p half (0: the low 16 bits) of fragment word \p w as f32, for
/// f16 (kind 0) or bf16 (kind 1) elements.
float fragmentElement(uint32_t w, int half, int32_t kind) {
  uint32_t bits = (w >> (16 * half)) & 0xffff;
  if (kind == 0)
    return halfToFloat(bits);
  uint32_t f = bits << 16;
  float v;
  std::memcpy(&v, &f, sizeof v);
  return v;
}

/// D = A B + C of mma.sync.aligned.m16n8k16.row.col.f32.{f16,bf16} from
/// the 32 lanes' fragments, in the PTX ISA's layout (lane l: group
/// g = l / 4, t = l % 4): A word r holds row g + 8 (r & 1), columns
/// 2t + 8 (r / 2) and the next; B word r holds rows 2t + 8r and the next
/// of column g; accumulator i is row g + 8 (i / 2), column 2t + (i & 1).
/// Each result sums its 16 products in k order onto C in f32.
void multiplyFragments(Thread *lanes, int32_t kind) {
  float a[16][16], b[16][8], c[16][8];
  for (int l = 0; l < kWarpSize; ++l) {
    int g = l / 4, t = l % 4;
    const Thread &x = lanes[l];
    for (int r = 0; r < 4; ++r)
      for (int h = 0; h < 2; ++h)
        a[g + 8 * (r & 1)][2 * t + 8 * (r / 2) + h] =
            fragmentElement(x.frag[r], h, kind);
    for (int r = 0; r < 2; ++r)
      for (int h = 0; h < 2; ++h)
        b[2 * t + 8 * r + h][g] = fragmentElement(x.frag[4 + r], h, kind);
    for (int i = 0; i < 4; ++i)
      c[g + 8 * (i / 2)][2 * t + (i & 1)] = x.acc[i];
  }
  for (int l = 0; l < kWarpSize; ++l) {
    int g = l / 4, t = l % 4;
    for (int i = 0; i < 4; ++i) {
      int row = g + 8 * (i / 2), col = 2 * t + (i & 1);
      float sum = c[row][col];
      for (int k = 0; k < 16; ++k)
        sum += a[row][k] * b[k][col];
      lanes[l].acc[i] = sum;
    }
  }
}

struct AlignedFree {
  void operator()(std::byte *p) const {
    ::operator delete(p, std::align_val_t(16));
  }
};

/// The state of one launch on one host thread (`active` while it runs).
struct Scheduler {
  EmulatedKernel kernel = nullptr;
  void *args = nullptr;
  int32_t threads = 0, blocks = 0, block = 0, sharedBytes = 0;
  std::unique_ptr<std::byte, AlignedFree> shared;
  std::vector<Thread> state;
  std::vector<int32_t> ring; ///< runnable threads, FIFO
  size_t head = 0, queued = 0;
  std::vector<int32_t> shuffling; ///< per warp: lanes waiting at a shuffle
  int32_t atBarrier = 0, done = 0, firstDone = -1;
  int32_t current = -1; ///< the thread whose fiber runs, else -1
  ucontext_t host;
  void *hostTsan = nullptr;
  const void *hostStack = nullptr; ///< for ASan
  size_t hostStackBytes = 0;
  std::string error;
  /// Memory counters (gpuCountersEnabled() at the launch), else null.
  std::unique_ptr<LaunchCounters> counters;

  void push(int32_t t) { ring[(head + queued++) % ring.size()] = t; }
  int32_t pop() {
    int32_t t = ring[head];
    head = (head + 1) % ring.size();
    --queued;
    return t;
  }
};

thread_local Scheduler *active = nullptr;

/// Switches from the running fiber back to the scheduler; returns when the
/// scheduler resumes this fiber (possibly in a later launch).
void yieldToHost(Scheduler &s, Fiber &f) {
#ifdef TSL_EMU_ASAN
  void *fake = nullptr;
  __sanitizer_start_switch_fiber(&fake, s.hostStack, s.hostStackBytes);
#endif
#ifdef TSL_EMU_TSAN
  __tsan_switch_to_fiber(s.hostTsan, 0);
#endif
  swapcontext(&f.context, &s.host);
#ifdef TSL_EMU_ASAN
  Scheduler &now = *active;
  __sanitizer_finish_switch_fiber(fake, &now.hostStack, &now.hostStackBytes);
#endif
}

/// Runs thread \p t's fiber until it waits or returns.
void resume(Scheduler &s, int32_t t) {
  Fiber &f = pool[static_cast<size_t>(t)];
  s.current = t;
#ifdef TSL_EMU_ASAN
  void *fake = nullptr;
  __sanitizer_start_switch_fiber(&fake, f.stack, kStackBytes);
#endif
#ifdef TSL_EMU_TSAN
  __tsan_switch_to_fiber(f.tsan, 0);
#endif
  swapcontext(&s.host, &f.context);
#ifdef TSL_EMU_ASAN
  __sanitizer_finish_switch_fiber(fake, nullptr, nullptr);
#endif
  s.current = -1;
}

/// The body of every fiber: runs the kernel for the thread it is resumed
/// as, reports the return, and waits to be given the next thread.
[[noreturn]] void fiberMain() {
#ifdef TSL_EMU_ASAN
  __sanitizer_finish_switch_fiber(nullptr, &active->hostStack,
                                  &active->hostStackBytes);
#endif
  for (;;) {
    Scheduler &s = *active;
    s.kernel(s.args);
    int32_t t = s.current;
    s.state[static_cast<size_t>(t)].wait = Wait::Done;
    yieldToHost(s, pool[static_cast<size_t>(t)]);
  }
}

__attribute__((format(printf, 2, 3))) bool fail(Scheduler &s, const char *fmt,
                                                ...) {
  char buffer[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buffer, sizeof buffer, fmt, ap);
  va_end(ap);
  s.error = buffer;
  return false;
}

/// All 32 lanes of \p warp wait at a shuffle: each gets its source lane's
/// value and becomes runnable (in lane order).
bool exchange(Scheduler &s, int32_t warp) {
  Thread *lanes = &s.state[static_cast<size_t>(warp * kWarpSize)];
  for (int32_t l = 1; l < kWarpSize; ++l)
    if (lanes[l].kind != lanes[0].kind)
      return fail(s,
                  "emulator: divergent shuffle: in warp %d of block %d, "
                  "lane 0 calls %s and lane %d %s",
                  warp, s.block, collectiveName(lanes[0].kind), l,
                  collectiveName(lanes[l].kind));
  if (lanes[0].kind == ShuffleKind::Mma) {
    for (int32_t l = 1; l < kWarpSize; ++l)
      if (lanes[l].operand != lanes[0].operand)
        return fail(s,
                    "emulator: divergent shuffle: in warp %d of block %d, "
                    "lane 0 calls tsl_gpu_mma_16816 of kind %d and lane %d "
                    "of kind %d",
                    warp, s.block, lanes[0].operand, l, lanes[l].operand);
    if (lanes[0].operand != 0 && lanes[0].operand != 1)
      return fail(s, "emulator: tsl_gpu_mma_16816 of unknown kind %d",
                  lanes[0].operand);
    multiplyFragments(lanes, lanes[0].operand);
  }
  for (int32_t l = 0; l < kWarpSize; ++l) {
    // Unsigned: a mask or source outside 0..31 falls outside the warp.
    uint32_t src = lanes[l].kind == ShuffleKind::Xor
                       ? static_cast<uint32_t>(l ^ lanes[l].operand)
                       : static_cast<uint32_t>(lanes[l].operand & 31);
    lanes[l].result = src < kWarpSize ? lanes[src].value : lanes[l].value;
  }
  for (int32_t l = 0; l < kWarpSize; ++l) {
    lanes[l].wait = Wait::Ready;
    s.push(warp * kWarpSize + l);
  }
  s.shuffling[static_cast<size_t>(warp)] = 0;
  return true;
}

/// Thread \p t's fiber switched back: records why and wakes whom that
/// releases. False with s.error on a deadlock.
bool arrive(Scheduler &s, int32_t t) {
  Thread &me = s.state[static_cast<size_t>(t)];
  int32_t warp = t / kWarpSize;
  int32_t shuffling = s.shuffling[static_cast<size_t>(warp)];
  switch (me.wait) {
  case Wait::Done:
    me.inKernel = false;
    ++s.done;
    if (s.firstDone < 0)
      s.firstDone = t;
    if (s.atBarrier > 0)
      return fail(s,
                  "emulator: deadlock: thread %d of block %d returned while "
                  "%d threads wait at a barrier",
                  t, s.block, s.atBarrier);
    if (shuffling > 0)
      return fail(s,
                  "emulator: deadlock: thread %d of block %d returned while "
                  "%d lanes of its warp wait at a shuffle",
                  t, s.block, shuffling);
    return true;
  case Wait::Barrier:
    if (shuffling > 0)
      return fail(s,
                  "emulator: deadlock: thread %d of block %d waits at a "
                  "barrier while %d lanes of its warp wait at a shuffle",
                  t, s.block, shuffling);
    if (s.firstDone >= 0)
      return fail(s,
                  "emulator: deadlock: thread %d of block %d waits at a "
                  "barrier that thread %d never reaches (it returned)",
                  t, s.block, s.firstDone);
    if (++s.atBarrier == s.threads) {
      s.atBarrier = 0;
      if (s.counters)
        s.counters->barrier();
      for (int32_t i = 0; i < s.threads; ++i) {
        s.state[static_cast<size_t>(i)].wait = Wait::Ready;
        s.push(i);
      }
    }
    return true;
  case Wait::Shuffle:
    for (int32_t l = warp * kWarpSize; l < (warp + 1) * kWarpSize; ++l) {
      Wait other = s.state[static_cast<size_t>(l)].wait;
      if (other == Wait::Barrier || other == Wait::Done)
        return fail(s,
                    "emulator: deadlock: thread %d of block %d waits at a "
                    "shuffle while thread %d of its warp %s",
                    t, s.block, l,
                    other == Wait::Done ? "has returned"
                                        : "waits at a barrier");
    }
    if (++s.shuffling[static_cast<size_t>(warp)] == kWarpSize)
      return exchange(s, warp);
    return true;
  case Wait::Ready:
    break;
  }
  return fail(s, "emulator: internal error: thread %d switched back ready", t);
}

/// Runs block \p block to completion; false with s.error.
bool runBlock(Scheduler &s, int32_t block) {
  s.block = block;
  if (s.counters)
    s.counters->beginBlock();
  std::memset(s.shared.get(), kSharedGarbage,
              static_cast<size_t>(s.sharedBytes));
  s.head = s.queued = 0;
  for (int32_t t = 0; t < s.threads; ++t) {
    s.state[static_cast<size_t>(t)] = Thread();
    s.push(t);
  }
  std::fill(s.shuffling.begin(), s.shuffling.end(), 0);
  s.atBarrier = s.done = 0;
  s.firstDone = -1;
  while (s.queued > 0) {
    int32_t t = s.pop();
    s.state[static_cast<size_t>(t)].inKernel = true;
    resume(s, t);
    if (!arrive(s, t))
      return false;
  }
  if (s.done != s.threads) // unreachable: arrive() reports every deadlock
    return fail(s,
                "emulator: deadlock: in block %d no thread can proceed (%d "
                "of %d returned)",
                block, s.done, s.threads);
  return true;
}

bool check(const EmulatedLaunch &launch, EmulatedKernel kernel,
           std::string &error) {
  int32_t n = launch.threadsPerBlock;
  if (n < kWarpSize || n > kMaxThreads || n % kWarpSize != 0) {
    error = "emulator: " + std::to_string(n) +
            " threads per block: must be a multiple of 32 in 32..1024";
    return false;
  }
  if (launch.sharedBytes < 0 || launch.sharedBytes > kMaxSharedBytes) {
    error = "emulator: " + std::to_string(launch.sharedBytes) +
            " bytes of shared memory: must be in 0.." +
            std::to_string(kMaxSharedBytes);
    return false;
  }
  if (!kernel) {
    error = "emulator: no kernel";
    return false;
  }
  if (active) {
    error = "emulator: a launch from inside an emulated kernel";
    return false;
  }
  return true;
}

} // namespace

bool emulateLaunch(EmulatedKernel kernel, void *args,
                   const EmulatedLaunch &launch, std::string &error) {
  if (!check(launch, kernel, error))
    return false;
  if (launch.blocks <= 0)
    return true;
  auto threads = static_cast<size_t>(launch.threadsPerBlock);
  if (!pool.reserve(threads, error))
    return false;
  Scheduler s;
  s.kernel = kernel;
  s.args = args;
  s.threads = launch.threadsPerBlock;
  s.blocks =
      static_cast<int32_t>(std::min<int64_t>(launch.blocks, kEmulatedBlocks));
  s.sharedBytes = launch.sharedBytes;
  s.shared.reset(static_cast<std::byte *>(
      ::operator new(static_cast<size_t>(launch.sharedBytes),
                     std::align_val_t(16), std::nothrow)));
  if (!s.shared) {
    error = "emulator: out of memory for shared memory";
    return false;
  }
  s.state.resize(threads);
  s.ring.resize(threads);
  s.shuffling.resize(threads / kWarpSize);
  std::memset(&s.host, 0, sizeof s.host); // no uc_stack: ASan reads it
#ifdef TSL_EMU_TSAN
  s.hostTsan = __tsan_get_current_fiber();
#endif
  if (gpuCountersEnabled())
    s.counters = std::make_unique<LaunchCounters>(s.threads, s.shared.get(),
                                                  s.sharedBytes);
  active = &s;
  bool ok = true;
  for (int32_t b = 0; ok && b < s.blocks; ++b)
    ok = runBlock(s, b);
  active = nullptr;
  if (ok && s.counters)
    s.counters->finish();
  if (ok)
    return true;
  // Abandon the threads stopped inside the kernel: their fibers restart.
  for (size_t t = 0; t < threads; ++t)
    if (s.state[t].inKernel)
      pool.reset(t);
  error = s.error;
  return false;
}

const EmulatedPrimitive *emulatedPrimitives(size_t *n) {
  static const EmulatedPrimitive table[] = {
#define TSL_GPU_PRIMITIVE(Name, Ret, Params)                                   \
  {#Name, reinterpret_cast<void *>(&Name)},
#include "runtime/DevicePrimitives.def"
      {"tsl_gpu_count_access", reinterpret_cast<void *>(&tsl_gpu_count_access)},
      {"tsl_gpu_count_kernel", reinterpret_cast<void *>(&tsl_gpu_count_kernel)},
  };
  if (n)
    *n = std::size(table);
  return table;
}

namespace {

/// The running launch when called from one of its fibers, else null.
Scheduler *inFiber() {
  Scheduler *s = active;
  return s && s->current >= 0 ? s : nullptr;
}

int32_t shuffle(ShuffleKind kind, int32_t value, int32_t operand) {
  Scheduler *s = inFiber();
  if (!s)
    return value; // a warp of one lane
  auto t = static_cast<size_t>(s->current);
  Thread &me = s->state[t];
  me.wait = Wait::Shuffle;
  me.kind = kind;
  me.value = value;
  me.operand = operand;
  yieldToHost(*s, pool[t]);
  return s->state[t].result;
}

} // namespace
} // namespace tsl::rt

using namespace tsl::rt;

extern "C" int32_t tsl_gpu_thread_idx(void) {
  Scheduler *s = inFiber();
  return s ? s->current : 0;
}

extern "C" int32_t tsl_gpu_block_idx(void) {
  Scheduler *s = inFiber();
  return s ? s->block : 0;
}

extern "C" int32_t tsl_gpu_block_dim(void) {
  Scheduler *s = inFiber();
  return s ? s->threads : 1;
}

extern "C" int32_t tsl_gpu_grid_dim(void) {
  Scheduler *s = inFiber();
  return s ? s->blocks : 1;
}

extern "C" void tsl_gpu_barrier(void) {
  Scheduler *s = inFiber();
  if (!s)
    return; // a block of one thread
  auto t = static_cast<size_t>(s->current);
  s->state[t].wait = Wait::Barrier;
  yieldToHost(*s, pool[t]);
}

extern "C" int32_t tsl_gpu_shfl_xor(int32_t value, int32_t lane_mask) {
  return shuffle(ShuffleKind::Xor, value, lane_mask);
}

extern "C" int32_t tsl_gpu_shfl_idx(int32_t value, int32_t src_lane) {
  return shuffle(ShuffleKind::Idx, value, src_lane);
}

extern "C" void tsl_gpu_mma_16816(int32_t kind, const uint32_t *a,
                                  const uint32_t *b, float *acc) {
  Scheduler *s = inFiber();
  if (!s)
    return; // no warp to multiply with: acc stays as it is
  auto t = static_cast<size_t>(s->current);
  Thread &me = s->state[t];
  me.wait = Wait::Shuffle;
  me.kind = ShuffleKind::Mma;
  me.operand = kind;
  std::memcpy(me.frag, a, 4 * sizeof(uint32_t));
  std::memcpy(me.frag + 4, b, 2 * sizeof(uint32_t));
  std::memcpy(me.acc, acc, sizeof me.acc);
  yieldToHost(*s, pool[t]);
  std::memcpy(acc, s->state[t].acc, sizeof me.acc);
}

extern "C" void *tsl_gpu_shared(void) {
  Scheduler *s = inFiber();
  return s ? s->shared.get() : nullptr;
}

extern "C" void tsl_gpu_count_access(const void *address, int32_t access,
                                     int32_t site) {
  Scheduler *s = inFiber();
  if (!s || !s->counters)
    return;
  // The thread's own stack (what the instrumentation could not tell from
  // an alloca): registers and local memory on a GPU.
  const char *stack = pool[static_cast<size_t>(s->current)].stack;
  auto *at = static_cast<const char *>(address);
  if (at >= stack && at < stack + kStackBytes)
    return;
  s->counters->access(s->current, site, address,
                      static_cast<uint32_t>(access & 0xffff),
                      (access & kCountStore) != 0);
}

extern "C" void tsl_gpu_count_kernel(int32_t kernel) {
  Scheduler *s = inFiber();
  if (s && s->counters)
    s->counters->setKernel(kernel);
}
