// The element math of the elementwise ops (Emitter::unary, Emitter::binary),
// shared by every target and every loop that computes elements (fused
// loops, row kernels, vectorized device kernels): one table of emit
// functions per arity, indexed by OpCode. An elementwise op of ir/Ops.def
// without an entry fails the static_asserts below (cast and where are
// computed by Codegen::compute, not here).
#include "backend/common/Emitter.h"
#include "backend/common/OpFamily.h"

namespace tsl::backend {

/// The emit functions of the element math (a nested class: it reaches
/// the Emitter's builder and helpers).
struct Emitter::ElementMath {
  /// x's elementwise op on a computed value of element type t.
  using Unary = Value *(*)(Emitter &e, DType t, Value *x);
  /// The binary op on computed values of operand type t.
  using Binary = Value *(*)(Emitter &e, DType t, Value *x, Value *y);

  static constexpr size_t at(OpCode c) { return static_cast<size_t>(c); }
  static constexpr PerOp<Unary> unaryTable();
  static constexpr PerOp<Binary> binaryTable();
};

constexpr PerOp<Emitter::ElementMath::Unary>
Emitter::ElementMath::unaryTable() {
  PerOp<Unary> t{};
  t[at(OpCode::Neg)] = [](Emitter &e, DType d, Value *x) -> Value * {
    return isFloat(d) ? e.b.CreateFNeg(x) : e.b.CreateSub(e.b.getInt64(0), x);
  };
  t[at(OpCode::Not)] = [](Emitter &e, DType, Value *x) -> Value * {
    return e.b.CreateNot(x);
  };
  t[at(OpCode::Abs)] = [](Emitter &e, DType d, Value *x) -> Value * {
    return isFloat(d) ? e.b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x)
                      : e.b.CreateBinaryIntrinsic(llvm::Intrinsic::abs, x,
                                                  e.b.getFalse());
  };
  t[at(OpCode::Relu)] = [](Emitter &e, DType d, Value *x) -> Value * {
    llvm::Type *ty = e.computeType(d);
    return isFloat(d) ? e.b.CreateSelect(e.b.CreateFCmpOLT(
                                             x, llvm::ConstantFP::get(ty, 0.0)),
                                         llvm::ConstantFP::get(ty, 0.0), x)
                      : e.b.CreateBinaryIntrinsic(llvm::Intrinsic::smax, x,
                                                  e.b.getInt64(0));
  };
  t[at(OpCode::Exp)] = [](Emitter &e, DType d, Value *x) -> Value * {
    return d == DType::F64 ? e.b.CreateUnaryIntrinsic(llvm::Intrinsic::exp, x)
                           : e.fastExp(x);
  };
  t[at(OpCode::Log)] = [](Emitter &e, DType, Value *x) -> Value * {
    return e.b.CreateUnaryIntrinsic(llvm::Intrinsic::log, x);
  };
  t[at(OpCode::Sqrt)] = [](Emitter &e, DType, Value *x) -> Value * {
    return e.b.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, x);
  };
  t[at(OpCode::Rsqrt)] = [](Emitter &e, DType d, Value *x) -> Value * {
    return e.b.CreateFDiv(llvm::ConstantFP::get(e.computeType(d), 1.0),
                          e.b.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, x));
  };
  t[at(OpCode::Sin)] = [](Emitter &e, DType, Value *x) -> Value * {
    return e.b.CreateUnaryIntrinsic(llvm::Intrinsic::sin, x);
  };
  t[at(OpCode::Cos)] = [](Emitter &e, DType, Value *x) -> Value * {
    return e.b.CreateUnaryIntrinsic(llvm::Intrinsic::cos, x);
  };
  // Exact in any float type (NVPTX: cvt.rmi / cvt.rpi).
  t[at(OpCode::Floor)] = [](Emitter &e, DType, Value *x) -> Value * {
    return e.b.CreateUnaryIntrinsic(llvm::Intrinsic::floor, x);
  };
  t[at(OpCode::Ceil)] = [](Emitter &e, DType, Value *x) -> Value * {
    return e.b.CreateUnaryIntrinsic(llvm::Intrinsic::ceil, x);
  };
  // Halves to even, in any rounding mode (NVPTX: cvt.rni).
  t[at(OpCode::Round)] = [](Emitter &e, DType, Value *x) -> Value * {
    return e.b.CreateUnaryIntrinsic(llvm::Intrinsic::roundeven, x);
  };
  t[at(OpCode::Tanh)] = [](Emitter &e, DType d, Value *x) -> Value * {
    return d == DType::F64 ? e.libm(MathFn::Tanh, d, x) : e.fastTanh(x);
  };
  t[at(OpCode::Sigmoid)] = [](Emitter &e, DType d, Value *x) -> Value * {
    llvm::Type *ty = e.computeType(d);
    Value *negExp =
        d == DType::F64
            ? e.b.CreateUnaryIntrinsic(llvm::Intrinsic::exp, e.b.CreateFNeg(x))
            : e.fastExp(e.b.CreateFNeg(x));
    return e.b.CreateFDiv(
        llvm::ConstantFP::get(ty, 1.0),
        e.b.CreateFAdd(llvm::ConstantFP::get(ty, 1.0), negExp));
  };
  // A few ulp in f32 (and vectorized), libm in f64.
  t[at(OpCode::Erf)] = [](Emitter &e, DType d, Value *x) -> Value * {
    return d == DType::F64 ? e.libm(MathFn::Erf, d, x) : e.fastErf(x);
  };
  t[at(OpCode::Gelu)] = [](Emitter &e, DType d, Value *x) -> Value * {
    llvm::Type *ty = e.computeType(d);
    Value *scaled =
        e.b.CreateFMul(x, llvm::ConstantFP::get(ty, 0.70710678118654752440));
    Value *erf =
        d == DType::F64 ? e.libm(MathFn::Erf, d, scaled) : e.fastErf(scaled);
    return e.b.CreateFMul(e.b.CreateFMul(llvm::ConstantFP::get(ty, 0.5), x),
                          e.b.CreateFAdd(llvm::ConstantFP::get(ty, 1.0), erf));
  };
  return t;
}

constexpr PerOp<Emitter::ElementMath::Binary>
Emitter::ElementMath::binaryTable() {
  PerOp<Binary> t{};
  t[at(OpCode::Add)] = [](Emitter &e, DType d, Value *x, Value *y) -> Value * {
    return isFloat(d) ? e.b.CreateFAdd(x, y) : e.b.CreateAdd(x, y);
  };
  t[at(OpCode::Sub)] = [](Emitter &e, DType d, Value *x, Value *y) -> Value * {
    return isFloat(d) ? e.b.CreateFSub(x, y) : e.b.CreateSub(x, y);
  };
  t[at(OpCode::Mul)] = [](Emitter &e, DType d, Value *x, Value *y) -> Value * {
    return isFloat(d) ? e.b.CreateFMul(x, y) : e.b.CreateMul(x, y);
  };
  t[at(OpCode::Div)] = [](Emitter &e, DType d, Value *x, Value *y) -> Value * {
    if (isFloat(d)) {
      // Reciprocal allowed (as PyTorch's softmax does): a divisor that is
      // the same across a loop (a row sum) becomes one reciprocal and a
      // multiply per element; at most ~1 ulp from the exact quotient.
      auto *q = llvm::cast<llvm::Instruction>(e.b.CreateFDiv(x, y));
      q->setHasAllowReciprocal(true);
      return q;
    }
    e.failMessageIf(e.b.CreateICmpEQ(y, e.b.getInt64(0)),
                    "integer division by zero");
    if (e.failuresGoOn()) // the failed check went on (failIf): divide by 1
      y = e.b.CreateSelect(e.b.CreateICmpEQ(y, e.b.getInt64(0)),
                           e.b.getInt64(1), y);
    return e.floorDiv(x, y);
  };
  t[at(OpCode::Pow)] = [](Emitter &e, DType, Value *x, Value *y) -> Value * {
    return e.b.CreateBinaryIntrinsic(llvm::Intrinsic::pow, x, y);
  };
  t[at(OpCode::Maximum)] = [](Emitter &e, DType d, Value *x,
                              Value *y) -> Value * {
    return isFloat(d)
               ? e.b.CreateBinaryIntrinsic(llvm::Intrinsic::maximum, x, y)
               : e.b.CreateBinaryIntrinsic(llvm::Intrinsic::smax, x, y);
  };
  t[at(OpCode::Minimum)] = [](Emitter &e, DType d, Value *x,
                              Value *y) -> Value * {
    return isFloat(d)
               ? e.b.CreateBinaryIntrinsic(llvm::Intrinsic::minimum, x, y)
               : e.b.CreateBinaryIntrinsic(llvm::Intrinsic::smin, x, y);
  };
  t[at(OpCode::Lt)] = [](Emitter &e, DType d, Value *x, Value *y) -> Value * {
    return isFloat(d) ? e.b.CreateFCmpOLT(x, y) : e.b.CreateICmpSLT(x, y);
  };
  t[at(OpCode::Le)] = [](Emitter &e, DType d, Value *x, Value *y) -> Value * {
    return isFloat(d) ? e.b.CreateFCmpOLE(x, y) : e.b.CreateICmpSLE(x, y);
  };
  t[at(OpCode::Gt)] = [](Emitter &e, DType d, Value *x, Value *y) -> Value * {
    return isFloat(d) ? e.b.CreateFCmpOGT(x, y) : e.b.CreateICmpSGT(x, y);
  };
  t[at(OpCode::Ge)] = [](Emitter &e, DType d, Value *x, Value *y) -> Value * {
    return isFloat(d) ? e.b.CreateFCmpOGE(x, y) : e.b.CreateICmpSGE(x, y);
  };
  t[at(OpCode::Eq)] = [](Emitter &e, DType d, Value *x, Value *y) -> Value * {
    return isFloat(d) ? e.b.CreateFCmpOEQ(x, y) : e.b.CreateICmpEQ(x, y);
  };
  t[at(OpCode::Ne)] = [](Emitter &e, DType d, Value *x, Value *y) -> Value * {
    return isFloat(d) ? e.b.CreateFCmpUNE(x, y) : e.b.CreateICmpNE(x, y);
  };
  t[at(OpCode::And)] = [](Emitter &e, DType, Value *x, Value *y) -> Value * {
    return e.b.CreateAnd(x, y);
  };
  t[at(OpCode::Or)] = [](Emitter &e, DType, Value *x, Value *y) -> Value * {
    return e.b.CreateOr(x, y);
  };
  t[at(OpCode::Xor)] = [](Emitter &e, DType, Value *x, Value *y) -> Value * {
    return e.b.CreateXor(x, y);
  };
  return t;
}

namespace {
/// Every op of \p category but \p except has an entry in \p table.
template <typename T>
constexpr bool coversCategory(const PerOp<T> &table, OpCategory category,
                              OpCode except) {
  for (size_t i = 0; i < kNumOps; ++i)
    if (kOpTable[i].category == category && kOpTable[i].code != except &&
        !table[i].set)
      return false;
  return true;
}
} // namespace

Value *Emitter::unary(OpCode code, DType t, Value *x) {
  static constexpr auto kUnaryMath = ElementMath::unaryTable();
  static_assert(
      coversCategory(kUnaryMath, OpCategory::ElementwiseUnary, OpCode::Cast),
      "an elementwise unary op without element math (add it to "
      "unaryTable)");
  ElementMath::Unary f = kUnaryMath[static_cast<size_t>(code)];
  return f ? f(*this, t, x) : nullptr;
}

Value *Emitter::binary(OpCode code, DType t, Value *x, Value *y) {
  static constexpr auto kBinaryMath = ElementMath::binaryTable();
  static_assert(
      coversCategory(kBinaryMath, OpCategory::ElementwiseBinary, OpCode::Cast),
      "an elementwise binary op without element math (add it to "
      "binaryTable)");
  ElementMath::Binary f = kBinaryMath[static_cast<size_t>(code)];
  return f ? f(*this, t, x, y) : nullptr;
}

} // namespace tsl::backend
