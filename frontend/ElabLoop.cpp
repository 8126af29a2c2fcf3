// Mutable variables (`var`, assignment) and `for` loops: a loop becomes a
// loop op whose body is elaborated once, with the loop variable a symbol
// whose range holds only inside the body (docs/language.md, "Loops").
#include "frontend/ElaboratorImpl.h"

namespace tsl {

namespace {

/// The index of the innermost scope of \p frame holding \p name, or -1.
long scopeHolding(const Frame &frame, const std::string &name) {
  for (size_t i = frame.scopes.size(); i-- > 0;)
    if (frame.scopes[i].count(name))
      return static_cast<long>(i);
  return -1;
}

/// The variable an assignment target names (`h` in `h = ...` and in
/// `h[t] = ...`), or null when the target is no such form.
const ast::Expr *assignedName(const ast::Expr &target) {
  const ast::Expr *e = &target;
  if (e->kind == ast::Expr::Kind::Index)
    e = e->operands[0].get();
  return e->kind == ast::Expr::Kind::Name ? e : nullptr;
}

/// The variables assignments in \p block (and blocks nested in it) assign,
/// in order of first assignment.
void assignedNames(const ast::Block &block, std::vector<LoopAssignment> &out) {
  for (const ast::Stmt &st : block.stmts) {
    if (st.kind == ast::Stmt::Kind::Assign)
      if (const ast::Expr *name = assignedName(*st.target)) {
        bool seen = false;
        for (const LoopAssignment &a : out)
          seen |= a.name == name->text;
        if (!seen)
          out.push_back({name->text, st.range});
      }
    for (const auto &b : st.blocks)
      assignedNames(*b, out);
  }
}

} // namespace

bool Elaborator::execAssign(const ast::Stmt &st, Frame &frame) {
  const ast::Expr &target = *st.target;
  const ast::Expr *name = assignedName(target);
  if (!name)
    return error(target.range, "cannot assign to this expression",
                 "assign to a variable declared with 'var', or to a "
                 "subscript of one (x[i] = v)");
  long scope = scopeHolding(frame, name->text);
  if (scope < 0) {
    SemValue unused;
    if (!lookupName(name->text, name->range, frame, unused))
      return false; // unknown: lookupName reported it with its hints
    return error(name->range,
                 "cannot assign to '" + name->text + "': it is not a variable",
                 "declare a variable with 'var " + name->text + " = ...;'");
  }
  if (!frame.vars.count({static_cast<size_t>(scope), name->text}))
    return error(name->range,
                 "cannot assign to '" + name->text +
                     "': it is not declared with 'var'",
                 "declare it with 'var " + name->text + " = ...;'");
  SemValue v;
  if (!eval(*st.value, frame, v))
    return false;
  if (v.kind == SemValue::Kind::None)
    return error(st.value->range, "this expression has no value to assign");
  SemValue &slot = frame.scopes[scope][name->text];
  if (target.kind == ast::Expr::Kind::Name) {
    v.range = name->range;
    slot = v;
    return true;
  }
  if (slot.kind != SemValue::Kind::Tensor)
    return error(name->range, "cannot assign through a subscript of '" +
                                  name->text + "': it holds " +
                                  kindName(slot.kind) + ", not a tensor");
  ValueId updated;
  if (!assignBlock(target, slot.tensor, v, frame, updated))
    return false;
  slot = SemValue::ofTensor(updated, name->range);
  return true;
}

bool Elaborator::assignBlock(const ast::Expr &target, ValueId x,
                             const SemValue &value, Frame &frame,
                             ValueId &out) {
  const TensorType t = fn.type(x); // a copy: emitting ops grows fn.values
  SliceRegion region;
  region.allowTensors = region.assigning = true; // y[mask] = v
  if (!resolveSlices(target, t, frame, region))
    return false;
  bool masked = !region.tensorIndices.empty();
  if (masked && !maskAssignable(target, t, region))
    return false;
  if (!masked && (region.strided() || region.newAxes > 0))
    return error(target.range,
                 "not supported: assigning through a subscript with a step "
                 "or None");
  ValueId v;
  if (!toTensor(value, t.dtype, value.range, v))
    return false;
  if (fn.type(v).dtype != t.dtype)
    return error(value.range,
                 std::string("cannot assign ") + dtypeName(fn.type(v).dtype) +
                     " values into a tensor of type " + t.str(),
                 std::string("convert them with cast(..., ") +
                     dtypeName(t.dtype) + ")");
  if (masked)
    return assignThroughMask(target, x, region, v, value.range, out);
  SourceRange range = target.range;
  // The value broadcast to the block replaces it (update_slice: in place
  // where nothing reads the old tensor after it, KernelPlan).
  if (fn.type(v).dims != region.keepDims &&
      !emit1(OpCode::Expand, {v}, {{"shape", region.keepDims}}, range, v))
    return false;
  if (region.keepDims.size() != t.rank() &&
      !emit1(OpCode::Reshape, {v}, {{"shape", region.sizes}}, range, v))
    return false;
  return emit1(OpCode::UpdateSlice, {x, v}, {{"starts", region.starts}}, range,
               out);
}

bool Elaborator::execFor(const ast::Stmt &st, Frame &frame) {
  const std::string &var = st.names[0];
  SemValue loV, hiV;
  SymExpr lo, hi;
  if (!eval(*st.lo, frame, loV) || !asInt(loV, "a loop bound", lo) ||
      !eval(*st.hi, frame, hiV) || !asInt(hiV, "a loop bound", hi))
    return false;
  // The variables the body assigns that live outside it are carried.
  std::vector<LoopAssignment> assigned;
  assignedNames(*st.blocks[0], assigned);
  std::vector<LoopAssignment> carried;
  std::vector<long> homes;
  std::vector<ValueId> initial;
  for (const LoopAssignment &a : assigned) {
    long scope = scopeHolding(frame, a.name);
    if (scope < 0 || !frame.vars.count({static_cast<size_t>(scope), a.name}))
      continue; // not an outer variable: the assignment reports it
    const SemValue &v = frame.scopes[scope][a.name];
    if (v.kind != SemValue::Kind::Tensor)
      return error(a.where, "not supported: '" + a.name + "' holds " +
                                kindName(v.kind) +
                                " and changes inside a 'for' loop; only "
                                "tensors are carried across iterations");
    carried.push_back(a);
    homes.push_back(scope);
    initial.push_back(v.tensor);
  }
  // The loop variable: a symbol with no value at compile time, so that
  // the body is checked once for every iteration.
  std::string symName = var;
  int &suffix = loopSymbolSuffix[var];
  if (suffix > 0)
    symName = var + "_" + std::to_string(suffix);
  for (; env.lookup(symName) || frame.module->dims.count(symName);)
    symName = var + "_" + std::to_string(++suffix);
  ++suffix;
  SymbolInfo info;
  info.name = symName;
  info.kind = DimKind::Unbacked;
  info.isInt = true;
  info.lo = lo.isConst() ? lo.constValue() : INT64_MIN;
  if (hi.isConst() && hi.constValue() > INT64_MIN)
    info.hi = hi.constValue() - 1;
  info.origin = st.nameRanges[0];
  info.description = "the variable of 'for " + var + " in ...'";
  info.loopVariable = true;
  SymExpr sym = env.addSymbol(info);
  // A range empty at compile time (`0..T` with T = 0): no iteration runs,
  // so every requirement of the body holds vacuously. The body is still
  // elaborated (its type errors are reported), but what it emits is
  // dropped: the carried variables keep their values.
  const bool empty = env.prove(SymCond::lt(lo, hi)) == Truth::False;
  const size_t opsBefore = fn.ops.size(), valuesBefore = fn.values.size();

  std::vector<ValueId> inside;
  if (!emit(OpCode::Loop, initial, {{"sym", sym}, {"lo", lo}, {"hi", hi}},
            st.nameRanges[0], inside))
    return false;
  for (size_t k = 0; k < inside.size(); ++k)
    fn.values[inside[k]].type = fn.type(initial[k]);
  ShapeEnv::FactMark mark = env.markFacts();
  env.addFact(SymCond::ge(sym, lo));
  env.addFact(SymCond::lt(sym, hi));
  frame.scopes.emplace_back();
  size_t loopScope = frame.scopes.size() - 1;
  for (size_t k = 0; k < carried.size(); ++k) {
    frame.scopes.back()[carried[k].name] =
        SemValue::ofTensor(inside[k], carried[k].where);
    frame.vars.insert({loopScope, carried[k].name});
  }
  frame.scopes.back()[var] = SemValue::ofInt(sym, st.nameRanges[0]);
  ++frame.loops;
  emptyLoops += empty;
  bool returned = false;
  SemValue unused;
  bool ok = execBlock(*st.blocks[0], frame, returned, unused);
  emptyLoops -= empty;
  --frame.loops;
  if (!ok)
    return false;
  std::vector<ValueId> next;
  if (!carriedTypesKept(st, carried, inside, frame.scopes[loopScope], next))
    return false;
  std::vector<ValueId> after;
  if (empty) {
    dropEmittedSince(opsBefore, valuesBefore);
    after = initial;
  } else if (!emit(OpCode::EndLoop, next, {}, st.nameRanges[0], after)) {
    return false;
  }
  env.forgetFactsSince(mark);
  frame.popScope();
  for (size_t k = 0; k < carried.size(); ++k) {
    fn.values[after[k]].type = fn.type(initial[k]);
    frame.scopes[homes[k]][carried[k].name] =
        SemValue::ofTensor(after[k], carried[k].where);
  }
  return true;
}

void Elaborator::dropEmittedSince(size_t ops, size_t values) {
  fn.ops.resize(ops);
  fn.values.resize(values);
  if (producerOp.size() > values)
    producerOp.resize(values);
  // Ids from `values` on will name new values.
  stoppedGradients.erase(stoppedGradients.lower_bound(values),
                         stoppedGradients.end());
  while (!callRuns.empty() && callRuns.back().end > ops)
    callRuns.pop_back();
}

bool Elaborator::carriedTypesKept(const ast::Stmt &st,
                                  const std::vector<LoopAssignment> &carried,
                                  const std::vector<ValueId> &inside,
                                  const std::map<std::string, SemValue> &scope,
                                  std::vector<ValueId> &next) {
  for (size_t k = 0; k < carried.size(); ++k) {
    const std::string &name = carried[k].name;
    const SemValue &v = scope.at(name);
    std::vector<DiagNote> notes = {
        {st.nameRanges[0], "'" + name +
                               "' is carried across the "
                               "iterations of this loop"}};
    if (v.kind != SemValue::Kind::Tensor)
      return errorWithNotes(carried[k].where,
                            "loop-carried '" + name +
                                "' must stay a tensor, but one iteration "
                                "makes it " +
                                kindName(v.kind),
                            notes);
    const TensorType &before = fn.type(inside[k]);
    const TensorType &after = fn.type(v.tensor);
    bool same = before.dtype == after.dtype && before.rank() == after.rank();
    for (size_t d = 0; same && d < before.rank(); ++d)
      same =
          before.dims[d] == after.dims[d] ||
          env.prove(SymCond::eq(before.dims[d], after.dims[d])) == Truth::True;
    if (!same)
      return errorWithNotes(
          carried[k].where,
          "the type of loop-carried '" + name + "' changes in one iteration: " +
              before.str() + " before, " + after.str() + " after",
          notes,
          "a carried value must keep its type; collect per-iteration "
          "results by assigning into a tensor made before the loop "
          "(out[" +
              st.names[0] + "] = value)");
    next.push_back(v.tensor);
  }
  return true;
}

} // namespace tsl
