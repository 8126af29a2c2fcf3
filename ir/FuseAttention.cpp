// The attention fusion pass: a pattern match backwards from p @ v through
// the softmax to q @ k^T. See FuseAttention.h for what it accepts.
#include "ir/FuseAttention.h"

#include <cmath>
#include <optional>

namespace tsl {

namespace {

/// Which op defines each value and how many times each value is read.
struct UseInfo {
  std::vector<int64_t> def;
  std::vector<int> uses;

  explicit UseInfo(const Function &fn)
      : def(fn.values.size(), -1), uses(fn.values.size(), 0) {
    for (size_t i = 0; i < fn.ops.size(); ++i) {
      for (ValueId r : fn.ops[i].results)
        def[r] = static_cast<int64_t>(i);
      for (ValueId v : fn.ops[i].operands)
        ++uses[v];
    }
    for (ValueId r : fn.results)
      ++uses[r];
  }
};

/// The pieces of one matched attention.
struct Match {
  ValueId q, k, v;
  std::optional<ValueId> scale, mask;
  bool divideByScale = false;
  bool causal = false;
};

class Matcher {
public:
  explicit Matcher(const Function &fn) : fn(fn), info(fn) {}

  /// The op defining \p v when it is \p code and \p v has exactly \p uses
  /// readers (0: any number).
  const Operation *defining(ValueId v, OpCode code, int uses = 1) const {
    int64_t d = info.def[v];
    if (d < 0 || fn.ops[d].code != code || (uses && info.uses[v] != uses))
      return nullptr;
    return &fn.ops[d];
  }

  /// A keepdim reduction of \p code over exactly the last axis of \p x.
  const Operation *lastAxisReduce(ValueId v, OpCode code, ValueId x) const {
    const Operation *op = defining(v, code);
    size_t rank = fn.type(x).rank();
    if (!op || op->operands[0] != x || !op->boolAttr("keepdim"))
      return nullptr;
    const auto &axes = op->intsAttr("axes");
    if (axes.size() != 1 ||
        (axes[0] != static_cast<int64_t>(rank) - 1 && axes[0] != -1))
      return nullptr;
    return op;
  }

  /// Matches softmax over the last axis producing \p p; returns its input.
  std::optional<ValueId> softmaxInput(ValueId p) const {
    const Operation *div = defining(p, OpCode::Div);
    if (!div)
      return std::nullopt;
    ValueId e = div->operands[0];
    const Operation *exp = defining(e, OpCode::Exp, 2);
    if (!exp || !lastAxisReduce(div->operands[1], OpCode::ReduceSum, e))
      return std::nullopt;
    const Operation *sub = defining(exp->operands[0], OpCode::Sub);
    if (!sub)
      return std::nullopt;
    ValueId x = sub->operands[0];
    if (info.uses[x] != 2 ||
        !lastAxisReduce(sub->operands[1], OpCode::ReduceMax, x))
      return std::nullopt;
    return x;
  }

  bool isScalar(ValueId v) const { return fn.type(v).rank() == 0; }

  /// \p v is a 0-d constant -inf of \p dtype.
  bool isMinusInf(ValueId v, DType dtype) const {
    const Operation *c = defining(v, OpCode::Constant, 0);
    if (!c || fn.type(v).dtype != dtype || !isScalar(v))
      return false;
    Number n = c->numAttr("value");
    return !n.isInt && std::isinf(n.f) && n.f < 0;
  }

  /// The position along one of the scores' last two axes: an i64
  /// arange(n) as it is ([n], the key axis) or reshaped to [1, n] (the key
  /// axis) or [n, 1] (the query axis). Returns n and whether it indexes
  /// the keys. (A narrower integer arange could wrap.)
  std::optional<std::pair<SymExpr, bool>> position(ValueId v) const {
    const TensorType &t = fn.type(v);
    ValueId source = v;
    if (const Operation *r = defining(v, OpCode::Reshape, 0))
      source = r->operands[0];
    const Operation *a = defining(source, OpCode::Arange, 0);
    if (!a || t.dtype != DType::I64)
      return std::nullopt;
    SymExpr n = a->exprAttr("n");
    if (t.rank() == 1 && t.dims[0] == n)
      return std::make_pair(n, true);
    if (t.rank() == 2 && t.dims[0].isConst(1) && t.dims[1] == n)
      return std::make_pair(n, true);
    if (t.rank() == 2 && t.dims[1].isConst(1) && t.dims[0] == n)
      return std::make_pair(n, false);
    return std::nullopt;
  }

  /// \p cond compares key position j with query position i over the last
  /// two axes of \p scores: j <= i (or i >= j) when \p keep, j > i (or
  /// i < j) otherwise.
  bool isCausalCut(ValueId cond, const TensorType &scores, bool keep) const {
    const Operation *cmp = defining(cond, keep ? OpCode::Le : OpCode::Gt, 0);
    bool keyFirst = cmp != nullptr;
    if (!cmp)
      cmp = defining(cond, keep ? OpCode::Ge : OpCode::Lt, 0);
    size_t rank = scores.rank();
    if (!cmp || rank < 2)
      return false;
    auto key = position(cmp->operands[keyFirst ? 0 : 1]);
    auto query = position(cmp->operands[keyFirst ? 1 : 0]);
    return key && query && key->second && !query->second &&
           key->first == scores.dims[rank - 1] &&
           query->first == scores.dims[rank - 2];
  }

  /// Matches the causal cut where(j <= i, x, -inf) (or where(j > i, -inf,
  /// x)) of scores \p v read \p uses times; returns x.
  std::optional<ValueId> causalInput(ValueId v, int uses) const {
    const Operation *w = defining(v, OpCode::Where, uses);
    if (!w)
      return std::nullopt;
    const TensorType &scores = fn.type(v);
    for (bool keep : {true, false}) {
      ValueId x = w->operands[keep ? 1 : 2];
      if (fn.type(x) == scores &&
          isMinusInf(w->operands[keep ? 2 : 1], scores.dtype) &&
          isCausalCut(w->operands[0], scores, keep))
        return x;
    }
    return std::nullopt;
  }

  /// \p mask may be added to scores of type \p scores without widening it.
  bool fitsScores(ValueId mask, const TensorType &scores) const {
    const TensorType &m = fn.type(mask);
    if (m.rank() > scores.rank() || m.dtype != scores.dtype)
      return false;
    size_t offset = scores.rank() - m.rank();
    for (size_t i = 0; i < m.rank(); ++i)
      if (!m.dims[i].isConst(1) && !(m.dims[i] == scores.dims[offset + i]))
        return false;
    return true;
  }

  /// Matches the attention whose p @ v is \p matmul.
  std::optional<Match> match(const Operation &matmul) const {
    if (matmul.code != OpCode::Matmul)
      return std::nullopt;
    std::optional<ValueId> x = softmaxInput(matmul.operands[0]);
    if (!x)
      return std::nullopt;
    Match m;
    m.v = matmul.operands[1];
    ValueId scores = *x;
    const TensorType &scoreType = fn.type(scores);
    // The softmax reads its input twice; each earlier value once.
    int uses = 2;
    if (std::optional<ValueId> cut = causalInput(scores, uses)) {
      m.causal = true;
      scores = *cut;
      uses = 1;
    }
    if (const Operation *add = defining(scores, OpCode::Add, uses)) {
      for (int side = 0; side < 2 && !m.mask; ++side) {
        ValueId other = add->operands[1 - side];
        if (fn.type(add->operands[side]) == scoreType &&
            fitsScores(other, scoreType)) {
          m.mask = other;
          scores = add->operands[side];
        }
      }
      if (!m.mask)
        return std::nullopt;
      uses = 1;
    }
    if (const Operation *mul = defining(scores, OpCode::Mul, uses)) {
      int side = isScalar(mul->operands[0]) ? 0 : 1;
      if (!isScalar(mul->operands[side]))
        return std::nullopt;
      m.scale = mul->operands[side];
      scores = mul->operands[1 - side];
      uses = 1;
    } else if (const Operation *div = defining(scores, OpCode::Div, uses)) {
      if (!isScalar(div->operands[1]))
        return std::nullopt;
      m.scale = div->operands[1];
      m.divideByScale = true;
      scores = div->operands[0];
      uses = 1;
    }
    const Operation *qk = defining(scores, OpCode::Matmul, uses);
    if (!qk)
      return std::nullopt;
    const Operation *kt = defining(qk->operands[1], OpCode::Permute);
    if (!kt)
      return std::nullopt;
    m.q = qk->operands[0];
    m.k = kt->operands[0];
    return shapesFit(m, *kt) ? std::optional<Match>(m) : std::nullopt;
  }

private:
  /// q, k, v share a rank >= 2 and their batch dims; k^T swaps k's last two
  /// axes only.
  bool shapesFit(const Match &m, const Operation &kt) const {
    const TensorType &q = fn.type(m.q), &k = fn.type(m.k), &v = fn.type(m.v);
    size_t rank = q.rank();
    if (rank < 2 || k.rank() != rank || v.rank() != rank || !isFloat(q.dtype) ||
        k.dtype != q.dtype || v.dtype != q.dtype)
      return false;
    const auto &perm = kt.intsAttr("perm");
    for (size_t i = 0; i < rank; ++i) {
      size_t want = i + 2 < rank ? i : (i == rank - 2 ? rank - 1 : rank - 2);
      if (perm.size() != rank || perm[i] != static_cast<int64_t>(want))
        return false;
    }
    for (size_t i = 0; i + 2 < rank; ++i)
      if (!(q.dims[i] == k.dims[i]) || !(q.dims[i] == v.dims[i]))
        return false;
    return true;
  }

  const Function &fn;
  UseInfo info;
};

/// A new 0-d value of \p dtype holding \p value, defined by an op appended
/// to \p ops.
ValueId constant(Function &fn, std::vector<Operation> &ops, DType dtype,
                 double value, const Location &loc) {
  ValueId id = fn.addValue({dtype, {}});
  Operation c{OpCode::Constant, {}, {id}, {}, loc};
  c.attrs["value"] = Number::ofFloat(value);
  c.attrs["dtype"] = dtype;
  ops.push_back(std::move(c));
  return id;
}

} // namespace

size_t fuseAttention(Function &fn) {
  // The matches only, by op index: a slot per op was 4 MB for a
  // 120,000-op function that has none (issue 31).
  std::vector<std::pair<size_t, Match>> found;
  {
    Matcher matcher(fn);
    for (size_t i = 0; i < fn.ops.size(); ++i)
      if (std::optional<Match> m = matcher.match(fn.ops[i]))
        found.emplace_back(i, std::move(*m));
  }
  size_t count = found.size();
  if (!count)
    return 0;
  std::vector<Operation> ops;
  ops.reserve(fn.ops.size() + 2 * count);
  size_t next = 0; // the first match not yet applied
  for (size_t i = 0; i < fn.ops.size(); ++i) {
    if (next == found.size() || found[next].first != i) {
      ops.push_back(std::move(fn.ops[i]));
      continue;
    }
    const Match &m = found[next++].second;
    Location loc = fn.ops[i].loc;
    DType dtype = fn.type(m.q).dtype;
    ValueId scale = m.scale ? *m.scale : constant(fn, ops, dtype, 1.0, loc);
    if (m.divideByScale) {
      ValueId one = constant(fn, ops, dtype, 1.0, loc);
      ValueId inverse = fn.addValue({dtype, {}});
      ops.push_back({OpCode::Div, {one, scale}, {inverse}, {}, loc});
      scale = inverse;
    }
    Operation att{
        OpCode::Attention, {m.q, m.k, m.v, scale}, fn.ops[i].results, {}, loc};
    if (m.mask)
      att.operands.push_back(*m.mask);
    att.attrs["causal"] = m.causal;
    ops.push_back(std::move(att));
  }
  fn.ops = std::move(ops);
  return count;
}

} // namespace tsl
