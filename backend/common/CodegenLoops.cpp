// Host code of loops (Ops.def: loop, end_loop): the body's ops are emitted
// once, between a header that counts the loop symbol from lo to hi and a
// back edge. Each carried value has one buffer for the whole loop (the
// loop's results and the end_loop's share it, KernelPlan): the initial value
// is copied in before the loop, and each iteration's next value is copied
// in at its end, after which the body's intermediates are freed.
#include "backend/common/Codegen.h"

namespace tsl::backend {

Value *Emitter::byteSize(const TensorType &t) {
  return b.CreateMul(product(dims(t)), b.getInt64(dtypeSize(t.dtype)));
}

void Emitter::ifThen(Value *cond, const std::function<void()> &body) {
  auto *then = llvm::BasicBlock::Create(ctx, "then", kernel);
  auto *done = llvm::BasicBlock::Create(ctx, "endif", kernel);
  b.CreateCondBr(cond, then, done);
  b.SetInsertPoint(then);
  body();
  b.CreateBr(done);
  b.SetInsertPoint(done);
}

bool Codegen::beginLoop(size_t i) {
  const Operation &op = fn.ops[i];
  for (size_t k = 0; k < op.results.size(); ++k) {
    const TensorType &t = fn.type(op.results[k]);
    Value *carried = allocate(op.results[k], product(dims(t)));
    if (!copyBuffer(carried, bufs[op.operands[k]], t))
      return false;
  }
  Value *lo = expr(op.exprAttr("lo"));
  Value *hi = expr(op.exprAttr("hi"));
  llvm::BasicBlock *before = b.GetInsertBlock();
  auto *header = llvm::BasicBlock::Create(ctx, "loop", kernel);
  auto *body = llvm::BasicBlock::Create(ctx, "loop.body", kernel);
  auto *exit = llvm::BasicBlock::Create(ctx, "loop.exit", kernel);
  b.CreateBr(header);
  b.SetInsertPoint(header);
  llvm::PHINode *index = b.CreatePHI(i64, 2);
  index->addIncoming(lo, before);
  b.CreateCondBr(b.CreateICmpSLT(index, hi), body, exit);
  b.SetInsertPoint(body);
  b.CreateStore(index, symSlot(op.exprAttr("sym").symbolName()));
  openLoops.push_back({header, exit, index});
  return true;
}

bool Codegen::endLoop(size_t i) {
  const Operation &end = fn.ops[i];
  const Operation &loop = fn.ops[plan.partner[i]];
  // A next value that is (a view of) another carried value is copied
  // aside first, so that a swap does not read a buffer already written.
  std::vector<Value *> next(end.operands.size()), aside;
  std::vector<bool> same(end.operands.size(), false);
  for (size_t k = 0; k < end.operands.size(); ++k) {
    ValueId root = plan.aliasRoot(end.operands[k]);
    next[k] = bufs[end.operands[k]];
    same[k] = root == loop.results[k];
    bool other = false;
    for (ValueId r : loop.results)
      other |= r == root && !same[k];
    if (other) {
      const TensorType &t = fn.type(end.operands[k]);
      Value *copy = allocateBytes(byteSize(t));
      if (!copyBuffer(copy, next[k], t))
        return false;
      next[k] = copy;
      aside.push_back(copy);
    }
  }
  for (size_t k = 0; k < end.operands.size(); ++k)
    if (!same[k] &&
        !copyBuffer(bufs[loop.results[k]], next[k], fn.type(loop.results[k])))
      return false;
  for (Value *p : aside)
    freeBuffer(p);
  int self = static_cast<int>(plan.partner[i]);
  for (ValueId v : freeAfter[i])
    if (bufs[v] && plan.loopHolds(self, plan.loopOfValue[v]))
      freeBuffer(outlining ? loadBuffer(v) : bufs[v]);
  OpenLoop open = openLoops.back();
  openLoops.pop_back();
  Value *following = b.CreateAdd(open.index, b.getInt64(1));
  open.index->addIncoming(following, b.GetInsertBlock());
  b.CreateBr(open.header);
  b.SetInsertPoint(open.exit);
  for (auto it = open.reloaded.rbegin(); it != open.reloaded.rend(); ++it)
    bufs[it->first] = it->second;
  // Size checks made in the body do not hold where it never ran.
  sizesChecked.clear();
  for (size_t k = 0; k < end.results.size(); ++k) {
    bufs[end.results[k]] = bufs[loop.results[k]];
    b.CreateStore(bufs[end.results[k]], bufferSlot(end.results[k]));
  }
  for (ValueId v : freeAfter[i])
    if (bufs[v] && !plan.loopHolds(self, plan.loopOfValue[v]))
      freeBuffer(outlining ? loadBuffer(v) : bufs[v]); // see reloadBuffers
  return true;
}

} // namespace tsl::backend
