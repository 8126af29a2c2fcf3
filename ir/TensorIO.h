#pragma once
/// \file Reading and writing NumPy `.npy` files and printing tensors the way
/// NumPy prints arrays.
///
/// Element types map to NumPy descriptors: bool `|b1`, i8 `|i1`, i32 `<i4`,
/// i64 `<i8`, f16 `<f2`, f32 `<f4`, f64 `<f8`. NumPy has no bfloat16: bf16
/// tensors are written as `<u2` holding the raw bf16 bits, and a `<u2` file
/// is read as bf16 (ml_dtypes users: `arr.view(np.uint16)`).

#include "ir/Tensor.h"

#include <string>

namespace tsl {

/// Reads a `.npy` file (format versions 1-3, little-endian, C order).
/// Returns false with \p error on a missing, truncated or unsupported file.
bool readNpy(const std::string &path, Tensor &out, std::string &error);
/// Parses `.npy` bytes already in memory.
bool parseNpy(const std::string &bytes, Tensor &out, std::string &error);
/// Writes a `.npy` file (version 1.0).
bool writeNpy(const std::string &path, const Tensor &t, std::string &error);

/// NumPy-style text: `[[ 0.5 -1. ]\n [ 2.   3.25]]`; large tensors are
/// summarized with `...` like NumPy (more than 1000 elements).
std::string formatTensor(const Tensor &t);

} // namespace tsl
