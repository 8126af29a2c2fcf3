// Binding call arguments to parameters: element-type parameters
// (`fn f<T: float>(x: T[N])`), bool flags and tensors.
#include "frontend/ElaboratorImpl.h"

#include <algorithm>

namespace tsl {

namespace {

/// Whether \p t (a parameter's type) names \p name as its element type or
/// as a dim (plain, inline or pack).
void usesName(const ast::TypeExpr &t, const std::string &name, bool &asType,
              const ast::TypeDim *&asDim) {
  asType |= t.base == name;
  for (const ast::TypeDim &d : t.dims) {
    bool named = (d.kind == ast::TypeDim::Kind::Pack ||
                  d.kind == ast::TypeDim::Kind::Inline)
                     ? d.name == name
                     : d.kind == ast::TypeDim::Kind::Expr &&
                           d.expr->kind == ast::Expr::Kind::Name &&
                           d.expr->text == name;
    if (named && !asDim)
      asDim = &d;
  }
}

} // namespace

const ast::TypeParam *typeParamOf(const std::string &name, const Frame &frame) {
  if (!frame.decl)
    return nullptr;
  for (const ast::TypeParam &tp : frame.decl->typeParams)
    if (tp.name == name)
      return &tp;
  return nullptr;
}

std::optional<DType> elementTypeOf(const std::string &name,
                                   const Frame &frame) {
  if (typeParamOf(name, frame)) {
    auto it = frame.typeArgs.find(name);
    if (it == frame.typeArgs.end())
      return std::nullopt;
    return it->second.first;
  }
  return parseDType(name);
}

bool Elaborator::checkTypeParams(const ast::FnDecl &decl) {
  for (size_t i = 0; i < decl.typeParams.size(); ++i) {
    const ast::TypeParam &tp = decl.typeParams[i];
    if (tp.bound != "float")
      return error(tp.boundRange,
                   "unknown bound '" + tp.bound + "' for type parameter '" +
                       tp.name + "'",
                   "the bound is 'float' (f16, bf16, f32 or f64)");
    if (parseDType(tp.name) || tp.name == "int")
      return error(tp.nameRange,
                   "type parameter '" + tp.name + "' has the name of a type");
    for (size_t j = 0; j < i; ++j)
      if (decl.typeParams[j].name == tp.name)
        return error(tp.nameRange,
                     "type parameter '" + tp.name + "' is declared twice");
    bool asType = false;
    const ast::TypeDim *asDim = nullptr;
    for (const ast::Param &p : decl.params) {
      if (p.name == tp.name)
        return errorWithNotes(
            p.nameRange,
            "parameter '" + p.name + "' has the name of a type parameter",
            {{tp.nameRange, "'" + tp.name + "' is declared here"}});
      usesName(p.type, tp.name, asType, asDim);
    }
    for (const ast::TypeExpr &r : decl.results)
      usesName(r, tp.name, asType, asDim);
    if (asDim)
      return errorWithNotes(
          asDim->range,
          "'" + tp.name + "' is a type parameter of '" + decl.name +
              "', not a dim",
          {{tp.nameRange, "'" + tp.name + "' is declared here"}},
          "give the dim another name");
    bool inParams = false;
    for (const ast::Param &p : decl.params)
      inParams |= p.type.base == tp.name;
    if (!inParams)
      return error(tp.nameRange,
                   "type parameter '" + tp.name + "' of '" + decl.name +
                       "' is not the element type of any parameter",
                   "use it in a parameter's type, e.g. x: " + tp.name + "[N]");
  }
  return true;
}

bool Elaborator::bindTypeParam(const ast::TypeParam &tp, DType actual,
                               Frame &frame, SourceRange where,
                               const std::string &what) {
  std::string actualName = dtypeName(actual);
  auto it = frame.typeArgs.find(tp.name);
  if (it == frame.typeArgs.end()) {
    if (!isFloat(actual))
      return errorWithNotes(
          where,
          what + " has element type " + actualName + " but " + tp.name +
              " must be a float type (f16, bf16, f32 or f64)",
          {{tp.nameRange, "'" + tp.name + "' is declared here"}},
          "convert it with cast(..., f32)");
    // "argument 'x' of 'f'" reads "argument 'x'" in a message about 'f'.
    std::string from = what;
    std::string suffix =
        frame.decl ? " of '" + frame.decl->name + "'" : std::string();
    if (!suffix.empty() && from.size() > suffix.size() &&
        from.compare(from.size() - suffix.size(), suffix.size(), suffix) == 0)
      from.resize(from.size() - suffix.size());
    frame.typeArgs[tp.name] = {actual, from};
    SemValue t;
    t.kind = SemValue::Kind::DType;
    t.dtype = actual;
    t.range = tp.nameRange;
    frame.scopes.front()[tp.name] = t; // cast(x, T), zeros(..., T)
    return true;
  }
  if (it->second.first == actual)
    return true;
  std::string bound = dtypeName(it->second.first);
  return error(where,
               what + " has element type " + actualName + " but " + tp.name +
                   " is " + bound + " from " + it->second.second,
               "convert it with cast(..., " + bound + ")");
}

bool Elaborator::bindArgument(const ast::FnDecl &decl, const ast::Param &p,
                              SemValue v, Frame &frame, bool mayDefer,
                              bool &deferred) {
  deferred = false;
  std::string what = "argument '" + p.name + "' of '" + decl.name + "'";
  if (p.type.base == "int") {
    if (p.type.hasDims)
      return error(p.type.range, "'int' takes no dims",
                   "use i64[...] for a tensor of integers");
    if (v.kind != SemValue::Kind::Int)
      return error(v.range, what + " must be an int, got " + kindName(v.kind));
    frame.scopes.back()[p.name] = v;
    return true;
  }
  if (p.type.base == "bool" && !p.type.hasDims &&
      !(v.kind == SemValue::Kind::Tensor &&
        fn.type(v.tensor).dtype == DType::Bool)) {
    // A flag: a compile-time condition (an int counts as != 0).
    if (v.kind == SemValue::Kind::Int)
      v = SemValue::ofCond(SymCond::ne(v.i, SymExpr(0)), v.range);
    if (v.kind != SemValue::Kind::Cond)
      return error(v.range,
                   what +
                       " must be a bool (true, false or a condition on "
                       "sizes), got " +
                       kindName(v.kind) +
                       (v.kind == SemValue::Kind::Tensor
                            ? " " + fn.type(v.tensor).str()
                            : std::string()));
    frame.scopes.back()[p.name] = v;
    return true;
  }
  const ast::TypeParam *tp = typeParamOf(p.type.base, frame);
  std::optional<DType> dt = elementTypeOf(p.type.base, frame);
  if (!dt && !tp)
    return error(p.type.baseRange, "unknown type '" + p.type.base + "'",
                 "types are int, bool, an element type (bool i8 i32 i64 f16 "
                 "bf16 f32 f64) or a type parameter");
  if ((v.kind == SemValue::Kind::Int || v.kind == SemValue::Kind::Float) &&
      p.type.dims.empty()) {
    if (!dt) { // T: float not bound yet
      if (mayDefer)
        return deferred = true;
      return error(v.range,
                   "cannot infer " + p.type.base + " of '" + decl.name +
                       "' from argument '" + p.name + "' (" + kindName(v.kind) +
                       "): no tensor argument has element "
                       "type " +
                       p.type.base,
                   "pass a tensor, e.g. cast(..., f32)");
    }
    ValueId id;
    if (!toTensor(v, dt, v.range, id))
      return false;
    v = SemValue::ofTensor(id, v.range);
  }
  if (v.kind != SemValue::Kind::Tensor)
    return error(v.range, what + " must be a tensor, got " + kindName(v.kind));
  if (!bindType(p.type, fn.type(v.tensor), frame, v.range, what))
    return false;
  frame.scopes.back()[p.name] = v;
  return true;
}

} // namespace tsl
