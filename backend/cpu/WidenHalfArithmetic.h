#pragma once
/// \file Private to backend/cpu (it includes LLVM): a pass that moves half
/// precision arithmetic back to f32 before the loop vectorizer.

#include <llvm/IR/PassManager.h>

namespace tsl {

/// Rewrites every f16 operation (scalar or vector) of a function as the same
/// operation on f32 operands followed by a rounding to f16: `fmul half a, b`
/// becomes `fptrunc(fmul float (fpext a), (fpext b))`.
///
/// Why: our code computes f16 in f32 and rounds where a value is stored, but
/// InstCombine narrows `fptrunc(op(fpext a, fpext b))` to an f16 operation
/// (exact: f32 carries more than twice f16's precision). Without AVX512-FP16,
/// x86's cost model prices f16 vector operations as scalarized and the loop
/// vectorizer then picks 4 lanes where f32 code gets 16, although the
/// backend lowers them through F16C's full-width conversions: f16 kernels
/// ran about 6x slower than f32. Widening is exact for the operations
/// InstCombine narrows (+ - * / sqrt round once either way; comparisons,
/// min/max, abs, neg, copysign and rounding to integers are exact).
/// Fused multiply-adds and other calls are left alone (their f16 form, which
/// we never emit, rounds differently). A no-op on functions without f16.
///
/// Widening alone does not help: the cost model prices 8- and 16-lane
/// f16<->f32 conversions as scalarized too (LLVM 19; 4 lanes cost 1). With
/// \p hintLoopWidths (for targets with F16C) each innermost loop that
/// converts f16 asks the vectorizer for f32's width. Run before the loop
/// vectorizer with hints, and once more at the end of the pipeline without:
/// InstCombine narrows the vector code again, and x86 scalarizes f16 vector
/// comparisons.
struct WidenHalfArithmeticPass : llvm::PassInfoMixin<WidenHalfArithmeticPass> {
  explicit WidenHalfArithmeticPass(bool hintLoopWidths)
      : hintLoopWidths(hintLoopWidths) {}
  bool hintLoopWidths;
  llvm::PreservedAnalyses run(llvm::Function &f,
                              llvm::FunctionAnalysisManager &fam);
};

} // namespace tsl
