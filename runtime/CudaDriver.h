#pragma once
/// \file The CUDA driver API opened at run time: `dlopen("libcuda.so.1")`
/// and every entry point resolved through `cuGetProcAddress`, so nothing
/// links against CUDA. A machine without a driver runs CPU code as before
/// and gets "no CUDA driver: ..." when it asks for the GPU.
///
/// The CUDA types are declared here (no cuda.h needed to build): handles
/// are opaque pointers, device pointers 64-bit integers, results ints.

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace tsl::rt {

using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUcontext = struct CUctx_st *;
using CUmodule = struct CUmod_st *;
using CUfunction = struct CUfunc_st *;
using CUstream = struct CUstream_st *;
using CUevent = struct CUevent_st *;

/// The driver's entry points (null until loaded).
struct CudaApi {
  CUresult (*cuInit)(unsigned) = nullptr;
  CUresult (*cuDeviceGetCount)(int *) = nullptr;
  CUresult (*cuDeviceGet)(CUdevice *, int) = nullptr;
  CUresult (*cuDeviceGetAttribute)(int *, int, CUdevice) = nullptr;
  CUresult (*cuDeviceGetName)(char *, int, CUdevice) = nullptr;
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *, CUdevice) = nullptr;
  CUresult (*cuDevicePrimaryCtxRelease)(CUdevice) = nullptr;
  CUresult (*cuCtxSetCurrent)(CUcontext) = nullptr;
  CUresult (*cuCtxSynchronize)() = nullptr;
  CUresult (*cuModuleLoadDataEx)(CUmodule *, const void *, unsigned, int *,
                                 void **) = nullptr;
  CUresult (*cuModuleUnload)(CUmodule) = nullptr;
  CUresult (*cuModuleGetFunction)(CUfunction *, CUmodule,
                                  const char *) = nullptr;
  CUresult (*cuFuncGetAttribute)(int *, int, CUfunction) = nullptr;
  CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned,
                             unsigned, unsigned, unsigned, CUstream, void **,
                             void **) = nullptr;
  CUresult (*cuMemAlloc)(CUdeviceptr *, size_t) = nullptr;
  CUresult (*cuMemFree)(CUdeviceptr) = nullptr;
  CUresult (*cuMemcpyHtoDAsync)(CUdeviceptr, const void *, size_t,
                                CUstream) = nullptr;
  CUresult (*cuMemcpyDtoHAsync)(void *, CUdeviceptr, size_t,
                                CUstream) = nullptr;
  CUresult (*cuMemcpyDtoDAsync)(CUdeviceptr, CUdeviceptr, size_t,
                                CUstream) = nullptr;
  CUresult (*cuMemsetD32Async)(CUdeviceptr, unsigned, size_t,
                               CUstream) = nullptr;
  CUresult (*cuStreamCreate)(CUstream *, unsigned) = nullptr;
  CUresult (*cuStreamDestroy)(CUstream) = nullptr;
  CUresult (*cuStreamSynchronize)(CUstream) = nullptr;
  CUresult (*cuStreamWaitEvent)(CUstream, CUevent, unsigned) = nullptr;
  CUresult (*cuEventCreate)(CUevent *, unsigned) = nullptr;
  CUresult (*cuEventRecord)(CUevent, CUstream) = nullptr;
  CUresult (*cuEventDestroy)(CUevent) = nullptr;
  CUresult (*cuGetErrorString)(CUresult, const char **) = nullptr;
};

/// The process's CUDA driver, loaded once.
class CudaDriver {
public:
  /// The driver, or null with \p error ("no CUDA driver: libcuda.so.1
  /// cannot be loaded: ...", or the entry point or cuInit that failed).
  static const CudaDriver *get(std::string &error);
  /// A driver of the entry points \p api (tests: a fake driver); every one
  /// must be set.
  static std::unique_ptr<CudaDriver> fromApi(const CudaApi &api);

  const CudaApi &api() const { return api_; }
  /// "cuMemAlloc failed: out of memory (2)".
  std::string describe(const char *what, CUresult code) const;

private:
  CudaApi api_;
};

/// One GPU: its primary context, a stream, a caching allocator and the
/// modules loaded into it. Thread-safe.
class CudaDevice {
public:
  /// Opens device \p ordinal; null with \p error when there is no driver,
  /// no such device, or its context cannot be made current.
  static std::shared_ptr<CudaDevice> open(int ordinal, std::string &error);
  /// The same on \p driver (which must outlive the device).
  static std::shared_ptr<CudaDevice> open(const CudaDriver &driver, int ordinal,
                                          std::string &error);
  ~CudaDevice();

  /// "sm_90" for compute capability 9.0.
  std::string architecture() const;
  /// 90 for compute capability 9.0.
  int capability() const { return major_ * 10 + minor_; }
  CUstream stream() const { return stream_; }
  /// "NVIDIA H100 80GB HBM3" (the driver's name of the device).
  const std::string &deviceName() const { return name_; }
  const CudaDriver &driver() const { return *driver_; }

  /// Device memory from the cache (sizes rounded up to a size class), or
  /// 0 with \p error. Freed blocks go back to the cache, not the driver.
  /// The cache is stream-ordered: a block released on \p stream (null: the
  /// device's own) is reused only by allocations for that stream, so work
  /// still queued there that reads it runs before the new owner's work.
  CUdeviceptr allocate(size_t bytes, std::string &error,
                       CUstream stream = nullptr);
  void release(CUdeviceptr p, CUstream stream = nullptr);

  /// Loads PTX text; the module stays loaded while the device lives.
  /// False with the JIT log in \p error, or without JIT on a device below
  /// compute capability 8.0 (TSL's PTX is sm_80 or sm_90). The JIT (a
  /// quarter to over a second per module) runs without the allocator's
  /// lock: only the module list is locked, so concurrent calls allocate
  /// meanwhile.
  bool loadModule(const std::string &ptx, CUmodule &out, std::string &error);
  /// "" when kernel \p f (`tsl_k<kernel>` of its module) may launch blocks
  /// of \p threads threads, else why not: its
  /// CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK (what its registers and its
  /// declared bound allow) is lower. Asked of the driver at each launch.
  std::string checkLaunchBounds(CUfunction f, int kernel, int threads) const;
  /// Makes work enqueued later on \p consumer wait for the work enqueued so
  /// far on \p producer (an event recorded on one, waited on by the
  /// other). Streams are CUstreams, or 1 and 2 for CUDA's legacy and
  /// per-thread default streams. False with \p error.
  bool orderAfter(CUstream consumer, CUstream producer,
                  std::string &error) const;
  /// Makes the device's context current on the calling thread.
  bool makeCurrent(std::string &error) const;

private:
  CudaDevice() = default;
  const CudaDriver *driver_ = nullptr;
  CUdevice device_ = 0;
  CUcontext context_ = nullptr;
  CUstream stream_ = nullptr;
  int ordinal_ = 0;
  int major_ = 0, minor_ = 0;
  std::string name_;
  std::mutex mutex_; ///< the allocator's (freeBlocks_, sizeOf_)
  /// Cached blocks by the stream they were released on, then size class.
  std::map<std::pair<CUstream, size_t>, std::vector<CUdeviceptr>> freeBlocks_;
  std::map<CUdeviceptr, size_t> sizeOf_; ///< live blocks
  std::mutex modulesMutex_; ///< modules_ alone (never held over a JIT)
  std::vector<CUmodule> modules_;
};

} // namespace tsl::rt
