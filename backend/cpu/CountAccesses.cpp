// Instrumenting emulated GPU kernels for the emulator's memory counters.
#include "backend/cpu/CountAccesses.h"

#include "runtime/GpuEmulator.h"

#include <llvm/ADT/STLExtras.h>
#include <llvm/Analysis/ValueTracking.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/Module.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/Transforms/Vectorize/LoadStoreVectorizer.h>

namespace tsl {

namespace {

/// N of a kernel named tsl_dev_N, else -1.
int32_t kernelNumber(const llvm::Function &f) {
  llvm::StringRef name = f.getName();
  if (f.isDeclaration() || !name.consume_front("tsl_dev_"))
    return -1;
  int32_t n = -1;
  if (name.getAsInteger(10, n))
    return -1;
  return n;
}

/// A hook that touches only memory the kernel cannot see, so loads and
/// stores still move and merge around it as without it.
llvm::FunctionCallee declareHook(llvm::Module &m, const char *name,
                                 llvm::FunctionType *type) {
  llvm::FunctionCallee hook = m.getOrInsertFunction(name, type);
  if (auto *f = llvm::dyn_cast<llvm::Function>(hook.getCallee())) {
    f->setDoesNotThrow();
    f->setWillReturn();
    f->setMemoryEffects(llvm::MemoryEffects::inaccessibleMemOnly());
    for (unsigned i = 0; i < f->arg_size(); ++i)
      if (f->getArg(i)->getType()->isPointerTy()) {
        f->addParamAttr(i, llvm::Attribute::NoCapture);
        f->addParamAttr(i, llvm::Attribute::ReadNone);
      }
  }
  return hook;
}

/// Optimizes \p m as NVPTX would before instruction selection: the O2
/// pipeline without the loop and SLP vectorizers (a GPU thread has no
/// vector registers), then the load/store vectorizer (NVPTX merges
/// adjacent accesses into 64- and 128-bit ones). Not O3: its non-trivial
/// loop unswitching splits loops on conditions that differ between lanes
/// (a bounds check per column), which NVPTX, aware of divergence, does
/// not; the host's vectorizers would widen a thread's accesses beyond what
/// its kernel does on a GPU.
void optimizeLikeNvptx(llvm::Module &m, llvm::TargetMachine &tm) {
  m.setDataLayout(tm.createDataLayout());
  m.setTargetTriple(tm.getTargetTriple().str());
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PipelineTuningOptions tuning;
  tuning.LoopVectorization = false;
  tuning.SLPVectorization = false;
  llvm::PassBuilder pb(&tm, tuning);
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::ModulePassManager mpm =
      pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O2);
  mpm.addPass(
      llvm::createModuleToFunctionPassAdaptor(llvm::LoadStoreVectorizerPass()));
  mpm.run(m, mam);
}

} // namespace

bool hasDeviceKernels(const llvm::Module &m) {
  for (const llvm::Function &f : m)
    if (kernelNumber(f) >= 0)
      return true;
  return false;
}

void countDeviceAccesses(llvm::Module &m, llvm::TargetMachine &tm) {
  optimizeLikeNvptx(m, tm);
  llvm::LLVMContext &ctx = m.getContext();
  auto *i32 = llvm::Type::getInt32Ty(ctx);
  auto *ptr = llvm::PointerType::getUnqual(ctx);
  auto *voidTy = llvm::Type::getVoidTy(ctx);
  llvm::FunctionCallee access =
      declareHook(m, "tsl_gpu_count_access",
                  llvm::FunctionType::get(voidTy, {ptr, i32, i32}, false));
  llvm::FunctionCallee kernel = declareHook(
      m, "tsl_gpu_count_kernel", llvm::FunctionType::get(voidTy, {i32}, false));
  const llvm::DataLayout &dl = m.getDataLayout();
  int32_t site = 0;
  for (llvm::Function &f : m) {
    if (f.isDeclaration())
      continue;
    int32_t number = kernelNumber(f);
    if (number >= 0) {
      llvm::IRBuilder<> b(&*f.getEntryBlock().getFirstInsertionPt());
      b.CreateCall(kernel, {b.getInt32(number)});
    }
    for (llvm::BasicBlock &bb : f)
      for (llvm::Instruction &i : llvm::make_early_inc_range(bb)) {
        llvm::Value *p;
        llvm::Type *type;
        bool store = false;
        if (auto *ld = llvm::dyn_cast<llvm::LoadInst>(&i)) {
          p = ld->getPointerOperand();
          type = ld->getType();
        } else if (auto *st = llvm::dyn_cast<llvm::StoreInst>(&i)) {
          p = st->getPointerOperand();
          type = st->getValueOperand()->getType();
          store = true;
        } else {
          continue;
        }
        const llvm::Value *base = llvm::getUnderlyingObject(p, 32);
        if (llvm::isa<llvm::AllocaInst>(base) ||
            llvm::isa<llvm::GlobalVariable>(base) ||
            (number >= 0 && llvm::isa<llvm::Argument>(base)))
          continue;
        uint64_t bytes = dl.getTypeStoreSize(type).getFixedValue();
        if (bytes == 0 || bytes > 0xffff)
          continue;
        llvm::IRBuilder<> b(&i);
        b.CreateCall(access, {p,
                              b.getInt32(static_cast<int32_t>(bytes) |
                                         (store ? rt::kCountStore : 0)),
                              b.getInt32(site++)});
      }
  }
}

} // namespace tsl
