// The kernel plan (backend/common/KernelPlan.h) on IR text: fusion trees,
// GEMM operands read as B^T, buffer lifetimes, row groups, outlined runs,
// the differences between CPU and GPU capabilities, and the printed form.
#include "backend/common/KernelPlan.h"
#include "ir/IrText.h"

#include <gtest/gtest.h>

#include <string>

using namespace tsl;

namespace {

/// The one function of IR \p text.
Function parse(const std::string &text) {
  Module m;
  std::string error;
  EXPECT_TRUE(parseModule(text, m, error)) << error << "\n" << text;
  EXPECT_EQ(m.functions.size(), 1u);
  return m.functions.empty() ? Function() : m.functions[0];
}

/// What NvptxTarget allows (backend/nvptx is not linked here).
TargetCaps gpuCaps() {
  TargetCaps caps;
  caps.transposedGemmOperand = false;
  caps.rowGroups = false;
  caps.outlining = false;
  caps.launchesKernels = true;
  return caps;
}

const char *kElementwise = R"(func @ew(%x: f32[N]) -> (f32[N]) {
  symbol N: dynamic
  %0 = constant() {dtype = f32, value = 1.5} : f32[]
  %1 = mul(%x, %0) : f32[N]
  %2 = constant() {dtype = f32, value = 0.5} : f32[]
  %3 = add(%1, %2) : f32[N]
  %4 = relu(%3) : f32[N]
  %5 = constant() {dtype = f32, value = 2.0} : f32[]
  %6 = mul(%4, %5) : f32[N]
  return %6
}
)";

TEST(KernelPlan, ElementwiseChainIsOneFusedLoop) {
  Function fn = parse(kElementwise);
  KernelPlan plan = planKernels(fn, TargetCaps());
  // Values: %x is 0, %0..%6 are 1..7.
  ASSERT_EQ(plan.inlined.size(), 8u);
  EXPECT_FALSE(plan.inlined[0]);
  for (ValueId v = 1; v <= 6; ++v)
    EXPECT_TRUE(plan.inlined[v]) << v;
  EXPECT_FALSE(plan.inlined[7]); // the result is stored
  EXPECT_EQ(plan.fusedDepth[7], 4u);
  EXPECT_EQ(plan.producer[0], nullptr);
  EXPECT_EQ(plan.producer[7], &fn.ops[6]);
  for (size_t i = 0; i + 1 < fn.ops.size(); ++i)
    EXPECT_TRUE(plan.computedElsewhere(fn.ops[i])) << i;
  EXPECT_FALSE(plan.computedElsewhere(fn.ops[6]));
  std::vector<ValueId> read;
  plan.leaves(7, read);
  EXPECT_EQ(read, std::vector<ValueId>{7});
  read.clear();
  plan.leaves(fn.ops[6].operands[0], read); // relu(...): reads %x once
  EXPECT_EQ(read, std::vector<ValueId>{0});
  for (const auto &frees : plan.freeAfter)
    EXPECT_TRUE(frees.empty());
  for (const RowGroup &g : plan.rowGroups)
    EXPECT_EQ(g.end, g.begin);
  EXPECT_TRUE(plan.outlining); // kOutlineOpsAbove is 0 on the CPU
}

TEST(KernelPlan, PrintsOneLinePerOp) {
  Function fn = parse(kElementwise);
  EXPECT_EQ(printKernelPlan(fn, planKernels(fn, TargetCaps())),
            "plan @ew gemm-bt=yes row-groups=yes outline-above=0 "
            "kernels=no\n"
            "  op 0 %0 = constant: fused into op 6\n"
            "  op 1 %1 = mul: fused into op 6\n"
            "  op 2 %2 = constant: fused into op 6\n"
            "  op 3 %3 = add: fused into op 6\n"
            "  op 4 %4 = relu: fused into op 6\n"
            "  op 5 %5 = constant: fused into op 6\n"
            "  op 6 %6 = mul: loop mul(relu(add(mul(%x, 1.5), 0.5)), 2.0), "
            "depth 4\n");
  std::string gpu = printKernelPlan(fn, planKernels(fn, gpuCaps()));
  EXPECT_EQ(gpu.substr(0, gpu.find('\n')),
            "plan @ew gemm-bt=no row-groups=no outline=no kernels=yes");
}

TEST(KernelPlan, FusedTreesStayShallow) {
  // A chain of 40 adds: a stored value at most every kMaxFusedDepth ops.
  std::string text = "func @sum(%x: f32[N]) -> (f32[N]) {\n  symbol N: "
                     "dynamic\n  %0 = add(%x, %x) : f32[N]\n";
  for (int i = 1; i < 40; ++i)
    text += "  %" + std::to_string(i) + " = add(%" + std::to_string(i - 1) +
            ", %x) : f32[N]\n";
  text += "  return %39\n}\n";
  Function fn = parse(text);
  KernelPlan plan = planKernels(fn, TargetCaps());
  int stored = 0;
  for (ValueId v = 1; v < fn.values.size(); ++v) {
    EXPECT_LE(plan.fusedDepth[v], kMaxFusedDepth);
    stored += !plan.inlined[v];
  }
  EXPECT_EQ(stored, 2); // %31 (depth 32) and the result
  EXPECT_FALSE(plan.inlined[32]);
  EXPECT_EQ(plan.fusedDepth[32], kMaxFusedDepth);
  EXPECT_EQ(plan.fusedDepth[40], 8u);
  EXPECT_EQ(plan.freeAfter[39], std::vector<ValueId>{32});
}

const char *kTransposed =
    R"(func @bt(%a: f32[M, K], %b: f32[16, K]) -> (f32[M, 16]) {
  symbol M: dynamic
  symbol K: dynamic
  %0 = permute(%b) {perm = [1, 0]} : f32[K, 16]
  %1 = matmul(%a, %0) : f32[M, 16]
  return %1
}
)";

TEST(KernelPlan, TransposedGemmOperandOnlyWhereAllowed) {
  Function fn = parse(kTransposed);
  ValueId perm = fn.ops[0].results[0];
  KernelPlan cpu = planKernels(fn, TargetCaps());
  EXPECT_TRUE(cpu.transposedOperand[perm]);
  EXPECT_TRUE(cpu.computedElsewhere(fn.ops[0]));
  EXPECT_TRUE(cpu.freeAfter[1].empty()); // the permute never had a buffer
  KernelPlan gpu = planKernels(fn, gpuCaps());
  EXPECT_FALSE(gpu.transposedOperand[perm]);
  EXPECT_FALSE(gpu.computedElsewhere(fn.ops[0]));
  EXPECT_EQ(gpu.freeAfter[1], std::vector<ValueId>{perm});
  EXPECT_NE(printKernelPlan(fn, cpu).find("op 0 %0 = permute: read as B^T by "
                                          "op 1\n  op 1 %1 = matmul: "
                                          "matmul(%a, %b^T)\n"),
            std::string::npos)
      << printKernelPlan(fn, cpu);
}

const char *kSoftmax =
    R"(func @softmax(%x: f32[B, S, 256]) -> (f32[B, S, 256]) {
  symbol B: dynamic
  symbol S: dynamic
  %0 = reduce_max(%x) {axes = [2], keepdim = true} : f32[B, S, 1]
  %1 = sub(%x, %0) : f32[B, S, 256]
  %2 = exp(%1) : f32[B, S, 256]
  %3 = reduce_sum(%2) {axes = [2], keepdim = true} : f32[B, S, 1]
  %4 = div(%2, %3) : f32[B, S, 256]
  return %4
}
)";

TEST(KernelPlan, SoftmaxIsOneRowGroup) {
  Function fn = parse(kSoftmax);
  KernelPlan plan = planKernels(fn, TargetCaps());
  const RowGroup &g = plan.rowGroups[0];
  EXPECT_EQ(g.begin, 0u);
  EXPECT_EQ(g.end, 5u);
  ASSERT_EQ(g.lead.size(), 2u);
  EXPECT_EQ(g.lead[0].str(), "B");
  EXPECT_EQ(g.lead[1].str(), "S");
  // The row max, exp(x - max) and the row sum; not the result.
  EXPECT_EQ(g.scratch, (std::vector<ValueId>{1, 3, 4}));
  EXPECT_TRUE(plan.inlined[2]); // x - max, inside exp's loop
  EXPECT_EQ(plan.lastReader[3], 4);
  for (size_t i = 1; i < fn.ops.size(); ++i)
    EXPECT_EQ(plan.rowGroups[i].end, plan.rowGroups[i].begin);
  // No row groups on the GPU; on the CPU also when the function is lowered
  // as one LLVM function (the row group is then a loop inside it).
  KernelPlan gpu = planKernels(fn, gpuCaps());
  for (const RowGroup &r : gpu.rowGroups)
    EXPECT_EQ(r.end, r.begin);
  TargetCaps oneFunction;
  oneFunction.outlineOpsAbove = SIZE_MAX;
  KernelPlan whole = planKernels(fn, oneFunction);
  EXPECT_FALSE(whole.outlining);
  EXPECT_EQ(whole.rowGroups[0].end, plan.rowGroups[0].end);
}

TEST(KernelPlan, FreesAfterLastReaderNeverParamsResultsOrAliases) {
  Function fn = parse(R"(func @f(%x: f32[N, 8], %w: f32[8, 8]) -> (f32[8, N]) {
  symbol N: dynamic
  %0 = matmul(%x, %w) : f32[N, 8]
  %1 = matmul(%0, %w) : f32[N, 8]
  %2 = reshape(%1) {shape = [N, 8]} : f32[N, 8]
  %3 = exp(%2) : f32[N, 8]
  %4 = matmul(%3, %w) : f32[N, 8]
  %5 = reshape(%4) {shape = [8, N]} : f32[8, N]
  return %5
}
)");
  KernelPlan plan = planKernels(fn, TargetCaps());
  // %0 (value 2) dies after op 1; %1 (3) after op 3, which reads it through
  // its alias %2; %3 (5) after op 4; %4 (6) is the result's buffer.
  EXPECT_EQ(plan.freeAfter[1], std::vector<ValueId>{2});
  EXPECT_TRUE(plan.freeAfter[2].empty());
  EXPECT_EQ(plan.freeAfter[3], std::vector<ValueId>{3});
  EXPECT_EQ(plan.freeAfter[4], std::vector<ValueId>{5});
  EXPECT_TRUE(plan.freeAfter[5].empty());
}

TEST(KernelPlan, OutliningFollowsTheThreshold) {
  // Every function is lowered one kernel per LLVM function on the CPU by
  // default; a threshold keeps smaller ones whole; the GPU never outlines.
  Function fn = parse(kElementwise);
  EXPECT_TRUE(planKernels(fn, TargetCaps()).outlining);
  TargetCaps caps;
  caps.outlineOpsAbove = fn.ops.size();
  EXPECT_FALSE(planKernels(fn, caps).outlining);
  caps.outlineOpsAbove = fn.ops.size() - 1;
  EXPECT_TRUE(planKernels(fn, caps).outlining);
  EXPECT_FALSE(planKernels(fn, gpuCaps()).outlining);
}

} // namespace
