// TEMPORARY sequential stand-in (no barriers).
#include "runtime/GpuEmulator.h"

#include <algorithm>
#include <vector>

namespace {
thread_local int32_t tid = 0, bid = 0, bdim = 1, gdim = 1;
thread_local std::vector<char> shared;
} // namespace

namespace tsl::rt {
bool emulateLaunch(EmulatedKernel kernel, void *args,
                   const EmulatedLaunch &launch, std::string &error) {
  if (launch.blocks <= 0)
    return true;
  if (launch.threadsPerBlock <= 0 || launch.threadsPerBlock > 1024 ||
      launch.threadsPerBlock % 32) {
    error = "emulator: bad block size";
    return false;
  }
  gdim = static_cast<int32_t>(std::min<int64_t>(launch.blocks, 3));
  bdim = launch.threadsPerBlock;
  shared.assign(static_cast<size_t>(launch.sharedBytes) + 16, '\xa5');
  for (bid = 0; bid < gdim; ++bid)
    for (tid = 0; tid < bdim; ++tid)
      kernel(args);
  tid = bid = 0;
  bdim = gdim = 1;
  return true;
}
const EmulatedPrimitive *emulatedPrimitives(size_t *n) {
  static const EmulatedPrimitive p[] = {
#define TSL_GPU_PRIMITIVE(Name, Ret, Params)                                   \
  {#Name, reinterpret_cast<void *>(&Name)},
#include "runtime/DevicePrimitives.def"
  };
  if (n)
    *n = sizeof p / sizeof p[0];
  return p;
}
} // namespace tsl::rt

extern "C" {
int32_t tsl_gpu_thread_idx(void) { return tid; }
int32_t tsl_gpu_block_idx(void) { return bid; }
int32_t tsl_gpu_block_dim(void) { return bdim; }
int32_t tsl_gpu_grid_dim(void) { return gdim; }
void tsl_gpu_barrier(void) {}
int32_t tsl_gpu_shfl_xor(int32_t v, int32_t) { return v; }
int32_t tsl_gpu_shfl_idx(int32_t v, int32_t) { return v; }
void *tsl_gpu_shared(void) { return shared.data(); }
}
