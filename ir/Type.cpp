#include "ir/Type.h"

namespace tsl {

const char *dtypeName(DType t) {
  switch (t) {
  case DType::Bool:
    return "bool";
  case DType::I8:
    return "i8";
  case DType::I32:
    return "i32";
  case DType::I64:
    return "i64";
  case DType::F16:
    return "f16";
  case DType::BF16:
    return "bf16";
  case DType::F32:
    return "f32";
  case DType::F64:
    return "f64";
  }
  return "?";
}

std::optional<DType> parseDType(std::string_view name) {
  static const std::pair<const char *, DType> table[] = {
      {"bool", DType::Bool}, {"i8", DType::I8},   {"i32", DType::I32},
      {"i64", DType::I64},   {"f16", DType::F16}, {"bf16", DType::BF16},
      {"f32", DType::F32},   {"f64", DType::F64}};
  for (auto &[n, t] : table)
    if (name == n)
      return t;
  return std::nullopt;
}

size_t dtypeSize(DType t) {
  switch (t) {
  case DType::Bool:
  case DType::I8:
    return 1;
  case DType::F16:
  case DType::BF16:
    return 2;
  case DType::I32:
  case DType::F32:
    return 4;
  case DType::I64:
  case DType::F64:
    return 8;
  }
  return 1;
}

bool isFloat(DType t) {
  return t == DType::F16 || t == DType::BF16 || t == DType::F32 ||
         t == DType::F64;
}
bool isInteger(DType t) {
  return t == DType::I8 || t == DType::I32 || t == DType::I64;
}

SymExpr TensorType::numel() const {
  SymExpr n = 1;
  for (const SymExpr &d : dims)
    n = n * d;
  return n;
}

std::string TensorType::str() const {
  std::string out = dtypeName(dtype);
  out += "[";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i)
      out += ", ";
    out += dims[i].str();
  }
  return out + "]";
}

} // namespace tsl
