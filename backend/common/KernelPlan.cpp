// The kernel plan: fusion trees, GEMM operands read as B^T, buffer
// lifetimes, row groups and outlining, decided on the IR alone.
#include "backend/common/KernelPlan.h"

#include "ir/IrText.h"
#include "ir/OpInfo.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <set>

namespace tsl {

bool isReductionOp(OpCode c) {
  // argmax and argmin are library calls
  return isReduction(c) && c != OpCode::Argmax && c != OpCode::Argmin;
}

void KernelPlan::leaves(ValueId v, std::vector<ValueId> &out) const {
  if (!inlined[v]) {
    out.push_back(v);
    return;
  }
  for (ValueId o : producer[v]->operands)
    leaves(o, out);
}

namespace {

/// Whether \p v is a permute that swaps the last two axes and has no other
/// use than the matmul reading it.
bool transposeReadOnce(const Function &fn, const std::vector<int> &uses,
                       const KernelPlan &plan, ValueId v) {
  const Operation *p = plan.producer[v];
  if (!p || p->code != OpCode::Permute || uses[v] != 1 || fn.type(v).rank() < 2)
    return false;
  const auto &perm = p->intsAttr("perm");
  size_t r = perm.size();
  bool swapLast = perm[r - 1] == static_cast<int64_t>(r - 2) &&
                  perm[r - 2] == static_cast<int64_t>(r - 1);
  for (size_t i = 0; i + 2 < r; ++i)
    swapLast &= perm[i] == static_cast<int64_t>(i);
  return swapLast;
}

/// The operands of f32 matmuls that are a transpose of the last two axes
/// used only there: the GEMM reads the untransposed buffer, as B^T for the
/// right operand (attention's q @ k^T) or else as A^T for the left one (a
/// weight gradient's x^T @ g). Not both: the runtime has no A^T B^T GEMM.
void planTransposedOperands(const Function &fn, const std::vector<int> &uses,
                            KernelPlan &plan) {
  plan.transposedOperand.assign(fn.values.size(), false);
  if (!plan.caps.transposedGemmOperand)
    return;
  for (const Operation &op : fn.ops) {
    if (op.code != OpCode::Matmul || fn.type(op.results[0]).dtype != DType::F32)
      continue;
    ValueId left = op.operands[0], right = op.operands[1];
    if (transposeReadOnce(fn, uses, plan, right))
      plan.transposedOperand[right] = true;
    else if (left != right && transposeReadOnce(fn, uses, plan, left))
      plan.transposedOperand[left] = true;
  }
}

/// Whether slice \p op selects a contiguous block of its operand: axes
/// before some axis p are taken one index at a time, axis p any range, and
/// the axes after it whole.
bool contiguousSlice(const Function &fn, const Operation &op) {
  const TensorType &in = fn.type(op.operands[0]);
  const auto &starts = op.exprsAttr("starts");
  const auto &sizes = op.exprsAttr("sizes");
  for (int64_t step : op.intsAttr("steps"))
    if (step != 1)
      return false;
  size_t p = 0;
  while (p < in.rank() && sizes[p].isConst(1))
    ++p;
  for (size_t i = p + 1; i < in.rank(); ++i)
    if (!starts[i].isConst(0) || sizes[i] != in.dims[i])
      return false;
  return true;
}

/// KernelPlan::sliceView: contiguous slices whose buffer no function result
/// shares (a result's buffer is handed to the caller whole).
void planSliceViews(const Function &fn, KernelPlan &plan) {
  plan.sliceView.assign(fn.values.size(), false);
  for (const Operation &op : fn.ops)
    if (op.code == OpCode::Slice && contiguousSlice(fn, op))
      plan.sliceView[op.results[0]] = true;
  for (ValueId r : fn.results)
    for (ValueId v = r;
         plan.producer[v] && (plan.producer[v]->code == OpCode::Reshape ||
                              plan.producer[v]->code == OpCode::Slice);
         v = plan.producer[v]->operands[0])
      plan.sliceView[v] = false;
}

/// The last op reading each buffer: a read of v counts for owner[v]
/// (itself, or the value whose buffer v's is), through fused trees. A read
/// in a loop body that does not define the owner counts at the loop's end
/// (the outermost such loop), and a function result is read after the last
/// op.
std::vector<int> lastReads(const Function &fn, const KernelPlan &plan,
                           const std::vector<ValueId> &owner) {
  std::vector<int> last(fn.values.size(), -1);
  std::function<void(ValueId, int)> read = [&](ValueId v, int at) {
    if (plan.inlined[v] || plan.transposedOperand[v]) {
      for (ValueId o : plan.producer[v]->operands)
        read(o, at);
      return;
    }
    for (int loop = plan.loopOfOp[at]; loop >= 0; loop = plan.loopOfOp[loop])
      if (!plan.loopHolds(loop, plan.loopOfValue[owner[v]]))
        at = static_cast<int>(plan.partner[loop]);
    last[owner[v]] = std::max(last[owner[v]], at);
  };
  for (size_t i = 0; i < fn.ops.size(); ++i)
    if (!plan.computedElsewhere(fn.ops[i]))
      for (ValueId v : fn.ops[i].operands)
        read(v, static_cast<int>(i));
  for (ValueId r : fn.results)
    last[owner[r]] = static_cast<int>(fn.ops.size());
  return last;
}

/// For each value, whether it is a donated tensor parameter (none on a
/// target that launches kernels).
std::vector<bool> donatedValues(const Function &fn, const KernelPlan &plan) {
  std::vector<bool> donated(fn.values.size(), false);
  if (!plan.caps.launchesKernels)
    for (const Param &p : fn.params)
      if (!p.isInt && p.donated)
        donated[p.value] = true;
  return donated;
}

/// KernelPlan::updateInPlace (its conditions are documented there).
void planInPlaceUpdates(const Function &fn, KernelPlan &plan) {
  size_t n = fn.values.size();
  plan.updateInPlace.assign(n, false);
  bool any = false;
  for (const Operation &op : fn.ops)
    any |= op.code == OpCode::UpdateSlice;
  if (!any)
    return;
  std::vector<ValueId> self(n);
  for (ValueId v = 0; v < n; ++v)
    self[v] = v;
  std::vector<bool> donated = donatedValues(fn, plan);
  // memory[v]: the value owning the memory v's elements are in (through
  // reshapes, slice views, in-place updates); owner[v] the same without
  // slice views (a view's memory is part of another buffer). groupLast[m]:
  // the last read of any value whose memory is m's, so far.
  std::vector<ValueId> memory = self, owner = self;
  std::vector<int> groupLast = lastReads(fn, plan, self);
  const std::vector<int> last = groupLast;
  for (size_t i = 0; i < fn.ops.size(); ++i) {
    const Operation &op = fn.ops[i];
    if (op.results.empty() ||
        !(plan.isView(op) || op.code == OpCode::UpdateSlice))
      continue;
    ValueId r = op.results[0], x = op.operands[0];
    if (op.code == OpCode::UpdateSlice) {
      ValueId base = memory[x];
      bool owned = plan.producer[base]
                       ? !plan.computedElsewhere(*plan.producer[base])
                       : donated[base];
      bool ok = owner[x] == base && owned &&
                plan.loopOfValue[base] == plan.loopOfOp[i] &&
                memory[op.operands[1]] != base &&
                groupLast[base] <= static_cast<int>(i);
      if (!ok)
        continue;
      plan.updateInPlace[r] = true;
    }
    memory[r] = memory[x];
    if (op.code != OpCode::Slice)
      owner[r] = owner[x];
    groupLast[memory[r]] = std::max(groupLast[memory[r]], last[r]);
  }
}

/// The loop tables of the plan (KernelPlan::loopOfOp and friends).
void planLoops(const Function &fn, KernelPlan &plan) {
  plan.loopOfOp.assign(fn.ops.size(), -1);
  plan.loopOfValue.assign(fn.values.size(), -1);
  plan.partner.assign(fn.ops.size(), 0);
  std::vector<int> open;
  for (size_t i = 0; i < fn.ops.size(); ++i) {
    const Operation &op = fn.ops[i];
    int here = open.empty() ? -1 : open.back();
    plan.loopOfOp[i] = here;
    if (op.code == OpCode::EndLoop && !open.empty()) {
      size_t loop = static_cast<size_t>(open.back());
      plan.partner[i] = loop;
      plan.partner[loop] = i;
      open.pop_back();
      here = open.empty() ? -1 : open.back();
    }
    if (op.code == OpCode::Loop) {
      open.push_back(static_cast<int>(i));
      here = static_cast<int>(i);
    }
    for (ValueId r : op.results)
      plan.loopOfValue[r] = here;
  }
}

/// Fusion: an elementwise result used exactly once, by an elementwise op or
/// a reduction that iterates the same shape, is not stored: its consumer
/// recomputes it at each index (constants and sizes always fuse). So
/// `relu(x*1.5+0.5)*2.0` is one loop that reads x once and writes once.
/// A constant that is also a result, or an operand of an op that reads
/// buffers (a call, a library kernel, a loop marker), is stored as well.
void planFusion(const Function &fn, KernelPlan &plan) {
  std::vector<int> uses(fn.values.size(), 0);
  std::vector<bool> stored(fn.values.size(), false);
  plan.producer.assign(fn.values.size(), nullptr);
  plan.inlined.assign(fn.values.size(), false);
  plan.fusedDepth.assign(fn.values.size(), 0);
  for (const Operation &op : fn.ops) {
    bool fuses = isElementwiseOrScalar(op.code) || isReductionOp(op.code);
    for (ValueId v : op.operands) {
      ++uses[v];
      stored[v] = stored[v] || !fuses;
    }
    for (ValueId r : op.results)
      plan.producer[r] = &op;
  }
  for (ValueId r : fn.results) {
    uses[r] += 2; // results are stored
    stored[r] = true;
  }
  planTransposedOperands(fn, uses, plan);
  // The ops a fused operand's recomputation can go into, and the shape
  // their loop iterates.
  auto fusingReader = [](const Operation &op) {
    return (isElementwiseOrScalar(op.code) || isReductionOp(op.code)) &&
           op.code != OpCode::Constant && op.code != OpCode::SymScalar;
  };
  auto loopOf = [&](const Operation &op) -> const TensorType & {
    return isElementwiseOrScalar(op.code) ? fn.type(op.results[0])
                                          : fn.type(op.operands[0]);
  };
  // Values every reader of which could recompute them: elementwise ops and
  // reductions over their shape, in their loop body.
  std::vector<bool> allReadersFuse(fn.values.size(), true);
  for (const Operation &op : fn.ops) {
    bool fuses = fusingReader(op);
    for (ValueId v : op.operands) {
      if (!fuses || fn.type(v).dims != loopOf(op).dims ||
          plan.loopOfValue[v] != plan.loopOfValue[op.results[0]])
        allReadersFuse[v] = false;
    }
  }
  // A value read several times is recomputed by each reader (not stored)
  // when that costs one add, sub or mul of stored values or constants: a
  // store and a load per element cost more (the GELU and layer norm
  // recomputed in a loop's backward are such chains).
  auto cheapToRepeat = [&](ValueId v) {
    const Operation *p = plan.producer[v];
    if (!p || uses[v] > kMaxRecomputedReaders || !allReadersFuse[v] ||
        stored[v] ||
        !(p->code == OpCode::Add || p->code == OpCode::Sub ||
          p->code == OpCode::Mul))
      return false;
    for (ValueId o : p->operands)
      if (plan.inlined[o] && plan.producer[o] &&
          plan.producer[o]->code != OpCode::Constant &&
          plan.producer[o]->code != OpCode::SymScalar)
        return false;
    return true;
  };
  for (const Operation &op : fn.ops) {
    if (!fusingReader(op))
      continue;
    const TensorType &loop = loopOf(op);
    unsigned depth = 0;
    for (ValueId v : op.operands) {
      const Operation *p = plan.producer[v];
      if (!p || !isElementwiseOrScalar(p->code))
        continue;
      bool scalar =
          (p->code == OpCode::Constant || p->code == OpCode::SymScalar) &&
          !stored[v];
      // Fused trees stay shallow (kMaxFusedDepth): a 50,000-term sum becomes
      // a chain of loops instead of one expression that deep.
      // (Not into a loop body from outside it: once, not every iteration.)
      bool sameBody = plan.loopOfValue[v] == plan.loopOfValue[op.results[0]];
      if (scalar ||
          ((uses[v] == 1 || cheapToRepeat(v)) && fn.type(v).dims == loop.dims &&
           plan.fusedDepth[v] < kMaxFusedDepth && sameBody)) {
        plan.inlined[v] = true;
        depth = std::max(depth, plan.fusedDepth[v]);
      }
    }
    for (ValueId r : op.results)
      plan.fusedDepth[r] = depth + 1;
  }
}

/// Buffer lifetimes: each intermediate is freed after the last op that
/// reads it (uses through fused trees count at the op whose loop reads
/// them), so later allocations of the call can take its memory.
/// For each value, the value owning its buffer: through views, in-place
/// updates, and a loop's results (its carried buffers, which end_loop's
/// results hand on after the loop).
std::vector<ValueId> bufferRoots(const Function &fn, const KernelPlan &plan) {
  std::vector<ValueId> root(fn.values.size());
  for (ValueId v = 0; v < root.size(); ++v)
    root[v] = v;
  for (size_t i = 0; i < fn.ops.size(); ++i)
    if (fn.ops[i].code == OpCode::Loop) {
      const Operation &end = fn.ops[plan.partner[i]];
      for (size_t k = 0; k < fn.ops[i].results.size(); ++k)
        root[fn.ops[i].results[k]] = end.results[k];
    }
  for (const Operation &op : fn.ops) // aliases of their operand's buffer
    if (plan.sharesOperandBuffer(op))
      root[op.results[0]] = root[op.operands[0]];
  return root;
}

void planFrees(const Function &fn, KernelPlan &plan) {
  size_t n = fn.values.size();
  std::vector<ValueId> root = bufferRoots(fn, plan);
  std::vector<bool> pinned(n, false);
  for (const Param &p : fn.params)
    if (!p.isInt)
      pinned[root[p.value]] = true;
  for (ValueId r : fn.results)
    pinned[root[r]] = true;
  std::vector<int> last = lastReads(fn, plan, root);
  for (size_t i = 0; i < fn.ops.size(); ++i) // written counts as used
    if (!plan.computedElsewhere(fn.ops[i]))
      for (ValueId r : fn.ops[i].results)
        last[root[r]] = std::max(last[root[r]], static_cast<int>(i));
  plan.freeAfter.assign(fn.ops.size(), {});
  for (ValueId v = 0; v < n; ++v)
    if (root[v] == v && !pinned[v] && !plan.inlined[v] &&
        !plan.transposedOperand[v] && last[v] >= 0 && plan.producer[v])
      plan.freeAfter[last[v]].push_back(v);
}

/// KernelPlan::writesInto (its conditions are documented there).
void planDonatedResults(const Function &fn, KernelPlan &plan) {
  size_t n = fn.values.size();
  plan.writesInto.resize(n);
  for (ValueId v = 0; v < n; ++v)
    plan.writesInto[v] = v;
  std::vector<bool> donated = donatedValues(fn, plan);
  if (std::find(donated.begin(), donated.end(), true) == donated.end())
    return;
  std::vector<ValueId> root = bufferRoots(fn, plan);
  std::vector<int> last = lastReads(fn, plan, root);
  std::vector<bool> inRowGroup(fn.ops.size(), false), isResult(n, false);
  for (const RowGroup &g : plan.rowGroups)
    for (size_t i = g.begin; i < g.end; ++i)
      inRowGroup[i] = true;
  for (ValueId r : fn.results)
    isResult[r] = true;
  std::vector<bool> taken(n, false);
  std::vector<ValueId> leaves;
  for (size_t i = 0; i < fn.ops.size(); ++i) {
    const Operation &op = fn.ops[i];
    if (!isElementwiseOrScalar(op.code) || op.code == OpCode::Constant ||
        op.code == OpCode::SymScalar || plan.computedElsewhere(op) ||
        inRowGroup[i] || plan.loopOfOp[i] != -1 || !isResult[op.results[0]])
      continue;
    ValueId r = op.results[0];
    leaves.clear();
    for (ValueId o : op.operands)
      plan.leaves(o, leaves);
    // A donated parameter read here at the index written, and nowhere
    // after: through another view it would be read at other indices.
    for (ValueId p : leaves) {
      if (!donated[p] || taken[p] || fn.type(p) != fn.type(r) ||
          last[p] > static_cast<int>(i))
        continue;
      bool onlyItself =
          std::all_of(leaves.begin(), leaves.end(),
                      [&](ValueId l) { return root[l] != p || l == p; });
      if (!onlyItself)
        continue;
      plan.writesInto[r] = p;
      taken[p] = true;
      break;
    }
  }
}

bool sameLead(const TensorType &t, const std::vector<SymExpr> &lead) {
  return t.rank() == lead.size() + 1 &&
         std::equal(lead.begin(), lead.end(), t.dims.begin());
}

/// Whether op \p j can join a row group over \p lead; \p reduction tells
/// whether it is one of the group's reductions.
bool joinsRowGroup(const Function &fn, const KernelPlan &plan,
                   const Operation &op, const std::vector<SymExpr> &lead,
                   bool &reduction) {
  reduction = false;
  if (op.results.size() != 1 || !sameLead(fn.type(op.results[0]), lead))
    return false;
  if (isReductionOp(op.code)) {
    const TensorType &in = fn.type(op.operands[0]);
    const auto &axes = op.intsAttr("axes");
    // Only what reduceLastAxis lowers: one float row into a register.
    if (!isFloat(in.dtype) || !sameLead(in, lead) || axes.size() != 1 ||
        axes[0] != static_cast<int64_t>(in.rank()) - 1)
      return false;
    reduction = true;
  } else if (!isElementwiseOrScalar(op.code) || op.code == OpCode::Constant ||
             op.code == OpCode::SymScalar) {
    return false;
  }
  // Everything read must be rows too, or the same for every row.
  std::vector<ValueId> read;
  for (ValueId o : op.operands)
    plan.leaves(o, read);
  for (ValueId l : read)
    if (!sameLead(fn.type(l), lead) && fn.type(l).rank() > 1)
      return false;
  return true;
}

/// The row group's results read only inside it (RowGroup::scratch).
void planScratch(const Function &fn, const KernelPlan &plan, RowGroup &g) {
  std::set<ValueId> results(fn.results.begin(), fn.results.end());
  for (size_t i = g.begin; i < g.end; ++i) {
    const Operation &op = fn.ops[i];
    if (plan.computedElsewhere(op))
      continue;
    ValueId v = op.results[0];
    if (!results.count(v) && plan.lastReader[v] < static_cast<int>(g.end))
      g.scratch.push_back(v);
  }
}

/// Ops in the expression computing \p v once inlined values are
/// recomputed, counting up to \p limit + 1.
size_t recomputedOps(const KernelPlan &plan, ValueId v, size_t limit) {
  if (!plan.inlined[v] || !plan.producer[v])
    return 0;
  size_t n = 1;
  for (ValueId o : plan.producer[v]->operands) {
    if (n > limit)
      break;
    n += recomputedOps(plan, o, limit - std::min(n, limit));
  }
  return n;
}

/// rowGroupsRecompute: the group's elementwise scratch values become
/// inlined (recomputed by their readers), its reductions stay scratch (one
/// value per row). False, with the plan unchanged, when a recomputed
/// expression would exceed kMaxRecomputedOps.
bool recomputeRowScratch(const Function &fn, KernelPlan &plan, RowGroup &g) {
  std::vector<ValueId> inlinedNow, reductions;
  for (ValueId v : g.scratch) {
    if (isReductionOp(plan.producer[v]->code)) {
      reductions.push_back(v);
      continue;
    }
    plan.inlined[v] = true;
    inlinedNow.push_back(v);
  }
  bool ok = true;
  for (size_t i = g.begin; i < g.end && ok; ++i)
    for (ValueId o : fn.ops[i].operands)
      if (recomputedOps(plan, o, kMaxRecomputedOps) > kMaxRecomputedOps)
        ok = false;
  if (!ok) {
    for (ValueId v : inlinedNow)
      plan.inlined[v] = false;
    return false;
  }
  g.scratch = reductions;
  // Recomputed values are never stored, so nothing frees them.
  for (size_t i = g.begin; i < g.end; ++i)
    std::erase_if(plan.freeAfter[i],
                  [&](ValueId v) { return plan.inlined[v]; });
  return true;
}

/// Row fusion: a run of ops over the same rows [*L, n] (elementwise ops and
/// last-axis reductions, as in softmax and layer_norm) becomes one loop
/// over the rows, each op in turn per row, when it has a reduction and at
/// least two ops. Linear time.
void planRowGroups(const Function &fn, KernelPlan &plan) {
  size_t n = fn.ops.size();
  plan.rowGroups.assign(n, RowGroup());
  // The last op that reads each value (through fused trees): a value only
  // read inside its group can live in per-row scratch.
  plan.lastReader.assign(fn.values.size(), -1);
  for (size_t k = 0; k < n; ++k) {
    if (plan.computedElsewhere(fn.ops[k]))
      continue;
    std::vector<ValueId> read;
    for (ValueId o : fn.ops[k].operands)
      plan.leaves(o, read);
    for (ValueId l : read)
      plan.lastReader[l] = static_cast<int>(k);
  }
  // (Not where a row's scratch would be shared by threads.)
  bool allowed = plan.caps.rowGroups;
  size_t i = 0;
  while (i < n) {
    // The rows are the leading dims of the first op's result.
    const Operation &first = fn.ops[i];
    std::vector<SymExpr> lead;
    if (!plan.computedElsewhere(first) && first.results.size() == 1 &&
        fn.type(first.results[0]).rank() >= 2) {
      const TensorType &t = fn.type(first.results[0]);
      lead.assign(t.dims.begin(), t.dims.end() - 1);
    }
    size_t j = i, count = 0, reductions = 0;
    while (!lead.empty() && j < n && count < kMaxRowGroupOps) {
      const Operation &op = fn.ops[j];
      if (plan.computedElsewhere(op)) { // computed inside its consumer
        ++j;
        continue;
      }
      bool reduction;
      if (!joinsRowGroup(fn, plan, op, lead, reduction))
        break;
      reductions += reduction;
      ++count;
      ++j;
    }
    // A GPU runs even a lone reduction as a group: a block per row.
    size_t minOps = plan.caps.rowGroupsRecompute ? 1 : 2;
    RowGroup g;
    g.begin = i;
    g.end = j;
    g.lead = lead;
    if (allowed && reductions > 0 && count >= minOps) {
      planScratch(fn, plan, g);
      if (!plan.caps.rowGroupsRecompute || recomputeRowScratch(fn, plan, g)) {
        plan.rowGroups[i] = std::move(g);
        i = j;
        continue;
      }
    }
    ++i;
  }
}

} // namespace

KernelPlan planKernels(const Function &fn, const TargetCaps &caps) {
  KernelPlan plan;
  plan.caps = caps;
  plan.outlining = caps.outlining && fn.ops.size() > caps.outlineOpsAbove;
  planLoops(fn, plan);
  planFusion(fn, plan);
  planSliceViews(fn, plan);
  planInPlaceUpdates(fn, plan);
  planFrees(fn, plan);
  planRowGroups(fn, plan);
  planDonatedResults(fn, plan);
  return plan;
}

// --- printing -------------------------------------------------------------

namespace {

/// The shortest decimal text that reads back as \p v (as the IR printer).
std::string numberText(const Number &n) {
  if (n.isInt)
    return std::to_string(n.i);
  double v = n.f;
  if (std::isnan(v))
    return "nan";
  if (std::isinf(v))
    return v > 0 ? "inf" : "-inf";
  char buf[64];
  for (int prec = 1; prec <= 17; ++prec) {
    std::snprintf(buf, sizeof buf, "%.*g", prec, v);
    if (std::strtod(buf, nullptr) == v)
      break;
  }
  std::string s = buf;
  if (s.find_first_of(".eEn") == std::string::npos)
    s += ".0";
  return s;
}

class PlanPrinter {
public:
  PlanPrinter(const Function &fn, const KernelPlan &plan)
      : fn(fn), plan(plan), names(valueNames(fn)), consumers(fn.values.size()) {
    for (size_t i = 0; i < fn.ops.size(); ++i)
      if (!plan.computedElsewhere(fn.ops[i]))
        for (ValueId o : fn.ops[i].operands)
          noteConsumer(o, i);
  }

  std::string print() const {
    const TargetCaps &c = plan.caps;
    std::string out = "plan @" + fn.name;
    out += std::string(" gemm-bt=") + (c.transposedGemmOperand ? "yes" : "no");
    out += std::string(" row-groups=") + (!c.rowGroups           ? "no"
                                          : c.rowGroupsRecompute ? "recompute"
                                                                 : "yes");
    out += c.outlining ? " outline-above=" + std::to_string(c.outlineOpsAbove)
                       : std::string(" outline=no");
    out += std::string(" kernels=") + (c.launchesKernels ? "yes" : "no");
    out += "\n";
    size_t groupEnd = 0;
    std::vector<ValueId> groupFrees; // freed after the row loop
    for (size_t i = 0; i < fn.ops.size(); ++i) {
      const RowGroup &g = plan.rowGroups[i];
      if (g.end > g.begin) {
        out += "  row group " + range(g) + " over rows " + dimList(g.lead) +
               (g.scratch.empty() ? "" : ", scratch " + list(g.scratch)) + "\n";
        groupEnd = g.end;
      }
      out += "  " + opLine(i) + "\n";
      const std::vector<ValueId> &frees = plan.freeAfter[i];
      if (i < groupEnd) { // the lowering frees them after the row loop
        groupFrees.insert(groupFrees.end(), frees.begin(), frees.end());
        if (i + 1 == groupEnd && !groupFrees.empty()) {
          out += "    free after the row loop " + list(groupFrees) + "\n";
          groupFrees.clear();
        }
      } else if (fn.ops[i].code == OpCode::EndLoop) {
        std::vector<ValueId> each, after;
        for (ValueId v : frees)
          (plan.loopHolds(plan.loopOfOp[i], plan.loopOfValue[v]) ? each : after)
              .push_back(v);
        if (!each.empty())
          out += "    free each iteration " + list(each) + "\n";
        if (!after.empty())
          out += "    free after the loop " + list(after) + "\n";
      } else if (!frees.empty()) {
        out += "    free " + list(frees) + "\n";
      }
    }
    return out;
  }

private:
  const Function &fn;
  const KernelPlan &plan;
  std::vector<std::string> names;
  /// For each value computed inside a consumer: the ops whose loops do.
  std::vector<std::vector<size_t>> consumers;

  void noteConsumer(ValueId v, size_t op) {
    if (!plan.inlined[v])
      return;
    if (consumers[v].empty() || consumers[v].back() != op)
      consumers[v].push_back(op);
    for (ValueId o : plan.producer[v]->operands)
      noteConsumer(o, op);
  }

  template <typename Span> static std::string range(const Span &s) {
    return "ops " + std::to_string(s.begin) + ".." + std::to_string(s.end - 1);
  }

  static std::string dimList(const std::vector<SymExpr> &dims) {
    std::string out = "[";
    for (size_t i = 0; i < dims.size(); ++i)
      out += (i ? ", " : "") + dims[i].str();
    return out + "]";
  }

  std::string list(const std::vector<ValueId> &values) const {
    std::string out;
    for (size_t i = 0; i < values.size(); ++i)
      out += (i ? ", " : "") + names[values[i]];
    return out;
  }

  /// What computes \p v where it is read: its name, a constant, or the
  /// fused expression.
  std::string tree(ValueId v) const {
    if (plan.transposedOperand[v])
      return names[plan.producer[v]->operands[0]] + "^T";
    if (!plan.inlined[v])
      return names[v];
    const Operation &p = *plan.producer[v];
    if (p.code == OpCode::Constant)
      return numberText(p.numAttr("value"));
    if (p.code == OpCode::SymScalar)
      return p.exprAttr("expr").str();
    return expression(p);
  }

  std::string expression(const Operation &op) const {
    std::string out = std::string(opInfo(op.code).name) + "(";
    for (size_t i = 0; i < op.operands.size(); ++i)
      out += (i ? ", " : "") + tree(op.operands[i]);
    return out + ")";
  }

  std::string opLine(size_t i) const {
    const Operation &op = fn.ops[i];
    std::string out = "op " + std::to_string(i) + " ";
    if (!op.results.empty())
      out += list(op.results) + " = ";
    out += opInfo(op.code).name;
    if (op.code == OpCode::Assert)
      return out + " " + op.condAttr("cond").str();
    if (op.code == OpCode::Loop)
      return out + ": " + op.exprAttr("sym").str() + " in [" +
             op.exprAttr("lo").str() + ", " + op.exprAttr("hi").str() +
             "), carries " + list(op.operands);
    if (op.code == OpCode::EndLoop)
      return out + ": next " + list(op.operands);
    if (op.results.empty())
      return out;
    ValueId r = op.results[0];
    if (plan.inlined[r]) {
      out += ": fused";
      for (size_t k = 0; k < consumers[r].size(); ++k)
        out += (k ? ", op " : " into op ") + std::to_string(consumers[r][k]);
      return out;
    }
    if (plan.sliceView[r])
      return out + ": view of " + names[op.operands[0]];
    if (plan.updateInPlace[r])
      return out + ": in place in " + names[op.operands[0]] + "'s buffer";
    if (plan.transposedOperand[r]) {
      for (size_t k = i + 1; k < fn.ops.size(); ++k)
        if (fn.ops[k].code == OpCode::Matmul)
          for (size_t side : {0, 1})
            if (fn.ops[k].operands[side] == r)
              return out + ": read as " + (side ? "B" : "A") + "^T by op " +
                     std::to_string(k);
      return out + ": read transposed";
    }
    out += ": " + std::string(isElementwiseOrScalar(op.code) ? "loop " : "") +
           expression(op);
    if (plan.fusedDepth[r] > 1)
      out += ", depth " + std::to_string(plan.fusedDepth[r]);
    if (plan.writesInto[r] != r)
      out += ", into donated " + names[plan.writesInto[r]] + "'s buffer";
    return out;
  }
};

} // namespace

std::string printKernelPlan(const Function &fn, const KernelPlan &plan) {
  return PlanPrinter(fn, plan).print();
}

} // namespace tsl
