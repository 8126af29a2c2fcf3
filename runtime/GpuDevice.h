#pragma once
/// \file Where GPU variants run: a CUDA device (through CudaDriver) or the
/// GPU emulator (host memory, each block's threads run as fibers by
/// GpuEmulator: a test device for machines without a GPU). Device
/// memory, copies and kernel launches for the kernel ABI's tsl_rt_device.
/// No compiler inside.

#include "runtime/CublasLt.h"
#include "runtime/CudaDriver.h"
#include "runtime/GpuEmulator.h"
#include "runtime/KernelAbi.h"

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace tsl::rt {

/// The device kernels of one GPU variant, by launch number.
struct DeviceCode {
  std::vector<CUfunction> cuda;         ///< on a CUDA device
  std::vector<EmulatedKernel> emulated; ///< under the emulator
  std::shared_ptr<void> keepAlive;      ///< owns emulated code
};

class GpuDevice : public std::enable_shared_from_this<GpuDevice> {
public:
  /// CUDA device \p ordinal; null with \p error ("no CUDA driver: ...").
  static std::shared_ptr<GpuDevice> openCuda(int ordinal, std::string &error);
  /// The emulator (always available).
  static std::shared_ptr<GpuDevice> emulator();
  /// A GPU device over an open CUDA device (tests: one on a fake driver).
  static std::shared_ptr<GpuDevice> fromCuda(std::shared_ptr<CudaDevice> cuda);

  bool isEmulator() const { return !cuda_; }
  /// The CUDA device (null for the emulator).
  CudaDevice *cuda() const { return cuda_.get(); }
  /// "sm_90", or "emulator".
  std::string name() const;

  /// Device memory (null with \p error); release() gives it back. The
  /// cache is stream-ordered (CudaDevice::allocate): memory released on
  /// \p stream is reused by later allocations for the same stream only.
  void *allocate(size_t bytes, std::string &error, CUstream stream = nullptr);
  void release(void *p, CUstream stream = nullptr);
  enum class Copy { ToHost, ToDevice, OnDevice };
  /// Copies \p bytes on \p stream (null: the device's own); a copy to the
  /// host waits for it. False with \p error.
  bool copy(Copy kind, void *dst, const void *src, size_t bytes,
            std::string &error, CUstream stream = nullptr);

  /// Enqueues \p p on \p stream through cuBLASLt (CublasLt.h; opened at
  /// the first GEMM, logged under TSL_LOGS=perf): Unavailable on the
  /// emulator and without the library, and the caller runs its own kernel.
  GemmOutcome gemm(const tsl_rt_gemm &p, std::string &error,
                   CUstream stream = nullptr);
  /// Whether gemm may use the library (default: yes); off, every GEMM
  /// runs on TSL's generated kernel (benchmarks compare the two).
  void setLibraryGemm(bool on) { libraryGemm_ = on; }
  /// What runs GEMMs: "cuBLASLt (libcublasLt.so.13)" (with the libraries
  /// passed over and why: "cuBLASLt (libcublasLt.so.12; passed over:
  /// libcublasLt.so.13: cublasLtCreate failed: ...)"), or "TSL's generated
  /// kernel (why)"; opens the library if no GEMM has yet.
  std::string gemmPath();

  /// Device memory handed to a caller (tsl_function_call's outputs),
  /// produced by work on \p stream (null: the device's own): released later
  /// by address alone (releaseHandedOver), back to that stream's cache.
  void handOver(void *p, CUstream stream = nullptr);
  /// Orders work enqueued later on \p consumer (a CUstream, or 1 and 2 for
  /// CUDA's legacy and per-thread default streams) after the work enqueued
  /// so far on the stream that produced handed-over \p p, and remembers
  /// \p consumer as a reader of \p p: releasing \p p waits for the work
  /// enqueued on it by then. The DLPack export's `stream`. True on the
  /// emulator; false with \p error.
  bool exportTo(void *p, CUstream consumer, std::string &error);
  /// Gives handed-over \p p back to its device's cache, stream-ordered:
  /// reused only after the work queued so far on its stream and on every
  /// stream it was exported to.
  static void releaseHandedOver(void *p);

  /// The launch state of one call of a variant with \p code: its
  /// tsl_rt_device for the call's context. Copies and launches go to
  /// \p stream (null: the device's own) without waiting, except reads
  /// (values and the status word) back to the host. Not thread-safe; one
  /// per call.
  class Call {
  public:
    Call(GpuDevice &device, const DeviceCode &code, CUstream stream = nullptr);
    Call(const Call &) = delete; // the ABI table points at this object
    Call &operator=(const Call &) = delete;
    ~Call();
    const tsl_rt_device *abi() const { return &abi_; }
    /// Ends the call as tsl_c.h promises, synchronized with its stream:
    /// waits for the work it enqueued (unless a read or status check
    /// already waited for all of it) or, with \p enqueuedElsewhere (result
    /// copies made outside the call's ABI), for the stream regardless.
    /// False with an asynchronous device error in \p error.
    bool finish(bool enqueuedElsewhere, std::string &error);

  private:
    static void *alloc(void *self, int64_t bytes, const char **error);
    static void free(void *self, void *p);
    static const char *launch(void *self, int32_t kernel,
                              const tsl_rt_grid *grid, int64_t *args,
                              int64_t nargs);
    static const char *read(void *self, void *dst, const void *src,
                            int64_t bytes);
    static const char *status(void *self, int64_t *status);
    static int32_t gemm(void *self, const tsl_rt_gemm *g, const char **error);
    /// The call's status word (allocated and zeroed at the first launch).
    bool statusWord(std::string &error);
    const char *fail(std::string message);

    GpuDevice &device_;
    const DeviceCode &code_;
    CUstream stream_ = nullptr;
    /// Work enqueued since the last wait for the stream.
    bool pending_ = false;
    tsl_rt_device abi_;
    void *status_ = nullptr;
    std::string error_;
  };

private:
  GpuDevice() = default;
  CUstream streamOr(CUstream s) const { return s ? s : cuda_->stream(); }
  std::shared_ptr<CudaDevice> cuda_;
  /// Opens cuBLASLt once (logged under TSL_LOGS=perf).
  void openGemmLibrary();
  std::once_flag gemmOnce_;
  std::unique_ptr<CublasLtGemm> cublasLt_; ///< null: TSL's kernels only
  std::string noLibraryWhy_;
  std::atomic<bool> libraryGemm_{true};
};

} // namespace tsl::rt
