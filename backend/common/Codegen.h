#pragma once
/// \file Private to the backend libraries (it includes LLVM; not among any
/// library's public headers' users outside backend/): the lowering context
/// both targets share, Halide's CodeGen_LLVM to our targets' subclasses:
/// values, sizes and indexing, loops, element values, the argument matcher
/// and result shapes, and the kernel plan's walk (run()). What differs per
/// target is a virtual hook below, overridden by backend/cpu's CpuCodegen
/// (CpuCodegen.h) and backend/nvptx's DeviceCodegen (DeviceCodegen.h);
/// Target::makeCodegen makes the right one. Defined in Codegen.cpp (the
/// walk, elementwise ops and fusion, reductions, matmul), CodegenValues.cpp
/// (sizes, loops, element values), CodegenOps.cpp (layout and library ops,
/// the matcher and the result-shape function), CodegenIndexing.cpp,
/// CodegenLoops.cpp and CodegenSegments.cpp. docs/design.md has the map.

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

/// Loop bodies get one index per extent (row-major).
using LoopBody = std::function<void(const std::vector<Value *> &)>;

/// The lowering of one IR Function to LLVM IR, shared by the targets; a
/// target's subclass supplies the hooks (lowerHostOp, lowerRowGroup,
/// parallelLoop, ...) and its own state.
class Codegen {
public:
  /// Lowers \p fn for \p target (both must outlive the Codegen); the
  /// module lives in \p ctx.
  Codegen(const Function &fn, llvm::LLVMContext &ctx, const Target &target,
          LoweringOptions options = {})
      : fn(fn), ctx(ctx), mod(std::make_unique<llvm::Module>("tsl", ctx)),
        b(ctx), target(target), options(std::move(options)) {}
  virtual ~Codegen() = default;
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
  /// After run(), on targets that launch kernels
  /// (TargetCaps::launchesKernels): the device kernels the host code
  /// launches. Nothing by default.
  virtual void takeKernels(DeviceKernels &) {}

protected:
  // --- the target's hooks ------------------------------------------------
  /// Lowers \p op, one op of the host function not computed inside another,
  /// at the builder's position: the CPU emits its loop nest or library call
  /// there (lowerOp); a GPU emits a device kernel and its launch. False with
  /// the error set when the target cannot lower it.
  virtual bool lowerHostOp(const Operation &op) = 0;
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
  /// Emits the outermost loop nest of an op over \p extents (every index,
  /// once; iterations independent, writing disjoint data): on the CPU,
  /// chunks of the outer indices on the runtime's thread pool when the loop
  /// is large enough; in a device kernel, one grid-stride loop over the
  /// flattened extents. \p work (i64, or null for 1) is the elements of work
  /// one index stands for. Nested loops are sequential (loops()).
  virtual void parallelLoop(const std::vector<Value *> &extents, Value *work,
                            const LoopBody &body) = 0;
  /// Host code at the end of a call that succeeded so far (a GPU waits for
  /// its kernels' status here). Nothing by default.
  virtual void endCall() {}
  /// A call op: the callee's entry point (lowerForTarget links it in) on
  /// an array of the operands' buffers; its results come back in it.
  virtual bool lowerCall(const Operation &op);
  /// True while device code is emitted (a kernel's body, not host code):
  /// ops lowered on both targets pick their per-thread form.
  virtual bool inKernel() const { return false; }
  /// Emits the failure branch of a failed check in device code (failIf,
  /// inKernel()): the builder is in the failure block, \p ok is where the
  /// check goes on. Only targets whose inKernel() can hold override it.
  virtual void kernelFailure(llvm::BasicBlock *ok,
                             const std::vector<Value *> &values) {}
  /// failMessageIf in device code (inKernel()).
  virtual void kernelFailMessageIf(Value *failed, const std::string &message,
                                   const std::vector<Value *> &values) {}
  /// A failed check in the code being emitted goes on instead of returning
  /// (device kernels with barriers); its result must stay harmless.
  virtual bool failuresGoOn() const { return false; }
  /// A value held in a register instead of memory at the builder's position
  /// (a device row kernel's reductions), or null: valueAt reads it.
  virtual Value *registerValue(ValueId) { return nullptr; }

  // --- the common lowering ---------------------------------------------
  /// Lowers \p op with the common lowering (loop nests, library calls) at
  /// the builder's position. False with the error set when unsupported.
  bool lowerOp(const Operation &op);
  /// Sequential loops over \p extents (the body may nest more loops).
  void serialLoops(const std::vector<Value *> &extents, const LoopBody &body);
  /// Host: the byte size of a value of type \p t.
  Value *byteSize(const TensorType &t);
  /// The buffer of \p v in the function being emitted (null before it is
  /// allocated).
  Value *buffer(ValueId v) const { return bufs[v]; }

  const Function &fn;
  llvm::LLVMContext &ctx;
  std::unique_ptr<llvm::Module> mod;
  llvm::IRBuilder<> b;
  const Target &target;
  LoweringOptions options;
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
  /// if (cond) body(), in the current function.
  void ifThen(Value *cond, const std::function<void()> &body);

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
  /// The fused attention op as a call of tsl_rt_attention.
  bool attention(const Operation &op);
  /// update_slice: in place (the block) when the plan says so, else one pass.
  bool updateSlice(const Operation &op);

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

  // --- state shared by the targets' lowerings --------------------------
  /// Results were allocated already (by the host of a device kernel, or by
  /// a row group before its row loop): allocateResult returns them.
  bool preallocated = false;
  /// f16 and bf16 values of the row group being lowered whose row of
  /// scratch holds f32: they never leave the kernel, so they round nowhere
  /// (rounding once on store) and cost no conversions.
  std::set<ValueId> wideScratch;
  /// The element type \p v is stored as: its own, or f32 (wideScratch).
  DType storedType(ValueId v) const;
  /// Loops open around the builder's position (0: the next loop nest is an
  /// op's outermost, which parallelLoop emits).
  int loopNesting = 0;

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
