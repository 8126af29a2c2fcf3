#pragma once
/// \file Private to backend/cpu (it includes LLVM): the host CPU's lowering,
/// the common lowering (backend/common/Codegen.h) with the CPU's hooks: ops
/// are loop nests and runtime library calls in host memory, an op's
/// outermost loop runs in chunks on the runtime's thread pool
/// (CodegenParallel.cpp), and row groups loop over rows with per-chunk
/// scratch rows (CodegenRows.cpp). CpuTarget::makeCodegen makes one.

#include "backend/common/Codegen.h"

namespace tsl::backend {

/// What a parallel loop (CpuCodegen::hostParallelLoops) does per chunk
/// besides its iterations: \p before runs in the host function with the
/// chunk count (i64) before the loop (to allocate per-chunk scratch),
/// \p enter at the start of each chunk with its index (i64, in [0,
/// chunks)), \p leave at its end (on the chunk's thread). Any may be empty.
struct ChunkHooks {
  std::function<void(Value *chunks)> before;
  std::function<void(Value *chunk)> enter;
  std::function<void()> leave;
};

/// The host CPU's lowering of one function.
class CpuCodegen final : public Codegen {
public:
  using Codegen::Codegen;

protected:
  // Every op family: the common lowering (Codegen's defaults).
  /// The rows as loops over rows (CodegenRows.cpp).
  bool lowerRowGroup(const RowGroup &g) override;
  /// The value's own buffer: host memory.
  Value *readToHost(ValueId v) override { return bufs[v]; }
  /// copyBytes of the value's byte size.
  bool copyBuffer(Value *dst, Value *src, const TensorType &t) override {
    copyBytes(dst, src, byteSize(t));
    return true;
  }
  /// Chunks of the outer indices on the runtime's thread pool
  /// (hostParallelLoops).
  void parallelLoop(const std::vector<Value *> &extents, Value *work,
                    const LoopBody &body) override {
    hostParallelLoops(extents, work, body);
  }

private:
  /// Host: copies \p bytes from \p src to \p dst in host memory (they
  /// may be the same buffer).
  void copyBytes(Value *dst, Value *src, Value *bytes);
  /// Host code (CodegenParallel.cpp): \p body for every index of
  /// \p extents, whose iterations are independent and write disjoint data.
  /// The outer indices (all but the last extent; the only one for rank 1)
  /// are cut into chunks by tsl_rt_parallel_chunks, so that a chunk holds
  /// at least kParallelChunkWork elements of work (\p work per index, null
  /// for 1, times the last extent), and the chunks run through
  /// tsl_rt_parallel_for: the body is emitted once, into its own function
  /// that takes the values it uses from the host function as arguments
  /// (noalias where they are distinct fresh allocations). A body that
  /// records failures or allocates (it uses the context) runs its chunks
  /// in order on the calling thread. Loops known at compile time to be
  /// smaller than two chunks stay inline and sequential.
  void hostParallelLoops(const std::vector<Value *> &extents, Value *work,
                         const LoopBody &body, const ChunkHooks &hooks = {});
  /// Elements of work below which a chunk does not pay for waking a
  /// thread (measured: bench/cpu.sh's scaling table).
  static constexpr int64_t kParallelChunkWork = int64_t(1) << 15;
  /// hostParallelLoops' chunk function `i32 (i64 chunk)`: the chunk's
  /// share of [0, outer) unflattened over \p outerExtents, each outer index
  /// looping over \p last (null for none). Values of the host function
  /// appear in it as they are (closeOver fixes them).
  llvm::Function *emitChunkFunction(const std::vector<Value *> &outerExtents,
                                    Value *last, Value *outer, Value *chunks,
                                    const LoopBody &body,
                                    const ChunkHooks &hooks);
  /// \p f rebuilt as a function whose arguments after its own are the
  /// values of other functions it uses (returned in \p captures, in
  /// argument order); \p f is erased.
  llvm::Function *closeOver(llvm::Function *f, std::vector<Value *> &captures);
  /// \p f named `tsl_body_<digest of its text>`, or an existing function
  /// of that name (same text; \p f is erased): identical kernels keep
  /// identical text (shareKernel).
  llvm::Function *nameByText(llvm::Function *f);
  /// A row group's outputs that stream past the caches (CodegenRows.cpp):
  /// \p stream (i1, decided per call by tsl_rt_stream_output) says whether
  /// each row is computed into the chunk's staging row (\p row, in
  /// \p base's per-chunk rows) and copied out by tsl_rt_stream_row.
  struct RowStreaming {
    std::vector<ValueId> outputs;
    Value *stream = nullptr;
    std::map<ValueId, Value *> base, row;
  };
  /// Fills \p s for the outputs of \p body among \p rowBase (none when
  /// no output row is longer than one element) and extends \p hooks to
  /// allocate the staging rows, point each chunk at its own, and fence
  /// the chunk's streaming stores at its end.
  void planRowStreaming(const RowGroup &g,
                        const std::vector<const Operation *> &body,
                        const std::map<ValueId, Value *> &rowBase,
                        RowStreaming &s, ChunkHooks &hooks);
  /// After a row's ops: when streaming, copies each staged row to its
  /// place in \p outRow.
  void streamRows(const RowStreaming &s,
                  const std::map<ValueId, Value *> &outRow);
  /// Elements between the starts of two chunks' rows of per-chunk scratch
  /// \p v: its row length rounded up to whole 64-byte lines.
  Value *chunkRowStride(ValueId v);
};

} // namespace tsl::backend
