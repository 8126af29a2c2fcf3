// How Codegen reaches an op's lowering: lowerHostOp through its family's
// hook (one per family, overridden per target: Codegen.h), lowerOp through
// the common lowering's per-op table. Both tables are built at compile
// time over ir/Ops.def (kOpFamilies); an op without a common lowering, or a
// family without a hook, fails the static_asserts below.
#include "backend/common/Codegen.h"
#include "backend/common/OpFamily.h"

namespace tsl::backend {

/// The dispatch tables (a nested class: it names Codegen's protected
/// members).
struct Codegen::Lowerings {
  using Lowering = bool (Codegen::*)(const Operation &);
  static constexpr size_t at(OpCode c) { return static_cast<size_t>(c); }
  static constexpr size_t at(OpFamily f) { return static_cast<size_t>(f); }

  /// The target's lowering of each family (virtual hooks dispatch to the
  /// target's override).
  static constexpr std::array<OpEntry<Lowering>, kNumOpFamilies> hooks() {
    std::array<OpEntry<Lowering>, kNumOpFamilies> t{};
    t[at(OpFamily::Elementwise)] = &Codegen::lowerElementwise;
    t[at(OpFamily::Value)] = &Codegen::lowerValue;
    t[at(OpFamily::Reduction)] = &Codegen::lowerReduction;
    t[at(OpFamily::ArgReduction)] = &Codegen::lowerArgReduction;
    t[at(OpFamily::Scan)] = &Codegen::lowerScan;
    t[at(OpFamily::Matmul)] = &Codegen::lowerMatmul;
    t[at(OpFamily::Layout)] = &Codegen::lowerLayout;
    t[at(OpFamily::Library)] = &Codegen::lowerLibrary;
    t[at(OpFamily::DataDependent)] = &Codegen::lowerDataDependent;
    t[at(OpFamily::Check)] = &Codegen::lowerOp;   // host code everywhere
    t[at(OpFamily::Control)] = &Codegen::lowerOp; // run() walks loops
    t[at(OpFamily::Call)] = &Codegen::lowerCall;
    return t;
  }

  /// The common lowering of each op: its family's, or for families whose
  /// ops lower differently, the op's own.
  static constexpr PerOp<Lowering> common() {
    std::array<OpEntry<Lowering>, kNumOpFamilies> family{};
    family[at(OpFamily::Elementwise)] = &Codegen::elementwise;
    family[at(OpFamily::Reduction)] = &Codegen::reduce;
    family[at(OpFamily::ArgReduction)] = &Codegen::argReduceCall;
    family[at(OpFamily::Scan)] = &Codegen::scan;
    family[at(OpFamily::Matmul)] = &Codegen::matmul;
    family[at(OpFamily::Check)] = &Codegen::checkSizes;
    family[at(OpFamily::Control)] = &Codegen::loopMarker;
    family[at(OpFamily::Call)] = &Codegen::lowerCall;
    PerOp<Lowering> t{};
    for (size_t i = 0; i < kNumOps; ++i)
      t[i] = family[at(kOpFamilies[i])];
    // Value
    t[at(OpCode::Constant)] = &Codegen::scalarValue;
    t[at(OpCode::SymScalar)] = &Codegen::scalarValue;
    t[at(OpCode::Full)] = &Codegen::fill;
    t[at(OpCode::Arange)] = &Codegen::arange;
    // Layout
    t[at(OpCode::Reshape)] = &Codegen::reshape;
    t[at(OpCode::Permute)] = &Codegen::permute;
    t[at(OpCode::Expand)] = &Codegen::expand;
    t[at(OpCode::Concat)] = &Codegen::concat;
    t[at(OpCode::Slice)] = &Codegen::slice;
    t[at(OpCode::UpdateSlice)] = &Codegen::updateSlice;
    t[at(OpCode::Pad)] = &Codegen::pad;
    // Library
    t[at(OpCode::Conv2d)] = &Codegen::conv2dCall;
    t[at(OpCode::MaxPool2d)] = &Codegen::maxPool2dCall;
    t[at(OpCode::Conv2dWeightGrad)] = &Codegen::conv2dWeightGradCall;
    t[at(OpCode::MaxPool2dGrad)] = &Codegen::maxPool2dGradCall;
    t[at(OpCode::Attention)] = &Codegen::attention;
    t[at(OpCode::IndexSelect)] = &Codegen::indexSelectCall;
    t[at(OpCode::Gather)] = &Codegen::gatherCall;
    t[at(OpCode::Scatter)] = &Codegen::scatterCall;
    t[at(OpCode::IndexAdd)] = &Codegen::indexAdd;
    t[at(OpCode::MaskedScatter)] = &Codegen::maskedScatterCall;
    t[at(OpCode::Topk)] = &Codegen::topkCall;
    t[at(OpCode::Sort)] = &Codegen::sortCall;
    // DataDependent
    t[at(OpCode::Nonzero)] = &Codegen::compactionCall;
    t[at(OpCode::MaskedSelect)] = &Codegen::compactionCall;
    t[at(OpCode::Unique)] = &Codegen::compactionCall;
    t[at(OpCode::Item)] = &Codegen::item;
    return t;
  }

  template <typename Table> static constexpr bool complete(const Table &t) {
    for (const OpEntry<Lowering> &l : t)
      if (!l.set)
        return false;
    return true;
  }
};

bool Codegen::lowerHostOp(const Operation &op) {
  static constexpr auto kFamilyHooks = Lowerings::hooks();
  static_assert(Lowerings::complete(kFamilyHooks),
                "an op family without a hook in Codegen (hooks())");
  return (this->*kFamilyHooks[static_cast<size_t>(opFamily(op.code))].fn)(op);
}

bool Codegen::lowerOp(const Operation &op) {
  static constexpr auto kCommonLowering = Lowerings::common();
  static_assert(Lowerings::complete(kCommonLowering),
                "an op without a common lowering (add it to common())");
  return (this->*kCommonLowering[static_cast<size_t>(op.code)].fn)(op);
}

} // namespace tsl::backend
