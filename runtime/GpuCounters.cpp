// The GPU emulator's memory counters: warp accesses gathered lane by lane
// as the fibers run, evaluated once all 32 lanes came (or at the next
// barrier or the end of the block), summed per kernel over a call.
#include "runtime/GpuCounters.h"

#include "runtime/FunctionTable.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <unordered_map>

namespace tsl::rt {

namespace {

constexpr int32_t kLanes = 32;
constexpr int32_t kBanks = 32;

std::atomic<bool> forced{false};

/// This thread's counters since beginGpuCounters, per kernel.
thread_local std::vector<GpuKernelCounters> callCounters;

void add(GpuKernelCounters &to, const GpuKernelCounters &c) {
  to.threads = c.threads;
  to.sharedBytes = c.sharedBytes;
  to.launches += c.launches;
  to.blocks += c.blocks;
  to.barriers += c.barriers;
  to.sharedLoads += c.sharedLoads;
  to.sharedStores += c.sharedStores;
  to.loadReplays += c.loadReplays;
  to.storeReplays += c.storeReplays;
  to.globalRequests += c.globalRequests;
  to.globalSectors += c.globalSectors;
  to.globalIdeal += c.globalIdeal;
}

/// Wavefronts of one phase: the most distinct words a bank holds.
int64_t wavefronts(std::vector<uint64_t> &words) {
  if (words.empty())
    return 0;
  std::sort(words.begin(), words.end());
  words.erase(std::unique(words.begin(), words.end()), words.end());
  int32_t perBank[kBanks] = {};
  int32_t most = 0;
  for (uint64_t w : words)
    most = std::max(most, ++perBank[w % kBanks]);
  return most;
}

} // namespace

bool gpuCountersEnabled() {
  return forced.load(std::memory_order_relaxed) ||
         LogFlags::fromEnvironment().gpuCounters;
}

void setGpuCountersForced(bool on) {
  forced.store(on, std::memory_order_relaxed);
}

void beginGpuCounters() { callCounters.clear(); }

std::vector<GpuKernelCounters> gpuCountersOfLastCall() { return callCounters; }

std::string formatGpuCounters(const GpuKernelCounters &c) {
  auto per = [&](int64_t n) {
    return c.globalRequests
               ? static_cast<double>(n) / static_cast<double>(c.globalRequests)
               : 0.0;
  };
  // Kernels compiled before counters were on count no accesses (and say
  // no number): their barriers only.
  char name[64] = "kernels compiled without counters";
  if (c.kernel >= 0)
    std::snprintf(name, sizeof name, "kernel %d", c.kernel);
  char line[576];
  std::snprintf(
      line, sizeof line,
      "%s: %lld launch%s of %d threads, %d shared bytes: %lld blocks, "
      "%lld barriers; shared: %lld "
      "loads (%lld bank-conflict replays), %lld stores (%lld replays); "
      "global: %lld requests, %lld sectors (%.2f per request, ideal %.2f)",
      name, static_cast<long long>(c.launches), c.launches == 1 ? "" : "es",
      c.threads, c.sharedBytes, static_cast<long long>(c.blocks),
      static_cast<long long>(c.barriers), static_cast<long long>(c.sharedLoads),
      static_cast<long long>(c.loadReplays),
      static_cast<long long>(c.sharedStores),
      static_cast<long long>(c.storeReplays),
      static_cast<long long>(c.globalRequests),
      static_cast<long long>(c.globalSectors), per(c.globalSectors),
      per(c.globalIdeal));
  return line;
}

void logGpuCounters(const std::string &function) {
  if (callCounters.empty() || !LogFlags::fromEnvironment().gpuCounters)
    return;
  for (const GpuKernelCounters &c : callCounters)
    std::fprintf(stderr, "[tsl] gpu-counters %s: %s\n", function.c_str(),
                 formatGpuCounters(c).c_str());
}

int64_t sharedReplays(const LaneAccess *lanes) {
  uint32_t width = 0;
  for (int32_t l = 0; l < kLanes; ++l)
    width = std::max(width, lanes[l].bytes);
  if (width == 0)
    return 0;
  // 128 bytes per phase: 32 lanes of up to 4 bytes, 16 of 8, 8 of 16.
  int32_t perPhase =
      width <= 4 ? kLanes
                 : std::max<int32_t>(1, 128 / static_cast<int32_t>(width));
  int64_t replays = 0;
  std::vector<uint64_t> words;
  for (int32_t first = 0; first < kLanes; first += perPhase) {
    words.clear();
    for (int32_t l = first; l < first + perPhase && l < kLanes; ++l) {
      const LaneAccess &a = lanes[l];
      if (a.bytes == 0)
        continue;
      for (uint64_t w = a.address / 4; w <= (a.address + a.bytes - 1) / 4; ++w)
        words.push_back(w);
    }
    int64_t n = wavefronts(words);
    if (n > 0)
      replays += n - 1;
  }
  return replays;
}

int64_t globalSectors(const LaneAccess *lanes, int64_t &ideal) {
  std::vector<uint64_t> sectors;
  std::vector<std::pair<uint64_t, uint32_t>> distinct;
  for (int32_t l = 0; l < kLanes; ++l) {
    const LaneAccess &a = lanes[l];
    if (a.bytes == 0)
      continue;
    distinct.emplace_back(a.address, a.bytes);
    for (uint64_t s = a.address / 32; s <= (a.address + a.bytes - 1) / 32; ++s)
      sectors.push_back(s);
  }
  std::sort(sectors.begin(), sectors.end());
  sectors.erase(std::unique(sectors.begin(), sectors.end()), sectors.end());
  std::sort(distinct.begin(), distinct.end());
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  int64_t bytes = 0;
  for (const auto &d : distinct)
    bytes += d.second;
  ideal = (bytes + 31) / 32;
  return static_cast<int64_t>(sectors.size());
}

/// One warp access waiting for its lanes.
struct LaunchCounters::Pending {
  bool store = false;
  int32_t arrived = 0;
  LaneAccess lanes[kLanes];
};

struct LaunchCounters::State {
  /// Per thread: how often it executed each site in this block.
  std::vector<std::vector<uint32_t>> executions;
  /// Per warp: accesses by (site, execution).
  std::vector<std::unordered_map<uint64_t, Pending>> pending;
};

LaunchCounters::LaunchCounters(int32_t threads, const void *shared,
                               int32_t sharedBytes)
    : threads_(threads), state_(new State) {
  sharedBegin_ = reinterpret_cast<uint64_t>(shared);
  sharedEnd_ = sharedBegin_ + static_cast<uint64_t>(sharedBytes);
  state_->executions.resize(static_cast<size_t>(threads));
  state_->pending.resize(static_cast<size_t>((threads + kLanes - 1) / kLanes));
  counters_.launches = 1;
  counters_.threads = threads;
  counters_.sharedBytes = sharedBytes;
}

LaunchCounters::~LaunchCounters() { delete state_; }

void LaunchCounters::access(int32_t thread, int32_t site, const void *address,
                            uint32_t bytes, bool store) {
  if (thread < 0 || thread >= threads_ || site < 0 || bytes == 0)
    return;
  std::vector<uint32_t> &runs = state_->executions[static_cast<size_t>(thread)];
  if (runs.size() <= static_cast<size_t>(site))
    runs.resize(static_cast<size_t>(site) + 1, 0);
  uint64_t key =
      (static_cast<uint64_t>(site) << 32) | runs[static_cast<size_t>(site)]++;
  auto &warp = state_->pending[static_cast<size_t>(thread / kLanes)];
  Pending &p = warp[key];
  p.store = store;
  LaneAccess &lane = p.lanes[thread % kLanes];
  if (lane.bytes == 0)
    ++p.arrived;
  lane.address = reinterpret_cast<uint64_t>(address);
  lane.bytes = bytes;
  if (p.arrived == kLanes) {
    evaluate(p);
    warp.erase(key);
  }
}

void LaunchCounters::evaluate(const Pending &p) {
  LaneAccess shared[kLanes], global[kLanes];
  bool anyShared = false, anyGlobal = false;
  for (int32_t l = 0; l < kLanes; ++l) {
    const LaneAccess &a = p.lanes[l];
    if (a.bytes == 0)
      continue;
    if (a.address >= sharedBegin_ && a.address < sharedEnd_) {
      shared[l] = {a.address - sharedBegin_, a.bytes};
      anyShared = true;
    } else {
      global[l] = a;
      anyGlobal = true;
    }
  }
  if (anyShared) {
    int64_t replays = sharedReplays(shared);
    if (p.store) {
      ++counters_.sharedStores;
      counters_.storeReplays += replays;
    } else {
      ++counters_.sharedLoads;
      counters_.loadReplays += replays;
    }
  }
  if (anyGlobal) {
    int64_t ideal = 0;
    ++counters_.globalRequests;
    counters_.globalSectors += globalSectors(global, ideal);
    counters_.globalIdeal += ideal;
  }
}

void LaunchCounters::barrier() {
  ++counters_.barriers;
  flush();
}

void LaunchCounters::beginBlock() {
  flush();
  ++counters_.blocks;
  for (auto &runs : state_->executions)
    std::fill(runs.begin(), runs.end(), 0);
}

void LaunchCounters::flush() {
  for (auto &warp : state_->pending) {
    for (const auto &[key, p] : warp)
      evaluate(p);
    warp.clear();
  }
}

void LaunchCounters::finish() {
  flush();
  for (GpuKernelCounters &c : callCounters)
    if (c.kernel == counters_.kernel) {
      add(c, counters_);
      return;
    }
  callCounters.push_back(counters_);
}

} // namespace tsl::rt
