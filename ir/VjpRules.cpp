// The VJP rules: for each op whose Diff column in ir/Ops.def is Rule, the
// gradients of its operands from the cotangent of its result. The column
// names the op's rule (a VjpRule below, shared by an op family where the
// ops differentiate alike) and kVjpRules, indexed by OpCode, is built from
// it: no dispatch switch, and a Rule naming no rule does not compile.
// Gradients may come out with the result's broadcast shape: the sweep fits
// each to its operand (Builder::fit), summing the axes the forward
// broadcast.
#include "ir/VjpBuilder.h"

#include <cmath>
#include <iterator>
#include <numeric>

namespace {
constexpr double kPi = 3.14159265358979323846;
} // namespace

namespace tsl::vjp {

namespace {

/// One rule application: the op, its cotangent(s) and the gradients.
struct Rule {
  Builder &b;
  const Operation &op;
  const std::vector<ValueId> &cts;
  const std::vector<bool> &want;
  std::vector<ValueId> &grads;
  std::string &message;

  ValueId x(size_t i) const { return op.operands[i]; }
  ValueId r() const { return op.results[0]; }
  ValueId g() const { return cts[0]; }
  DType dt() const { return b.type(op.results[0]).dtype; }
  ValueId c(double v) const { return b.constant(v, dt()); }
  /// Sets operand \p i's gradient when it is wanted; true (a rule's result).
  bool set(size_t i, ValueId v) {
    if (want[i])
      grads[i] = v;
    return true;
  }
  bool refuse(const std::string &why) {
    message = "not supported: gradient of '" + std::string(opName(op.code)) +
              "' " + why;
    return false;
  }
};

/// What a rule reads of the forward besides the cotangent.
enum Reads : uint8_t {
  TypesOnly = 0, ///< only the types of the op's operands and results
  Operands = 1,  ///< the run-time values of its operands
  Results = 2,   ///< the run-time values of its results
  Values = 3,    ///< both
};

/// The VJP rule of an op (or of an op family): what ir/Ops.def's Diff
/// column names for an op whose kind is Rule.
struct VjpRule {
  /// Sets the wanted operands' gradients (Rule::grads); false with
  /// Rule::message set when this use of the op is refused.
  bool (*apply)(Rule &k);
  /// Which run-time values of the op apply reads besides their types
  /// (ruleReadsOperands, ruleReadsResults: a loop's backward saves or
  /// recomputes only what some rule reads).
  Reads reads;
};

/// where(cond, g, 0) with a 0-d zero of g's type.
ValueId maskOr0(Builder &b, ValueId cond, ValueId g) {
  if (g == kFailed)
    return g;
  return b.op(OpCode::Where, {cond, g, b.constant(0, b.type(g).dtype)});
}

// --- Elementwise binary ---------------------------------------------------

bool addRule(Rule &k) {
  k.set(0, k.g());
  return k.set(1, k.g());
}

bool subRule(Rule &k) {
  k.set(0, k.g());
  if (k.want[1])
    k.set(1, k.b.neg(k.g()));
  return true;
}

bool mulRule(Rule &k) {
  Builder &b = k.b;
  ValueId g = k.g(), a = k.x(0), c = k.x(1);
  if (k.want[0])
    k.set(0, b.mul(g, c));
  if (k.want[1])
    k.set(1, b.mul(g, a));
  return true;
}

bool divRule(Rule &k) {
  Builder &b = k.b;
  ValueId g = k.g(), c = k.x(1);
  if (k.want[0])
    k.set(0, b.div(g, c));
  if (k.want[1]) // -g * a / c^2 = -(g * r) / c
    k.set(1, b.neg(b.div(b.mul(g, k.r()), c)));
  return true;
}

bool powRule(Rule &k) {
  Builder &b = k.b;
  ValueId g = k.g(), a = k.x(0), c = k.x(1);
  if (k.want[0]) // g * c * a^(c - 1)
    k.set(0, b.mul(b.mul(g, c), b.op(OpCode::Pow, {a, b.sub(c, k.c(1))})));
  if (k.want[1]) // g * r * log(a)
    k.set(1, b.mul(b.mul(g, k.r()), b.op(OpCode::Log, {a})));
  return true;
}

/// maximum and minimum: the operand for which \p wins (gt, lt) holds
/// against the other takes the gradient; ties split it.
bool extremumRule(Rule &k, OpCode wins) {
  Builder &b = k.b;
  ValueId g = k.g(), a = k.x(0), c = k.x(1);
  ValueId tie = b.op(OpCode::Eq, {a, c});
  ValueId half = maskOr0(b, tie, b.mul(g, k.c(0.5)));
  if (k.want[0])
    k.set(0, b.add(maskOr0(b, b.op(wins, {a, c}), g), half));
  if (k.want[1])
    k.set(1, b.add(maskOr0(b, b.op(wins, {c, a}), g), half));
  return true;
}

bool maximumRule(Rule &k) { return extremumRule(k, OpCode::Gt); }
bool minimumRule(Rule &k) { return extremumRule(k, OpCode::Lt); }

// --- Elementwise unary: d/dx times g --------------------------------------

bool negRule(Rule &k) { return k.set(0, k.b.neg(k.g())); }

bool expRule(Rule &k) { return k.set(0, k.b.mul(k.g(), k.r())); }

bool logRule(Rule &k) { return k.set(0, k.b.div(k.g(), k.x(0))); }

bool sqrtRule(Rule &k) { // g / (2 sqrt(a))
  return k.set(0, k.b.div(k.g(), k.b.mul(k.r(), k.c(2))));
}

bool rsqrtRule(Rule &k) { // -g / 2 * a^-3/2 = -g / 2 * r^3
  Builder &b = k.b;
  ValueId g = k.g(), r = k.r();
  return k.set(0, b.mul(b.mul(g, k.c(-0.5)), b.mul(r, b.mul(r, r))));
}

bool tanhRule(Rule &k) { // g (1 - r^2)
  Builder &b = k.b;
  ValueId g = k.g(), r = k.r();
  return k.set(0, b.mul(g, b.sub(k.c(1), b.mul(r, r))));
}

bool sigmoidRule(Rule &k) { // g r (1 - r)
  Builder &b = k.b;
  ValueId g = k.g(), r = k.r();
  return k.set(0, b.mul(b.mul(g, r), b.sub(k.c(1), r)));
}

/// The mask reads the result (r > 0 exactly where a > 0, NaN neither):
/// what a backward keeps is then relu's output, which its readers (a
/// matmul's, a max-pool's gradient) keep anyway, not its input too.
bool reluRule(Rule &k) {
  Builder &b = k.b;
  return k.set(0, maskOr0(b, b.op(OpCode::Gt, {k.r(), k.c(0)}), k.g()));
}

bool absRule(Rule &k) { // g sign(a), 0 at 0
  Builder &b = k.b;
  ValueId g = k.g(), a = k.x(0);
  return k.set(0, b.sub(maskOr0(b, b.op(OpCode::Gt, {a, k.c(0)}), g),
                        maskOr0(b, b.op(OpCode::Lt, {a, k.c(0)}), g)));
}

bool erfRule(Rule &k) { // g 2/sqrt(pi) e^-a^2
  Builder &b = k.b;
  ValueId g = k.g(), a = k.x(0);
  return k.set(0, b.mul(b.mul(g, k.c(2 / std::sqrt(kPi))),
                        b.op(OpCode::Exp, {b.neg(b.mul(a, a))})));
}

bool geluRule(Rule &k) { // g (Phi(a) + a phi(a))
  Builder &b = k.b;
  ValueId g = k.g(), a = k.x(0);
  ValueId cdf = b.mul(
      k.c(0.5),
      b.add(k.c(1), b.op(OpCode::Erf, {b.mul(a, k.c(1 / std::sqrt(2.0)))})));
  ValueId pdf = b.mul(k.c(1 / std::sqrt(2 * kPi)),
                      b.op(OpCode::Exp, {b.mul(b.mul(a, a), k.c(-0.5))}));
  return k.set(0, b.mul(g, b.add(cdf, b.mul(a, pdf))));
}

bool sinRule(Rule &k) {
  return k.set(0, k.b.mul(k.g(), k.b.op(OpCode::Cos, {k.x(0)})));
}

bool cosRule(Rule &k) {
  return k.set(0, k.b.neg(k.b.mul(k.g(), k.b.op(OpCode::Sin, {k.x(0)}))));
}

/// float to float: the gradient in the operand's type.
bool castRule(Rule &k) {
  return k.set(
      0, k.b.op(OpCode::Cast, {k.g()}, {{"dtype", k.b.type(k.x(0)).dtype}}));
}

/// where(c, a, b): g to a where c holds, to b where it does not.
bool whereRule(Rule &k) {
  if (k.want[1])
    k.set(1, maskOr0(k.b, k.x(0), k.g()));
  if (k.want[2])
    k.set(2, maskOr0(k.b, k.b.op(OpCode::Not, {k.x(0)}), k.g()));
  return true;
}

// --- Reductions -----------------------------------------------------------

/// What a reduction's rule starts from.
struct Reduced {
  TensorType in;             ///< the operand's type
  std::vector<int64_t> axes; ///< the reduced axes (all when empty)
  std::vector<SymExpr> kept; ///< in.dims with the reduced axes 1
  ValueId gk;                ///< g reshaped to kept
};

Reduced reduced(Rule &k) {
  Reduced d{k.b.type(k.x(0)), k.op.intsAttr("axes"), {}, kFailed};
  d.kept = Builder::keptDims(d.in.dims, d.axes);
  d.gk = k.b.reshape(k.g(), d.kept);
  return d;
}

bool reduceSumRule(Rule &k) {
  Reduced d = reduced(k);
  return k.set(0, k.b.op(OpCode::Expand, {d.gk}, {{"shape", d.in.dims}}));
}

bool reduceMeanRule(Rule &k) {
  Builder &b = k.b;
  Reduced d = reduced(k);
  SymExpr count(1);
  for (size_t i = 0; i < d.in.rank(); ++i)
    if (!(d.kept[i] == d.in.dims[i]) || d.in.dims[i].isConst(1))
      count = count * d.in.dims[i];
  // Divided before it is broadcast: the quotient is one value per kept
  // element, not a tensor of the input's size for the plan to store.
  ValueId q = b.div(d.gk, b.size(count, d.in.dtype));
  return k.set(0, b.op(OpCode::Expand, {q}, {{"shape", d.in.dims}}));
}

/// reduce_max, reduce_min: the positions equal to the result share g
/// evenly (torch's amax/amin).
bool reduceExtremumRule(Rule &k) {
  Builder &b = k.b;
  Reduced d = reduced(k);
  ValueId mask =
      b.op(OpCode::Cast, {b.op(OpCode::Eq, {k.x(0), b.reshape(k.r(), d.kept)})},
           {{"dtype", d.in.dtype}});
  ValueId count =
      b.op(OpCode::ReduceSum, {mask}, {{"axes", d.axes}, {"keepdim", true}});
  return k.set(0, b.mul(mask, b.div(d.gk, count)));
}

// --- Matmul ---------------------------------------------------------------

/// The axes of \p rank with the last two swapped.
std::vector<int64_t> swapLast(size_t rank) {
  std::vector<int64_t> p(rank);
  std::iota(p.begin(), p.end(), 0);
  std::swap(p[rank - 1], p[rank - 2]);
  return p;
}

bool matmulRule(Rule &k) {
  Builder &b = k.b;
  TensorType ta = b.type(k.x(0)), tb = b.type(k.x(1));
  std::vector<SymExpr> gd = b.type(k.r()).dims, ad = ta.dims, bd = tb.dims;
  // 1-d operands as matrices: a [K] as [1, K], b [K] as [K, 1].
  if (ta.rank() == 1) {
    ad.insert(ad.begin(), SymExpr(1));
    gd.insert(gd.end() - (tb.rank() == 1 ? 0 : 1), SymExpr(1));
  }
  if (tb.rank() == 1) {
    bd.push_back(SymExpr(1));
    gd.push_back(SymExpr(1));
  }
  ValueId a2 = b.reshape(k.x(0), ad), b2 = b.reshape(k.x(1), bd);
  ValueId g2 = b.reshape(k.g(), gd);
  if (k.want[0]) {
    ValueId bt = b.op(OpCode::Permute, {b2}, {{"perm", swapLast(bd.size())}});
    k.set(0, b.reshape(b.fit(b.op(OpCode::Matmul, {g2, bt}), ad), ta.dims));
  }
  if (k.want[1]) {
    if (bd.size() == 2 && ad.size() > 2) {
      // A matrix under a batched left operand (a linear layer): the sum of
      // a^T @ g over the batch is one product over all the batch's rows,
      // [rows, K]^T @ [rows, N], instead of one small product per batch
      // entry and a sum of their results.
      SymExpr rows(1);
      for (size_t i = 0; i + 1 < ad.size(); ++i)
        rows = rows * ad[i];
      ValueId af = b.reshape(a2, {rows, ad.back()});
      ValueId gf = b.reshape(g2, {rows, gd.back()});
      ValueId at = b.op(OpCode::Permute, {af}, {{"perm", swapLast(2)}});
      k.set(1, b.reshape(b.op(OpCode::Matmul, {at, gf}), tb.dims));
    } else {
      ValueId at = b.op(OpCode::Permute, {a2}, {{"perm", swapLast(ad.size())}});
      k.set(1, b.reshape(b.fit(b.op(OpCode::Matmul, {at, g2}), bd), tb.dims));
    }
  }
  return true;
}

// --- Layout ---------------------------------------------------------------

/// x's gradient when the result took x's elements at \p idx along \p axis:
/// the cotangent scatter-added into zeros of x's type.
ValueId scatterBack(Builder &b, const TensorType &x, ValueId idx, ValueId g,
                    int64_t axis) {
  return b.op(OpCode::Scatter, {b.full(x.dims, 0, x.dtype), idx, g},
              {{"axis", axis}, {"add", true}});
}

/// The gradient of a slice: \p g padded with zeros around the block on the
/// axes of step 1, and index-added at start + i * step on the others.
ValueId sliceBack(Builder &b, const std::vector<SymExpr> &starts,
                  const std::vector<SymExpr> &sizes, std::vector<int64_t> steps,
                  const TensorType &in, ValueId g) {
  steps.resize(in.rank(), 1);
  std::vector<SymExpr> lo, hi;
  for (size_t i = 0; i < in.rank(); ++i) {
    bool unit = steps[i] == 1;
    lo.push_back(unit ? starts[i] : SymExpr(0));
    hi.push_back(unit ? in.dims[i] - starts[i] - sizes[i] : SymExpr(0));
  }
  bool padded = false;
  for (size_t i = 0; i < in.rank(); ++i)
    padded = padded || !lo[i].isConst(0) || !hi[i].isConst(0);
  ValueId cur =
      !padded ? g
              : b.op(OpCode::Pad, {g},
                     {{"lo", lo}, {"hi", hi}, {"value", Number::ofFloat(0)}});
  for (size_t i = 0; i < in.rank() && cur != kFailed; ++i) {
    if (steps[i] == 1)
      continue;
    ValueId at =
        b.add(b.mul(b.op(OpCode::Arange, {},
                         {{"n", sizes[i]}, {"dtype", DType::I64}}),
                    b.constant(static_cast<double>(steps[i]), DType::I64)),
              b.size(starts[i], DType::I64));
    std::vector<SymExpr> full = b.type(cur).dims;
    full[i] = in.dims[i];
    cur = b.op(OpCode::IndexAdd, {b.full(full, 0, in.dtype), at, cur},
               {{"axis", static_cast<int64_t>(i)}});
  }
  return b.reshape(cur, in.dims);
}

bool reshapeRule(Rule &k) {
  return k.set(0, k.b.reshape(k.g(), k.b.type(k.x(0)).dims));
}

/// g as it is: the sweep fits it to the operand (summing the broadcast axes).
bool expandRule(Rule &k) { return k.set(0, k.g()); }

bool permuteRule(Rule &k) {
  const std::vector<int64_t> &perm = k.op.intsAttr("perm");
  std::vector<int64_t> inv(perm.size());
  for (size_t i = 0; i < perm.size(); ++i)
    inv[perm[i]] = static_cast<int64_t>(i);
  return k.set(0, k.b.op(OpCode::Permute, {k.g()}, {{"perm", inv}}));
}

/// Each operand's block of g.
bool concatRule(Rule &k) {
  Builder &b = k.b;
  int64_t axis = k.op.intAttr("axis");
  SymExpr offset(0);
  for (size_t i = 0; i < k.op.operands.size(); ++i) {
    TensorType t = b.type(k.x(i));
    std::vector<SymExpr> starts(t.rank(), SymExpr(0));
    starts[axis] = offset;
    offset = offset + t.dims[axis];
    if (k.want[i])
      k.set(i, b.op(OpCode::Slice, {k.g()},
                    {{"starts", starts}, {"sizes", t.dims}}));
  }
  return true;
}

bool sliceRule(Rule &k) {
  return k.set(0,
               sliceBack(k.b, k.op.exprsAttr("starts"), k.op.exprsAttr("sizes"),
                         k.op.intsAttr("steps"), k.b.type(k.x(0)), k.g()));
}

bool padRule(Rule &k) {
  return k.set(0, k.b.op(OpCode::Slice, {k.g()},
                         {{"starts", k.op.exprsAttr("lo")},
                          {"sizes", k.b.type(k.x(0)).dims}}));
}

/// x: g with the written block zeroed; v: that block of g.
bool updateSliceRule(Rule &k) {
  Builder &b = k.b;
  ValueId g = k.g();
  TensorType v = b.type(k.x(1));
  const std::vector<SymExpr> &starts = k.op.exprsAttr("starts");
  if (k.want[0])
    k.set(0, b.op(OpCode::UpdateSlice, {g, b.full(v.dims, 0, v.dtype)},
                  {{"starts", starts}}));
  if (k.want[1])
    k.set(1, b.op(OpCode::Slice, {g}, {{"starts", starts}, {"sizes", v.dims}}));
  return true;
}

// --- Indexing, scans, sorting and library ops ----------------------------

/// The gradient of masked_select(x, mask) from \p g [u]: g's elements
/// scattered back, in order, to where the mask is true, zeros elsewhere (u
/// is the mask's count: masked_scatter's size check holds).
ValueId maskedSelectBack(Builder &b, const TensorType &x, ValueId mask,
                         ValueId g) {
  return b.op(OpCode::MaskedScatter, {b.full(x.dims, 0, x.dtype), mask, g});
}

/// masked_scatter(x, mask, source): x's gradient is g where the mask is
/// false; source's the masked elements of g in order (masked_select),
/// padded with zeros to source's size (source elements past the mask's
/// count were not read) and reshaped to it.
bool maskedScatterRule(Rule &k) {
  Builder &b = k.b;
  ValueId g = k.g(), mask = k.x(1);
  if (k.want[0])
    k.set(0, b.op(OpCode::Where, {mask, k.c(0), g}));
  if (!k.want[2])
    return true;
  TensorType src = b.type(k.x(2));
  ValueId picked = b.op(OpCode::MaskedSelect, {g, mask});
  ValueId padded =
      b.op(OpCode::Concat, {picked, b.full({src.numel()}, 0, src.dtype)},
           {{"axis", int64_t{0}}});
  ValueId head = b.op(OpCode::Slice, {padded},
                      {{"starts", std::vector<SymExpr>{SymExpr(0)}},
                       {"sizes", std::vector<SymExpr>{src.numel()}}});
  return k.set(2, b.reshape(head, src.dims));
}

/// \p w [O, C, KH, KW] turned into the weights of conv2d's transpose: its
/// spatial axes reversed and its channel axes swapped, [C, O, KH, KW].
ValueId flippedWeights(Builder &b, ValueId w) {
  TensorType t = b.type(w);
  for (int64_t axis : {2, 3}) {
    SymExpr k = t.dims[axis];
    ValueId rev =
        b.sub(b.size(k - SymExpr(1), DType::I64),
              b.op(OpCode::Arange, {}, {{"n", k}, {"dtype", DType::I64}}));
    w = b.op(OpCode::IndexSelect, {w, rev}, {{"axis", axis}});
  }
  return b.op(OpCode::Permute, {w},
              {{"perm", std::vector<int64_t>{1, 0, 2, 3}}});
}

/// x's gradient of a stride-1 conv2d with padding \p pad: the full
/// correlation of g with the flipped weights. When 2p < K on both axes (and
/// K is a constant) that is conv2d(g, flipped, padding = K - 1 - p), whose
/// result is x's size; otherwise g is padded by K - 1 - p below and K - p
/// above (one more row and column, so that H = 0 still leaves a window) and
/// the extra output sliced off.
ValueId convInputGrad(Builder &b, ValueId g, ValueId w, const TensorType &x,
                      const std::vector<int64_t> &pad) {
  TensorType wt = b.type(w);
  std::vector<int64_t> same(2);
  bool direct = true;
  for (int i = 0; i < 2; ++i) {
    const SymExpr &k = wt.dims[2 + i];
    direct = direct && k.isConst() && 2 * pad[i] < k.constValue();
    same[i] = k.isConst() ? k.constValue() - 1 - pad[i] : 0;
  }
  ValueId flipped = flippedWeights(b, w);
  if (direct)
    return b.op(OpCode::Conv2d, {g, flipped},
                {{"stride", std::vector<int64_t>{1, 1}}, {"padding", same}});
  std::vector<SymExpr> lo(4, SymExpr(0)), hi(4, SymExpr(0));
  for (int i = 0; i < 2; ++i) {
    lo[2 + i] = wt.dims[2 + i] - SymExpr(1 + pad[i]);
    hi[2 + i] = wt.dims[2 + i] - SymExpr(pad[i]);
  }
  ValueId gp = b.op(OpCode::Pad, {g},
                    {{"lo", lo}, {"hi", hi}, {"value", Number::ofFloat(0)}});
  ValueId full = b.op(OpCode::Conv2d, {gp, flipped},
                      {{"stride", std::vector<int64_t>{1, 1}},
                       {"padding", std::vector<int64_t>{0, 0}}});
  return b.op(
      OpCode::Slice, {full},
      {{"starts", std::vector<SymExpr>(4, SymExpr(0))}, {"sizes", x.dims}});
}

/// conv2d (x [N, C, H, W], w [O, C, KH, KW]; padding p < K for x's
/// gradient): x's gradient by convInputGrad (a stride s first takes g back
/// through the strided slice that the stride-1 convolution is read at), w's by
/// conv2d_weight_grad (a GEMM of g with x's windows over the batch, strides
/// read in place), the bias's g summed over N, H and W.
bool convRule(Rule &k) {
  Builder &b = k.b;
  const std::vector<int64_t> &stride = k.op.intsAttr("stride");
  const std::vector<int64_t> &pad = k.op.intsAttr("padding");
  if (stride.size() != 2 || pad.size() != 2)
    return k.refuse("(malformed attributes)");
  TensorType x = b.type(k.x(0)), w = b.type(k.x(1));
  // x's gradient as a convolution needs p < K; w's takes any padding.
  for (int i = 0; i < 2 && k.want[0]; ++i)
    if (b.env.prove(SymCond::ge(w.dims[2 + i], SymExpr(pad[i] + 1))) !=
        Truth::True)
      return k.refuse("with padding not below the kernel size (for the "
                      "input's gradient)");
  if (k.want[0]) {
    ValueId g = k.g();
    if (stride[0] != 1 || stride[1] != 1) {
      TensorType z = b.type(g);
      for (int i = 0; i < 2; ++i)
        z.dims[2 + i] = x.dims[2 + i] + SymExpr(2 * pad[i]) - w.dims[2 + i] + 1;
      g = sliceBack(b, std::vector<SymExpr>(4, SymExpr(0)), b.type(g).dims,
                    {1, 1, stride[0], stride[1]}, z, g);
    }
    k.set(0, convInputGrad(b, g, k.x(1), x, pad));
  }
  if (k.want[1])
    k.set(1, b.op(OpCode::Conv2dWeightGrad, {k.x(0), k.g()},
                  {{"kernel", std::vector<SymExpr>{w.dims[2], w.dims[3]}},
                   {"stride", stride},
                   {"padding", pad}}));
  if (k.op.operands.size() > 2 && k.want[2])
    k.set(2,
          b.op(OpCode::ReduceSum, {k.g()},
               {{"axes", std::vector<int64_t>{0, 2, 3}}, {"keepdim", false}}));
  return true;
}

/// max_pool2d: each window's g goes to the element the forward took
/// (max_pool2d_grad recomputes it from x).
bool maxPool2dRule(Rule &k) {
  return k.set(0, k.b.op(OpCode::MaxPool2dGrad, {k.x(0), k.g()},
                         {{"kernel", k.op.intsAttr("kernel")},
                          {"stride", k.op.intsAttr("stride")},
                          {"padding", k.op.intsAttr("padding")}}));
}

bool maskedSelectRule(Rule &k) {
  return k.set(0, maskedSelectBack(k.b, k.b.type(k.x(0)), k.x(1), k.g()));
}

/// index_select: g's slices added back at the index.
bool indexSelectRule(Rule &k) {
  TensorType in = k.b.type(k.x(0));
  return k.set(0, k.b.op(OpCode::IndexAdd,
                         {k.b.full(in.dims, 0, in.dtype), k.x(1), k.g()},
                         {{"axis", k.op.intAttr("axis")}}));
}

/// index_add: x passes g through; source reads it at the index.
bool indexAddRule(Rule &k) {
  k.set(0, k.g());
  if (k.want[2])
    k.set(2, k.b.op(OpCode::IndexSelect, {k.g(), k.x(1)},
                    {{"axis", k.op.intAttr("axis")}}));
  return true;
}

bool gatherRule(Rule &k) {
  return k.set(0, scatterBack(k.b, k.b.type(k.x(0)), k.x(1), k.g(),
                              k.op.intAttr("axis")));
}

/// scatter: with add, x passes g through; overwritten, the written
/// positions of x get none. src takes g where it was written (for duplicate
/// positions of an overwrite, every duplicate: as torch's).
bool scatterRule(Rule &k) {
  Builder &b = k.b;
  ValueId g = k.g();
  int64_t axis = k.op.intAttr("axis");
  ValueId idx = k.x(1);
  TensorType src = b.type(k.x(2));
  if (k.want[0])
    k.set(0,
          k.op.boolAttr("add")
              ? g
              : b.op(OpCode::Scatter, {g, idx, b.full(src.dims, 0, src.dtype)},
                     {{"axis", axis}, {"add", false}}));
  if (k.want[2])
    k.set(2, b.op(OpCode::Gather, {g, idx}, {{"axis", axis}}));
  return true;
}

/// topk and sort: g scattered back along \p axis to where each value came
/// from (the index result).
bool sortedBack(Rule &k, int64_t axis) {
  return k.set(
      0, scatterBack(k.b, k.b.type(k.x(0)), k.op.results[1], k.g(), axis));
}

bool topkRule(Rule &k) {
  return sortedBack(k, static_cast<int64_t>(k.b.type(k.x(0)).rank()) - 1);
}

bool sortRule(Rule &k) { return sortedBack(k, k.op.intAttr("axis")); }

/// cumsum: the running sum the other way.
bool cumsumRule(Rule &k) {
  AttrMap attrs{{"axis", k.op.intAttr("axis")}};
  if (!k.op.boolAttr("reverse"))
    attrs["reverse"] = true;
  return k.set(0, k.b.op(OpCode::Cumsum, {k.g()}, std::move(attrs)));
}

/// loop and end_loop: never applied. Sweep::run reverses a loop ...
/// end_loop as a whole (ir/VjpLoops.cpp) and passes over an unmatched
/// marker (a grad inside a loop body: its carried values get no cotangent).
bool loopMarkerRule(Rule &k) {
  return k.refuse("(a loop is reversed as a whole)");
}

// --- The rules ir/Ops.def names --------------------------------------------

constexpr VjpRule vjpAdd{addRule, TypesOnly};
constexpr VjpRule vjpSub{subRule, TypesOnly};
constexpr VjpRule vjpMul{mulRule, Operands};
constexpr VjpRule vjpDiv{divRule, Values};
constexpr VjpRule vjpPow{powRule, Values};
constexpr VjpRule vjpMaximum{maximumRule, Operands};
constexpr VjpRule vjpMinimum{minimumRule, Operands};
constexpr VjpRule vjpNeg{negRule, TypesOnly};
constexpr VjpRule vjpExp{expRule, Results};
constexpr VjpRule vjpLog{logRule, Operands};
constexpr VjpRule vjpSqrt{sqrtRule, Results};
constexpr VjpRule vjpRsqrt{rsqrtRule, Results};
constexpr VjpRule vjpTanh{tanhRule, Results};
constexpr VjpRule vjpSigmoid{sigmoidRule, Results};
constexpr VjpRule vjpRelu{reluRule, Results};
constexpr VjpRule vjpAbs{absRule, Operands};
constexpr VjpRule vjpErf{erfRule, Operands};
constexpr VjpRule vjpGelu{geluRule, Operands};
constexpr VjpRule vjpSin{sinRule, Operands};
constexpr VjpRule vjpCos{cosRule, Operands};
constexpr VjpRule vjpCast{castRule, TypesOnly};
constexpr VjpRule vjpWhere{whereRule, Operands};
constexpr VjpRule vjpReduceSum{reduceSumRule, TypesOnly};
constexpr VjpRule vjpReduceMean{reduceMeanRule, Values};
constexpr VjpRule vjpReduceExtremum{reduceExtremumRule, Values};
constexpr VjpRule vjpMatmul{matmulRule, Operands};
constexpr VjpRule vjpReshape{reshapeRule, TypesOnly};
constexpr VjpRule vjpExpand{expandRule, TypesOnly};
constexpr VjpRule vjpPermute{permuteRule, TypesOnly};
constexpr VjpRule vjpConcat{concatRule, TypesOnly};
constexpr VjpRule vjpSlice{sliceRule, TypesOnly};
constexpr VjpRule vjpPad{padRule, TypesOnly};
constexpr VjpRule vjpUpdateSlice{updateSliceRule, TypesOnly};
constexpr VjpRule vjpMaskedSelect{maskedSelectRule, Values};
constexpr VjpRule vjpMaskedScatter{maskedScatterRule, Values};
constexpr VjpRule vjpConv2d{convRule, Operands};
constexpr VjpRule vjpMaxPool2d{maxPool2dRule, Operands};
constexpr VjpRule vjpIndexSelect{indexSelectRule, Values};
constexpr VjpRule vjpIndexAdd{indexAddRule, Values};
constexpr VjpRule vjpGather{gatherRule, Values};
constexpr VjpRule vjpScatter{scatterRule, Values};
constexpr VjpRule vjpTopk{topkRule, Values};
constexpr VjpRule vjpSort{sortRule, Values};
constexpr VjpRule vjpCumsum{cumsumRule, TypesOnly};
constexpr VjpRule vjpLoopMarker{loopMarkerRule, Values};

// --- The rule table -------------------------------------------------------

#define TSL_VJP_Rule(How) &How
#define TSL_VJP_NoGradient(How) nullptr
#define TSL_VJP_NotDifferentiable(How) nullptr
#define TSL_VJP_NotSupported(How) nullptr

/// The VJP rule of each op, indexed by OpCode: the one its Diff column
/// names, null for an op whose kind is not Rule.
constexpr const VjpRule *kVjpRules[] = {
#define TSL_OP(Id, Name, MinOps, MaxOps, Results, Attrs, Category, Operands,   \
               Same, Result, Effects, Builtin, Diff, How, Doc)                 \
  TSL_VJP_##Diff(How),
#include "ir/Ops.def"
};

#undef TSL_VJP_Rule
#undef TSL_VJP_NoGradient
#undef TSL_VJP_NotDifferentiable
#undef TSL_VJP_NotSupported

static_assert(std::size(kVjpRules) == kNumOps, "one rule entry per op");

} // namespace

bool applyRule(Builder &b, const Operation &op, const std::vector<ValueId> &cts,
               const std::vector<bool> &want, std::vector<ValueId> &grads,
               std::string &message) {
  grads.assign(op.operands.size(), kFailed);
  Rule k{b, op, cts, want, grads, message};
  if (cts.empty() || cts[0] == kFailed)
    return true; // only an index result has a cotangent: none flows back
  const VjpRule *rule = kVjpRules[static_cast<size_t>(op.code)];
  return rule ? rule->apply(k) : k.refuse("(no rule)");
}

bool ruleReadsOperands(const Operation &op) {
  const VjpRule *rule = kVjpRules[static_cast<size_t>(op.code)];
  return rule && (rule->reads & Operands);
}

bool ruleReadsResults(const Operation &op) {
  const VjpRule *rule = kVjpRules[static_cast<size_t>(op.code)];
  return rule && (rule->reads & Results);
}

} // namespace tsl::vjp
