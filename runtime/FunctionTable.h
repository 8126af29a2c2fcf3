#pragma once
/// \file A function's variant table: first match wins, a miss compiles a new
/// variant through the compiler hook (automatic dynamic, cache limit, then
/// one all-dynamic variant), and calls run the chosen native kernel.

#include "runtime/Variant.h"
#include "support/SizeLimits.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdio>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

namespace tsl::rt {

/// A buffer of trivially copyable values that lives on the stack up to \p N
/// of them and moves to the heap beyond: the call path's scratch storage,
/// which allocates nothing for calls of ordinary size (and initializes only
/// the values it holds). Not copyable (it points into itself).
template <typename T, size_t N> class Scratch {
  static_assert(std::is_trivially_copyable_v<T>);

public:
  Scratch() = default;
  Scratch(const Scratch &) = delete;
  Scratch &operator=(const Scratch &) = delete;
  ~Scratch() { delete[] heap_; }

  T *data() { return data_; }
  const T *data() const { return data_; }
  size_t size() const { return size_; }
  T &operator[](size_t i) { return data_[i]; }
  const T &operator[](size_t i) const { return data_[i]; }
  /// Sets the size to \p n, keeping the first values; new ones are \p fill.
  void resize(size_t n, T fill = T()) {
    if (n > capacity_)
      grow(n);
    for (size_t i = size_; i < n; ++i)
      data_[i] = fill;
    size_ = n;
  }
  /// Sets the size to \p n without writing new values (the caller writes
  /// every one); returns data().
  T *resizeForOverwrite(size_t n) {
    if (n > capacity_)
      grow(n);
    size_ = n;
    return data_;
  }
  void push_back(const T &v) {
    resize(size_ + 1);
    data_[size_ - 1] = v;
  }
  void clear() { size_ = 0; }

private:
  /// Moves the values to the heap with room for \p n (at least twice the
  /// old room).
  [[gnu::noinline]] void grow(size_t n) {
    size_t room = std::max(n, 2 * capacity_);
    T *grown = new T[room];
    std::copy(data_, data_ + size_, grown);
    delete[] heap_;
    heap_ = data_ = grown;
    capacity_ = room;
  }
  /// Storage left uninitialized until resize() writes it.
  union Inline {
    Inline() {}
    T values[N];
  } inline_;
  T *heap_ = nullptr;
  T *data_ = inline_.values;
  size_t size_ = 0, capacity_ = N;
};

/// A result tensor; `data` is malloc'd (or, from a GPU variant, device
/// memory handed over with GpuDevice::handOver) and owned by whoever takes
/// it.
struct Output {
  int32_t dtype = 0;
  std::vector<int64_t> shape;
  void *data = nullptr;
  bool onDevice = false;
};

/// One call's arguments as views, with what the dispatcher reads of them
/// (see DispatchFn: the signature, every tensor's sizes in order, the ints
/// in order), gathered in one pass by whoever makes the views (the C API
/// while it checks its tsl_args). No allocation for up to 16 arguments
/// with 64 dims in all. The views must outlive the call.
class CallInput {
public:
  CallInput() = default;
  CallInput(const CallInput &) = delete;
  CallInput &operator=(const CallInput &) = delete;

  /// Starts a call of \p count arguments, each set() once.
  void begin(size_t count) {
    args_.resizeForOverwrite(count);
    int64_t *signature = signature_.resizeForOverwrite(count + 1);
    signature[0] = static_cast<int64_t>(count);
    sizes_.clear();
    ints_.clear();
    limit_ = maxTensorBytes();
    suspect_ = false;
  }
  /// Argument \p i. Notes (cheaply) whether the call needs checkArgs():
  /// a negative size, a byte size over the limit or out of int64, no data
  /// where there are bytes. (Inlined: a call through memory would read
  /// the ArgRef its caller just wrote field by field, a store-forwarding
  /// stall per argument.)
  [[gnu::always_inline]] void set(size_t i, const ArgRef &a) {
    // Locals, not members, in the loop: its int64 stores may alias them.
    const int64_t *shape = a.shape, limit = limit_;
    const size_t rank = a.rank;
    const bool isInt = a.isInt, noData = a.data == nullptr;
    const int32_t dtype = a.dtype;
    args_[i] = a;
    signature_[i + 1] = argSignature(isInt, dtype, rank);
    if (isInt) {
      ints_.push_back(a.intValue);
      return;
    }
    size_t at = sizes_.size();
    int64_t *sizes = sizes_.resizeForOverwrite(at + rank) + at;
    int64_t bytes = static_cast<int64_t>(elementBytes(dtype));
    bool bad = false;
    for (size_t d = 0; d < rank; ++d) {
      int64_t n = shape[d];
      sizes[d] = n;
      bad |= (n < 0) | __builtin_mul_overflow(bytes, n, &bytes);
    }
    suspect_ |= bad | (bytes > limit) | ((bytes != 0) & noData);
  }

  std::span<const ArgRef> args() const { return {args_.data(), args_.size()}; }
  const int64_t *signature() const { return signature_.data(); }
  const int64_t *sizes() const { return sizes_.data(); }
  const int64_t *ints() const { return ints_.data(); }
  /// Whether set() saw an argument checkArgs() may reject.
  bool suspect() const { return suspect_; }

private:
  Scratch<ArgRef, 16> args_;
  Scratch<int64_t, 17> signature_;
  Scratch<int64_t, 64> sizes_;
  Scratch<int64_t, 16> ints_;
  int64_t limit_ = 0;
  bool suspect_ = false;
};

/// The results of one call in the call's own storage (no allocation for up
/// to 8 results with 64 dims in all): what the allocation-free call()
/// fills. Each result's data is owned as an Output's is.
struct Results {
  struct Item {
    int32_t dtype = 0;
    bool onDevice = false;
    void *data = nullptr;
    size_t rank = 0;
    size_t shapeAt = 0; ///< where its sizes start in `shapes`
  };
  Scratch<Item, 8> items;
  Scratch<int64_t, 64> shapes;
  /// Whether collecting the results enqueued device copies (a GPU result
  /// that aliases an argument or another result).
  bool copiedOnDevice = false;
  size_t size() const { return items.size(); }
  /// The sizes of result \p i (`items[i].rank` of them).
  const int64_t *shape(size_t i) const {
    return shapes.data() + items[i].shapeAt;
  }
};

/// What a table has done, for `--stats` and tests.
struct Stats {
  size_t compiles = 0;  ///< variants compiled
  size_t cacheHits = 0; ///< variants loaded from the on-disk cache instead
  size_t calls = 0;
  /// The variant of each call (the first 100,000 calls), in the order the
  /// calls chose their variant; a call still running in another thread may
  /// be missing.
  std::vector<int> callVariants;
  /// How many calls each variant served, by variant index (every call).
  std::vector<size_t> variantCalls;
  std::vector<std::string> recompileReasons;
  /// The most host memory one call (of a CPU variant) held at once beyond
  /// its arguments: its intermediates and results, rounded as allocated.
  /// 0 before the first call; GPU variants' device memory is not counted.
  int64_t peakBytes = 0;
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
  /// The parameters (by index) whose buffers every call donates, as JAX's
  /// donate_argnums: the argument's memory must be a malloc'd block (a
  /// result of an earlier call) that the call takes over. On success it is
  /// a result's memory (written in place) or freed; the caller must not
  /// touch it again. On failure it stays the caller's, its contents
  /// unspecified when the kernel ran. CPU tables only.
  std::vector<bool> donated;
};

/// Which events to log to stderr
/// (TSL_LOGS=recompiles,guards,dynamic,perf,gpu-counters).
struct LogFlags {
  bool recompiles = false, guards = false, dynamic = false, perf = false;
  /// The GPU emulator's memory counters per kernel after each call
  /// (runtime/GpuCounters.h); "all" leaves them off (they slow the
  /// emulator and change how kernels compile).
  bool gpuCounters = false;
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
  ~FunctionTable();
  FunctionTable(const FunctionTable &) = delete;
  FunctionTable &operator=(const FunctionTable &) = delete;

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
  /// On success \p outputs holds the results (resized to their number; a
  /// vector reused across calls keeps its storage), on failure it is left
  /// as it was.
  bool call(const std::vector<CallArg> &args, std::vector<Output> &outputs,
            int &variant, Error &error, void *stream = nullptr);
  /// call() with the error's message only (tools that print it).
  bool call(const std::vector<CallArg> &args, std::vector<Output> &outputs,
            int &variant, std::string &error, void *stream = nullptr);
  /// call() over views of the arguments with the results in \p results:
  /// a call a variant already serves allocates and formats nothing beyond
  /// what the kernel allocates for its results, as long as the arguments
  /// and the results fit CallInput's and Results' inline storage. Errors
  /// (the slow path) are as call()'s, with \p results empty.
  bool call(std::span<const ArgRef> args, Results &results, int &variant,
            Error &error, void *stream = nullptr);
  /// call() over arguments gathered in \p in (the C API's path).
  bool call(const CallInput &in, Results &results, int &variant, Error &error,
            void *stream = nullptr);

  /// The function's parameter count: its variants', else its compiler's
  /// (CompilerHook::arity: nullopt when unknown, or with \p error set when
  /// no call can be compiled). Allocates nothing once a variant exists.
  std::optional<size_t> arity(Error &error) const;
  /// The function's name.
  const std::string &name() const { return name_; }

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
  /// A call's symbol values (the matcher binds them, the kernel reads them).
  using Symbols = Scratch<int64_t, 64>;
  /// The first variant whose matcher accepts the call, or -1 with the
  /// reason the last one rejected it. Uses the native dispatcher for the
  /// variants it covers when no reason is wanted.
  int select(size_t first, size_t count, const CallInput &in, Symbols &syms,
             std::string *reason) const;
  /// The slow path of a call no published variant serves (under mutex_):
  /// explains the miss and compiles a variant; the chosen index or -1.
  int selectOrCompile(const CallInput &in, Symbols &syms, Error &error);
  /// Counts a call of variant \p chosen (lock-free).
  void countCall(int chosen);
  /// Makes variant \p v visible to lock-free readers (under mutex_).
  void publish(std::shared_ptr<VariantCode> v);
  /// Recompiles the native dispatcher over every variant (under mutex_).
  void refreshDispatcher();
  /// Checks every tensor argument's sizes, byte size and data pointer
  /// (false with the first problem; for calls CallInput finds suspect).
  static bool checkArgs(std::span<const ArgRef> args, Error &error);
  bool compileFor(std::span<const ArgRef> args, const std::string &reason,
                  Error &error);
  /// Runs \p v's kernel on the call's buffers and collects its results.
  bool run(const VariantCode &v, std::span<const ArgRef> args, Symbols &syms,
           Results &results, Error &error, void *stream) const;
  /// Raises Stats::peakBytes to \p bytes (one call's peak) if it is larger.
  void notePeakBytes(int64_t bytes) const;
  /// run() for a GPU variant: its kernel under a GpuDevice::Call.
  bool runOnDevice(const VariantCode &v, void **buffers, Symbols &syms,
                   Results &results, Error &error, void *stream) const;
  /// After the kernel returned \p status: the results, or its error.
  bool finishRun(const VariantCode &v, int32_t status, void *const *buffers,
                 Symbols &syms, tsl_rt_context *ctx, Results &results,
                 Error &error, void *stream) const;
  /// Whether parameter \p i's buffer is donated (TableOptions::donated).
  bool donates(size_t i) const {
    return i < options_.donated.size() && options_.donated[i];
  }
  /// Checks the donated arguments of a call of \p v: tensors, on the CPU,
  /// sharing no memory with another argument. False with \p error.
  bool checkDonated(const VariantCode &v, std::span<const ArgRef> args,
                    Error &error) const;
  /// Whether \p data is a donated argument's buffer of a call of \p v.
  bool isDonated(const VariantCode &v, void *const *buffers,
                 const void *data) const;
  /// Whether result memory \p data is a donated argument's buffer that no
  /// result in \p taken has yet: the result takes it without a copy.
  bool takeDonated(const VariantCode &v, void *const *buffers, const void *data,
                   const Results &taken) const;
  /// After a successful call: frees each donated buffer no result took.
  void freeDonated(const VariantCode &v, void *const *buffers,
                   const Results &results) const;
  /// Copies or hands over the results of a successful kernel run.
  bool collectOutputs(const VariantCode &v, void *const *buffers, Symbols &syms,
                      tsl_rt_context *ctx, Results &results, Error &error,
                      void *stream) const;

  std::string name_;
  CompilerHook *hook_;
  TableOptions options_;
  bool anyDonated_ = false; ///< some parameter is donated
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
  /// compiles, cacheHits and recompileReasons (under mutex_); the call
  /// counts are the atomics below.
  Stats stats_;

  /// Calls served by each variant (relaxed atomics: a call takes no lock).
  /// On their own cache lines, away from what every call reads.
  alignas(64) std::array<std::atomic<size_t>, kMaxVariants> variantCalls_{};
  /// The log behind Stats::callVariants: entry n is 1 + the variant of the
  /// n-th call (0 until that call stores it), in chunks allocated by the
  /// first call that needs one.
  static constexpr size_t kCallLogSize = 100000, kCallLogChunk = 4096;
  alignas(64) std::atomic<size_t> callLogNext_{0};
  /// Stats::peakBytes: the largest call's peak so far.
  mutable std::atomic<int64_t> peakBytes_{0};
  std::array<std::atomic<std::atomic<uint8_t> *>,
             (kCallLogSize + kCallLogChunk - 1) / kCallLogChunk>
      callLog_{};
};

} // namespace tsl::rt
