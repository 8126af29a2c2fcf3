// Half precision arithmetic moved back to f32 (WidenHalfArithmetic.h).
#include "backend/cpu/WidenHalfArithmetic.h"

#include <llvm/Analysis/LoopInfo.h>
#include <llvm/Analysis/TargetTransformInfo.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/Transforms/Utils/LoopUtils.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/IntrinsicInst.h>

#include <vector>

namespace tsl {
namespace {

bool isHalf(const llvm::Value *v) {
  return v->getType()->getScalarType()->isHalfTy();
}

/// Intrinsics whose f32 form rounded to f16 equals their f16 form.
bool isWidenableIntrinsic(llvm::Intrinsic::ID id) {
  switch (id) {
  case llvm::Intrinsic::fabs:
  case llvm::Intrinsic::ceil:
  case llvm::Intrinsic::floor:
  case llvm::Intrinsic::nearbyint:
  case llvm::Intrinsic::rint:
  case llvm::Intrinsic::round:
  case llvm::Intrinsic::roundeven:
  case llvm::Intrinsic::trunc:
  case llvm::Intrinsic::minnum:
  case llvm::Intrinsic::maxnum:
  case llvm::Intrinsic::minimum:
  case llvm::Intrinsic::maximum:
  case llvm::Intrinsic::copysign:
  case llvm::Intrinsic::sqrt:
    return true;
  default:
    return false;
  }
}

/// Whether \p inst is an f16 operation this pass rewrites.
bool isWidenable(const llvm::Instruction &inst) {
  if (llvm::isa<llvm::FCmpInst>(inst))
    return isHalf(inst.getOperand(0));
  if (!isHalf(&inst))
    return false;
  if (auto *call = llvm::dyn_cast<llvm::IntrinsicInst>(&inst))
    return isWidenableIntrinsic(call->getIntrinsicID());
  return llvm::isa<llvm::BinaryOperator>(inst) ||
         inst.getOpcode() == llvm::Instruction::FNeg;
}

/// \p t with f32 in place of f16 (the same vector shape).
llvm::Type *widened(llvm::Type *t) {
  llvm::Type *f32 = llvm::Type::getFloatTy(t->getContext());
  if (auto *vec = llvm::dyn_cast<llvm::VectorType>(t))
    return llvm::VectorType::get(f32, vec->getElementCount());
  return f32;
}

void widen(llvm::Instruction &inst) {
  llvm::IRBuilder<> b(&inst);
  std::vector<llvm::Value *> args;
  for (llvm::Value *op : inst.operands())
    if (isHalf(op))
      args.push_back(b.CreateFPExt(op, widened(op->getType())));
    else
      args.push_back(op);
  llvm::Instruction *wide;
  if (auto *call = llvm::dyn_cast<llvm::IntrinsicInst>(&inst)) {
    llvm::Function *decl = llvm::Intrinsic::getDeclaration(
        inst.getModule(), call->getIntrinsicID(), {widened(inst.getType())});
    wide = b.CreateCall(decl, {args.data(), call->arg_size()});
    wide->copyIRFlags(&inst);
  } else {
    wide = inst.clone();
    for (unsigned i = 0; i < args.size(); ++i)
      wide->setOperand(i, args[i]);
    wide->mutateType(llvm::isa<llvm::FCmpInst>(inst) ? inst.getType()
                                                     : widened(inst.getType()));
    b.Insert(wide);
  }
  llvm::Value *result = wide;
  if (isHalf(&inst))
    result = b.CreateFPTrunc(wide, inst.getType());
  inst.replaceAllUsesWith(result);
  inst.eraseFromParent();
}

/// Whether \p l converts between f16 and f32.
bool convertsHalf(const llvm::Loop &l) {
  for (llvm::BasicBlock *bb : l.blocks())
    for (llvm::Instruction &inst : *bb)
      if ((llvm::isa<llvm::FPExtInst>(inst) && isHalf(inst.getOperand(0))) ||
          (llvm::isa<llvm::FPTruncInst>(inst) && isHalf(&inst)))
        return true;
  return false;
}

/// Asks the vectorizer for f32's width (one register of f32 lanes) in every
/// innermost loop that converts f16; it still checks legality. Loops that
/// already carry hints keep them. Whether any loop was hinted.
bool hintHalfLoops(llvm::Function &f, llvm::FunctionAnalysisManager &fam) {
  auto &tti = fam.getResult<llvm::TargetIRAnalysis>(f);
  auto &loops = fam.getResult<llvm::LoopAnalysis>(f);
  uint64_t bits =
      tti.getRegisterBitWidth(llvm::TargetTransformInfo::RGK_FixedWidthVector)
          .getFixedValue();
  if (bits < 128)
    return false;
  llvm::LLVMContext &ctx = f.getContext();
  auto *i32 = llvm::Type::getInt32Ty(ctx);
  bool any = false;
  for (llvm::Loop *l : loops.getLoopsInPreorder()) {
    if (!l->isInnermost() || !convertsHalf(*l) ||
        llvm::findOptionMDForLoop(l, "llvm.loop.vectorize.width") ||
        llvm::findOptionMDForLoop(l, "llvm.loop.isvectorized"))
      continue;
    // The loop's other properties (mustprogress, ...) stay.
    std::vector<llvm::Metadata *> ops = {nullptr};
    if (llvm::MDNode *old = l->getLoopID())
      ops.insert(ops.end(), old->op_begin() + 1, old->op_end());
    llvm::Metadata *width[] = {
        llvm::MDString::get(ctx, "llvm.loop.vectorize.width"),
        llvm::ConstantAsMetadata::get(llvm::ConstantInt::get(i32, bits / 32))};
    ops.push_back(llvm::MDNode::get(ctx, width));
    llvm::MDNode *id = llvm::MDNode::getDistinct(ctx, ops);
    id->replaceOperandWith(0, id);
    l->setLoopID(id);
    any = true;
  }
  return any;
}

} // namespace

llvm::PreservedAnalyses
WidenHalfArithmeticPass::run(llvm::Function &f,
                             llvm::FunctionAnalysisManager &fam) {
  std::vector<llvm::Instruction *> work;
  for (llvm::BasicBlock &bb : f)
    for (llvm::Instruction &inst : bb)
      if (isWidenable(inst))
        work.push_back(&inst);
  for (llvm::Instruction *inst : work)
    widen(*inst);
  bool hinted = hintLoopWidths && hintHalfLoops(f, fam);
  if (work.empty() && !hinted)
    return llvm::PreservedAnalyses::all();
  llvm::PreservedAnalyses kept;
  kept.preserveSet<llvm::CFGAnalyses>();
  return kept;
}

} // namespace tsl
