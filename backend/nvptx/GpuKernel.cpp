// GPU variants: host code from the loop-nest lowering's device mode, device
// kernels through LLVM's NVPTX target (or the host, under the emulator).
#include "backend/nvptx/GpuKernel.h"

#include "backend/cpu/CpuCodegen.h"
#include "backend/cpu/CpuKernel.h"
#include "backend/cpu/HostJit.h"
#include "runtime/CudaDriver.h"
#include "runtime/KernelAbi.h"

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

constexpr int kThreadsPerBlock = 256;
constexpr int64_t kMaxBlocks = 1 << 20; // grid-stride loops cover the rest
constexpr int64_t kEmulatedThreads = 4; // enough to exercise the striding

std::string errorText(llvm::Error err) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << err;
  return os.str();
}

/// libdevice.10.bc of the CUDA toolkit, or "" when there is none.
std::string findLibdevice() {
  std::vector<std::string> roots;
  if (const char *home = std::getenv("CUDA_HOME"); home && *home)
    roots.push_back(home);
  roots.push_back("/usr/local/cuda");
  for (const std::string &r : roots) {
    std::string path = r + "/nvvm/libdevice/libdevice.10.bc";
    if (std::filesystem::exists(path))
      return path;
  }
  return "";
}

/// Replaces the math the lowering calls (LLVM intrinsics or libm names the
/// NVPTX target cannot select) with libdevice's `__nv_*` functions.
/// Returns the functions it needs.
size_t useLibdevice(llvm::Module &m) {
  static const std::map<llvm::Intrinsic::ID, const char *> intrinsics = {
      {llvm::Intrinsic::exp, "exp"},
      {llvm::Intrinsic::log, "log"},
      {llvm::Intrinsic::sin, "sin"},
      {llvm::Intrinsic::cos, "cos"},
      {llvm::Intrinsic::pow, "pow"}};
  static const std::map<std::string, std::string> names = {
      {"tanh", "__nv_tanh"},
      {"tanhf", "__nv_tanhf"},
      {"erf", "__nv_erf"},
      {"erff", "__nv_erff"}};
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
      name = std::string("__nv_") + it->second +
             (call->getType()->isFloatTy() ? "f" : "");
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

/// Adds `tsl_k<n>(ptr buffers, ptr syms)`, a kernel entry computing the
/// global thread index and count, for each device function.
void addKernelEntries(llvm::Module &m, int32_t numKernels) {
  llvm::LLVMContext &ctx = m.getContext();
  llvm::IRBuilder<> b(ctx);
  llvm::Type *ptr = b.getPtrTy(), *i64 = b.getInt64Ty();
  llvm::NamedMDNode *annotations =
      m.getOrInsertNamedMetadata("nvvm.annotations");
  for (int32_t k = 0; k < numKernels; ++k) {
    llvm::Function *body = m.getFunction("tsl_dev_" + std::to_string(k));
    body->setLinkage(llvm::GlobalValue::InternalLinkage);
    body->addFnAttr(llvm::Attribute::AlwaysInline);
    auto *entry = llvm::Function::Create(
        llvm::FunctionType::get(b.getVoidTy(), {ptr, ptr}, false),
        llvm::Function::ExternalLinkage, "tsl_k" + std::to_string(k), m);
    b.SetInsertPoint(llvm::BasicBlock::Create(ctx, "entry", entry));
    auto sreg = [&](llvm::Intrinsic::ID id) {
      return b.CreateZExt(b.CreateIntrinsic(id, {}, {}), i64);
    };
    llvm::Value *tid = sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_tid_x);
    llvm::Value *ctaid = sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_x);
    llvm::Value *ntid = sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_ntid_x);
    llvm::Value *nctaid = sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_nctaid_x);
    b.CreateCall(body, {entry->getArg(0), entry->getArg(1),
                        b.CreateAdd(b.CreateMul(ctaid, ntid), tid),
                        b.CreateMul(nctaid, ntid)});
    b.CreateRetVoid();
    llvm::Metadata *md[] = {llvm::ValueAsMetadata::get(entry),
                            llvm::MDString::get(ctx, "kernel"),
                            llvm::ConstantAsMetadata::get(b.getInt32(1))};
    annotations->addOperand(llvm::MDNode::get(ctx, md));
  }
}

bool compileToPtx(llvm::Module &m, int32_t numKernels, const std::string &arch,
                  std::string &ptx, std::string &error) {
  static std::once_flag once;
  std::call_once(once, [] {
    LLVMInitializeNVPTXTargetInfo();
    LLVMInitializeNVPTXTarget();
    LLVMInitializeNVPTXTargetMC();
    LLVMInitializeNVPTXAsmPrinter();
  });
  if (arch != "sm_80" && arch != "sm_90") {
    error = "unknown GPU architecture '" + arch + "' (sm_80 or sm_90)";
    return false;
  }
  const std::string triple = "nvptx64-nvidia-cuda";
  std::string lookupError;
  const llvm::Target *target =
      llvm::TargetRegistry::lookupTarget(triple, lookupError);
  if (!target) {
    error = "this LLVM has no NVPTX target: " + lookupError;
    return false;
  }
  std::unique_ptr<llvm::TargetMachine> tm(target->createTargetMachine(
      triple, arch, "", llvm::TargetOptions(), std::nullopt, std::nullopt,
      llvm::CodeGenOptLevel::Aggressive));
  m.setTargetTriple(triple);
  m.setDataLayout(tm->createDataLayout());
  addKernelEntries(m, numKernels);
  if (useLibdevice(m) > 0) {
    std::string path = findLibdevice();
    if (path.empty()) {
      error = "not supported on the cuda backend without libdevice: exp, "
              "log, sin, cos, pow, tanh and erf (install the CUDA toolkit or "
              "set CUDA_HOME)";
      return false;
    }
    llvm::SMDiagnostic diag;
    std::unique_ptr<llvm::Module> lib =
        llvm::parseIRFile(path, diag, m.getContext());
    if (!lib) {
      error = "cannot read libdevice '" + path + "'";
      return false;
    }
    lib->setTargetTriple(triple);
    lib->setDataLayout(m.getDataLayout());
    if (llvm::Linker::linkModules(m, std::move(lib),
                                  llvm::Linker::LinkOnlyNeeded)) {
      error = "cannot link libdevice";
      return false;
    }
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
    if (f.isDeclaration() && !f.isIntrinsic() && !f.use_empty()) {
      error = "internal error: device code calls '" + f.getName().str() + "'";
      return false;
    }
  llvm::SmallString<0> buffer;
  llvm::raw_svector_ostream os(buffer);
  llvm::legacy::PassManager pm;
  if (tm->addPassesToEmitFile(pm, os, nullptr,
                              llvm::CodeGenFileType::AssemblyFile)) {
    error = "the NVPTX target cannot emit PTX";
    return false;
  }
  pm.run(m);
  ptx.assign(buffer.begin(), buffer.end());
  return true;
}

/// Host and device modules of \p fn.
struct Lowered {
  std::unique_ptr<llvm::LLVMContext> ctx;
  std::unique_ptr<llvm::Module> host, device;
  int32_t numKernels = 0;
};

bool lowerBoth(const Function &fn, Lowered &out, std::string &error) {
  out.ctx = std::make_unique<llvm::LLVMContext>();
  std::vector<std::string> checks;
  out.host = lowerFunctionWithDevice(fn, *out.ctx, checks, error, out.device,
                                     out.numKernels);
  return out.host != nullptr;
}

/// Device memory and launches on a CUDA device or the emulator, as the
/// context's tsl_rt_device (one per run).
struct RunDevice {
  GpuTarget target = GpuTarget::Emulator;
  rt::CudaDevice *cuda = nullptr;
  const std::vector<rt::CUfunction> *functions = nullptr;
  const std::vector<void (*)(void **, int64_t *, int64_t, int64_t)> *emulated =
      nullptr;
  rt::CUdeviceptr buffersOnDevice = 0, symsOnDevice = 0;
  std::string error;

  const char *fail(std::string message) {
    error = std::move(message);
    return error.c_str();
  }
  const char *check(const char *what, rt::CUresult r) {
    return r == 0 ? nullptr : fail(cuda->driver().describe(what, r));
  }

  static void *alloc(void *self, int64_t bytes, const char **err) {
    auto *d = static_cast<RunDevice *>(self);
    if (d->target == GpuTarget::Emulator) {
      size_t n = (static_cast<size_t>(bytes) + 63) / 64 * 64;
      void *p = std::aligned_alloc(64, n ? n : 64);
      if (!p)
        *err = d->fail("out of memory");
      return p;
    }
    std::string message;
    rt::CUdeviceptr p = d->cuda->allocate(static_cast<size_t>(bytes), message);
    if (!p)
      *err = d->fail(message);
    return reinterpret_cast<void *>(p);
  }
  static void release(void *self, void *p) {
    auto *d = static_cast<RunDevice *>(self);
    if (d->target == GpuTarget::Emulator)
      std::free(p);
    else
      d->cuda->release(reinterpret_cast<rt::CUdeviceptr>(p));
  }
  static const char *read(void *self, void *dst, const void *src,
                          int64_t bytes) {
    auto *d = static_cast<RunDevice *>(self);
    if (d->target == GpuTarget::Emulator) {
      std::memcpy(dst, src, static_cast<size_t>(bytes));
      return nullptr;
    }
    const rt::CudaApi &a = d->cuda->driver().api();
    if (const char *e = d->check(
            "cuMemcpyDtoHAsync",
            a.cuMemcpyDtoHAsync(dst, reinterpret_cast<rt::CUdeviceptr>(src),
                                static_cast<size_t>(bytes), d->cuda->stream())))
      return e;
    return d->check("cuStreamSynchronize",
                    a.cuStreamSynchronize(d->cuda->stream()));
  }
  static const char *launch(void *self, int32_t kernel, int64_t total,
                            void **buffers, int64_t nbuffers, int64_t *syms,
                            int64_t nsyms) {
    auto *d = static_cast<RunDevice *>(self);
    if (total <= 0)
      return nullptr; // nothing to compute
    if (d->target == GpuTarget::Emulator) {
      int64_t threads = std::min(total, kEmulatedThreads);
      for (int64_t t = 0; t < threads; ++t)
        (*d->emulated)[kernel](buffers, syms, t, threads);
      return nullptr;
    }
    const rt::CudaApi &a = d->cuda->driver().api();
    rt::CUstream s = d->cuda->stream();
    size_t bufBytes = static_cast<size_t>(nbuffers) * sizeof(void *);
    size_t symBytes = static_cast<size_t>(nsyms) * sizeof(int64_t);
    std::string message;
    if (!d->buffersOnDevice &&
        !(d->buffersOnDevice = d->cuda->allocate(bufBytes, message)))
      return d->fail(message);
    if (!d->symsOnDevice &&
        !(d->symsOnDevice = d->cuda->allocate(symBytes, message)))
      return d->fail(message);
    if (const char *e = d->check(
            "cuMemcpyHtoDAsync",
            a.cuMemcpyHtoDAsync(d->buffersOnDevice, buffers, bufBytes, s)))
      return e;
    if (const char *e =
            d->check("cuMemcpyHtoDAsync",
                     a.cuMemcpyHtoDAsync(d->symsOnDevice, syms, symBytes, s)))
      return e;
    int64_t blocks = std::min<int64_t>(
        (total + kThreadsPerBlock - 1) / kThreadsPerBlock, kMaxBlocks);
    void *params[] = {&d->buffersOnDevice, &d->symsOnDevice};
    if (const char *e = d->check("cuLaunchKernel",
                                 a.cuLaunchKernel((*d->functions)[kernel],
                                                  static_cast<unsigned>(blocks),
                                                  1, 1, kThreadsPerBlock, 1, 1,
                                                  0, s, params, nullptr)))
      return e;
    // The symbols come back: unbacked sizes and the failure slot.
    if (const char *e =
            d->check("cuMemcpyDtoHAsync",
                     a.cuMemcpyDtoHAsync(syms, d->symsOnDevice, symBytes, s)))
      return e;
    return d->check("cuStreamSynchronize", a.cuStreamSynchronize(s));
  }
};

} // namespace

bool lowerToPtx(const Function &fn, const std::string &arch, std::string &ptx,
                std::string &error) {
  Lowered l;
  if (!lowerBoth(fn, l, error))
    return false;
  return compileToPtx(*l.device, l.numKernels, arch, ptx, error);
}

struct GpuKernel::Impl {
  Function fn;
  GpuTarget target = GpuTarget::Emulator;
  std::unique_ptr<llvm::orc::LLJIT> hostJit, deviceJit;
  int32_t (*entry)(void **, int64_t *, tsl_rt_context *) = nullptr;
  std::shared_ptr<rt::CudaDevice> cuda;
  std::vector<rt::CUfunction> functions;
  std::vector<void (*)(void **, int64_t *, int64_t, int64_t)> emulated;
  int32_t numKernels = 0;
};

GpuKernel::GpuKernel() : impl_(std::make_unique<Impl>()) {}
GpuKernel::~GpuKernel() = default;

int GpuKernel::numKernels() const { return impl_->numKernels; }

std::unique_ptr<GpuKernel>
GpuKernel::compile(const Function &fn, GpuTarget target, std::string &error) {
  std::unique_ptr<GpuKernel> k(new GpuKernel());
  Impl &impl = *k->impl_;
  impl.fn = fn;
  impl.target = target;
  if (target == GpuTarget::Cuda) {
    // The device first: without a driver there is nothing to compile for.
    impl.cuda = rt::CudaDevice::open(0, error);
    if (!impl.cuda)
      return nullptr;
  }
  Lowered l;
  if (!lowerBoth(fn, l, error))
    return nullptr;
  impl.numKernels = l.numKernels;
  if (target == GpuTarget::Cuda) {
    std::string arch = impl.cuda->capability() >= 90 ? "sm_90" : "sm_80";
    std::string ptx;
    if (!compileToPtx(*l.device, l.numKernels, arch, ptx, error))
      return nullptr;
    rt::CUmodule module = nullptr;
    if (!impl.cuda->loadModule(ptx, module, error))
      return nullptr;
    for (int32_t i = 0; i < l.numKernels; ++i) {
      rt::CUfunction f = nullptr;
      std::string name = "tsl_k" + std::to_string(i);
      if (rt::CUresult r = impl.cuda->driver().api().cuModuleGetFunction(
              &f, module, name.c_str());
          r != 0) {
        error = impl.cuda->driver().describe(name.c_str(), r);
        return nullptr;
      }
      impl.functions.push_back(f);
    }
  } else {
    // The emulator: the same device functions, compiled for the host.
    auto deviceCtx = std::make_unique<llvm::LLVMContext>();
    std::string text;
    {
      llvm::raw_string_ostream os(text);
      l.device->print(os, nullptr);
    }
    llvm::SMDiagnostic diag;
    std::unique_ptr<llvm::Module> copy = llvm::parseIR(
        llvm::MemoryBufferRef(text, "tsl_device"), diag, *deviceCtx);
    if (!copy) {
      error = "internal error: cannot copy the device module";
      return nullptr;
    }
    impl.deviceJit =
        createHostJit(std::move(copy), std::move(deviceCtx), error);
    if (!impl.deviceJit)
      return nullptr;
    for (int32_t i = 0; i < l.numKernels; ++i) {
      auto sym = impl.deviceJit->lookup("tsl_dev_" + std::to_string(i));
      if (!sym) {
        error = errorText(sym.takeError());
        return nullptr;
      }
      impl.emulated.push_back(
          sym->toPtr<void (*)(void **, int64_t *, int64_t, int64_t)>());
    }
  }
  // The device module lives in the context the host JIT takes over.
  l.device.reset();
  impl.hostJit = createHostJit(std::move(l.host), std::move(l.ctx), error);
  if (!impl.hostJit)
    return nullptr;
  auto sym = impl.hostJit->lookup(kKernelName);
  if (!sym) {
    error = errorText(sym.takeError());
    return nullptr;
  }
  impl.entry = sym->toPtr<int32_t (*)(void **, int64_t *, tsl_rt_context *)>();
  return k;
}

bool GpuKernel::run(const std::vector<ArgValue> &args,
                    std::vector<Tensor> &outputs, RunError &error) const {
  const Impl &impl = *impl_;
  const Function &fn = impl.fn;
  std::map<std::string, int64_t> values;
  if (!bindArguments(fn, args, values, error))
    return false;
  if (impl.cuda) {
    std::string message;
    if (!impl.cuda->makeCurrent(message)) {
      error.message = message;
      return false;
    }
  }
  RunDevice dev;
  dev.target = impl.target;
  dev.cuda = impl.cuda.get();
  dev.functions = &impl.functions;
  dev.emulated = &impl.emulated;
  tsl_rt_device device{&dev, &RunDevice::alloc, &RunDevice::release,
                       &RunDevice::launch, &RunDevice::read};
  // The arguments, copied to device memory.
  std::vector<void *> buffers(fn.values.size() + 1, nullptr), copies;
  bool ok = true;
  for (size_t i = 0; i < args.size() && ok; ++i) {
    if (fn.params[i].isInt)
      continue;
    const Tensor &t = args[i].tensor;
    const char *err = nullptr;
    void *p = RunDevice::alloc(&dev, static_cast<int64_t>(t.byteSize()), &err);
    if (!p) {
      error.message = err ? err : "out of device memory";
      ok = false;
      break;
    }
    copies.push_back(p);
    buffers[fn.params[i].value] = p;
    if (t.byteSize() == 0)
      continue;
    if (impl.target == GpuTarget::Emulator) {
      std::memcpy(p, t.raw(), t.byteSize());
    } else {
      const rt::CudaApi &a = impl.cuda->driver().api();
      rt::CUresult r =
          a.cuMemcpyHtoDAsync(reinterpret_cast<rt::CUdeviceptr>(p), t.raw(),
                              t.byteSize(), impl.cuda->stream());
      if (r != 0) {
        error.message = impl.cuda->driver().describe("cuMemcpyHtoDAsync", r);
        ok = false;
      }
    }
  }
  std::vector<int64_t> syms(fn.symbols.size() + 1, 0);
  for (size_t i = 0; i < fn.symbols.size(); ++i) {
    auto it = values.find(fn.symbols[i].name);
    if (it != values.end())
      syms[i] = it->second;
  }
  tsl_rt_context *ctx = tsl_rt_context_create();
  tsl_rt_context_set_device(ctx, &device);
  if (ok && impl.entry(buffers.data(), syms.data(), ctx) != 0) {
    describeKernelFailure(fn, ctx, syms, error);
    if (error.message.empty())
      error.message = "the GPU kernel failed";
    ok = false;
  }
  if (ok) {
    outputs.clear();
    for (size_t i = 0; i < fn.symbols.size(); ++i)
      values[fn.symbols[i].name] = syms[i];
    for (ValueId r : fn.results) {
      std::vector<int64_t> shape;
      for (const SymExpr &d : fn.type(r).dims)
        shape.push_back(d.evaluate(values).value_or(0));
      Tensor t = Tensor::zeros(fn.type(r).dtype, shape);
      if (!t.valid()) {
        error.message = "result is too large";
        ok = false;
        break;
      }
      if (t.byteSize()) {
        if (const char *e =
                RunDevice::read(&dev, t.raw(), buffers[r],
                                static_cast<int64_t>(t.byteSize()))) {
          error.message = e;
          ok = false;
          break;
        }
      }
      outputs.push_back(t);
    }
  }
  tsl_rt_context_destroy(ctx);
  for (void *p : copies)
    RunDevice::release(&dev, p);
  if (dev.buffersOnDevice)
    impl.cuda->release(dev.buffersOnDevice);
  if (dev.symsOnDevice)
    impl.cuda->release(dev.symsOnDevice);
  return ok;
}

} // namespace tsl
