#pragma once
/// \file For the backend libraries only (it includes LLVM; exported to
/// tsl_backend_cpu and tsl_backend_nvptx, which derive from it, and included
/// by nothing outside backend/): what every lowering emits with, whatever
/// it lowers and for whichever target. The function being emitted and its
/// buffers and symbols, runtime calls and failure checks, size expressions,
/// allocation, loop nests, element loads, stores and arithmetic. Codegen
/// (Codegen.h) derives from it and walks the kernel plan. Defined in
/// CodegenValues.cpp, CodegenLoops.cpp, and a few helpers in Codegen.cpp and
/// CodegenOps.cpp.

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

/// The libm functions the lowering calls by name (MathFunctions.def).
enum class MathFn {
#define TSL_MATH_LIBM(Id, F32, F64, NvF32, NvF64) Id,
#include "backend/common/MathFunctions.def"
};

using llvm::Value;

/// Loop bodies get one index per extent (row-major).
using LoopBody = std::function<void(const std::vector<Value *> &)>;

/// The emission state and primitives shared by every lowering (Codegen and
/// the targets' subclasses of it).
class Emitter {
public:
  /// Emits code for \p fn on \p target (both must outlive it) into a
  /// module of \p ctx.
  Emitter(const Function &fn, llvm::LLVMContext &ctx, const Target &target,
          LoweringOptions options)
      : fn(fn), ctx(ctx), mod(std::make_unique<llvm::Module>("tsl", ctx)),
        b(ctx), target(target), options(std::move(options)) {}
  virtual ~Emitter() = default;
  Emitter(const Emitter &) = delete;
  Emitter &operator=(const Emitter &) = delete;

protected:
  // --- the target's hooks the primitives call ---------------------------
  /// Emits the outermost loop nest of an op over \p extents (every index,
  /// once; iterations independent, writing disjoint data): on the CPU,
  /// chunks of the outer indices on the runtime's thread pool when the loop
  /// is large enough; in a device kernel, one grid-stride loop over the
  /// flattened extents. \p work (i64, or null for 1) is the elements of work
  /// one index stands for. Nested loops are sequential (loops()).
  virtual void parallelLoop(const std::vector<Value *> &extents, Value *work,
                            const LoopBody &body) = 0;
  /// A failed check in the code being emitted goes on instead of returning
  /// (device kernels with barriers); its result must stay harmless.
  virtual bool failuresGoOn() const { return false; }

  const Function &fn;
  llvm::LLVMContext &ctx;
  std::unique_ptr<llvm::Module> mod;
  llvm::IRBuilder<> b;
  const Target &target;
  LoweringOptions options;
  /// The LLVM function being emitted (the entry point, an outlined kernel,
  /// a segment, a device kernel) and its buffer, symbol and context
  /// arguments.
  llvm::Function *kernel = nullptr;
  Value *buffersArg = nullptr, *symsArg = nullptr, *ctxArg = nullptr;
  llvm::Type *i8 = nullptr, *i32 = nullptr, *i64 = nullptr, *ptr = nullptr;
  std::map<std::string, int> symIndex;
  /// Each value's buffer in the function being emitted (null: none yet).
  std::vector<Value *> bufs;
  /// The op being lowered (failures report it).
  int32_t opIndex = 0;
  /// Why lowering failed (unsupported(); empty message: not yet).
  Error error;

  /// Sets the error to "not supported on the <target> backend: \p what";
  /// false.
  bool unsupported(const std::string &what);
  /// The error a failed lowering returns: error, or "not supported" when
  /// the lowering did not say why.
  Error loweringError() const;
  /// The buffer of \p v in the function being emitted (null before it is
  /// allocated).
  Value *buffer(ValueId v) const { return bufs[v]; }

  // --- runtime calls ---------------------------------------------------
  /// Runtime function \p fn (TSL_RT_FN, RuntimeCalls.h, or a target's
  /// RuntimeEntries): in an AOT module the address in `tsl_rt_table` when it
  /// has a slot (loaded here), else the declared function.
  llvm::FunctionCallee runtime(const RuntimeFn &fn);
  /// Function \p name of type \p type, as runtime(RuntimeFn).
  llvm::FunctionCallee runtime(const char *name, llvm::FunctionType *type);

  /// Branches to a failure exit if \p failed: host code runs \p record and
  /// returns 1 (one shared return per function for no \p record). A target
  /// that emits device code overrides it there (a failing device thread
  /// stores \p values, {0} and {1} of the message).
  virtual void failIf(Value *failed, const std::function<void()> &record,
                      const std::vector<Value *> &values = {});
  void failOpIf(Value *failed);
  /// Fails with \p message. In device code "{0}" and "{1}" in it show
  /// \p values (for example the index that was out of bounds); host code
  /// has no use for them (its library kernels format their own). Host code
  /// here; a target that emits device code overrides it there.
  virtual void failMessageIf(Value *failed, const std::string &message,
                             const std::vector<Value *> &values = {});
  /// The branch of a failed check (nothing when \p failed is constant
  /// false): \p onFail emits the failure block, ending it, and the builder
  /// goes on at \p ok, where the check passed.
  void failBranch(Value *failed,
                  const std::function<void(llvm::BasicBlock *ok)> &onFail);
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

  /// The buffer result \p i of \p op is computed into: preallocated, a
  /// donated parameter's (resultBufferOf), or freshly allocated.
  Value *allocateResult(const Operation &op, size_t i = 0);
  /// The value whose buffer \p v is computed into: \p v itself (a fresh
  /// buffer) unless the target's plan writes it into a donated parameter's
  /// (KernelPlan::writesInto).
  virtual ValueId resultBufferOf(ValueId v) const { return v; }

  // --- loops (CodegenValues.cpp, CodegenLoops.cpp) -----------------------
  /// for (idx...) over \p extents, calling \p body with the indices: an
  /// op's outermost loop nest through parallelLoop (iterations
  /// must be independent and write disjoint data; \p work as there),
  /// nested ones sequential.
  void loops(const std::vector<Value *> &extents, const LoopBody &body,
             Value *work = nullptr);
  /// Sequential loops over \p extents (the body may nest more loops).
  void serialLoops(const std::vector<Value *> &extents, const LoopBody &body);
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
  /// \p f of \p x, computed as \p t: libm's f64 function for f64, else its
  /// f32 one (MathFunctions.def).
  Value *libm(MathFn f, DType t, Value *x);
  /// The element math of elementwise op \p code on computed values of
  /// operand type \p t (CodegenElementMath.cpp's tables); null for ops
  /// without one (cast, where: Codegen::compute).
  Value *unary(OpCode code, DType t, Value *x);
  Value *binary(OpCode code, DType t, Value *x, Value *y);
  /// The emit functions unary and binary look up (CodegenElementMath.cpp).
  struct ElementMath;

  /// Vectorizable f32 approximations of tanh and erf (a few ulp).
  Value *fastTanh(Value *x);
  Value *fastExp(Value *x);
  Value *fastErf(Value *x);
  /// Host: the byte size of a value of type \p t.
  Value *byteSize(const TensorType &t);
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
  /// While a kernel function is emitted: its slot of each value.
  std::map<ValueId, unsigned> *kernelSlots = nullptr;
  unsigned kernelSlot(ValueId v) {
    return kernelSlots->emplace(v, kernelSlots->size()).first->second;
  }
  /// While a kernel function is emitted: its op argument and first op.
  Value *kernelOp = nullptr;
  int32_t kernelFirstOp = 0;

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
  /// Set while lowering a row group (Codegen's row fusion): tensors [*L, n]
  /// are seen as one row [1, ..., 1, n] (dims()), and results are already
  /// allocated.
  std::vector<SymExpr> rowLead;
  bool rowShaped(const TensorType &t) const;
};

} // namespace tsl::backend
