// The factor-reductions pass (ir/FactorReductions.h). Types are computed
// here by structural broadcasting (a dim equal to the other, or 1): the pass
// runs on IR text too, with no shape environment, and anything that needs a
// size question answered is left as it is.
#include "ir/FactorReductions.h"

#include "ir/Passes.h"

#include <algorithm>
#include <optional>
#include <unordered_map>

namespace tsl {

namespace {

/// The producer of \p v in fn.ops (the list as the pass found it), or null.
const Operation *producerOf(const Function &fn,
                            const std::vector<int64_t> &producer, ValueId v) {
  int64_t p = v < producer.size() ? producer[v] : -1;
  return p >= 0 ? &fn.ops[p] : nullptr;
}

/// Which axes of a rank-\p rank operand \p axes reduce (all when empty);
/// nullopt for an axis out of range.
std::optional<std::vector<bool>> reducedMask(size_t rank,
                                             const std::vector<int64_t> &axes) {
  std::vector<bool> reduced(rank, axes.empty());
  for (int64_t a : axes) {
    int64_t axis = a < 0 ? a + static_cast<int64_t>(rank) : a;
    if (axis < 0 || axis >= static_cast<int64_t>(rank))
      return std::nullopt;
    reduced[axis] = true;
  }
  return reduced;
}

/// \p dims with the \p reduced axes 1 (a keepdim reduction's result).
std::vector<SymExpr> keptOf(std::vector<SymExpr> dims,
                            const std::vector<bool> &reduced) {
  for (size_t i = 0; i < dims.size(); ++i)
    if (reduced[i])
      dims[i] = SymExpr(1);
  return dims;
}

/// Splits \p v's tree of mul and neg ops into \p leaves (flipping
/// \p negated per neg); false when it is too deep or has too many leaves.
bool flattenProduct(const Function &fn, const std::vector<int64_t> &producer,
                    ValueId v, int depth, std::vector<ValueId> &leaves,
                    bool &negated) {
  constexpr int kMaxDepth = 8;
  constexpr size_t kMaxLeaves = 12;
  if (depth > kMaxDepth || leaves.size() > kMaxLeaves)
    return false;
  const Operation *op = producerOf(fn, producer, v);
  DType t = fn.type(v).dtype;
  if (op && op->code == OpCode::Mul && fn.type(op->operands[0]).dtype == t &&
      fn.type(op->operands[1]).dtype == t)
    return flattenProduct(fn, producer, op->operands[0], depth + 1, leaves,
                          negated) &&
           flattenProduct(fn, producer, op->operands[1], depth + 1, leaves,
                          negated);
  if (op && op->code == OpCode::Neg) {
    negated = !negated;
    return flattenProduct(fn, producer, op->operands[0], depth + 1, leaves,
                          negated);
  }
  leaves.push_back(v);
  return true;
}

/// Whether \p v is constant along the \p reduced axes (aligned to the
/// right); \p v becomes the value to multiply by (an expand's source).
bool constantAlong(const Function &fn, const std::vector<int64_t> &producer,
                   ValueId &v, const std::vector<bool> &reduced) {
  for (int hop = 0; hop < 2; ++hop) {
    const std::vector<SymExpr> &dims = fn.type(v).dims;
    if (dims.size() > reduced.size())
      return false;
    bool ones = true;
    size_t shift = reduced.size() - dims.size();
    for (size_t i = 0; i < dims.size(); ++i)
      ones = ones && (!reduced[shift + i] || dims[i].isConst(1));
    if (ones)
      return true;
    const Operation *p = producerOf(fn, producer, v);
    if (!p || p->code != OpCode::Expand)
      return false;
    v = p->operands[0];
  }
  return false;
}

/// Ops the pass creates or may reuse, per open loop scope (an outer scope's
/// ops dominate the inner ones').
class OpAppender {
public:
  OpAppender(Function &fn, std::vector<Operation> &out) : fn_(fn), out_(out) {}

  void enterScope() { scopes_.emplace_back(); }
  void leaveScope() { scopes_.pop_back(); }
  /// Makes out_[i] (a pure op with one result) reusable.
  void remember(size_t i) { scopes_.back().push_back(i); }

  /// The result of op \p code on \p operands with \p attrs, of type
  /// \p type: an equal op in scope, or a new one appended.
  ValueId op(OpCode code, std::vector<ValueId> operands, AttrMap attrs,
             TensorType type, const Location &loc) {
    for (const std::vector<size_t> &scope : scopes_)
      for (size_t i : scope) {
        const Operation &o = out_[i];
        if (o.code == code && o.operands == operands &&
            sameAttrs(o.attrs, attrs) && fn_.type(o.results[0]) == type)
          return o.results[0];
      }
    ValueId r = fn_.addValue(std::move(type));
    out_.push_back(
        Operation{code, std::move(operands), {r}, std::move(attrs), loc});
    remember(out_.size() - 1);
    return r;
  }

private:
  static bool sameAttrs(const AttrMap &a, const AttrMap &b) {
    if (a.size() != b.size())
      return false;
    for (auto i = a.begin(), j = b.begin(); i != a.end(); ++i, ++j)
      if (i->first != j->first || !(i->second == j->second))
        return false;
    return true;
  }

  Function &fn_;
  std::vector<Operation> &out_;
  std::vector<std::vector<size_t>> scopes_;
};

bool reusable(OpCode code) {
  return code == OpCode::Mul || code == OpCode::Neg ||
         code == OpCode::ReduceSum || code == OpCode::ReduceMean ||
         code == OpCode::Reshape;
}

/// One product of a reduction's operand: the factors that vary along the
/// reduced axes (sorted), the ones that do not, and its sign.
struct Term {
  std::vector<ValueId> rest, constant;
  bool negated = false;
};

/// \p v as a Term over the \p reduced axes of \p in, or nullopt when the
/// product is too deep or its types need a size question.
std::optional<Term> termOf(const Function &fn, ValueId v, const TensorType &in,
                           const std::vector<bool> &reduced,
                           const std::vector<int64_t> &producer) {
  Term t;
  std::vector<ValueId> leaves;
  if (!flattenProduct(fn, producer, v, 0, leaves, t.negated))
    return std::nullopt;
  for (ValueId leaf : leaves) {
    ValueId c = leaf;
    (constantAlong(fn, producer, c, reduced) ? t.constant : t.rest)
        .push_back(c);
  }
  if (t.rest.empty())
    return std::nullopt;
  std::sort(t.rest.begin(), t.rest.end());
  std::sort(t.constant.begin(), t.constant.end());
  std::vector<SymExpr> restDims = fn.type(t.rest[0]).dims;
  for (size_t i = 1; i < t.rest.size(); ++i) {
    auto d = broadcastDims(restDims, fn.type(t.rest[i]).dims);
    if (!d)
      return std::nullopt;
    restDims = *d;
  }
  if (restDims != in.dims)
    return std::nullopt;
  std::vector<SymExpr> kept = keptOf(in.dims, reduced);
  for (ValueId c : t.constant) {
    auto d = broadcastDims(kept, fn.type(c).dims);
    if (!d || *d != kept)
      return std::nullopt;
  }
  return t;
}

/// Splits \p v into the terms of a tree of add, sub and neg ops of \p v's
/// type (signs folded into each term's `negated`); false past kMaxTerms.
bool sumTerms(const Function &fn, ValueId v, bool negated,
              const std::vector<int64_t> &producer,
              std::vector<std::pair<ValueId, bool>> &terms) {
  constexpr size_t kMaxTerms = 8;
  if (terms.size() >= kMaxTerms)
    return false;
  const Operation *op = producerOf(fn, producer, v);
  auto sameType = [&](ValueId o) { return fn.type(o) == fn.type(v); };
  if (op && (op->code == OpCode::Add || op->code == OpCode::Sub) &&
      sameType(op->operands[0]) && sameType(op->operands[1]))
    return sumTerms(fn, op->operands[0], negated, producer, terms) &&
           sumTerms(fn, op->operands[1],
                    op->code == OpCode::Sub ? !negated : negated, producer,
                    terms);
  if (op && op->code == OpCode::Neg)
    return sumTerms(fn, op->operands[0], !negated, producer, terms);
  terms.push_back({v, negated});
  return true;
}

/// The replacement of reduction \p red (\p merged: reductions were folded
/// into it, so it must be emitted even with nothing to take out), or
/// nullopt to leave it (nothing to take out, or the types need a size
/// question). A sum of products is distributed when every product reduces
/// one varying factor: the reductions are then of stored values (often
/// shared), and the sum's own buffer is no longer read by a reduction (a
/// batch norm's backward).
std::optional<ValueId> rewrite(Function &fn, const Operation &red, bool merged,
                               const std::vector<int64_t> &producer,
                               OpAppender &emit) {
  ValueId x = red.operands[0];
  const TensorType in = fn.type(x);
  std::optional<std::vector<bool>> reduced =
      reducedMask(in.rank(), red.intsAttr("axes"));
  if (!reduced)
    return std::nullopt;
  std::vector<Term> terms;
  std::vector<std::pair<ValueId, bool>> summands;
  if (isFloat(in.dtype) && sumTerms(fn, x, false, producer, summands))
    for (auto [v, negated] : summands) {
      std::optional<Term> t = termOf(fn, v, in, *reduced, producer);
      if (!t) {
        terms.clear();
        break;
      }
      t->negated = t->negated != negated;
      terms.push_back(std::move(*t));
    }
  bool worth =
      terms.size() == 1
          ? !terms[0].constant.empty()
          : std::all_of(terms.begin(), terms.end(),
                        [](const Term &t) { return t.rest.size() == 1; }) &&
                !terms.empty();
  if (!worth) {
    if (!merged)
      return std::nullopt;
    terms = {Term{{x}, {}, false}}; // the folded reduction, as it is
  }
  const TensorType kept{in.dtype, keptOf(in.dims, *reduced)};
  const Location &loc = red.loc;
  AttrMap attrs = red.attrs;
  attrs["keepdim"] = true;
  std::optional<ValueId> out;
  for (const Term &t : terms) {
    ValueId product = t.rest[0];
    for (size_t i = 1; i < t.rest.size(); ++i)
      product = emit.op(OpCode::Mul, {product, t.rest[i]}, {}, in, loc);
    ValueId r = emit.op(red.code, {product}, attrs, kept, loc);
    for (ValueId c : t.constant)
      r = emit.op(OpCode::Mul, {r, c}, {}, kept, loc);
    if (!out)
      out = t.negated ? emit.op(OpCode::Neg, {r}, {}, kept, loc) : r;
    else
      out = emit.op(t.negated ? OpCode::Sub : OpCode::Add, {*out, r}, {}, kept,
                    loc);
  }
  const TensorType want = fn.type(red.results[0]);
  if (want.dims != kept.dims)
    out = emit.op(OpCode::Reshape, {*out}, {{"shape", want.dims}}, want, loc);
  return out;
}

/// Reduction \p red with the reductions of the same kind it reads through
/// (each read by nothing else, \p uses) folded in: reduce_sum(reduce_sum(x,
/// A), B) is reduce_sum(x, A + B) (a mean of means over disjoint axes is the
/// mean over both), with keepdim so that the caller reshapes to \p red's
/// type. Sets \p merged when any was folded.
Operation folded(const Function &fn, const Operation &red,
                 const std::vector<int64_t> &producer,
                 const std::vector<uint32_t> &uses, bool &merged) {
  Operation out = red;
  merged = false;
  for (;;) {
    ValueId x = out.operands[0];
    int64_t p = x < producer.size() ? producer[x] : -1;
    if (p < 0 || fn.ops[p].code != red.code || uses[x] != 1)
      return out;
    const Operation &inner = fn.ops[p];
    size_t rank = fn.type(inner.operands[0]).rank();
    std::optional<std::vector<bool>> innerMask =
        reducedMask(rank, inner.intsAttr("axes"));
    if (!innerMask)
      return out;
    std::vector<bool> &reduced = *innerMask;
    // The inner result's axis j is x's axis kept[j] (all of them with
    // keepdim).
    std::vector<size_t> kept;
    for (size_t i = 0; i < rank; ++i)
      if (inner.boolAttr("keepdim") || !reduced[i])
        kept.push_back(i);
    size_t outerRank = fn.type(x).rank();
    std::vector<int64_t> outerAxes = out.intsAttr("axes");
    if (outerAxes.empty())
      for (size_t j = 0; j < outerRank; ++j)
        outerAxes.push_back(static_cast<int64_t>(j));
    for (int64_t a : outerAxes) {
      int64_t j = a < 0 ? a + static_cast<int64_t>(outerRank) : a;
      if (j < 0 || static_cast<size_t>(j) >= kept.size())
        return out;
      reduced[kept[j]] = true;
    }
    std::vector<int64_t> axes;
    for (size_t i = 0; i < rank; ++i)
      if (reduced[i])
        axes.push_back(static_cast<int64_t>(i));
    out.operands = {inner.operands[0]};
    out.attrs["axes"] = axes;
    out.attrs["keepdim"] = true;
    merged = true;
  }
}

void rename(std::vector<ValueId> &values,
            const std::unordered_map<ValueId, ValueId> &map) {
  for (ValueId &v : values)
    if (auto it = map.find(v); it != map.end())
      v = it->second;
}

} // namespace

size_t factorReductions(Function &fn) {
  std::vector<int64_t> producer(fn.values.size(), -1);
  std::vector<uint32_t> uses(fn.values.size(), 0);
  for (size_t i = 0; i < fn.ops.size(); ++i) {
    for (ValueId r : fn.ops[i].results)
      producer[r] = static_cast<int64_t>(i);
    for (ValueId v : fn.ops[i].operands)
      ++uses[v];
  }
  // A function result stays the op that makes it: a callee must not return
  // a layout op's value or one value twice (ir/Verifier.h).
  std::vector<bool> isResult(fn.values.size(), false);
  for (ValueId v : fn.results) {
    ++uses[v];
    isResult[v] = true;
  }
  // A reduction whose one reader is a reduction of its kind is folded into
  // that one (first, so that its factors are taken out of the whole).
  std::vector<bool> foldedAway(fn.values.size(), false);
  for (const Operation &op : fn.ops)
    if ((op.code == OpCode::ReduceSum || op.code == OpCode::ReduceMean) &&
        uses[op.operands[0]] == 1 && producer[op.operands[0]] >= 0 &&
        fn.ops[producer[op.operands[0]]].code == op.code)
      foldedAway[op.operands[0]] = true;
  // Ops are appended to `out`; `producer` keeps indexing fn.ops (the
  // original list), whose ops the product trees are read from.
  std::vector<Operation> out;
  out.reserve(fn.ops.size());
  OpAppender emit(fn, out);
  emit.enterScope();
  std::unordered_map<ValueId, ValueId> replaced;
  size_t count = 0;
  for (Operation &op : fn.ops) {
    rename(op.operands, replaced);
    if ((op.code == OpCode::ReduceSum || op.code == OpCode::ReduceMean) &&
        !foldedAway[op.results[0]] && !isResult[op.results[0]]) {
      bool merged = false;
      Operation red = folded(fn, op, producer, uses, merged);
      if (std::optional<ValueId> r = rewrite(fn, red, merged, producer, emit)) {
        replaced[op.results[0]] = *r;
        ++count;
      }
    }
    if (op.code == OpCode::EndLoop)
      emit.leaveScope();
    out.push_back(op);
    if (op.code == OpCode::Loop)
      emit.enterScope();
    else if (op.results.size() == 1 && reusable(op.code))
      emit.remember(out.size() - 1);
  }
  fn.ops = std::move(out);
  return count;
}

} // namespace tsl
