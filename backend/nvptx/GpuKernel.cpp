// GPU variants: host code from the loop-nest lowering's device mode, device
// kernels through LLVM's NVPTX target (or the host, under the emulator).
#include "backend/nvptx/GpuKernel.h"

#include "backend/cpu/CpuKernel.h"
#include "backend/cpu/HostJit.h"
#include "backend/nvptx/Libdevice.h"
#include "backend/nvptx/NvptxTarget.h"
#include "runtime/GpuDevice.h"
#include "runtime/KernelAbi.h"
#include "runtime/Variant.h"

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/IntrinsicsNVPTX.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Module.h>
#include <llvm/IRReader/IRReader.h>
#include <llvm/Linker/Linker.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/SourceMgr.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>

namespace tsl {

namespace {

std::string errorText(llvm::Error err) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << err;
  return os.str();
}

/// Replaces the math the lowering calls (LLVM intrinsics or libm names the
/// NVPTX target cannot select) with libdevice's `__nv_*` functions.
/// Returns the functions it needs.
size_t useLibdevice(llvm::Module &m) {
  // libdevice's f32 and f64 names (MathFunctions.def).
  static const std::map<llvm::Intrinsic::ID,
                        std::pair<const char *, const char *>>
      intrinsics = {
#define TSL_MATH_INTRINSIC(Intr, NvF32, NvF64)                                 \
  {llvm::Intrinsic::Intr, {#NvF32, #NvF64}},
#include "backend/common/MathFunctions.def"
      };
  static const std::map<std::string, std::string> names = {
#define TSL_MATH_LIBM(Id, F32, F64, NvF32, NvF64)                              \
  {#F32, #NvF32}, {#F64, #NvF64},
#include "backend/common/MathFunctions.def"
  };
  std::vector<llvm::CallInst *> calls;
  for (llvm::Function &f : m)
    for (llvm::BasicBlock &bb : f)
      for (llvm::Instruction &i : bb)
        if (auto *call = llvm::dyn_cast<llvm::CallInst>(&i))
          if (llvm::Function *callee = call->getCalledFunction()) {
            if (intrinsics.count(callee->getIntrinsicID()) ||
                names.count(callee->getName().str()))
              calls.push_back(call);
          }
  for (llvm::CallInst *call : calls) {
    llvm::Function *callee = call->getCalledFunction();
    std::string name;
    auto it = intrinsics.find(callee->getIntrinsicID());
    if (it != intrinsics.end())
      name =
          call->getType()->isFloatTy() ? it->second.first : it->second.second;
    else
      name = names.at(callee->getName().str());
    llvm::FunctionCallee nv =
        m.getOrInsertFunction(name, callee->getFunctionType());
    llvm::IRBuilder<> b(call);
    std::vector<llvm::Value *> args(call->arg_begin(), call->arg_end());
    llvm::Value *replacement = b.CreateCall(nv, args);
    call->replaceAllUsesWith(replacement);
    call->eraseFromParent();
  }
  return calls.size();
}

/// Replaces f32 llvm.exp2 (which the NVPTX target of LLVM 19 cannot
/// select) with ex2.approx.f32, the hardware's base-2 exponential (2 ulp;
/// -inf gives +0, NaN stays NaN). The fused attention kernel's softmax
/// uses it; the emulator keeps libm's exp2f.
void useNativeExp2(llvm::Module &m) {
  std::vector<llvm::CallInst *> calls;
  for (llvm::Function &f : m)
    for (llvm::BasicBlock &bb : f)
      for (llvm::Instruction &i : bb)
        if (auto *call = llvm::dyn_cast<llvm::CallInst>(&i))
          if (llvm::Function *callee = call->getCalledFunction())
            if (callee->getIntrinsicID() == llvm::Intrinsic::exp2 &&
                call->getType()->isFloatTy())
              calls.push_back(call);
  for (llvm::CallInst *call : calls) {
    llvm::IRBuilder<> b(call);
    llvm::Value *r = b.CreateIntrinsic(llvm::Intrinsic::nvvm_ex2_approx_f, {},
                                       {call->getArgOperand(0)});
    call->replaceAllUsesWith(r);
    call->eraseFromParent();
  }
}

/// The body of tsl_gpu_mma_16816 (its entry block is \p b's position):
/// mma.sync.aligned.m16n8k16.row.col.f32.{f16,bf16} through the NVVM
/// intrinsic of the kind (a constant once inlined, so one side folds away).
void defineMma(llvm::IRBuilder<> &b, llvm::Function &f) {
  llvm::LLVMContext &ctx = f.getContext();
  llvm::Type *i32 = b.getInt32Ty(), *f32 = b.getFloatTy();
  llvm::Type *halves = llvm::FixedVectorType::get(b.getHalfTy(), 2);
  llvm::Value *kind = f.getArg(0), *a = f.getArg(1), *bf = f.getArg(2),
              *acc = f.getArg(3);
  auto *f16 = llvm::BasicBlock::Create(ctx, "f16", &f);
  auto *bf16 = llvm::BasicBlock::Create(ctx, "bf16", &f);
  b.CreateCondBr(b.CreateICmpEQ(kind, b.getInt32(0)), f16, bf16);
  auto emit = [&](llvm::Intrinsic::ID id, llvm::Type *word) {
    std::vector<llvm::Value *> args;
    auto words = [&](llvm::Value *p, unsigned n) {
      for (unsigned i = 0; i < n; ++i)
        args.push_back(b.CreateBitCast(
            b.CreateLoad(i32, b.CreateConstGEP1_32(i32, p, i)), word));
    };
    words(a, 4);
    words(bf, 2);
    for (unsigned i = 0; i < 4; ++i)
      args.push_back(b.CreateLoad(f32, b.CreateConstGEP1_32(f32, acc, i)));
    llvm::Value *d = b.CreateIntrinsic(id, {}, args);
    for (unsigned i = 0; i < 4; ++i)
      b.CreateStore(b.CreateExtractValue(d, i),
                    b.CreateConstGEP1_32(f32, acc, i));
    b.CreateRetVoid();
  };
  b.SetInsertPoint(f16);
  emit(llvm::Intrinsic::nvvm_mma_m16n8k16_row_col_f32_f32, halves);
  b.SetInsertPoint(bf16);
  emit(llvm::Intrinsic::nvvm_mma_m16n8k16_row_col_bf16, i32);
}

/// Defines the device primitives (runtime/DevicePrimitives.def) the
/// lowering declared with NVVM intrinsics, internal and always inlined.
void definePrimitives(llvm::Module &m) {
  llvm::LLVMContext &ctx = m.getContext();
  llvm::IRBuilder<> b(ctx);
  auto define = [&](const char *name) -> llvm::Function * {
    llvm::Function *f = m.getFunction(name);
    if (!f || !f->isDeclaration())
      return nullptr;
    f->setLinkage(llvm::GlobalValue::InternalLinkage);
    f->addFnAttr(llvm::Attribute::AlwaysInline);
    b.SetInsertPoint(llvm::BasicBlock::Create(ctx, "entry", f));
    return f;
  };
  const std::pair<const char *, llvm::Intrinsic::ID> sregs[] = {
      {"tsl_gpu_thread_idx", llvm::Intrinsic::nvvm_read_ptx_sreg_tid_x},
      {"tsl_gpu_block_idx", llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_x},
      {"tsl_gpu_block_dim", llvm::Intrinsic::nvvm_read_ptx_sreg_ntid_x},
      {"tsl_gpu_grid_dim", llvm::Intrinsic::nvvm_read_ptx_sreg_nctaid_x}};
  for (auto [name, id] : sregs)
    if (define(name))
      b.CreateRet(b.CreateIntrinsic(id, {}, {}));
  if (define("tsl_gpu_barrier")) {
    b.CreateIntrinsic(llvm::Intrinsic::nvvm_barrier0, {}, {});
    b.CreateRetVoid();
  }
  const std::pair<const char *, llvm::Intrinsic::ID> shuffles[] = {
      {"tsl_gpu_shfl_xor", llvm::Intrinsic::nvvm_shfl_sync_bfly_i32},
      {"tsl_gpu_shfl_idx", llvm::Intrinsic::nvvm_shfl_sync_idx_i32}};
  for (auto [name, id] : shuffles)
    if (llvm::Function *f = define(name))
      b.CreateRet(b.CreateIntrinsic(id, {},
                                    {b.getInt32(0xffffffff), f->getArg(0),
                                     f->getArg(1), b.getInt32(31)}));
  if (llvm::Function *f = define("tsl_gpu_mma_16816"))
    defineMma(b, *f);
  if (define("tsl_gpu_shared")) {
    // Dynamic shared memory: its size is the launch's.
    auto *smem = new llvm::GlobalVariable(
        m, llvm::ArrayType::get(b.getInt8Ty(), 0), false,
        llvm::GlobalValue::ExternalLinkage, nullptr, "tsl_shared", nullptr,
        llvm::GlobalValue::NotThreadLocal, 3);
    smem->setAlignment(llvm::Align(16));
    b.CreateRet(b.CreateAddrSpaceCast(smem, b.getPtrTy()));
  }
}

/// Adds `tsl_k<n>`, the kernel entry of each device function `tsl_dev_<n>`:
/// it takes the argument block by value (a kernel parameter of
/// "tsl-arg-words" words) and passes its address on.
void addKernelEntries(llvm::Module &m, int32_t numKernels) {
  llvm::LLVMContext &ctx = m.getContext();
  llvm::IRBuilder<> b(ctx);
  llvm::Type *ptr = b.getPtrTy();
  llvm::NamedMDNode *annotations =
      m.getOrInsertNamedMetadata("nvvm.annotations");
  for (int32_t k = 0; k < numKernels; ++k) {
    llvm::Function *body = m.getFunction("tsl_dev_" + std::to_string(k));
    body->setLinkage(llvm::GlobalValue::InternalLinkage);
    body->addFnAttr(llvm::Attribute::AlwaysInline);
    uint64_t words = 1;
    body->getFnAttribute("tsl-arg-words")
        .getValueAsString()
        .getAsInteger(10, words);
    auto *block = llvm::ArrayType::get(b.getInt64Ty(), words);
    auto *entry = llvm::Function::Create(
        llvm::FunctionType::get(b.getVoidTy(), {ptr}, false),
        llvm::Function::ExternalLinkage, "tsl_k" + std::to_string(k), m);
    entry->addParamAttr(0, llvm::Attribute::getWithByValType(ctx, block));
    entry->addParamAttr(0,
                        llvm::Attribute::getWithAlignment(ctx, llvm::Align(8)));
    b.SetInsertPoint(llvm::BasicBlock::Create(ctx, "entry", entry));
    b.CreateCall(body, {entry->getArg(0)});
    b.CreateRetVoid();
    llvm::Metadata *md[] = {llvm::ValueAsMetadata::get(entry),
                            llvm::MDString::get(ctx, "kernel"),
                            llvm::ConstantAsMetadata::get(b.getInt32(1))};
    annotations->addOperand(llvm::MDNode::get(ctx, md));
    // Its launches' most threads per block (DeviceContext::emitLaunch): PTX
    // .maxntid, within which ptxas fits registers x threads in an SM.
    uint64_t threads = 0;
    if (body->getFnAttribute("tsl-max-threads")
            .getValueAsString()
            .getAsInteger(10, threads) ||
        threads == 0)
      continue;
    // And one block per SM is enough (.minnctapersm 1): without it ptxas
    // may spill to fit two blocks of 1,024 threads in 32 registers each.
    // A kernel that needs more says so ("tsl-min-blocks": the GEMM).
    uint64_t minBlocks = 1;
    if (body->getFnAttribute("tsl-min-blocks")
            .getValueAsString()
            .getAsInteger(10, minBlocks))
      minBlocks = 1;
    const std::pair<const char *, uint64_t> bounds[] = {
        {"maxntidx", threads}, {"minctasm", minBlocks}};
    for (auto [key, value] : bounds) {
      llvm::Metadata *md[] = {llvm::ValueAsMetadata::get(entry),
                              llvm::MDString::get(ctx, key),
                              llvm::ConstantAsMetadata::get(
                                  b.getInt32(static_cast<uint32_t>(value)))};
      annotations->addOperand(llvm::MDNode::get(ctx, md));
    }
  }
  definePrimitives(m);
}

Expected<std::string> compileToPtx(llvm::Module &m, int32_t numKernels,
                                   const std::string &arch) {
  static std::once_flag once;
  std::call_once(once, [] {
    LLVMInitializeNVPTXTargetInfo();
    LLVMInitializeNVPTXTarget();
    LLVMInitializeNVPTXTargetMC();
    LLVMInitializeNVPTXAsmPrinter();
  });
  if (arch != "sm_80" && arch != "sm_90")
    return makeError(ErrorKind::InvalidArgument, "unknown GPU architecture '" +
                                                     arch +
                                                     "' (sm_80 or sm_90)");
  const std::string triple = "nvptx64-nvidia-cuda";
  std::string lookupError;
  const llvm::Target *target =
      llvm::TargetRegistry::lookupTarget(triple, lookupError);
  if (!target)
    return makeError(ErrorKind::Unsupported,
                     "this LLVM has no NVPTX target: " + lookupError);
  std::unique_ptr<llvm::TargetMachine> tm(target->createTargetMachine(
      triple, arch, "", llvm::TargetOptions(), std::nullopt, std::nullopt,
      llvm::CodeGenOptLevel::Aggressive));
  m.setTargetTriple(triple);
  m.setDataLayout(tm->createDataLayout());
  addKernelEntries(m, numKernels);
  useNativeExp2(m);
  if (useLibdevice(m) > 0) {
    LibdeviceSearch found = findLibdevice();
    const std::string &path = found.path;
    if (path.empty())
      return makeError(ErrorKind::Unsupported,
                       "not supported on the cuda backend without libdevice: "
                       "exp, log, sin, cos, pow, tanh and erf (" +
                           found.message() + ")");
    llvm::SMDiagnostic diag;
    std::unique_ptr<llvm::Module> lib =
        llvm::parseIRFile(path, diag, m.getContext());
    if (!lib)
      return makeError(ErrorKind::Io, "cannot read libdevice '" + path + "'");
    lib->setTargetTriple(triple);
    lib->setDataLayout(m.getDataLayout());
    if (llvm::Linker::linkModules(m, std::move(lib),
                                  llvm::Linker::LinkOnlyNeeded))
      return makeError(ErrorKind::Internal,
                       "internal error: cannot link libdevice");
  }
  // Everything but the kernel entries is internal, so O3 inlines the
  // device functions and drops the libdevice functions nobody calls.
  for (llvm::Function &f : m)
    if (!f.isDeclaration() && !f.getName().starts_with("tsl_k"))
      f.setLinkage(llvm::GlobalValue::InternalLinkage);
  {
    llvm::LoopAnalysisManager lam;
    llvm::FunctionAnalysisManager fam;
    llvm::CGSCCAnalysisManager cgam;
    llvm::ModuleAnalysisManager mam;
    llvm::PassBuilder pb(tm.get());
    pb.registerModuleAnalyses(mam);
    pb.registerCGSCCAnalyses(cgam);
    pb.registerFunctionAnalyses(fam);
    pb.registerLoopAnalyses(lam);
    pb.crossRegisterProxies(lam, fam, cgam, mam);
    pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3).run(m, mam);
  }
  // Device code calls nothing of the host runtime.
  for (llvm::Function &f : m)
    if (f.isDeclaration() && !f.isIntrinsic() && !f.use_empty())
      return makeError(ErrorKind::Internal,
                       "internal error: device code calls '" +
                           f.getName().str() + "'");
  llvm::SmallString<0> buffer;
  llvm::raw_svector_ostream os(buffer);
  llvm::legacy::PassManager pm;
  if (tm->addPassesToEmitFile(pm, os, nullptr,
                              llvm::CodeGenFileType::AssemblyFile))
    return makeError(ErrorKind::Unsupported,
                     "the NVPTX target cannot emit PTX");
  pm.run(m);
  return std::string(buffer.begin(), buffer.end());
}

/// Host and device modules of \p fn.
struct Lowered {
  /// The function lowered: the caller's, which has no calls (the host code
  /// launches kernels; the pipeline's GPU options keep calls inlined);
  /// failures name its ops.
  Function fn;
  std::unique_ptr<llvm::LLVMContext> ctx;
  std::unique_ptr<llvm::Module> host, device;
  int32_t numKernels = 0;
  std::vector<std::string> checks; ///< of the host matcher
};

Expected<void> lowerBoth(const Function &fn, Lowered &out) {
  if (!fn.callees.empty())
    return makeError(ErrorKind::Internal,
                     "internal error: '" + fn.name +
                         "' has calls; the GPU lowers functions elaborated "
                         "with nvptxTarget().pipelineOptions() (calls "
                         "inlined)");
  out.fn = fn;
  out.ctx = std::make_unique<llvm::LLVMContext>();
  Expected<std::unique_ptr<llvm::Module>> host = lowerFunctionWithDevice(
      out.fn, *out.ctx, out.checks, out.device, out.numKernels);
  if (!host)
    return host.error();
  out.host = std::move(*host);
  return {};
}

} // namespace

Expected<std::string> lowerToPtx(const Function &fn, const std::string &arch) {
  Lowered l;
  if (Expected<void> lowered = lowerBoth(fn, l); !lowered)
    return lowered.error();
  return compileToPtx(*l.device, l.numKernels, arch);
}

namespace {

/// The device code of lowered \p l on \p device: PTX loaded into the CUDA
/// device, or the device functions compiled for the host (emulator).
/// Consumes l.device.
/// The driver's failures (a context, a module the PTX JIT refuses) are
/// device failures: Resource.
Expected<void> buildDeviceCode(Lowered &l, rt::GpuDevice &device,
                               rt::DeviceCode &code) {
  if (rt::CudaDevice *cuda = device.cuda()) {
    std::string arch = cuda->capability() >= 90 ? "sm_90" : "sm_80";
    Expected<std::string> ptx = compileToPtx(*l.device, l.numKernels, arch);
    if (!ptx)
      return ptx.error();
    std::string error;
    if (!cuda->makeCurrent(error))
      return makeError(ErrorKind::Resource, std::move(error));
    rt::CUmodule module = nullptr;
    if (!cuda->loadModule(*ptx, module, error))
      return makeError(ErrorKind::Resource, std::move(error));
    for (int32_t i = 0; i < l.numKernels; ++i) {
      rt::CUfunction f = nullptr;
      std::string name = "tsl_k" + std::to_string(i);
      if (rt::CUresult r = cuda->driver().api().cuModuleGetFunction(
              &f, module, name.c_str());
          r != 0)
        return makeError(ErrorKind::Resource,
                         cuda->driver().describe(name.c_str(), r));
      code.cuda.push_back(f);
    }
  } else {
    // A copy in its own context: the host JIT takes the other one over.
    auto deviceCtx = std::make_unique<llvm::LLVMContext>();
    std::string text;
    {
      llvm::raw_string_ostream os(text);
      l.device->print(os, nullptr);
    }
    llvm::SMDiagnostic diag;
    std::unique_ptr<llvm::Module> copy = llvm::parseIR(
        llvm::MemoryBufferRef(text, "tsl_device"), diag, *deviceCtx);
    if (!copy)
      return makeError(ErrorKind::Internal,
                       "internal error: cannot copy the device module");
    Expected<std::unique_ptr<llvm::orc::LLJIT>> session =
        createHostJit(std::move(copy), std::move(deviceCtx));
    if (!session)
      return session.error();
    std::shared_ptr<llvm::orc::LLJIT> jit = std::move(*session);
    for (int32_t i = 0; i < l.numKernels; ++i) {
      auto sym = jit->lookup("tsl_dev_" + std::to_string(i));
      if (!sym)
        return makeError(ErrorKind::Internal, errorText(sym.takeError()));
      code.emulated.push_back(sym->toPtr<rt::EmulatedKernel>());
    }
    code.keepAlive = jit;
  }
  // The device module lives in the context the host JIT takes over.
  l.device.reset();
  return {};
}

/// Host code of \p l in a JIT session, with its entry points.
struct HostCode {
  std::shared_ptr<llvm::orc::LLJIT> jit;
  rt::KernelFn kernel = nullptr;
  rt::MatchFn match = nullptr;
  rt::ShapesFn shapes = nullptr;
};

Expected<void> buildHostCode(Lowered &l, HostCode &out) {
  Expected<std::unique_ptr<llvm::orc::LLJIT>> session =
      createHostJit(std::move(l.host), std::move(l.ctx));
  if (!session)
    return session.error();
  out.jit = std::move(*session);
  rt::VariantCode entry;
  if (!lookupEntryPoints(*out.jit, kKernelName, kMatchName, kShapesName, entry))
    return makeError(
        ErrorKind::Internal,
        "internal error: the GPU variant's host code has no entry points");
  out.kernel = entry.kernel;
  out.match = entry.match;
  out.shapes = entry.shapes;
  return {};
}

/// Lowers \p fn and builds its device and host code into \p code and
/// \p host; \p lowered keeps the function failures name and \p checks
/// its matcher's check descriptions.
Expected<void> buildBoth(const Function &fn, rt::GpuDevice &device,
                         Function &lowered, std::vector<std::string> &checks,
                         rt::DeviceCode &code, HostCode &host) {
  Lowered l;
  if (Expected<void> ok = lowerBoth(fn, l); !ok)
    return ok.error();
  lowered = l.fn;
  checks = l.checks;
  if (Expected<void> ok = buildDeviceCode(l, device, code); !ok)
    return ok.error();
  return buildHostCode(l, host);
}

} // namespace

Expected<void> compileGpuVariant(const Function &fn,
                                 const std::shared_ptr<rt::GpuDevice> &device,
                                 rt::VariantCode &out) {
  Function lowered;
  std::vector<std::string> checks;
  auto code = std::make_shared<rt::DeviceCode>();
  HostCode host;
  if (Expected<void> ok = buildBoth(fn, *device, lowered, checks, *code, host);
      !ok)
    return ok.error();
  out = rt::VariantCode();
  out.kernel = host.kernel;
  out.match = host.match;
  out.shapes = host.shapes;
  fillVariantMetadata(lowered, checks, out);
  out.device = code;
  out.keepAlive = host.jit;
  return {};
}

struct GpuKernel::Impl {
  Function fn;
  std::shared_ptr<rt::GpuDevice> device;
  rt::DeviceCode code;
  HostCode host;
};

GpuKernel::GpuKernel() : impl_(std::make_unique<Impl>()) {}
GpuKernel::~GpuKernel() = default;

Expected<std::unique_ptr<GpuKernel>> GpuKernel::compile(const Function &fn,
                                                        GpuTarget target) {
  std::unique_ptr<GpuKernel> k(new GpuKernel());
  Impl &impl = *k->impl_;
  // The device first: without a driver there is nothing to compile for.
  std::string error;
  impl.device = target == GpuTarget::Cuda ? rt::GpuDevice::openCuda(0, error)
                                          : rt::GpuDevice::emulator();
  if (!impl.device)
    return makeError(ErrorKind::Unsupported, std::move(error));
  std::vector<std::string> checks; // the matcher's; GpuKernel::run binds itself
  if (Expected<void> ok =
          buildBoth(fn, *impl.device, impl.fn, checks, impl.code, impl.host);
      !ok)
    return ok.error();
  return k;
}

bool GpuKernel::run(const std::vector<ArgValue> &args,
                    std::vector<Tensor> &outputs, RunError &error) const {
  const Impl &impl = *impl_;
  const Function &fn = impl.fn;
  rt::GpuDevice &device = *impl.device;
  std::vector<int64_t> syms;
  if (!bindSymbols(fn, args, syms, error))
    return false;
  rt::GpuDevice::Call call(device, impl.code);
  // The arguments, copied to device memory.
  std::vector<void *> buffers(bufferArrayLength(fn) + 1, nullptr), copies;
  bool ok = true;
  for (size_t i = 0; i < args.size() && ok; ++i) {
    if (fn.params[i].isInt)
      continue;
    const Tensor &t = args[i].tensor;
    void *p = device.allocate(t.byteSize(), error.message);
    ok = p && device.copy(rt::GpuDevice::Copy::ToDevice, p, t.raw(),
                          t.byteSize(), error.message);
    if (p)
      copies.push_back(p);
    buffers[fn.params[i].value] = p;
  }
  tsl_rt_context *ctx = tsl_rt_context_create();
  tsl_rt_context_set_device(ctx, call.abi());
  if (ok && impl.host.kernel(buffers.data(), syms.data(), ctx) != 0) {
    describeKernelFailure(fn, ctx, syms, error);
    ok = false;
  }
  if (ok)
    ok = readResults(
        fn, syms, buffers,
        [&](void *dst, const void *src, size_t bytes, std::string &message) {
          return device.copy(rt::GpuDevice::Copy::ToHost, dst, src, bytes,
                             message);
        },
        outputs, error);
  tsl_rt_context_destroy(ctx);
  for (void *p : copies)
    device.release(p);
  return ok;
}

} // namespace tsl
