// Device mode: fused attention, softmax(q k^T * scale + mask) v, as one
// kernel in the flash-attention style (FlashAttention-2's schedule). The
// blocks (4 warps) stride over (batch entry, query tile) work items, so any
// grid is correct and a block's threads always agree on their work item.
// Each warp owns 16 * fragsM query rows of the tile; per key tile the block
// stages k (in D slices) and v (one E slice) in shared memory, between
// barriers, with zeros outside the matrices (partial tiles and any D or E
// need no other case); q is staged once per E slice when D fits one slice,
// else with each D slice of k. The scores of a key tile live in registers
// in the m16n8 accumulator layout of mma.sync: a thread holds rows
// g and g + 8 of each of its warp's fragments (g = lane / 4) and columns
// 2 (lane % 4) + {0, 1} of each n8 fragment, so a row is spread over the
// four lanes of a quad and its maximum and sum take two shuffles. The
// softmax is online: a running maximum and sum per row, the output
// accumulators rescaled by exp(old max - new max) when the maximum grows;
// results are written once, divided by the row sum, rounded once. No
// scores matrix is ever stored.
//
// Two schedules of the two products, by element type:
// - tensor cores (f16, bf16): S = Q K^T and O += P V by m16n8k16 mma.sync
//   with f32 accumulators (tsl_gpu_mma_16816); 128 query rows (32 per
//   warp), 64 keys, D slices of 64 and E slices of 64 as 16-bit elements
//   in rows padded to 72; V is stored transposed (the B fragment wants key
//   pairs), its rows skewed by 5 words per 8 rows so that neither its
//   staging stores nor the fragment loads conflict on the banks. P is rounded
//   to the input type for the second product, as FlashAttention does, while the
//   row sums add the f32 probabilities; the scores' accumulator layout is the A
//   fragment layout of the second product, so P never leaves registers.
// - SIMT (f32, f64): the same fragment layout computed with fused
//   multiply-adds in the accumulator type (f32 or f64) from shared memory
//   (rows padded to 33: conflict-free), P passed between the lanes of a
//   quad by shuffles; f32: 64 rows, 64 keys, D slices of 32; f64: 64
//   rows, 32 keys, D slices of 32 (with 128 rows f32 took 255 registers
//   and spilled).
// Causal: key tiles wholly above the diagonal are never visited (the key
// loop ends at min(T, last row of the tile + 1)); inside, key j > query i
// is -inf. Masked keys and keys past T are -inf; a row with no finite
// score gives 0 / 0 = NaN, a NaN score poisons its row, like the unfused
// ops. E wider than a slice recomputes the scores per slice (slower, never
// unsupported); every shared-memory plan stays within 48 KiB (no opt-in).
// Where a tile lies wholly inside its matrix, the row length is a multiple
// of 16 bytes' worth of elements and the buffer is 16-byte aligned, staging
// loads 128 bits at a time (a uniform run-time branch).
// Not done yet: double-buffered (cp.async) k and v tiles, ldmatrix.
#include "backend/nvptx/DeviceCodegen.h"

namespace tsl::backend {

namespace {

/// Threads per block: 4 warps.
constexpr int64_t kAttnWarps = 4, kAttnThreads = 32 * kAttnWarps;
/// Most blocks launched (the blocks stride over the rest).
constexpr int64_t kMaxAttnBlocks = int64_t(1) << 24;

/// The schedule of one element type (compile-time sizes).
struct AttentionConfig {
  bool mma;       ///< tensor cores (f16, bf16)
  int64_t fragsM; ///< m16 row fragments per warp
  int64_t keys;   ///< keys per tile (a multiple of 16)
  int64_t dk;     ///< D per shared-memory slice (a multiple of 16)
  int64_t ec;     ///< E per pass (a multiple of 8)
  /// Shared row strides in elements: q and k rows, v rows (keys on tensor
  /// cores, where v is transposed; else E columns).
  int64_t qStride, kStride, vStride;
  int64_t elemBytes; ///< bytes of a shared element
  /// Query rows of a work item.
  int64_t rows() const { return kAttnWarps * 16 * fragsM; }
  /// Tensor cores: where row \p e of v^T starts, in elements: e * vStride
  /// plus kVSkew for each 8 rows before it (see kVSkew).
  int64_t vRow(int64_t e) const { return e * vStride + kVSkew * (e / 8); }
  int64_t sharedBytes() const {
    int64_t v = mma ? vRow(ec - 1) + vStride : keys * vStride;
    return (rows() * qStride + keys * kStride + v) * elemBytes;
  }
  /// v^T's rows of 72 16-bit elements (36 words) start 5 words further
  /// on after every 8 rows (rows 8c..8c+7 are skewed by 5c words), so
  /// that none of its warp accesses conflicts on the 32 banks:
  /// - the 128-bit staging (thread t: key t / 8, columns 8 (t % 8) ..
  ///   + 7, one 16-bit store per column): a store's 32 lanes write row
  ///   8c + i (c = t % 8) at keys 4w..4w+3, words 36 (8c + i) + 5c + key/2,
  ///   banks 4i + 5c + key/2 (mod 32): 16 distinct words (key pairs share
  ///   one) on 16 banks, where without the skew all 8 c fell on one bank
  ///   (8 ways, 7 replays per store);
  /// - the element staging (partial tiles: thread t: column t % 64 of key
  ///   t / 64): 32 consecutive rows at one key, banks 4 (e % 8) + 5 (e / 8)
  ///   (mod 32), 32 distinct (4 ways without the skew);
  /// - the B fragment loads: lane (g, q) reads row 8 fe + g at word
  ///   kg / 2 + q (+ 4), banks 4g + q + constant: 32 distinct, as before.
  static constexpr int64_t kVSkew = 10;
};

AttentionConfig attentionConfig(DType t) {
  switch (t) {
  case DType::F16:
  case DType::BF16:
    return {true, 2, 64, 64, 64, 72, 72, 72, 2};
  case DType::F64:
    return {false, 1, 32, 32, 64, 33, 33, 64, 8};
  default:
    return {false, 1, 64, 32, 64, 33, 33, 64, 4};
  }
}

int64_t log2Of(int64_t n) {
  int64_t l = 0;
  while ((int64_t(1) << l) < n)
    ++l;
  return l;
}

} // namespace

struct DeviceCodegen::AttentionTile {
  AttentionConfig c;
  DType t;
  llvm::Type *acc;  ///< f32 on tensor cores, else computeType(t)
  llvm::Type *elem; ///< a shared element: i16 on tensor cores, else acc
  ValueId q, k, v, mask;
  bool hasMask, causal;
  Value *dst, *scale;
  Value *S, *T, *D, *E;
  std::vector<Value *> batchDims;
  /// The mask's stored leaves' strides against the scores [*B, S, T].
  std::map<ValueId, std::vector<Value *>> maskStrides;
  Value *qs, *ks, *vs; ///< shared memory of the q, k and v tiles
  /// The thread's pointers into them: the first element its fragments
  /// read (every other is a constant offset from it). Tensor cores: q at
  /// (its first row, 2 (lane % 4)), k at (lane / 4, 2 (lane % 4)), v^T at
  /// (lane / 4, 2 (lane % 4)); SIMT: q's row, k's row 2 (lane % 4), v's
  /// column 2 (lane % 4).
  Value *qFrag, *kFrag, *vFrag;
  /// The thread: its lane's group (lane / 4) and place in the quad
  /// (lane % 4), its warp's first row in the tile.
  Value *tid, *group, *quad, *warpRow;
  /// Emits the thread's values above anew at the builder's position.
  std::function<void()> refreshThread;
  /// Registers (allocas SROA promotes): scores [fragsM][keys / 8][4],
  /// outputs [fragsM][ec / 8][4], the running max and sum of each of the
  /// thread's 2 fragsM rows, and fragment words for tsl_gpu_mma_16816.
  Value *sAcc, *oAcc, *rowMax, *rowSum, *aFrag, *bFrag;
  // The work item: the batch entry's matrices, its index per batch dim,
  // the tile's first query row, where its key loop ends, the E slice.
  Value *qBase, *kBase, *vBase, *oBase, *i0, *keyEnd, *e0;
  /// D for the loop over D slices (opaque, like keyEnd: see
  /// attentionKernel).
  Value *dEnd;
  std::vector<Value *> batchIdx;
  int64_t nS() const { return c.keys / 8; }
  int64_t nO() const { return c.ec / 8; }
  int64_t sAt(int64_t fm, int64_t fn, int64_t i) const {
    return (fm * nS() + fn) * 4 + i;
  }
  int64_t oAt(int64_t fm, int64_t fe, int64_t i) const {
    return (fm * nO() + fe) * 4 + i;
  }
};

bool DeviceCodegen::deviceAttention(const Operation &op) {
  const TensorType &qt = fn.type(op.operands[0]);
  if (!isFloat(qt.dtype))
    return unsupported("attention on " + qt.str());
  AttentionConfig c = attentionConfig(qt.dtype);
  allocateResult(op);
  std::vector<ValueId> used(op.results.begin(), op.results.end()), slots;
  for (ValueId o : op.operands)
    leaves(o, used);
  int32_t k = emitDeviceKernel(
      used,
      [&] {
        cooperative = true;
        return attentionKernel(op);
      },
      slots);
  if (k < 0)
    return false;
  std::vector<Value *> qd = dims(qt);
  Value *S = qd[qt.rank() - 2];
  Value *tiles = b.CreateSDiv(b.CreateAdd(S, b.getInt64(c.rows() - 1)),
                              b.getInt64(c.rows()));
  Value *items = b.CreateMul(
      product(std::vector<Value *>(qd.begin(), qd.end() - 2)), tiles);
  Value *blocks = b.CreateBinaryIntrinsic(llvm::Intrinsic::smin, items,
                                          b.getInt64(kMaxAttnBlocks));
  emitLaunch(k, slots,
             {blocks, b.getInt32(kAttnThreads),
              static_cast<int32_t>(c.sharedBytes())});
  return true;
}

bool DeviceCodegen::attentionKernel(const Operation &op) {
  AttentionTile a;
  const TensorType &qt = fn.type(op.operands[0]);
  size_t rank = qt.rank();
  a.t = qt.dtype;
  a.c = attentionConfig(a.t);
  a.acc = a.c.mma ? b.getFloatTy() : computeType(a.t);
  a.elem = a.c.mma ? b.getInt16Ty() : a.acc;
  a.q = op.operands[0];
  a.k = op.operands[1];
  a.v = op.operands[2];
  a.hasMask = op.operands.size() > 4;
  a.mask = a.hasMask ? op.operands[4] : 0;
  a.causal = op.boolAttr("causal");
  a.dst = allocateResult(op);
  std::vector<Value *> qd = dims(qt);
  a.S = qd[rank - 2];
  a.D = qd[rank - 1];
  a.T = expr(fn.type(a.k).dims[rank - 2]);
  a.E = expr(fn.type(a.v).dims[rank - 1]);
  a.batchDims.assign(qd.begin(), qd.end() - 2);
  std::map<ValueId, std::vector<Value *>> scalar;
  leafStrides(op.operands[3], {}, {}, scalar);
  a.scale = valueAt(op.operands[3], {}, scalar); // may be a fused constant
  if (a.hasMask) {
    std::vector<SymExpr> scoreDims = qt.dims;
    scoreDims[rank - 1] = fn.type(a.k).dims[rank - 2];
    std::vector<Value *> scoreShape = qd;
    scoreShape[rank - 1] = a.T;
    leafStrides(a.mask, scoreShape, scoreDims, a.maskStrides);
  }
  const AttentionConfig &c = a.c;
  a.qs = gpuShared();
  a.ks = b.CreateConstGEP1_64(a.elem, a.qs, c.rows() * c.qStride);
  a.vs = b.CreateConstGEP1_64(a.elem, a.ks, c.keys * c.kStride);
  // The thread's values are recomputed from a volatile load of its index
  // at the top of each key tile (and before the results): computed once,
  // LLVM hoists every fragment and staging address derived from them out
  // of the loops, hundreds of 64-bit values that then stay live (and
  // spill) across the whole kernel; recomputed, they live within a tile.
  Value *tidSlot = entryAlloca(i64);
  b.CreateStore(gpuThreadIdx(), tidSlot);
  a.refreshThread = [&a, this, tidSlot] {
    const AttentionConfig &c = a.c;
    a.tid = b.CreateLoad(i64, tidSlot, /*isVolatile=*/true);
    Value *lane = b.CreateAnd(a.tid, b.getInt64(31));
    a.group = b.CreateLShr(lane, b.getInt64(2));
    a.quad = b.CreateAnd(lane, b.getInt64(3));
    a.warpRow = b.CreateMul(b.CreateLShr(a.tid, b.getInt64(5)),
                            b.getInt64(16 * c.fragsM));
    Value *two = b.CreateMul(a.quad, b.getInt64(2));
    auto at = [&](Value *tile, Value *row, int64_t stride, Value *col) {
      return b.CreateGEP(
          a.elem, tile, b.CreateAdd(b.CreateMul(row, b.getInt64(stride)), col));
    };
    Value *firstRow = b.CreateAdd(a.warpRow, a.group);
    if (c.mma) {
      a.qFrag = at(a.qs, firstRow, c.qStride, two);
      a.kFrag = at(a.ks, a.group, c.kStride, two);
      a.vFrag = at(a.vs, a.group, c.vStride, two);
    } else {
      a.qFrag = at(a.qs, firstRow, c.qStride, b.getInt64(0));
      a.kFrag = at(a.ks, two, c.kStride, b.getInt64(0));
      a.vFrag = at(a.vs, b.getInt64(0), c.vStride, two);
    }
  };
  a.refreshThread();
  a.sAcc = entryAlloca(llvm::ArrayType::get(a.acc, c.fragsM * a.nS() * 4));
  a.oAcc = entryAlloca(llvm::ArrayType::get(a.acc, c.fragsM * a.nO() * 4));
  a.rowMax = entryAlloca(llvm::ArrayType::get(a.acc, 2 * c.fragsM));
  a.rowSum = entryAlloca(llvm::ArrayType::get(a.acc, 2 * c.fragsM));
  a.aFrag = entryAlloca(llvm::ArrayType::get(i32, 4 * c.fragsM));
  a.bFrag =
      entryAlloca(llvm::ArrayType::get(i32, 2 * std::max(a.nS(), a.nO())));
  Value *tiles = b.CreateSDiv(b.CreateAdd(a.S, b.getInt64(c.rows() - 1)),
                              b.getInt64(c.rows()));
  // The bounds of the E slice, key tile and D slice loops through volatile
  // loads, so their trip counts stay unknown: sizes known at compile time
  // (E = 64: one slice; T = 64: one key tile; D = 64: one more slice) get
  // loops unrolled and flattened into code whose values stay live together
  // (f32 at D = T = E = 64: 15 KB of spills per thread).
  auto opaque = [this](Value *v) {
    Value *slot = entryAlloca(v->getType());
    b.CreateStore(v, slot);
    return b.CreateLoad(v->getType(), slot, /*isVolatile=*/true);
  };
  Value *eEnd = opaque(a.E);
  a.dEnd = opaque(a.D);
  blockStrideLoop(b.CreateMul(product(a.batchDims), tiles), [&](Value *w) {
    Value *entry = b.CreateUDiv(w, tiles);
    a.i0 = b.CreateMul(b.CreateURem(w, tiles), b.getInt64(c.rows()));
    a.batchIdx.assign(a.batchDims.size(), nullptr);
    Value *rest = entry;
    for (size_t d = a.batchDims.size(); d-- > 0;) {
      a.batchIdx[d] = b.CreateURem(rest, a.batchDims[d]);
      rest = b.CreateUDiv(rest, a.batchDims[d]);
    }
    a.qBase = b.CreateMul(entry, b.CreateMul(a.S, a.D));
    a.kBase = b.CreateMul(entry, b.CreateMul(a.T, a.D));
    a.vBase = b.CreateMul(entry, b.CreateMul(a.T, a.E));
    a.oBase = b.CreateMul(entry, b.CreateMul(a.S, a.E));
    a.keyEnd = a.T;
    if (a.causal) // keys past the tile's last row are all masked
      a.keyEnd = b.CreateBinaryIntrinsic(
          llvm::Intrinsic::smin, a.T, b.CreateAdd(a.i0, b.getInt64(c.rows())));
    a.keyEnd = opaque(a.keyEnd);
    stridedLoop(b.getInt64(0), eEnd, b.getInt64(c.ec), [&](Value *e0) {
      a.e0 = e0;
      attentionSlice(a);
    });
  });
  return true;
}

void DeviceCodegen::attentionSlice(AttentionTile &a) {
  const AttentionConfig &c = a.c;
  Value *zero = llvm::ConstantFP::get(a.acc, 0.0);
  Value *ninf = llvm::ConstantFP::getInfinity(a.acc, true);
  for (int64_t i = 0; i < c.fragsM * a.nO() * 4; ++i)
    b.CreateStore(zero, b.CreateConstGEP1_64(a.acc, a.oAcc, i));
  for (int64_t r = 0; r < 2 * c.fragsM; ++r) {
    b.CreateStore(ninf, b.CreateConstGEP1_64(a.acc, a.rowMax, r));
    b.CreateStore(zero, b.CreateConstGEP1_64(a.acc, a.rowSum, r));
  }
  auto stageQ = [&](Value *d0) {
    attentionStage(a, a.q, a.qBase, a.i0, a.S, d0, a.D, c.rows(), c.dk, a.qs,
                   c.qStride, false);
  };
  auto stageK = [&](Value *j0, Value *d0) {
    attentionStage(a, a.k, a.kBase, j0, a.T, d0, a.D, c.keys, c.dk, a.ks,
                   c.kStride, false);
  };
  // q stays in shared memory for the whole slice when D fits one slice.
  a.refreshThread();
  Value *qResident = b.CreateICmpSLE(a.D, b.getInt64(c.dk));
  ifThen(qResident, [&] { stageQ(b.getInt64(0)); });
  stridedLoop(b.getInt64(0), a.keyEnd, b.getInt64(c.keys), [&](Value *j0) {
    a.refreshThread();
    attentionStage(a, a.v, a.vBase, j0, a.T, a.e0, a.E, c.keys, c.ec, a.vs,
                   c.vStride, c.mma);
    stageK(j0, b.getInt64(0));
    ifThen(b.CreateNot(qResident), [&] { stageQ(b.getInt64(0)); });
    gpuBarrier();
    for (int64_t i = 0; i < c.fragsM * a.nS() * 4; ++i)
      b.CreateStore(zero, b.CreateConstGEP1_64(a.acc, a.sAcc, i));
    attentionScores(a, b.getInt64(0));
    stridedLoop(b.getInt64(c.dk), a.dEnd, b.getInt64(c.dk), [&](Value *d0) {
      gpuBarrier();      // the previous slice is read
      a.refreshThread(); // per slice too: the scores' addresses
                         // stay local
      stageK(j0, d0);
      stageQ(d0);
      gpuBarrier();
      attentionScores(a, d0);
    });
    a.refreshThread(); // the loop's values do not reach past it
    attentionSoftmax(a, j0);
    attentionValues(a, j0);
    gpuBarrier(); // everyone read the tiles before the next overwrites them
  });
  // The row sums of the quad's four lanes, then the results.
  a.refreshThread();
  for (int64_t fm = 0; fm < c.fragsM; ++fm)
    for (int64_t h = 0; h < 2; ++h) {
      Value *l = b.CreateLoad(
          a.acc, b.CreateConstGEP1_64(a.acc, a.rowSum, 2 * fm + h));
      l = b.CreateFAdd(l, gpuShuffleXor(l, 1));
      l = b.CreateFAdd(l, gpuShuffleXor(l, 2));
      Value *row = b.CreateAdd(
          a.i0, b.CreateAdd(a.warpRow,
                            b.CreateAdd(a.group, b.getInt64(16 * fm + 8 * h))));
      for (int64_t fe = 0; fe < a.nO(); ++fe)
        for (int64_t e = 0; e < 2; ++e) {
          Value *col =
              b.CreateAdd(a.e0, b.CreateAdd(b.CreateMul(a.quad, b.getInt64(2)),
                                            b.getInt64(8 * fe + e)));
          Value *o = b.CreateLoad(
              a.acc,
              b.CreateConstGEP1_64(a.acc, a.oAcc, a.oAt(fm, fe, 2 * h + e)));
          ifThen(
              b.CreateAnd(b.CreateICmpSLT(row, a.S), b.CreateICmpSLT(col, a.E)),
              [&] {
                store(a.t, a.dst,
                      b.CreateAdd(a.oBase,
                                  b.CreateAdd(b.CreateMul(row, a.E), col)),
                      b.CreateFDiv(o, l));
              });
        }
    }
}

void DeviceCodegen::attentionStage(const AttentionTile &a, ValueId src,
                                   Value *base, Value *r0, Value *rowLimit,
                                   Value *c0, Value *ld, int64_t rows,
                                   int64_t cols, Value *dst, int64_t stride,
                                   bool transpose) {
  const AttentionConfig &c = a.c;
  // Tensor cores stage raw 16-bit elements; SIMT types are stored as
  // they compute.
  llvm::Type *st = c.mma ? b.getInt16Ty() : storageType(a.t);
  Value *zero = llvm::Constant::getNullValue(a.elem);
  // Thread t copies runs of `width` elements: run t % runsPerRow of rows
  // t / runsPerRow + k * rowsPerStep. Every address is the thread's
  // pointer plus a constant (shared) or plus k steps of rowsPerStep * ld
  // (global), so few registers stay live across the kernel's loops.
  auto copy = [&](int64_t width, bool guarded) {
    int64_t runsPerRow = cols / width, rowsPerStep = kAttnThreads / runsPerRow;
    Value *r = b.CreateLShr(a.tid, b.getInt64(log2Of(runsPerRow)));
    Value *col = b.CreateMul(b.CreateAnd(a.tid, b.getInt64(runsPerRow - 1)),
                             b.getInt64(width));
    // Transposed (v^T on tensor cores), column col is row col of the tile,
    // skewed (AttentionConfig::kVSkew); a run of `width` <= 8 columns from
    // a multiple of width shares its skew.
    Value *to = b.CreateGEP(
        a.elem, dst,
        transpose
            ? b.CreateAdd(
                  b.CreateAdd(b.CreateMul(col, b.getInt64(stride)),
                              b.CreateMul(b.CreateLShr(col, b.getInt64(3)),
                                          b.getInt64(AttentionConfig::kVSkew))),
                  r)
            : b.CreateAdd(b.CreateMul(r, b.getInt64(stride)), col));
    Value *row = b.CreateAdd(r0, r), *cc = b.CreateAdd(c0, col);
    Value *from =
        b.CreateGEP(st, bufs[src],
                    b.CreateAdd(base, b.CreateAdd(b.CreateMul(row, ld), cc)));
    Value *step = b.CreateMul(ld, b.getInt64(rowsPerStep));
    Value *colOk = b.CreateICmpSLT(cc, ld);
    auto *vec = llvm::FixedVectorType::get(st, static_cast<unsigned>(width));
    for (int64_t k = 0; k < rows / rowsPerStep; ++k) {
      if (k > 0)
        from = b.CreateGEP(st, from, step);
      Value *x;
      if (!guarded) {
        x = b.CreateAlignedLoad(vec, from, llvm::Align(16));
      } else { // zero outside the matrix, never loaded there (it may be
               // empty)
        Value *ok = b.CreateAnd(
            colOk,
            b.CreateICmpSLT(b.CreateAdd(row, b.getInt64(k * rowsPerStep)),
                            rowLimit));
        llvm::BasicBlock *pre = b.GetInsertBlock();
        auto *read = llvm::BasicBlock::Create(ctx, "attnread", kernel);
        auto *join = llvm::BasicBlock::Create(ctx, "attnjoin", kernel);
        b.CreateCondBr(ok, read, join);
        b.SetInsertPoint(read);
        Value *y = b.CreateLoad(st, from);
        b.CreateBr(join);
        b.SetInsertPoint(join);
        llvm::PHINode *phi = b.CreatePHI(a.elem, 2);
        phi->addIncoming(zero, pre);
        phi->addIncoming(y, read);
        x = b.CreateInsertElement(llvm::PoisonValue::get(vec), phi,
                                  uint64_t(0));
      }
      int64_t rk = k * rowsPerStep;
      if (!guarded && !transpose && stride * c.elemBytes % 16 == 0) {
        // Shared rows are 16-byte aligned too: one 128-bit store.
        b.CreateAlignedStore(x, b.CreateConstGEP1_64(a.elem, to, rk * stride),
                             llvm::Align(16));
        continue;
      }
      for (int64_t e = 0; e < width; ++e)
        b.CreateStore(b.CreateExtractElement(x, e),
                      b.CreateConstGEP1_64(a.elem, to,
                                           transpose ? e * stride + rk
                                                     : rk * stride + e));
    }
  };
  int64_t width = 16 / c.elemBytes; // elements per 128-bit load
  Value *inside =
      b.CreateAnd(b.CreateICmpSLE(b.CreateAdd(r0, b.getInt64(rows)), rowLimit),
                  b.CreateICmpSLE(b.CreateAdd(c0, b.getInt64(cols)), ld));
  Value *wide = b.CreateAnd(
      inside,
      b.CreateAnd(
          b.CreateICmpEQ(b.CreateAnd(ld, b.getInt64(width - 1)), b.getInt64(0)),
          b.CreateICmpEQ(
              b.CreateAnd(b.CreatePtrToInt(bufs[src], i64), b.getInt64(15)),
              b.getInt64(0))));
  auto *wideSide = llvm::BasicBlock::Create(ctx, "attnwide", kernel);
  auto *narrowSide = llvm::BasicBlock::Create(ctx, "attnnarrow", kernel);
  auto *staged = llvm::BasicBlock::Create(ctx, "attnstaged", kernel);
  b.CreateCondBr(wide, wideSide, narrowSide);
  // The whole tile inside, the row length a multiple of `width` and the
  // buffer 16-byte aligned (base and c0 are multiples of width): 128-bit
  // loads.
  b.SetInsertPoint(wideSide);
  copy(width, false);
  b.CreateBr(staged);
  b.SetInsertPoint(narrowSide);
  copy(1, true);
  b.CreateBr(staged);
  b.SetInsertPoint(staged);
}

void DeviceCodegen::attentionScores(const AttentionTile &a, Value *d0) {
  const AttentionConfig &c = a.c;
  Value *two = b.CreateMul(a.quad, b.getInt64(2));
  auto rowOf = [&](int64_t fm, int64_t h) {
    return b.CreateAdd(a.warpRow,
                       b.CreateAdd(a.group, b.getInt64(16 * fm + 8 * h)));
  };
  // Two 16-bit elements (col, col + 1) of a shared row as one word.
  auto word = [&](Value *tile, Value *row, Value *col, int64_t stride) {
    Value *at = b.CreateAdd(b.CreateMul(row, b.getInt64(stride)), col);
    return b.CreateAlignedLoad(i32, b.CreateGEP(a.elem, tile, at),
                               llvm::Align(4));
  };
  for (int64_t ks = 0; ks < c.dk; ks += 16)
    ifThen(b.CreateICmpSLT(b.CreateAdd(d0, b.getInt64(ks)), a.D), [&] {
      if (c.mma) {
        Value *col = b.CreateAdd(two, b.getInt64(ks));
        Value *col8 = b.CreateAdd(col, b.getInt64(8));
        for (int64_t fm = 0; fm < c.fragsM; ++fm) {
          Value *row = rowOf(fm, 0), *row8 = rowOf(fm, 1);
          Value *words[] = {word(a.qs, row, col, c.qStride),
                            word(a.qs, row8, col, c.qStride),
                            word(a.qs, row, col8, c.qStride),
                            word(a.qs, row8, col8, c.qStride)};
          for (int64_t w = 0; w < 4; ++w)
            b.CreateStore(words[w],
                          b.CreateConstGEP1_64(i32, a.aFrag, 4 * fm + w));
        }
        for (int64_t fn = 0; fn < a.nS(); ++fn) {
          Value *key = b.CreateAdd(a.group, b.getInt64(8 * fn));
          b.CreateStore(word(a.ks, key, col, c.kStride),
                        b.CreateConstGEP1_64(i32, a.bFrag, 2 * fn));
          b.CreateStore(word(a.ks, key, col8, c.kStride),
                        b.CreateConstGEP1_64(i32, a.bFrag, 2 * fn + 1));
        }
        for (int64_t fm = 0; fm < c.fragsM; ++fm)
          for (int64_t fn = 0; fn < a.nS(); ++fn)
            gpuMma16816(a.t == DType::F16 ? 0 : 1,
                        b.CreateConstGEP1_64(i32, a.aFrag, 4 * fm),
                        b.CreateConstGEP1_64(i32, a.bFrag, 2 * fn),
                        b.CreateConstGEP1_64(a.acc, a.sAcc, a.sAt(fm, fn, 0)));
        return;
      }
      // SIMT: the thread's 2 fragsM rows x 2 keys/8 columns, k by k.
      std::vector<Value *> s(static_cast<size_t>(c.fragsM * a.nS() * 4));
      for (size_t i = 0; i < s.size(); ++i)
        s[i] = b.CreateLoad(a.acc, b.CreateConstGEP1_64(a.acc, a.sAcc, i));
      for (int64_t kk = ks; kk < ks + 16; ++kk) {
        std::vector<Value *> qv, kv;
        for (int64_t fm = 0; fm < c.fragsM; ++fm)
          for (int64_t h = 0; h < 2; ++h)
            qv.push_back(b.CreateLoad(
                a.acc,
                b.CreateGEP(a.acc, a.qs,
                            b.CreateAdd(b.CreateMul(rowOf(fm, h),
                                                    b.getInt64(c.qStride)),
                                        b.getInt64(kk)))));
        for (int64_t fn = 0; fn < a.nS(); ++fn)
          for (int64_t e = 0; e < 2; ++e) {
            Value *key = b.CreateAdd(two, b.getInt64(8 * fn + e));
            kv.push_back(b.CreateLoad(
                a.acc,
                b.CreateGEP(a.acc, a.ks,
                            b.CreateAdd(b.CreateMul(key, b.getInt64(c.kStride)),
                                        b.getInt64(kk)))));
          }
        for (int64_t fm = 0; fm < c.fragsM; ++fm)
          for (int64_t fn = 0; fn < a.nS(); ++fn)
            for (int64_t i = 0; i < 4; ++i) {
              Value *&x = s[static_cast<size_t>(a.sAt(fm, fn, i))];
              x = b.CreateIntrinsic(llvm::Intrinsic::fmuladd, {a.acc},
                                    {qv[static_cast<size_t>(2 * fm + i / 2)],
                                     kv[static_cast<size_t>(2 * fn + i % 2)],
                                     x});
            }
      }
      for (size_t i = 0; i < s.size(); ++i)
        b.CreateStore(s[i], b.CreateConstGEP1_64(a.acc, a.sAcc, i));
    });
}

void DeviceCodegen::attentionSoftmax(const AttentionTile &a, Value *j0) {
  const AttentionConfig &c = a.c;
  Value *ninf = llvm::ConstantFP::getInfinity(a.acc, true);
  Value *zero = llvm::ConstantFP::get(a.acc, 0.0);
  bool dbl = a.acc->isDoubleTy();
  // e^x: exp2 (ex2.approx on the GPU) for f32, libdevice's exp for f64.
  auto expOf = [&](Value *x) -> Value * {
    if (dbl)
      return b.CreateUnaryIntrinsic(llvm::Intrinsic::exp, x);
    return b.CreateUnaryIntrinsic(
        llvm::Intrinsic::exp2,
        b.CreateFMul(x, llvm::ConstantFP::get(a.acc, 1.4426950408889634)));
  };
  Value *scale = a.scale;
  if (scale->getType() != a.acc)
    scale = b.CreateFPCast(scale, a.acc);
  Value *two = b.CreateMul(a.quad, b.getInt64(2));
  for (int64_t fm = 0; fm < c.fragsM; ++fm)
    for (int64_t h = 0; h < 2; ++h) {
      Value *i = b.CreateAdd(
          a.i0, b.CreateAdd(a.warpRow,
                            b.CreateAdd(a.group, b.getInt64(16 * fm + 8 * h))));
      Value *tileMax = ninf;
      std::vector<Value *> s;
      for (int64_t fn = 0; fn < a.nS(); ++fn)
        for (int64_t e = 0; e < 2; ++e) {
          Value *j = b.CreateAdd(j0, b.CreateAdd(two, b.getInt64(8 * fn + e)));
          Value *valid = b.CreateICmpSLT(j, a.T);
          if (a.causal)
            valid = b.CreateAnd(valid, b.CreateICmpSLE(j, i));
          Value *x = b.CreateFMul(
              b.CreateLoad(a.acc, b.CreateConstGEP1_64(
                                      a.acc, a.sAcc, a.sAt(fm, fn, 2 * h + e))),
              scale);
          if (a.hasMask) { // read only inside the scores (rows past S too)
            Value *in = b.CreateAnd(valid, b.CreateICmpSLT(i, a.S));
            std::vector<Value *> idx = a.batchIdx;
            idx.push_back(b.CreateSelect(in, i, b.getInt64(0)));
            idx.push_back(b.CreateSelect(in, j, b.getInt64(0)));
            Value *m = valueAt(a.mask, idx, a.maskStrides);
            if (m->getType() != a.acc)
              m = b.CreateFPCast(m, a.acc);
            x = b.CreateFAdd(x, m);
          }
          x = b.CreateSelect(valid, x, ninf);
          s.push_back(x);
          tileMax =
              b.CreateBinaryIntrinsic(llvm::Intrinsic::maxnum, tileMax, x);
        }
      tileMax = b.CreateBinaryIntrinsic(llvm::Intrinsic::maxnum, tileMax,
                                        gpuShuffleXor(tileMax, 1));
      tileMax = b.CreateBinaryIntrinsic(llvm::Intrinsic::maxnum, tileMax,
                                        gpuShuffleXor(tileMax, 2));
      Value *maxSlot = b.CreateConstGEP1_64(a.acc, a.rowMax, 2 * fm + h);
      Value *sumSlot = b.CreateConstGEP1_64(a.acc, a.rowSum, 2 * fm + h);
      Value *old = b.CreateLoad(a.acc, maxSlot);
      Value *now =
          b.CreateBinaryIntrinsic(llvm::Intrinsic::maxnum, old, tileMax);
      // All -inf so far: subtract 0 (e^-inf = 0 and the sum stays 0).
      Value *pivot = b.CreateSelect(b.CreateFCmpOEQ(now, ninf), zero, now);
      Value *alpha = expOf(b.CreateFSub(old, pivot));
      Value *sum = zero;
      for (int64_t fn = 0, n = 0; fn < a.nS(); ++fn)
        for (int64_t e = 0; e < 2; ++e, ++n) {
          Value *p = expOf(b.CreateFSub(s[static_cast<size_t>(n)], pivot));
          b.CreateStore(
              p, b.CreateConstGEP1_64(a.acc, a.sAcc, a.sAt(fm, fn, 2 * h + e)));
          sum = b.CreateFAdd(sum, p);
        }
      b.CreateStore(
          b.CreateFAdd(b.CreateFMul(b.CreateLoad(a.acc, sumSlot), alpha), sum),
          sumSlot);
      b.CreateStore(now, maxSlot);
      for (int64_t fe = 0; fe < a.nO(); ++fe)
        for (int64_t e = 0; e < 2; ++e) {
          Value *slot =
              b.CreateConstGEP1_64(a.acc, a.oAcc, a.oAt(fm, fe, 2 * h + e));
          b.CreateStore(b.CreateFMul(b.CreateLoad(a.acc, slot), alpha), slot);
        }
    }
}

void DeviceCodegen::attentionValues(const AttentionTile &a, Value *j0) {
  const AttentionConfig &c = a.c;
  auto sValue = [&](int64_t fm, int64_t fn, int64_t i) {
    return b.CreateLoad(a.acc,
                        b.CreateConstGEP1_64(a.acc, a.sAcc, a.sAt(fm, fn, i)));
  };
  // The input type's bits of f32 \p x, in the low half of an i32.
  auto bits = [&](Value *x) -> Value * {
    if (a.t == DType::BF16)
      return bf16Bits(x);
    return b.CreateZExt(
        b.CreateBitCast(b.CreateFPTrunc(x, b.getHalfTy()), b.getInt16Ty()),
        i32);
  };
  auto pack = [&](Value *lo, Value *hi) {
    return b.CreateOr(bits(lo), b.CreateShl(bits(hi), 16));
  };
  for (int64_t kg = 0; kg < c.keys; kg += 16)
    ifThen(b.CreateICmpSLT(b.CreateAdd(j0, b.getInt64(kg)), a.keyEnd), [&] {
      if (c.mma) {
        // P's accumulator layout is the A fragment layout: keys kg..kg+15
        // are the n8 fragments kg/8 and kg/8 + 1.
        int64_t f = kg / 8;
        for (int64_t fm = 0; fm < c.fragsM; ++fm) {
          Value *words[] = {pack(sValue(fm, f, 0), sValue(fm, f, 1)),
                            pack(sValue(fm, f, 2), sValue(fm, f, 3)),
                            pack(sValue(fm, f + 1, 0), sValue(fm, f + 1, 1)),
                            pack(sValue(fm, f + 1, 2), sValue(fm, f + 1, 3))};
          for (int64_t w = 0; w < 4; ++w)
            b.CreateStore(words[w],
                          b.CreateConstGEP1_64(i32, a.aFrag, 4 * fm + w));
        }
        // v^T's rows are E columns: the word of keys kg + 2 (lane % 4)
        // (+ 8) of column 8 fe + lane / 4 (vFrag is row lane / 4; the 8
        // rows from 8 fe share one skew).
        for (int64_t fe = 0; fe < a.nO(); ++fe)
          for (int64_t w = 0; w < 2; ++w)
            b.CreateStore(b.CreateAlignedLoad(
                              i32,
                              b.CreateConstGEP1_64(a.elem, a.vFrag,
                                                   c.vRow(8 * fe) + kg + 8 * w),
                              llvm::Align(4)),
                          b.CreateConstGEP1_64(i32, a.bFrag, 2 * fe + w));
        for (int64_t fm = 0; fm < c.fragsM; ++fm)
          for (int64_t fe = 0; fe < a.nO(); ++fe)
            gpuMma16816(a.t == DType::F16 ? 0 : 1,
                        b.CreateConstGEP1_64(i32, a.aFrag, 4 * fm),
                        b.CreateConstGEP1_64(i32, a.bFrag, 2 * fe),
                        b.CreateConstGEP1_64(a.acc, a.oAcc, a.oAt(fm, fe, 0)));
        return;
      }
      // SIMT: key jj's probability of each of the thread's rows comes from
      // the quad lane holding column jj (shuffled), times v's row jj.
      std::vector<Value *> o(static_cast<size_t>(c.fragsM * a.nO() * 4));
      for (size_t i = 0; i < o.size(); ++i)
        o[i] = b.CreateLoad(a.acc, b.CreateConstGEP1_64(a.acc, a.oAcc, i));
      for (int64_t jj = kg; jj < kg + 16; ++jj) {
        Value *src = b.CreateAdd(b.CreateMul(a.group, b.getInt64(4)),
                                 b.getInt64((jj % 8) / 2));
        std::vector<Value *> p;
        for (int64_t fm = 0; fm < c.fragsM; ++fm)
          for (int64_t h = 0; h < 2; ++h)
            p.push_back(gpuShuffleIdx(sValue(fm, jj / 8, 2 * h + jj % 2), src));
        for (int64_t fe = 0; fe < a.nO(); ++fe)
          for (int64_t e = 0; e < 2; ++e) {
            Value *vv = b.CreateLoad(
                a.acc, b.CreateConstGEP1_64(a.acc, a.vFrag,
                                            jj * c.vStride + 8 * fe + e));
            for (int64_t fm = 0; fm < c.fragsM; ++fm)
              for (int64_t h = 0; h < 2; ++h) {
                Value *&x = o[static_cast<size_t>(a.oAt(fm, fe, 2 * h + e))];
                x = b.CreateIntrinsic(
                    llvm::Intrinsic::fmuladd, {a.acc},
                    {p[static_cast<size_t>(2 * fm + h)], vv, x});
              }
          }
      }
      for (size_t i = 0; i < o.size(); ++i)
        b.CreateStore(o[i], b.CreateConstGEP1_64(a.acc, a.oAcc, i));
    });
}

} // namespace tsl::backend
