#pragma once
/// \file Element types and tensor types over symbolic dims.

#include "shapes/SymExpr.h"

#include <optional>
#include <string>
#include <vector>

namespace tsl {

/// Element types of LANGUAGE.md §3.
enum class DType : uint8_t { Bool, I8, I32, I64, F16, BF16, F32, F64 };

const char *dtypeName(DType t);
/// Parses "f32", "i64", ...; nullopt for anything else.
std::optional<DType> parseDType(std::string_view name);
/// Size of one element in bytes.
size_t dtypeSize(DType t);
bool isFloat(DType t);
bool isInteger(DType t); ///< i8, i32, i64 (not bool)

/// A tensor type: element type plus one symbolic size per axis. Rank 0 is a
/// scalar.
struct TensorType {
  DType dtype = DType::F32;
  std::vector<SymExpr> dims;

  size_t rank() const { return dims.size(); }
  /// The product of the dims (1 for rank 0).
  SymExpr numel() const;
  /// `f32[B, 784]`, `f32[]`.
  std::string str() const;
  bool operator==(const TensorType &o) const {
    return dtype == o.dtype && dims == o.dims;
  }
};

} // namespace tsl
