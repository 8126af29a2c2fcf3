#pragma once
/// \file Private to backend/nvptx (it includes LLVM): the GPU's lowering of
/// the ops, on DeviceContext's kernels and primitives (DeviceContext.h). Each
/// op of the host function becomes its results in device memory and one or
/// more kernels and launches (its family's hook: lowerElementwise, ...); a
/// row group one kernel with a block per row. Defined in CodegenDevice*.cpp:
/// the family hooks and per-op tables (CodegenDeviceDispatch.cpp), kernels
/// and elementwise kernels (CodegenDevice.cpp), rows (Rows), compaction, sort,
/// library ops (Library), tiled reductions (Reduce), GEMM (Gemm, Matmul),
/// conv2d (Conv) and attention. NvptxTarget::makeCodegen makes one.

#include "backend/nvptx/DeviceContext.h"

namespace tsl::backend {

/// The GPU's lowering of one function: host code and device kernels.
class DeviceCodegen final : public DeviceContext {
public:
  using DeviceContext::DeviceContext;

protected:
  // Each op family in host code (CodegenDeviceDispatch.cpp): results in
  // device memory, kernels, launches. Asserts, views, item: on the host.
  /// A thread per element (four where every operand is read at the
  /// result's flat index: deviceVectorElementwise).
  bool lowerElementwise(const Operation &op) override;
  bool lowerValue(const Operation &op) override;
  /// Block-tiled over one run of axes (launchReduce), else a thread per
  /// result element.
  bool lowerReduction(const Operation &op) override;
  /// After the empty-axis check: a block per row over the last axis or all
  /// (launchArgmaxRows), else a thread per result element.
  bool lowerArgReduction(const Operation &op) override;
  /// A thread per row.
  bool lowerScan(const Operation &op) override;
  bool lowerMatmul(const Operation &op) override { return deviceGemm(op); }
  /// Views on the host, an in-place update_slice writing its block, else a
  /// thread per result element.
  bool lowerLayout(const Operation &op) override;
  /// Each op's own launches (launchOwn).
  bool lowerLibrary(const Operation &op) override;
  bool lowerDataDependent(const Operation &op) override;
  /// One kernel with a block (or warp) per row (launchRowGroup).
  bool lowerRowGroup(const RowGroup &g) override { return launchRowGroup(g); }
  /// A row kernel's reductions (rowScalars).
  Value *registerValue(ValueId v) override {
    auto it = rowScalars.find(v);
    return it == rowScalars.end() ? nullptr : it->second;
  }

private:
  /// The per-op tables of the GPU's lowering (CodegenDeviceDispatch.cpp).
  struct Lowerings;
  /// Host: a Library or DataDependent op (its entry in Lowerings::launches).
  bool launchOwn(const Operation &op);
  /// Host: the kernel of \p op (results allocated) with a work item per
  /// element of its first result (mapped by \p workItems when given), and
  /// its launch; the body is kernelBody (or deviceVectorElementwise).
  bool launchPerElement(const Operation &op,
                        const std::function<Value *(Value *)> &workItems = {});
  /// Host: \p op's results in device memory, then launchPerElement; per
  /// index too (index_select, index_add: every index is checked).
  bool launchPerElementOp(const Operation &op);
  bool launchPerIndex(const Operation &op);
  /// Host: topk's range check of k, then launchTopkRows.
  bool launchTopk(const Operation &op);
  /// In a launchPerElement kernel: \p op's per-thread form (its entry in
  /// Lowerings::bodies), else the common lowering.
  bool kernelBody(const Operation &op);
  /// Host: matmul through the device's GEMM library (tsl_rt_dev_gemm),
  /// launching the generated kernel where the library declines.
  bool deviceGemm(const Operation &op);
  /// Host: one strided batch of row-major GEMMs on device pointers:
  /// d[e] = a[e] @ b[e] for e < batch, a[e] M×K, b[e] K×N, d[e] M×N, each
  /// contiguous; strides between entries in elements (0: broadcast), d's
  /// always M*N (d is one contiguous [batch, M, N]).
  struct GemmOperands {
    DType dtype;
    Value *batch, *M, *N, *K;
    Value *a, *strideA, *b, *strideB, *d, *strideD;
  };
  /// Host: asks the device's GEMM library to enqueue \p g
  /// (tsl_rt_dev_gemm); returns from the host function on its failure,
  /// else the i32 status: 0 enqueued, 2 declined (run a kernel instead).
  Value *callLibraryGemm(const GemmOperands &g);
  /// Host: \p g through the device's GEMM library, or emitGemmKernel where
  /// it declines (decided at run time).
  bool emitGemm(const GemmOperands &g);
  /// Host: \p g on TSL's kernel (float types; one thread per element of d).
  bool emitGemmKernel(const GemmOperands &g);
  /// Host: conv2d (float types) as im2col and GEMMs
  /// (CodegenDeviceConv.cpp).
  bool deviceConv(const Operation &op);
  /// Host: attention (float types) as one fused flash-style kernel
  /// (CodegenDeviceAttention.cpp): blocks stride over (batch entry, query
  /// tile) work items, key tiles of k and v go through shared memory, the
  /// softmax is online and no scores matrix is stored. Any sizes (empty
  /// batch, S, T, D or E; D and E are cut into slices, so none is too
  /// large). False with the error set when the kernel cannot be emitted.
  bool deviceAttention(const Operation &op);
  /// The row group \p g as one device kernel, a block per row
  /// (CodegenDeviceRows.cpp).
  bool launchRowGroup(const RowGroup &g);
  /// masked_scatter on the device, one thread (tsl_rt_masked_scatter on CPU).
  bool maskedScatterSerial(const Operation &op);
  /// An in-place update_slice on a device: one launch writes the block.
  bool launchUpdateInPlace(const Operation &op);
  /// In a row kernel: each row's reductions, one value per thread (the
  /// block's combination), read by valueAt instead of memory.
  std::map<ValueId, Value *> rowScalars;
  /// In a row kernel: reduction \p op over the row (every thread of the
  /// block calls it and gets the result).
  bool rowReduce(const Operation &op);
  /// Threads per block for a block per row of \p n elements (host code).
  Value *rowThreads(Value *n);
  /// Whether rows of \p n elements take a warp each (several rows per
  /// block, reductions by shuffles alone) rather than a block each: i1,
  /// the same on host and device, uniform over the grid.
  Value *rowUsesWarp(Value *n);
  /// In a row kernel: rowUsesWarp of the row length, else null.
  Value *rowWarp = nullptr;

  /// nonzero, masked_select: a parallel stream compaction in three
  /// launches (CodegenDeviceCompaction.cpp).
  bool deviceCompaction(const Operation &op);
  /// What a stream compaction keeps and writes (streamCompaction). The
  /// functions emit code: `length` on the host and in the kernels,
  /// `selected`, `write` and `fillSetup` in the kernels.
  struct CompactionSpec {
    std::string what; ///< the op, for errors
    /// Values whose buffers `selected` and `write` use (the result's is
    /// added for the filling launch).
    std::vector<ValueId> used;
    /// Host: device pointers the kernels read (compactionExtra(i)).
    std::vector<Value *> extras;
    /// Result elements per kept element (nonzero: one per axis).
    int64_t perRow = 1;
    /// The number of elements considered.
    std::function<Value *()> length;
    /// Whether element i is kept (i may be past n: false, and it must
    /// load nothing there).
    std::function<Value *(Value *i, Value *n)> selected;
    /// Writes kept element i as result row \p at (0, 1, ... in order).
    std::function<void(Value *i, Value *at)> write;
    /// Optional: emitted at the top of the filling kernel.
    std::function<void()> fillSetup;
  };
  /// The elements \p spec keeps, in order, as result \p r, whose first dim
  /// must be a symbol (else unsupported): tile counts, one block scanning
  /// them, the one 8-byte read of the total that binds the symbol and
  /// sizes \p r, then the fill; the tile counts are released after. False
  /// with the error set when a kernel could not be emitted.
  bool streamCompaction(const CompactionSpec &spec, ValueId r);
  /// streamCompaction's second launch: one block turns \p tileCounts into
  /// exclusive offsets and stores the total at \p countWord.
  bool scanTileCounts(const CompactionSpec &spec, Value *tileCounts,
                      Value *countWord);
  /// In streamCompaction's counting and filling kernels: the spec's extra
  /// pointer \p i (after the tile counts).
  Value *compactionExtra(size_t i) { return deviceExtra(1 + i); }
  // CodegenDeviceSort.cpp: topk, unique and sort, cooperatively.
  /// How sortedPermutation groups and orders keys: element i is in row
  /// (i / span) * inner + i % inner (no rows when span is null: the whole
  /// tensor is one); descending reverses the value order (NaN first),
  /// ties still by index.
  struct SortRows {
    Value *span = nullptr, *inner = nullptr;
    bool descending = false;
  };
  /// Pair (av, ai) comes before (bv, bi) in the descending order of argmax
  /// and topk: a NaN first, then the larger value, ties (-0.0 == 0.0, NaN
  /// pairs) by the smaller index. A strict total order for distinct
  /// indices. Values in computeType(t). With \p smallest, argmin's order:
  /// a NaN first, then the smaller value, ties by the smaller index.
  Value *orderBefore(DType t, Value *av, Value *ai, Value *bv, Value *bi,
                     bool smallest = false);
  /// In a block-per-row kernel: the first element in orderBefore's order of
  /// row [base, base + len) of \p src (elements of \p t), among those
  /// \p eligible(value, index) admits (all when empty), as (value in
  /// computeType(t), index in the row); index INT64_MAX when none is. Reads
  /// element \p base, so the row must not be empty. Every thread of the
  /// block must call it and gets the pair (blockArgReduce's shared memory).
  /// \p smallest: orderBefore's argmin order.
  std::pair<Value *, Value *> blockFirstOfRow(
      DType t, Value *src, Value *base, Value *len,
      const std::function<Value *(Value *, Value *)> &eligible = nullptr,
      bool smallest = false);
  /// topk: a block per row, k rounds of blockFirstOfRow, each after the
  /// previous pick (the host checked 0 <= k <= n; no launch for k = 0).
  bool launchTopkRows(const Operation &op);
  /// unique: the first of each run of equal values in a stable sort
  /// (sortedPermutation), compacted by streamCompaction; the permutation is
  /// released after.
  bool deviceUnique(const Operation &op);
  /// Host: the indices 0..P-1 of \p x's elements (P the next power of two
  /// >= length(), 1 when it is at most 1), in a new device buffer, sorted
  /// stably in the library's ascending order (NaN last; indices >= n after
  /// every element) by a bitonic network: the stages within a block's
  /// segment in shared memory (bitonicBlock), the others one launch each
  /// (bitonicStage). Null when a kernel could not be emitted; the caller
  /// frees the buffer.
  /// \p rows (evaluated in each kernel) orders the keys by row first (sort
  /// along an axis) and may reverse the value order (descending).
  Value *sortedPermutation(ValueId x, const std::function<Value *()> &length,
                           const std::function<SortRows()> &rows = nullptr);
  /// Compare-and-swap of bitonic pair \p q for distance \p j in merges of
  /// size \p k: positions i and i + j of \p keys (bit j of i clear), put in
  /// ascending key order where bit k of \p offset + i is clear, else
  /// descending. Keys are indices of \p x's \p n elements: padding (>= n)
  /// after every element, then (with \p rows.span) the row, then the
  /// library's order (reversed with \p rows.descending), then the index.
  void bitonicPair(ValueId x, Value *n, Value *keys, Value *q, Value *j,
                   Value *k, Value *offset, const SortRows &rows);
  /// The one-stage kernel (extras: the permutation, k, j): every pair of
  /// the whole permutation, a thread each (grid-stride).
  void bitonicStage(ValueId x, Value *n, const SortRows &rows);
  /// The shared-memory kernel (extras: the permutation, kFrom, kTo): each
  /// block takes segments of span = min(P, 2 blockDim) keys into shared
  /// memory (the identity when kFrom is 2: the first launch), runs every
  /// stage with j < span of the merges kFrom, 2 kFrom, ..., kTo there, a
  /// barrier after each, and writes the segment back.
  void bitonicBlock(ValueId x, Value *n, const SortRows &rows);
  /// sort along an axis: one bitonic network over the whole tensor with
  /// keys (row, value, index) (sortedPermutation), then a thread per
  /// element writes the value and its position at its rank in its row; the
  /// permutation is released after.
  bool deviceSort(const Operation &op);
  // CodegenDeviceLibrary.cpp: the CPU's library kernels as device code.
  /// argmax and argmin: one thread per result element; the first maximum
  /// (minimum), a NaN once seen.
  bool deviceArgmax(const Operation &op);
  /// argmax and argmin over the last axis or the whole tensor: a block per
  /// row (blockArgReduce), the library's order.
  bool launchArgmaxRows(const Operation &op);
  /// index_select: every index checked (also with no result elements),
  /// then one thread per result element.
  bool deviceIndexSelect(const Operation &op);
  /// index_add: a thread per destination column (indexAddAt).
  bool deviceIndexAdd(const Operation &op) { return indexAddAt(op, true); }
  /// gather: one thread per result element, each checking its index
  /// (the message names the axis, not the value).
  bool deviceGather(const Operation &op);
  /// scatter and scatter_add: a kernel copying x, then a thread per line of
  /// the index along the axis storing (adding) its elements in order, so
  /// the last of duplicate targets wins (lines never share a target).
  bool deviceScatter(const Operation &op);
  /// conv2d (f64 accumulation, like the library) and max_pool2d: one thread
  /// per result element over its window.
  bool deviceWindow(const Operation &op);
  /// conv2d_weight_grad: one thread per weight, summing (in f64, like
  /// conv2d) over the images and output positions.
  bool deviceConvWeightGrad(const Operation &op);
  /// max_pool2d_grad: one thread per input element, gathering g from each
  /// window that holds it and took it (the window's argmax recomputed with
  /// max_pool2d's rule): no atomics, no races.
  bool deviceMaxPoolGrad(const Operation &op);
  /// u < v in the library's total order (NaN above everything).
  Value *orderLess(DType t, Value *u, Value *v);
  void copyElementRaw(DType t, Value *dst, Value *to, Value *src, Value *from);
  /// A reduction whose reduced axes are not one run of adjacent axes: one
  /// thread per result element looping over them (no shared accumulators).
  bool deviceReduce(const Operation &op);

  // --- block-tiled reductions (CodegenDeviceReduce.cpp) -------------------
  /// Whether the axes reduction \p op reduces are one run [\p first,
  /// \p end) of adjacent axes (every axis when it names none; a rank-0
  /// input gives the empty run [0, 0)). False for others, such as {0, 2}
  /// of a rank-3 input, which keep deviceReduce.
  bool reducedAxesRun(const Operation &op, size_t &first, size_t &end) const;
  /// The schedule of a reduction over one run of axes, from the sizes (the
  /// host and the kernels each compute it, and get the same values): the
  /// input as [outer, R, inner]; blocks of W columns x rows threads
  /// (W * rows = 256, W a power of two); R cut into `splits` runs of
  /// `chunk` rows (1 split unless the tiles alone are too few to fill the
  /// GPU; no split is empty). All values are i64.
  struct ReduceTiling {
    /// The input's dims before, in and after the run of reduced axes.
    std::vector<Value *> outerDims, reducedDims, innerDims;
    Value *outer, *reduced, *inner; ///< products of the three runs of dims
    Value *width, *log2Width;       ///< W (1 to 32) and log2(W)
    Value *rows;                    ///< 256 / W
    Value *columnTiles, *tiles;     ///< ceil(inner / W), outer * columnTiles
    /// R in ((splits - 1) * chunk, splits * chunk] (1 and 1 when R == 0).
    Value *splits, *chunk;
  };
  /// The tiling of reduction \p op (its axes one run: reducedAxesRun) at
  /// the builder's position (host or kernel).
  ReduceTiling reduceTiling(const Operation &op);
  /// Host: reduction \p op over one run of axes (reducedAxesRun) as the
  /// tiled kernel, and when R is split, a second launch combining the
  /// splits' partials from device scratch.
  bool launchReduce(const Operation &op);
  /// Kernel body: each block takes (split, tile) pairs; its threads
  /// accumulate their column over their rows, combine them across rows
  /// (reduceOverRows) and row 0 writes the result, or with several splits
  /// the partial at scratch [split, outer, inner] (deviceExtra(0)).
  bool reduceTiles(const Operation &op);
  /// Kernel body: one thread per output element combines its splits'
  /// partials in split order and finishes the result.
  bool reduceSplits(const Operation &op);
  /// init combined (reduction \p code, in order) with element(first +
  /// j * stride) for j = 0 .. count - 1, loading kUnroll elements ahead of
  /// combining them (the same result as the plain loop). In the current
  /// function; \p count may be 0 or negative (nothing combined).
  Value *accumulate(OpCode code, Value *init, Value *first, Value *count,
                    Value *stride,
                    const std::function<Value *(Value *)> &element);
  /// Combines each column's \p partial (one per thread of the block) over
  /// the block's rows through shared memory (256 8-byte slots), a tree of
  /// log2(rows) steps with a barrier each; threads of row 0 get their
  /// column's result (others get a value to ignore). Every thread of the
  /// block must call it; the slots may be written again after it.
  Value *reduceOverRows(const Operation &op, const ReduceTiling &s,
                        Value *partial);
  /// The element (o, r, c) of the [outer, R, inner] view of \p op's input
  /// (a fused tree recomputed there), in the accumulator type's domain
  /// (bool zero-extended to i64). One flat index when every stored leaf has
  /// the input's dims, else an index per axis. \p s must outlive it.
  std::function<Value *(Value *, Value *, Value *)>
  reduceReader(const Operation &op, const ReduceTiling &s);
  /// The result of reduction \p op from its accumulator \p acc over
  /// \p count elements: a mean divides (0 / 0 is NaN for an empty one), a
  /// bool is whether the count is nonzero; stored through store().
  Value *finishReduction(const Operation &op, Value *acc, Value *count);
  /// One thread per result element looping over K (integer matmuls on
  /// the GPU; the tiled kernel serves the float types).
  bool deviceMatmul(const Operation &op);

  // --- TSL's GEMM kernel (CodegenDeviceMatmul.cpp) ------------------------
  /// One block's work item of the tiled GEMM: a 128x128 output tile of one
  /// batch entry (defined in CodegenDeviceMatmul.cpp).
  struct GemmTile;
  /// Host: matmul \p op (its result allocated) through TSL's own kernel:
  /// the tiled GEMM for float types (tensor cores for f16/bf16, SIMT for
  /// f32/f64), the per-element kernel for integers. Any sizes (empty M, N,
  /// K or batch), batch strides as matmulDims gives them (0 broadcasts).
  /// False with the error set when the kernel cannot be emitted.
  bool launchGemmKernel(const Operation &op);
  /// Kernel body: the blocks stride over (batch entry, tile row, tile
  /// column) work items (uniform per block, so every thread of a block
  /// meets the same barriers) and compute each tile with \p mma (tensor
  /// cores) or the SIMT schedule.
  bool gemmKernel(const Operation &op, bool mma);
  /// SIMT tile: K in steps of 8 staged through shared memory in the
  /// accumulator type, each thread an 8x8 register tile. Every thread of
  /// the block must call it.
  void gemmSimtTile(const GemmTile &g);
  /// Tensor-core tile (f16/bf16): K in steps of 32 staged through shared
  /// memory as 16-bit elements; each warp a 64x32 sub-tile of 4x4
  /// m16n8k16 fragments accumulated in f32. Every thread must call it.
  void gemmMmaTile(const GemmTile &g);
  /// Tensor-core tile: the k step at \p k0 of operand tiles from global
  /// into shared memory at \p as and \p bs (zero outside the matrices),
  /// an element per load.
  void gemmMmaStage(const GemmTile &g, Value *k0, Value *as, Value *bs);
  /// gemmMmaStage with 128-bit loads of 8 elements: only where K and N are
  /// multiples of 8 and both operands 16-byte aligned (gemmMmaTile checks).
  void gemmMmaStageWide(const GemmTile &g, Value *k0, Value *as, Value *bs);
  /// Guarded store of the tile's element (\p row, \p col) (absolute
  /// indices in the batch entry's result matrix): nothing outside it.
  void gemmStore(const GemmTile &g, Value *row, Value *col, Value *v);
  // --- fused attention (CodegenDeviceAttention.cpp) ----------------------
  /// One block's view of the attention kernel: its schedule, sizes, shared
  /// memory, the thread's place in it and the current work item (defined in
  /// CodegenDeviceAttention.cpp).
  struct AttentionTile;
  /// Kernel body: the blocks stride over (batch entry, query tile) work
  /// items; per item, E in slices, and per slice the key tiles (the
  /// causal bound skips tiles wholly above the diagonal). Every thread of
  /// the block runs every loop the same number of times.
  bool attentionKernel(const Operation &op);
  /// One E slice of the current work item: the online softmax over the key
  /// tiles and the slice's results stored. Every thread must call it.
  void attentionSlice(AttentionTile &a);
  /// Copies a rows x cols tile of the row-major matrix \p src (\p ld
  /// elements a row, \p rowLimit rows) from (\p r0, \p c0) into shared
  /// memory at \p dst (row stride \p stride, transposed when \p transpose),
  /// zero outside the matrix: raw 16-bit elements on tensor cores, the
  /// accumulator type otherwise.
  void attentionStage(const AttentionTile &a, ValueId src, Value *base,
                      Value *r0, Value *rowLimit, Value *c0, Value *ld,
                      int64_t rows, int64_t cols, Value *dst, int64_t stride,
                      bool transpose);
  /// Adds the D slice staged in shared memory to the tile's scores (every
  /// thread must call it): m16n8k16 fragments on tensor cores, fused
  /// multiply-adds in the same fragment layout otherwise.
  void attentionScores(const AttentionTile &a, Value *d0);
  /// The online softmax step of key tile \p j0: scale, mask (causal, the
  /// keys past T, the additive mask), the new row maxima across the lanes
  /// of a row, the scores turned into probabilities, the row sums and the
  /// output accumulators rescaled.
  void attentionSoftmax(const AttentionTile &a, Value *j0);
  /// Adds probabilities x the staged V tile to the output accumulators:
  /// m16n8k16 with P rounded to the input type on tensor cores, warp
  /// shuffles of P and fused multiply-adds otherwise.
  void attentionValues(const AttentionTile &a, Value *j0);
  /// An elementwise op whose stored operands all have the result's shape
  /// (read at its flat index): deviceVectorElementwise lowers it.
  bool vectorizableOnDevice(const Operation &op) const;
  /// Four consecutive elements per thread and grid-stride step, 128-bit
  /// loads and stores where every buffer is 16-byte aligned.
  bool deviceVectorElementwise(const Operation &op);
  /// One loop: padding or the input element (the CPU fills, then copies).
  bool devicePad(const Operation &op);
};

} // namespace tsl::backend
