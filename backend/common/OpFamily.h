#pragma once
/// \file For the backend libraries (no LLVM): the op families the lowering
/// dispatches on. Each op of ir/Ops.def belongs to one family, derived from
/// its OpCategory with a few backend-local exceptions (kFamilyExceptions).
/// A family has one lowering per target: Codegen's virtual hook of the
/// family (Codegen.h: lowerElementwise, lowerReduction, ...), whose default
/// is the common lowering (the CPU's, and the body of a GPU kernel) and which
/// DeviceCodegen overrides with its kernels and launches. Families whose ops
/// each lower differently (Value, Layout, Library, DataDependent) look the
/// op up in a per-op table of the target (static_asserts there fail the
/// build when an op of such a family has no entry). docs/design.md has the
/// map of the backend.

#include "ir/OpInfo.h"

#include <array>
#include <cstdint>

namespace tsl::backend {

/// How the backend lowers an op (one lowering per target each).
enum class OpFamily : uint8_t {
  /// Elementwise unary, binary and where: one loop over the result, operands
  /// fused into it (element math: CodegenElementMath.cpp).
  Elementwise,
  /// Values without operands: constant, sym_scalar, full, arange.
  Value,
  /// reduce_sum, reduce_mean, reduce_max, reduce_min.
  Reduction,
  /// argmax, argmin (Reduction category; a library kernel on the CPU).
  ArgReduction,
  /// cumsum, cumprod (Library category; a loop per row on every target).
  Scan,
  /// matmul.
  Matmul,
  /// reshape, permute, expand, concat, slice, update_slice, pad.
  Layout,
  /// conv2d, max_pool2d, attention, index_select, gather, scatter,
  /// index_add, masked_scatter, topk, sort.
  Library,
  /// nonzero, masked_select, unique, item: sizes bound at run time.
  DataDependent,
  /// assert: a check on sizes, in host code.
  Check,
  /// loop, end_loop: lowered by the plan's walk (Codegen::run), not alone.
  Control,
  /// call: Codegen::lowerCall.
  Call,
};

/// The number of op families.
inline constexpr size_t kNumOpFamilies = 12;

namespace detail {
/// The family of the ops of category \p c (before exceptions).
constexpr OpFamily familyOfCategory(OpCategory c) {
  switch (c) {
  case OpCategory::ElementwiseUnary:
  case OpCategory::ElementwiseBinary:
  case OpCategory::ElementwiseSelect:
    return OpFamily::Elementwise;
  case OpCategory::Scalar:
  case OpCategory::Creation:
    return OpFamily::Value;
  case OpCategory::Reduction:
    return OpFamily::Reduction;
  case OpCategory::Matmul:
    return OpFamily::Matmul;
  case OpCategory::Layout:
    return OpFamily::Layout;
  case OpCategory::Library:
    return OpFamily::Library;
  case OpCategory::DataDependent:
    return OpFamily::DataDependent;
  case OpCategory::Control:
    return OpFamily::Control;
  case OpCategory::Call:
    return OpFamily::Call;
  case OpCategory::Check:
    return OpFamily::Check;
  }
  // A new category without a family: not a constant expression, so
  // kOpFamilies below fails to compile.
  return static_cast<OpFamily>(kNumOpFamilies);
}

/// Ops whose family is not their category's.
struct FamilyException {
  OpCode code;
  OpFamily family;
};
inline constexpr FamilyException kFamilyExceptions[] = {
    {OpCode::Argmax, OpFamily::ArgReduction},
    {OpCode::Argmin, OpFamily::ArgReduction},
    {OpCode::Cumsum, OpFamily::Scan},
    {OpCode::Cumprod, OpFamily::Scan},
};

constexpr OpFamily familyOf(OpCode code, OpCategory category) {
  for (const FamilyException &e : kFamilyExceptions)
    if (e.code == code)
      return e.family;
  return familyOfCategory(category);
}
} // namespace detail

/// The family of every op, indexed by OpCode (built over ir/Ops.def).
inline constexpr OpFamily kOpFamilies[] = {
#define TSL_OP(Id, Name, MinOps, MaxOps, Results, Attrs, Category, ...)        \
  detail::familyOf(OpCode::Id, OpCategory::Category),
#include "ir/Ops.def"
};
static_assert(sizeof(kOpFamilies) / sizeof(kOpFamilies[0]) == kNumOps,
              "one family per op");

namespace detail {
constexpr bool familiesValid() {
  for (OpFamily f : kOpFamilies)
    if (static_cast<size_t>(f) >= kNumOpFamilies)
      return false;
  return true;
}
} // namespace detail
static_assert(detail::familiesValid(), "every category has a family");

/// The family of \p code.
constexpr OpFamily opFamily(OpCode code) {
  return kOpFamilies[static_cast<size_t>(code)];
}

/// One entry of a per-op table: the function \p T and whether one was set.
/// A flag, not a null test: under -fsanitize GCC does not fold a
/// function's address compared with null, so a static_assert over the
/// table would not be a constant expression.
template <typename T> struct OpEntry {
  T fn{};
  bool set = false;
  constexpr OpEntry &operator=(T f) {
    fn = f;
    set = true;
    return *this;
  }
  constexpr operator T() const { return fn; }
};

/// A table of one \p T per op, indexed by OpCode (a target's per-op
/// lowerings of a family).
template <typename T> using PerOp = std::array<OpEntry<T>, kNumOps>;

/// Whether \p table has an entry for every op of family \p f (the per-op
/// tables static_assert it).
template <typename T>
constexpr bool coversFamily(const PerOp<T> &table, OpFamily f) {
  for (size_t i = 0; i < kNumOps; ++i)
    if (kOpFamilies[i] == f && !table[i].set)
      return false;
  return true;
}

} // namespace tsl::backend
