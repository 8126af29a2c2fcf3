#pragma once
/// \file Private to runtime/: the per-call context behind tsl_rt_context
/// (KernelAbi.h), shared by the host library (KernelLibrary.cpp) and the
/// device entry points (DeviceAbi.cpp).

#include "runtime/KernelAbi.h"

#include <string>
#include <vector>

struct tsl_rt_context {
  std::vector<void *> allocations; ///< host memory, freed at the end
  /// The rounded size of each of `allocations`, in the same order.
  std::vector<int64_t> allocationBytes;
  /// Bytes of `allocations` now, and the most there were at once since the
  /// context was made or reset (a call's peak host memory beyond its
  /// arguments: intermediates and results).
  int64_t liveBytes = 0, peakBytes = 0;
  std::string error;
  int32_t failedOp = -1;
  /// The values a failed device check stored with its message.
  int64_t deviceValues[TSL_RT_STATUS_WORDS - 1] = {};
  /// The device GPU variants launch on (null for CPU code), and the device
  /// memory this call allocated (released at the end unless taken).
  const tsl_rt_device *device = nullptr;
  std::vector<void *> deviceAllocations;
};

namespace tsl::rt {
/// Gives every device allocation of \p ctx back to its device.
void releaseDeviceAllocations(tsl_rt_context *ctx);

/// Makes \p ctx as tsl_rt_context_create makes one, for another call,
/// keeping its own storage: frees every allocation it still owns (host and
/// device, as tsl_rt_context_destroy does), forgets its error and failed op
/// and detaches it from its device.
inline void resetContext(tsl_rt_context *ctx) {
  if (!ctx->allocations.empty())
    tsl_rt_context_release(ctx, nullptr, 0);
  if (!ctx->deviceAllocations.empty())
    releaseDeviceAllocations(ctx);
  ctx->error.clear();
  ctx->failedOp = -1;
  ctx->device = nullptr;
  ctx->liveBytes = ctx->peakBytes = 0;
}
} // namespace tsl::rt
