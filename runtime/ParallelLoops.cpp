// The parallel loops of generated code (tsl_rt_parallel_chunks,
// tsl_rt_parallel_for): chunks of an op's outer loop on the runtime's pool.
#include "runtime/KernelAbi.h"
#include "runtime/ThreadPool.h"

#include <algorithm>

extern "C" int64_t tsl_rt_parallel_chunks(tsl_rt_context *, int64_t iterations,
                                          int64_t grain) {
  int threads = tsl::rt::ThreadPool::instance().size();
  if (threads <= 1 || iterations <= 1)
    return 1;
  grain = std::max<int64_t>(grain, 1);
  // Rounded up without overflow: iterations / grain, plus one for a rest.
  int64_t wanted = iterations / grain + (iterations % grain != 0);
  return std::clamp<int64_t>(wanted, 1, 4 * static_cast<int64_t>(threads));
}

extern "C" void tsl_rt_parallel_for(tsl_rt_context *, int64_t chunks,
                                    void (*body)(void *closure, int64_t chunk),
                                    void *closure) {
  tsl::rt::ThreadPool::instance().run(chunks, body, closure);
}
