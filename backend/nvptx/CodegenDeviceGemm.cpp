// Device mode: matmul. The host asks the device's GEMM library first
// (tsl_rt_dev_gemm: cuBLASLt when it can be loaded, runtime/CublasLt.h) and
// launches TSL's own kernel where it declines: on the emulator, without the
// library, for integer element types, for an empty K and for batch
// broadcasting that one stride per operand cannot express
// (launchGemmKernel: CodegenDeviceMatmul.cpp). The decision is made per
// call, at run time, so one variant serves every machine.
#include "backend/common/RuntimeCalls.h"
#include "backend/nvptx/DeviceCodegen.h"

namespace tsl::backend {

namespace {

bool libraryGemmType(DType t) {
  return t == DType::F16 || t == DType::BF16 || t == DType::F32 ||
         t == DType::F64;
}

} // namespace

bool DeviceCodegen::deviceGemm(const Operation &op) {
  DType t = fn.type(op.operands[0]).dtype;
  Value *dst = allocateResult(op);
  if (!libraryGemmType(t))
    return launchGemmKernel(op);
  MatmulDims md = matmulDims(op);
  // One stride per operand over the flattened batch: the operand's whole
  // matrix block per entry (it has every batch dim) or 0 (it has none of
  // them); -1, which the library declines, for anything in between.
  auto flatStride = [&](const std::vector<Value *> &s, Value *block) {
    Value *full = b.getTrue(), *none = b.getTrue();
    Value *expected = block;
    for (size_t i = s.size(); i-- > 0;) {
      Value *unit = b.CreateICmpEQ(md.batch[i], b.getInt64(1));
      full =
          b.CreateAnd(full, b.CreateOr(unit, b.CreateICmpEQ(s[i], expected)));
      none = b.CreateAnd(none,
                         b.CreateOr(unit, b.CreateICmpEQ(s[i], b.getInt64(0))));
      expected = b.CreateMul(expected, md.batch[i]);
    }
    return b.CreateSelect(none, b.getInt64(0),
                          b.CreateSelect(full, block, b.getInt64(-1)));
  };
  Value *status = callLibraryGemm(
      {t, product(md.batch), md.M, md.N, md.K, bufs[op.operands[0]],
       flatStride(md.sa, b.CreateMul(md.M, md.K)), bufs[op.operands[1]],
       flatStride(md.sc, b.CreateMul(md.K, md.N)), dst,
       b.CreateMul(md.M, md.N)});
  bool ok = true;
  ifThen(b.CreateICmpEQ(status, b.getInt32(2)),
         [&] { ok = launchGemmKernel(op); });
  return ok;
}

Value *DeviceCodegen::callLibraryGemm(const GemmOperands &g) {
  // tsl_rt_gemm (KernelAbi.h).
  auto *gemmType = llvm::StructType::get(
      ctx, {i32, i32, i64, i64, i64, i64, ptr, i64, ptr, i64, ptr, i64});
  Value *desc = entryAlloca(gemmType);
  Value *fields[] = {b.getInt32(static_cast<int32_t>(g.dtype)),
                     b.getInt32(0),
                     g.batch,
                     g.M,
                     g.N,
                     g.K,
                     g.a,
                     g.strideA,
                     g.b,
                     g.strideB,
                     g.d,
                     g.strideD};
  for (unsigned i = 0; i < std::size(fields); ++i)
    b.CreateStore(fields[i], b.CreateStructGEP(gemmType, desc, i));
  Value *status =
      b.CreateCall(runtime(TSL_RT_FN(tsl_rt_dev_gemm)), {ctxArg, desc});
  failIf(b.CreateICmpEQ(status, b.getInt32(1)), [] {});
  return status;
}

} // namespace tsl::backend
