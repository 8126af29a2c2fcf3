#include "ir/Tensor.h"

#include <cmath>
#include <cstring>
#include <limits>

namespace tsl {

uint16_t floatToHalf(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000;
  uint32_t exp = (x >> 23) & 0xff;
  uint32_t mant = x & 0x7fffff;
  if (exp == 0xff) // inf or nan
    return static_cast<uint16_t>(sign | 0x7c00 | (mant ? 0x200 : 0));
  int32_t e = static_cast<int32_t>(exp) - 127 + 15;
  if (e >= 31)
    return static_cast<uint16_t>(sign | 0x7c00);
  if (e <= 0) {
    if (e < -10)
      return static_cast<uint16_t>(sign);
    mant |= 0x800000;
    uint32_t shift = static_cast<uint32_t>(14 - e);
    uint32_t half = mant >> shift;
    uint32_t rem = mant & ((1u << shift) - 1);
    uint32_t mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (half & 1)))
      ++half;
    return static_cast<uint16_t>(sign | half);
  }
  uint32_t half = sign | (static_cast<uint32_t>(e) << 10) | (mant >> 13);
  uint32_t rem = mant & 0x1fff;
  if (rem > 0x1000 || (rem == 0x1000 && (half & 1)))
    ++half; // may carry into the exponent, which is correct rounding
  return static_cast<uint16_t>(half);
}

float halfToFloat(uint16_t h) {
  uint32_t sign = (h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1f;
  uint32_t mant = h & 0x3ff;
  uint32_t x;
  if (exp == 0) {
    if (mant == 0) {
      x = sign;
    } else {
      int e = -1;
      do {
        ++e;
        mant <<= 1;
      } while (!(mant & 0x400));
      x = sign | (static_cast<uint32_t>(127 - 15 - e) << 23) |
          ((mant & 0x3ff) << 13);
    }
  } else if (exp == 31) {
    x = sign | 0x7f800000 | (mant << 13);
  } else {
    x = sign | ((exp - 15 + 127) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

uint16_t floatToBF16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffff) > 0x7f800000)
    return static_cast<uint16_t>((x >> 16) | 0x40); // quiet nan
  uint32_t rounding = 0x7fff + ((x >> 16) & 1);
  return static_cast<uint16_t>((x + rounding) >> 16);
}

float bf16ToFloat(uint16_t b) {
  uint32_t x = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

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
  uint64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0 || (d != 0 && n > maxBytes() / static_cast<uint64_t>(d)))
      return Tensor();
    n *= static_cast<uint64_t>(d);
  }
  if (n * dtypeSize(dtype) > maxBytes())
    return Tensor();
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
