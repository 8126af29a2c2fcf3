#pragma once
/// \file tsl.Tensor: a function's result, owning memory the runtime
/// allocated (host memory, or device memory of a CUDA device or the GPU
/// emulator), shared with NumPy, PyTorch, JAX or CuPy through DLPack.

#include "python/src/Common.h"
#include "runtime/FunctionTable.h"
#include "tsl/tsl_c.h"

#include <memory>
#include <vector>

namespace tsl::rt {
class GpuDevice;
}

namespace tsl::py {

class Tensor {
public:
  /// Takes \p out (its memory is freed with the tensor). \p gpu is the
  /// device whose memory it is (kept alive), null for host memory; an
  /// emulator's memory is host memory and is shown as on the CPU.
  Tensor(rt::Output out, std::shared_ptr<rt::GpuDevice> gpu, int32_t deviceId);
  /// A view of host memory \p owner keeps alive (a weights file's
  /// mapping): never freed by the tensor, copied when donated.
  Tensor(rt::Output view, std::shared_ptr<const void> owner);
  ~Tensor();
  Tensor(const Tensor &) = delete;
  Tensor &operator=(const Tensor &) = delete;

  /// The DLTensor view (compact row-major; strides null).
  const tsl_tensor &view() const { return view_; }
  const std::vector<int64_t> &shape() const { return out_.shape; }
  int32_t dtype() const { return out_.dtype; }
  /// Whether the memory is a CUDA device's (not host memory).
  bool onCuda() const { return view_.device.device_type == 2; }
  /// Bytes of data.
  size_t nbytes() const;
  /// "f32[4, 3]".
  std::string typeString() const;
  /// "cpu" or "cuda:N".
  std::string deviceString() const;
  /// A copy of a CUDA tensor in host memory (raises tsl.Error when the copy
  /// fails).
  Tensor *copyToHost() const;
  /// Orders DLPack consumer stream \p stream (`__dlpack__(stream=)`: None,
  /// -1, 1, 2 or a CUstream address) after the work that produced this
  /// CUDA tensor, and makes its release wait for that stream's work.
  /// Raises BufferError for stream 0, tsl.Error when the driver fails.
  void orderConsumer(nb::handle stream);

  /// Hands the tensor's host memory to a call that donates it (to
  /// \p where, "argument 'w' of 'step'"): its own block when no DLPack
  /// consumer (a NumPy array, a torch tensor) still reads it, else a
  /// malloc'd copy (\p copied), leaving the original to them. From now on
  /// the tensor is donated: reading it raises tsl.Error. Raises tsl.Error
  /// for a tensor donated before, or a CUDA tensor; null when a copy
  /// cannot be allocated.
  void *donate(const std::string &where, bool &copied);
  /// Undoes donate() after a call that failed (\p data and \p copied as
  /// it gave them).
  void undonate(void *data, bool copied);
  /// Raises tsl.Error when the tensor was donated (its data is gone).
  void checkNotDonated() const;
  bool donated() const { return !donatedTo_.empty(); }
  /// The live-export counter exportCapsule keeps.
  int *liveExports() { return &liveExports_; }

private:
  rt::Output out_;
  std::shared_ptr<rt::GpuDevice> gpu_;
  tsl_tensor view_{};
  std::shared_ptr<const void> owner_; ///< set: a view, out_.data not ours
  std::string donatedTo_; ///< donate()'s where; empty while not donated
  int liveExports_ = 0;   ///< DLPack capsules not released (under the GIL)
};

/// Registers tsl._tsl.Tensor.
void bindTensor(nb::module_ &m);

/// Registers tsl._tsl.load_safetensors (python/src/Weights.cpp).
void bindWeights(nb::module_ &m);

} // namespace tsl::py
