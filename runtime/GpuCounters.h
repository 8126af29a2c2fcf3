#pragma once
/// \file Memory counters of the GPU emulator: what a kernel's warps ask of
/// shared and global memory, measured where the emulator runs it, so that
/// layouts a real GPU serializes (shared-memory bank conflicts, uncoalesced
/// global accesses) show without a GPU.
///
/// Kernels count only when compiled while counters are on
/// (gpuCountersEnabled(): TSL_LOGS=gpu-counters or
/// setGpuCountersForced): the host JIT then puts a call of
/// tsl_gpu_count_access before every load and store of the device code
/// (backend/cpu/CountAccesses.cpp: after optimizing it as NVPTX would, so
/// accesses count as a GPU executes them: CSE'd, hoisted, adjacent ones
/// merged into 64/128-bit accesses, no host vector widths), and
/// tsl_gpu_count_kernel at each kernel's entry. Loads and stores of a kernel's
/// own stack (allocas) and of its argument block are not counted (registers and
/// the param space on a GPU).
///
/// A warp access is the lanes of one warp (32 consecutive threads of the
/// block, x-major) executing one instrumented load or store for the same
/// time: lane l's n-th execution of a site meets the other lanes' n-th.
/// Lanes that skip it (divergence) are inactive in it. An access goes to
/// shared memory when its address lies in the block's shared memory, else
/// to global memory.
/// - Shared: 32 banks of 4 bytes. Accesses of more than 4 bytes per lane
///   are split into phases of 128 bytes (8-byte: half warps, 16-byte:
///   quarter warps), as the hardware does. A phase takes as many
///   wavefronts as the most distinct 4-byte words any bank holds among its
///   lanes (lanes reading or writing the same word share it: a broadcast
///   is free); bank-conflict replays are the wavefronts beyond one per
///   phase.
/// - Global: the distinct 32-byte sectors the active lanes touch; the ideal
///   is the bytes they touch (distinct addresses) over 32, rounded up.
/// Counters cover the blocks the emulator runs (at most kEmulatedBlocks).
/// No LLVM here: the runtime carries no compiler.

#include <cstdint>
#include <string>
#include <vector>

namespace tsl::rt {

/// One kernel's counters over the launches of a call (see the file
/// comment).
struct GpuKernelCounters {
  int32_t kernel = -1;      ///< the kernel's number in its variant (tsl_dev_N)
  int32_t threads = 0;      ///< threads per block (of its last launch)
  int32_t sharedBytes = 0;  ///< dynamic shared memory (of its last launch)
  int64_t launches = 0;     ///< launches of the kernel
  int64_t blocks = 0;       ///< blocks run (at most 3 per launch)
  int64_t barriers = 0;     ///< block-wide barriers released, all blocks
  int64_t sharedLoads = 0;  ///< warp accesses that load shared memory
  int64_t sharedStores = 0; ///< warp accesses that store shared memory
  int64_t loadReplays = 0;  ///< bank-conflict replays of the loads
  int64_t storeReplays = 0; ///< bank-conflict replays of the stores
  int64_t globalRequests = 0; ///< warp accesses to global memory
  int64_t globalSectors = 0;  ///< 32-byte sectors they touch
  int64_t globalIdeal = 0;    ///< sectors if every request were coalesced
};

/// True when kernels compiled now count their accesses and launches record
/// counters: TSL_LOGS names gpu-counters (read at each call), or
/// setGpuCountersForced(true).
bool gpuCountersEnabled();
/// Turns counters on for the whole process whatever TSL_LOGS says (tests);
/// false goes back to TSL_LOGS.
void setGpuCountersForced(bool on);

/// Starts a call on this thread: forgets the counters collected so far.
void beginGpuCounters();
/// The counters of the launches this thread ran since beginGpuCounters (the
/// last call), one entry per kernel in the order of their first launch.
std::vector<GpuKernelCounters> gpuCountersOfLastCall();
/// "kernel 2: 1 launch of 256 threads, 16384 shared bytes: 3 blocks, 24
/// barriers; shared: ..." (one line, no newline); kernel -1 (compiled
/// before counters were on: barriers only) is "kernels compiled without
/// counters: ...".
std::string formatGpuCounters(const GpuKernelCounters &c);
/// Ends a call of \p function: under TSL_LOGS=gpu-counters prints one line
/// per kernel of gpuCountersOfLastCall() to stderr ("[tsl] gpu-counters
/// f: kernel 2: ...").
void logGpuCounters(const std::string &function);

/// One lane's part of a warp access.
struct LaneAccess {
  uint64_t address = 0;
  uint32_t bytes = 0; ///< 0: the lane is inactive
};

/// Bank-conflict replays of one warp access to shared memory by \p lanes
/// (32 entries, inactive lanes with bytes 0), per the file comment.
int64_t sharedReplays(const LaneAccess *lanes);
/// Distinct 32-byte sectors one warp access to global memory touches, and
/// (in \p ideal) how many it would if coalesced.
int64_t globalSectors(const LaneAccess *lanes, int64_t &ideal);

/// The emulator's side (runtime/GpuEmulator.cpp): collects one launch's
/// accesses and turns them into counters.
class LaunchCounters {
public:
  /// A launch of \p threads threads per block whose shared memory is
  /// [\p shared, \p shared + \p sharedBytes).
  LaunchCounters(int32_t threads, const void *shared, int32_t sharedBytes);
  ~LaunchCounters();
  LaunchCounters(const LaunchCounters &) = delete;
  LaunchCounters &operator=(const LaunchCounters &) = delete;

  /// Thread \p thread executes instrumented site \p site: \p bytes at
  /// \p address (a store when \p store).
  void access(int32_t thread, int32_t site, const void *address, uint32_t bytes,
              bool store);
  /// The kernel's number (tsl_gpu_count_kernel).
  void setKernel(int32_t kernel) { counters_.kernel = kernel; }
  /// A barrier of the block released.
  void barrier();
  /// A block begins (every thread's site counts restart).
  void beginBlock();
  /// Evaluates the warp accesses still waiting for lanes (at barriers and
  /// at the end of a block: the lanes that did not come are inactive).
  void flush();
  /// Flushes and adds the launch to this thread's counters of the call.
  void finish();

private:
  struct Pending;
  void evaluate(const Pending &p);
  int32_t threads_;
  uint64_t sharedBegin_, sharedEnd_;
  GpuKernelCounters counters_;
  struct State;
  State *state_;
};

} // namespace tsl::rt
