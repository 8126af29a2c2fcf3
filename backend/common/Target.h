#pragma once
/// \file What the common lowering (Codegen) asks of a target: its name, what
/// the kernel plan may do on it, the runtime functions that allocate, free
/// and report failures, and hooks for the parts of lowering that differ
/// between targets (how an op of the host function is lowered, how a value
/// is read back to the host, how an op's outermost loop nest is emitted).
/// backend/cpu (CpuTarget.h) and backend/nvptx (NvptxTarget.h) implement
/// it. No LLVM headers: the hooks take forward-declared LLVM types.

#include "backend/common/KernelPlan.h"

#include <functional>
#include <vector>

namespace llvm {
class Value;
} // namespace llvm

namespace tsl {

namespace backend {
class Codegen;
} // namespace backend

/// The runtime functions (runtime/KernelAbi.h) host code calls.
struct RuntimeEntries {
  /// `ptr alloc(ctx, i64 bytes)`: null on failure (a negative size, out of
  /// memory; the runtime recorded why).
  const char *alloc;
  /// `void free(ctx, ptr)`: memory from `alloc`.
  const char *free;
  /// `void fail(ctx, i32 op)`: records that op failed (its message, if any,
  /// recorded before by `error`).
  const char *fail;
  /// `void error(ctx, ptr message)`: records a failure message.
  const char *error;
};

/// Loop bodies get one index per extent (row-major).
using LoopBody = std::function<void(const std::vector<llvm::Value *> &)>;
/// What a parallel loop (Codegen::hostParallelLoops) does per chunk besides
/// its iterations: \p before runs in the host function with the chunk count
/// (i64) before the loop (to allocate per-chunk scratch), \p enter at the
/// start of each chunk with its index (i64, in [0, chunks)), \p leave at
/// its end (on the chunk's thread). Any may be empty.
struct ChunkHooks {
  std::function<void(llvm::Value *chunks)> before;
  std::function<void(llvm::Value *chunk)> enter;
  std::function<void()> leave;
};

/// A code generation target. Implementations are stateless: every hook gets
/// the Codegen whose state it reads and extends, so one Target object
/// serves any number of concurrent lowerings.
class Target {
public:
  virtual ~Target() = default;

  /// The backend's name as messages spell it ("cpu", "cuda": "not
  /// supported on the cuda backend: ...").
  virtual const char *name() const = 0;

  /// What the kernel plan may do on this target (planKernels).
  virtual TargetCaps caps() const = 0;

  /// The runtime functions for allocation and failures.
  virtual RuntimeEntries runtime() const = 0;

  /// Lowers \p op, one op of the function not computed inside another, at
  /// the builder's position in the host function: the CPU emits its loop
  /// nest or library call there; a GPU emits a device kernel and its
  /// launch. False with Codegen's error set when the target cannot lower
  /// it.
  virtual bool lowerOp(backend::Codegen &cg, const Operation &op) const = 0;

  /// Lowers the row group \p g (KernelPlan.h) at the builder's position:
  /// the CPU loops over rows; a GPU launches one kernel with a block per
  /// row. False with Codegen's error set when the target cannot lower it.
  virtual bool lowerRowGroup(backend::Codegen &cg, const RowGroup &g) const = 0;

  /// The host address of element 0 of \p v (item()): its buffer where the
  /// host can read it, else a host copy made at the builder's position
  /// (failing like an op when the copy fails).
  virtual llvm::Value *readToHost(backend::Codegen &cg, ValueId v) const = 0;

  /// Host code copying a value of type \p t from buffer \p src to
  /// \p dst (the carried values of a loop): the CPU moves host memory (the
  /// buffers may be the same); a GPU launches a copy kernel (distinct
  /// buffers). False with Codegen's error set when it cannot be emitted.
  virtual bool copyBuffer(backend::Codegen &cg, llvm::Value *dst,
                          llvm::Value *src, const TensorType &t) const = 0;

  /// Host code at the end of a call that succeeded so far (a GPU waits for
  /// its kernels' status here). Nothing by default.
  virtual void lowerCallEnd(backend::Codegen &) const {}

  /// Emits the outermost loop nest of an op over \p extents (every index,
  /// once; iterations independent, writing disjoint data): on the CPU,
  /// chunks of the outer indices on the runtime's thread pool when the
  /// loop is large enough; in a device kernel, one grid-stride loop over
  /// the flattened extents, shared by the threads. \p work (i64, or null
  /// for 1) is the elements of work one index stands for (a row's length
  /// when the body loops over a row). Nested loops inside \p body are
  /// always sequential (Codegen::loops).
  virtual void parallelLoop(backend::Codegen &cg,
                            const std::vector<llvm::Value *> &extents,
                            llvm::Value *work, const LoopBody &body) const = 0;
};

} // namespace tsl
