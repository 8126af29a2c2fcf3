#pragma once
/// \file Private to ir/: the shape rules of each op family (one function per
/// OpCategory; inferResultTypes dispatches through a table indexed by OpCode,
/// built over Ops.def in ShapeRules.cpp) and the checks they share.
/// The element-type checks read the op table (DTypeRule, ResultDType), so an
/// op added to Ops.def in an existing category needs no code here.

#include "ir/ShapeRules.h"

namespace tsl::shape_rules {

/// A rule: appends the result types of ctx.op to \p results, or returns
/// false with ctx.error set.
using Rule = bool (*)(ShapeContext &ctx, std::vector<TensorType> &results);

// --- element-type checks (ShapeRules.cpp) ---

/// Operands from \p first on share one element type ("mismatched element
/// types f32 and i64 in 'add'").
bool sameDtypes(ShapeContext &ctx, size_t first);
/// \p t is a float tensor ("'exp' needs a floating-point tensor, got ...").
bool needFloat(ShapeContext &ctx, const TensorType &t);
/// \p t is not bool ("'neg' does not apply to bool tensors, got ...").
bool needNumeric(ShapeContext &ctx, const TensorType &t);
/// \p t is bool ("'not' needs a bool tensor, got ...").
bool needBool(ShapeContext &ctx, const TensorType &t);
/// Checks data operand \p t against the op's DTypeRule (Any, Numeric, Float,
/// Bool) with the messages above. Binary elementwise ops reject bool before
/// asking for a float, like the arithmetic operators; rules that name one
/// operand specially (where, masked_select, index_select, item) are checked
/// by their families.
bool checkDataDType(ShapeContext &ctx, const TensorType &t);
/// The result element type by the op's ResultDType (SameAsData: operand 0,
/// or operand 1 of where; FromAttr: the dtype attribute). Not for None or
/// ValuesAndI64.
DType resultDType(const ShapeContext &ctx);
/// Requires \p e >= 0 ("WHAT is negative (e)").
bool nonNegative(ShapeContext &ctx, SymExpr e, const std::string &what);
/// "f32[N], i64[M]": the operand types, for messages.
std::string operandList(const ShapeContext &ctx);

// --- one rule per family ---

bool elementwiseUnary(ShapeContext &ctx, std::vector<TensorType> &results);
bool elementwiseBinary(ShapeContext &ctx, std::vector<TensorType> &results);
bool elementwiseSelect(ShapeContext &ctx, std::vector<TensorType> &results);
/// Scalar and Creation ops: no operands, types from attributes.
bool creation(ShapeContext &ctx, std::vector<TensorType> &results);
bool reduction(ShapeContext &ctx, std::vector<TensorType> &results);
bool matmul(ShapeContext &ctx, std::vector<TensorType> &results);
/// reshape, permute, expand, concat, slice, pad, update_slice: each op's
/// rule from the table in ShapeRulesLayout.cpp.
bool layout(ShapeContext &ctx, std::vector<TensorType> &results);
/// conv2d, max_pool2d, index_select, topk, ...: each op's rule from the
/// table in ShapeRulesLibrary.cpp.
bool library(ShapeContext &ctx, std::vector<TensorType> &results);
/// nonzero, masked_select, unique, item: each op's rule from the table in
/// ShapeRulesLibrary.cpp.
bool dataDependent(ShapeContext &ctx, std::vector<TensorType> &results);

} // namespace tsl::shape_rules
