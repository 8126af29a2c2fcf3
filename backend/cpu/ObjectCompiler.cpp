// Compiling a lowered module one kernel at a time (ObjectCompiler.h).
#include "backend/cpu/ObjectCompiler.h"
#include "backend/cpu/HostTarget.h"
#include "runtime/FunctionTable.h"
#include "runtime/Sha256.h"

#include <llvm/Bitcode/BitcodeReader.h>
#include <llvm/Bitcode/BitcodeWriter.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Transforms/Utils/Cloning.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <sched.h>
#include <set>
#include <thread>

namespace tsl {

namespace {

/// One object to make: its module as bitcode (which moves it to a worker's
/// own context) and its cache key.
struct Unit {
  std::string bitcode;
  std::string key;
  std::string object;
  std::optional<Error> error;
  bool cached = false;
  OptEffort effort = OptEffort::Full;
  /// What the perf log calls it, and how long it took to compile.
  std::string name;
  double milliseconds = 0;
};

std::string bitcodeOf(const llvm::Module &m) {
  llvm::SmallVector<char, 0> buffer;
  llvm::raw_svector_ostream os(buffer);
  llvm::WriteBitcodeToFile(m, os);
  return std::string(buffer.begin(), buffer.end());
}

/// Drops declarations nothing in \p m uses, so that a kernel's unit (and
/// its cache key) holds only what the kernel needs.
void dropUnused(llvm::Module &m) {
  for (llvm::Function &f : llvm::make_early_inc_range(m))
    if (f.isDeclaration() && f.use_empty())
      f.eraseFromParent();
  for (llvm::GlobalVariable &g : llvm::make_early_inc_range(m.globals()))
    if ((g.isDeclaration() || g.hasLocalLinkage()) && g.use_empty())
      g.eraseFromParent();
}

/// \p functions and the chunk functions of parallel loops (internal,
/// kBodyFunctionPrefix) they reach: what one unit defines.
std::set<const llvm::Function *>
withBodies(const std::set<const llvm::Function *> &functions) {
  std::set<const llvm::Function *> all = functions;
  std::vector<const llvm::Function *> todo(functions.begin(), functions.end());
  while (!todo.empty()) {
    const llvm::Function *f = todo.back();
    todo.pop_back();
    for (const llvm::BasicBlock &bb : *f)
      for (const llvm::Instruction &inst : bb)
        for (const llvm::Value *v : inst.operand_values())
          if (auto *callee = llvm::dyn_cast<llvm::Function>(v);
              callee && callee->hasLocalLinkage() &&
              callee->getName().starts_with(kBodyFunctionPrefix) &&
              all.insert(callee).second)
            todo.push_back(callee);
  }
  return all;
}

/// Exports \p functions of \p unit for the other units (hidden where they
/// are kernels or were internal), drops what nothing uses and puts the
/// declarations in name order: where the whole module first declared an
/// intrinsic depends on the other kernels, and must not change this unit's
/// bitcode (its cache key).
void finishUnit(llvm::Module &unit,
                const std::set<const llvm::Function *> &functions) {
  for (const llvm::Function *f : functions) {
    llvm::Function *own = unit.getFunction(f->getName());
    bool hidden = f->getName().starts_with(kKernelFunctionPrefix) ||
                  own->hasLocalLinkage();
    own->setLinkage(llvm::GlobalValue::ExternalLinkage);
    if (hidden)
      own->setVisibility(llvm::GlobalValue::HiddenVisibility);
  }
  dropUnused(unit);
  std::vector<llvm::Function *> declarations;
  for (llvm::Function &f : unit)
    if (f.isDeclaration())
      declarations.push_back(&f);
  std::sort(declarations.begin(), declarations.end(),
            [](llvm::Function *x, llvm::Function *y) {
              return x->getName() < y->getName();
            });
  for (llvm::Function *f : declarations) {
    f->removeFromParent();
    unit.getFunctionList().push_back(f);
  }
}

/// A copy of \p m with only \p functions (and the chunk functions they
/// use, kept internal) and the constants they read defined; the functions
/// are exported (hidden) for the other units.
std::unique_ptr<llvm::Module>
unitOf(const llvm::Module &m,
       const std::set<const llvm::Function *> &functions) {
  std::set<const llvm::Function *> defined = withBodies(functions);
  llvm::ValueToValueMapTy map;
  std::unique_ptr<llvm::Module> unit =
      llvm::CloneModule(m, map, [&](const llvm::GlobalValue *g) {
        if (auto *f = llvm::dyn_cast<llvm::Function>(g))
          return defined.count(f) > 0;
        auto *var = llvm::dyn_cast<llvm::GlobalVariable>(g);
        return var && var->hasLocalLinkage(); // messages they may report
      });
  std::set<const llvm::Function *> own;
  for (const llvm::Function *f : functions)
    own.insert(unit->getFunction(f->getName()));
  finishUnit(*unit, own);
  return unit;
}

/// Makes \p m itself the unit unitOf(m, functions) would copy: the host
/// code of a function with 10,000 calls is most of the module, and a copy
/// of it doubled the compiler's peak memory.
void becomeUnitOf(llvm::Module &m,
                  const std::set<const llvm::Function *> &functions) {
  std::set<const llvm::Function *> defined = withBodies(functions);
  for (llvm::Function &f : m)
    if (!f.isDeclaration() && !defined.count(&f)) {
      f.deleteBody();
      f.setComdat(nullptr);
      f.setLinkage(llvm::GlobalValue::ExternalLinkage);
    }
  for (llvm::GlobalVariable &g : m.globals())
    if (!g.hasLocalLinkage() && !g.isDeclaration()) {
      g.setInitializer(nullptr);
      g.setComdat(nullptr);
      g.setLinkage(llvm::GlobalValue::ExternalLinkage);
    }
  finishUnit(m, functions);
}

/// A copy of \p m without the bodies of \p entries and \p kernels (they
/// are declared, as the other units export them): what is left for the
/// rest's unit, the matchers and dispatchers.
std::unique_ptr<llvm::Module>
restOf(const llvm::Module &m, const std::set<const llvm::Function *> &entries,
       const std::vector<llvm::Function *> &kernels) {
  std::set<const llvm::Function *> elsewhere(kernels.begin(), kernels.end());
  elsewhere.insert(entries.begin(), entries.end());
  std::set<const llvm::Function *> roots;
  for (const llvm::Function &f : m)
    if (!f.isDeclaration() && !elsewhere.count(&f) &&
        !(f.hasLocalLinkage() && f.getName().starts_with(kBodyFunctionPrefix)))
      roots.insert(&f);
  std::set<const llvm::Function *> defined = withBodies(roots);
  llvm::ValueToValueMapTy map;
  std::unique_ptr<llvm::Module> rest =
      llvm::CloneModule(m, map, [&](const llvm::GlobalValue *g) {
        if (auto *f = llvm::dyn_cast<llvm::Function>(g))
          return defined.count(f) > 0;
        return true;
      });
  for (const llvm::Function *f : elsewhere)
    if (f->getName().starts_with(kKernelFunctionPrefix) || f->hasLocalLinkage())
      rest->getFunction(f->getName())
          ->setVisibility(llvm::GlobalValue::HiddenVisibility);
  return rest;
}

/// Erases the chunk functions nothing in \p m uses any more (their kernels
/// became declarations): the rest's unit, and its cache key, does not
/// change when a kernel does.
void dropUnusedBodies(llvm::Module &m) {
  for (bool erased = true; erased;) {
    erased = false;
    for (llvm::Function &f : llvm::make_early_inc_range(m))
      if (f.hasLocalLinkage() && f.use_empty() &&
          f.getName().starts_with(kBodyFunctionPrefix)) {
        f.eraseFromParent();
        erased = true;
      }
  }
}

/// Makes \p f a declaration of what another unit defines.
void declareOnly(llvm::Function &f) {
  bool hidden =
      f.getName().starts_with(kKernelFunctionPrefix) || f.hasLocalLinkage();
  f.deleteBody();
  f.setLinkage(llvm::GlobalValue::ExternalLinkage);
  if (hidden)
    f.setVisibility(llvm::GlobalValue::HiddenVisibility);
}

bool compileUnit(Unit &u, bool pic) {
  llvm::LLVMContext ctx;
  auto m =
      llvm::parseBitcodeFile(llvm::MemoryBufferRef(u.bitcode, "tsl-unit"), ctx);
  if (!m) {
    u.error = llvmError(ErrorKind::Internal, m.takeError(), "internal error: ");
    return false;
  }
  Expected<std::unique_ptr<llvm::TargetMachine>> machine =
      targetMachine(pic, u.effort);
  if (!machine) {
    u.error = machine.error();
    return false;
  }
  std::unique_ptr<llvm::TargetMachine> tm = std::move(*machine);
  prepareAndOptimize(**m, *tm, u.effort);
  llvm::SmallString<0> buffer;
  {
    llvm::raw_svector_ostream os(buffer);
    llvm::legacy::PassManager pm;
    if (tm->addPassesToEmitFile(pm, os, nullptr,
                                llvm::CodeGenFileType::ObjectFile)) {
      u.error = makeError(ErrorKind::Unsupported,
                          "the host target cannot emit object files");
      return false;
    }
    pm.run(**m);
  }
  u.object.assign(buffer.begin(), buffer.end());
  return true;
}

/// Compiles the units not taken from the cache on up to \p threads threads
/// (this one included); returns how many threads ran.
unsigned compileAll(std::vector<Unit> &units, bool pic, unsigned threads) {
  std::vector<size_t> todo;
  for (size_t i = 0; i < units.size(); ++i)
    if (!units[i].cached)
      todo.push_back(i);
  threads = static_cast<unsigned>(
      std::max<size_t>(1, std::min<size_t>(threads, todo.size())));
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i; (i = next.fetch_add(1)) < todo.size();) {
      auto start = std::chrono::steady_clock::now();
      compileUnit(units[todo[i]], pic);
      units[todo[i]].milliseconds =
          std::chrono::duration<double, std::milli>(
              std::chrono::steady_clock::now() - start)
              .count();
    }
  };
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads; ++t)
    pool.emplace_back(work);
  work();
  for (std::thread &t : pool)
    t.join();
  return threads;
}

/// The perf log of one compile: its counts and time, then the three units
/// that took longest (what to look at when a compile is slow).
void logSlowestUnits(const ObjectCompileStats &s, std::vector<Unit> &units) {
  std::fprintf(stderr,
               "[tsl] perf: %zu kernel calls, %zu distinct kernels; %zu of "
               "%zu objects from the cache; compiled on %u threads in %.1f "
               "ms\n",
               s.kernelCalls, s.kernels, s.fromCache, s.units, s.threads,
               s.milliseconds);
  std::vector<const Unit *> order;
  for (const Unit &u : units)
    if (!u.cached && !u.bitcode.empty())
      order.push_back(&u);
  std::sort(order.begin(), order.end(), [](const Unit *a, const Unit *b) {
    return a->milliseconds > b->milliseconds;
  });
  double total = 0;
  for (const Unit *u : order)
    total += u->milliseconds;
  std::string line;
  for (size_t i = 0; i < order.size() && i < 3; ++i) {
    char part[64];
    std::snprintf(part, sizeof part, "%.1f ms", order[i]->milliseconds);
    line += (i ? "; " : "") + order[i]->name + " " + part;
  }
  if (!order.empty())
    std::fprintf(stderr,
                 "[tsl] perf: %.1f ms of compiling in all; slowest: %s\n",
                 total, line.c_str());
}

} // namespace

unsigned compileThreads() {
  unsigned cpus = std::max(1u, std::thread::hardware_concurrency());
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
    cpus = static_cast<unsigned>(CPU_COUNT(&set));
  const char *env = std::getenv("TSL_COMPILE_THREADS");
  if (!env || !*env)
    return cpus;
  char *end = nullptr;
  errno = 0;
  long n = std::strtol(env, &end, 10);
  if (*end == 0 && errno == 0 && n > 0 && n <= 1024)
    return static_cast<unsigned>(n);
  // Said once per process, as the runtime says it of TSL_NUM_THREADS.
  static std::once_flag warned;
  std::call_once(warned, [&] {
    std::fprintf(stderr,
                 "[tsl] warning: TSL_COMPILE_THREADS='%s' is not an integer "
                 "from 1 to 1024; compiling on %u threads (the CPUs this "
                 "process may run on)\n",
                 env, cpus);
  });
  return cpus;
}

Expected<void> compileToObjects(std::unique_ptr<llvm::Module> m, bool pic,
                                KernelObjectCache *cache,
                                std::vector<std::string> &objects,
                                ObjectCompileStats *stats) {
  auto start = std::chrono::steady_clock::now();
  initializeLLVM();
  std::vector<llvm::Function *> kernels;
  ObjectCompileStats s;
  for (llvm::Function &f : *m)
    if (!f.isDeclaration() && f.getName().starts_with(kKernelFunctionPrefix)) {
      kernels.push_back(&f);
      s.kernelCalls += f.getNumUses();
    }
  // The functions that call kernels (each variant's entry point) only
  // sequence calls and free buffers: they grow with the number of layers,
  // so they get the light pipeline, apart from the matchers and
  // dispatchers, which stay fully optimized (every call runs them). Past
  // kLargeHostCode kernel calls (an unrolled stack of layers) they are not
  // optimized at all: 48 unrolled GPT-2 layers (869 calls) compiled in
  // 1.23 s with O1 and 0.46-0.50 s with O0 and fast instruction selection,
  // and ran within 1.3% of the loop form (the kernels do the work;
  // bench/loop_compile.sh). The cost, with kernels too small to hide it:
  // 512 calls of 64x64 matmuls and tanh took 2.09 ms instead of 1.93.
  // Host code (entry points, their segments and callees) and the calls it
  // makes of what the module defines: kernels, segments, callees. Counting
  // calls of callees too: a function calling a helper 10,000 times was
  // optimized as if it made no call, in time quadratic in its calls.
  std::set<const llvm::Function *> entries;
  size_t hostCalls = 0;
  for (llvm::Function &f : *m)
    if (!f.isDeclaration() && f.hasFnAttribute(kHostCodeAttribute)) {
      entries.insert(&f);
      for (llvm::BasicBlock &bb : f)
        for (llvm::Instruction &inst : bb)
          if (auto *call = llvm::dyn_cast<llvm::CallInst>(&inst))
            if (llvm::Function *callee = call->getCalledFunction();
                callee && !callee->isDeclaration() &&
                (callee->hasFnAttribute(kHostCodeAttribute) ||
                 callee->getName().starts_with(kKernelFunctionPrefix)))
              ++hostCalls;
    }
  std::vector<Unit> units(kernels.size() + 2);
  constexpr size_t kLargeHostCode = 128;
  units[1].effort =
      hostCalls > kLargeHostCode ? OptEffort::None : OptEffort::Light;
  units[0].name = "the rest (matchers, shapes, dispatchers)";
  units[1].name = std::string("host code (") +
                  (units[1].effort == OptEffort::None ? "O0" : "O1") + ", " +
                  std::to_string(hostCalls) + " calls)";
  for (size_t k = 0; k < kernels.size(); ++k) {
    units[k + 2].bitcode = bitcodeOf(*unitOf(*m, {kernels[k]}));
    units[k + 2].name = kernels[k]->getName().str();
  }
  if (!entries.empty()) {
    // The rest calls what the other units define; the host code's unit is
    // the module itself (it holds most of a large function).
    units[0].bitcode = bitcodeOf(*restOf(*m, entries, kernels));
    becomeUnitOf(*m, entries);
    units[1].bitcode = bitcodeOf(*m);
  } else {
    for (llvm::Function *f : kernels)
      declareOnly(*f);
    dropUnusedBodies(*m);
    units[0].bitcode = bitcodeOf(*m);
  }
  m.reset();
  if (entries.empty())
    units.erase(units.begin() + 1);
  std::string flavour = pic ? "pic\n" : "static\n";
  for (Unit &u : units) {
    const char *effort = u.effort == OptEffort::Full    ? "full\n"
                         : u.effort == OptEffort::Light ? "light\n"
                                                        : "none\n";
    u.key = rt::sha256Hex(flavour + effort + u.bitcode);
    u.cached = cache && cache->load(u.key, u.object);
    s.fromCache += u.cached;
  }
  s.threads = compileAll(units, pic, compileThreads());
  objects.clear();
  for (Unit &u : units) {
    if (u.error)
      return *u.error;
    if (cache && !u.cached)
      cache->store(u.key, u.object);
    objects.push_back(std::move(u.object));
  }
  s.kernels = kernels.size();
  s.units = units.size();
  s.milliseconds = std::chrono::duration<double, std::milli>(
                       std::chrono::steady_clock::now() - start)
                       .count();
  if (stats)
    *stats = s;
  if (rt::LogFlags::fromEnvironment().perf)
    logSlowestUnits(s, units);
  return {};
}

std::string packObjects(const std::vector<std::string> &objects) {
  std::string out = "tsl objects " + std::to_string(objects.size()) + "\n";
  for (const std::string &o : objects)
    out += std::to_string(o.size()) + "\n";
  for (const std::string &o : objects)
    out += o;
  return out;
}

bool unpackObjects(const std::string &packed,
                   std::vector<std::string> &objects) {
  objects.clear();
  size_t pos = 0;
  auto number = [&](size_t &n) {
    size_t end = packed.find('\n', pos);
    if (end == std::string::npos || end == pos || end - pos > 19)
      return false;
    n = 0;
    for (size_t i = pos; i < end; ++i) {
      if (packed[i] < '0' || packed[i] > '9')
        return false;
      n = n * 10 + static_cast<size_t>(packed[i] - '0');
    }
    pos = end + 1;
    return true;
  };
  const std::string magic = "tsl objects ";
  if (packed.compare(0, magic.size(), magic) != 0)
    return false;
  pos = magic.size();
  size_t count = 0;
  if (!number(count) || count > packed.size())
    return false;
  std::vector<size_t> sizes(count);
  for (size_t &n : sizes)
    if (!number(n))
      return false;
  for (size_t n : sizes) {
    if (n > packed.size() - pos)
      return false;
    objects.push_back(packed.substr(pos, n));
    pos += n;
  }
  return pos == packed.size();
}

} // namespace tsl
