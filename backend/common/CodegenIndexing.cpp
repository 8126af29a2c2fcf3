// Lowerings shared by the CPU and the GPU of the ops that work along one
// axis by position: cumsum and cumprod (forward or reverse) and index_add
// (masked_scatter's one-thread GPU form is DeviceCodegen's, in
// backend/nvptx/CodegenDeviceLibrary.cpp). Each is one loop nest over the
// other axes (parallelLoop, the target's hook: the CPU's thread pool, a GPU
// thread per row or column) around a serial loop along the axis, so each
// destination element has one writer and sees its updates in a fixed order:
// deterministic, without atomics.
#include "backend/common/Codegen.h"
#include "backend/common/RuntimeCalls.h"

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
  bool reverse = op.boolAttr("reverse");
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
        Value *pos =
            reverse ? b.CreateSub(b.CreateSub(s.n, b.getInt64(1)), j) : j;
        Value *at = b.CreateAdd(base, b.CreateMul(pos, s.inner));
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

bool Codegen::indexAddAt(const Operation &op, bool perThread) {
  ValueId x = op.operands[0], idx = op.operands[1], src = op.operands[2];
  DType t = fn.type(x).dtype, it = fn.type(idx).dtype;
  size_t axis = static_cast<size_t>(op.intAttr("axis"));
  Value *dst = allocateResult(op);
  AxisSizes s = axisSizes(fn.type(x), axis);
  Value *len = expr(fn.type(idx).dims[0]);
  std::string outOfBounds = "index {0} is out of bounds for axis " +
                            std::to_string(axis) + " of size {1}";
  auto indexAt = [&](Value *j) {
    Value *v = load(it, bufs[idx], j);
    return it == DType::Bool ? b.CreateZExt(v, i64) : v;
  };
  auto badIndex = [&](Value *v) {
    return b.CreateOr(b.CreateICmpSLT(v, b.getInt64(0)),
                      b.CreateICmpSGE(v, s.n));
  };
  // Every index is checked before anything is added, even when x or source
  // has no elements: on the host by the library (its message names the
  // index), on the device by a first loop (and again where each is used:
  // threads of other blocks may not have failed yet).
  if (!perThread) {
    checkStatus(b.CreateCall(runtime(TSL_RT_FN(tsl_rt_check_indices)),
                             {ctxArg, dtypeCode(idx), bufs[idx], len,
                              b.getInt32(static_cast<int32_t>(axis)), s.n}));
    // The copy of x: contiguous, in parallel.
    loops({product(dims(fn.type(x)))}, [&](const std::vector<Value *> &i) {
      store(t, dst, i[0], load(t, bufs[x], i[0]));
    });
  } else {
    loops({len}, [&](const std::vector<Value *> &j) {
      Value *v = indexAt(j[0]);
      failMessageIf(badIndex(v), outOfBounds, {v, s.n});
    });
  }
  // Destinations partitioned by column: (outer, a block of `width` inner
  // positions) per parallel index, the index walked in order inside it. A
  // GPU thread takes one column (neighbours read neighbouring elements); a
  // CPU chunk a run of 64, the innermost loop contiguous.
  Value *width = b.getInt64(perThread ? 1 : 64);
  Value *blocks = b.CreateUDiv(
      b.CreateAdd(s.inner, b.CreateSub(width, b.getInt64(1))), width);
  loops(
      {s.outer, blocks},
      [&](const std::vector<Value *> &col) {
        Value *k0 = b.CreateMul(col[1], width);
        Value *count = b.CreateBinaryIntrinsic(llvm::Intrinsic::smin, width,
                                               b.CreateSub(s.inner, k0));
        Value *xBase =
            b.CreateAdd(b.CreateMul(b.CreateMul(col[0], s.n), s.inner), k0);
        Value *sBase =
            b.CreateAdd(b.CreateMul(b.CreateMul(col[0], len), s.inner), k0);
        if (perThread) // this thread's column of x first
          loops({s.n, count}, [&](const std::vector<Value *> &jk) {
            Value *at = b.CreateAdd(
                xBase, b.CreateAdd(b.CreateMul(jk[0], s.inner), jk[1]));
            store(t, dst, at, load(t, bufs[x], at));
          });
        loops({len}, [&](const std::vector<Value *> &j) {
          Value *v = indexAt(j[0]);
          if (perThread)
            failMessageIf(badIndex(v), outOfBounds, {v, s.n});
          Value *to = b.CreateAdd(xBase, b.CreateMul(v, s.inner));
          Value *from = b.CreateAdd(sBase, b.CreateMul(j[0], s.inner));
          loops({count}, [&](const std::vector<Value *> &k) {
            Value *o = b.CreateAdd(to, k[0]);
            store(t, dst, o,
                  binary(OpCode::Add, t, load(t, dst, o),
                         load(t, bufs[src], b.CreateAdd(from, k[0]))));
          });
        });
      },
      b.CreateMul(len, width));
  return true;
}

} // namespace tsl::backend
