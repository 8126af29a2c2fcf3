// Optimizing and loading generated kernels with ORC LLJIT, and calling them.
#include "backend/cpu/CpuKernel.h"
#include "support/SizeLimits.h"

#include <algorithm>

#include "backend/common/KernelOrigins.h"
#include "backend/cpu/CountAccesses.h"
#include "backend/cpu/CpuTarget.h"
#include "backend/cpu/HostJit.h"
#include "backend/cpu/HostTarget.h"
#include "backend/cpu/ObjectCompiler.h"
#include "backend/cpu/PerfMap.h"
#include "runtime/GpuCounters.h"
#include "runtime/GpuEmulator.h"
#include "runtime/KernelAbi.h"
#include "runtime/Manifest.h"
#include "runtime/Variant.h"

#include <llvm/ADT/SmallString.h>
#include <llvm/Analysis/TargetLibraryInfo.h>
#include <llvm/Config/llvm-config.h>
#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Module.h>
#include <llvm/Linker/Linker.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/DynamicLibrary.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/TargetParser/SubtargetFeature.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <sys/wait.h>
#include <unistd.h>

namespace tsl {

namespace {

using KernelFn = int32_t (*)(void **, int64_t *, tsl_rt_context *);

} // namespace

Expected<std::string> lowerToLLVMText(const Function &fn) {
  llvm::LLVMContext ctx;
  std::vector<std::string> checks;
  Expected<std::unique_ptr<llvm::Module>> m = lowerFunction(fn, ctx, checks);
  if (!m)
    return m.error();
  std::string text;
  llvm::raw_string_ostream os(text);
  (*m)->print(os, nullptr);
  os.flush();
  return text;
}

std::string hostTargetId() {
  initializeLLVM();
  Expected<llvm::orc::JITTargetMachineBuilder> jtmb = targetMachineBuilder();
  if (!jtmb)
    return "unknown-host";
  std::string id = jtmb->getTargetTriple().str() + " " + jtmb->getCPU();
  for (const std::string &f : jtmb->getFeatures().getFeatures())
    id += " " + f;
  return id + " llvm " LLVM_VERSION_STRING;
}

Expected<std::string> lowerToAssembly(const Function &fn) {
  initializeLLVM();
  llvm::LLVMContext ctx;
  std::vector<std::string> checks;
  Expected<std::unique_ptr<llvm::Module>> m = lowerFunction(fn, ctx, checks);
  if (!m)
    return m.error();
  Expected<std::unique_ptr<llvm::TargetMachine>> machine = targetMachine(false);
  if (!machine)
    return machine.error();
  prepareAndOptimize(**m, **machine);
  llvm::SmallString<0> buffer;
  llvm::raw_svector_ostream os(buffer);
  llvm::legacy::PassManager pm;
  if ((*machine)->addPassesToEmitFile(pm, os, nullptr,
                                      llvm::CodeGenFileType::AssemblyFile))
    return makeError(ErrorKind::Unsupported,
                     "the host target cannot emit assembly");
  pm.run(**m);
  return std::string(buffer.str());
}

struct CpuKernel::Impl {
  std::unique_ptr<llvm::orc::LLJIT> jit;
  KernelFn entry = nullptr;
  rt::MatchFn match = nullptr;
  rt::ShapesFn shapes = nullptr;
  std::vector<std::string> checks;
  Function fn;
};

CpuKernel::CpuKernel() : impl_(std::make_unique<Impl>()) {}
CpuKernel::~CpuKernel() = default;

namespace {

/// The builder of every host JIT session (with TSL_PERF_MAP, one whose
/// linker writes the perf map: backend/cpu/PerfMap.h).
llvm::orc::LLJITBuilder hostJitBuilder() {
  llvm::orc::LLJITBuilder builder;
  if (perfMapEnabled())
    writePerfMap(builder);
  return builder;
}

/// A new ORC session for the host whose runtime symbols (KernelAbi.h,
/// libm) resolve to this process's definitions.
/// A session that cannot be made is out of (executable) memory: Resource.
Expected<std::unique_ptr<llvm::orc::LLJIT>>
newHostSession(llvm::orc::JITTargetMachineBuilder jtmb) {
  auto jit =
      hostJitBuilder().setJITTargetMachineBuilder(std::move(jtmb)).create();
  if (!jit)
    return llvmError(ErrorKind::Resource, jit.takeError());
  // The runtime's C ABI and libm, resolved to this process's definitions.
  llvm::orc::SymbolMap symbols;
  auto add = [&](const char *name, void *address) {
    symbols[(*jit)->mangleAndIntern(name)] = {
        llvm::orc::ExecutorAddr::fromPtr(address),
        llvm::JITSymbolFlags::Exported};
  };
  // The libm functions the lowering calls (MathFunctions.def).
#define TSL_MATH_LIBM(Id, F32, F64, NvF32, NvF64)                              \
  add(#F32, reinterpret_cast<void *>(static_cast<float (*)(float)>(&::F32)));  \
  add(#F64, reinterpret_cast<void *>(static_cast<double (*)(double)>(&::F64)));
#include "backend/common/MathFunctions.def"
  size_t count = 0;
  const tsl_rt_entry_point *entries = tsl_rt_entry_points(&count);
  for (size_t i = 0; i < count; ++i)
    add(entries[i].name, entries[i].address);
  // GPU kernels run by the emulator reach threads, barriers and shared
  // memory through these.
  const rt::EmulatedPrimitive *primitives = rt::emulatedPrimitives(&count);
  for (size_t i = 0; i < count; ++i)
    add(primitives[i].name, primitives[i].address);
  llvm::orc::JITDylib &lib = (*jit)->getMainJITDylib();
  if (auto err = lib.define(llvm::orc::absoluteSymbols(std::move(symbols))))
    return llvmError(ErrorKind::Internal, std::move(err));
  auto generator =
      llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(
          (*jit)->getDataLayout().getGlobalPrefix());
  if (!generator)
    return llvmError(ErrorKind::Internal, generator.takeError());
  lib.addGenerator(std::move(*generator));
  return std::move(*jit);
}

} // namespace

Expected<std::unique_ptr<llvm::orc::LLJIT>>
createHostJit(std::unique_ptr<llvm::Module> m,
              std::unique_ptr<llvm::LLVMContext> ctx) {
  initializeLLVM();
  Expected<llvm::orc::JITTargetMachineBuilder> jtmb = targetMachineBuilder();
  if (!jtmb)
    return jtmb.error();
  jtmb->setCodeGenOptLevel(llvm::CodeGenOptLevel::Aggressive);
  auto tm = jtmb->createTargetMachine();
  if (!tm)
    return llvmError(ErrorKind::Unsupported, tm.takeError(),
                     "cannot target the host CPU: ");
  // The emulator's memory counters: device kernels count their accesses.
  if (rt::gpuCountersEnabled() && hasDeviceKernels(*m))
    countDeviceAccesses(*m, **tm);
  prepareAndOptimize(*m, **tm);
  Expected<std::unique_ptr<llvm::orc::LLJIT>> jit =
      newHostSession(std::move(*jtmb));
  if (!jit)
    return jit.error();
  if (auto err = (*jit)->addIRModule(
          llvm::orc::ThreadSafeModule(std::move(m), std::move(ctx))))
    return llvmError(ErrorKind::Internal, std::move(err));
  return jit;
}

/// Loads \p objects into a new host session.
Expected<std::unique_ptr<llvm::orc::LLJIT>>
loadHostObjects(const std::vector<std::string> &objects) {
  Expected<llvm::orc::JITTargetMachineBuilder> jtmb = targetMachineBuilder();
  if (!jtmb)
    return jtmb.error();
  Expected<std::unique_ptr<llvm::orc::LLJIT>> jit =
      newHostSession(std::move(*jtmb));
  if (!jit)
    return jit.error();
  for (const std::string &object : objects)
    if (auto err = (*jit)->addObjectFile(
            llvm::MemoryBuffer::getMemBufferCopy(object, "tsl-kernel")))
      return llvmError(ErrorKind::Internal, std::move(err));
  return jit;
}

Expected<std::unique_ptr<CpuKernel>>
CpuKernel::compile(const Function &fn, size_t outlineOpsAbove,
                   KernelObjectCache *cache) {
  initializeLLVM();
  auto ctx = std::make_unique<llvm::LLVMContext>();
  std::vector<std::string> checks;
  LoweringOptions options;
  options.outlineOpsAbove = outlineOpsAbove;
  Expected<std::unique_ptr<llvm::Module>> m =
      lowerFunction(fn, *ctx, checks, options);
  if (!m)
    return m.error();
  std::vector<std::string> objects;
  // Cached kernel objects are position independent, as the runtime's JIT
  // compiles them (compileObject), so that both can share them.
  if (Expected<void> compiled =
          compileToObjects(std::move(*m), cache != nullptr, cache, objects);
      !compiled)
    return compiled.error();
  Expected<std::unique_ptr<llvm::orc::LLJIT>> loaded = loadHostObjects(objects);
  if (!loaded)
    return loaded.error();
  std::unique_ptr<llvm::orc::LLJIT> session = std::move(*loaded);
  rt::VariantCode entry;
  if (!lookupEntryPoints(*session, kKernelName, kMatchName, kShapesName, entry))
    return makeError(
        ErrorKind::Internal,
        "internal error: the kernel, matcher or shape function is missing");
  std::unique_ptr<CpuKernel> kernel(new CpuKernel());
  kernel->impl_->match = entry.match;
  kernel->impl_->shapes = entry.shapes;
  kernel->impl_->checks = std::move(checks);
  kernel->impl_->entry = entry.kernel;
  kernel->impl_->jit = std::move(session);
  kernel->impl_->fn = fn;
  return kernel;
}

/// Fills the metadata of a variant (everything but its entry points).
void fillVariantMetadata(const Function &fn,
                         const std::vector<std::string> &checks,
                         rt::VariantCode &out) {
  out.numValues = bufferArrayLength(fn);
  out.numSymbols = fn.symbols.size();
  out.checks = checks;
  out.specialized = fn.specialized;
  size_t tensorIndex = 0;
  for (const Param &p : fn.params) {
    rt::ParamInfo info;
    info.name = p.name;
    info.isInt = p.isInt;
    if (!p.isInt) {
      info.dtype = static_cast<int32_t>(fn.type(p.value).dtype);
      info.rank = static_cast<int32_t>(fn.type(p.value).rank());
      info.value = static_cast<int32_t>(p.value);
      if (tensorIndex < fn.axisNames.size())
        info.axisNames = fn.axisNames[tensorIndex];
      ++tensorIndex;
    }
    out.params.push_back(info);
  }
  for (ValueId r : fn.results)
    out.results.push_back({static_cast<int32_t>(fn.type(r).dtype),
                           static_cast<int32_t>(fn.type(r).rank()),
                           static_cast<int32_t>(r)});
  // Indexed as failures name ops: the function's, then each callee's.
  for (size_t i = 0; const Operation *at = opAtFailureIndex(fn, i); ++i) {
    const Operation &op = *at;
    rt::OpInfoRt info;
    info.location = op.loc.str();
    if (op.code == OpCode::Assert) {
      info.what = "runtime check failed: " + op.condAttr("cond").str();
      if (!op.strAttr("message").empty())
        info.what += ": " + op.strAttr("message");
    } else {
      info.what = opInfo(op.code).name;
    }
    out.ops.push_back(info);
  }
}

bool lookupEntryPoints(llvm::orc::LLJIT &jit, const std::string &kernel,
                       const std::string &match, const std::string &shapes,
                       rt::VariantCode &out) {
  auto k = jit.lookup(kernel);
  auto m = jit.lookup(match);
  auto s = jit.lookup(shapes);
  bool ok = k && m && s;
  if (ok) {
    out.kernel = k->toPtr<rt::KernelFn>();
    out.match = m->toPtr<rt::MatchFn>();
    out.shapes = s->toPtr<rt::ShapesFn>();
  }
  if (!k)
    llvm::consumeError(k.takeError());
  if (!m)
    llvm::consumeError(m.takeError());
  if (!s)
    llvm::consumeError(s.takeError());
  return ok;
}

Expected<void> CpuKernel::compileVariant(const Function &fn,
                                         rt::VariantCode &out) {
  Expected<std::unique_ptr<CpuKernel>> compiled = compile(fn);
  if (!compiled)
    return compiled.error();
  std::shared_ptr<CpuKernel> kernel(std::move(*compiled));
  const Impl &k = *kernel->impl_;
  out = rt::VariantCode();
  out.kernel = k.entry;
  out.match = k.match;
  out.shapes = k.shapes;
  fillVariantMetadata(fn, k.checks, out);
  out.keepAlive = kernel;
  return {};
}

Expected<void> compileObject(const std::vector<Function> &fns,
                             std::vector<std::string> &objects,
                             std::string &manifestText,
                             KernelObjectCache *cache) {
  initializeLLVM();
  llvm::LLVMContext ctx;
  auto combined = std::make_unique<llvm::Module>("tsl_aot", ctx);
  std::vector<rt::ManifestVariant> manifest;
  std::map<std::string, int> counts;
  for (const Function &fn : fns) {
    LoweringOptions options;
    options.aot = true;
    options.prefix =
        "tsl_" + fn.name + "_v" + std::to_string(counts[fn.name]++);
    std::vector<std::string> checks;
    Expected<std::unique_ptr<llvm::Module>> m =
        lowerFunction(fn, ctx, checks, options);
    if (!m)
      return m.error();
    if (llvm::Linker::linkModules(*combined, std::move(*m)))
      return makeError(ErrorKind::Internal,
                       "internal error: cannot link the module of '" + fn.name +
                           "'");
    rt::ManifestVariant mv;
    mv.function = fn.name;
    mv.kernelSymbol = options.kernelName();
    mv.matchSymbol = options.matchName();
    mv.shapesSymbol = options.shapesName();
    fillVariantMetadata(fn, checks, mv.code);
    manifest.push_back(std::move(mv));
  }
  // One dispatcher per function over its variants, in manifest order (the
  // order the runtime adds them in); the matchers inline into it.
  std::map<std::string, std::vector<DispatchEntry>> dispatch;
  for (const rt::ManifestVariant &mv : manifest)
    dispatch[mv.function].push_back(
        {mv.code.signature(), combined->getFunction(mv.matchSymbol)});
  for (const auto &[function, entries] : dispatch)
    emitDispatcher(*combined, rt::aotDispatcherSymbol(function), entries);
  // The runtime-function table the loader fills, and the manifest.
  auto *tableType =
      llvm::ArrayType::get(llvm::PointerType::get(ctx, 0), TSL_RT_NUM_SLOTS);
  auto *table = llvm::cast<llvm::GlobalVariable>(
      combined->getOrInsertGlobal("tsl_rt_table", tableType));
  table->setInitializer(llvm::ConstantAggregateZero::get(tableType));
  table->setLinkage(llvm::GlobalValue::ExternalLinkage);
  manifestText = rt::writeManifest(manifest);
  auto *data = llvm::ConstantDataArray::getString(ctx, manifestText, true);
  new llvm::GlobalVariable(*combined, data->getType(), true,
                           llvm::GlobalValue::ExternalLinkage, data,
                           "tsl_manifest");
  return compileToObjects(std::move(combined), true, cache, objects);
}

Expected<void> buildSharedLibrary(const std::vector<Function> &fns,
                                  const std::string &outPath) {
  std::vector<std::string> objects;
  std::string manifest;
  if (Expected<void> compiled = compileObject(fns, objects, manifest);
      !compiled)
    return compiled.error();
  // A stale digest must not outlive the module it was for.
  std::remove(rt::moduleDigestPath(outPath).c_str());
  std::vector<std::string> objectPaths;
  auto removeObjects = [&] {
    for (const std::string &path : objectPaths)
      std::remove(path.c_str());
  };
  for (size_t i = 0; i < objects.size(); ++i) {
    objectPaths.push_back(outPath + "." + std::to_string(i) + ".o");
    std::FILE *f = std::fopen(objectPaths.back().c_str(), "wb");
    bool written = f && std::fwrite(objects[i].data(), 1, objects[i].size(),
                                    f) == objects[i].size();
    if (f)
      written &= std::fclose(f) == 0;
    if (!written) {
      removeObjects();
      return makeError(ErrorKind::Io,
                       "cannot write '" + objectPaths.back() + "'");
    }
  }
  // Link a shared library with the system C compiler driver.
  const char *cc = std::getenv("CC");
  std::vector<std::string> argv = {cc && *cc ? cc : "cc", "-shared", "-o",
                                   outPath};
  argv.insert(argv.end(), objectPaths.begin(), objectPaths.end());
  argv.push_back("-lm");
  argv.push_back("-lmvec");
  std::vector<char *> args;
  for (std::string &a : argv)
    args.push_back(a.data());
  args.push_back(nullptr);
  pid_t pid = fork();
  if (pid == 0) {
    execvp(args[0], args.data());
    _exit(127);
  }
  int status = 0;
  bool linked = pid > 0 && waitpid(pid, &status, 0) >= 0 && WIFEXITED(status) &&
                WEXITSTATUS(status) == 0;
  removeObjects();
  // No linker is this machine's to fix: Unsupported, as a missing ptxas.
  if (!linked)
    return makeError(ErrorKind::Unsupported,
                     "linking '" + outPath + "' with '" + argv[0] + "' failed");
  // The digest the loader checks the module against before dlopen
  // (rt::moduleDigestPath: a module cannot hold its own digest).
  std::string digestPath = rt::moduleDigestPath(outPath);
  std::ifstream in(outPath, std::ios::binary);
  std::ostringstream contents;
  contents << in.rdbuf();
  std::ofstream digest(digestPath, std::ios::binary | std::ios::trunc);
  if (!in || !(digest << rt::writeModuleDigest(contents.str())) ||
      !digest.flush())
    return makeError(ErrorKind::Io, "cannot write '" + digestPath + "'");
  return {};
}

Expected<void>
compileDispatcher(const std::vector<const rt::VariantCode *> &variants,
                  rt::Dispatcher &out) {
  initializeLLVM();
  auto ctx = std::make_unique<llvm::LLVMContext>();
  auto m = std::make_unique<llvm::Module>("tsl_dispatch", *ctx);
  std::vector<DispatchEntry> entries;
  auto *i64 = llvm::Type::getInt64Ty(*ctx);
  for (const rt::VariantCode *v : variants)
    entries.push_back(
        {v->signature(),
         llvm::ConstantExpr::getIntToPtr(
             llvm::ConstantInt::get(i64, reinterpret_cast<uintptr_t>(v->match)),
             llvm::PointerType::get(*ctx, 0))});
  emitDispatcher(*m, "tsl_dispatch", entries);
  Expected<llvm::orc::JITTargetMachineBuilder> jtmb = targetMachineBuilder();
  if (!jtmb)
    return jtmb.error();
  auto jit =
      hostJitBuilder().setJITTargetMachineBuilder(std::move(*jtmb)).create();
  if (!jit)
    return llvmError(ErrorKind::Resource, jit.takeError());
  m->setDataLayout((*jit)->getDataLayout());
  if (auto err = (*jit)->addIRModule(
          llvm::orc::ThreadSafeModule(std::move(m), std::move(ctx))))
    return llvmError(ErrorKind::Internal, std::move(err));
  auto sym = (*jit)->lookup("tsl_dispatch");
  if (!sym)
    return llvmError(ErrorKind::Internal, sym.takeError());
  out.fn = sym->toPtr<rt::DispatchFn>();
  out.count = variants.size();
  out.keepAlive = std::shared_ptr<llvm::orc::LLJIT>(std::move(*jit));
  return {};
}

Expected<void>
loadObjectVariants(const std::vector<std::string> &objects,
                   const std::string &manifestText,
                   std::vector<std::pair<std::string, rt::VariantCode>> &out) {
  initializeLLVM();
  std::vector<rt::ManifestVariant> manifest;
  // Objects and manifests come from the compile cache (or a module file):
  // a bad one is invalid input, which the cache's caller recompiles.
  if (std::string error; !rt::readManifest(manifestText, manifest, error))
    return makeError(ErrorKind::InvalidArgument, std::move(error));
  auto jit = hostJitBuilder().create();
  if (!jit)
    return llvmError(ErrorKind::Resource, jit.takeError());
  llvm::orc::JITDylib &lib = (*jit)->getMainJITDylib();
  auto generator =
      llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(
          (*jit)->getDataLayout().getGlobalPrefix());
  if (!generator)
    return llvmError(ErrorKind::Internal, generator.takeError());
  lib.addGenerator(std::move(*generator));
  for (const std::string &object : objects)
    if (auto err = (*jit)->addObjectFile(
            llvm::MemoryBuffer::getMemBufferCopy(object, "tsl-object")))
      return llvmError(ErrorKind::InvalidArgument, std::move(err));
  auto table = (*jit)->lookup("tsl_rt_table");
  if (!table)
    return llvmError(ErrorKind::InvalidArgument, table.takeError());
  tsl_rt_fill_table(table->toPtr<void **>());
  std::shared_ptr<llvm::orc::LLJIT> session(std::move(*jit));
  for (rt::ManifestVariant &mv : manifest) {
    rt::VariantCode code = std::move(mv.code);
    if (!lookupEntryPoints(*session, mv.kernelSymbol, mv.matchSymbol,
                           mv.shapesSymbol, code))
      return makeError(ErrorKind::InvalidArgument,
                       "the object has no entry points for '" + mv.function +
                           "'");
    code.keepAlive = session;
    out.push_back({mv.function, std::move(code)});
  }
  return {};
}

void describeKernelFailure(const Function &fn, tsl_rt_context *ctx,
                           const std::vector<int64_t> &syms, RunError &error) {
  int32_t op = tsl_rt_context_failed_op(ctx);
  std::string message = tsl_rt_context_error(ctx);
  const Function *owner = &fn;
  const Operation *at =
      op >= 0 ? opAtFailureIndex(fn, static_cast<size_t>(op), &owner) : nullptr;
  if (at) {
    const Operation &failed = *at;
    error.loc = failed.loc;
    if (failed.code == OpCode::Assert) {
      error.message = "runtime check failed: " + failed.condAttr("cond").str();
      if (!failed.strAttr("message").empty())
        error.message += ": " + failed.strAttr("message");
      if (!message.empty()) // the check could not be evaluated
        error.message += ": " + message;
    } else {
      error.message = std::string(opInfo(failed.code).name) + ": " +
                      (message.empty() ? "failed" : message);
    }
    // The values of the sizes the op saw, as the interpreter reports them.
    std::vector<std::string> names;
    if (failed.code == OpCode::Assert)
      names = failed.condAttr("cond").symbols();
    else if (message.find("64 bits") != std::string::npos ||
             message.find("limit") != std::string::npos)
      for (ValueId r : failed.results)
        for (const SymExpr &d : owner->type(r).dims)
          for (const std::string &n : d.symbols())
            if (std::find(names.begin(), names.end(), n) == names.end())
              names.push_back(n);
    std::string vals;
    for (const std::string &name : names)
      for (size_t i = 0; i < fn.symbols.size(); ++i)
        if (fn.symbols[i].name == name)
          vals += (vals.empty() ? "" : ", ") + name + " = " +
                  std::to_string(syms[i]);
    if (!vals.empty())
      error.notes.push_back("with " + vals);
  } else {
    error.message = message.empty() ? "kernel failed" : message;
  }
}

bool CpuKernel::run(const std::vector<ArgValue> &args,
                    std::vector<Tensor> &outputs, RunError &error) const {
  const Function &fn = impl_->fn;
  std::vector<int64_t> syms;
  if (!bindSymbols(fn, args, syms, error))
    return false;
  std::vector<void *> buffers(bufferArrayLength(fn), nullptr);
  for (size_t i = 0; i < args.size(); ++i)
    if (!fn.params[i].isInt)
      buffers[fn.params[i].value] = const_cast<uint8_t *>(args[i].tensor.raw());
  tsl_rt_context *ctx = tsl_rt_context_create();
  int32_t status = impl_->entry(buffers.data(), syms.data(), ctx);
  bool ok = status == 0;
  if (!ok) {
    describeKernelFailure(fn, ctx, syms, error);
  } else {
    ok = readResults(
        fn, syms, buffers,
        [](void *dst, const void *src, size_t bytes, std::string &) {
          std::memcpy(dst, src, bytes);
          return true;
        },
        outputs, error);
  }
  tsl_rt_context_destroy(ctx);
  return ok;
}

bool bindSymbols(const Function &fn, const std::vector<ArgValue> &args,
                 std::vector<int64_t> &syms, RunError &error) {
  std::map<std::string, int64_t> values;
  if (!bindArguments(fn, args, values, error))
    return false;
  syms.assign(fn.symbols.size() + 1, 0);
  for (size_t i = 0; i < fn.symbols.size(); ++i) {
    auto it = values.find(fn.symbols[i].name);
    if (it != values.end())
      syms[i] = it->second;
  }
  return true;
}

bool readResults(const Function &fn, const std::vector<int64_t> &syms,
                 const std::vector<void *> &buffers,
                 const std::function<bool(void *, const void *, size_t,
                                          std::string &)> &copy,
                 std::vector<Tensor> &outputs, RunError &error) {
  std::map<std::string, int64_t> values;
  for (size_t i = 0; i < fn.symbols.size(); ++i)
    values[fn.symbols[i].name] = syms[i];
  outputs.clear();
  for (ValueId r : fn.results) {
    std::vector<int64_t> shape;
    for (const SymExpr &d : fn.type(r).dims)
      shape.push_back(d.evaluate(values).value_or(0));
    Tensor t = Tensor::zeros(fn.type(r).dtype, shape);
    if (!t.valid()) {
      // The kernel checked every size it allocated; this is the host copy
      // of a result that aliases an argument or went over memory.
      for (const Operation &op : fn.ops)
        for (ValueId produced : op.results)
          if (produced == r)
            error.loc = op.loc;
      std::optional<int64_t> bytes =
          tensorBytes(shape.data(), shape.size(), dtypeSize(fn.type(r).dtype));
      error.message = "result " + fn.type(r).str() + " is too large: " +
                      (bytes ? tensorTooLargeMessage(*bytes)
                             : std::string("its size does not fit in 64 bits"));
      return false;
    }
    if (t.byteSize() && !copy(t.raw(), buffers[r], t.byteSize(), error.message))
      return false;
    outputs.push_back(t);
  }
  return true;
}

} // namespace tsl
