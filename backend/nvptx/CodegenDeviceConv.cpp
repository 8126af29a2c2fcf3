// Device mode: conv2d as GEMMs. Each image's patches are laid out as the
// column matrix col[C*KH*KW, OH*OW] (im2col, zeros for the padding), and
// out[n] = W[O, C*KH*KW] @ col[n] is one strided batch of GEMMs whose
// result is already NCHW. Images go in chunks so the column matrices stay
// within kColumnBytes. The GEMMs go to the device's library
// (tsl_rt_dev_gemm) or, where it declines, to emitGemmKernel; the bias is
// one pass over the result after them.
#include "backend/nvptx/DeviceCodegen.h"

#include <algorithm>

namespace tsl::backend {

namespace {

/// The column matrices of one chunk of images stay within this.
constexpr int64_t kColumnBytes = int64_t{256} << 20;

} // namespace

bool DeviceCodegen::emitGemm(const GemmOperands &g) {
  Value *status = callLibraryGemm(g);
  bool ok = true;
  ifThen(b.CreateICmpEQ(status, b.getInt32(2)),
         [&] { ok = emitGemmKernel(g); });
  return ok;
}

bool DeviceCodegen::emitGemmKernel(const GemmOperands &g) {
  // One thread per result element; the operands travel as extra words.
  std::vector<ValueId> slots;
  DType t = g.dtype;
  llvm::Type *acc = computeType(t);
  int32_t k = emitDeviceKernel(
      {},
      [&] {
        Value *a = deviceExtra(0), *bm = deviceExtra(1), *d = deviceExtra(2);
        auto word = [&](size_t i) {
          return b.CreatePtrToInt(deviceExtra(i), i64);
        };
        Value *M = word(3), *N = word(4), *K = word(5), *sa = word(6),
              *sb = word(7), *count = word(8);
        Value *slot = entryAlloca(acc);
        stridedLoop(deviceThread, count, deviceThreads, [&](Value *o) {
          Value *mn = b.CreateMul(M, N);
          Value *e = b.CreateUDiv(o, mn), *rest = b.CreateURem(o, mn);
          Value *i = b.CreateUDiv(rest, N), *j = b.CreateURem(rest, N);
          Value *rowA = b.CreateAdd(b.CreateMul(e, sa), b.CreateMul(i, K));
          Value *colB = b.CreateAdd(b.CreateMul(e, sb), j);
          b.CreateStore(llvm::ConstantFP::get(acc, 0.0), slot);
          ++loopNesting; // sequential, per thread
          loops({K}, [&](const std::vector<Value *> &kk) {
            Value *av = load(t, a, b.CreateAdd(rowA, kk[0]));
            Value *bv = load(t, bm, b.CreateAdd(colB, b.CreateMul(kk[0], N)));
            b.CreateStore(
                b.CreateFAdd(b.CreateLoad(acc, slot), b.CreateFMul(av, bv)),
                slot);
          });
          --loopNesting;
          store(t, d, o, b.CreateLoad(acc, slot));
        });
        return true;
      },
      slots, 9);
  if (k < 0)
    return false;
  Value *count = b.CreateMul(g.batch, b.CreateMul(g.M, g.N));
  auto asPtr = [&](Value *v) { return b.CreateIntToPtr(v, ptr); };
  emitLaunch(k, slots, gridFor(count),
             {g.a, g.b, g.d, asPtr(g.M), asPtr(g.N), asPtr(g.K),
              asPtr(g.strideA), asPtr(g.strideB), asPtr(count)});
  return true;
}

bool DeviceCodegen::deviceConv(const Operation &op) {
  DType t = fn.type(op.operands[0]).dtype;
  Value *dst = allocateResult(op);
  // The sizes, computed in whichever function is being emitted (host or
  // kernel: each reads its own symbol array).
  struct Sizes {
    Value *N, *C, *H, *W, *O, *KH, *KW, *OH, *OW, *depth, *pixels, *perImage;
  };
  auto sizes = [&] {
    std::vector<Value *> xs = dims(fn.type(op.operands[0])),
                         ws = dims(fn.type(op.operands[1])),
                         os = dims(fn.type(op.results[0]));
    Sizes z{xs[0], xs[1], xs[2], xs[3],   ws[0],   ws[2],
            ws[3], os[2], os[3], nullptr, nullptr, nullptr};
    z.depth = b.CreateMul(z.C, b.CreateMul(z.KH, z.KW)); // GEMM K
    z.pixels = b.CreateMul(z.OH, z.OW);                  // GEMM N
    z.perImage = b.CreateMul(z.depth, z.pixels);
    return z;
  };
  Sizes host = sizes();
  Value *N = host.N, *O = host.O, *pixels = host.pixels, *depth = host.depth,
        *perImage = host.perImage;
  auto eb = b.getInt64(static_cast<int64_t>(dtypeSize(t)));
  // Images per chunk: as many as fit in kColumnBytes, at least one.
  Value *fit = b.CreateSDiv(b.getInt64(kColumnBytes),
                            b.CreateBinaryIntrinsic(llvm::Intrinsic::smax,
                                                    b.CreateMul(perImage, eb),
                                                    b.getInt64(1)));
  Value *chunk = b.CreateBinaryIntrinsic(
      llvm::Intrinsic::smax, b.getInt64(1),
      b.CreateBinaryIntrinsic(llvm::Intrinsic::smin, fit, N));
  Value *col = deviceScratch(b.CreateMul(b.CreateMul(chunk, perImage), eb));
  auto st = op.intsAttr("stride"), pd = op.intsAttr("padding");
  std::vector<ValueId> slots;
  int32_t im2col = emitDeviceKernel(
      {op.operands[0]},
      [&] {
        Value *out = deviceExtra(0);
        Value *first = b.CreatePtrToInt(deviceExtra(1), i64);
        Value *images = b.CreatePtrToInt(deviceExtra(2), i64);
        Sizes z = sizes();
        Value *total = b.CreateMul(images, z.perImage);
        stridedLoop(deviceThread, total, deviceThreads, [&](Value *i) {
          // i = (((image * C + c) * KH + kh) * KW + kw) * pixels + p
          Value *p = b.CreateURem(i, z.pixels), *r = b.CreateUDiv(i, z.pixels);
          Value *kw = b.CreateURem(r, z.KW),
                *kh = b.CreateURem(b.CreateUDiv(r, z.KW), z.KH);
          Value *ic = b.CreateUDiv(r, b.CreateMul(z.KH, z.KW)); // image*C + c
          Value *ih = b.CreateAdd(
              b.CreateSub(b.CreateMul(b.CreateUDiv(p, z.OW), b.getInt64(st[0])),
                          b.getInt64(pd[0])),
              kh);
          Value *iw = b.CreateAdd(
              b.CreateSub(b.CreateMul(b.CreateURem(p, z.OW), b.getInt64(st[1])),
                          b.getInt64(pd[1])),
              kw);
          llvm::Type *stype = storageType(t);
          b.CreateStore(llvm::Constant::getNullValue(stype),
                        b.CreateGEP(stype, out, i));
          Value *inside =
              b.CreateAnd(b.CreateAnd(b.CreateICmpSGE(ih, b.getInt64(0)),
                                      b.CreateICmpSLT(ih, z.H)),
                          b.CreateAnd(b.CreateICmpSGE(iw, b.getInt64(0)),
                                      b.CreateICmpSLT(iw, z.W)));
          ifThen(inside, [&] {
            Value *plane = b.CreateAdd(b.CreateMul(first, z.C), ic);
            Value *from = b.CreateAdd(
                b.CreateMul(b.CreateAdd(b.CreateMul(plane, z.H), ih), z.W), iw);
            copyElementRaw(t, out, i, bufs[op.operands[0]], from);
          });
        });
        return true;
      },
      slots, 3);
  if (im2col < 0)
    return false;
  bool ok = true;
  stridedLoop(b.getInt64(0), N, chunk, [&](Value *n0) {
    Value *images = b.CreateBinaryIntrinsic(llvm::Intrinsic::smin, chunk,
                                            b.CreateSub(N, n0));
    auto asPtr = [&](Value *v) { return b.CreateIntToPtr(v, ptr); };
    emitLaunch(im2col, slots, gridFor(b.CreateMul(images, perImage)),
               {col, asPtr(n0), asPtr(images)});
    Value *outAt = b.CreateGEP(storageType(t), dst,
                               b.CreateMul(n0, b.CreateMul(O, pixels)));
    ok = ok && emitGemm({t, images, O, pixels, depth, bufs[op.operands[1]],
                         b.getInt64(0), col, perImage, outAt,
                         b.CreateMul(O, pixels)});
  });
  freeBuffer(col);
  if (!ok || op.operands.size() < 3)
    return ok;
  // The bias: out[n, o, p] += bias[o].
  std::vector<ValueId> biasSlots;
  ValueId r = op.results[0], bias = op.operands[2];
  int32_t k = emitDeviceKernel(
      {r, bias},
      [&] {
        Sizes z = sizes();
        Value *total = b.CreateMul(z.N, b.CreateMul(z.O, z.pixels));
        stridedLoop(deviceThread, total, deviceThreads, [&](Value *i) {
          Value *o = b.CreateURem(b.CreateUDiv(i, z.pixels), z.O);
          store(t, bufs[r], i,
                b.CreateFAdd(load(t, bufs[r], i), load(t, bufs[bias], o)));
        });
        return true;
      },
      biasSlots);
  if (k < 0)
    return false;
  emitLaunch(k, biasSlots, gridFor(b.CreateMul(N, b.CreateMul(O, pixels))));
  return true;
}

} // namespace tsl::backend
