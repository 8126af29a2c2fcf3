#pragma once
/// \file Private to runtime/: the float element-type codes of KernelAbi.h and
/// element access in f32 for the library kernels that compute f16 and bf16
/// in f32 (conv2d, attention).

#include "support/Float16.h"

#include <cstdint>

namespace tsl::rt {

/// KernelAbi.h's codes of the float element types.
enum FloatCode : int32_t { F16 = 4, BF16 = 5, F32 = 6, F64 = 7 };

/// Element \p i of \p p, of element type \p d (f16, bf16 or f32), as f32.
inline float loadFloat(int32_t d, const void *p, int64_t i) {
  if (d == F32)
    return static_cast<const float *>(p)[i];
  uint16_t h = static_cast<const uint16_t *>(p)[i];
  return d == F16 ? halfToFloat(h) : bf16ToFloat(h);
}

/// Stores \p v as element \p i of \p p (f16, bf16 or f32), rounding once.
inline void storeFloat(int32_t d, void *p, int64_t i, float v) {
  if (d == F32)
    static_cast<float *>(p)[i] = v;
  else
    static_cast<uint16_t *>(p)[i] = d == F16 ? floatToHalf(v) : floatToBF16(v);
}

} // namespace tsl::rt
