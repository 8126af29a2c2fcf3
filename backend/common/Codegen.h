#pragma once
/// \file For the backend libraries only (it includes LLVM; exported to
/// tsl_backend_cpu and tsl_backend_nvptx, which derive from it, and included
/// by nothing outside backend/): the lowering both targets share, as
/// Halide's CodeGen_LLVM is to its targets' subclasses. It walks the kernel
/// plan (run()), lowers the ops whose code is the same on every target
/// (elementwise loops and fusion, reductions, matmul, layout, indexing and
/// library ops), emits the argument matcher and the result-shape function,
/// and outlines runs of ops into shared kernels. Ops are dispatched by op
/// family (OpFamily.h): one virtual hook per family, overridden per target,
/// and per-op tables (CodegenDispatch.cpp). What differs per target is a
/// virtual hook (here and in Emitter.h), overridden by backend/cpu's
/// CpuCodegen (CpuCodegen.h) and backend/nvptx's DeviceCodegen
/// (DeviceCodegen.h); Target::makeCodegen makes the right one. Defined in
/// Codegen.cpp (the walk, value ops, elementwise ops, reductions, matmul),
/// CodegenDispatch.cpp, CodegenOps.cpp (layout and library ops, the matcher,
/// result shapes), CodegenElementMath.cpp, CodegenIndexing.cpp,
/// CodegenLoops.cpp (loop ops) and CodegenSegments.cpp. docs/design.md has
/// the map of the backend.

#include "backend/common/Emitter.h"

namespace tsl::backend {

/// The lowering of one IR Function to LLVM IR, shared by the targets; a
/// target's subclass supplies the hooks (the op families' lowerings,
/// lowerRowGroup, parallelLoop, ...) and its own state.
class Codegen : public Emitter {
public:
  /// Lowers \p fn for \p target (both must outlive the Codegen); the
  /// module lives in \p ctx.
  Codegen(const Function &fn, llvm::LLVMContext &ctx, const Target &target,
          LoweringOptions options = {})
      : Emitter(fn, ctx, target, std::move(options)) {}

  /// One description per check of the matcher, in code order (run()).
  std::vector<std::string> checks;

  /// Lowers the function into a module with the three entry points
  /// (LoweringOptions' names). An Unsupported error when an op is not
  /// supported on the target, an Internal one when the IR does not verify.
  /// Call once.
  Expected<std::unique_ptr<llvm::Module>> run();
  /// After run(), on targets that launch kernels
  /// (TargetCaps::launchesKernels): the device kernels the host code
  /// launches. Nothing by default.
  virtual void takeKernels(DeviceKernels &) {}

protected:
  // --- the target's hooks ------------------------------------------------
  /// Lowers \p op, one op of the host function not computed inside another,
  /// at the builder's position through its family's hook (OpFamily.h): the
  /// hooks below for most families, lowerOp for checks and loop markers,
  /// lowerCall for calls. False with the error set when the target cannot
  /// lower it.
  bool lowerHostOp(const Operation &op);
  // One lowering per op family and target: the defaults are the common
  // lowering (lowerOp: loop nests and library calls, the CPU's);
  // DeviceCodegen overrides each with device kernels and their launches.
  /// Elementwise ops (one loop, operands fused in).
  virtual bool lowerElementwise(const Operation &op) { return lowerOp(op); }
  /// constant, sym_scalar, full, arange.
  virtual bool lowerValue(const Operation &op) { return lowerOp(op); }
  /// reduce_sum, reduce_mean, reduce_max, reduce_min.
  virtual bool lowerReduction(const Operation &op) { return lowerOp(op); }
  /// argmax, argmin.
  virtual bool lowerArgReduction(const Operation &op) { return lowerOp(op); }
  /// cumsum, cumprod.
  virtual bool lowerScan(const Operation &op) { return lowerOp(op); }
  virtual bool lowerMatmul(const Operation &op) { return lowerOp(op); }
  /// reshape, permute, expand, concat, slice, update_slice, pad.
  virtual bool lowerLayout(const Operation &op) { return lowerOp(op); }
  /// conv2d, max_pool2d, attention, index_select, gather, scatter,
  /// index_add, masked_scatter, topk, sort.
  virtual bool lowerLibrary(const Operation &op) { return lowerOp(op); }
  /// nonzero, masked_select, unique, item.
  virtual bool lowerDataDependent(const Operation &op) { return lowerOp(op); }
  /// The tables lowerHostOp and lowerOp look ops up in
  /// (CodegenDispatch.cpp).
  struct Lowerings;
  /// Lowers the row group \p g (KernelPlan.h) at the builder's position: the
  /// CPU loops over rows; a GPU launches one kernel with a block per row.
  virtual bool lowerRowGroup(const RowGroup &g) = 0;
  /// The host address of element 0 of \p v (item()): its buffer where the
  /// host can read it, else a host copy made at the builder's position
  /// (failing like an op when the copy fails).
  virtual Value *readToHost(ValueId v) = 0;
  /// Host code copying a value of type \p t from buffer \p src to \p dst
  /// (the carried values of a loop): the CPU moves host memory (the buffers
  /// may be the same); a GPU launches a copy kernel (distinct buffers).
  /// False with the error set when it cannot be emitted.
  virtual bool copyBuffer(Value *dst, Value *src, const TensorType &t) = 0;
  /// Host code at the end of a call that succeeded so far (a GPU waits for
  /// its kernels' status here). Nothing by default.
  virtual void endCall() {}
  /// A call op: the callee's entry point (lowerForTarget links it in) on
  /// an array of the operands' buffers; its results come back in it.
  virtual bool lowerCall(const Operation &op);
  /// A value held in a register instead of memory at the builder's position
  /// (a device row kernel's reductions), or null: valueAt reads it.
  virtual Value *registerValue(ValueId) { return nullptr; }

  // --- the common lowering ---------------------------------------------
  /// Lowers \p op with the common lowering (loop nests, library calls) at
  /// the builder's position: the op's entry in a per-op table
  /// (CodegenDispatch.cpp; every op has one). False with the error set when
  /// unsupported.
  bool lowerOp(const Operation &op);
  // The common lowering of single ops (the entries of lowerOp's table).
  /// assert: the condition on sizes, failing the op.
  bool checkSizes(const Operation &op);
  /// constant, sym_scalar: one element.
  bool scalarValue(const Operation &op);
  /// full: every element the attribute's value.
  bool fill(const Operation &op);
  /// arange: element i is i.
  bool arange(const Operation &op);
  /// item(): element 0 read on the host, bound to its symbol (range
  /// checked).
  bool item(const Operation &op);
  /// loop, end_loop outside run()'s walk: an internal error.
  bool loopMarker(const Operation &op);
  // --- argument matching and result shapes ------------------------------
  /// Sets up a new function `name(ptr, ptr, ptr?)` and points the builder
  /// and the symbol array at it.
  llvm::Function *beginHelper(const char *name, llvm::Type *ret,
                              unsigned nargs);
  /// Returns `code` from the current helper when \p bad holds.
  void checkOrReturn(Value *bad, const std::string &description);

  /// `i32 tsl_match(sizes, ints, syms)` (Lowering.h: kMatchName).
  void emitMatch();
  /// One tensor axis of the arguments: its flat position in `sizes`.
  struct MatchAxis {
    const Param *param;
    size_t tensorIndex;
    size_t dim;
    SymExpr expr;
    Value *size; ///< loaded from `sizes`
  };
  /// The matcher's view of the arguments and the symbols bound so far.
  struct MatchArgs {
    std::vector<MatchAxis> axes;
    std::vector<std::pair<const Param *, Value *>> ints;
    std::set<std::string> bound;
  };
  /// Stores \p v as symbol \p name unless bound already (or unknown).
  void bindMatched(MatchArgs &m, const std::string &name, Value *v);
  /// Binds derived dims (2*N, N + 1) by solving each linear form for its
  /// one unknown, checking the size is of that form.
  void matchDerivedDims(MatchArgs &m);
  /// Checks every axis and int argument against its expression.
  void matchArguments(const MatchArgs &m);
  /// Checks declared ranges, signs and divisibility of the bound symbols.
  void matchSymbolRanges(const MatchArgs &m);

  void emitShapes();
  // --- loops (CodegenLoops.cpp) ------------------------------------------
  /// A loop whose body is being emitted.
  struct OpenLoop {
    llvm::BasicBlock *header, *exit;
    llvm::PHINode *index;
    /// Buffers the body reloaded, with their values before: restored after
    /// the loop, which a reload in the body does not dominate.
    std::vector<std::pair<ValueId, Value *>> reloaded = {};
  };
  std::vector<OpenLoop> openLoops;
  /// Host code of loop op \p i: the carried buffers (copies of the initial
  /// values), then the loop header; the body's ops follow.
  bool beginLoop(size_t i);
  /// Host code of end_loop op \p i: the next iteration's values copied
  /// into the carried buffers, the body's frees, the back edge; after the
  /// loop its results are the carried buffers.
  bool endLoop(size_t i);
  // --- the kernel plan (KernelPlan.h) ------------------------------------
  /// What the lowering follows: fused trees, GEMM operands read as B^T,
  /// frees, row groups, outlined runs (computed by makePlan at the start).
  KernelPlan plan;
  /// The plan's tables under the names the lowering loops use.
  std::vector<const Operation *> &producer = plan.producer;
  std::vector<bool> &transposedOperand = plan.transposedOperand;
  std::vector<std::vector<ValueId>> &freeAfter = plan.freeAfter;
  std::vector<RowGroup> &rowGroups = plan.rowGroups;
  ValueId resultBufferOf(ValueId v) const override {
    return plan.writesInto[v];
  }
  /// Plans the function for the target (planKernels) and sets `outlining`
  /// from the plan.
  void makePlan();
  /// The identity of reduction \p code (reduce_max, _min, _sum, _mean)
  /// over elements of type \p t, in its accumulator type (computeType; i64
  /// for bool and integers): -inf / the least i64 for max, and so on.
  Value *reductionIdentity(OpCode code, DType t);
  /// One step of reduction \p code: NaN-propagating maximum / minimum on
  /// floats, smax / smin on integers, else an add.
  Value *reductionStep(OpCode code, Value *acc, Value *x);
  /// Reduction over the last axis only, accumulating in a register.
  bool reduceLastAxis(const Operation &op, const std::vector<Value *> &inShape,
                      Value *dst);
  /// A reduction over axes that include the last and keep some: the kept
  /// elements in parallel, each summing its positions in a register.
  bool reduceKeptInParallel(const Operation &op,
                            const std::vector<Value *> &inShape, Value *dst);
  void freeBuffer(Value *p);

  /// Strides of \p t broadcast to \p shape (0 on size-1 axes).
  std::vector<Value *>
  broadcastStrides(const TensorType &t, const std::vector<Value *> &shape,
                   const std::vector<SymExpr> *loopDims = nullptr);

  /// Strides (against the loop shape) of every stored value a fused tree
  /// reads; computed before the loop.
  void leafStrides(ValueId v, const std::vector<Value *> &shape,
                   const std::vector<SymExpr> &loopDims,
                   std::map<ValueId, std::vector<Value *>> &out);

  /// The value of \p v at loop index \p idx: loaded, or recomputed.
  Value *valueAt(ValueId v, const std::vector<Value *> &idx,
                 const std::map<ValueId, std::vector<Value *>> &strides);

  /// One elementwise op applied to computed operand values.
  Value *compute(const Operation &op, const std::vector<Value *> &vals);

  bool elementwise(const Operation &op);

  bool reduce(const Operation &op);
  /// Which axes of its operand reduction \p op reduces (all of them when
  /// it names none).
  std::vector<bool> reducedAxes(const Operation &op) const;

  /// Sizes of a (batched, broadcasting) matmul: [batch..., M, K] @
  /// [batch..., K, N], with each operand's batch strides (0 where it
  /// broadcasts); vectors are [1, M] / [K, 1].
  struct MatmulDims {
    Value *M, *K, *N;
    std::vector<Value *> batch, sa, sc;
    bool rightIs2d = false;
  };
  MatmulDims matmulDims(const Operation &op);
  bool matmul(const Operation &op);

  /// Copies with an index map: out[idx] = in[offset(idx, strides) + base].
  void copyMapped(ValueId in, Value *dst, const std::vector<Value *> &outShape,
                  const std::vector<Value *> &inStrides, Value *base);

  /// The shapes every layout op starts from: its operand's and result's
  /// dims and the operand's contiguous strides.
  struct LayoutShapes {
    const TensorType &in, &out;
    std::vector<Value *> inShape, outShape, own;
  };
  LayoutShapes layoutShapes(const Operation &op);
  /// reshape: the operand's buffer, aliased.
  bool reshape(const Operation &op);
  bool permute(const Operation &op);
  /// expand: a copy reading size-1 axes with stride 0.
  bool expand(const Operation &op);
  /// slice: a view (the block's address) where the plan says so, else a
  /// strided copy.
  bool slice(const Operation &op);
  /// pad: the fill, then the operand copied into its block.
  bool pad(const Operation &op);

  bool concat(const Operation &op);

  // Library kernels of the runtime (CodegenOps.cpp), called on host memory.
  bool conv2dCall(const Operation &op);
  bool maxPool2dCall(const Operation &op);
  bool conv2dWeightGradCall(const Operation &op);
  bool maxPool2dGradCall(const Operation &op);
  /// nonzero, masked_select, unique: the runtime allocates the result and
  /// reports its length, which binds the result's first dim.
  bool compactionCall(const Operation &op);
  bool indexSelectCall(const Operation &op);
  bool gatherCall(const Operation &op);
  bool scatterCall(const Operation &op);
  bool maskedScatterCall(const Operation &op);
  bool sortCall(const Operation &op);
  bool topkCall(const Operation &op);
  /// argmax, argmin.
  bool argReduceCall(const Operation &op);
  // CodegenIndexing.cpp: ops along one axis by position, both targets.
  /// The element counts before (outer), along (n) and after (inner) an axis.
  struct AxisSizes {
    Value *outer, *n, *inner;
  };
  AxisSizes axisSizes(const TensorType &t, size_t axis);
  /// cumsum, cumprod: a serial scan per row (f64/i64 accumulators) in a
  /// parallel loop; a GPU thread per row.
  bool scan(const Operation &op);
  /// index_add: x copied, then the index walked in order per destination
  /// column (a GPU thread each), every index checked first.
  bool indexAdd(const Operation &op) { return indexAddAt(op, false); }
  /// indexAdd; \p perThread: the form of a device kernel's threads (a
  /// column each, indices checked by every thread instead of the library).
  bool indexAddAt(const Operation &op, bool perThread);
  /// The fused attention op as a call of tsl_rt_attention.
  bool attention(const Operation &op);
  /// update_slice: in place (the block) when the plan says so, else one pass.
  bool updateSlice(const Operation &op) { return updateSliceAt(op, true); }
  /// updateSlice; in place, the result's buffer is set to the operand's
  /// only with \p aliasHere (host code: a device kernel reads it from its
  /// slot).
  bool updateSliceAt(const Operation &op, bool aliasHere);

  /// True when \p op is not lowered on its own: its result is computed
  /// inside its consumer (a fused loop, or a GEMM reading B^T).
  bool computedElsewhere(const Operation &op) const {
    return plan.computedElsewhere(op);
  }

  /// Lowers one kernel (op \p begin, or the row group [begin, end)) into
  /// its own function `i32 tsl_k<N>(ptr slots, ptr syms, ptr ctx, i32 op)`
  /// and calls it. `slots` holds the buffer pointers the kernel reads and
  /// makes, numbered by first use, and `op` is the index of op \p begin
  /// (failures report op + offset), so a kernel does not depend on where in
  /// the function it sits: structurally identical kernels (every layer of a
  /// stack) have the same LLVM text and share one function
  /// (LoweringOptions::outlineOpsAbove).
  bool lowerKernel(size_t begin, size_t end, bool rowGroup);
  /// The values whose buffers ops [begin, end) read.
  std::vector<ValueId> valuesRead(size_t begin, size_t end) const;
  // --- host code in segments of kSegmentOps ops (CodegenSegments.cpp) ---
  static constexpr size_t kSegmentOps = 64;
  /// Where the caller goes on, the loop depth the segment began at (it
  /// ends with that loop's body at the latest) and its ops so far.
  struct Segment {
    llvm::Function *caller;
    llvm::BasicBlock *block;
    size_t depth, ops;
  };
  std::vector<Segment> segments;
  bool segmenting = false;
  unsigned numSegments = 0;
  /// Before host op \p i: ends a full segment (or, before an end_loop, the
  /// one begun in its body) and opens the next, called from the current.
  void placeInSegment(size_t i);
  void openSegment(size_t depth);
  void closeSegment();
  /// In outlined host code, reloads the buffers ops [begin, end) read, free
  /// or carry from the buffer array: no pointer lives from one kernel call
  /// to the next, which unoptimized code gives a stack slot of its own.
  void reloadBuffers(size_t begin, size_t end);
  /// \p f, or an earlier kernel with the same LLVM text (\p f is erased).
  llvm::Function *shareKernel(llvm::Function *f);
  bool outlining = false;
  /// The kernels emitted so far, by their LLVM text.
  std::map<std::string, llvm::Function *> kernelsByText;
  /// The entry point's scratch area (bufferArrayLength): a kernel call's
  /// argument array or a callee call's buffer array while it runs.
  Value *scratchArea();
  // --- row fusion (the CPU's CodegenRows.cpp, the GPU's CodegenDeviceRows.cpp)
  // A run of ops over the same rows [*L, n] (elementwise ops and last-axis
  // reductions, as in softmax and layer_norm) is lowered as one loop over
  // the rows (a kernel with a block per row on a GPU), each op in turn per
  // row: a row's values stay in L1, and intermediates used only inside the
  // run live in per-row scratch instead of full tensors (rowLead, Emitter).
  /// Values a fused tree rooted at \p v reads from memory.
  void leaves(ValueId v, std::vector<ValueId> &out) const {
    plan.leaves(v, out);
  }
};

} // namespace tsl::backend
