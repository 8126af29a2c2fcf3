// Device mode: TSL's own GEMM kernel, launched where the device's GEMM
// library declines (CodegenDeviceGemm.cpp). One kernel serves every float
// matmul: the result is cut into 128x128 tiles, and the blocks (256
// threads, 8 warps) stride over (batch entry, tile row, tile column) work
// items, so any grid is correct and a block's threads always agree on
// their work item (the barriers inside stay matched). Each operand's batch
// entry is found through its own batch strides (0 where it broadcasts).
// K advances in steps staged through shared memory: the block copies a
// slice of A and of B from global memory (coalesced: consecutive threads
// read consecutive elements; zero outside the matrices, so partial tiles
// and odd sizes need no other case), meets at a barrier, multiplies out of
// shared memory into register accumulators, and meets again before the
// next slice overwrites it.
//
// Two schedules:
// - SIMT (f32, f64): slices of K = 8 in the accumulator type; each thread
//   holds an 8x8 register tile (rows ty*4 + {0..3} and 64 + ty*4 + {0..3},
//   columns likewise from tx), so a k step is four 128-bit shared loads per
//   64 fused multiply-adds. Shared memory rows are padded by 4 elements to
//   spread the copy's stores over the banks.
// - Tensor cores (f16, bf16): slices of K = 32 kept as 16-bit elements, A
//   row-major and B transposed (n-major), in rows of 32 elements placed so
//   that the copies' stores (B's transposing one included) and the
//   fragment loads of a warp each hit 32 different banks (gemmRowA and
//   gemmRowB: 4 words of padding after every second row of A, rows of B
//   padded to 20 words plus one word after every eighth). The 8 warps tile
//   the block tile as 2x4 sub-tiles of 64x32, each 4x4 m16n8k16 fragments
//   (tsl_gpu_mma_16816: mma.sync with f32 accumulators), 64 floats per
//   thread. Products are exact and sums in f32, as the interpreter does.
// Both stay within 48 KiB of shared memory (no opt-in attribute needed).
// Where K and N are multiples of 8 and the operands 16-byte aligned, the
// tensor-core copy loads 8 elements (128 bits) at a time.
// Not done yet: ldmatrix, cp.async, double buffering (or prefetching the
// next slice into registers), vector loads for the SIMT schedule.
#include "backend/nvptx/DeviceCodegen.h"

namespace tsl::backend {

namespace {

/// Threads per block of both schedules (8 warps).
constexpr int64_t kGemmThreads = 256;
/// The rows and columns of a block's output tile.
constexpr int64_t kTile = 128;
/// SIMT: K per shared-memory slice; a thread's register tile is
/// kSimtRegs x kSimtRegs; a shared row holds kTile + 4 elements.
constexpr int64_t kSimtK = 8, kSimtRegs = 8, kSimtStride = kTile + 4;
/// Tensor cores: K per slice (two k16 steps).
constexpr int64_t kMmaK = 32;
/// Tensor cores: 16-bit elements of the shared A and B tiles (gemmRowA and
/// gemmRowB of kTile).
constexpr int64_t kMmaTileA = 32 * kTile + 8 * (kTile / 2),
                  kMmaTileB = 40 * kTile + 2 * (kTile / 8);
/// Tensor cores: m16 fragments per warp (rows) and n8 fragments (columns).
constexpr int64_t kFragsM = 4, kFragsN = 4;
/// Most blocks launched (the blocks stride over the rest).
constexpr int64_t kMaxGemmBlocks = int64_t(1) << 24;

bool usesTensorCores(DType t) { return t == DType::F16 || t == DType::BF16; }

// Where shared row `row` of the tensor-core tiles starts, in 16-bit
// elements; element k of it follows at + k. A row holds 32 (16 words): the
// padding makes a warp's accesses hit 32 banks.
// - A: 4 words after every second row, row m at 16m + 4 (m >> 1) words.
//   Fragment loads (rows g = 0..7 of an 8-aligned group, words t = 0..3 of
//   a run): 16g + 4 (g >> 1) + t covers the 32 banks; a quarter warp's
//   128-bit copy stores (runs 0..3 of rows 2i and 2i + 1) fill 16 banks
//   each, 16 apart; an element copy fills one row.
// - B (transposed: row n, element k): 20 words per row and one more after
//   every eighth, row n at 20n + (n >> 3) words. Fragment loads: 20g + t
//   (as 20g mod 32 takes 8 multiples of 4); the 128-bit copy stores
//   element e of runs n = 8j (j = 0..15) of one k: bank 20e + j + c, 16
//   banks, the two k of a word sharing it; an element copy (n = 32
//   consecutive, 8j + e) stores at 20e + j + c: 32 banks. (Rows 20 words
//   apart alone put n and n + 8 in one bank: 16 ways.)
/// gemmRowA(row) in elements; additive over 8-aligned parts (gemmRowA(a +
/// g) = gemmRowA(a) + gemmRowA(g) for even a), which the fragment loads
/// use to keep one base register and constant offsets.
Value *gemmRowA(llvm::IRBuilderBase &b, Value *row) {
  return b.CreateAdd(
      b.CreateMul(row, b.getInt64(32)),
      b.CreateMul(b.CreateLShr(row, b.getInt64(1)), b.getInt64(8)));
}
/// gemmRowB(n) in elements; gemmRowB(a + g) = gemmRowB(a) + gemmRowB(g) for
/// a a multiple of 8 and g < 8.
Value *gemmRowB(llvm::IRBuilderBase &b, Value *n) {
  return b.CreateAdd(
      b.CreateMul(n, b.getInt64(40)),
      b.CreateMul(b.CreateLShr(n, b.getInt64(3)), b.getInt64(2)));
}

} // namespace

struct DeviceCodegen::GemmTile {
  DType t;
  ValueId left, right;
  Value *dst;
  Value *M, *N, *K;
  /// Element offsets of the batch entry's A, B and result matrices.
  Value *aBase, *bBase, *cBase;
  /// The tile's first row and column.
  Value *row0, *col0;
};

bool DeviceCodegen::launchGemmKernel(const Operation &op) {
  DType t = fn.type(op.operands[0]).dtype;
  if (!isFloat(t))
    return launchPerElement(op);
  bool mma = usesTensorCores(t);
  std::vector<ValueId> used(op.results.begin(), op.results.end()), slots;
  for (ValueId o : op.operands)
    leaves(o, used);
  int32_t k = emitDeviceKernel(
      used,
      [&] {
        cooperative = true;
        return gemmKernel(op, mma);
      },
      slots);
  if (k < 0)
    return false;
  MatmulDims md = matmulDims(op);
  auto tilesOf = [&](Value *n) {
    return b.CreateSDiv(b.CreateAdd(n, b.getInt64(kTile - 1)),
                        b.getInt64(kTile));
  };
  Value *tiles =
      b.CreateMul(product(md.batch), b.CreateMul(tilesOf(md.M), tilesOf(md.N)));
  Value *blocks = b.CreateBinaryIntrinsic(llvm::Intrinsic::smin, tiles,
                                          b.getInt64(kMaxGemmBlocks));
  int64_t shared = mma ? (kMmaTileA + kMmaTileB) * 2
                       : 2 * kSimtK * kSimtStride *
                             static_cast<int64_t>(t == DType::F64 ? 8 : 4);
  emitLaunch(k, slots,
             {blocks, b.getInt32(kGemmThreads), static_cast<int32_t>(shared)});
  // Two blocks per SM (PTX .minnctapersm, GpuKernel.cpp): told that one is
  // enough, ptxas gave the tensor-core kernel 158 registers instead of 126
  // and so one block per SM.
  if (mma)
    deviceModule->getFunction("tsl_dev_" + std::to_string(k))
        ->addFnAttr("tsl-min-blocks", "2");
  return true;
}

bool DeviceCodegen::gemmKernel(const Operation &op, bool mma) {
  MatmulDims md = matmulDims(op);
  GemmTile g;
  g.t = fn.type(op.operands[0]).dtype;
  g.left = op.operands[0];
  g.right = op.operands[1];
  g.dst = allocateResult(op);
  g.M = md.M;
  g.N = md.N;
  g.K = md.K;
  auto tilesOf = [&](Value *n) {
    return b.CreateSDiv(b.CreateAdd(n, b.getInt64(kTile - 1)),
                        b.getInt64(kTile));
  };
  Value *tilesN = tilesOf(md.N);
  Value *perMatrix = b.CreateMul(tilesOf(md.M), tilesN);
  Value *count = b.CreateMul(product(md.batch), perMatrix);
  blockStrideLoop(count, [&](Value *w) {
    Value *entry = b.CreateUDiv(w, perMatrix);
    Value *rest = b.CreateURem(w, perMatrix);
    g.row0 = b.CreateMul(b.CreateUDiv(rest, tilesN), b.getInt64(kTile));
    g.col0 = b.CreateMul(b.CreateURem(rest, tilesN), b.getInt64(kTile));
    // The batch entry's index per batch dim (row-major), then each
    // operand's offset through its own strides.
    std::vector<Value *> idx(md.batch.size());
    Value *left = entry;
    for (size_t d = md.batch.size(); d-- > 0;) {
      idx[d] = b.CreateURem(left, md.batch[d]);
      left = b.CreateUDiv(left, md.batch[d]);
    }
    g.aBase = offset(idx, md.sa);
    g.bBase = offset(idx, md.sc);
    g.cBase = b.CreateMul(entry, b.CreateMul(md.M, md.N));
    if (mma)
      gemmMmaTile(g);
    else
      gemmSimtTile(g);
  });
  return true;
}

void DeviceCodegen::gemmStore(const GemmTile &g, Value *row, Value *col,
                              Value *v) {
  Value *inside =
      b.CreateAnd(b.CreateICmpSLT(row, g.M), b.CreateICmpSLT(col, g.N));
  ifThen(inside, [&] {
    store(g.t, g.dst,
          b.CreateAdd(g.cBase, b.CreateAdd(b.CreateMul(row, g.N), col)), v);
  });
}

void DeviceCodegen::gemmSimtTile(const GemmTile &g) {
  llvm::Type *acc = computeType(g.t);
  Value *zero = llvm::ConstantFP::get(acc, 0.0);
  Value *as = gpuShared();
  Value *bs = b.CreateConstGEP1_64(acc, as, kSimtK * kSimtStride);
  Value *tid = gpuThreadIdx();
  Value *tx = b.CreateAnd(tid, b.getInt64(15));
  Value *ty = b.CreateLShr(tid, b.getInt64(4));
  constexpr int64_t regs = kSimtRegs * kSimtRegs;
  Value *accs = entryAlloca(llvm::ArrayType::get(acc, regs));
  for (int64_t r = 0; r < regs; ++r)
    b.CreateStore(zero, b.CreateConstGEP1_64(acc, accs, r));
  // Element (i or j) of the thread's register tile: 4 consecutive, then
  // the same 64 further.
  auto within = [&](Value *base, int64_t i) {
    return b.CreateAdd(b.CreateMul(base, b.getInt64(4)),
                       b.getInt64((i & 3) + 64 * (i >> 2)));
  };
  // One element of an operand, or zero outside its matrix.
  auto element = [&](ValueId v, Value *base, Value *row, Value *col,
                     Value *rows, Value *cols) {
    Value *ok =
        b.CreateAnd(b.CreateICmpSLT(row, rows), b.CreateICmpSLT(col, cols));
    Value *at = b.CreateAdd(base, b.CreateAdd(b.CreateMul(row, cols), col));
    Value *x = load(g.t, bufs[v], b.CreateSelect(ok, at, base));
    return b.CreateSelect(ok, x, zero);
  };
  auto *vec = llvm::FixedVectorType::get(acc, 4);
  stridedLoop(b.getInt64(0), g.K, b.getInt64(kSimtK), [&](Value *k0) {
    for (int64_t r = 0; r < kTile * kSimtK / kGemmThreads; ++r) {
      // A: 8 consecutive k of 4 rows per warp; stored k-major.
      Value *row =
          b.CreateAdd(b.CreateLShr(tid, b.getInt64(3)), b.getInt64(32 * r));
      Value *kk = b.CreateAnd(tid, b.getInt64(7));
      Value *x = element(g.left, g.aBase, b.CreateAdd(g.row0, row),
                         b.CreateAdd(k0, kk), g.M, g.K);
      b.CreateStore(
          x, b.CreateGEP(
                 acc, as,
                 b.CreateAdd(b.CreateMul(kk, b.getInt64(kSimtStride)), row)));
      // B: 128 consecutive columns per row.
      Value *col = b.CreateAnd(tid, b.getInt64(kTile - 1));
      Value *kb =
          b.CreateAdd(b.CreateLShr(tid, b.getInt64(7)), b.getInt64(2 * r));
      Value *y = element(g.right, g.bBase, b.CreateAdd(k0, kb),
                         b.CreateAdd(g.col0, col), g.K, g.N);
      b.CreateStore(
          y, b.CreateGEP(
                 acc, bs,
                 b.CreateAdd(b.CreateMul(kb, b.getInt64(kSimtStride)), col)));
    }
    gpuBarrier();
    Value *sum[regs];
    for (int64_t r = 0; r < regs; ++r)
      sum[r] = b.CreateLoad(acc, b.CreateConstGEP1_64(acc, accs, r));
    for (int64_t kk = 0; kk < kSimtK; ++kk) {
      Value *av[kSimtRegs], *bv[kSimtRegs];
      for (int64_t h = 0; h < 2; ++h) {
        Value *pa = b.CreateGEP(
            acc, as,
            b.CreateAdd(within(ty, 4 * h), b.getInt64(kk * kSimtStride)));
        Value *pb = b.CreateGEP(
            acc, bs,
            b.CreateAdd(within(tx, 4 * h), b.getInt64(kk * kSimtStride)));
        Value *va = b.CreateAlignedLoad(vec, pa, llvm::Align(16));
        Value *vb = b.CreateAlignedLoad(vec, pb, llvm::Align(16));
        for (int64_t e = 0; e < 4; ++e) {
          av[4 * h + e] = b.CreateExtractElement(va, e);
          bv[4 * h + e] = b.CreateExtractElement(vb, e);
        }
      }
      for (int64_t i = 0; i < kSimtRegs; ++i)
        for (int64_t j = 0; j < kSimtRegs; ++j) {
          Value *&s = sum[i * kSimtRegs + j];
          s = b.CreateIntrinsic(llvm::Intrinsic::fmuladd, {acc},
                                {av[i], bv[j], s});
        }
    }
    for (int64_t r = 0; r < regs; ++r)
      b.CreateStore(sum[r], b.CreateConstGEP1_64(acc, accs, r));
    gpuBarrier(); // everyone read the slice before the next overwrites it
  });
  for (int64_t i = 0; i < kSimtRegs; ++i)
    for (int64_t j = 0; j < kSimtRegs; ++j)
      gemmStore(g, b.CreateAdd(g.row0, within(ty, i)),
                b.CreateAdd(g.col0, within(tx, j)),
                b.CreateLoad(
                    acc, b.CreateConstGEP1_64(acc, accs, i * kSimtRegs + j)));
}

void DeviceCodegen::gemmMmaStage(const GemmTile &g, Value *k0, Value *as,
                                 Value *bs) {
  llvm::Type *i16 = b.getInt16Ty();
  Value *tid = gpuThreadIdx();
  // The raw 16 bits of an element, or +0 outside its matrix.
  auto element = [&](ValueId v, Value *base, Value *row, Value *col,
                     Value *rows, Value *cols) {
    Value *ok =
        b.CreateAnd(b.CreateICmpSLT(row, rows), b.CreateICmpSLT(col, cols));
    Value *at = b.CreateAdd(base, b.CreateAdd(b.CreateMul(row, cols), col));
    Value *x = b.CreateLoad(
        i16, b.CreateGEP(i16, bufs[v], b.CreateSelect(ok, at, base)));
    return b.CreateSelect(ok, x, b.getInt16(0));
  };
  // A loop kept rolled: unrolled, each of its 16 steps' addresses and
  // bounds stayed live across the k loop (about 90 more registers).
  llvm::BasicBlock *pre = b.GetInsertBlock();
  auto *step = llvm::BasicBlock::Create(ctx, "mmacopy", kernel);
  auto *copied = llvm::BasicBlock::Create(ctx, "mmacopied", kernel);
  b.CreateBr(step);
  b.SetInsertPoint(step);
  llvm::PHINode *r = b.CreatePHI(i64, 2);
  r->addIncoming(b.getInt64(0), pre);
  {
    // A: a warp reads 32 consecutive k of one row; As[row][k].
    Value *row = b.CreateAdd(b.CreateLShr(tid, b.getInt64(5)),
                             b.CreateMul(r, b.getInt64(8)));
    Value *kk = b.CreateAnd(tid, b.getInt64(kMmaK - 1));
    Value *x = element(g.left, g.aBase, b.CreateAdd(g.row0, row),
                       b.CreateAdd(k0, kk), g.M, g.K);
    b.CreateStore(x, b.CreateGEP(i16, as, b.CreateAdd(gemmRowA(b, row), kk)));
    // B: a warp reads 32 consecutive columns of one k; Bs[n][k].
    Value *n = b.CreateAnd(tid, b.getInt64(kTile - 1));
    Value *kb = b.CreateAdd(b.CreateLShr(tid, b.getInt64(7)),
                            b.CreateMul(r, b.getInt64(2)));
    Value *y = element(g.right, g.bBase, b.CreateAdd(k0, kb),
                       b.CreateAdd(g.col0, n), g.K, g.N);
    b.CreateStore(y, b.CreateGEP(i16, bs, b.CreateAdd(gemmRowB(b, n), kb)));
  }
  Value *next = b.CreateAdd(r, b.getInt64(1));
  r->addIncoming(next, b.GetInsertBlock());
  llvm::BranchInst *latch = b.CreateCondBr(
      b.CreateICmpULT(next, b.getInt64(kTile * kMmaK / kGemmThreads)), step,
      copied);
  llvm::MDNode *noUnroll = llvm::MDNode::get(
      ctx, {llvm::MDString::get(ctx, "llvm.loop.unroll.disable")});
  llvm::MDNode *loop = llvm::MDNode::getDistinct(ctx, {nullptr, noUnroll});
  loop->replaceOperandWith(0, loop);
  latch->setMetadata(llvm::LLVMContext::MD_loop, loop);
  b.SetInsertPoint(copied);
}

void DeviceCodegen::gemmMmaStageWide(const GemmTile &g, Value *k0, Value *as,
                                     Value *bs) {
  llvm::Type *i16 = b.getInt16Ty();
  auto *eight = llvm::FixedVectorType::get(i16, 8);
  Value *zero = llvm::Constant::getNullValue(eight);
  Value *tid = gpuThreadIdx();
  // Elements (row, col .. col + 7), or zeros outside the matrix (K and N
  // are multiples of 8: a run is all inside or all outside).
  auto run = [&](ValueId v, Value *base, Value *row, Value *col, Value *rows,
                 Value *cols) {
    Value *ok =
        b.CreateAnd(b.CreateICmpSLT(row, rows), b.CreateICmpSLT(col, cols));
    Value *at = b.CreateAdd(base, b.CreateAdd(b.CreateMul(row, cols), col));
    Value *x = b.CreateAlignedLoad(
        eight, b.CreateGEP(i16, bufs[v], b.CreateSelect(ok, at, base)),
        llvm::Align(16));
    return b.CreateSelect(ok, x, zero);
  };
  for (int64_t r = 0; r < kTile * kMmaK / 8 / kGemmThreads; ++r) {
    // A: four runs per row, 8 rows per warp; As[row][k] (16-byte aligned).
    Value *row =
        b.CreateAdd(b.CreateLShr(tid, b.getInt64(2)), b.getInt64(64 * r));
    Value *kk = b.CreateMul(b.CreateAnd(tid, b.getInt64(3)), b.getInt64(8));
    Value *x = run(g.left, g.aBase, b.CreateAdd(g.row0, row),
                   b.CreateAdd(k0, kk), g.M, g.K);
    b.CreateAlignedStore(
        x, b.CreateGEP(i16, as, b.CreateAdd(gemmRowA(b, row), kk)),
        llvm::Align(16));
    // B: 16 runs per k, 2 k per warp; transposed into Bs[n][k].
    Value *kb =
        b.CreateAdd(b.CreateLShr(tid, b.getInt64(4)), b.getInt64(16 * r));
    Value *n = b.CreateMul(b.CreateAnd(tid, b.getInt64(15)), b.getInt64(8));
    Value *y = run(g.right, g.bBase, b.CreateAdd(k0, kb),
                   b.CreateAdd(g.col0, n), g.K, g.N);
    // n is a multiple of 8: row n + e starts e rows of 40 after row n.
    Value *at = b.CreateAdd(gemmRowB(b, n), kb);
    for (int64_t e = 0; e < 8; ++e)
      b.CreateStore(b.CreateExtractElement(y, e),
                    b.CreateGEP(i16, bs, b.CreateAdd(at, b.getInt64(40 * e))));
  }
}

void DeviceCodegen::gemmMmaTile(const GemmTile &g) {
  llvm::Type *f32 = b.getFloatTy(), *i16 = b.getInt16Ty();
  int32_t kind = g.t == DType::F16 ? 0 : 1;
  Value *as = gpuShared();
  Value *bs = b.CreateConstGEP1_64(i16, as, kMmaTileA);
  Value *tid = gpuThreadIdx();
  Value *lane = b.CreateAnd(tid, b.getInt64(31));
  Value *warp = b.CreateLShr(tid, b.getInt64(5));
  Value *group = b.CreateLShr(lane, b.getInt64(2));
  Value *pairAt = b.CreateMul(b.CreateAnd(lane, b.getInt64(3)), b.getInt64(2));
  // The warp's sub-tile: rows wm * 64, columns wn * 32 of the block tile.
  Value *warpRow =
      b.CreateMul(b.CreateLShr(warp, b.getInt64(2)), b.getInt64(16 * kFragsM));
  Value *warpCol =
      b.CreateMul(b.CreateAnd(warp, b.getInt64(3)), b.getInt64(8 * kFragsN));
  constexpr int64_t accCount = kFragsM * kFragsN * 4;
  Value *accs = entryAlloca(llvm::ArrayType::get(f32, accCount));
  Value *aFrag = entryAlloca(llvm::ArrayType::get(i32, 4 * kFragsM));
  Value *bFrag = entryAlloca(llvm::ArrayType::get(i32, 2 * kFragsN));
  for (int64_t r = 0; r < accCount; ++r)
    b.CreateStore(llvm::ConstantFP::get(f32, 0.0),
                  b.CreateConstGEP1_64(f32, accs, r));
  // The lane's rows: group of the warp's 8-aligned rows (A) and columns
  // (B); the offsets add (gemmRowA/B), so the loads below are one base
  // register plus constants.
  Value *aLane = b.CreateAdd(gemmRowA(b, warpRow), gemmRowA(b, group));
  Value *bLane = b.CreateAdd(gemmRowB(b, warpCol), gemmRowB(b, group));
  // Two elements (k, k + 1) as one word, \p rows (a multiple of 8) past the
  // lane's row.
  auto wordA = [&](int64_t rows, Value *k) {
    Value *at =
        b.CreateAdd(b.CreateAdd(aLane, b.getInt64(32 * rows + 4 * rows)), k);
    return b.CreateAlignedLoad(i32, b.CreateGEP(i16, as, at), llvm::Align(4));
  };
  auto wordB = [&](int64_t cols, Value *k) {
    Value *at = b.CreateAdd(
        b.CreateAdd(bLane, b.getInt64(40 * cols + 2 * (cols / 8))), k);
    return b.CreateAlignedLoad(i32, b.CreateGEP(i16, bs, at), llvm::Align(4));
  };
  // 128-bit loads where every 8-element run of a row is aligned (uniform
  // over the grid: a branch the whole block takes the same way).
  auto aligned16 = [&](ValueId v) {
    return b.CreateICmpEQ(
        b.CreateAnd(b.CreatePtrToInt(bufs[v], i64), b.getInt64(15)),
        b.getInt64(0));
  };
  auto by8 = [&](Value *n) {
    return b.CreateICmpEQ(b.CreateAnd(n, b.getInt64(7)), b.getInt64(0));
  };
  Value *wide = b.CreateAnd(b.CreateAnd(by8(g.K), by8(g.N)),
                            b.CreateAnd(aligned16(g.left), aligned16(g.right)));
  stridedLoop(b.getInt64(0), g.K, b.getInt64(kMmaK), [&](Value *k0) {
    auto *narrowSide = llvm::BasicBlock::Create(ctx, "mmaload", kernel);
    auto *wideSide = llvm::BasicBlock::Create(ctx, "mmaload16", kernel);
    auto *loaded = llvm::BasicBlock::Create(ctx, "mmaloaded", kernel);
    b.CreateCondBr(wide, wideSide, narrowSide);
    b.SetInsertPoint(wideSide);
    gemmMmaStageWide(g, k0, as, bs);
    b.CreateBr(loaded);
    b.SetInsertPoint(narrowSide);
    gemmMmaStage(g, k0, as, bs);
    b.CreateBr(loaded);
    b.SetInsertPoint(loaded);
    gpuBarrier();
    for (int64_t ks = 0; ks < kMmaK; ks += 16) {
      Value *k = b.CreateAdd(pairAt, b.getInt64(ks));
      Value *k8 = b.CreateAdd(k, b.getInt64(8));
      for (int64_t fm = 0; fm < kFragsM; ++fm) {
        int64_t row = 16 * fm, row8 = row + 8;
        Value *words[] = {wordA(row, k), wordA(row8, k), wordA(row, k8),
                          wordA(row8, k8)};
        for (int64_t w = 0; w < 4; ++w)
          b.CreateStore(words[w], b.CreateConstGEP1_64(i32, aFrag, 4 * fm + w));
      }
      for (int64_t fn = 0; fn < kFragsN; ++fn) {
        b.CreateStore(wordB(8 * fn, k),
                      b.CreateConstGEP1_64(i32, bFrag, 2 * fn));
        b.CreateStore(wordB(8 * fn, k8),
                      b.CreateConstGEP1_64(i32, bFrag, 2 * fn + 1));
      }
      for (int64_t fm = 0; fm < kFragsM; ++fm)
        for (int64_t fn = 0; fn < kFragsN; ++fn)
          gpuMma16816(kind, b.CreateConstGEP1_64(i32, aFrag, 4 * fm),
                      b.CreateConstGEP1_64(i32, bFrag, 2 * fn),
                      b.CreateConstGEP1_64(f32, accs, 4 * (fm * kFragsN + fn)));
    }
    gpuBarrier(); // everyone read the slice before the next overwrites it
  });
  // Accumulator i of fragment (fm, fn): row group + 8 (i / 2), column
  // 2 (lane % 4) + i % 2.
  for (int64_t fm = 0; fm < kFragsM; ++fm)
    for (int64_t fn = 0; fn < kFragsN; ++fn)
      for (int64_t i = 0; i < 4; ++i) {
        Value *row =
            b.CreateAdd(b.CreateAdd(g.row0, warpRow),
                        b.CreateAdd(group, b.getInt64(16 * fm + 8 * (i / 2))));
        Value *col =
            b.CreateAdd(b.CreateAdd(g.col0, warpCol),
                        b.CreateAdd(pairAt, b.getInt64(8 * fn + i % 2)));
        Value *v = b.CreateLoad(
            f32, b.CreateConstGEP1_64(f32, accs, 4 * (fm * kFragsN + fn) + i));
        gemmStore(g, row, col, v);
      }
}

} // namespace tsl::backend
