#pragma once
/// \file Host tensors used by the reference interpreter and the tools:
/// contiguous row-major storage with element access through double or int64.

#include "ir/Type.h"
#include "support/Float16.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace tsl {

/// A dense row-major tensor on the host. Copies share storage.
class Tensor {
public:
  Tensor() = default;
  /// A zero-filled tensor. Fails (returns false from `valid`) when a dim is
  /// negative, the byte size leaves int64 or exceeds `maxTensorBytes()`
  /// (support/SizeLimits.h).
  static Tensor zeros(DType dtype, std::vector<int64_t> shape);

  bool valid() const { return static_cast<bool>(data_); }
  DType dtype() const { return dtype_; }
  const std::vector<int64_t> &shape() const { return shape_; }
  size_t rank() const { return shape_.size(); }
  size_t numel() const { return numel_; }
  uint8_t *raw() { return data_->data(); }
  const uint8_t *raw() const { return data_->data(); }
  size_t byteSize() const { return numel_ * dtypeSize(dtype_); }

  /// Element i as a double (bool: 0/1; ints exactly up to 2^53).
  double getF(size_t i) const;
  /// Element i as an int64 (floats truncated toward zero, saturating).
  int64_t getI(size_t i) const;
  /// Stores a double, rounding to the element type (ints saturate).
  void setF(size_t i, double v);
  /// Stores an int64, wrapping to the element type's width.
  void setI(size_t i, int64_t v);
  /// Copies element \p src of \p from (same dtype) into element \p dst.
  void copyElement(size_t dst, const Tensor &from, size_t src);

  /// `f32[2, 3]`.
  std::string typeString() const;

private:
  DType dtype_ = DType::F32;
  std::vector<int64_t> shape_;
  size_t numel_ = 0;
  std::shared_ptr<std::vector<uint8_t>> data_;
};

/// Converts a double to an int64 the way casts do: NaN gives 0, values
/// beyond the range saturate, others truncate toward zero.
int64_t saturatingToInt(double v);

} // namespace tsl
