#pragma once
/// \file IEEE binary16 and bfloat16 conversions, shared by the interpreter
/// and the runtime's kernels (round to nearest even; NaN stays NaN).

#include <cstdint>

namespace tsl {

uint16_t floatToHalf(float f);
float halfToFloat(uint16_t h);
uint16_t floatToBF16(float f);
float bf16ToFloat(uint16_t b);

} // namespace tsl
