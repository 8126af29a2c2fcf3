#include "runtime/FunctionTable.h"
#include "runtime/Context.h"
#include "runtime/GpuCounters.h"
#include "runtime/GpuDevice.h"
#include "support/SizeLimits.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <mutex>
#include <new>
#include <optional>
#include <set>
#include <type_traits>

namespace tsl::rt {

namespace {

const char *typeName(int32_t dtype) {
  static const char *names[] = {"bool", "i8",   "i32", "i64",
                                "f16",  "bf16", "f32", "f64"};
  return dtype >= 0 && dtype < 8 ? names[dtype] : "?";
}

std::string describeArg(const ArgRef &a) {
  if (a.isInt)
    return std::to_string(a.intValue);
  std::string s = std::string(typeName(a.dtype)) + "[";
  for (size_t i = 0; i < a.rank; ++i)
    s += (i ? ", " : "") + std::to_string(a.shape[i]);
  return s + "]";
}

/// Values of the call's named dims, for messages ("N = 3, M = 4").
std::map<std::string, int64_t>
namedValues(const VariantCode &v, std::span<const ArgRef> args,
            std::map<std::string, std::string> *where = nullptr) {
  std::map<std::string, int64_t> values;
  for (size_t i = 0; i < v.params.size() && i < args.size(); ++i) {
    const ParamInfo &p = v.params[i];
    if (p.isInt) {
      values[p.name] = args[i].intValue;
      if (where)
        (*where)[p.name] = "argument '" + p.name + "'";
      continue;
    }
    for (size_t a = 0; a < p.axisNames.size() && a < args[i].rank; ++a)
      if (!p.axisNames[a].empty() && !values.count(p.axisNames[a])) {
        values[p.axisNames[a]] = args[i].shape[a];
        if (where)
          (*where)[p.axisNames[a]] =
              "argument '" + p.name + "' dim " + std::to_string(a);
      }
  }
  return values;
}

/// Appends the values of the dims a check mentions and the arguments they
/// come from: "... with N = 3 (argument 'x' dim 0)".
std::string withValues(const std::string &check,
                       const std::map<std::string, int64_t> &values,
                       const std::map<std::string, std::string> &where = {}) {
  std::string list;
  for (const auto &[name, value] : values) {
    size_t pos = 0;
    bool found = false;
    while ((pos = check.find(name, pos)) != std::string::npos) {
      bool left = pos == 0 ||
                  !(std::isalnum(static_cast<unsigned char>(check[pos - 1])) ||
                    check[pos - 1] == '_');
      size_t end = pos + name.size();
      bool right = end >= check.size() ||
                   !(std::isalnum(static_cast<unsigned char>(check[end])) ||
                     check[end] == '_');
      if (left && right) {
        found = true;
        break;
      }
      pos = end;
    }
    if (found) {
      list += (list.empty() ? "" : ", ") + name + " = " + std::to_string(value);
      auto w = where.find(name);
      // The argument is already named when the check is about it.
      if (w != where.end() &&
          check.find(w->second.substr(0, w->second.find(" dim"))) ==
              std::string::npos)
        list += " (" + w->second + ")";
    }
  }
  return list.empty() ? check : check + " with " + list;
}

/// Gathers \p args (views of them) in \p in.
template <typename Arg> void gather(std::span<const Arg> args, CallInput &in) {
  in.begin(args.size());
  for (size_t i = 0; i < args.size(); ++i) {
    if constexpr (std::is_same_v<Arg, CallArg>)
      in.set(i, ArgRef::of(args[i]));
    else
      in.set(i, args[i]);
  }
}

/// What each thread's calls reuse, so that a call allocates nothing: its
/// kernel context (reset between calls, keeping its storage) and, for a
/// kernel with more buffers than a call keeps on its stack, an array for
/// them. A call made while these are in use (a kernel, or a compiler hook,
/// that calls a table) gets its own.
struct ThreadState {
  tsl_rt_context *ctx = nullptr;
  bool contextBusy = false, buffersBusy = false;
  std::vector<void *> buffers; ///< grows to the largest kernel's
  ~ThreadState() { tsl_rt_context_destroy(ctx); }
};
thread_local ThreadState threadState;

tsl_rt_context *acquireContext() {
  ThreadState &t = threadState;
  if (t.contextBusy)
    return tsl_rt_context_create();
  if (!t.ctx)
    t.ctx = tsl_rt_context_create();
  t.contextBusy = true;
  return t.ctx;
}

/// Ends \p ctx's call: what tsl_rt_context_destroy frees is freed.
void releaseContext(tsl_rt_context *ctx) {
  ThreadState &t = threadState;
  if (ctx != t.ctx) {
    tsl_rt_context_destroy(ctx);
    return;
  }
  resetContext(ctx);
  t.contextBusy = false;
}

/// The thread's array for \p n kernel buffers; null while in use.
void **acquireBuffers(size_t n) {
  ThreadState &t = threadState;
  if (t.buffersBusy)
    return nullptr;
  if (t.buffers.size() < n)
    t.buffers.resize(n);
  t.buffersBusy = true;
  return t.buffers.data();
}

void releaseBuffers() { threadState.buffersBusy = false; }

} // namespace

namespace {
/// LogFlags::setActive's flags: bit 4 set when installed, bits 0-3 and 5
/// the flags (recompiles, guards, dynamic, perf; gpu-counters).
std::atomic<unsigned> activeLogs{0};

/// Says once per value of TSL_LOGS that it names logs that do not exist.
/// \p unknown lists the names, quoted; \p count says how many.
void warnBadLogs(const std::string &spec, const std::string &unknown,
                 int count) {
  static std::mutex mutex;
  static std::set<std::string> warned;
  std::lock_guard<std::mutex> lock(mutex);
  if (warned.insert(spec).second)
    std::fprintf(stderr,
                 "[tsl] warning: TSL_LOGS='%s': unknown log%s %s (known: "
                 "recompiles, guards, dynamic, perf, gpu-counters, all, none); "
                 "ignoring "
                 "%s\n",
                 spec.c_str(), count > 1 ? "s" : "", unknown.c_str(),
                 count > 1 ? "them" : "it");
}
} // namespace

LogFlags LogFlags::fromEnvironment() {
  LogFlags f;
  unsigned active = activeLogs.load(std::memory_order_relaxed);
  if (active & 16) {
    f.recompiles = active & 1;
    f.guards = active & 2;
    f.dynamic = active & 4;
    f.perf = active & 8;
    f.gpuCounters = active & 32;
    return f;
  }
  const char *env = std::getenv("TSL_LOGS");
  if (!env)
    return f;
  // Name by name, so a typo drops only itself (said once per value).
  std::string spec = env, unknown;
  int unknownCount = 0;
  for (size_t start = 0; start <= spec.size();) {
    size_t comma = std::min(spec.find(',', start), spec.size());
    LogFlags one;
    std::string error;
    if (parse(spec.substr(start, comma - start), one, error)) {
      f.recompiles |= one.recompiles;
      f.guards |= one.guards;
      f.dynamic |= one.dynamic;
      f.perf |= one.perf;
      f.gpuCounters |= one.gpuCounters;
    } else {
      unknown += (unknown.empty() ? "'" : ", '") +
                 spec.substr(start, comma - start) + "'";
      ++unknownCount;
    }
    start = comma + 1;
  }
  if (!unknown.empty())
    warnBadLogs(spec, unknown, unknownCount);
  return f;
}

bool LogFlags::parse(const std::string &spec, LogFlags &out,
                     std::string &error) {
  out = LogFlags();
  size_t start = 0;
  while (start <= spec.size()) {
    size_t comma = std::min(spec.find(',', start), spec.size());
    std::string name = spec.substr(start, comma - start);
    while (!name.empty() && name.front() == ' ')
      name.erase(name.begin());
    while (!name.empty() && name.back() == ' ')
      name.pop_back();
    if (name == "recompiles")
      out.recompiles = true;
    else if (name == "guards")
      out.guards = true;
    else if (name == "dynamic")
      out.dynamic = true;
    else if (name == "perf")
      out.perf = true;
    else if (name == "gpu-counters")
      out.gpuCounters = true;
    else if (name == "all")
      out.recompiles = out.guards = out.dynamic = out.perf = true;
    else if (!name.empty() && name != "none") {
      error = "unknown log '" + name +
              "' (known: recompiles, guards, dynamic, perf, gpu-counters, all, "
              "none)";
      return false;
    }
    start = comma + 1;
  }
  return true;
}

void LogFlags::setActive(const LogFlags *flags) {
  unsigned v = 0;
  if (flags)
    v = 16u | (flags->recompiles ? 1u : 0u) | (flags->guards ? 2u : 0u) |
        (flags->dynamic ? 4u : 0u) | (flags->perf ? 8u : 0u) |
        (flags->gpuCounters ? 32u : 0u);
  activeLogs.store(v, std::memory_order_relaxed);
}

FunctionTable::FunctionTable(std::string name, CompilerHook *hook,
                             TableOptions options)
    : name_(std::move(name)), hook_(hook), options_(options),
      anyDonated_(std::find(options_.donated.begin(), options_.donated.end(),
                            true) != options_.donated.end()) {}

FunctionTable::~FunctionTable() {
  for (auto &chunk : callLog_)
    delete[] chunk.load(std::memory_order_relaxed);
}

void FunctionTable::publish(std::shared_ptr<VariantCode> v) {
  size_t index = variants_.size();
  variants_.push_back(v);
  if (index < kMaxVariants) {
    published_[index].store(v.get(), std::memory_order_relaxed);
    if (v->numSymbols > maxSymbols_.load(std::memory_order_relaxed))
      maxSymbols_.store(v->numSymbols, std::memory_order_relaxed);
    publishedCount_.store(index + 1, std::memory_order_release);
  }
}

std::optional<size_t> FunctionTable::arity(Error &error) const {
  if (publishedCount_.load(std::memory_order_acquire) > 0)
    return published_[0].load(std::memory_order_relaxed)->params.size();
  if (!hook_)
    return std::nullopt;
  return hook_->arity(name_, error);
}

void FunctionTable::setDispatcher(Dispatcher d) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!d.fn || d.count > publishedCount_.load(std::memory_order_relaxed))
    return;
  dispatchers_.push_back(std::make_unique<Dispatcher>(std::move(d)));
  dispatcher_.store(dispatchers_.back().get(), std::memory_order_release);
}

void FunctionTable::refreshDispatcher() {
  if (!hook_)
    return;
  std::vector<const VariantCode *> variants;
  size_t count = publishedCount_.load(std::memory_order_relaxed);
  for (size_t i = 0; i < count; ++i)
    variants.push_back(published_[i].load(std::memory_order_relaxed));
  Dispatcher d;
  LogFlags log = LogFlags::fromEnvironment();
  auto start = std::chrono::steady_clock::now();
  if (Expected<void> compiled = hook_->compileDispatcher(variants, d);
      !compiled) {
    // Still correct: select() tries the matchers one by one.
    if (log.perf)
      std::fprintf(stderr, "[tsl] perf: %s: no native dispatcher: %s\n",
                   name_.c_str(), compiled.error().message.c_str());
    return;
  }
  if (log.perf)
    std::fprintf(stderr,
                 "[tsl] perf: dispatcher of %s over %zu variants compiled in "
                 "%.1f ms\n",
                 name_.c_str(), count,
                 std::chrono::duration<double, std::milli>(
                     std::chrono::steady_clock::now() - start)
                     .count());
  d.count = count;
  dispatchers_.push_back(std::make_unique<Dispatcher>(std::move(d)));
  dispatcher_.store(dispatchers_.back().get(), std::memory_order_release);
}

void FunctionTable::addVariant(VariantCode variant) {
  std::lock_guard<std::mutex> lock(mutex_);
  publish(std::make_shared<VariantCode>(std::move(variant)));
}

int FunctionTable::dispatch(const std::vector<CallArg> &args,
                            std::vector<int64_t> &syms) const {
  CallInput in;
  gather(std::span<const CallArg>(args), in);
  Symbols bound;
  int chosen = select(0, publishedCount_.load(std::memory_order_acquire), in,
                      bound, nullptr);
  syms.assign(bound.data(), bound.data() + bound.size());
  return chosen;
}

void FunctionTable::notePeakBytes(int64_t bytes) const {
  int64_t seen = peakBytes_.load(std::memory_order_relaxed);
  while (bytes > seen && !peakBytes_.compare_exchange_weak(
                             seen, bytes, std::memory_order_relaxed))
    ;
}

Stats FunctionTable::stats() const {
  Stats s;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    s = stats_;
  }
  s.peakBytes = peakBytes_.load(std::memory_order_relaxed);
  for (size_t i = 0; i < kMaxVariants; ++i)
    if (size_t n = variantCalls_[i].load(std::memory_order_relaxed)) {
      s.calls += n;
      s.variantCalls.resize(i + 1, 0);
      s.variantCalls[i] = n;
    }
  size_t logged =
      std::min(callLogNext_.load(std::memory_order_relaxed), kCallLogSize);
  s.callVariants.reserve(logged);
  for (size_t n = 0; n < logged; ++n) {
    const std::atomic<uint8_t> *chunk =
        callLog_[n / kCallLogChunk].load(std::memory_order_acquire);
    uint8_t entry =
        chunk ? chunk[n % kCallLogChunk].load(std::memory_order_relaxed) : 0;
    if (entry) // 0: the call has not stored it yet
      s.callVariants.push_back(entry - 1);
  }
  return s;
}

std::vector<VariantSummary> FunctionTable::variantSummaries() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<VariantSummary> out;
  for (const std::shared_ptr<VariantCode> &v : variants_) {
    VariantSummary s;
    s.checks = v->checks;
    s.specialized = v->specialized;
    s.fromCache = v->fromCache;
    s.onDevice = v->device != nullptr;
    out.push_back(std::move(s));
  }
  return out;
}

size_t FunctionTable::numVariants() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return variants_.size();
}

int FunctionTable::select(size_t first, size_t count, const CallInput &in,
                          Symbols &syms, std::string *reason) const {
  std::span<const ArgRef> args = in.args();
  const int64_t *signature = in.signature(), *sizes = in.sizes(),
                *ints = in.ints();
  const Dispatcher *d = dispatcher_.load(std::memory_order_acquire);
  if (!reason && first == 0 && d && d->count <= count) {
    // One native call chooses among the variants it was compiled for.
    size_t need = maxSymbols_.load(std::memory_order_relaxed) + 1;
    if (syms.size() < need)
      syms.resize(need);
    int32_t chosen = d->fn(signature, sizes, ints, syms.data());
    if (chosen >= 0)
      return chosen;
    first = d->count;
  }
  for (size_t i = first; i < count; ++i) {
    const VariantCode &v = *published_[i].load(std::memory_order_relaxed);
    // Ranks and element types are part of the signature, not of guards.
    bool fits = v.params.size() == args.size();
    for (size_t k = 0; fits && k < args.size(); ++k) {
      const ParamInfo &p = v.params[k];
      fits = p.isInt == args[k].isInt &&
             (p.isInt || (p.dtype == args[k].dtype &&
                          p.rank == static_cast<int32_t>(args[k].rank)));
    }
    if (!fits) {
      if (reason)
        *reason =
            "rank or element types differ from variant " + std::to_string(i);
      continue;
    }
    if (syms.size() < v.numSymbols + 1)
      syms.resize(v.numSymbols + 1);
    int32_t code = v.match(sizes, ints, syms.data());
    if (code == 0)
      return static_cast<int>(i);
    if (reason) {
      std::map<std::string, std::string> where;
      std::map<std::string, int64_t> values = namedValues(v, args, &where);
      *reason = code > 0 && static_cast<size_t>(code) <= v.checks.size()
                    ? withValues(v.checks[code - 1], values, where)
                    : "check " + std::to_string(code) + " failed";
    }
  }
  return -1;
}

bool FunctionTable::compileFor(std::span<const ArgRef> args,
                               const std::string &reason, Error &error) {
  LogFlags log = LogFlags::fromEnvironment();
  // Automatic dynamic: an auto dim whose value differs from the one a
  // variant specialized to becomes dynamic in the next compile.
  for (const auto &v : variants_) {
    std::map<std::string, int64_t> now = namedValues(*v, args);
    for (const auto &[name, value] : v->specialized) {
      auto it = now.find(name);
      if (it != now.end() && it->second != value &&
          dynamicDims_.insert(name).second && log.dynamic)
        std::fprintf(stderr,
                     "[tsl] dynamic: %s: '%s' was %lld, now %lld: compiling it "
                     "as dynamic\n",
                     name_.c_str(), name.c_str(), static_cast<long long>(value),
                     static_cast<long long>(it->second));
    }
  }
  bool allDynamic = false;
  if (variants_.size() >= options_.cacheLimit) {
    if (compiledAllDynamic_) {
      error = {ErrorKind::CacheLimit,
               "'" + name_ + "' has " + std::to_string(variants_.size()) +
                   " variants (the cache limit) and none serves this call: " +
                   reason,
               {}};
      return false;
    }
    allDynamic = true;
  }
  VariantCode code;
  auto start = std::chrono::steady_clock::now();
  std::vector<CallArg> owned; // what the hook may keep
  for (size_t i = 0; i < args.size(); ++i) {
    owned.push_back(args[i].toCallArg());
    owned.back().donated = donates(i);
  }
  if (!hook_->compile(name_, owned, dynamicDims_, allDynamic, code, error))
    return false;
  double ms = std::chrono::duration<double, std::milli>(
                  std::chrono::steady_clock::now() - start)
                  .count();
  compiledAllDynamic_ |= allDynamic;
  if (code.fromCache)
    ++stats_.cacheHits;
  else
    ++stats_.compiles;
  if (!variants_.empty())
    stats_.recompileReasons.push_back(reason);
  if (log.recompiles && !variants_.empty())
    std::fprintf(stderr, "[tsl] recompile %s: %s -> variant %zu%s\n",
                 name_.c_str(), reason.c_str(), variants_.size(),
                 allDynamic ? " (cache limit reached: all dims dynamic)" : "");
  if (log.guards)
    for (const std::string &c : code.checks)
      if (c.rfind("guard ", 0) == 0)
        std::fprintf(stderr, "[tsl] guards %s variant %zu: %s\n", name_.c_str(),
                     variants_.size(), c.c_str() + 6);
  if (log.perf)
    std::fprintf(stderr, "[tsl] perf: %s %s variant %zu in %.1f ms\n",
                 code.fromCache ? "loaded from the compile cache" : "compiled",
                 name_.c_str(), variants_.size(), ms);
  publish(std::make_shared<VariantCode>(std::move(code)));
  refreshDispatcher();
#ifdef __GLIBC__
  // The compiler's working memory (IR, LLVM modules, proofs) is free now:
  // give it back to the OS. With the runtime's 1 GiB trim threshold
  // (tsl_rt_context_create) glibc would keep it, and a process that
  // compiled once would hold its compiler's peak for good. A compile takes
  // 100 ms and more; this, a few.
  malloc_trim(0);
#endif
  return true;
}

bool FunctionTable::checkArgs(std::span<const ArgRef> args, Error &error) {
  auto invalid = [&](std::string message) {
    error = {ErrorKind::InvalidArgument, std::move(message), {}};
    return false;
  };
  for (size_t i = 0; i < args.size(); ++i) {
    const ArgRef &a = args[i];
    if (a.isInt)
      continue;
    for (size_t d = 0; d < a.rank; ++d)
      if (a.shape[d] < 0)
        return invalid("argument " + std::to_string(i) +
                       " has a negative size");
    std::optional<int64_t> bytes =
        tensorBytes(a.shape, a.rank, elementBytes(a.dtype));
    if (!bytes)
      return invalid("argument " + std::to_string(i) + " (" + describeArg(a) +
                     ") has a size in bytes that does not fit in 64 bits");
    if (*bytes > maxTensorBytes())
      return invalid("argument " + std::to_string(i) + " (" + describeArg(a) +
                     ") is too large: " + tensorTooLargeMessage(*bytes));
    if (*bytes > 0 && !a.data)
      return invalid("argument " + std::to_string(i) + " (" + describeArg(a) +
                     ") has no data");
  }
  return true;
}

bool FunctionTable::call(const std::vector<CallArg> &args,
                         std::vector<Output> &outputs, int &variant,
                         std::string &error, void *stream) {
  Error e;
  if (call(args, outputs, variant, e, stream))
    return true;
  error = std::move(e.message);
  return false;
}

bool FunctionTable::call(const std::vector<CallArg> &args,
                         std::vector<Output> &outputs, int &variant,
                         Error &error, void *stream) {
  CallInput in;
  gather(std::span<const CallArg>(args), in);
  Results results;
  if (!call(in, results, variant, error, stream))
    return false;
  outputs.resize(results.size());
  for (size_t i = 0; i < results.size(); ++i) {
    const Results::Item &r = results.items[i];
    Output &out = outputs[i];
    out.dtype = r.dtype;
    out.shape.assign(results.shape(i), results.shape(i) + r.rank);
    out.data = r.data;
    out.onDevice = r.onDevice;
  }
  return true;
}

bool FunctionTable::call(std::span<const ArgRef> args, Results &results,
                         int &variant, Error &error, void *stream) {
  CallInput in;
  gather(args, in);
  return call(in, results, variant, error, stream);
}

bool FunctionTable::call(const CallInput &in, Results &results, int &variant,
                         Error &error, void *stream) {
  results.items.clear();
  results.shapes.clear();
  if (in.suspect() && !checkArgs(in.args(), error))
    return false;
  Symbols syms;
  int chosen = select(0, publishedCount_.load(std::memory_order_acquire), in,
                      syms, nullptr);
  if (chosen < 0 && (chosen = selectOrCompile(in, syms, error)) < 0)
    return false;
  countCall(chosen);
  variant = chosen;
  const VariantCode &v = *published_[chosen].load(std::memory_order_relaxed);
  if (anyDonated_ && !checkDonated(v, in.args(), error))
    return false;
  return run(v, in.args(), syms, results, error, stream);
}

bool FunctionTable::checkDonated(const VariantCode &v,
                                 std::span<const ArgRef> args,
                                 Error &error) const {
  auto invalid = [&](ErrorKind kind, std::string message) {
    error = {kind, std::move(message), {}};
    return false;
  };
  if (options_.device)
    return invalid(ErrorKind::Unsupported,
                   "not supported: donated arguments of '" + name_ +
                       "' on a GPU (donate on the CPU only)");
  auto span = [&](const ArgRef &a) {
    auto *p = static_cast<const char *>(a.data);
    return std::pair{p,
                     p + *tensorBytes(a.shape, a.rank, elementBytes(a.dtype))};
  };
  for (size_t i = 0; i < args.size(); ++i) {
    if (!donates(i))
      continue;
    const std::string name = "argument '" + v.params[i].name + "'";
    if (args[i].isInt)
      return invalid(ErrorKind::InvalidArgument,
                     name + " is donated but is an int");
    auto [lo, hi] = span(args[i]);
    for (size_t j = 0; j < args.size() && lo != hi; ++j) {
      if (j == i || args[j].isInt)
        continue;
      auto [lo2, hi2] = span(args[j]);
      if (lo < hi2 && lo2 < hi)
        return invalid(ErrorKind::InvalidArgument,
                       name + " is donated, but its memory is also argument '" +
                           v.params[j].name +
                           "': a call may overwrite a donated buffer, so it "
                           "must be passed once");
    }
  }
  return true;
}

int FunctionTable::selectOrCompile(const CallInput &in, Symbols &syms,
                                   Error &error) {
  std::lock_guard<std::mutex> lock(mutex_);
  // Explain the miss, and look at variants other threads added meanwhile.
  std::string reason = "no variant compiled yet";
  size_t now = publishedCount_.load(std::memory_order_acquire);
  int chosen = select(0, now, in, syms, &reason);
  if (chosen >= 0)
    return chosen;
  if (!hook_) {
    error = {ErrorKind::NoVariant,
             "no compiled variant of '" + name_ + "' serves this call (" +
                 reason + ") and this runtime has no compiler",
             {}};
    return -1;
  }
  if (variants_.size() >= kMaxVariants) {
    error = {
        ErrorKind::CacheLimit, "'" + name_ + "' has too many variants", {}};
    return -1;
  }
  if (!compileFor(in.args(), reason, error))
    return -1;
  size_t last = publishedCount_.load(std::memory_order_acquire) - 1;
  std::string why;
  if (select(last, last + 1, in, syms, &why) < 0) {
    error = {ErrorKind::Internal,
             "the variant compiled for this call of '" + name_ +
                 "' rejects it: " + why,
             {}};
    return -1;
  }
  return static_cast<int>(last);
}

void FunctionTable::countCall(int chosen) {
  variantCalls_[chosen].fetch_add(1, std::memory_order_relaxed);
  // The log of the first calls: a ticket each, then nothing once full.
  if (callLogNext_.load(std::memory_order_relaxed) >= kCallLogSize)
    return;
  size_t n = callLogNext_.fetch_add(1, std::memory_order_relaxed);
  if (n >= kCallLogSize)
    return;
  std::atomic<std::atomic<uint8_t> *> &slot = callLog_[n / kCallLogChunk];
  std::atomic<uint8_t> *chunk = slot.load(std::memory_order_acquire);
  if (!chunk) {
    // Once per 4,096 of the first 100,000 calls; a lost race frees its own.
    auto *fresh = new (std::nothrow) std::atomic<uint8_t>[kCallLogChunk]();
    if (!fresh)
      return; // out of memory: the call goes unlogged
    if (slot.compare_exchange_strong(chunk, fresh, std::memory_order_acq_rel,
                                     std::memory_order_acquire))
      chunk = fresh;
    else
      delete[] fresh;
  }
  chunk[n % kCallLogChunk].store(static_cast<uint8_t>(chosen + 1),
                                 std::memory_order_relaxed);
}

bool FunctionTable::run(const VariantCode &v, std::span<const ArgRef> args,
                        Symbols &syms, Results &results, Error &error,
                        void *stream) const {
  // The kernel's buffers: on the stack, or the thread's own array.
  constexpr size_t kOnStack = 128;
  Scratch<void *, kOnStack> onStack;
  size_t n = v.numValues + 1;
  void **threadOwned = n > kOnStack ? acquireBuffers(n) : nullptr;
  void **b = threadOwned ? threadOwned : onStack.resizeForOverwrite(n);
  std::memset(b, 0, n * sizeof(void *));
  for (size_t i = 0; i < args.size(); ++i)
    if (!args[i].isInt)
      b[v.params[i].value] = const_cast<void *>(args[i].data);
  bool ok;
  if (v.device) {
    ok = runOnDevice(v, b, syms, results, error, stream);
  } else {
    tsl_rt_context *ctx = acquireContext();
    ok = finishRun(v, v.kernel(b, syms.data(), ctx), b, syms, ctx, results,
                   error, stream);
    notePeakBytes(ctx->peakBytes);
    releaseContext(ctx);
  }
  if (threadOwned)
    releaseBuffers();
  return ok;
}

bool FunctionTable::runOnDevice(const VariantCode &v, void **buffers,
                                Symbols &syms, Results &results, Error &error,
                                void *stream) const {
  if (!options_.device) {
    error = {ErrorKind::Internal,
             "a GPU variant of '" + name_ + "' on a runtime without a GPU",
             {}};
    return false;
  }
  tsl_rt_context *ctx = acquireContext();
  GpuDevice::Call gpuCall(*options_.device, *v.device,
                          static_cast<CUstream>(stream));
  tsl_rt_context_set_device(ctx, gpuCall.abi());
  results.copiedOnDevice = false;
  beginGpuCounters();
  bool ok = finishRun(v, v.kernel(buffers, syms.data(), ctx), buffers, syms,
                      ctx, results, error, stream);
  logGpuCounters(name_);
  releaseContext(ctx); // its device memory goes back while the call lives
  // The call returns synchronized with its stream (tsl_c.h): results are
  // complete for any stream and the host, arguments free to reuse.
  std::string message;
  if (!gpuCall.finish(results.copiedOnDevice, message) && ok) {
    for (size_t i = 0; i < results.size(); ++i)
      GpuDevice::releaseHandedOver(results.items[i].data);
    results.items.clear();
    results.shapes.clear();
    error = {ErrorKind::RuntimeCheck, message, {}};
    ok = false;
  }
  return ok;
}

bool FunctionTable::finishRun(const VariantCode &v, int32_t status,
                              void *const *buffers, Symbols &syms,
                              tsl_rt_context *ctx, Results &results,
                              Error &error, void *stream) const {
  if (status == 0)
    return collectOutputs(v, buffers, syms, ctx, results, error, stream);
  // A failed assertion or check, or a library kernel's error.
  int32_t op = tsl_rt_context_failed_op(ctx);
  std::string message = tsl_rt_context_error(ctx);
  if (op >= 0 && static_cast<size_t>(op) < v.ops.size()) {
    const OpInfoRt &info = v.ops[op];
    error = {ErrorKind::RuntimeCheck,
             info.location + ": " + info.what +
                 (message.empty() ? "" : ": " + message),
             info.location};
  } else {
    error = {ErrorKind::RuntimeCheck,
             message.empty() ? "the kernel failed" : message,
             {}};
  }
  return false;
}

bool FunctionTable::collectOutputs(const VariantCode &v, void *const *buffers,
                                   Symbols &syms, tsl_rt_context *ctx,
                                   Results &results, Error &error,
                                   void *stream) const {
  size_t total = 0;
  for (const ResultInfo &r : v.results)
    total += static_cast<size_t>(r.rank);
  Scratch<int64_t, 64> &shapes = results.shapes;
  shapes.clear();
  shapes.resize(total + 1, 0);
  v.shapes(syms.data(), shapes.data());
  results.items.clear();
  size_t k = 0;
  bool ok = true;
  std::string message;
  for (const ResultInfo &r : v.results) {
    Results::Item out;
    out.dtype = r.dtype;
    out.rank = static_cast<size_t>(r.rank);
    out.shapeAt = k;
    int64_t numel = 1;
    for (int32_t d = 0; d < r.rank; ++d)
      numel *= shapes[k++];
    size_t bytes = static_cast<size_t>(numel) * elementBytes(r.dtype);
    if (v.device) {
      // Device memory: handed over, or copied when it is an argument's.
      GpuDevice &gpu = *options_.device;
      out.onDevice = true;
      if (buffers[r.value] &&
          tsl_rt_context_take_device(ctx, buffers[r.value])) {
        out.data = buffers[r.value];
      } else {
        out.data = gpu.allocate(bytes, message, static_cast<CUstream>(stream));
        results.copiedOnDevice |= bytes != 0;
        if (!out.data ||
            (bytes &&
             !gpu.copy(GpuDevice::Copy::OnDevice, out.data, buffers[r.value],
                       bytes, message, static_cast<CUstream>(stream)))) {
          gpu.release(out.data, static_cast<CUstream>(stream));
          ok = false;
          break;
        }
      }
      gpu.handOver(out.data, static_cast<CUstream>(stream));
      results.items.push_back(out);
      continue;
    }
    // A result the kernel allocated is handed over without a copy, and so
    // is a donated argument's buffer (once); one that aliases another
    // argument (or another result) is copied.
    if (buffers[r.value] &&
        (tsl_rt_context_take(ctx, buffers[r.value]) ||
         takeDonated(v, buffers, buffers[r.value], results))) {
      out.data = buffers[r.value];
    } else {
      out.data = std::malloc(bytes ? bytes : 1);
      if (!out.data) {
        message = "out of memory for a result";
        ok = false;
        break;
      }
      if (bytes)
        std::memcpy(out.data, buffers[r.value], bytes);
    }
    results.items.push_back(out);
  }
  if (ok) {
    freeDonated(v, buffers, results);
    return true;
  }
  error = {ErrorKind::Resource, message, {}};
  for (size_t i = 0; i < results.size(); ++i) {
    if (results.items[i].onDevice)
      GpuDevice::releaseHandedOver(results.items[i].data);
    else if (!isDonated(v, buffers, results.items[i].data))
      std::free(results.items[i].data); // a donated one stays the caller's
  }
  results.items.clear();
  shapes.clear();
  return false;
}

bool FunctionTable::isDonated(const VariantCode &v, void *const *buffers,
                              const void *data) const {
  for (size_t i = 0; anyDonated_ && i < v.params.size(); ++i)
    if (donates(i) && buffers[v.params[i].value] == data)
      return true;
  return false;
}

bool FunctionTable::takeDonated(const VariantCode &v, void *const *buffers,
                                const void *data, const Results &taken) const {
  if (!isDonated(v, buffers, data))
    return false;
  for (size_t k = 0; k < taken.size(); ++k)
    if (taken.items[k].data == data)
      return false; // a second result in it is a copy
  return true;
}

void FunctionTable::freeDonated(const VariantCode &v, void *const *buffers,
                                const Results &results) const {
  for (size_t i = 0; anyDonated_ && i < v.params.size(); ++i) {
    if (!donates(i))
      continue;
    void *data = buffers[v.params[i].value];
    bool handedOver = false;
    for (size_t k = 0; k < results.size(); ++k)
      handedOver |= results.items[k].data == data;
    if (!handedOver)
      std::free(data);
  }
}

} // namespace tsl::rt
