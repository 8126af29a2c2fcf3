// Advanced indexing: `x[idx]`, `x[:, idx]`, `x[arange(N), labels]` with
// integer index tensors and `x[mask]` with a bool mask, as torch does it
// (docs/language.md, "Indexing with tensors"). Lowered to existing ops
// (index_select, nonzero, masked_select, reshape, permute and elementwise
// ops), so every backend runs it.
#include "frontend/ElaboratorImpl.h"

namespace tsl {

namespace {

/// An index vector ready to pick along one axis of the sliced tensor `z`:
/// an i64 tensor of its own shape (the picks broadcast together), the axis
/// of `z` it picks along and the axis of `x` (for messages); `checked`
/// when its values are known to be in bounds (or checked already).
struct Pick {
  ValueId v = 0;
  size_t zpos = 0, axis = 0;
  SymExpr size;
  bool checked = false;
  SourceRange range;
  /// The index tensor's type as written (for messages).
  std::string type;
};

/// The product of \p dims[lo, hi).
SymExpr product(const std::vector<SymExpr> &dims, size_t lo, size_t hi) {
  SymExpr p(1);
  for (size_t i = lo; i < hi; ++i)
    p = p * dims[i];
  return p;
}

/// The dims of \p t from \p lo to \p hi (exclusive).
std::vector<SymExpr> dimsBetween(const TensorType &t, size_t lo, size_t hi) {
  return std::vector<SymExpr>(t.dims.begin() + lo, t.dims.begin() + hi);
}

/// Reshapes \p v to \p shape unless it has that shape already.
bool reshapeTo(Elaborator &el, ValueId &v, const std::vector<SymExpr> &shape,
               SourceRange range) {
  if (el.fn.type(v).dims == shape)
    return true;
  return el.emit1(OpCode::Reshape, {v}, {{"shape", shape}}, range, v);
}

/// An i64 0-d tensor holding the size expression \p n.
bool sizeTensor(Elaborator &el, SymExpr n, SourceRange range, ValueId &out) {
  return el.toTensor(SemValue::ofInt(n, range), DType::I64, range, out);
}

/// The integer index tensor \p v as i64 with Python's rule for negative
/// values: -n <= i < 0 counts from the end (i + n). Values below -n stay
/// as they are, so the bounds check reports the value the user wrote.
bool normalizeIndex(Elaborator &el, const SemValue &v, SymExpr n,
                    ValueId &out) {
  SourceRange range = v.range;
  out = v.tensor;
  if (el.fn.type(out).dtype != DType::I64 &&
      !el.emit1(OpCode::Cast, {out}, {{"dtype", DType::I64}}, range, out))
    return false;
  ValueId zero, size, negSize, neg, fromEnd, counts, shifted;
  return el.toTensor(SemValue::ofInt(0, range), DType::I64, range, zero) &&
         sizeTensor(el, n, range, size) &&
         sizeTensor(el, el.env.simplify(-n), range, negSize) &&
         el.emit1(OpCode::Lt, {out, zero}, {}, range, neg) &&
         el.emit1(OpCode::Ge, {out, negSize}, {}, range, fromEnd) &&
         el.emit1(OpCode::And, {neg, fromEnd}, {}, range, counts) &&
         el.emit1(OpCode::Add, {out, size}, {}, range, shifted) &&
         el.emit1(OpCode::Where, {counts, shifted, out}, {}, range, out);
}

/// \p p's values, checked to lie in [0, size) along axis p.axis: picked
/// from arange(size) shaped [1, ..., 1, size] by an index_select along
/// that axis, whose run-time error names the value, the axis of x and its
/// size. The result feeds the flat index, so the check cannot be dropped.
bool checkPick(Elaborator &el, Pick &p) {
  SourceRange range = p.range;
  std::vector<SymExpr> shape = el.fn.type(p.v).dims;
  std::vector<SymExpr> tableShape(p.axis, SymExpr(1));
  tableShape.push_back(p.size);
  SymExpr count = el.env.simplify(product(shape, 0, shape.size()));
  ValueId table, flat = p.v;
  if (!el.checkSize(count, range) ||
      !el.emit1(OpCode::Arange, {}, {{"n", p.size}, {"dtype", DType::I64}},
                range, table) ||
      !reshapeTo(el, table, tableShape, range) ||
      !reshapeTo(el, flat, {count}, range) ||
      !el.emit1(OpCode::IndexSelect, {table, flat},
                {{"axis", static_cast<int64_t>(p.axis)}}, range, p.v) ||
      !reshapeTo(el, p.v, shape, range))
    return false;
  p.checked = true;
  return true;
}

/// A clear error when index tensors cannot broadcast at this call's sizes
/// (sizes that may broadcast are decided by the elementwise ops' rule: a
/// proof, a guard or an assertion).
bool picksBroadcast(Elaborator &el, const std::vector<Pick> &picks,
                    SourceRange range) {
  for (size_t a = 0; a < picks.size(); ++a)
    for (size_t b = a + 1; b < picks.size(); ++b) {
      const TensorType &ta = el.fn.type(picks[a].v),
                       &tb = el.fn.type(picks[b].v);
      size_t n = std::min(ta.rank(), tb.rank());
      for (size_t i = 1; i <= n; ++i) {
        SymExpr da = ta.dims[ta.rank() - i], db = tb.dims[tb.rank() - i];
        std::optional<int64_t> ha = el.env.hintValue(da),
                               hb = el.env.hintValue(db);
        if (!ha || !hb || *ha == *hb || *ha == 1 || *hb == 1)
          continue;
        std::string here = da.isConst() && db.isConst()
                               ? ""
                               : " (" + std::to_string(*ha) + " vs " +
                                     std::to_string(*hb) + " here)";
        return el.error(range, "cannot broadcast the index tensors " +
                                   picks[a].type + " and " + picks[b].type +
                                   ": size " + da.str() + " vs " + db.str() +
                                   here);
      }
    }
  return true;
}

/// Whether \p v is `arange(n)` (i64) with n <= \p size proven: in bounds
/// and not negative, so it needs neither normalizing nor checking (the
/// rows of `x[arange(N), labels]`).
bool fromArange(Elaborator &el, ValueId v, SymExpr size) {
  const Operation *producer = el.producerOf(v);
  if (!producer)
    return false;
  const Operation &op = *producer;
  return op.code == OpCode::Arange && el.fn.type(v).dtype == DType::I64 &&
         el.env.prove(SymCond::le(op.exprAttr("n"), size)) == Truth::True;
}

/// The picks of \p region's tensor indices into `z` (x sliced by the
/// region), in subscript order: integer tensors normalized (not checked
/// yet), each mask as the columns of nonzero(mask), in bounds by
/// construction.
bool collectPicks(Elaborator &el, const TensorType &t,
                  const Elaborator::SliceRegion &region,
                  std::vector<Pick> &picks) {
  for (const auto &ti : region.tensorIndices) {
    const TensorType it = el.fn.type(ti.value.tensor);
    Pick p;
    p.range = ti.value.range;
    p.type = it.str();
    if (it.dtype != DType::Bool) {
      p.zpos = ti.keepPos;
      p.axis = ti.axis;
      p.size = t.dims[ti.axis];
      if (fromArange(el, ti.value.tensor, p.size)) {
        p.v = ti.value.tensor;
        p.checked = true;
      } else if (!normalizeIndex(el, ti.value, p.size, p.v)) {
        return false;
      }
      picks.push_back(p);
      continue;
    }
    ValueId nz;
    if (!el.emit1(OpCode::Nonzero, {ti.value.tensor}, {}, p.range, nz))
      return false;
    SymExpr u = el.fn.type(nz).dims[0];
    for (size_t d = 0; d < it.rank(); ++d) {
      p.zpos = ti.keepPos + d;
      p.axis = ti.axis + d;
      p.size = t.dims[p.axis];
      p.checked = true;
      AttrMap attrs = {
          {"starts", std::vector<SymExpr>{0, static_cast<int64_t>(d)}},
          {"sizes", std::vector<SymExpr>{u, 1}}};
      if (!el.emit1(OpCode::Slice, {nz}, attrs, p.range, p.v) ||
          !reshapeTo(el, p.v, {u}, p.range))
        return false;
      picks.push_back(p);
    }
  }
  return true;
}

/// Picks separated by a slice or None: their axes of \p z are moved to the
/// front (the broadcast axes go first, NumPy's and torch's rule); adjacent
/// picks stay, and the result replaces their axes in place.
bool picksFirstUnlessAdjacent(Elaborator &el, std::vector<Pick> &picks,
                              SourceRange range, ValueId &z) {
  bool adjacent = true;
  for (size_t i = 1; i < picks.size(); ++i)
    adjacent = adjacent && picks[i].zpos == picks[i - 1].zpos + 1;
  if (adjacent)
    return true;
  std::vector<int64_t> perm;
  std::vector<bool> picked(el.fn.type(z).rank(), false);
  for (Pick &p : picks) {
    picked[p.zpos] = true;
    perm.push_back(static_cast<int64_t>(p.zpos));
    p.zpos = perm.size() - 1;
  }
  for (size_t i = 0; i < picked.size(); ++i)
    if (!picked[i])
      perm.push_back(static_cast<int64_t>(i));
  return el.emit1(OpCode::Permute, {z}, {{"perm", perm}}, range, z);
}

/// The position in the picked axes of \p zt (adjacent, from the first
/// pick's) as one i64 tensor of the picks' broadcast shape: the sum of
/// index * stride. Each pick not known in bounds is checked first, unless
/// \p finalChecks (one pick along its own axis: the final index_select
/// checks it). After a check the sum is clamped into the picked block: a
/// GPU runs on past a failed check, and the final index_select must not
/// report a second error about the flat index.
bool flatIndex(Elaborator &el, std::vector<Pick> &picks, const TensorType &zt,
               bool finalChecks, SourceRange range, ValueId &flat) {
  size_t hi = picks.back().zpos + 1;
  bool checked = false;
  for (size_t m = 0; m < picks.size(); ++m) {
    Pick &p = picks[m];
    if (!p.checked && !finalChecks) {
      if (!checkPick(el, p))
        return false;
      checked = true;
    }
    SymExpr stride = el.env.simplify(product(zt.dims, p.zpos + 1, hi));
    ValueId term = p.v, s;
    if (!stride.isConst(1) &&
        !(el.checkSize(stride, range) && sizeTensor(el, stride, range, s) &&
          el.emit1(OpCode::Mul, {term, s}, {}, range, term)))
      return false;
    if (m == 0)
      flat = term;
    else if (!el.emit1(OpCode::Add, {flat, term}, {}, range, flat))
      return false;
  }
  if (!checked)
    return true;
  SymExpr span = el.env.simplify(product(zt.dims, picks[0].zpos, hi));
  ValueId zero, last;
  return el.toTensor(SemValue::ofInt(0, range), DType::I64, range, zero) &&
         sizeTensor(el, el.env.simplify(span - 1), range, last) &&
         el.emit1(OpCode::Maximum, {flat, zero}, {}, range, flat) &&
         el.emit1(OpCode::Minimum, {flat, last}, {}, range, flat);
}

} // namespace

bool Elaborator::takeTensorIndex(const SemValue &v, const TensorType &t,
                                 size_t &axis, SliceRegion &region) {
  const TensorType it = fn.type(v.tensor);
  if (!region.allowTensors)
    return error(v.range, "not supported: assigning through a tensor index",
                 "use scatter(...), or where(...) with a mask");
  bool mask = it.dtype == DType::Bool;
  if (!mask && !isInteger(it.dtype) && region.assigning)
    return error(v.range,
                 "the mask of an assignment y[mask] = v must be bool, got " +
                     it.str(),
                 "compare it (m != 0.0) or convert it with cast(..., bool)");
  if (!mask && !isInteger(it.dtype))
    return error(v.range,
                 "an index tensor must have an integer or bool type, got " +
                     it.str(),
                 "convert it with cast(..., i64)");
  size_t k = mask ? it.rank() : 1;
  if (k == 0)
    return error(v.range, "not supported: a 0-d bool tensor as an index",
                 "use where(...)");
  if (axis + k > t.rank())
    return error(v.range, "too many indices for a tensor of type " + t.str() +
                              ": the mask " + it.str() + " takes " +
                              std::to_string(k) + " axes from axis " +
                              std::to_string(axis));
  region.tensorIndices.push_back({v, axis, region.keepDims.size()});
  for (size_t d = 0; d < k; ++d) {
    SymExpr n = t.dims[axis + d];
    if (mask &&
        !requireCond(SymCond::eq(it.dims[d], n), v.range, "index",
                     "mask shape matches the indexed tensor",
                     "the mask " + it.str() +
                         " does not match the indexed tensor " + t.str() +
                         " in axis " + std::to_string(axis + d) + " (" +
                         it.dims[d].str() + " vs " + n.str() + ")"))
      return false;
    region.starts.push_back(0);
    region.sizes.push_back(n);
    region.keepDims.push_back(n);
  }
  axis += k - 1;
  return true;
}

bool Elaborator::advancedIndex(const ast::Expr &e, ValueId x,
                               const TensorType &t, const SliceRegion &region,
                               SemValue &out) {
  SourceRange range = e.range;
  const SliceRegion::TensorIndex &first = region.tensorIndices[0];
  // A mask over every axis, alone: masked_select.
  if (region.tensorIndices.size() == 1 &&
      fn.type(first.value.tensor).rank() == t.rank() &&
      fn.type(first.value.tensor).dtype == DType::Bool &&
      region.keepDims.size() == t.rank()) {
    ValueId r;
    if (!emit1(OpCode::MaskedSelect, {x, first.value.tensor}, {}, range, r))
      return false;
    out = SemValue::ofTensor(r, range);
    return true;
  }
  bool whole = !region.strided() && region.keepDims == t.dims;
  for (size_t i = 0; whole && i < t.rank(); ++i)
    whole = region.starts[i].isConst(0);
  ValueId z = x;
  std::vector<Pick> picks;
  if ((!whole && !emitRegion(x, region, range, z)) ||
      !collectPicks(*this, t, region, picks) ||
      !picksBroadcast(*this, picks, range) ||
      !picksFirstUnlessAdjacent(*this, picks, range, z))
    return false;
  const TensorType zt = fn.type(z);
  size_t lo = picks.front().zpos, hi = picks.back().zpos + 1;
  bool finalChecks = picks.size() == 1 && picks[0].zpos == picks[0].axis;
  ValueId flat = 0;
  if (!flatIndex(*this, picks, zt, finalChecks, range, flat))
    return false;
  // z as [before, span, after], picked along `span` by the flat index.
  std::vector<SymExpr> b = fn.type(flat).dims, shape = dimsBetween(zt, 0, lo);
  SymExpr count = env.simplify(product(b, 0, b.size())),
          span = env.simplify(product(zt.dims, lo, hi));
  if (!checkSize(count, range) || !checkSize(span, range))
    return false;
  std::vector<SymExpr> after = dimsBetween(zt, hi, zt.rank());
  shape.push_back(span);
  shape.insert(shape.end(), after.begin(), after.end());
  ValueId r;
  if (!reshapeTo(*this, z, shape, range) ||
      !reshapeTo(*this, flat, {count}, range) ||
      !emit1(OpCode::IndexSelect, {z, flat},
             {{"axis", static_cast<int64_t>(lo)}},
             finalChecks ? picks[0].range : range, r))
    return false;
  // [before, count, after] -> [before, B..., after].
  shape = dimsBetween(zt, 0, lo);
  shape.insert(shape.end(), b.begin(), b.end());
  shape.insert(shape.end(), after.begin(), after.end());
  if (!reshapeTo(*this, r, shape, range))
    return false;
  out = SemValue::ofTensor(r, range);
  return true;
}

bool Elaborator::maskAssignable(const ast::Expr &target, const TensorType &t,
                                const SliceRegion &region) {
  const SliceRegion::TensorIndex &first = region.tensorIndices[0];
  const TensorType mt = fn.type(first.value.tensor);
  if (mt.dtype != DType::Bool)
    return error(first.value.range,
                 "not supported: assigning through a tensor index of type " +
                     mt.str() + " (a bool mask assigns: y[mask] = v)",
                 "use scatter(...) or index_add(...)");
  bool whole = region.tensorIndices.size() == 1 && first.axis == 0 &&
               !region.strided() && region.newAxes == 0 &&
               region.keepDims == t.dims;
  for (size_t i = 0; whole && i < region.starts.size(); ++i)
    whole = region.starts[i].isConst(0);
  if (!whole)
    return error(target.range,
                 "not supported: assigning through a mask together with "
                 "other indices (only y[mask] = v, the mask over y's leading "
                 "dims)",
                 "use where(...) or masked_scatter(...)");
  return true;
}

bool Elaborator::assignThroughMask(const ast::Expr &target, ValueId x,
                                   const SliceRegion &region, ValueId v,
                                   SourceRange valueRange, ValueId &out) {
  SourceRange range = target.range;
  const TensorType t = fn.type(x), vt = fn.type(v);
  ValueId mask = region.tensorIndices[0].value.tensor;
  const TensorType mt = fn.type(mask);
  size_t k = mt.rank();
  std::vector<SymExpr> rest = dimsBetween(t, k, t.rank());
  // The mask over x's shape: its dims, then size 1 for the rest, expanded.
  std::vector<SymExpr> maskShape = mt.dims;
  maskShape.resize(t.rank(), SymExpr(1));
  if (k < t.rank() &&
      !(reshapeTo(*this, mask, maskShape, range) &&
        emit1(OpCode::Expand, {mask}, {{"shape", t.dims}}, range, mask)))
    return false;
  // One more dim than the rest (not a constant 1, which broadcasts): the
  // value's rows in order, as many as the mask selects (or more).
  if (vt.rank() == rest.size() + 1 && !vt.dims[0].isConst(1)) {
    for (size_t i = 0; i < rest.size(); ++i)
      if (!requireCond(SymCond::eq(vt.dims[i + 1], rest[i]), valueRange,
                       "assign", "value rows match the masked tensor",
                       "the value " + vt.str() +
                           " does not match the rows the mask " + mt.str() +
                           " selects in " + t.str() + " (axis " +
                           std::to_string(i + 1) + ": " + vt.dims[i + 1].str() +
                           " vs " + rest[i].str() + ")"))
        return false;
    return emit1(OpCode::MaskedScatter, {x, mask, v}, {}, range, out);
  }
  if (vt.rank() > rest.size() + 1)
    return error(valueRange,
                 "cannot assign a value of type " + vt.str() +
                     " through the mask " + mt.str() + " of " + t.str() +
                     ": it has too many dims",
                 "assign a 0-d value, one that broadcasts to each selected "
                 "element or row, or one per selected element or row");
  // A value for every selected element (or row), broadcast by expand's
  // rule (as a slice assignment's value is): each dim 1 or the row's.
  if (vt.dims != t.dims &&
      !emit1(OpCode::Expand, {v}, {{"shape", t.dims}}, valueRange, v))
    return false;
  return emit1(OpCode::Where, {mask, v, x}, {}, range, out);
}

} // namespace tsl
