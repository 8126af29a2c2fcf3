#pragma once
/// \file DLPack for the Python extension: the v1.0 structs (the C ABI's
/// tsl_tensor is layout-compatible with DLTensor), importing call arguments
/// from any object with `__dlpack__` without copying, and exporting results
/// as capsules.

#include "python/src/Common.h"
#include "runtime/Variant.h"
#include "tsl/tsl_c.h"

#include <cstdint>
#include <string>

namespace tsl::py {

/// DLPack's DLManagedTensor (the unversioned capsule "dltensor").
struct DLManagedTensor {
  tsl_tensor dl_tensor;
  void *manager_ctx;
  void (*deleter)(DLManagedTensor *self);
};

/// DLPack 1.0's DLManagedTensorVersioned (capsule "dltensor_versioned").
struct DLManagedTensorVersioned {
  uint32_t major, minor;
  void *manager_ctx;
  void (*deleter)(DLManagedTensorVersioned *self);
  uint64_t flags; ///< bit 0: read-only, bit 1: a copy
  tsl_tensor dl_tensor;
};

/// DLPack device types the extension meets.
enum : int32_t { kDLCPU = 1, kDLCUDA = 2, kDLCUDAHost = 3 };

/// Where a function runs, so where its tensor arguments must live.
struct Placement {
  /// kDLCPU for the CPU and the GPU emulator (its memory is host memory),
  /// kDLCUDA for a CUDA device.
  int32_t deviceType = kDLCPU;
  int32_t deviceId = 0;
  /// The CUDA stream the runtime runs on (passed to `__dlpack__(stream=)`
  /// so the producer orders its work before ours); null on the CPU.
  void *stream = nullptr;
  /// The backend's name for messages ("cpu", "cuda:0", "gpu-emulator").
  const char *backend = "cpu";
};

/// An imported tensor: the capsule owns the producer's memory (dropping it
/// releases it) and the view points into it.
struct ImportedTensor {
  nb::object capsule;
  const tsl_tensor *view = nullptr;
};

/// Imports \p obj (an object with `__dlpack__`, or a DLPack capsule) as a
/// call argument without copying. Returns false, with no Python error, when
/// \p obj has neither; raises tsl.Error (kind invalid_argument, naming it
/// "<noun> '<name>'": "argument 'x'") for a tensor on another device, of an
/// element type TSL lacks, not row-major contiguous (never copied),
/// misaligned, or with more than 32 dims. On success \p arg holds the
/// element type, shape and data pointer.
bool importTensor(nb::handle obj, const Placement &where,
                  const std::string &name, ImportedTensor &out,
                  rt::CallArg &arg, const char *noun = "argument");

/// The name of element type code \p dtype (KernelAbi.h): "f32", "bf16"...
const char *dtypeName(int32_t dtype);

/// The DLPack data type of element type code \p dtype.
tsl_dtype dlpackDtype(int32_t dtype);

/// A DLPack capsule of \p view, whose memory \p owner (a Python object)
/// keeps alive: the capsule holds a reference to it until the consumer
/// calls the deleter (or the capsule dies unconsumed). Versioned
/// ("dltensor_versioned", DLPack 1.0) when \p versioned, else "dltensor".
/// \p liveExports (when set, owned by \p owner) counts the capsules whose
/// consumers have not released them yet.
nb::object exportCapsule(nb::handle owner, const tsl_tensor &view,
                         bool versioned, int *liveExports = nullptr);

} // namespace tsl::py
