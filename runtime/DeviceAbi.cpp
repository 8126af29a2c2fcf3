// The device entry points GPU variants' host code calls: memory, launches
// and reads through the tsl_rt_device the runtime put on the context.
#include "runtime/Context.h"
#include "support/SizeLimits.h"

#include <algorithm>
#include <string>

namespace tsl::rt {

void releaseDeviceAllocations(tsl_rt_context *ctx) {
  if (ctx->device)
    for (void *p : ctx->deviceAllocations)
      ctx->device->release(ctx->device->self, p);
  ctx->deviceAllocations.clear();
}

} // namespace tsl::rt

namespace {

int32_t deviceError(tsl_rt_context *ctx, const std::string &message) {
  if (ctx->error.empty())
    ctx->error = message;
  return 1;
}

} // namespace

extern "C" {

void tsl_rt_context_set_device(tsl_rt_context *ctx,
                               const tsl_rt_device *device) {
  ctx->device = device;
}

void *tsl_rt_dev_alloc(tsl_rt_context *ctx, int64_t bytes) {
  if (!ctx->device) {
    deviceError(ctx, "GPU code called without a device");
    return nullptr;
  }
  if (bytes < 0) { // generated code passes -1 for a size that left int64
    deviceError(ctx, "the size of the allocation does not fit in 64 bits");
    return nullptr;
  }
  if (bytes > tsl::maxTensorBytes()) {
    deviceError(ctx, tsl::tensorTooLargeMessage(bytes).c_str());
    return nullptr;
  }
  const char *error = nullptr;
  void *p = ctx->device->alloc(ctx->device->self, bytes, &error);
  if (!p) {
    deviceError(ctx, error ? error : "out of device memory");
    return nullptr;
  }
  ctx->deviceAllocations.push_back(p);
  return p;
}

void tsl_rt_dev_free(tsl_rt_context *ctx, void *p) {
  auto it = std::find(ctx->deviceAllocations.begin(),
                      ctx->deviceAllocations.end(), p);
  if (it == ctx->deviceAllocations.end())
    return;
  ctx->deviceAllocations.erase(it);
  ctx->device->release(ctx->device->self, p);
}

int32_t tsl_rt_context_take_device(tsl_rt_context *ctx, void *p) {
  auto it = std::find(ctx->deviceAllocations.begin(),
                      ctx->deviceAllocations.end(), p);
  if (it == ctx->deviceAllocations.end())
    return 0;
  ctx->deviceAllocations.erase(it);
  return 1;
}

int32_t tsl_rt_dev_launch(tsl_rt_context *ctx, int32_t kernel, int64_t blocks,
                          int32_t threads, int32_t shared, int64_t *args,
                          int64_t nargs) {
  if (!ctx->device)
    return deviceError(ctx, "GPU code called without a device");
  if (blocks <= 0)
    return 0; // nothing to compute
  tsl_rt_grid grid{blocks, threads, shared};
  if (const char *error =
          ctx->device->launch(ctx->device->self, kernel, &grid, args, nargs))
    return deviceError(ctx, error);
  return 0;
}

int32_t tsl_rt_dev_check(tsl_rt_context *ctx) {
  if (!ctx->device)
    return deviceError(ctx, "GPU code called without a device");
  int64_t block[TSL_RT_STATUS_WORDS] = {};
  if (const char *error = ctx->device->status(ctx->device->self, block))
    return deviceError(ctx, error);
  int64_t status = block[0];
  if (status == 0)
    return 0;
  std::copy(block + 1, block + TSL_RT_STATUS_WORDS, ctx->deviceValues);
  ctx->failedOp = static_cast<int32_t>((status & 0xffffffff) - 1);
  return 1 + static_cast<int32_t>(status >> 32);
}

void tsl_rt_dev_error(tsl_rt_context *ctx, const char *message) {
  std::string text;
  for (const char *p = message; *p; ++p) {
    if (p[0] == '{' && (p[1] == '0' || p[1] == '1') && p[2] == '}') {
      text += std::to_string(ctx->deviceValues[p[1] - '0']);
      p += 2;
    } else {
      text += *p;
    }
  }
  tsl_rt_error(ctx, text.c_str());
}

int32_t tsl_rt_dev_read(tsl_rt_context *ctx, void *dst, const void *src,
                        int64_t bytes) {
  if (!ctx->device)
    return deviceError(ctx, "GPU code called without a device");
  if (const char *error = ctx->device->read(ctx->device->self, dst, src, bytes))
    return deviceError(ctx, error);
  return 0;
}

int32_t tsl_rt_dev_gemm(tsl_rt_context *ctx, const tsl_rt_gemm *gemm) {
  if (!ctx->device)
    return deviceError(ctx, "GPU code called without a device");
  const char *error = nullptr;
  int32_t r = ctx->device->gemm(ctx->device->self, gemm, &error);
  if (r == 1)
    deviceError(ctx, error ? error : "the GEMM failed");
  return r;
}

} // extern "C"
