#pragma once
/// \file The GPU emulator: runs a device kernel compiled for the host CPU
/// with the semantics of a CUDA launch that generated kernels rely on —
/// blocks of threads that share memory, meet at barriers and shuffle values
/// within warps (runtime/DevicePrimitives.def). Each thread of a block is a
/// fiber (ucontext) on a 64 KiB stack (256 KiB under ASan or TSan) with a
/// guard page below it; the fibers run one at a time, round-robin in a
/// fixed order, switching only inside a primitive that waits (barrier,
/// shuffle) or when the kernel returns, so a launch is deterministic. No
/// compiler, no LLVM inside.
///
/// Semantics of emulateLaunch:
/// - Grid: generated kernels are correct for any grid of >= 1 blocks (they
///   stride over their work by gridDim * blockDim), so the emulator runs
///   min(blocks, kEmulatedBlocks) blocks, one after another, and reports
///   that as gridDim. blocks <= 0 runs nothing and succeeds.
/// - threadsPerBlock: a multiple of 32 in 32..1024, else an error.
/// - sharedBytes: 0..kMaxSharedBytes, else an error. The block's shared
///   memory is filled with kSharedGarbage bytes before each block.
/// - Barrier: releases when every thread of the block has arrived. A
///   thread that returns while others wait at a barrier, or arrives at one
///   after another thread returned, is a deadlock: the launch stops with
///   "emulator: deadlock: thread 37 of block 0 returned while 63 threads
///   wait at a barrier" (or similar). A launch never hangs.
/// - Shuffle: the 32 lanes of warp w (threads 32w..32w+31) meet; each gets
///   the value of its source lane. A lane of the warp that waits at a
///   barrier or has returned while others shuffle is a deadlock error;
///   lanes calling different shuffles (xor and idx) a divergence error.
/// - After an error the remaining fibers are abandoned (never resumed) and
///   their stacks reclaimed; objects living on them are not destroyed, so
///   kernels must not own resources across a barrier or shuffle.
/// - A kernel overflowing its fiber stack hits the guard page (SIGSEGV),
///   as a stack overflow on the host would. Kernels may call libm.
/// - Several host threads may emulate launches at once: every scheduler
///   state is thread_local (each host thread keeps its own pool of fibers,
///   as many as its largest block: up to 1024 stacks, about 70 MiB of
///   address space of which a page or two each is touched, reused across
///   its launches and freed when it exits). A launch from inside an
///   emulated kernel is an error.
/// - Speed: a block of 1024 threads meeting at 8 barriers takes about 7 ms
///   (each switch is a glibc swapcontext, one sigprocmask syscall); the
///   first launch of a host thread also creates its fibers (about 17 ms
///   for 1024). Under TSan each fiber is a TSan thread, and every switch
///   synchronizes them: about 20x slower, and TSan's limit on live threads
///   counts every pooled fiber.
/// - Sanitizers: fiber switches are annotated for ASan and TSan.
/// - Counters: while gpuCountersEnabled() (TSL_LOGS=gpu-counters), a launch
///   counts its blocks and barriers, and the shared and global accesses of
///   kernels instrumented for it (runtime/GpuCounters.h).

#include <cstddef>
#include <cstdint>
#include <string>

namespace tsl::rt {

/// A device kernel compiled for the host: one argument, the launch's
/// argument block.
using EmulatedKernel = void (*)(void *args);

/// The shape of one launch (CUDA: <<<blocks, threadsPerBlock,
/// sharedBytes>>>).
struct EmulatedLaunch {
  int64_t blocks;          ///< grid size; <= 0: nothing runs
  int32_t threadsPerBlock; ///< a multiple of 32 in 32..1024
  int32_t sharedBytes;     ///< dynamic shared memory, 0..kMaxSharedBytes
};

/// Blocks the emulator runs at most (odd: exercises grid striding).
constexpr int32_t kEmulatedBlocks = 3;
/// The most dynamic shared memory a launch may ask for (48 KiB, CUDA's
/// default limit without opting in).
constexpr int32_t kMaxSharedBytes = 48 * 1024;
/// The byte shared memory holds before a block writes it.
constexpr unsigned char kSharedGarbage = 0xA5;

/// Runs kernel(args) on a grid of min(launch.blocks, kEmulatedBlocks)
/// blocks of launch.threadsPerBlock threads (see the file comment). True
/// when every thread of every block returned; false with \p error
/// ("emulator: ...": bad block size or shared memory, deadlock, divergent
/// shuffle, a nested launch, no memory for fiber stacks). Never hangs,
/// never throws.
bool emulateLaunch(EmulatedKernel kernel, void *args,
                   const EmulatedLaunch &launch, std::string &error);

/// A device primitive by name, for a JIT to bind device code to.
struct EmulatedPrimitive {
  const char *name; ///< "tsl_gpu_thread_idx", ...
  void *address;    ///< the emulator's definition
};

/// The primitives of runtime/DevicePrimitives.def with the emulator's
/// definitions, then the counting hooks tsl_gpu_count_access and
/// tsl_gpu_count_kernel (a static array; *\p n gets its length).
const EmulatedPrimitive *emulatedPrimitives(size_t *n);

/// tsl_gpu_count_access's flag for a store (the low 16 bits: the bytes).
constexpr int32_t kCountStore = 1 << 16;

} // namespace tsl::rt

/// The emulator's definitions of the device primitives (documented in
/// runtime/DevicePrimitives.def).
extern "C" {
#define TSL_GPU_PRIMITIVE(Name, Ret, Params) Ret Name Params;
#include "runtime/DevicePrimitives.def"
/// Emulator only (runtime/GpuCounters.h): the calling thread executes
/// instrumented load or store number \p site of its kernel, of
/// (\p access & 0xffff) bytes at \p address (a store when \p access has
/// kCountStore). Nothing outside a launch that counts.
void tsl_gpu_count_access(const void *address, int32_t access, int32_t site);
/// Emulator only: the running kernel is tsl_dev_\p kernel.
void tsl_gpu_count_kernel(int32_t kernel);
}
