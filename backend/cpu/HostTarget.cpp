// The host target machine and the optimization pipeline (HostTarget.h).
#include "backend/cpu/HostTarget.h"
#include "backend/cpu/WidenHalfArithmetic.h"

#include <llvm/Analysis/TargetLibraryInfo.h>
#include <llvm/MC/MCSubtargetInfo.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/DynamicLibrary.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/TargetParser/SubtargetFeature.h>

#include <cstdlib>
#include <mutex>

namespace tsl {

void initializeLLVM() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    // The vector math the optimizer may call (see optimize()).
    llvm::sys::DynamicLibrary::LoadLibraryPermanently("libmvec.so.1");
  });
}

std::string errorText(llvm::Error err) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << err;
  return os.str();
}

void optimize(llvm::Module &m, llvm::TargetMachine &tm, OptEffort effort) {
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PipelineTuningOptions tuning;
  tuning.LoopVectorization = true;
  tuning.SLPVectorization = true;
  llvm::PassBuilder pb(&tm, tuning);
  // Vectorized exp/log/sin/cos/... from glibc's libmvec.
  llvm::TargetLibraryInfoImpl tlii(tm.getTargetTriple());
  tlii.addVectorizableFunctionsFromVecLib(
      llvm::TargetLibraryInfoImpl::LIBMVEC_X86, tm.getTargetTriple());
  fam.registerPass([&] { return llvm::TargetLibraryAnalysis(tlii); });
  // x86 without AVX512-FP16 converts f16 vectors through f32 (F16C), but
  // its cost model prices them as scalarized (WidenHalfArithmetic.h). Before
  // the vectorizer: f32 arithmetic and loop widths; at the end: f32 again
  // where InstCombine narrowed the vector code.
  // The CPU's features, including those its name implies ($TSL_TARGET_CPU).
  const llvm::MCSubtargetInfo &cpu = *tm.getMCSubtargetInfo();
  if (tm.getTargetTriple().isX86() && !cpu.checkFeatures("+avx512fp16")) {
    bool hint = cpu.checkFeatures("+f16c");
    pb.registerVectorizerStartEPCallback(
        [hint](llvm::FunctionPassManager &fpm, llvm::OptimizationLevel) {
          fpm.addPass(WidenHalfArithmeticPass(hint));
        });
    pb.registerOptimizerLastEPCallback(
        [](llvm::ModulePassManager &mpm, llvm::OptimizationLevel) {
          mpm.addPass(llvm::createModuleToFunctionPassAdaptor(
              WidenHalfArithmeticPass(false)));
        });
  }
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::ModulePassManager mpm =
      effort == OptEffort::None
          ? pb.buildO0DefaultPipeline(llvm::OptimizationLevel::O0)
          : pb.buildPerModuleDefaultPipeline(effort == OptEffort::Full
                                                 ? llvm::OptimizationLevel::O3
                                                 : llvm::OptimizationLevel::O1);
  mpm.run(m, mam);
}

Error llvmError(ErrorKind kind, llvm::Error err, const std::string &prefix) {
  return makeError(kind, prefix + errorText(std::move(err)));
}

Expected<llvm::orc::JITTargetMachineBuilder> targetMachineBuilder() {
  auto jtmb = llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!jtmb)
    return llvmError(ErrorKind::Unsupported, jtmb.takeError(),
                     "cannot target the host CPU: ");
  if (const char *cpu = std::getenv("TSL_TARGET_CPU"); cpu && *cpu) {
    jtmb->setCPU(cpu);
    jtmb->getFeatures() = llvm::SubtargetFeatures();
  }
  return std::move(*jtmb);
}

Expected<std::unique_ptr<llvm::TargetMachine>> targetMachine(bool pic,
                                                             OptEffort effort) {
  Expected<llvm::orc::JITTargetMachineBuilder> jtmb = targetMachineBuilder();
  if (!jtmb)
    return jtmb.error();
  jtmb->setCodeGenOptLevel(
      effort == OptEffort::Full    ? llvm::CodeGenOptLevel::Aggressive
      : effort == OptEffort::Light ? llvm::CodeGenOptLevel::Less
                                   : llvm::CodeGenOptLevel::None);
  // A JIT target machine defaults to the large code model, whose calls
  // fast instruction selection cannot lower: host code with 10,000 calls
  // took 2.5x as long to compile. Position-independent code does not need
  // it (JITLink makes GOT and PLT entries, as for LLJIT's own modules);
  // absolute addresses in JIT memory do.
  if (pic) {
    jtmb->setRelocationModel(llvm::Reloc::PIC_);
    jtmb->setCodeModel(llvm::CodeModel::Small);
  }
  auto tm = jtmb->createTargetMachine();
  if (!tm)
    return llvmError(ErrorKind::Unsupported, tm.takeError(),
                     "cannot target the host CPU: ");
  return std::move(*tm);
}

void prepareAndOptimize(llvm::Module &m, llvm::TargetMachine &tm,
                        OptEffort effort) {
  m.setDataLayout(tm.createDataLayout());
  m.setTargetTriple(tm.getTargetTriple().str());
  for (llvm::Function &f : m)
    if (!f.isDeclaration()) {
      f.addFnAttr("target-cpu", tm.getTargetCPU());
      f.addFnAttr("target-features", tm.getTargetFeatureString());
    }
  optimize(m, tm, effort);
}

} // namespace tsl
