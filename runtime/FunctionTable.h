#pragma once
/// \file A function's variant table: first match wins, a miss compiles a new
/// variant through the compiler hook (automatic dynamic, cache limit, then
/// one all-dynamic variant), and calls run the chosen native kernel.

#include "runtime/Variant.h"

#include <array>
#include <atomic>
#include <cstdio>
#include <mutex>
#include <string>
#include <vector>

namespace tsl::rt {

/// A result tensor; `data` is malloc'd (or, from a GPU variant, device
/// memory handed over with GpuDevice::handOver) and owned by whoever takes
/// it.
struct Output {
  int32_t dtype = 0;
  std::vector<int64_t> shape;
  void *data = nullptr;
  bool onDevice = false;
};

/// What a table has done, for `--stats` and tests.
struct Stats {
  size_t compiles = 0;  ///< variants compiled
  size_t cacheHits = 0; ///< variants loaded from the on-disk cache instead
  size_t calls = 0;
  /// The variant of each call (the first 100,000 calls).
  std::vector<int> callVariants;
  /// How many calls each variant served, by variant index (every call).
  std::vector<size_t> variantCalls;
  std::vector<std::string> recompileReasons;
};

/// What one variant of a table is, for embedders that list them (the
/// Python package's `fn.variants`): no code, only descriptions.
struct VariantSummary {
  /// What its matcher checks of a call, in order: argument dims and ints
  /// ("argument 'x' dim 0 must be N", "argument 'k' must be 3"), declared
  /// ranges, and guards ("guard N == 4 (m.tsl:3:7, matmul)").
  std::vector<std::string> checks;
  /// auto dims and int params specialized to a value in this variant.
  std::map<std::string, int64_t> specialized;
  bool fromCache = false; ///< loaded from the on-disk compile cache
  bool onDevice = false;  ///< a GPU variant
};

struct TableOptions {
  size_t cacheLimit = 8;
  /// The GPU the variants run on (their buffers are its memory); null for
  /// CPU variants.
  std::shared_ptr<class GpuDevice> device;
};

/// Which events to log to stderr (TSL_LOGS=recompiles,guards,dynamic,perf).
struct LogFlags {
  bool recompiles = false, guards = false, dynamic = false, perf = false;
  /// The flags in effect now: those setActive() installed, else TSL_LOGS
  /// (read at each call, so a table sees a change at its next event).
  static LogFlags fromEnvironment();
  /// Parses a comma-separated list of the names above ("" or "none": no
  /// logs, "all": every one). False with \p error naming an unknown name.
  static bool parse(const std::string &spec, LogFlags &out, std::string &error);
  /// Replaces TSL_LOGS for the whole process (every table, existing ones
  /// too); null goes back to TSL_LOGS. Thread-safe (one atomic word).
  static void setActive(const LogFlags *flags);
};

class FunctionTable {
public:
  FunctionTable(std::string name, CompilerHook *hook,
                TableOptions options = {});

  /// Adds a precompiled variant (AOT), tried after the existing ones.
  void addVariant(VariantCode variant);
  /// Installs a native dispatcher over the first `d.count` variants (AOT
  /// modules ship one; JIT tables compile one after each new variant).
  void setDispatcher(Dispatcher d);

  /// Runs one call. Returns false with \p error naming the argument and
  /// dim, the failing guards, or the failed check and its source line; its
  /// kind is InvalidArgument (the arguments), NoVariant (no compiler),
  /// CacheLimit (the cache is full), RuntimeCheck or Resource (the kernel
  /// failed), Internal, or the compiler's kind for a failed compile.
  /// Safe to call from several threads at once.
  /// GPU variants run on \p stream (a CUstream; null: the device's own).
  bool call(const std::vector<CallArg> &args, std::vector<Output> &outputs,
            int &variant, Error &error, void *stream = nullptr);
  /// call() with the error's message only (tools that print it).
  bool call(const std::vector<CallArg> &args, std::vector<Output> &outputs,
            int &variant, std::string &error, void *stream = nullptr);

  Stats stats() const;
  size_t numVariants() const;
  /// Every variant in dispatch order (first match wins).
  std::vector<VariantSummary> variantSummaries() const;
  /// How many variants (from the first) the native dispatcher chooses
  /// among; 0 when there is none.
  size_t dispatcherCoverage() const {
    const Dispatcher *d = dispatcher_.load(std::memory_order_acquire);
    return d ? d->count : 0;
  }
  /// Only the variant choice (argument matching and guards) of a call: the
  /// variant index or -1. For measuring dispatch overhead.
  int dispatch(const std::vector<CallArg> &args,
               std::vector<int64_t> &syms) const;

private:
  /// The first variant whose matcher accepts the call, or -1 with the
  /// reason the last one rejected it. Uses the native dispatcher for the
  /// variants it covers when no reason is wanted.
  int select(size_t first, size_t count, const std::vector<CallArg> &args,
             std::vector<int64_t> &syms, std::string *reason) const;
  /// Makes variant \p v visible to lock-free readers (under mutex_).
  void publish(std::shared_ptr<VariantCode> v);
  /// Recompiles the native dispatcher over every variant (under mutex_).
  void refreshDispatcher();
  /// Checks every tensor argument's sizes, byte size and data pointer.
  static bool checkArgs(const std::vector<CallArg> &args, Error &error);
  bool compileFor(const std::vector<CallArg> &args, const std::string &reason,
                  Error &error);
  bool run(const VariantCode &v, const std::vector<CallArg> &args,
           std::vector<int64_t> &syms, std::vector<Output> &outputs,
           Error &error, void *stream) const;
  /// Copies or hands over the results of a successful kernel run.
  bool collectOutputs(const VariantCode &v, std::vector<void *> &buffers,
                      std::vector<int64_t> &syms, tsl_rt_context *ctx,
                      std::vector<Output> &outputs, Error &error,
                      void *stream) const;

  std::string name_;
  CompilerHook *hook_;
  TableOptions options_;
  mutable std::mutex mutex_;
  std::vector<std::shared_ptr<VariantCode>> variants_; ///< owned; only grows
  /// Lock-free view for dispatch: variants are never removed, so readers
  /// load the count (acquire) and then the pointers.
  static constexpr size_t kMaxVariants = 64;
  std::array<std::atomic<const VariantCode *>, kMaxVariants> published_{};
  std::atomic<size_t> publishedCount_{0};
  /// Symbols the largest variant binds (syms must hold that many).
  std::atomic<size_t> maxSymbols_{0};
  /// Dispatchers only grow too; the newest is published for readers.
  std::vector<std::unique_ptr<Dispatcher>> dispatchers_;
  std::atomic<const Dispatcher *> dispatcher_{nullptr};
  std::set<std::string> dynamicDims_;
  bool compiledAllDynamic_ = false;
  Stats stats_;
};

} // namespace tsl::rt
