#include "ir/Tensor.h"
#include "support/SizeLimits.h"

#include <cmath>
#include <cstring>
#include <limits>

namespace tsl {

int64_t saturatingToInt(double v) {
  if (std::isnan(v))
    return 0;
  if (v >= 9.2233720368547758e18)
    return std::numeric_limits<int64_t>::max();
  if (v <= -9.2233720368547758e18)
    return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(v);
}

Tensor Tensor::zeros(DType dtype, std::vector<int64_t> shape) {
  Tensor t;
  t.dtype_ = dtype;
  std::optional<int64_t> bytes =
      tensorBytes(shape.data(), shape.size(), dtypeSize(dtype));
  if (!bytes || *bytes > maxTensorBytes())
    return Tensor();
  uint64_t n = static_cast<uint64_t>(*bytes) / dtypeSize(dtype);
  t.shape_ = std::move(shape);
  t.numel_ = n;
  t.data_ = std::make_shared<std::vector<uint8_t>>(n * dtypeSize(dtype) + 1, 0);
  return t;
}

double Tensor::getF(size_t i) const {
  const uint8_t *p = raw() + i * dtypeSize(dtype_);
  switch (dtype_) {
  case DType::Bool:
    return *p ? 1.0 : 0.0;
  case DType::I8:
    return static_cast<int8_t>(*p);
  case DType::I32: {
    int32_t v;
    std::memcpy(&v, p, 4);
    return v;
  }
  case DType::I64: {
    int64_t v;
    std::memcpy(&v, p, 8);
    return static_cast<double>(v);
  }
  case DType::F16: {
    uint16_t v;
    std::memcpy(&v, p, 2);
    return halfToFloat(v);
  }
  case DType::BF16: {
    uint16_t v;
    std::memcpy(&v, p, 2);
    return bf16ToFloat(v);
  }
  case DType::F32: {
    float v;
    std::memcpy(&v, p, 4);
    return v;
  }
  case DType::F64: {
    double v;
    std::memcpy(&v, p, 8);
    return v;
  }
  }
  return 0;
}

int64_t Tensor::getI(size_t i) const {
  const uint8_t *p = raw() + i * dtypeSize(dtype_);
  switch (dtype_) {
  case DType::Bool:
    return *p ? 1 : 0;
  case DType::I8:
    return static_cast<int8_t>(*p);
  case DType::I32: {
    int32_t v;
    std::memcpy(&v, p, 4);
    return v;
  }
  case DType::I64: {
    int64_t v;
    std::memcpy(&v, p, 8);
    return v;
  }
  default:
    return saturatingToInt(getF(i));
  }
}

void Tensor::setF(size_t i, double v) {
  uint8_t *p = raw() + i * dtypeSize(dtype_);
  switch (dtype_) {
  case DType::Bool:
    *p = v != 0 ? 1 : 0;
    return;
  case DType::I8:
  case DType::I32:
  case DType::I64: {
    int64_t x = saturatingToInt(v);
    if (dtype_ == DType::I8)
      x = std::max<int64_t>(-128, std::min<int64_t>(127, x));
    if (dtype_ == DType::I32)
      x = std::max<int64_t>(INT32_MIN, std::min<int64_t>(INT32_MAX, x));
    setI(i, x);
    return;
  }
  case DType::F16: {
    uint16_t h = floatToHalf(static_cast<float>(v));
    std::memcpy(p, &h, 2);
    return;
  }
  case DType::BF16: {
    uint16_t h = floatToBF16(static_cast<float>(v));
    std::memcpy(p, &h, 2);
    return;
  }
  case DType::F32: {
    float f = static_cast<float>(v);
    std::memcpy(p, &f, 4);
    return;
  }
  case DType::F64:
    std::memcpy(p, &v, 8);
    return;
  }
}

void Tensor::setI(size_t i, int64_t v) {
  uint8_t *p = raw() + i * dtypeSize(dtype_);
  switch (dtype_) {
  case DType::Bool:
    *p = v != 0;
    return;
  case DType::I8:
    *p = static_cast<uint8_t>(v);
    return;
  case DType::I32: {
    int32_t x = static_cast<int32_t>(static_cast<uint32_t>(v));
    std::memcpy(p, &x, 4);
    return;
  }
  case DType::I64:
    std::memcpy(p, &v, 8);
    return;
  default:
    setF(i, static_cast<double>(v));
  }
}

void Tensor::copyElement(size_t dst, const Tensor &from, size_t src) {
  size_t n = dtypeSize(dtype_);
  std::memcpy(raw() + dst * n, from.raw() + src * n, n);
}

std::string Tensor::typeString() const {
  std::string s = dtypeName(dtype_);
  s += "[";
  for (size_t i = 0; i < shape_.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape_[i]);
  return s + "]";
}

} // namespace tsl
