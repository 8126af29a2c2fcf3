// IR -> LLVM IR. Each op becomes a loop nest over its result (or a call to a
// library kernel of runtime/KernelAbi.h); sizes are computed at run time from
// the symbol values, so one kernel serves every size its guards admit.
#include "backend/cpu/CpuCodegen.h"

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/MDBuilder.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Support/raw_ostream.h>

#include <functional>
#include <map>
#include <set>

namespace tsl {

namespace {

using llvm::Value;

class Codegen {
public:
  Codegen(const Function &fn, llvm::LLVMContext &ctx)
      : fn(fn), ctx(ctx), mod(std::make_unique<llvm::Module>("tsl", ctx)), b(ctx) {}

  std::vector<std::string> checks;

  std::unique_ptr<llvm::Module> run(std::string &err) {
    for (size_t i = 0; i < fn.symbols.size(); ++i)
      symIndex[fn.symbols[i].name] = static_cast<int>(i);
    i8 = b.getInt8Ty();
    i32 = b.getInt32Ty();
    i64 = b.getInt64Ty();
    ptr = b.getPtrTy();
    auto *type = llvm::FunctionType::get(i32, {ptr, ptr, ptr}, false);
    kernel = llvm::Function::Create(type, llvm::Function::ExternalLinkage, kKernelName, *mod);
    buffersArg = kernel->getArg(0);
    symsArg = kernel->getArg(1);
    ctxArg = kernel->getArg(2);
    for (unsigned a = 0; a < 3; ++a)
      kernel->addParamAttr(a, llvm::Attribute::NoAlias);
    auto *entry = llvm::BasicBlock::Create(ctx, "entry", kernel);
    b.SetInsertPoint(entry);
    bufs.assign(fn.values.size(), nullptr);
    for (const Param &p : fn.params)
      if (!p.isInt)
        bufs[p.value] = loadBuffer(p.value);
    planFusion();
    for (size_t i = 0; i < fn.ops.size(); ++i) {
      opIndex = static_cast<int32_t>(i);
      const Operation &op = fn.ops[i];
      if (!op.results.empty() && inlined[op.results[0]])
        continue; // computed inside its consumer's loop
      if (!lowerOp(op)) {
        err = error.empty() ? "not supported" : error;
        return nullptr;
      }
    }
    b.CreateRet(b.getInt32(0));
    emitMatch();
    emitShapes();
    std::string verify;
    llvm::raw_string_ostream os(verify);
    if (llvm::verifyModule(*mod, &os)) {
      err = "internal error: invalid LLVM IR: " + os.str();
      return nullptr;
    }
    return std::move(mod);
  }

private:
  const Function &fn;
  llvm::LLVMContext &ctx;
  std::unique_ptr<llvm::Module> mod;
  llvm::IRBuilder<> b;
  llvm::Function *kernel = nullptr;
  Value *buffersArg = nullptr, *symsArg = nullptr, *ctxArg = nullptr;
  llvm::Type *i8 = nullptr, *i32 = nullptr, *i64 = nullptr, *ptr = nullptr;
  std::map<std::string, int> symIndex;
  std::vector<Value *> bufs;
  int32_t opIndex = 0;
  std::string error;

  bool unsupported(const std::string &what) {
    error = "not supported on the cpu backend: " + what;
    return false;
  }

  // --- argument matching and result shapes ------------------------------
  /// Sets up a new function `name(ptr, ptr, ptr?)` and points the builder
  /// and the symbol array at it.
  llvm::Function *beginHelper(const char *name, llvm::Type *ret, unsigned nargs) {
    std::vector<llvm::Type *> params(nargs, ptr);
    auto *f = llvm::Function::Create(llvm::FunctionType::get(ret, params, false),
                                     llvm::Function::ExternalLinkage, name, *mod);
    kernel = f;
    b.SetInsertPoint(llvm::BasicBlock::Create(ctx, "entry", f));
    return f;
  }
  /// Returns `code` from the current helper when \p bad holds.
  void checkOrReturn(Value *bad, const std::string &description) {
    checks.push_back(description);
    int32_t code = static_cast<int32_t>(checks.size());
    auto *fail = llvm::BasicBlock::Create(ctx, "mismatch", kernel);
    auto *ok = llvm::BasicBlock::Create(ctx, "match", kernel);
    b.CreateCondBr(bad, fail, ok);
    b.SetInsertPoint(fail);
    b.CreateRet(b.getInt32(code));
    b.SetInsertPoint(ok);
  }

  void emitMatch() {
    llvm::Function *f = beginHelper(kMatchName, i32, 3);
    Value *sizes = f->getArg(0), *ints = f->getArg(1);
    symsArg = f->getArg(2);
    std::set<std::string> bound;
    // Each tensor axis: its flat position in `sizes`.
    struct Axis {
      const Param *param;
      size_t tensorIndex;
      size_t dim;
      SymExpr expr;
      Value *size;
    };
    std::vector<Axis> axes;
    int64_t flat = 0, intIndex = 0;
    size_t tensorIndex = 0;
    std::vector<std::pair<const Param *, Value *>> intArgs;
    for (const Param &p : fn.params) {
      if (p.isInt) {
        intArgs.push_back({&p, b.CreateLoad(i64, b.CreateConstGEP1_64(i64, ints, intIndex++))});
        continue;
      }
      const TensorType &t = fn.type(p.value);
      for (size_t d = 0; d < t.rank(); ++d)
        axes.push_back({&p, tensorIndex, d, t.dims[d],
                        b.CreateLoad(i64, b.CreateConstGEP1_64(i64, sizes, flat++))});
      ++tensorIndex;
    }
    auto bind = [&](const std::string &name, Value *v) {
      if (symIndex.count(name) && !bound.count(name)) {
        b.CreateStore(v, symSlot(name));
        bound.insert(name);
      }
    };
    for (const Axis &a : axes)
      if (a.expr.isSymbol())
        bind(a.expr.symbolName(), a.size);
    for (auto &[p, v] : intArgs)
      if (p->intExpr.isSymbol())
        bind(p->intExpr.symbolName(), v);
    // Derived dims (2*N, N + 1): solve the linear form for its one unknown.
    for (const Axis &a : axes) {
      std::vector<std::string> unknown;
      for (const std::string &s : a.expr.symbols())
        if (!bound.count(s))
          unknown.push_back(s);
      if (unknown.size() != 1)
        continue;
      SymExpr n = SymExpr::symbol(unknown[0]);
      SymExpr e0 = a.expr.substitute({{unknown[0], SymExpr(0)}});
      SymExpr slope = a.expr.substitute({{unknown[0], SymExpr(1)}}) - e0;
      if (!slope.isConst() || slope.constValue() <= 0 || !(a.expr == e0 + slope * n))
        continue;
      Value *rest = b.CreateSub(a.size, expr(e0));
      Value *c = b.getInt64(slope.constValue());
      std::string what = "argument '" + a.param->name + "' dim " + std::to_string(a.dim) +
                         " is not of the form " + a.expr.str();
      checkOrReturn(b.CreateOr(b.CreateICmpSLT(rest, b.getInt64(0)),
                               b.CreateICmpNE(b.CreateSRem(rest, c), b.getInt64(0))),
                    what);
      bind(unknown[0], b.CreateSDiv(rest, c));
    }
    for (const Axis &a : axes) {
      // Name the dim so messages can show the call's value ("with N = 3").
      std::string name;
      if (a.tensorIndex < fn.axisNames.size() && a.dim < fn.axisNames[a.tensorIndex].size())
        name = fn.axisNames[a.tensorIndex][a.dim];
      std::string label = name.empty() || name == a.expr.str() ? "" : " ('" + name + "')";
      checkOrReturn(b.CreateICmpNE(expr(a.expr), a.size),
                    "argument '" + a.param->name + "' dim " + std::to_string(a.dim) + label +
                        " must be " + a.expr.str());
    }
    for (auto &[p, v] : intArgs)
      checkOrReturn(b.CreateICmpNE(expr(p->intExpr), v),
                    "argument '" + p->name + "' must be " + p->intExpr.str());
    for (const SymbolInfo &s : fn.symbols) {
      if (s.kind == DimKind::Unbacked && !bound.count(s.name))
        continue; // produced inside
      if (!bound.count(s.name))
        continue;
      Value *v = b.CreateLoad(i64, symSlot(s.name));
      std::string range = (s.lo == INT64_MIN ? std::string() : std::to_string(s.lo)) + ".." +
                          (s.hi ? std::to_string(*s.hi) : "");
      if (s.lo != INT64_MIN && s.lo != 0)
        checkOrReturn(b.CreateICmpSLT(v, b.getInt64(s.lo)),
                      "dim " + s.name + " is outside its declared range " + range);
      if (s.lo == 0 && !s.isInt)
        checkOrReturn(b.CreateICmpSLT(v, b.getInt64(0)), "dim " + s.name + " is negative");
      if (s.hi)
        checkOrReturn(b.CreateICmpSGT(v, b.getInt64(*s.hi)),
                      "dim " + s.name + " is outside its declared range " + range);
      if (s.multipleOf > 1)
        checkOrReturn(b.CreateICmpNE(floorMod(v, b.getInt64(s.multipleOf)), b.getInt64(0)),
                      "dim " + s.name + " is not a multiple of " + std::to_string(s.multipleOf));
    }
    for (const Check &g : fn.guards)
      checkOrReturn(b.CreateNot(cond(g.cond)), "guard " + g.cond.str() + " (" + g.loc.str() +
                                                   ", " + g.reason + ")");
    b.CreateRet(b.getInt32(0));
  }

  void emitShapes() {
    llvm::Function *f = beginHelper(kShapesName, b.getVoidTy(), 2);
    symsArg = f->getArg(0);
    Value *out = f->getArg(1);
    int64_t k = 0;
    for (ValueId r : fn.results)
      for (const SymExpr &d : fn.type(r).dims)
        b.CreateStore(expr(d), b.CreateConstGEP1_64(i64, out, k++));
    b.CreateRetVoid();
  }

  // --- runtime calls ---------------------------------------------------
  llvm::FunctionCallee runtime(const char *name, llvm::Type *ret, std::vector<llvm::Type *> args) {
    llvm::FunctionCallee callee =
        mod->getOrInsertFunction(name, llvm::FunctionType::get(ret, args, false));
    if (std::string(name) == "tsl_rt_alloc")
      if (auto *f = llvm::dyn_cast<llvm::Function>(callee.getCallee())) {
        // Fresh memory aliases nothing: lets LLVM keep accumulators in
        // registers and vectorize across buffers.
        f->addRetAttr(llvm::Attribute::NoAlias);
        f->addRetAttr(llvm::Attribute::getWithAlignment(ctx, llvm::Align(64)));
      }
    return callee;
  }

  /// Branches to a failure exit when \p failed is true.
  void failIf(Value *failed, const std::function<void()> &record) {
    auto *bad = llvm::BasicBlock::Create(ctx, "fail", kernel);
    auto *ok = llvm::BasicBlock::Create(ctx, "ok", kernel);
    b.CreateCondBr(failed, bad, ok, llvm::MDBuilder(ctx).createBranchWeights(1, 1 << 20));
    b.SetInsertPoint(bad);
    record();
    b.CreateRet(b.getInt32(1));
    b.SetInsertPoint(ok);
  }
  void failOpIf(Value *failed) {
    failIf(failed, [&] {
      b.CreateCall(runtime("tsl_rt_fail", b.getVoidTy(), {ptr, i32}), {ctxArg, b.getInt32(opIndex)});
    });
  }
  void failMessageIf(Value *failed, const std::string &message) {
    failIf(failed, [&] {
      Value *text = b.CreateGlobalStringPtr(message);
      b.CreateCall(runtime("tsl_rt_error", b.getVoidTy(), {ptr, ptr}), {ctxArg, text});
      b.CreateCall(runtime("tsl_rt_fail", b.getVoidTy(), {ptr, i32}), {ctxArg, b.getInt32(opIndex)});
    });
  }

  // --- buffers and symbols ----------------------------------------------
  Value *bufferSlot(ValueId v) { return b.CreateConstGEP1_64(ptr, buffersArg, v); }
  Value *loadBuffer(ValueId v) { return b.CreateLoad(ptr, bufferSlot(v)); }
  Value *symSlot(const std::string &name) {
    return b.CreateConstGEP1_64(i64, symsArg, symIndex.at(name));
  }

  Value *expr(SymExpr e) {
    switch (e.kind()) {
    case SymExpr::Kind::Const:
      return b.getInt64(e.constValue());
    case SymExpr::Kind::Symbol:
      if (!symIndex.count(e.symbolName()))
        return b.getInt64(0);
      return b.CreateLoad(i64, symSlot(e.symbolName()));
    case SymExpr::Kind::Add: {
      Value *sum = b.getInt64(e.addConstant());
      for (size_t i = 0; i < e.operands().size(); ++i)
        sum = b.CreateAdd(sum, b.CreateMul(b.getInt64(e.coefficients()[i]), expr(e.operands()[i])));
      return sum;
    }
    case SymExpr::Kind::Mul: {
      Value *prod = b.getInt64(1);
      for (size_t i = 0; i < e.operands().size(); ++i) {
        Value *f = expr(e.operands()[i]);
        for (int64_t k = 0; k < e.coefficients()[i]; ++k)
          prod = b.CreateMul(prod, f);
      }
      return prod;
    }
    case SymExpr::Kind::FloorDiv:
    case SymExpr::Kind::Mod: {
      Value *x = expr(e.operands()[0]), *y = expr(e.operands()[1]);
      // A zero divisor was proven impossible or asserted before; avoid UB.
      y = b.CreateSelect(b.CreateICmpEQ(y, b.getInt64(0)), b.getInt64(1), y);
      return e.kind() == SymExpr::Kind::FloorDiv ? floorDiv(x, y) : floorMod(x, y);
    }
    case SymExpr::Kind::Min:
    case SymExpr::Kind::Max: {
      Value *x = expr(e.operands()[0]), *y = expr(e.operands()[1]);
      Value *lt = b.CreateICmpSLT(x, y);
      return e.kind() == SymExpr::Kind::Min ? b.CreateSelect(lt, x, y) : b.CreateSelect(lt, y, x);
    }
    }
    return b.getInt64(0);
  }
  Value *floorDiv(Value *x, Value *y) {
    Value *q = b.CreateSDiv(x, y), *r = b.CreateSRem(x, y);
    Value *adjust = b.CreateAnd(b.CreateICmpNE(r, b.getInt64(0)),
                                b.CreateICmpNE(b.CreateICmpSLT(r, b.getInt64(0)),
                                               b.CreateICmpSLT(y, b.getInt64(0))));
    return b.CreateSub(q, b.CreateZExt(adjust, i64));
  }
  Value *floorMod(Value *x, Value *y) {
    Value *r = b.CreateSRem(x, y);
    Value *adjust = b.CreateAnd(b.CreateICmpNE(r, b.getInt64(0)),
                                b.CreateICmpNE(b.CreateICmpSLT(r, b.getInt64(0)),
                                               b.CreateICmpSLT(y, b.getInt64(0))));
    return b.CreateSelect(adjust, b.CreateAdd(r, y), r);
  }
  Value *cond(const SymCond &c) {
    switch (c.kind()) {
    case SymCond::Kind::True:
      return b.getTrue();
    case SymCond::Kind::False:
      return b.getFalse();
    case SymCond::Kind::And:
      return b.CreateAnd(cond(c.children()[0]), cond(c.children()[1]));
    case SymCond::Kind::Or:
      return b.CreateOr(cond(c.children()[0]), cond(c.children()[1]));
    case SymCond::Kind::Not:
      return b.CreateNot(cond(c.children()[0]));
    default:
      break;
    }
    Value *l = expr(c.lhs()), *r = expr(c.rhs());
    switch (c.kind()) {
    case SymCond::Kind::Eq:
      return b.CreateICmpEQ(l, r);
    case SymCond::Kind::Ne:
      return b.CreateICmpNE(l, r);
    case SymCond::Kind::Lt:
      return b.CreateICmpSLT(l, r);
    case SymCond::Kind::Le:
      return b.CreateICmpSLE(l, r);
    case SymCond::Kind::Gt:
      return b.CreateICmpSGT(l, r);
    default:
      return b.CreateICmpSGE(l, r);
    }
  }

  std::vector<Value *> dims(const TensorType &t) {
    std::vector<Value *> out;
    for (const SymExpr &d : t.dims)
      out.push_back(expr(d));
    return out;
  }
  Value *product(const std::vector<Value *> &v) {
    Value *p = b.getInt64(1);
    for (Value *x : v)
      p = b.CreateMul(p, x);
    return p;
  }
  std::vector<Value *> contiguousStrides(const std::vector<Value *> &shape) {
    std::vector<Value *> s(shape.size());
    Value *acc = b.getInt64(1);
    for (size_t i = shape.size(); i-- > 0;) {
      s[i] = acc;
      acc = b.CreateMul(acc, shape[i]);
    }
    return s;
  }

  /// Allocates the buffer of value \p v with \p count elements.
  Value *allocate(ValueId v, Value *count) {
    size_t elem = dtypeSize(fn.type(v).dtype);
    Value *bytes = b.CreateMul(count, b.getInt64(elem));
    Value *p = b.CreateCall(runtime("tsl_rt_alloc", ptr, {ptr, i64}), {ctxArg, bytes});
    failIf(b.CreateIsNull(p), [&] {
      b.CreateCall(runtime("tsl_rt_fail", b.getVoidTy(), {ptr, i32}), {ctxArg, b.getInt32(opIndex)});
    });
    b.CreateStore(p, bufferSlot(v));
    bufs[v] = p;
    return p;
  }
  Value *allocateResult(const Operation &op, size_t i = 0) {
    ValueId v = op.results[i];
    return allocate(v, product(dims(fn.type(v))));
  }

  /// for (idx...) over \p extents, calling \p body with the indices.
  void loops(const std::vector<Value *> &extents,
             const std::function<void(const std::vector<Value *> &)> &body) {
    std::vector<Value *> idx;
    loopLevel(extents, 0, idx, body);
  }
  void loopLevel(const std::vector<Value *> &extents, size_t level, std::vector<Value *> &idx,
                 const std::function<void(const std::vector<Value *> &)> &body) {
    if (level == extents.size()) {
      body(idx);
      return;
    }
    llvm::BasicBlock *pre = b.GetInsertBlock();
    auto *header = llvm::BasicBlock::Create(ctx, "loop", kernel);
    auto *inner = llvm::BasicBlock::Create(ctx, "body", kernel);
    auto *exit = llvm::BasicBlock::Create(ctx, "exit", kernel);
    b.CreateBr(header);
    b.SetInsertPoint(header);
    llvm::PHINode *i = b.CreatePHI(i64, 2);
    i->addIncoming(b.getInt64(0), pre);
    b.CreateCondBr(b.CreateICmpSLT(i, extents[level]), inner, exit);
    b.SetInsertPoint(inner);
    idx.push_back(i);
    loopLevel(extents, level + 1, idx, body);
    idx.pop_back();
    Value *next = b.CreateAdd(i, b.getInt64(1), "", true, true);
    i->addIncoming(next, b.GetInsertBlock());
    b.CreateBr(header);
    b.SetInsertPoint(exit);
  }
  Value *offset(const std::vector<Value *> &idx, const std::vector<Value *> &strides) {
    Value *o = b.getInt64(0);
    for (size_t i = 0; i < idx.size(); ++i)
      o = b.CreateAdd(o, b.CreateMul(idx[i], strides[i]));
    return o;
  }

  // --- element values ---------------------------------------------------
  /// The type elements of \p t are computed in.
  llvm::Type *computeType(DType t) {
    switch (t) {
    case DType::Bool:
      return b.getInt1Ty();
    case DType::I8:
    case DType::I32:
    case DType::I64:
      return i64;
    case DType::F64:
      return b.getDoubleTy();
    default:
      return b.getFloatTy();
    }
  }
  llvm::Type *storageType(DType t) {
    switch (t) {
    case DType::Bool:
    case DType::I8:
      return i8;
    case DType::I32:
      return i32;
    case DType::I64:
      return i64;
    case DType::F16:
      return b.getHalfTy();
    case DType::BF16:
      return b.getInt16Ty();
    case DType::F32:
      return b.getFloatTy();
    case DType::F64:
      return b.getDoubleTy();
    }
    return i8;
  }
  Value *load(DType t, Value *base, Value *index) {
    llvm::Type *st = storageType(t);
    Value *raw = b.CreateLoad(st, b.CreateGEP(st, base, index));
    switch (t) {
    case DType::Bool:
      return b.CreateICmpNE(raw, b.getInt8(0));
    case DType::I8:
    case DType::I32:
      return b.CreateSExt(raw, i64);
    case DType::F16:
      return b.CreateFPExt(raw, b.getFloatTy());
    case DType::BF16:
      return b.CreateBitCast(b.CreateShl(b.CreateZExt(raw, i32), 16), b.getFloatTy());
    default:
      return raw;
    }
  }
  void store(DType t, Value *base, Value *index, Value *v) {
    llvm::Type *st = storageType(t);
    Value *slot = b.CreateGEP(st, base, index);
    switch (t) {
    case DType::Bool:
      b.CreateStore(b.CreateZExt(v, i8), slot);
      return;
    case DType::I8:
    case DType::I32:
      b.CreateStore(b.CreateTrunc(v, st), slot);
      return;
    case DType::F16:
      b.CreateStore(b.CreateFPTrunc(v, st), slot);
      return;
    case DType::BF16: {
      // Round to nearest even; NaN stays a (quiet) NaN.
      Value *bits = b.CreateBitCast(v, i32);
      Value *lsb = b.CreateAnd(b.CreateLShr(bits, 16), b.getInt32(1));
      Value *rounded = b.CreateLShr(b.CreateAdd(bits, b.CreateAdd(b.getInt32(0x7fff), lsb)), 16);
      Value *nan = b.CreateOr(b.CreateLShr(bits, 16), b.getInt32(0x40));
      Value *isNan = b.CreateFCmpUNO(v, v);
      b.CreateStore(b.CreateTrunc(b.CreateSelect(isNan, nan, rounded), st), slot);
      return;
    }
    default:
      b.CreateStore(v, slot);
    }
  }
  /// Converts a computed value between element types (cast semantics).
  Value *convert(Value *v, DType from, DType to) {
    llvm::Type *src = computeType(from), *dst = computeType(to);
    bool fromFloat = isFloat(from), toFloat = isFloat(to);
    if (to == DType::Bool) {
      if (from == DType::Bool)
        return v;
      return fromFloat ? b.CreateFCmpUNE(v, llvm::ConstantFP::get(src, 0.0))
                       : b.CreateICmpNE(v, llvm::ConstantInt::get(src, 0));
    }
    if (from == DType::Bool)
      return toFloat ? b.CreateUIToFP(v, dst) : b.CreateZExt(v, dst);
    if (fromFloat && toFloat)
      return src == dst ? v : (src->getPrimitiveSizeInBits() < dst->getPrimitiveSizeInBits()
                                   ? b.CreateFPExt(v, dst)
                                   : b.CreateFPTrunc(v, dst));
    if (!fromFloat && toFloat)
      return b.CreateSIToFP(v, dst);
    if (fromFloat && !toFloat) {
      // Saturating at the target's width, NaN to 0 (as the interpreter).
      llvm::Type *width = storageType(to);
      Value *sat = b.CreateIntrinsic(llvm::Intrinsic::fptosi_sat, {width, src}, {v});
      return b.CreateSExt(sat, i64);
    }
    return v; // int to int: i64 compute type, wrapped on store
  }
  Value *fconst(DType t, double v) { return llvm::ConstantFP::get(computeType(t), v); }
  Value *libm(const char *f32name, const char *f64name, DType t, Value *x) {
    bool dbl = t == DType::F64;
    llvm::Type *ty = computeType(t);
    return b.CreateCall(runtime(dbl ? f64name : f32name, ty, {ty}), {x});
  }
  Value *unary(OpCode code, DType t, Value *x) {
    bool fl = isFloat(t);
    llvm::Type *ty = computeType(t);
    switch (code) {
    case OpCode::Neg:
      return fl ? b.CreateFNeg(x) : b.CreateSub(b.getInt64(0), x);
    case OpCode::Not:
      return b.CreateNot(x);
    case OpCode::Abs:
      return fl ? b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x)
                : b.CreateBinaryIntrinsic(llvm::Intrinsic::abs, x, b.getFalse());
    case OpCode::Relu:
      return fl ? b.CreateSelect(b.CreateFCmpOLT(x, llvm::ConstantFP::get(ty, 0.0)),
                                 llvm::ConstantFP::get(ty, 0.0), x)
                : b.CreateBinaryIntrinsic(llvm::Intrinsic::smax, x, b.getInt64(0));
    case OpCode::Exp:
      return b.CreateUnaryIntrinsic(llvm::Intrinsic::exp, x);
    case OpCode::Log:
      return b.CreateUnaryIntrinsic(llvm::Intrinsic::log, x);
    case OpCode::Sqrt:
      return b.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, x);
    case OpCode::Rsqrt:
      return b.CreateFDiv(llvm::ConstantFP::get(ty, 1.0),
                          b.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, x));
    case OpCode::Sin:
      return b.CreateUnaryIntrinsic(llvm::Intrinsic::sin, x);
    case OpCode::Cos:
      return b.CreateUnaryIntrinsic(llvm::Intrinsic::cos, x);
    case OpCode::Tanh:
      return libm("tanhf", "tanh", t, x);
    case OpCode::Sigmoid:
      return b.CreateFDiv(llvm::ConstantFP::get(ty, 1.0),
                          b.CreateFAdd(llvm::ConstantFP::get(ty, 1.0),
                                       b.CreateUnaryIntrinsic(llvm::Intrinsic::exp, b.CreateFNeg(x))));
    case OpCode::Gelu: {
      Value *e = libm("erff", "erf", t, b.CreateFMul(x, llvm::ConstantFP::get(ty, 0.70710678118654752440)));
      return b.CreateFMul(b.CreateFMul(llvm::ConstantFP::get(ty, 0.5), x),
                          b.CreateFAdd(llvm::ConstantFP::get(ty, 1.0), e));
    }
    default:
      return nullptr;
    }
  }
  Value *binary(OpCode code, DType t, Value *x, Value *y) {
    bool fl = isFloat(t);
    switch (code) {
    case OpCode::Add:
      return fl ? b.CreateFAdd(x, y) : b.CreateAdd(x, y);
    case OpCode::Sub:
      return fl ? b.CreateFSub(x, y) : b.CreateSub(x, y);
    case OpCode::Mul:
      return fl ? b.CreateFMul(x, y) : b.CreateMul(x, y);
    case OpCode::Div:
      if (fl)
        return b.CreateFDiv(x, y);
      failMessageIf(b.CreateICmpEQ(y, b.getInt64(0)), "integer division by zero");
      return floorDiv(x, y);
    case OpCode::Pow:
      return b.CreateBinaryIntrinsic(llvm::Intrinsic::pow, x, y);
    case OpCode::Maximum:
      return fl ? b.CreateBinaryIntrinsic(llvm::Intrinsic::maximum, x, y)
                : b.CreateBinaryIntrinsic(llvm::Intrinsic::smax, x, y);
    case OpCode::Minimum:
      return fl ? b.CreateBinaryIntrinsic(llvm::Intrinsic::minimum, x, y)
                : b.CreateBinaryIntrinsic(llvm::Intrinsic::smin, x, y);
    case OpCode::Lt:
      return fl ? b.CreateFCmpOLT(x, y) : b.CreateICmpSLT(x, y);
    case OpCode::Le:
      return fl ? b.CreateFCmpOLE(x, y) : b.CreateICmpSLE(x, y);
    case OpCode::Gt:
      return fl ? b.CreateFCmpOGT(x, y) : b.CreateICmpSGT(x, y);
    case OpCode::Ge:
      return fl ? b.CreateFCmpOGE(x, y) : b.CreateICmpSGE(x, y);
    case OpCode::Eq:
      return fl ? b.CreateFCmpOEQ(x, y) : b.CreateICmpEQ(x, y);
    case OpCode::Ne:
      return fl ? b.CreateFCmpUNE(x, y) : b.CreateICmpNE(x, y);
    case OpCode::And:
      return b.CreateAnd(x, y);
    case OpCode::Or:
      return b.CreateOr(x, y);
    default:
      return nullptr;
    }
  }

  // --- ops ----------------------------------------------------------------
  // --- fusion -------------------------------------------------------------
  // An elementwise result used exactly once, by an elementwise op or a
  // reduction that iterates the same shape, is not stored: its consumer
  // recomputes it at each index (constants and sizes always fuse). So
  // `relu(x*1.5+0.5)*2.0` is one loop that reads x once and writes once.
  std::vector<const Operation *> producer;
  std::vector<bool> inlined;

  static bool isElementwise(OpCode c) {
    switch (c) {
    case OpCode::Reshape:
    case OpCode::Permute:
    case OpCode::Expand:
    case OpCode::Slice:
    case OpCode::Pad:
    case OpCode::Concat:
    case OpCode::Matmul:
    case OpCode::Full:
    case OpCode::Arange:
    case OpCode::ReduceSum:
    case OpCode::ReduceMean:
    case OpCode::ReduceMax:
    case OpCode::ReduceMin:
    case OpCode::Argmax:
    case OpCode::Conv2d:
    case OpCode::MaxPool2d:
    case OpCode::Nonzero:
    case OpCode::MaskedSelect:
    case OpCode::Unique:
    case OpCode::Item:
    case OpCode::IndexSelect:
    case OpCode::Topk:
    case OpCode::Assert:
      return false;
    default:
      return true; // arithmetic, comparisons, unary math, where, cast, constants
    }
  }

  void planFusion() {
    std::vector<int> uses(fn.values.size(), 0);
    producer.assign(fn.values.size(), nullptr);
    inlined.assign(fn.values.size(), false);
    for (const Operation &op : fn.ops) {
      for (ValueId v : op.operands)
        ++uses[v];
      for (ValueId r : op.results)
        producer[r] = &op;
    }
    for (ValueId r : fn.results)
      uses[r] += 2; // results are stored
    for (const Operation &op : fn.ops) {
      bool consumerOk = isElementwise(op.code) || op.code == OpCode::ReduceSum ||
                        op.code == OpCode::ReduceMean || op.code == OpCode::ReduceMax ||
                        op.code == OpCode::ReduceMin;
      if (!consumerOk || op.code == OpCode::Constant || op.code == OpCode::SymScalar)
        continue;
      const TensorType &loop =
          isElementwise(op.code) ? fn.type(op.results[0]) : fn.type(op.operands[0]);
      for (ValueId v : op.operands) {
        const Operation *p = producer[v];
        if (!p || !isElementwise(p->code))
          continue;
        bool scalar = p->code == OpCode::Constant || p->code == OpCode::SymScalar;
        if (scalar || (uses[v] == 1 && fn.type(v).dims == loop.dims))
          inlined[v] = true;
      }
    }
  }

  /// Strides of \p t broadcast to \p shape (0 on size-1 axes).
  std::vector<Value *> broadcastStrides(const TensorType &t, const std::vector<Value *> &shape,
                                        const std::vector<SymExpr> *loopDims = nullptr) {
    std::vector<Value *> own = contiguousStrides(dims(t));
    std::vector<Value *> s(shape.size(), b.getInt64(0));
    size_t off = shape.size() - t.rank();
    for (size_t i = 0; i < t.rank(); ++i) {
      // Decided at compile time when the dims say so (the shape rules
      // proved or guarded it); a run-time select only for the rest.
      if (loopDims && (*loopDims)[off + i] == t.dims[i] && !t.dims[i].isConst(1))
        s[off + i] = own[i];
      else if (t.dims[i].isConst(1))
        s[off + i] = b.getInt64(0);
      else
        s[off + i] = b.CreateSelect(b.CreateICmpEQ(expr(t.dims[i]), b.getInt64(1)),
                                    b.getInt64(0), own[i]);
    }
    return s;
  }

  /// Strides (against the loop shape) of every stored value a fused tree
  /// reads; computed before the loop.
  void leafStrides(ValueId v, const std::vector<Value *> &shape, const std::vector<SymExpr> &loopDims,
                   std::map<ValueId, std::vector<Value *>> &out) {
    if (!inlined[v]) {
      if (!out.count(v))
        out[v] = broadcastStrides(fn.type(v), shape, &loopDims);
      return;
    }
    for (ValueId o : producer[v]->operands)
      leafStrides(o, shape, loopDims, out);
  }

  /// The value of \p v at loop index \p idx: loaded, or recomputed.
  Value *valueAt(ValueId v, const std::vector<Value *> &idx,
                 const std::map<ValueId, std::vector<Value *>> &strides) {
    if (!inlined[v])
      return load(fn.type(v).dtype, bufs[v], offset(idx, strides.at(v)));
    const Operation &p = *producer[v];
    DType outType = fn.type(v).dtype;
    if (p.code == OpCode::Constant) {
      Number n = p.numAttr("value");
      return n.isInt ? convert(b.getInt64(n.i), DType::I64, outType)
                     : convert(fconst(DType::F64, n.f), DType::F64, outType);
    }
    if (p.code == OpCode::SymScalar)
      return convert(expr(p.exprAttr("expr")), DType::I64, outType);
    std::vector<Value *> vals;
    for (ValueId o : p.operands)
      vals.push_back(valueAt(o, idx, strides));
    return compute(p, vals);
  }

  /// One elementwise op applied to computed operand values.
  Value *compute(const Operation &op, const std::vector<Value *> &vals) {
    DType out = fn.type(op.results[0]).dtype;
    DType inType = op.operands.empty() ? out : fn.type(op.operands[0]).dtype;
    if (op.code == OpCode::Where)
      return b.CreateSelect(vals[0], vals[1], vals[2]);
    if (op.code == OpCode::Cast)
      return convert(vals[0], inType, out);
    if (vals.size() == 1)
      return unary(op.code, inType, vals[0]);
    return binary(op.code, inType, vals[0], vals[1]);
  }

  bool elementwise(const Operation &op) {
    const TensorType &out = fn.type(op.results[0]);
    std::vector<Value *> shape = dims(out);
    Value *dst = allocateResult(op);
    std::vector<Value *> outStrides = contiguousStrides(shape);
    std::map<ValueId, std::vector<Value *>> strides;
    for (ValueId v : op.operands)
      leafStrides(v, shape, out.dims, strides);
    bool ok = true;
    loops(shape, [&](const std::vector<Value *> &idx) {
      std::vector<Value *> vals;
      for (ValueId v : op.operands)
        vals.push_back(valueAt(v, idx, strides));
      Value *r = compute(op, vals);
      if (!r) {
        ok = unsupported(opInfo(op.code).name);
        return;
      }
      store(out.dtype, dst, offset(idx, outStrides), r);
    });
    return ok;
  }

  bool reduce(const Operation &op) {
    const TensorType &in = fn.type(op.operands[0]);
    DType t = in.dtype;
    const auto &axes = op.intsAttr("axes");
    std::vector<bool> red(in.rank(), axes.empty());
    for (int64_t a : axes)
      red[a] = true;
    std::vector<Value *> inShape = dims(in);
    std::vector<Value *> keep;
    for (size_t i = 0; i < in.rank(); ++i)
      keep.push_back(red[i] ? b.getInt64(1) : inShape[i]);
    Value *count = b.getInt64(1);
    for (size_t i = 0; i < in.rank(); ++i)
      if (red[i])
        count = b.CreateMul(count, inShape[i]);
    Value *n = product(keep);
    Value *dst = allocateResult(op);
    // Accumulate in the compute type (f32 for f16/bf16, i64 for ints).
    llvm::Type *acc = computeType(t);
    Value *accBuf = b.CreateCall(runtime("tsl_rt_alloc", ptr, {ptr, i64}),
                                 {ctxArg, b.CreateMul(n, b.getInt64(8))});
    failOpIf(b.CreateIsNull(accBuf));
    bool fl = isFloat(t);
    Value *init;
    switch (op.code) {
    case OpCode::ReduceMax:
      init = fl ? llvm::ConstantFP::getInfinity(acc, true) : b.getInt64(INT64_MIN);
      break;
    case OpCode::ReduceMin:
      init = fl ? llvm::ConstantFP::getInfinity(acc, false) : b.getInt64(INT64_MAX);
      break;
    default:
      init = fl ? llvm::ConstantFP::get(acc, 0.0) : b.getInt64(0);
    }
    if (t == DType::Bool) {
      acc = i64;
      init = b.getInt64(op.code == OpCode::ReduceMin ? 1 : 0);
    }
    loops({n}, [&](const std::vector<Value *> &i) {
      b.CreateStore(init, b.CreateGEP(acc, accBuf, i[0]));
    });
    std::vector<Value *> accStrides = contiguousStrides(keep);
    for (size_t i = 0; i < in.rank(); ++i)
      if (red[i])
        accStrides[i] = b.getInt64(0);
    std::map<ValueId, std::vector<Value *>> inStrides;
    leafStrides(op.operands[0], inShape, in.dims, inStrides);
    loops(inShape, [&](const std::vector<Value *> &idx) {
      Value *slot = b.CreateGEP(acc, accBuf, offset(idx, accStrides));
      Value *cur = b.CreateLoad(acc, slot);
      Value *x = valueAt(op.operands[0], idx, inStrides);
      if (t == DType::Bool)
        x = b.CreateZExt(x, i64);
      Value *r;
      if (op.code == OpCode::ReduceMax)
        r = fl ? b.CreateBinaryIntrinsic(llvm::Intrinsic::maximum, cur, x)
               : b.CreateBinaryIntrinsic(llvm::Intrinsic::smax, cur, x);
      else if (op.code == OpCode::ReduceMin)
        r = fl ? b.CreateBinaryIntrinsic(llvm::Intrinsic::minimum, cur, x)
               : b.CreateBinaryIntrinsic(llvm::Intrinsic::smin, cur, x);
      else if (fl) {
        // Summation order is free (like NumPy's pairwise sums): lets the
        // vectorizer split the sum into lanes.
        llvm::FastMathFlags fmf;
        fmf.setAllowReassoc();
        r = b.CreateFAdd(cur, x);
        llvm::cast<llvm::Instruction>(r)->setFastMathFlags(fmf);
      } else {
        r = b.CreateAdd(cur, x);
      }
      b.CreateStore(r, slot);
    });
    loops({n}, [&](const std::vector<Value *> &i) {
      Value *v = b.CreateLoad(acc, b.CreateGEP(acc, accBuf, i[0]));
      if (op.code == OpCode::ReduceMean)
        v = b.CreateFDiv(v, b.CreateSIToFP(count, acc));
      if (t == DType::Bool)
        v = b.CreateICmpNE(v, b.getInt64(0));
      store(fn.type(op.results[0]).dtype, dst, i[0], v);
    });
    return true;
  }

  bool matmul(const Operation &op) {
    TensorType a = fn.type(op.operands[0]), c = fn.type(op.operands[1]);
    DType t = a.dtype;
    if (a.rank() == 1)
      a.dims.insert(a.dims.begin(), SymExpr(1));
    if (c.rank() == 1)
      c.dims.push_back(SymExpr(1));
    Value *M = expr(a.dims[a.rank() - 2]), *K = expr(a.dims[a.rank() - 1]);
    Value *N = expr(c.dims[c.rank() - 1]);
    size_t batchRank = std::max(a.rank(), c.rank()) - 2;
    std::vector<Value *> batch(batchRank), sa(batchRank, b.getInt64(0)), sc(batchRank, b.getInt64(0));
    auto batchStrides = [&](const TensorType &x, Value *block, std::vector<Value *> &s) {
      size_t r = x.rank() - 2, off = batchRank - r;
      Value *acc = block;
      for (size_t i = r; i-- > 0;) {
        Value *d = expr(x.dims[i]);
        s[off + i] = b.CreateSelect(b.CreateICmpEQ(d, b.getInt64(1)), b.getInt64(0), acc);
        acc = b.CreateMul(acc, d);
      }
    };
    batchStrides(a, b.CreateMul(M, K), sa);
    batchStrides(c, b.CreateMul(K, N), sc);
    for (size_t i = 0; i < batchRank; ++i) {
      Value *d = b.getInt64(1);
      for (const TensorType *x : {&a, &c}) {
        size_t r = x->rank() - 2, off = batchRank - r;
        if (i >= off) {
          Value *xd = expr(x->dims[i - off]);
          d = b.CreateSelect(b.CreateICmpEQ(xd, b.getInt64(1)), d, xd);
        }
      }
      batch[i] = d;
    }
    Value *dst = allocateResult(op);
    if (t == DType::F32) {
      // f32: the runtime's cache-blocked, vectorized kernel per batch.
      std::vector<Value *> outStrides = contiguousStrides(batch);
      Value *mn = b.CreateMul(M, N);
      llvm::Type *f32 = b.getFloatTy();
      loops(batch, [&](const std::vector<Value *> &bi) {
        Value *pa = b.CreateGEP(f32, bufs[op.operands[0]], offset(bi, sa));
        Value *pb = b.CreateGEP(f32, bufs[op.operands[1]], offset(bi, sc));
        Value *pc = b.CreateGEP(f32, dst, b.CreateMul(offset(bi, outStrides), mn));
        b.CreateCall(runtime("tsl_rt_sgemm", b.getVoidTy(), {i64, i64, i64, ptr, i64, ptr, i64, ptr, i64}),
                     {M, N, K, pa, K, pb, N, pc, N});
      });
      return true;
    }
    llvm::Type *acc = computeType(t);
    bool fl = isFloat(t);
    Value *mn = b.CreateMul(M, N);
    Value *accBuf = b.CreateCall(runtime("tsl_rt_alloc", ptr, {ptr, i64}),
                                 {ctxArg, b.CreateMul(mn, b.getInt64(8))});
    failOpIf(b.CreateIsNull(accBuf));
    std::vector<Value *> outStrides = contiguousStrides(batch);
    loops(batch, [&](const std::vector<Value *> &bi) {
      Value *baseA = offset(bi, sa), *baseC = offset(bi, sc);
      Value *baseO = b.CreateMul(offset(bi, outStrides), mn);
      loops({mn}, [&](const std::vector<Value *> &z) {
        b.CreateStore(fl ? llvm::ConstantFP::get(acc, 0.0) : b.getInt64(0),
                      b.CreateGEP(acc, accBuf, z[0]));
      });
      // i, k, j order: the innermost loop is contiguous in B and C.
      loops({M, K}, [&](const std::vector<Value *> &ik) {
        Value *av = load(t, bufs[op.operands[0]], b.CreateAdd(baseA, b.CreateAdd(b.CreateMul(ik[0], K), ik[1])));
        loops({N}, [&](const std::vector<Value *> &j) {
          Value *cv = load(t, bufs[op.operands[1]], b.CreateAdd(baseC, b.CreateAdd(b.CreateMul(ik[1], N), j[0])));
          Value *slot = b.CreateGEP(acc, accBuf, b.CreateAdd(b.CreateMul(ik[0], N), j[0]));
          Value *cur = b.CreateLoad(acc, slot);
          Value *prod = fl ? b.CreateFMul(av, cv) : b.CreateMul(av, cv);
          b.CreateStore(fl ? b.CreateFAdd(cur, prod) : b.CreateAdd(cur, prod), slot);
        });
      });
      loops({mn}, [&](const std::vector<Value *> &z) {
        store(t, dst, b.CreateAdd(baseO, z[0]), b.CreateLoad(acc, b.CreateGEP(acc, accBuf, z[0])));
      });
    });
    return true;
  }

  /// Copies with an index map: out[idx] = in[offset(idx, strides) + base].
  void copyMapped(ValueId in, Value *dst, const std::vector<Value *> &outShape,
                  const std::vector<Value *> &inStrides, Value *base) {
    DType t = fn.type(in).dtype;
    std::vector<Value *> outStrides = contiguousStrides(outShape);
    llvm::Type *st = storageType(t);
    loops(outShape, [&](const std::vector<Value *> &idx) {
      Value *v = b.CreateLoad(st, b.CreateGEP(st, bufs[in], b.CreateAdd(base, offset(idx, inStrides))));
      b.CreateStore(v, b.CreateGEP(st, dst, offset(idx, outStrides)));
    });
  }

  bool layout(const Operation &op) {
    const TensorType &in = fn.type(op.operands[0]);
    const TensorType &out = fn.type(op.results[0]);
    std::vector<Value *> inShape = dims(in), outShape = dims(out);
    std::vector<Value *> own = contiguousStrides(inShape);
    switch (op.code) {
    case OpCode::Reshape: {
      // Same bytes, new shape: alias the operand's buffer.
      ValueId r = op.results[0];
      b.CreateStore(bufs[op.operands[0]], bufferSlot(r));
      bufs[r] = bufs[op.operands[0]];
      return true;
    }
    case OpCode::Permute: {
      std::vector<Value *> s;
      for (int64_t p : op.intsAttr("perm"))
        s.push_back(own[p]);
      copyMapped(op.operands[0], allocateResult(op), outShape, s, b.getInt64(0));
      return true;
    }
    case OpCode::Expand: {
      std::vector<Value *> s(outShape.size(), b.getInt64(0));
      size_t off = outShape.size() - in.rank();
      for (size_t i = 0; i < in.rank(); ++i)
        s[off + i] = b.CreateSelect(b.CreateICmpEQ(inShape[i], b.getInt64(1)), b.getInt64(0), own[i]);
      copyMapped(op.operands[0], allocateResult(op), outShape, s, b.getInt64(0));
      return true;
    }
    case OpCode::Slice: {
      Value *base = b.getInt64(0);
      const auto &starts = op.exprsAttr("starts");
      for (size_t i = 0; i < in.rank(); ++i)
        base = b.CreateAdd(base, b.CreateMul(expr(starts[i]), own[i]));
      copyMapped(op.operands[0], allocateResult(op), outShape, own, base);
      return true;
    }
    case OpCode::Pad: {
      Value *dst = allocateResult(op);
      Number value = op.numAttr("value");
      DType t = out.dtype;
      Value *fill = value.isInt ? convert(b.getInt64(value.i), DType::I64, t)
                                : convert(fconst(DType::F64, value.f), DType::F64, t);
      loops({product(outShape)}, [&](const std::vector<Value *> &i) { store(t, dst, i[0], fill); });
      std::vector<Value *> outStrides = contiguousStrides(outShape);
      Value *base = b.getInt64(0);
      const auto &lo = op.exprsAttr("lo");
      for (size_t i = 0; i < in.rank(); ++i)
        base = b.CreateAdd(base, b.CreateMul(expr(lo[i]), outStrides[i]));
      llvm::Type *st = storageType(t);
      loops(inShape, [&](const std::vector<Value *> &idx) {
        Value *v = b.CreateLoad(st, b.CreateGEP(st, bufs[op.operands[0]], offset(idx, own)));
        b.CreateStore(v, b.CreateGEP(st, dst, b.CreateAdd(base, offset(idx, outStrides))));
      });
      return true;
    }
    default:
      return unsupported(opInfo(op.code).name);
    }
  }

  bool concat(const Operation &op) {
    const TensorType &out = fn.type(op.results[0]);
    size_t axis = static_cast<size_t>(op.intAttr("axis"));
    Value *dst = allocateResult(op);
    std::vector<Value *> outStrides = contiguousStrides(dims(out));
    llvm::Type *st = storageType(out.dtype);
    Value *start = b.getInt64(0);
    for (ValueId v : op.operands) {
      std::vector<Value *> shape = dims(fn.type(v));
      std::vector<Value *> own = contiguousStrides(shape);
      Value *base = b.CreateMul(start, outStrides[axis]);
      loops(shape, [&](const std::vector<Value *> &idx) {
        Value *x = b.CreateLoad(st, b.CreateGEP(st, bufs[v], offset(idx, own)));
        b.CreateStore(x, b.CreateGEP(st, dst, b.CreateAdd(base, offset(idx, outStrides))));
      });
      start = b.CreateAdd(start, shape[axis]);
    }
    return true;
  }

  /// An alloca'd i64 array holding a type's dims.
  Value *shapeArray(const TensorType &t) {
    Value *arr = b.CreateAlloca(i64, b.getInt32(std::max<size_t>(t.rank(), 1)));
    for (size_t i = 0; i < t.rank(); ++i)
      b.CreateStore(expr(t.dims[i]), b.CreateConstGEP1_64(i64, arr, i));
    return arr;
  }
  Value *dtypeCode(ValueId v) { return b.getInt32(static_cast<int32_t>(fn.type(v).dtype)); }
  void checkStatus(Value *status) { failOpIf(b.CreateICmpNE(status, b.getInt32(0))); }

  bool library(const Operation &op) {
    ValueId x = op.operands[0];
    switch (op.code) {
    case OpCode::Conv2d: {
      Value *dst = allocateResult(op);
      auto st = op.intsAttr("stride"), pd = op.intsAttr("padding");
      Value *bias = op.operands.size() > 2 ? bufs[op.operands[2]]
                                           : llvm::ConstantPointerNull::get(llvm::PointerType::get(ctx, 0));
      checkStatus(b.CreateCall(
          runtime("tsl_rt_conv2d", i32, {ptr, i32, ptr, ptr, ptr, ptr, ptr, i64, i64, i64, i64, ptr}),
          {ctxArg, dtypeCode(x), bufs[x], shapeArray(fn.type(x)), bufs[op.operands[1]],
           shapeArray(fn.type(op.operands[1])), bias, b.getInt64(st[0]), b.getInt64(st[1]),
           b.getInt64(pd[0]), b.getInt64(pd[1]), dst}));
      return true;
    }
    case OpCode::MaxPool2d: {
      Value *dst = allocateResult(op);
      auto k = op.intsAttr("kernel"), st = op.intsAttr("stride"), pd = op.intsAttr("padding");
      checkStatus(b.CreateCall(
          runtime("tsl_rt_max_pool2d", i32, {ptr, i32, ptr, ptr, i64, i64, i64, i64, i64, i64, ptr}),
          {ctxArg, dtypeCode(x), bufs[x], shapeArray(fn.type(x)), b.getInt64(k[0]), b.getInt64(k[1]),
           b.getInt64(st[0]), b.getInt64(st[1]), b.getInt64(pd[0]), b.getInt64(pd[1]), dst}));
      return true;
    }
    case OpCode::Nonzero:
    case OpCode::MaskedSelect:
    case OpCode::Unique: {
      Value *outSlot = b.CreateAlloca(ptr), *count = b.CreateAlloca(i64);
      Value *status;
      if (op.code == OpCode::Nonzero)
        status = b.CreateCall(runtime("tsl_rt_nonzero", i32, {ptr, i32, ptr, ptr, i32, ptr, ptr}),
                              {ctxArg, dtypeCode(x), bufs[x], shapeArray(fn.type(x)),
                               b.getInt32(static_cast<int32_t>(fn.type(x).rank())), outSlot, count});
      else if (op.code == OpCode::MaskedSelect)
        status = b.CreateCall(runtime("tsl_rt_masked_select", i32, {ptr, i32, ptr, ptr, i64, ptr, ptr}),
                              {ctxArg, dtypeCode(x), bufs[x], bufs[op.operands[1]],
                               product(dims(fn.type(x))), outSlot, count});
      else
        status = b.CreateCall(runtime("tsl_rt_unique", i32, {ptr, i32, ptr, i64, ptr, ptr}),
                              {ctxArg, dtypeCode(x), bufs[x], product(dims(fn.type(x))), outSlot, count});
      checkStatus(status);
      ValueId r = op.results[0];
      SymExpr u = fn.type(r).dims[0];
      if (u.isSymbol() && symIndex.count(u.symbolName()))
        b.CreateStore(b.CreateLoad(i64, count), symSlot(u.symbolName()));
      Value *p = b.CreateLoad(ptr, outSlot);
      b.CreateStore(p, bufferSlot(r));
      bufs[r] = p;
      return true;
    }
    case OpCode::IndexSelect: {
      Value *dst = allocateResult(op);
      ValueId idx = op.operands[1];
      checkStatus(b.CreateCall(
          runtime("tsl_rt_index_select", i32, {ptr, i32, ptr, ptr, i32, i32, i32, ptr, i64, ptr}),
          {ctxArg, dtypeCode(x), bufs[x], shapeArray(fn.type(x)),
           b.getInt32(static_cast<int32_t>(fn.type(x).rank())),
           b.getInt32(static_cast<int32_t>(op.intAttr("axis"))), dtypeCode(idx), bufs[idx],
           expr(fn.type(idx).dims[0]), dst}));
      return true;
    }
    case OpCode::Topk: {
      Value *values = allocateResult(op, 0), *indices = allocateResult(op, 1);
      std::vector<Value *> shape = dims(fn.type(x));
      Value *n = shape.back();
      Value *rows = b.CreateSDiv(product(shape), b.CreateSelect(b.CreateICmpEQ(n, b.getInt64(0)), b.getInt64(1), n));
      checkStatus(b.CreateCall(runtime("tsl_rt_topk", i32, {ptr, i32, ptr, i64, i64, i64, ptr, ptr}),
                               {ctxArg, dtypeCode(x), bufs[x], rows, n, expr(op.exprAttr("k")), values,
                                indices}));
      return true;
    }
    case OpCode::Argmax: {
      Value *dst = allocateResult(op);
      const auto &axes = op.intsAttr("axes");
      checkStatus(b.CreateCall(runtime("tsl_rt_argmax", i32, {ptr, i32, ptr, ptr, i32, i32, ptr}),
                               {ctxArg, dtypeCode(x), bufs[x], shapeArray(fn.type(x)),
                                b.getInt32(static_cast<int32_t>(fn.type(x).rank())),
                                b.getInt32(axes.empty() ? -1 : static_cast<int32_t>(axes[0])), dst}));
      return true;
    }
    default:
      return unsupported(opInfo(op.code).name);
    }
  }

  bool lowerOp(const Operation &op) {
    switch (op.code) {
    case OpCode::Assert:
      failOpIf(b.CreateNot(cond(op.condAttr("cond"))));
      return true;
    case OpCode::Constant:
    case OpCode::SymScalar: {
      DType t = fn.type(op.results[0]).dtype;
      Value *dst = allocateResult(op);
      Value *v;
      if (op.code == OpCode::SymScalar) {
        v = convert(expr(op.exprAttr("expr")), DType::I64, t);
      } else {
        Number n = op.numAttr("value");
        v = n.isInt ? convert(b.getInt64(n.i), DType::I64, t) : convert(fconst(DType::F64, n.f), DType::F64, t);
      }
      store(t, dst, b.getInt64(0), v);
      return true;
    }
    case OpCode::Full: {
      DType t = fn.type(op.results[0]).dtype;
      Value *dst = allocateResult(op);
      Number n = op.numAttr("value");
      Value *v = n.isInt ? convert(b.getInt64(n.i), DType::I64, t) : convert(fconst(DType::F64, n.f), DType::F64, t);
      loops({product(dims(fn.type(op.results[0])))},
            [&](const std::vector<Value *> &i) { store(t, dst, i[0], v); });
      return true;
    }
    case OpCode::Arange: {
      DType t = fn.type(op.results[0]).dtype;
      Value *dst = allocateResult(op);
      loops({expr(op.exprAttr("n"))}, [&](const std::vector<Value *> &i) {
        store(t, dst, i[0], convert(i[0], DType::I64, t));
      });
      return true;
    }
    case OpCode::ReduceSum:
    case OpCode::ReduceMean:
    case OpCode::ReduceMax:
    case OpCode::ReduceMin:
      return reduce(op);
    case OpCode::Matmul:
      return matmul(op);
    case OpCode::Reshape:
    case OpCode::Permute:
    case OpCode::Expand:
    case OpCode::Slice:
    case OpCode::Pad:
      return layout(op);
    case OpCode::Concat:
      return concat(op);
    case OpCode::Conv2d:
    case OpCode::MaxPool2d:
    case OpCode::Nonzero:
    case OpCode::MaskedSelect:
    case OpCode::Unique:
    case OpCode::IndexSelect:
    case OpCode::Topk:
    case OpCode::Argmax:
      return library(op);
    case OpCode::Item: {
      ValueId x = op.operands[0];
      Value *v = load(fn.type(x).dtype, bufs[x], b.getInt64(0));
      if (fn.type(x).dtype == DType::Bool)
        v = b.CreateZExt(v, i64);
      SymExpr sym = op.exprAttr("sym");
      if (sym.isSymbol() && symIndex.count(sym.symbolName())) {
        const SymbolInfo &info = fn.symbols[symIndex[sym.symbolName()]];
        Value *bad = b.getFalse();
        if (info.lo != INT64_MIN)
          bad = b.CreateOr(bad, b.CreateICmpSLT(v, b.getInt64(info.lo)));
        if (info.hi)
          bad = b.CreateOr(bad, b.CreateICmpSGT(v, b.getInt64(*info.hi)));
        failMessageIf(bad, "item() gave a value outside the range of " + info.name);
        b.CreateStore(v, symSlot(sym.symbolName()));
      }
      return true;
    }
    default:
      return elementwise(op);
    }
  }
};

} // namespace

std::unique_ptr<llvm::Module> lowerFunction(const Function &fn, llvm::LLVMContext &ctx,
                                            std::vector<std::string> &checks, std::string &error) {
  Codegen cg(fn, ctx);
  std::unique_ptr<llvm::Module> m = cg.run(error);
  checks = cg.checks;
  return m;
}

} // namespace tsl
