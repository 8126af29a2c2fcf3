#include "runtime/CudaDriver.h"

#include <dlfcn.h>

namespace tsl::rt {

namespace {

constexpr int kRequestedVersion = 12000; // the ABI we call (CUDA 12.0)
constexpr int kAttrComputeMajor = 75;    // CU_DEVICE_ATTRIBUTE_*
constexpr int kAttrComputeMinor = 76;
constexpr int kJitErrorLogBuffer = 5; // CU_JIT_ERROR_LOG_BUFFER
constexpr int kJitErrorLogBufferSize = 6;
constexpr int kFuncMaxThreadsPerBlock = 0; // CU_FUNC_ATTRIBUTE_*
constexpr int kFuncNumRegs = 4;
constexpr unsigned kEventDisableTiming = 2; // CU_EVENT_DISABLE_TIMING
/// The oldest GPUs TSL's PTX runs on (sm_80: Ampere).
constexpr int kMinCapability = 80;

using GetProcV2 = CUresult (*)(const char *, void **, int, unsigned long long,
                               int *);
using GetProcV1 = CUresult (*)(const char *, void **, int, unsigned long long);

/// Blocks are cached by size class: multiples of 512 bytes below 1 MiB,
/// of 2 MiB above (a freed block serves any request of its class).
size_t sizeClass(size_t bytes) {
  if (bytes == 0)
    bytes = 1;
  size_t step = bytes < (1u << 20) ? 512 : (2u << 20);
  return (bytes + step - 1) / step * step;
}

} // namespace

const CudaDriver *CudaDriver::get(std::string &error) {
  static std::once_flag once;
  static std::unique_ptr<CudaDriver> driver;
  static std::string loadError;
  std::call_once(once, [] {
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      const char *why = dlerror();
      loadError = std::string("no CUDA driver: libcuda.so.1 cannot be loaded") +
                  (why ? std::string(" (") + why + ")" : "");
      return;
    }
    auto v2 = reinterpret_cast<GetProcV2>(dlsym(lib, "cuGetProcAddress_v2"));
    auto v1 = reinterpret_cast<GetProcV1>(dlsym(lib, "cuGetProcAddress"));
    if (!v2 && !v1) {
      loadError = "no CUDA driver: libcuda.so.1 has no cuGetProcAddress (a "
                  "driver older than CUDA 11.3)";
      return;
    }
    auto d = std::make_unique<CudaDriver>();
    std::string missing;
    auto resolve = [&](const char *name, auto &fn) {
      void *p = nullptr;
      int status = 0;
      CUresult r = v2 ? v2(name, &p, kRequestedVersion, 0, &status)
                      : v1(name, &p, kRequestedVersion, 0);
      if (r != 0 || !p)
        missing += (missing.empty() ? "" : ", ") + std::string(name);
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(p);
    };
    CudaApi &a = d->api_;
    resolve("cuInit", a.cuInit);
    resolve("cuDeviceGetCount", a.cuDeviceGetCount);
    resolve("cuDeviceGet", a.cuDeviceGet);
    resolve("cuDeviceGetAttribute", a.cuDeviceGetAttribute);
    resolve("cuDeviceGetName", a.cuDeviceGetName);
    resolve("cuDevicePrimaryCtxRetain", a.cuDevicePrimaryCtxRetain);
    resolve("cuDevicePrimaryCtxRelease", a.cuDevicePrimaryCtxRelease);
    resolve("cuCtxSetCurrent", a.cuCtxSetCurrent);
    resolve("cuCtxSynchronize", a.cuCtxSynchronize);
    resolve("cuModuleLoadDataEx", a.cuModuleLoadDataEx);
    resolve("cuModuleUnload", a.cuModuleUnload);
    resolve("cuModuleGetFunction", a.cuModuleGetFunction);
    resolve("cuFuncGetAttribute", a.cuFuncGetAttribute);
    resolve("cuLaunchKernel", a.cuLaunchKernel);
    resolve("cuMemAlloc", a.cuMemAlloc);
    resolve("cuMemFree", a.cuMemFree);
    resolve("cuMemcpyHtoDAsync", a.cuMemcpyHtoDAsync);
    resolve("cuMemcpyDtoHAsync", a.cuMemcpyDtoHAsync);
    resolve("cuMemcpyDtoDAsync", a.cuMemcpyDtoDAsync);
    resolve("cuMemsetD32Async", a.cuMemsetD32Async);
    resolve("cuStreamCreate", a.cuStreamCreate);
    resolve("cuStreamDestroy", a.cuStreamDestroy);
    resolve("cuStreamSynchronize", a.cuStreamSynchronize);
    resolve("cuStreamWaitEvent", a.cuStreamWaitEvent);
    resolve("cuEventCreate", a.cuEventCreate);
    resolve("cuEventRecord", a.cuEventRecord);
    resolve("cuEventDestroy", a.cuEventDestroy);
    resolve("cuGetErrorString", a.cuGetErrorString);
    if (!missing.empty()) {
      loadError = "no usable CUDA driver: libcuda.so.1 lacks " + missing;
      return;
    }
    if (CUresult r = a.cuInit(0); r != 0) {
      loadError = "no usable CUDA driver: " + d->describe("cuInit", r);
      return;
    }
    driver = std::move(d);
  });
  if (!driver)
    error = loadError;
  return driver.get();
}

std::unique_ptr<CudaDriver> CudaDriver::fromApi(const CudaApi &api) {
  auto d = std::make_unique<CudaDriver>();
  d->api_ = api;
  return d;
}

std::string CudaDriver::describe(const char *what, CUresult code) const {
  const char *text = nullptr;
  if (api_.cuGetErrorString)
    api_.cuGetErrorString(code, &text);
  return std::string(what) + " failed: " + (text ? text : "unknown error") +
         " (" + std::to_string(code) + ")";
}

std::shared_ptr<CudaDevice> CudaDevice::open(int ordinal, std::string &error) {
  const CudaDriver *driver = CudaDriver::get(error);
  if (!driver)
    return nullptr;
  return open(*driver, ordinal, error);
}

std::shared_ptr<CudaDevice> CudaDevice::open(const CudaDriver &driverRef,
                                             int ordinal, std::string &error) {
  const CudaDriver *driver = &driverRef;
  const CudaApi &a = driver->api();
  int count = 0;
  if (CUresult r = a.cuDeviceGetCount(&count); r != 0) {
    error = driver->describe("cuDeviceGetCount", r);
    return nullptr;
  }
  if (ordinal < 0 || ordinal >= count) {
    error = "no CUDA device " + std::to_string(ordinal) + " (the driver sees " +
            std::to_string(count) + ")";
    return nullptr;
  }
  std::shared_ptr<CudaDevice> dev(new CudaDevice());
  dev->driver_ = driver;
  dev->ordinal_ = ordinal;
  CUresult r = a.cuDeviceGet(&dev->device_, ordinal);
  if (r == 0)
    r = a.cuDeviceGetAttribute(&dev->major_, kAttrComputeMajor, dev->device_);
  if (r == 0)
    r = a.cuDeviceGetAttribute(&dev->minor_, kAttrComputeMinor, dev->device_);
  char name[256] = {};
  if (r == 0)
    r = a.cuDeviceGetName(name, sizeof name - 1, dev->device_);
  dev->name_ = name;
  if (r == 0)
    r = a.cuDevicePrimaryCtxRetain(&dev->context_, dev->device_);
  if (r != 0) {
    error = driver->describe("opening the CUDA device", r);
    return nullptr;
  }
  if (!dev->makeCurrent(error))
    return nullptr;
  if (r = a.cuStreamCreate(&dev->stream_, 0); r != 0) {
    error = driver->describe("cuStreamCreate", r);
    return nullptr;
  }
  return dev;
}

CudaDevice::~CudaDevice() {
  if (!driver_)
    return;
  const CudaApi &a = driver_->api();
  if (context_)
    a.cuCtxSetCurrent(context_);
  if (stream_) {
    a.cuStreamSynchronize(stream_);
    a.cuStreamDestroy(stream_);
  }
  for (auto &[size, blocks] : freeBlocks_)
    for (CUdeviceptr p : blocks)
      a.cuMemFree(p);
  for (auto &[p, size] : sizeOf_)
    a.cuMemFree(p);
  for (CUmodule m : modules_)
    a.cuModuleUnload(m);
  if (context_)
    a.cuDevicePrimaryCtxRelease(device_);
}

std::string CudaDevice::architecture() const {
  return "sm_" + std::to_string(major_) + std::to_string(minor_);
}

bool CudaDevice::makeCurrent(std::string &error) const {
  if (CUresult r = driver_->api().cuCtxSetCurrent(context_); r != 0) {
    error = driver_->describe("cuCtxSetCurrent", r);
    return false;
  }
  return true;
}

CUdeviceptr CudaDevice::allocate(size_t bytes, std::string &error,
                                 CUstream stream) {
  size_t cls = sizeClass(bytes);
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = freeBlocks_.find({stream ? stream : stream_, cls});
  if (it != freeBlocks_.end() && !it->second.empty()) {
    CUdeviceptr p = it->second.back();
    it->second.pop_back();
    sizeOf_[p] = cls;
    return p;
  }
  CUdeviceptr p = 0;
  CUresult r = driver_->api().cuMemAlloc(&p, cls);
  if (r != 0) {
    // Out of memory with blocks cached: give them back and try once more
    // (after the queued work of every stream that may still read them).
    driver_->api().cuCtxSynchronize();
    for (auto &[size, blocks] : freeBlocks_)
      for (CUdeviceptr q : blocks)
        driver_->api().cuMemFree(q);
    freeBlocks_.clear();
    r = driver_->api().cuMemAlloc(&p, cls);
  }
  if (r != 0) {
    error = driver_->describe(
        ("cuMemAlloc of " + std::to_string(cls) + " bytes").c_str(), r);
    return 0;
  }
  sizeOf_[p] = cls;
  return p;
}

void CudaDevice::release(CUdeviceptr p, CUstream stream) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = sizeOf_.find(p);
  if (it == sizeOf_.end())
    return; // not ours (or already released)
  freeBlocks_[{stream ? stream : stream_, it->second}].push_back(p);
  sizeOf_.erase(it);
}

bool CudaDevice::loadModule(const std::string &ptx, CUmodule &out,
                            std::string &error) {
  if (capability() < kMinCapability) {
    error = "CUDA device " + std::to_string(ordinal_) + " (" + name_ +
            ", compute capability " + std::to_string(major_) + "." +
            std::to_string(minor_) +
            ") cannot run TSL's GPU code: it needs compute capability 8.0 or "
            "newer";
    return false;
  }
  std::vector<char> log(8192, '\0');
  int options[] = {kJitErrorLogBuffer, kJitErrorLogBufferSize};
  void *values[] = {log.data(), reinterpret_cast<void *>(log.size())};
  // The JIT runs unlocked: calls on other threads allocate meanwhile.
  CUresult r =
      driver_->api().cuModuleLoadDataEx(&out, ptx.c_str(), 2, options, values);
  if (r != 0) {
    error = driver_->describe("loading the PTX module", r) + ": " +
            std::string(log.data());
    return false;
  }
  std::lock_guard<std::mutex> lock(modulesMutex_);
  modules_.push_back(out);
  return true;
}

std::string CudaDevice::checkLaunchBounds(CUfunction f, int kernel,
                                          int threads) const {
  const CudaApi &a = driver_->api();
  int allowed = 0;
  if (a.cuFuncGetAttribute(&allowed, kFuncMaxThreadsPerBlock, f) != 0 ||
      threads <= allowed)
    return ""; // unknown: the launch says what is wrong
  int registers = 0;
  a.cuFuncGetAttribute(&registers, kFuncNumRegs, f);
  return "kernel tsl_k" + std::to_string(kernel) + " cannot launch blocks of " +
         std::to_string(threads) + " threads on " + architecture() +
         ": it allows at most " + std::to_string(allowed) +
         " threads per block (" + std::to_string(registers) +
         " registers per thread)";
}

bool CudaDevice::orderAfter(CUstream consumer, CUstream producer,
                            std::string &error) const {
  const CudaApi &a = driver_->api();
  CUevent event = nullptr;
  CUresult r = a.cuEventCreate(&event, kEventDisableTiming);
  if (r != 0) {
    error = driver_->describe("cuEventCreate", r);
    return false;
  }
  r = a.cuEventRecord(event, producer ? producer : stream_);
  if (r == 0)
    r = a.cuStreamWaitEvent(consumer ? consumer : stream_, event, 0);
  if (r != 0)
    error = driver_->describe("ordering two CUDA streams", r);
  // Destroying an event that a stream still waits on is allowed: the
  // driver frees it once the wait is over.
  a.cuEventDestroy(event);
  return r == 0;
}

} // namespace tsl::rt
