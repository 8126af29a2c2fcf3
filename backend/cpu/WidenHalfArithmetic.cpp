// Half precision arithmetic moved back to f32 (WidenHalfArithmetic.h).
#include "backend/cpu/WidenHalfArithmetic.h"

#include <llvm/ADT/DenseMap.h>
#include <llvm/Analysis/LoopInfo.h>
#include <llvm/Analysis/TargetTransformInfo.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/IntrinsicInst.h>
#include <llvm/Transforms/Utils/LoopUtils.h>

#include <vector>

namespace tsl {
namespace {

bool isHalf(const llvm::Value *v) {
  return v->getType()->getScalarType()->isHalfTy();
}

/// Whether f16 intrinsic \p id rounded from f32 equals its f16 form; sets
/// \p exact when its f32 result on f16 values is an f16 value (no rounding).
bool isWidenableIntrinsic(llvm::Intrinsic::ID id, bool &exact) {
  switch (id) {
  case llvm::Intrinsic::sqrt:
    exact = false;
    return true;
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
    exact = true;
    return true;
  default:
    return false;
  }
}

/// Whether \p inst is an f16 operation this pass rewrites; \p exact as
/// above (comparisons have no f16 result and are not exact).
bool isWidenable(const llvm::Instruction &inst, bool &exact) {
  exact = false;
  if (llvm::isa<llvm::FCmpInst>(inst))
    return isHalf(inst.getOperand(0));
  if (!isHalf(&inst))
    return false;
  if (auto *call = llvm::dyn_cast<llvm::IntrinsicInst>(&inst))
    return isWidenableIntrinsic(call->getIntrinsicID(), exact);
  exact = llvm::isa<llvm::SelectInst>(inst) ||
          inst.getOpcode() == llvm::Instruction::FNeg;
  return exact || llvm::isa<llvm::BinaryOperator>(inst);
}

/// \p t with f32 in place of f16 (the same vector shape).
llvm::Type *widened(llvm::Type *t) {
  llvm::Type *f32 = llvm::Type::getFloatTy(t->getContext());
  if (auto *vec = llvm::dyn_cast<llvm::VectorType>(t))
    return llvm::VectorType::get(f32, vec->getElementCount());
  return f32;
}

/// f16 values whose f32 form is known: the rounding of that form is the
/// value, and `fpext` of the value is the form itself.
using ExactForms = llvm::DenseMap<llvm::Value *, llvm::Value *>;

/// Replaces f16 operation \p inst by its f32 form rounded to f16.
void widen(llvm::Instruction &inst, bool exact, ExactForms &forms) {
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
  if (isHalf(&inst)) {
    result = b.CreateFPTrunc(wide, inst.getType());
    if (exact)
      forms[result] = wide;
  }
  inst.replaceAllUsesWith(result);
  inst.eraseFromParent();
}

/// The f32 form of f16 value \p v: known, a constant, or `fpext` of \p v
/// inserted after its definition.
llvm::Value *exactForm(llvm::Value *v, ExactForms &forms) {
  if (llvm::Value *known = forms.lookup(v))
    return known;
  llvm::Type *t = widened(v->getType());
  if (llvm::isa<llvm::Constant>(v)) // folded by the builder
    return llvm::IRBuilder<>(v->getContext()).CreateFPExt(v, t);
  llvm::BasicBlock::iterator at;
  if (auto *def = llvm::dyn_cast<llvm::Instruction>(v))
    at = llvm::isa<llvm::PHINode>(def) ? def->getParent()->getFirstInsertionPt()
                                       : std::next(def->getIterator());
  else
    at = llvm::cast<llvm::Argument>(v)
             ->getParent()
             ->getEntryBlock()
             .getFirstInsertionPt();
  llvm::IRBuilder<> b(at->getParent(), at);
  return forms[v] = b.CreateFPExt(v, t);
}

/// Carries f16 phis in f32 (a reduction's accumulator, narrowed by
/// InstCombine, otherwise converts twice per iteration). Whether any was.
bool widenPhis(llvm::Function &f, ExactForms &forms) {
  std::vector<llvm::PHINode *> phis;
  for (llvm::BasicBlock &bb : f)
    for (llvm::PHINode &phi : bb.phis())
      if (isHalf(&phi))
        phis.push_back(&phi);
  // Every phi first gets its f32 twin (incoming values may be other phis).
  std::vector<llvm::PHINode *> wide;
  std::vector<llvm::Value *> narrow;
  for (llvm::PHINode *phi : phis) {
    wide.push_back(llvm::PHINode::Create(widened(phi->getType()),
                                         phi->getNumIncomingValues(), "",
                                         phi->getIterator()));
    llvm::IRBuilder<> b(phi->getParent(),
                        phi->getParent()->getFirstInsertionPt());
    narrow.push_back(b.CreateFPTrunc(wide.back(), phi->getType()));
    forms[narrow.back()] = forms[phi] = wide.back();
  }
  for (size_t i = 0; i < phis.size(); ++i)
    for (unsigned k = 0; k < phis[i]->getNumIncomingValues(); ++k)
      wide[i]->addIncoming(exactForm(phis[i]->getIncomingValue(k), forms),
                           phis[i]->getIncomingBlock(k));
  for (size_t i = 0; i < phis.size(); ++i) {
    phis[i]->replaceAllUsesWith(narrow[i]);
    forms.erase(phis[i]);
    phis[i]->eraseFromParent();
  }
  return !phis.empty();
}

/// `fpext` of an f16 value whose f32 form is known becomes that form.
void useExactForms(llvm::Function &f, const ExactForms &forms) {
  std::vector<llvm::Instruction *> dead;
  for (llvm::BasicBlock &bb : f)
    for (llvm::Instruction &inst : bb)
      if (auto *ext = llvm::dyn_cast<llvm::FPExtInst>(&inst))
        if (llvm::Value *form = forms.lookup(ext->getOperand(0));
            form && form != ext && form->getType() == ext->getType()) {
          ext->replaceAllUsesWith(form);
          dead.push_back(ext);
        }
  for (llvm::Instruction *inst : dead)
    inst->eraseFromParent();
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
  std::vector<std::pair<llvm::Instruction *, bool>> work;
  for (llvm::BasicBlock &bb : f)
    for (llvm::Instruction &inst : bb)
      if (bool exact; isWidenable(inst, exact))
        work.push_back({&inst, exact});
  ExactForms forms;
  for (auto [inst, exact] : work)
    widen(*inst, exact, forms);
  bool changed = widenPhis(f, forms) || !work.empty();
  useExactForms(f, forms);
  bool hinted = hintLoopWidths && hintHalfLoops(f, fam);
  if (!changed && !hinted)
    return llvm::PreservedAnalyses::all();
  llvm::PreservedAnalyses kept;
  kept.preserveSet<llvm::CFGAnalyses>();
  return kept;
}

} // namespace tsl
