#pragma once
/// \file The kernel plan: how a function's ops are grouped into loops before
/// any LLVM IR exists. A pass over the IR (planKernels) decides which values
/// are computed inside their consumer's loop (fusion trees), which permutes
/// a GEMM reads transposed, when each intermediate buffer dies, which runs
/// of ops share one loop over rows (row groups) and whether each kernel (an
/// op lowered on its own, or a row group) becomes its own LLVM function
/// (outlining). Codegen lowers what the plan says;
/// `tslc emit --emit=plan` prints it (printKernelPlan). No LLVM here.

#include "ir/Function.h"

#include <cstddef>
#include <string>
#include <vector>

namespace tsl {

/// Functions with more ops than this are compiled one kernel (an op lowered
/// on its own, with its fused producers, or a row group) per LLVM function,
/// each distinct kernel once: LLVM's optimizer is superlinear on one big
/// function, and the layers of a stack share their kernels. 0: always
/// (measured: even a single encoder layer compiles in half the time).
inline constexpr size_t kOutlineOpsAbove = 0;
/// Fused expression trees are at most this deep: a 50,000-term sum becomes
/// a chain of loops instead of one expression that deep.
inline constexpr unsigned kMaxFusedDepth = 32;
/// The most readers a value one add/sub/mul away from stored values may
/// have and still be recomputed by each instead of stored.
inline constexpr int kMaxRecomputedReaders = 4;
/// Row groups have at most this many lowered ops (bounds a loop body).
inline constexpr size_t kMaxRowGroupOps = 64;
/// With rowGroupsRecompute, no recomputed expression of a row group has
/// more than this many ops (a chain of values each read twice would
/// double at every step); a group that would is not formed.
inline constexpr size_t kMaxRecomputedOps = 64;

/// What a target allows the plan to do (Target::caps()).
struct TargetCaps {
  /// An f32 matmul whose right operand is a transpose of the last two axes,
  /// used only there, reads the untransposed buffer (a GEMM with B^T)
  /// instead of the permute copying it.
  bool transposedGemmOperand = true;
  /// Runs of elementwise ops and last-axis reductions over the same rows
  /// become one loop over the rows (softmax, layer_norm).
  bool rowGroups = true;
  /// Row groups recompute their elementwise intermediates at each use
  /// instead of keeping a row of scratch (a GPU: each block works on its
  /// own row, and recomputing costs less than a trip through memory), and
  /// a lone last-axis reduction is a group too (one block per row).
  bool rowGroupsRecompute = false;
  /// Functions with more than `outlineOpsAbove` ops are lowered one kernel
  /// per LLVM function (Codegen::lowerKernel).
  bool outlining = true;
  size_t outlineOpsAbove = kOutlineOpsAbove;
  /// Each op is its own kernel that host code launches (a GPU): results
  /// live in device memory and a kernel failure reaches the host through
  /// the status slot.
  bool launchesKernels = false;
};

/// A run of ops [begin, end) lowered as one loop over the rows `lead`
/// (tensors [*lead, n]); end == begin when no group starts at an op.
struct RowGroup {
  size_t begin = 0, end = 0; ///< ops [begin, end)
  std::vector<SymExpr> lead; ///< the row dims L
  /// Results of the group's ops that are read only inside it: they live in
  /// one row of scratch instead of a full tensor (with rowGroupsRecompute:
  /// only reductions, one value per row, and the elementwise ones are
  /// recomputed where they are read).
  std::vector<ValueId> scratch;
};

/// The plan of one Function. Vectors indexed by ValueId have one entry per
/// value of the function, by op index one per op. Pointers point into the
/// planned Function's ops: the plan is valid while that Function is alive
/// and unchanged.
struct KernelPlan {
  TargetCaps caps; ///< the capabilities it was planned for
  /// The op producing each value (null for parameters).
  std::vector<const Operation *> producer;
  /// Values not stored: their consumer recomputes them at each index (an
  /// elementwise value used once by an elementwise op or a reduction over
  /// its shape; constants and sizes always).
  std::vector<bool> inlined;
  /// Permutes an f32 matmul reads as B^T (TargetCaps::transposedGemmOperand).
  std::vector<bool> transposedOperand;
  /// Slices that select a contiguous block of their operand (`w[l]`, rows
  /// of a row-major tensor): a view into the operand's buffer, not a copy
  /// (never one a function result is, so results own their buffers).
  std::vector<bool> sliceView;
  /// update_slice ops that write their block into their operand's buffer
  /// instead of copying it: where the operand's buffer is owned (not a
  /// view; a parameter's only when donated, outside loops: a KV cache
  /// appended to), defined in the same loop body as the update
  /// (or both outside every loop), and nothing reads its old content after
  /// the update (no later reader of it or of a view or reshape of it, no
  /// function result). `out[t] = h` in a loop then costs the block, not
  /// the whole tensor.
  std::vector<bool> updateInPlace;
  /// For each value, the donated parameter (Param::donated) whose buffer it
  /// is computed into instead of a fresh one; itself when none. Only
  /// function results of elementwise ops lowered on their own, outside
  /// loops and row groups, where the kernel reads the parameter at the very
  /// index it writes (the same dims, no view) and nothing reads the
  /// parameter's old contents after it: an optimizer's `w - lr * g` writes
  /// into w's buffer. Never on a target whose kernels are launched (GPU).
  std::vector<ValueId> writesInto;
  /// A reshape or a slice view: its result is an address in its operand's
  /// buffer, no computation.
  bool isView(const Operation &op) const {
    return op.code == OpCode::Reshape ||
           (op.code == OpCode::Slice && sliceView[op.results[0]]);
  }
  /// A view or an in-place update: its result lives in its operand's
  /// buffer.
  bool sharesOperandBuffer(const Operation &op) const {
    return isView(op) ||
           (op.code == OpCode::UpdateSlice && updateInPlace[op.results[0]]);
  }
  /// The value whose buffer \p v's is, through reshapes, slice views and
  /// in-place updates (\p v itself when it owns a buffer).
  ValueId aliasRoot(ValueId v) const {
    while (producer[v] && sharesOperandBuffer(*producer[v]))
      v = producer[v]->operands[0];
    return v;
  }
  /// Depth of the fused expression tree computing each value (1: one op).
  std::vector<unsigned> fusedDepth;
  /// For each op, the intermediates whose last use it is: freed after it
  /// (reshape aliases, parameters and results are never freed). A value
  /// read inside a loop body lives until the loop ends unless the body
  /// defines it; at an end_loop, values of its body are freed at the end of
  /// each iteration and the others after the loop. A loop's results share
  /// their buffers with its end_loop's (the carried values).
  std::vector<std::vector<ValueId>> freeAfter;
  /// The row group starting at each op (end == begin when none).
  std::vector<RowGroup> rowGroups;
  /// The last op reading each value (through fused trees), or -1.
  std::vector<int> lastReader;
  /// Whether each kernel (an op lowered on its own, or a row group) is its
  /// own LLVM function (TargetCaps::outlining and outlineOpsAbove).
  bool outlining = false;
  /// Loops (Ops.def: loop, end_loop). For each op, the loop op (index)
  /// whose body holds it, -1 at the top: a loop op is in the body around
  /// it, an end_loop in its own loop's body (it ends every iteration).
  std::vector<int> loopOfOp;
  /// For each value, the loop whose body defines it (-1: outside every
  /// loop, parameters too): a loop's results are in its body, an
  /// end_loop's after it.
  std::vector<int> loopOfValue;
  /// For each loop marker, the op index of its partner.
  std::vector<size_t> partner;
  /// True when loop op \p loop's body holds values of loop \p inner (-1:
  /// the top): \p inner is \p loop or nested in it.
  bool loopHolds(int loop, int inner) const {
    for (; inner >= 0; inner = loopOfOp[inner])
      if (inner == loop)
        return true;
    return loop < 0;
  }

  /// True when \p op is not lowered on its own: its result is computed
  /// inside its consumer (a fused loop, or a GEMM reading B^T).
  bool computedElsewhere(const Operation &op) const {
    return !op.results.empty() &&
           (inlined[op.results[0]] || transposedOperand[op.results[0]]);
  }
  /// Appends the values a fused tree rooted at \p v reads from memory (\p v
  /// itself when it is stored), left to right, repeats included.
  void leaves(ValueId v, std::vector<ValueId> &out) const;
};

/// reduce_sum, reduce_mean, reduce_max, reduce_min.
bool isReductionOp(OpCode c);

/// Plans \p fn for a target with \p caps. Never fails: every function has a
/// plan (the lowering reports ops a target cannot lower).
KernelPlan planKernels(const Function &fn, const TargetCaps &caps);

/// The plan as stable text: a header with the capabilities planned for,
/// then one line per op with value names as the IR printer writes them,
/// saying whether the op is fused into a consumer (which ops), read as B^T
/// by a GEMM, or lowered (with the expression its loop computes and the
/// fused depth), followed by the buffers freed after it (after the row
/// loop, for ops of a row group); row groups (rows and scratch values) are
/// announced before their first op. For example:
///
///     plan @ew gemm-bt=yes row-groups=yes outline-above=0 kernels=no
///       op 0 %0 = constant: fused into op 6
///       ...
///       op 6 %6 = mul: loop mul(relu(add(mul(%x, 1.5), 0.5)), 2.0), depth 4
std::string printKernelPlan(const Function &fn, const KernelPlan &plan);

} // namespace tsl
