// The GPU's lowering of each op family (DeviceCodegen's overrides of
// Codegen's family hooks) and the per-op tables behind them: the launches
// of the ops of the Library and DataDependent families, which each lower
// differently (an op of those families without an entry fails a
// static_assert), and the per-thread forms that kernels with a thread per
// element run instead of the common lowering.
#include "backend/common/OpFamily.h"
#include "backend/nvptx/DeviceCodegen.h"

namespace tsl::backend {

/// The per-op tables (a nested class: it names DeviceCodegen's members).
struct DeviceCodegen::Lowerings {
  using Lowering = bool (DeviceCodegen::*)(const Operation &);
  static constexpr size_t at(OpCode c) { return static_cast<size_t>(c); }

  /// Host code of each op of the Library and DataDependent families.
  static constexpr PerOp<Lowering> launches() {
    PerOp<Lowering> t{};
    // Library
    t[at(OpCode::Conv2d)] = &DeviceCodegen::deviceConv;
    t[at(OpCode::MaxPool2d)] = &DeviceCodegen::launchPerElementOp;
    t[at(OpCode::Conv2dWeightGrad)] = &DeviceCodegen::launchPerElementOp;
    t[at(OpCode::MaxPool2dGrad)] = &DeviceCodegen::launchPerElementOp;
    t[at(OpCode::Attention)] = &DeviceCodegen::deviceAttention;
    t[at(OpCode::IndexSelect)] = &DeviceCodegen::launchPerIndex;
    t[at(OpCode::Gather)] = &DeviceCodegen::launchPerElementOp;
    t[at(OpCode::Scatter)] = &DeviceCodegen::deviceScatter;
    t[at(OpCode::IndexAdd)] = &DeviceCodegen::launchPerIndex;
    t[at(OpCode::MaskedScatter)] = &DeviceCodegen::launchPerElementOp;
    t[at(OpCode::Topk)] = &DeviceCodegen::launchTopk;
    t[at(OpCode::Sort)] = &DeviceCodegen::deviceSort;
    // DataDependent
    t[at(OpCode::Nonzero)] = &DeviceCodegen::deviceCompaction;
    t[at(OpCode::MaskedSelect)] = &DeviceCodegen::deviceCompaction;
    t[at(OpCode::Unique)] = &DeviceCodegen::deviceUnique;
    t[at(OpCode::Item)] = &DeviceCodegen::lowerOp; // reads back on the host
    return t;
  }

  /// The per-thread form of ops whose common lowering has loops that
  /// depend on each other (or calls a library on host memory); null: the
  /// common lowering.
  static constexpr PerOp<Lowering> bodies() {
    PerOp<Lowering> t{};
    for (size_t i = 0; i < kNumOps; ++i)
      if (kOpFamilies[i] == OpFamily::Reduction)
        t[i] = &DeviceCodegen::deviceReduce;
      else if (kOpFamilies[i] == OpFamily::ArgReduction)
        t[i] = &DeviceCodegen::deviceArgmax;
      else if (kOpFamilies[i] == OpFamily::Matmul)
        t[i] = &DeviceCodegen::deviceMatmul;
    t[at(OpCode::Pad)] = &DeviceCodegen::devicePad;
    t[at(OpCode::MaskedScatter)] = &DeviceCodegen::maskedScatterSerial;
    t[at(OpCode::Conv2d)] = &DeviceCodegen::deviceWindow;
    t[at(OpCode::MaxPool2d)] = &DeviceCodegen::deviceWindow;
    t[at(OpCode::Conv2dWeightGrad)] = &DeviceCodegen::deviceConvWeightGrad;
    t[at(OpCode::MaxPool2dGrad)] = &DeviceCodegen::deviceMaxPoolGrad;
    t[at(OpCode::IndexSelect)] = &DeviceCodegen::deviceIndexSelect;
    t[at(OpCode::Gather)] = &DeviceCodegen::deviceGather;
    t[at(OpCode::IndexAdd)] = &DeviceCodegen::deviceIndexAdd;
    return t;
  }
};

bool DeviceCodegen::launchOwn(const Operation &op) {
  static constexpr auto kLaunches = Lowerings::launches();
  static_assert(coversFamily(kLaunches, OpFamily::Library) &&
                    coversFamily(kLaunches, OpFamily::DataDependent),
                "a library or data-dependent op without a GPU lowering (add "
                "it to DeviceCodegen::Lowerings::launches)");
  Lowerings::Lowering f = kLaunches[static_cast<size_t>(op.code)];
  return f ? (this->*f)(op) : unsupported(opInfo(op.code).name);
}

bool DeviceCodegen::lowerLibrary(const Operation &op) { return launchOwn(op); }

bool DeviceCodegen::lowerDataDependent(const Operation &op) {
  return launchOwn(op);
}

bool DeviceCodegen::kernelBody(const Operation &op) {
  static constexpr auto kBodies = Lowerings::bodies();
  Lowerings::Lowering f = kBodies[static_cast<size_t>(op.code)];
  return f ? (this->*f)(op) : lowerOp(op);
}

bool DeviceCodegen::lowerElementwise(const Operation &op) {
  return launchPerElementOp(op);
}

bool DeviceCodegen::lowerValue(const Operation &op) {
  return launchPerElementOp(op);
}

bool DeviceCodegen::lowerReduction(const Operation &op) {
  size_t first, end;
  if (reducedAxesRun(op, first, end)) // block-tiled
    return launchReduce(op);
  return launchPerElementOp(op);
}

bool DeviceCodegen::lowerArgReduction(const Operation &op) {
  const TensorType &in = fn.type(op.operands[0]);
  const auto &axes = op.intsAttr("axes");
  Value *n = axes.empty() ? product(dims(in))
                          : expr(in.dims[static_cast<size_t>(axes[0])]);
  failMessageIf(b.CreateICmpEQ(n, b.getInt64(0)),
                std::string(opInfo(op.code).name) + " over an empty axis");
  if (axes.empty() ||
      axes[0] == static_cast<int64_t>(in.rank()) - 1) // rows: cooperative
    return launchArgmaxRows(op);
  return launchPerElementOp(op);
}

bool DeviceCodegen::lowerScan(const Operation &op) {
  for (size_t i = 0; i < op.results.size(); ++i)
    allocateResult(op, i);
  return launchPerElement(op, [&](Value *) { // a thread per row
    AxisSizes s = axisSizes(fn.type(op.operands[0]),
                            static_cast<size_t>(op.intAttr("axis")));
    return b.CreateMul(s.outer, s.inner);
  });
}

bool DeviceCodegen::lowerLayout(const Operation &op) {
  if (plan.isView(op)) // a reshape or slice view: an address on the host
    return lowerOp(op);
  if (plan.sharesOperandBuffer(op)) // an in-place update_slice
    return launchUpdateInPlace(op);
  return launchPerElementOp(op);
}

bool DeviceCodegen::launchTopk(const Operation &op) {
  // The library's range check, on the host.
  Value *k = expr(op.exprAttr("k"));
  Value *n = dims(fn.type(op.operands[0])).back();
  failMessageIf(
      b.CreateOr(b.CreateICmpSLT(k, b.getInt64(0)), b.CreateICmpSGT(k, n)),
      "k is out of range for the last axis");
  return launchTopkRows(op);
}

bool DeviceCodegen::launchPerElementOp(const Operation &op) {
  // Host: the results in device memory.
  for (size_t i = 0; i < op.results.size(); ++i)
    allocateResult(op, i);
  return launchPerElement(op);
}

bool DeviceCodegen::launchPerIndex(const Operation &op) {
  for (size_t i = 0; i < op.results.size(); ++i)
    allocateResult(op, i);
  // Every index is checked, too (index_add: x may have no elements).
  return launchPerElement(op, [&](Value *total) {
    return b.CreateBinaryIntrinsic(llvm::Intrinsic::smax, total,
                                   expr(fn.type(op.operands[1]).dims[0]));
  });
}

bool DeviceCodegen::launchPerElement(
    const Operation &op, const std::function<Value *(Value *)> &workItems) {
  // One work item per element of the first result.
  Value *total = product(dims(fn.type(op.results[0])));
  bool vector = vectorizableOnDevice(op);
  if (vector) // four elements per thread
    total = b.CreateSDiv(b.CreateAdd(total, b.getInt64(3)), b.getInt64(4));
  if (workItems)
    total = workItems(total);
  std::vector<ValueId> used(op.results.begin(), op.results.end()), slots;
  for (ValueId o : op.operands)
    leaves(o, used);
  int32_t k = emitDeviceKernel(
      used,
      [&] { return vector ? deviceVectorElementwise(op) : kernelBody(op); },
      slots);
  if (k < 0)
    return false;
  emitLaunch(k, slots, gridFor(total));
  return true;
}

} // namespace tsl::backend
