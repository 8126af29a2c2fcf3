#pragma once
/// \file Private to the backend libraries (it includes LLVM): the state of
/// lowering one IR Function to LLVM IR for a Target, shared by Codegen.cpp
/// (the driver loop, elementwise ops and fusion, reductions, matmul),
/// CodegenValues.cpp (sizes, loops, element values), CodegenOps.cpp (layout
/// and library ops, the argument matcher and the result-shape function),
/// CodegenRows.cpp (row groups) and the device lowering of backend/nvptx
/// (CodegenDevice*.cpp: kernels, block primitives, rows, compaction, sort,
/// library ops), which NvptxTarget's hooks call.

#include "backend/common/KernelPlan.h"
#include "backend/common/Lowering.h"
#include "backend/common/Target.h"

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/MDBuilder.h>
#include <llvm/IR/Module.h>

#include <functional>
#include <map>
#include <set>

namespace tsl::backend {

using llvm::Value;

class Codegen {
public:
  /// Lowers \p fn for \p target (both must outlive the Codegen); the
  /// module lives in \p ctx.
  Codegen(const Function &fn, llvm::LLVMContext &ctx, const Target &target,
          LoweringOptions options = {})
      : fn(fn), ctx(ctx), mod(std::make_unique<llvm::Module>("tsl", ctx)),
        b(ctx), target(target), options(std::move(options), target) {}
  /// Not copyable: members refer into its own plan.
  Codegen(const Codegen &) = delete;
  Codegen &operator=(const Codegen &) = delete;

  /// One description per check of the matcher, in code order (run()).
  std::vector<std::string> checks;

  /// Lowers the function into a module with the three entry points
  /// (LoweringOptions' names). Null with \p err when an op is not
  /// supported on the target, or (internal error) the IR does not verify.
  /// Call once.
  std::unique_ptr<llvm::Module> run(std::string &err);
  /// Targets that launch kernels (TargetCaps::launchesKernels): the device
  /// kernels run() launched, and their number.
  std::unique_ptr<llvm::Module> deviceModule;
  int32_t numKernels = 0;

  // --- for the targets' hooks (Target.h) ----------------------------------
  /// Lowers \p op with the common lowering (loop nests, library calls) at
  /// the builder's position. False with the error set when unsupported.
  bool lowerOp(const Operation &op);
  /// A call op: the callee's entry point (lowerForTarget links it in) on
  /// an array of the operands' buffers; its results come back in it.
  bool lowerCall(const Operation &op);
  /// Sequential loops over \p extents (the body may nest more loops).
  void serialLoops(const std::vector<Value *> &extents, const LoopBody &body);
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

private:
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

public:
  /// Host: copies \p bytes from \p src to \p dst in host memory (they
  /// may be the same buffer).
  void copyBytes(Value *dst, Value *src, Value *bytes);
  /// Host: the byte size of a value of type \p t.
  Value *byteSize(const TensorType &t);
  /// Host: a device kernel copying a value of type \p t from device
  /// buffer \p src to \p dst (distinct buffers) and its launch
  /// (CodegenDevice.cpp). False with the error set when it cannot be emitted.
  bool deviceCopy(Value *dst, Value *src, const TensorType &t);
  /// The buffer of \p v in the function being emitted (null before it is
  /// allocated).
  Value *buffer(ValueId v) const { return bufs[v]; }
  /// True while a device kernel's body is emitted (not host code).
  bool inKernel() const { return inDevice; }
  // Defined in backend/nvptx (CodegenDevice.cpp), called by NvptxTarget:
  /// Host code for \p op: its results in device memory, its kernel(s) and
  /// launch(es).
  bool launchOnDevice(const Operation &op);
  /// Host: the kernel of \p op (results already allocated) with one work
  /// item per element of its first result, and its launch.
  bool launchPerElement(const Operation &op);
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
  /// Host: \p bytes of device scratch owned by the call (fails the op
  /// when the allocation does).
  Value *deviceScratch(Value *bytes);
  /// Host: waits for the device and returns from the host function with
  /// the failed op and its message when a device kernel failed (only when
  /// a kernel so far can fail).
  void checkDeviceStatus();
  /// The row group \p g as loops over rows (RowGroup; CodegenRows.cpp).
  bool lowerRowGroup(const RowGroup &g);
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
  /// The row group \p g as one device kernel, a block per row
  /// (CodegenDeviceRows.cpp).
  bool launchRowGroup(const RowGroup &g);
  /// Copies element 0 of \p v to the host (item()).
  Value *readToHost(ValueId v);
  /// for (i = thread; i < prod(extents); i += threads) body(unflatten(i)).
  void gridStrideLoops(const std::vector<Value *> &extents,
                       const LoopBody &body);

private:
  /// LoweringOptions plus what run() reads from the target.
  struct Options : LoweringOptions {
    Options(LoweringOptions o, const Target &t)
        : LoweringOptions(std::move(o)), device(t.caps().launchesKernels) {}
    /// Each op is lowered by the target (lowerOnDevice: a kernel and its
    /// launch), host buffers are device memory, and nothing is outlined.
    bool device;
  };

  const Function &fn;
  llvm::LLVMContext &ctx;
  std::unique_ptr<llvm::Module> mod;
  llvm::IRBuilder<> b;
  const Target &target;
  Options options;
  llvm::Function *kernel = nullptr;
  Value *buffersArg = nullptr, *symsArg = nullptr, *ctxArg = nullptr;
  llvm::Type *i8 = nullptr, *i32 = nullptr, *i64 = nullptr, *ptr = nullptr;
  std::map<std::string, int> symIndex;
  std::vector<Value *> bufs;
  int32_t opIndex = 0;
  std::string error;

  bool unsupported(const std::string &what);

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

  // --- runtime calls ---------------------------------------------------
  llvm::FunctionCallee runtime(const char *name, llvm::Type *ret,
                               std::vector<llvm::Type *> args);

  /// Branches to a failure exit if \p failed (shared per host function for
  /// no \p record); a failing device thread stores \p values ({0}, {1}).
  void failIf(Value *failed, const std::function<void()> &record,
              const std::vector<Value *> &values = {});
  void failOpIf(Value *failed);
  /// Fails with \p message. In device code "{0}" and "{1}" in it show
  /// \p values (for example the index that was out of bounds); host code
  /// has no use for them (its library kernels format their own).
  void failMessageIf(Value *failed, const std::string &message,
                     const std::vector<Value *> &values = {});
  /// The index of the op being lowered as the runtime reports it: a
  /// constant, or inside a shared kernel its caller's base plus the offset.
  Value *opIndexValue();
  /// A private constant string, one global per distinct text (kernels
  /// that differ only in which global holds a message stay identical).
  Value *messageText(const std::string &message);
  std::map<std::string, llvm::Constant *> messages;

  // --- buffers and symbols ----------------------------------------------
  /// The slot of \p v's buffer pointer: in the function's buffer array
  /// (indexed by value), or inside a kernel function in its own argument
  /// array (indexed by first use, see lowerKernel).
  Value *bufferSlot(ValueId v) {
    return b.CreateConstGEP1_64(ptr, buffersArg,
                                kernelSlots ? kernelSlot(v) : v);
  }
  Value *loadBuffer(ValueId v) { return b.CreateLoad(ptr, bufferSlot(v)); }
  Value *symSlot(const std::string &name);

  /// The value of a size expression. While `sizeOverflow` is set, every
  /// step is checked and its overflow or-ed into it (checkedExpr).
  Value *expr(SymExpr e);
  /// x + y or x * y (\p checkedOp: the with-overflow intrinsic), checked
  /// when `sizeOverflow` is set.
  Value *sizeStep(llvm::Intrinsic::ID checkedOp, Value *x, Value *y);
  /// Overflow of the size steps being checked (nullptr: not checking).
  Value *sizeOverflow = nullptr;
  /// expr / cond with every step checked; \p overflow is true at run time
  /// when a step left int64.
  Value *checkedExpr(SymExpr e, Value *&overflow);
  Value *checkedCond(const SymCond &c, Value *&overflow);
  /// Host code before \p op: fails (with the op's location) when the byte
  /// size of a result leaves int64, so that later size and index arithmetic
  /// of the op is exact.
  void checkResultSizes(const Operation &op);
  /// Byte sizes checkResultSizes checked in the current LLVM function
  /// (cleared when emission enters or leaves a nested function).
  std::set<std::string> sizesChecked;
  Value *floorDiv(Value *x, Value *y);
  Value *floorMod(Value *x, Value *y);
  Value *cond(const SymCond &c);

  std::vector<Value *> dims(const TensorType &t);
  Value *product(const std::vector<Value *> &v);
  std::vector<Value *> contiguousStrides(const std::vector<Value *> &shape);

  /// Allocates the buffer of value \p v with \p count elements.
  Value *allocate(ValueId v, Value *count);
  /// \p bytes (i64; -1 fails) from the call's allocator, failing the op
  /// when the allocation does.
  Value *allocateBytes(Value *bytes);

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

  Value *allocateResult(const Operation &op, size_t i = 0);

  /// for (idx...) over \p extents, calling \p body with the indices: an
  /// op's outermost loop nest through Target::parallelLoop (iterations
  /// must be independent and write disjoint data; \p work as there),
  /// nested ones sequential.
  void loops(const std::vector<Value *> &extents, const LoopBody &body,
             Value *work = nullptr);
  void loopLevel(const std::vector<Value *> &extents, size_t level,
                 std::vector<Value *> &idx,
                 const std::function<void(const std::vector<Value *> &)> &body);
  Value *offset(const std::vector<Value *> &idx,
                const std::vector<Value *> &strides);

  // --- element values ---------------------------------------------------
  /// The type elements of \p t are computed in.
  llvm::Type *computeType(DType t);
  llvm::Type *storageType(DType t);
  Value *load(DType t, Value *base, Value *index);
  /// For element \p idx of a tensor holding a block at \p starts with
  /// extents \p extents: its offset in the block (row-major \p strides of
  /// the block) and, in \p inside, whether it lies in the block (pad,
  /// update_slice).
  Value *blockOffset(const std::vector<Value *> &idx,
                     const std::vector<Value *> &starts,
                     const std::vector<Value *> &extents,
                     const std::vector<Value *> &strides, Value *&inside);
  /// load(t, base, index) where \p cond holds, else \p otherwise: the
  /// load is branched around, so \p base may be empty outside \p cond.
  Value *loadWhere(Value *cond, DType t, Value *base, Value *index,
                   Value *otherwise);
  void store(DType t, Value *base, Value *index, Value *v);
  /// \p v (computed in computeType(t)) rounded or wrapped to what storing
  /// it as \p t and loading it back gives: fused values match stored ones.
  Value *roundToStorage(DType t, Value *v);
  /// The bfloat16 bits (in an i32) of f32 \p v, rounded to nearest even.
  Value *bf16Bits(Value *v);
  /// Converts a computed value between element types (cast semantics).
  Value *convert(Value *v, DType from, DType to);
  Value *fconst(DType t, double v) {
    return llvm::ConstantFP::get(computeType(t), v);
  }
  Value *libm(const char *f32name, const char *f64name, DType t, Value *x);
  Value *unary(OpCode code, DType t, Value *x);
  Value *binary(OpCode code, DType t, Value *x, Value *y);

  // --- the kernel plan (KernelPlan.h) ------------------------------------
  /// What the lowering follows: fused trees, GEMM operands read as B^T,
  /// frees, row groups, outlined runs (computed by makePlan at the start).
  KernelPlan plan;
  /// The plan's tables under the names the lowering loops use.
  std::vector<const Operation *> &producer = plan.producer;
  std::vector<bool> &transposedOperand = plan.transposedOperand;
  std::vector<std::vector<ValueId>> &freeAfter = plan.freeAfter;
  std::vector<RowGroup> &rowGroups = plan.rowGroups;
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
  /// Vectorizable f32 approximations of tanh and erf (a few ulp).
  Value *fastTanh(Value *x);
  Value *fastExp(Value *x);
  Value *fastErf(Value *x);
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

  bool layout(const Operation &op);

  bool concat(const Operation &op);

  /// An alloca in the current function's entry block (not in a loop).
  Value *entryAlloca(llvm::Type *t);
  /// An alloca'd i64 array holding a type's dims.
  Value *shapeArray(const TensorType &t);
  Value *dtypeCode(ValueId v) {
    return b.getInt32(static_cast<int32_t>(fn.type(v).dtype));
  }
  void checkStatus(Value *status) {
    failOpIf(b.CreateICmpNE(status, b.getInt32(0)));
  }

  bool library(const Operation &op);
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
  bool indexAdd(const Operation &op);
  /// masked_scatter on the device, one thread (tsl_rt_masked_scatter on CPU).
  bool maskedScatterSerial(const Operation &op);
  /// The fused attention op as a call of tsl_rt_attention.
  bool attention(const Operation &op);
  /// update_slice: in place (the block) when the plan says so, else one pass.
  bool updateSlice(const Operation &op);
  /// An in-place update_slice on a device: one launch writes the block.
  bool launchUpdateInPlace(const Operation &op);

  /// True when \p op is not lowered on its own: its result is computed
  /// inside its consumer (a fused loop, or a GEMM reading B^T).
  bool computedElsewhere(const Operation &op) const {
    return plan.computedElsewhere(op);
  }

  /// The emission state of the function being built, saved while a nested
  /// function (an outlined run of ops, a device kernel) is emitted.
  struct EmissionState {
    llvm::Function *function;
    llvm::BasicBlock *block;
    Value *buffers, *syms, *ctx;
    std::vector<Value *> bufs;
  };
  /// Emits into \p f from now on: its first two arguments are the buffer
  /// and symbol arrays (the third, if any, the context), and `bufs` holds
  /// only \p used, loaded from f's buffer array where the caller had them.
  EmissionState enterFunction(llvm::Function *f,
                              const std::vector<ValueId> &used);
  void leaveFunction(EmissionState saved);

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
  /// While a kernel function is emitted: its slot of each value.
  std::map<ValueId, unsigned> *kernelSlots = nullptr;
  unsigned kernelSlot(ValueId v) {
    return kernelSlots->emplace(v, kernelSlots->size()).first->second;
  }
  /// While a kernel function is emitted: its op argument and first op.
  Value *kernelOp = nullptr;
  int32_t kernelFirstOp = 0;
  /// The kernels emitted so far, by their LLVM text.
  std::map<std::string, llvm::Function *> kernelsByText;
  /// The entry point's scratch area (bufferArrayLength): a kernel call's
  /// argument array or a callee call's buffer array while it runs.
  Value *scratchArea();

  // --- device kernels (backend/nvptx: CodegenDevice*.cpp) -----------------
  // On a target that launches kernels each op becomes a device function of
  // `deviceModule` whose outermost loops are grid-stride loops over a flat
  // index; the host function allocates its results in device memory and
  // launches it.
  bool inDevice = false; ///< emitting a device function
  /// Results were allocated already (by the host of a device kernel, or by
  /// a row group before its row loop): allocateResult returns them.
  bool preallocated = false;
  /// f16 and bf16 values of the row group being lowered whose row of
  /// scratch holds f32: they never leave the kernel, so they round nowhere
  /// (rounding once on store) and cost no conversions.
  std::set<ValueId> wideScratch;
  /// The element type \p v is stored as: its own, or f32 (wideScratch).
  DType storedType(ValueId v) const;
  Value *deviceThread = nullptr, *deviceThreads = nullptr;
  /// Loops open around the builder's position (0: the next loop nest is an
  /// op's outermost, which Target::parallelLoop emits).
  int loopNesting = 0;
  /// Messages of the device function's failures (1-based in the status).
  std::vector<std::string> deviceMessages;
  int64_t deviceMessage = 0;
  /// Lowers \p op through the target (run() calls it on targets that
  /// launch kernels).
  bool lowerOnDevice(const Operation &op) { return target.lowerOp(*this, op); }
  /// The launch shape of a device kernel: blocks of `threads` threads
  /// (a multiple of 32) with `sharedBytes` of shared memory each.
  struct DeviceGrid {
    Value *blocks;  ///< i64
    Value *threads; ///< i32
    int32_t sharedBytes = 0;
  };
  /// Threads per block of kernels that have no reason to pick another.
  static constexpr int32_t kDeviceThreads = 256;
  /// Emits device function `tsl_dev_<k>(ptr args)` with \p body (\p used:
  /// the values whose buffers it touches; \p extras: raw device pointers
  /// the host passes too, deviceExtra(i) inside) and returns k, or -1 when
  /// the body failed. \p slots gets the values whose buffers the launch
  /// passes, in the kernel's slot order.
  int32_t emitDeviceKernel(const std::vector<ValueId> &used,
                           const std::function<bool()> &body,
                           std::vector<ValueId> &slots, size_t extras = 0);
  /// Host: launches kernel \p number on \p grid with the buffers of
  /// \p slots and the pointers \p extras; returns from the host function
  /// if the launch failed. Does not wait for the kernel.
  void emitLaunch(int32_t number, const std::vector<ValueId> &slots,
                  const DeviceGrid &grid,
                  const std::vector<Value *> &extras = {});
  /// Host: \p total work items over blocks of kDeviceThreads.
  DeviceGrid gridFor(Value *total);
  /// Host: 8 bytes of device memory owned by the call (a count a kernel
  /// writes for the host).
  Value *deviceWord();
  /// Host: reads symbol \p name from device word \p word (waits), then
  /// checks the device status.
  void readSymbol(const std::string &name, Value *word);
  /// In a device kernel: extra pointer \p i of emitDeviceKernel.
  Value *deviceExtra(size_t i);
  /// In a device kernel: the argument block and its status word pointer.
  Value *deviceArgs = nullptr, *deviceStatus = nullptr;
  /// Some device kernel emitted so far can fail (checkDeviceStatus).
  bool deviceMayFail = false;
  /// The kernel being emitted has barriers: a failed check records itself
  /// and goes on (a thread that returned early would leave the others
  /// waiting at the next barrier). A kernel body sets it first thing;
  /// emitDeviceKernel clears it.
  bool cooperative = false;
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

  // --- device primitives (runtime/DevicePrimitives.def) -------------------
  /// threadIdx.x, blockIdx.x, blockDim.x, gridDim.x as i64.
  Value *gpuThreadIdx() { return gpuIndex("tsl_gpu_thread_idx"); }
  Value *gpuBlockIdx() { return gpuIndex("tsl_gpu_block_idx"); }
  Value *gpuBlockDim() { return gpuIndex("tsl_gpu_block_dim"); }
  Value *gpuGridDim() { return gpuIndex("tsl_gpu_grid_dim"); }
  Value *gpuIndex(const char *primitive);
  /// __syncthreads().
  void gpuBarrier();
  /// __shfl_xor_sync over the full warp of \p v (any 32- or 64-bit type).
  Value *gpuShuffleXor(Value *v, int32_t laneMask);
  /// The block's dynamic shared memory.
  Value *gpuShared();
  /// tsl_gpu_mma_16816: the warp's D = A B + C on tensor cores; \p kind 0
  /// f16, 1 bf16; \p a, \p b and \p acc point to the lane's fragments (4
  /// and 2 i32 words, 4 floats updated in place). Every lane of the warp
  /// must call it.
  void gpuMma16816(int32_t kind, Value *a, Value *b, Value *acc);
  /// The (value, index) pair of the block's threads that \p first picks
  /// (first(av, ai, bv, bi): whether pair a wins over pair b; it must be a
  /// total order, duplicates allowed), every thread getting it. Shared
  /// memory: 32 8-byte values, then 32 indices. Every thread of the block
  /// must call it.
  std::pair<Value *, Value *> blockArgReduce(
      Value *value, Value *index,
      const std::function<Value *(Value *, Value *, Value *, Value *)> &first);
  /// __shfl_sync of \p v (any 32- or 64-bit type) from lane \p srcLane
  /// (i64) of the warp.
  Value *gpuShuffleIdx(Value *v, Value *srcLane);
  /// for (i = from; cond(i); i = next(i)) body(i), in the current function
  /// (host or device); \p cond and \p next emit code at the loop's header
  /// and latch.
  void loopWhile(Value *from, const std::function<Value *(Value *)> &cond,
                 const std::function<Value *(Value *)> &next,
                 const std::function<void(Value *)> &body);
  /// for (i = from; i < to; i += step) body(i), in the current function.
  void stridedLoop(Value *from, Value *to, Value *step,
                   const std::function<void(Value *)> &body);
  /// for (i = blockIdx; i < count; i += gridDim) body(i): work items a
  /// whole block shares (uniform across the block's threads).
  void blockStrideLoop(Value *count, const std::function<void(Value *)> &body);
  /// if (cond) body(), in the current function.
  void ifThen(Value *cond, const std::function<void()> &body);
  /// \p body in thread 0 of each block (the others skip it and go on).
  void onThreadZero(const std::function<void()> &body);
  /// The exclusive prefix sum of i64 \p count over the block's threads in
  /// thread order, and the block's total (32 words of shared memory at
  /// \p sharedOffset). Every thread of the block must call it.
  std::pair<Value *, Value *> blockExclusiveScan(Value *count,
                                                 int32_t sharedOffset = 0);
  /// The combination of \p partial over the block's threads (every thread
  /// gets it): \p combine (associative, commutative, with \p identity)
  /// applied along a warp-shuffle tree, then across warps through shared
  /// memory (32 slots of the value's size at \p sharedOffset). Every thread
  /// of the block must call it; it ends with a barrier, so the slots may be
  /// reused at once.
  Value *blockReduce(Value *partial, Value *identity,
                     const std::function<Value *(Value *, Value *)> &combine,
                     int32_t sharedOffset = 0);
  /// The combination of \p partial over the 32 lanes of the warp (every
  /// lane gets it) by a shuffle butterfly; every lane must call it.
  Value *warpReduce(Value *partial,
                    const std::function<Value *(Value *, Value *)> &combine);
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
  /// conv2d, max_pool2d, index_select, argmax (one kernel each).
  bool deviceLibraryOp(const Operation &op);
  /// argmax and argmin: one thread per result element; the first maximum
  /// (minimum), a NaN once seen.
  bool deviceArgmax(const Operation &op);
  /// argmax and argmin over the last axis or the whole tensor: a block per
  /// row (blockArgReduce), the library's order.
  bool launchArgmaxRows(const Operation &op);
  /// index_select: every index checked (also with no result elements),
  /// then one thread per result element.
  bool deviceIndexSelect(const Operation &op);
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
  /// u < v in the library's total order (NaN above everything).
  Value *orderLess(DType t, Value *u, Value *v);
  void copyElementRaw(DType t, Value *dst, Value *to, Value *src, Value *from);
  bool lowerDeviceOp(const Operation &op);
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

  // --- row fusion (CodegenRows.cpp) -------------------------------------
  // A run of ops over the same rows [*L, n] (elementwise ops and last-axis
  // reductions, as in softmax and layer_norm) is lowered as one loop over
  // the rows, each op in turn per row: a row's values stay in L1, and
  // intermediates used only inside the run live in per-row scratch instead
  // of full tensors.
  /// Set while lowering a row group: tensors [*L, n] are seen as one row
  /// [1, ..., 1, n] (dims()), and results are already allocated.
  std::vector<SymExpr> rowLead;
  bool rowShaped(const TensorType &t) const;
  /// Values a fused tree rooted at \p v reads from memory.
  void leaves(ValueId v, std::vector<ValueId> &out) const {
    plan.leaves(v, out);
  }
};

} // namespace tsl::backend
