// A fake CUDA driver for the runtime's unit tests (no GPU, no libcuda):
// every entry point of CudaApi as a plain function over one process-wide
// state. Device memory is host memory (copies and memsets work), kernels
// launch nothing but are counted, and streams, events and waits are
// recorded in order. Hooks let a test block or fail an entry point.
#pragma once

#include "runtime/CudaDriver.h"

#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

namespace tsl::rt::fake {

/// What the fake driver does and has seen. Reset with FakeCuda::reset().
struct FakeCuda {
  int major = 9, minor = 0;
  std::string name = "Fake GPU";
  int maxThreadsPerBlock = 1024; ///< CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK
  int numRegs = 32;              ///< CU_FUNC_ATTRIBUTE_NUM_REGS
  /// Called by cuModuleLoadDataEx (null: succeeds at once).
  std::function<CUresult()> onModuleLoad;
  std::mutex mutex; ///< guards what follows
  int launches = 0, allocations = 0, modulesLoaded = 0;
  std::vector<unsigned> launchThreads;
  /// Stream operations in order: "sync S", "record E S", "wait S E",
  /// "launch S", "ctxsync" (S, E: the handles' numbers).
  std::vector<std::string> log;

  static FakeCuda &get() {
    static FakeCuda state;
    return state;
  }
  static void reset() {
    FakeCuda &f = get();
    std::lock_guard<std::mutex> lock(f.mutex);
    f.major = 9;
    f.minor = 0;
    f.name = "Fake GPU";
    f.maxThreadsPerBlock = 1024;
    f.numRegs = 32;
    f.onModuleLoad = nullptr;
    f.launches = f.allocations = f.modulesLoaded = 0;
    f.launchThreads.clear();
    f.log.clear();
  }
  void note(std::string s) {
    std::lock_guard<std::mutex> lock(mutex);
    log.push_back(std::move(s));
  }
  /// The log entries that start with \p prefix.
  std::vector<std::string> entries(const std::string &prefix) {
    std::lock_guard<std::mutex> lock(mutex);
    std::vector<std::string> out;
    for (const std::string &e : log)
      if (e.rfind(prefix, 0) == 0)
        out.push_back(e);
    return out;
  }
};

/// "7" for handle 0x7 (streams and events are small fake numbers; 1 and 2
/// are CUDA's legacy and per-thread default streams).
inline std::string handle(const void *p) {
  return std::to_string(reinterpret_cast<uintptr_t>(p));
}

namespace detail {
inline CUresult ok() { return 0; }
inline uintptr_t nextHandle() {
  static uintptr_t n = 100;
  return ++n;
}
} // namespace detail

/// The fake driver's entry points.
inline CudaApi fakeCudaApi() {
  CudaApi a;
  a.cuInit = [](unsigned) { return detail::ok(); };
  a.cuDeviceGetCount = [](int *n) {
    *n = 1;
    return 0;
  };
  a.cuDeviceGet = [](CUdevice *d, int i) {
    *d = i;
    return 0;
  };
  a.cuDeviceGetAttribute = [](int *v, int attr, CUdevice) {
    *v = attr == 75 ? FakeCuda::get().major : FakeCuda::get().minor;
    return 0;
  };
  a.cuDeviceGetName = [](char *out, int n, CUdevice) {
    std::strncpy(out, FakeCuda::get().name.c_str(), static_cast<size_t>(n));
    return 0;
  };
  a.cuDevicePrimaryCtxRetain = [](CUcontext *c, CUdevice) {
    *c = reinterpret_cast<CUcontext>(detail::nextHandle());
    return 0;
  };
  a.cuDevicePrimaryCtxRelease = [](CUdevice) { return 0; };
  a.cuCtxSetCurrent = [](CUcontext) { return 0; };
  a.cuCtxSynchronize = [] {
    FakeCuda::get().note("ctxsync");
    return 0;
  };
  a.cuModuleLoadDataEx = [](CUmodule *m, const void *, unsigned, int *,
                            void **) {
    FakeCuda &f = FakeCuda::get();
    if (f.onModuleLoad)
      if (CUresult r = f.onModuleLoad(); r != 0)
        return r;
    *m = reinterpret_cast<CUmodule>(detail::nextHandle());
    std::lock_guard<std::mutex> lock(f.mutex);
    ++f.modulesLoaded;
    return 0;
  };
  a.cuModuleUnload = [](CUmodule) { return 0; };
  a.cuModuleGetFunction = [](CUfunction *f, CUmodule, const char *) {
    *f = reinterpret_cast<CUfunction>(detail::nextHandle());
    return 0;
  };
  a.cuFuncGetAttribute = [](int *v, int attr, CUfunction) {
    FakeCuda &f = FakeCuda::get();
    *v = attr == 0 ? f.maxThreadsPerBlock : attr == 4 ? f.numRegs : 0;
    return 0;
  };
  a.cuLaunchKernel = [](CUfunction, unsigned, unsigned, unsigned,
                        unsigned threads, unsigned, unsigned, unsigned,
                        CUstream s, void **, void **) {
    FakeCuda &f = FakeCuda::get();
    std::lock_guard<std::mutex> lock(f.mutex);
    ++f.launches;
    f.launchThreads.push_back(threads);
    f.log.push_back("launch " + handle(s));
    return 0;
  };
  a.cuMemAlloc = [](CUdeviceptr *p, size_t n) {
    FakeCuda &f = FakeCuda::get();
    {
      std::lock_guard<std::mutex> lock(f.mutex);
      ++f.allocations;
    }
    *p = static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(
        std::aligned_alloc(256, (n + 255) / 256 * 256)));
    return *p ? 0 : 2;
  };
  a.cuMemFree = [](CUdeviceptr p) {
    std::free(reinterpret_cast<void *>(static_cast<uintptr_t>(p)));
    return 0;
  };
  a.cuMemcpyHtoDAsync = [](CUdeviceptr d, const void *s, size_t n, CUstream) {
    std::memcpy(reinterpret_cast<void *>(static_cast<uintptr_t>(d)), s, n);
    return 0;
  };
  a.cuMemcpyDtoHAsync = [](void *d, CUdeviceptr s, size_t n, CUstream) {
    std::memcpy(d, reinterpret_cast<void *>(static_cast<uintptr_t>(s)), n);
    return 0;
  };
  a.cuMemcpyDtoDAsync = [](CUdeviceptr d, CUdeviceptr s, size_t n, CUstream) {
    std::memmove(reinterpret_cast<void *>(static_cast<uintptr_t>(d)),
                 reinterpret_cast<void *>(static_cast<uintptr_t>(s)), n);
    return 0;
  };
  a.cuMemsetD32Async = [](CUdeviceptr d, unsigned v, size_t n, CUstream) {
    auto *p = reinterpret_cast<unsigned *>(static_cast<uintptr_t>(d));
    for (size_t i = 0; i < n; ++i)
      p[i] = v;
    return 0;
  };
  a.cuStreamCreate = [](CUstream *s, unsigned) {
    *s = reinterpret_cast<CUstream>(detail::nextHandle());
    return 0;
  };
  a.cuStreamDestroy = [](CUstream) { return 0; };
  a.cuStreamSynchronize = [](CUstream s) {
    FakeCuda::get().note("sync " + handle(s));
    return 0;
  };
  a.cuStreamWaitEvent = [](CUstream s, CUevent e, unsigned) {
    FakeCuda::get().note("wait " + handle(s) + " " + handle(e));
    return 0;
  };
  a.cuEventCreate = [](CUevent *e, unsigned) {
    *e = reinterpret_cast<CUevent>(detail::nextHandle());
    return 0;
  };
  a.cuEventRecord = [](CUevent e, CUstream s) {
    FakeCuda::get().note("record " + handle(e) + " " + handle(s));
    return 0;
  };
  a.cuEventDestroy = [](CUevent) { return 0; };
  a.cuGetErrorString = [](CUresult r, const char **text) {
    *text = r == 701 ? "too many resources requested for launch" : "fake error";
    return 0;
  };
  return a;
}

/// The fake driver (one per process, like the real one).
inline const CudaDriver &fakeCudaDriver() {
  static std::unique_ptr<CudaDriver> d = CudaDriver::fromApi(fakeCudaApi());
  return *d;
}

} // namespace tsl::rt::fake
