#pragma once
/// \file Private to backend/nvptx (it includes LLVM): device kernels on top of
/// the common lowering (backend/common/Codegen.h), as Halide's
/// CodeGen_PTX_Dev subclasses its LLVM emitter. The host function (x86, the
/// kernel ABI) allocates results in device memory and launches device
/// kernels, each a function `tsl_dev_<k>(ptr args)` of the device module
/// (Lowering.h: DeviceKernels) whose outermost loops are grid-stride loops.
/// This class emits kernels and their launches, the device's failure
/// reporting, the target's hooks that concern them, and the block and warp
/// primitives (CodegenDevice.cpp, CodegenDeviceBlock.cpp); DeviceCodegen
/// (DeviceCodegen.h) lowers the ops with them.

#include "backend/common/Codegen.h"

namespace tsl::backend {

/// Device kernels, launches and the GPU's primitives: the state a GPU
/// lowering keeps besides the common one.
class DeviceContext : public Codegen {
public:
  DeviceContext(const Function &fn, llvm::LLVMContext &ctx,
                const Target &target, LoweringOptions options)
      : Codegen(fn, ctx, target, std::move(options)),
        deviceModule(std::make_unique<llvm::Module>("tsl_device", ctx)) {}
  /// The device kernels run() launched, and their number.
  void takeKernels(DeviceKernels &kernels) override {
    kernels.module = std::move(deviceModule);
    kernels.count = numKernels;
  }

protected:
  /// A host copy of element 0 (tsl_rt_dev_read into a stack slot).
  Value *readToHost(ValueId v) override;
  /// A copy kernel and its launch (deviceCopy).
  bool copyBuffer(Value *dst, Value *src, const TensorType &t) override {
    return deviceCopy(dst, src, t);
  }
  /// In a device kernel, one grid-stride loop over the flattened extents; in
  /// host code, sequential loops.
  void parallelLoop(const std::vector<Value *> &extents, Value *,
                    const LoopBody &body) override {
    if (inDevice)
      gridStrideLoops(extents, body);
    else
      serialLoops(extents, body);
  }
  /// Waits for the kernels' status word when one of them can fail.
  void endCall() override { checkDeviceStatus(); }
  /// Unsupported: the GPU's host code launches kernels, so calls are
  /// inlined before lowering (inlineCalls).
  bool lowerCall(const Operation &) override {
    return unsupported("calls (inline them first: inlineCalls)");
  }
  /// In a device kernel, kernelFailure; in host code, the host's.
  void failIf(Value *failed, const std::function<void()> &record,
              const std::vector<Value *> &values = {}) override;
  /// In a device kernel, kernelFailMessageIf; in host code, the host's.
  void failMessageIf(Value *failed, const std::string &message,
                     const std::vector<Value *> &values = {}) override;
  /// The failing thread stores 1 + the op index (and the message's number)
  /// in the call's status word; see CodegenDevice.cpp.
  void kernelFailure(llvm::BasicBlock *ok, const std::vector<Value *> &values);
  void kernelFailMessageIf(Value *failed, const std::string &message,
                           const std::vector<Value *> &values);
  bool failuresGoOn() const override { return cooperative; }

  /// The device kernels emitted so far, and their number.
  std::unique_ptr<llvm::Module> deviceModule;
  int32_t numKernels = 0;
  /// Host: a device kernel copying a value of type \p t from device
  /// buffer \p src to \p dst (distinct buffers) and its launch
  /// (CodegenDevice.cpp). False with the error set when it cannot be emitted.
  bool deviceCopy(Value *dst, Value *src, const TensorType &t);
  /// Host: \p bytes of device scratch owned by the call (fails the op
  /// when the allocation does).
  Value *deviceScratch(Value *bytes);
  /// Host: waits for the device and returns from the host function with
  /// the failed op and its message when a device kernel failed (only when
  /// a kernel so far can fail).
  void checkDeviceStatus();
  /// for (i = thread; i < prod(extents); i += threads) body(unflatten(i)).
  void gridStrideLoops(const std::vector<Value *> &extents,
                       const LoopBody &body);

  // --- device kernels (backend/nvptx: CodegenDevice*.cpp) -----------------
  // On a target that launches kernels each op becomes a device function of
  // `deviceModule` whose outermost loops are grid-stride loops over a flat
  // index; the host function allocates its results in device memory and
  // launches it.
  bool inDevice = false; ///< emitting a device function
  Value *deviceThread = nullptr, *deviceThreads = nullptr;
  /// Messages of the device function's failures (1-based in the status).
  std::vector<std::string> deviceMessages;
  int64_t deviceMessage = 0;
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
};

} // namespace tsl::backend
