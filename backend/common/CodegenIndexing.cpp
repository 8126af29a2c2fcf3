// Lowerings shared by the CPU and the GPU of the ops that work along one
// axis by position: cumsum and cumprod. Each is one loop nest over the
// other axes (Target::parallelLoop: the CPU's thread pool, a GPU thread per
// row) around a serial loop along the axis.
#include "backend/common/Codegen.h"

namespace tsl::backend {

Codegen::AxisSizes Codegen::axisSizes(const TensorType &t, size_t axis) {
  std::vector<Value *> shape = dims(t);
  AxisSizes s{b.getInt64(1), shape[axis], b.getInt64(1)};
  for (size_t i = 0; i < axis; ++i)
    s.outer = b.CreateMul(s.outer, shape[i]);
  for (size_t i = axis + 1; i < shape.size(); ++i)
    s.inner = b.CreateMul(s.inner, shape[i]);
  return s;
}

bool Codegen::scan(const Operation &op) {
  ValueId x = op.operands[0];
  DType t = fn.type(x).dtype;
  Value *dst = allocateResult(op);
  AxisSizes s = axisSizes(fn.type(x), static_cast<size_t>(op.intAttr("axis")));
  bool sum = op.code == OpCode::Cumsum;
  // Floats accumulate in f64 (as the interpreter and PyTorch's CPU
  // kernels), integers in i64 wrapped on store (as in their own type).
  DType accType = isFloat(t) ? DType::F64 : DType::I64;
  llvm::Type *acc = computeType(accType);
  Value *init = isFloat(t) ? fconst(DType::F64, sum ? 0.0 : 1.0)
                           : static_cast<Value *>(b.getInt64(sum ? 0 : 1));
  loops(
      {s.outer, s.inner},
      [&](const std::vector<Value *> &row) {
        Value *base =
            b.CreateAdd(b.CreateMul(b.CreateMul(row[0], s.n), s.inner), row[1]);
        llvm::BasicBlock *pre = b.GetInsertBlock();
        auto *header = llvm::BasicBlock::Create(ctx, "scan", kernel);
        auto *body = llvm::BasicBlock::Create(ctx, "scanbody", kernel);
        auto *exit = llvm::BasicBlock::Create(ctx, "scanexit", kernel);
        b.CreateBr(header);
        b.SetInsertPoint(header);
        llvm::PHINode *j = b.CreatePHI(i64, 2);
        llvm::PHINode *a = b.CreatePHI(acc, 2);
        j->addIncoming(b.getInt64(0), pre);
        a->addIncoming(init, pre);
        b.CreateCondBr(b.CreateICmpSLT(j, s.n), body, exit);
        b.SetInsertPoint(body);
        Value *at = b.CreateAdd(base, b.CreateMul(j, s.inner));
        Value *v = convert(load(t, bufs[x], at), t, accType);
        Value *next = isFloat(t)
                          ? (sum ? b.CreateFAdd(a, v) : b.CreateFMul(a, v))
                          : (sum ? b.CreateAdd(a, v) : b.CreateMul(a, v));
        store(t, dst, at, convert(next, accType, t));
        j->addIncoming(b.CreateAdd(j, b.getInt64(1), "", true, true),
                       b.GetInsertBlock());
        a->addIncoming(next, b.GetInsertBlock());
        b.CreateBr(header);
        b.SetInsertPoint(exit);
      },
      s.n);
  return true;
}

} // namespace tsl::backend
