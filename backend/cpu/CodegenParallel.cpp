// Parallel loops of CPU host code: an op's outer loop becomes chunks that
// the runtime's thread pool runs (tsl_rt_parallel_for). The loop body is
// emitted once into a chunk function; the values it uses from the host
// function (buffers, sizes, strides) become that function's arguments, and
// a trampoline reads them from a closure struct the host fills, so any
// lowering's loop body can run in parallel without knowing it.
#include "backend/common/RuntimeCalls.h"
#include "backend/cpu/CpuCodegen.h"
#include "runtime/Sha256.h"

#include <llvm/Analysis/AliasAnalysis.h>
#include <llvm/Analysis/ValueTracking.h>
#include <llvm/Support/raw_ostream.h>

namespace tsl::backend {

namespace {

/// Whether \p v belongs to a function other than \p f (an instruction or
/// an argument of it).
bool foreignTo(const Value *v, const llvm::Function *f) {
  if (auto *inst = llvm::dyn_cast<llvm::Instruction>(v))
    return inst->getFunction() != f;
  if (auto *arg = llvm::dyn_cast<llvm::Argument>(v))
    return arg->getParent() != f;
  return false;
}

/// A fresh allocation or a noalias argument: memory no other pointer of
/// the function reaches unless it is based on this one. A phi of fresh
/// allocations and null (an allocation made only on some calls, such as a
/// row group's staging rows) is one too: null is never dereferenced.
bool identifiedObject(const Value *v) {
  if (auto *arg = llvm::dyn_cast<llvm::Argument>(v))
    return arg->hasNoAliasAttr();
  if (auto *phi = llvm::dyn_cast<llvm::PHINode>(v))
    return llvm::all_of(phi->incoming_values(), [](const llvm::Use &in) {
      return llvm::isa<llvm::ConstantPointerNull>(in) ||
             llvm::isNoAliasCall(in);
    });
  return llvm::isNoAliasCall(v);
}

bool knownSmall(const std::vector<Value *> &extents, Value *work,
                int64_t limit) {
  int64_t total = 1;
  for (Value *e : extents)
    if (auto *c = llvm::dyn_cast<llvm::ConstantInt>(e))
      total *= std::max<int64_t>(c->getSExtValue(), 0);
    else
      return false;
  if (work) {
    auto *c = llvm::dyn_cast<llvm::ConstantInt>(work);
    if (!c)
      return false;
    total *= std::max<int64_t>(c->getSExtValue(), 1);
  }
  return total < limit;
}

} // namespace

llvm::Function *CpuCodegen::nameByText(llvm::Function *f) {
  f->setName("tsl_body_candidate");
  std::string text;
  llvm::raw_string_ostream os(text);
  f->print(os);
  std::string name =
      kBodyFunctionPrefix + rt::sha256Hex(os.str()).substr(0, 32);
  if (llvm::Function *same = mod->getFunction(name)) {
    f->eraseFromParent();
    return same;
  }
  f->setName(name);
  return f;
}

llvm::Function *CpuCodegen::closeOver(llvm::Function *f,
                                      std::vector<Value *> &captures) {
  std::map<Value *, unsigned> index;
  for (llvm::BasicBlock &bb : *f)
    for (llvm::Instruction &inst : bb)
      for (Value *v : inst.operand_values())
        if (foreignTo(v, f) && index.emplace(v, captures.size()).second)
          captures.push_back(v);
  std::vector<llvm::Type *> params(f->getFunctionType()->param_begin(),
                                   f->getFunctionType()->param_end());
  size_t own = params.size();
  for (Value *v : captures)
    params.push_back(v->getType());
  auto *g = llvm::Function::Create(
      llvm::FunctionType::get(f->getReturnType(), params, false),
      llvm::Function::InternalLinkage, "", *mod);
  g->splice(g->end(), f);
  for (size_t i = 0; i < own; ++i)
    f->getArg(i)->replaceAllUsesWith(g->getArg(i));
  for (size_t k = 0; k < captures.size(); ++k)
    captures[k]->replaceUsesWithIf(g->getArg(own + k), [&](llvm::Use &u) {
      auto *user = llvm::dyn_cast<llvm::Instruction>(u.getUser());
      return user && user->getFunction() == g;
    });
  f->eraseFromParent();
  // Distinct fresh allocations stay known not to alias inside the body
  // (the output a loop stores to cannot change the sizes it loads), which
  // lets LLVM hoist loads and vectorize without runtime checks.
  std::map<const Value *, int> objects;
  for (Value *v : captures)
    if (v->getType()->isPointerTy())
      ++objects[llvm::getUnderlyingObject(v)];
  for (size_t k = 0; k < captures.size(); ++k) {
    if (!captures[k]->getType()->isPointerTy())
      continue;
    const Value *object = llvm::getUnderlyingObject(captures[k]);
    if (objects[object] == 1 && identifiedObject(object))
      g->addParamAttr(static_cast<unsigned>(own + k), llvm::Attribute::NoAlias);
  }
  return g;
}

llvm::Function *
CpuCodegen::emitChunkFunction(const std::vector<Value *> &outerExtents,
                              Value *last, Value *outer, Value *chunks,
                              const LoopBody &body, const ChunkHooks &hooks) {
  auto *f = llvm::Function::Create(llvm::FunctionType::get(i32, {i64}, false),
                                   llvm::Function::InternalLinkage, "", *mod);
  llvm::Function *host = kernel;
  llvm::BasicBlock *hostBlock = b.GetInsertBlock();
  std::set<std::string> hostChecked = std::move(sizesChecked);
  sizesChecked.clear();
  kernel = f;
  b.SetInsertPoint(llvm::BasicBlock::Create(ctx, "entry", f));
  ++loopNesting;
  Value *chunk = f->getArg(0);
  if (hooks.enter)
    hooks.enter(chunk);
  // [lo, lo + count): an even share of [0, outer), the first `rest`
  // chunks one index longer.
  Value *share = b.CreateUDiv(outer, chunks);
  Value *rest = b.CreateURem(outer, chunks);
  Value *lo =
      b.CreateAdd(b.CreateMul(chunk, share),
                  b.CreateBinaryIntrinsic(llvm::Intrinsic::umin, chunk, rest));
  Value *count =
      b.CreateAdd(share, b.CreateZExt(b.CreateICmpULT(chunk, rest), i64));
  std::vector<Value *> none;
  loopLevel({count}, 0, none, [&](const std::vector<Value *> &k) {
    std::vector<Value *> idx(outerExtents.size());
    Value *flat = b.CreateAdd(lo, k[0]);
    for (size_t d = outerExtents.size(); d-- > 1;) {
      idx[d] = b.CreateURem(flat, outerExtents[d]);
      flat = b.CreateUDiv(flat, outerExtents[d]);
    }
    idx[0] = flat;
    if (last)
      loopLevel({last}, 0, idx, body);
    else
      body(idx);
  });
  if (hooks.leave)
    hooks.leave();
  b.CreateRet(b.getInt32(0));
  --loopNesting;
  kernel = host;
  sizesChecked = std::move(hostChecked);
  b.SetInsertPoint(hostBlock);
  return f;
}

void CpuCodegen::copyBytes(Value *dst, Value *src, Value *bytes) {
  b.CreateMemMove(dst, llvm::MaybeAlign(1), src, llvm::MaybeAlign(1), bytes);
}

void CpuCodegen::hostParallelLoops(const std::vector<Value *> &extents,
                                   Value *work, const LoopBody &body,
                                   const ChunkHooks &hooks) {
  if (extents.empty() || loopNesting > 0 || !ctxArg ||
      knownSmall(extents, work, 2 * kParallelChunkWork)) {
    if (hooks.before)
      hooks.before(b.getInt64(1));
    if (hooks.enter)
      hooks.enter(b.getInt64(0));
    serialLoops(extents, body);
    if (hooks.leave)
      hooks.leave();
    return;
  }
  std::vector<Value *> outerExtents = extents;
  Value *last = nullptr;
  if (extents.size() > 1) {
    last = outerExtents.back();
    outerExtents.pop_back();
  }
  Value *outer = product(outerExtents);
  Value *perIndex = last ? last : b.getInt64(1);
  if (work)
    perIndex = b.CreateMul(perIndex, work);
  Value *grain = b.CreateUDiv(
      b.getInt64(kParallelChunkWork),
      b.CreateBinaryIntrinsic(llvm::Intrinsic::smax, perIndex, b.getInt64(1)));
  Value *chunks = b.CreateCall(runtime(TSL_RT_FN(tsl_rt_parallel_chunks)),
                               {ctxArg, outer, grain});
  if (hooks.before)
    hooks.before(chunks);
  std::vector<Value *> captures;
  llvm::Function *chunkFn = closeOver(
      emitChunkFunction(outerExtents, last, outer, chunks, body, hooks),
      captures);
  chunkFn = nameByText(chunkFn);
  if (std::find(captures.begin(), captures.end(), ctxArg) != captures.end()) {
    // It may fail or allocate (both record into the one context): its
    // chunks run here, in order.
    std::vector<Value *> args{nullptr};
    args.insert(args.end(), captures.begin(), captures.end());
    serialLoops({chunks}, [&](const std::vector<Value *> &c) {
      args[0] = c[0];
      failIf(b.CreateICmpNE(b.CreateCall(chunkFn, args), b.getInt32(0)),
             [] {}); // recorded by the body
    });
    return;
  }
  // The trampoline the pool calls: void (ptr closure, i64 chunk).
  std::vector<llvm::Type *> fields;
  for (Value *v : captures)
    fields.push_back(v->getType());
  auto *closureType = llvm::StructType::get(ctx, fields);
  auto *trampoline = llvm::Function::Create(
      llvm::FunctionType::get(b.getVoidTy(), {ptr, i64}, false),
      llvm::Function::InternalLinkage, "", *mod);
  {
    llvm::IRBuilder<> t(llvm::BasicBlock::Create(ctx, "entry", trampoline));
    std::vector<Value *> args{trampoline->getArg(1)};
    for (size_t k = 0; k < captures.size(); ++k)
      args.push_back(t.CreateLoad(
          fields[k], t.CreateStructGEP(closureType, trampoline->getArg(0),
                                       static_cast<unsigned>(k))));
    t.CreateCall(chunkFn, args);
    t.CreateRetVoid();
  }
  trampoline = nameByText(trampoline);
  llvm::IRBuilder<> entry(&kernel->getEntryBlock(),
                          kernel->getEntryBlock().begin());
  Value *closure = entry.CreateAlloca(closureType);
  for (size_t k = 0; k < captures.size(); ++k)
    b.CreateStore(captures[k], b.CreateStructGEP(closureType, closure,
                                                 static_cast<unsigned>(k)));
  b.CreateCall(runtime(TSL_RT_FN(tsl_rt_parallel_for)),
               {ctxArg, chunks, trampoline, closure});
}

} // namespace tsl::backend
