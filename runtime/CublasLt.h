#pragma once
/// \file cuBLASLt opened at run time, like the driver: `dlopen` of
/// `$TSL_CUBLASLT_PATH` (':'-separated), else `libcublasLt.so.13`, then
/// `.12` (the CUDA toolkit's or the one PyTorch's wheels install, found on
/// the loader path), never linked and never required. A library that
/// loads but cannot create a handle (CUDA 13's cuBLAS on a CUDA 12 driver)
/// is passed over for the next. GPU variants ask it for their
/// GEMMs first (tsl_rt_dev_gemm) and launch TSL's own kernel when it is
/// missing, disabled (`TSL_CUBLASLT=off`) or has no algorithm for the
/// problem.
///
/// The cuBLASLt types and constants are declared here from its documented
/// ABI (no CUDA headers needed to build).

#include "runtime/CudaDriver.h"
#include "runtime/KernelAbi.h"

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

namespace tsl::rt {

/// What a library GEMM did.
enum class GemmOutcome {
  Done,       ///< enqueued on the stream
  Failed,     ///< an error (the message says why)
  Unavailable ///< not for this problem: the caller runs its own kernel
};

/// The first of \p names (dlopen names or paths) that loads with every
/// entry point TSL calls, or "" with \p why; not cached (tests, tools).
std::string probeCublasLt(const std::vector<std::string> &names,
                          std::string &why);

/// The libraries CublasLtGemm::open tries, in order: those of
/// `$TSL_CUBLASLT_PATH` (paths separated by ':') when set, else
/// `libcublasLt.so.13` then `.12`; none (with \p why) when
/// `TSL_CUBLASLT=off`.
std::vector<std::string> cublasLtCandidates(std::string &why);

/// The library's entry points (CublasLt.cpp).
struct CublasLtApi;

/// cuBLASLt on one CUDA device: a handle, a workspace per stream and the
/// algorithms its heuristics chose, cached by problem. Thread-safe.
class CublasLtGemm {
public:
  /// Loads the library and creates a handle for \p device (its context
  /// current): the first of cublasLtCandidates() that loads and creates
  /// one; null with \p why (each library's reason).
  static std::unique_ptr<CublasLtGemm> open(CudaDevice &device,
                                            std::string &why);
  /// The same over the libraries \p names (dlopen names or paths).
  static std::unique_ptr<CublasLtGemm>
  open(CudaDevice &device, const std::vector<std::string> &names,
       std::string &why);
  ~CublasLtGemm();

  /// Enqueues \p p (row-major, KernelAbi.h) on \p stream (null: the device's
  /// own). f16 and bf16 run on tensor cores with f32 accumulation; f32 in full
  /// f32 (PyTorch's default) unless TSL_ALLOW_TF32=1; f64 in f64. Unavailable
  /// for other element types, empty K (the result is zeros) and problems
  /// cuBLASLt has no algorithm for; Done at once when the result is empty.
  /// A cublasLtMatmul error is Unavailable too (TSL's kernel runs the
  /// problem, then and later; a warning says so once per device).
  GemmOutcome run(const tsl_rt_gemm &p, CUstream stream, std::string &error);

  /// The library that serves: "libcublasLt.so.12".
  const std::string &path() const { return path_; }
  /// Why the libraries before it were passed over ("" when none was).
  const std::string &refused() const { return refused_; }

private:
  struct Plan;
  CublasLtGemm() = default;
  /// The cached plan for \p p, or null with \p outcome (Unavailable or
  /// Failed with \p error).
  Plan *plan(const tsl_rt_gemm &p, GemmOutcome &outcome, std::string &error);
  /// The workspace for \p stream (allocated once), or 0 with \p error.
  CUdeviceptr workspace(CUstream stream, std::string &error);

  const CublasLtApi *api_ = nullptr;
  CudaDevice *device_ = nullptr;
  void *handle_ = nullptr;
  std::string path_, refused_;
  bool allowTf32_ = false;
  bool matmulFailureLogged_ = false;
  std::mutex mutex_;
  using Key = std::tuple<int32_t, int64_t, int64_t, int64_t, int64_t, int64_t,
                         int64_t, int64_t, int32_t, int32_t>;
  std::map<Key, std::unique_ptr<Plan>> plans_;
  std::map<CUstream, CUdeviceptr> workspaces_;
};

} // namespace tsl::rt
