#pragma once
/// \file The reference interpreter: runs a Function on host tensors. It is
/// the oracle every backend is compared with — correct first, not fast.
/// Every runtime check (assertions, index bounds, integer division by zero,
/// argument shapes) reports an error with the op's source location instead
/// of misbehaving.

#include "ir/Function.h"
#include "ir/Tensor.h"

#include <map>
#include <string>
#include <vector>

namespace tsl {

/// One call argument: a tensor, or an integer for an `int` parameter.
struct ArgValue {
  bool isInt = false;
  int64_t intValue = 0;
  Tensor tensor;
};

/// A failure at run time, with the location of the op or check that failed.
struct RunError {
  std::string message;
  Location loc;
  std::vector<std::string> notes;
};

/// Binds every input symbol of \p fn from the arguments' shapes and int
/// values (solving derived dims such as `2*N` or `N + 1`), then checks
/// declared ranges, divisibility and the variant's guards. Fails with an
/// error naming the argument and dim.
bool bindArguments(const Function &fn, const std::vector<ArgValue> &args,
                   std::map<std::string, int64_t> &values, RunError &error);

/// Runs \p fn. On success fills \p outputs (one per result).
/// Elementwise unary op \p code of a float \p x, in double, as the
/// interpreter computes it (constant folding of `log(2.0)`); nullopt for an
/// op without float math.
std::optional<double> unaryFloatMath(OpCode code, double x);

bool interpret(const Function &fn, const std::vector<ArgValue> &args,
               std::vector<Tensor> &outputs, RunError &error);

/// Context handed to one op's kernel.
struct KernelContext {
  const Operation &op;
  std::vector<const Tensor *> in;
  /// Result shapes evaluated from the result types; an entry is -1 where
  /// the size is only known after the op ran (unbacked).
  std::vector<std::vector<int64_t>> outShapes;
  std::vector<DType> outTypes;
  std::vector<Tensor> out;
  std::map<std::string, int64_t> &values;
  std::string error;

  /// Evaluates a size expression under the bound symbols.
  bool eval(SymExpr e, int64_t &out);
  /// Allocates output \p i with the given shape.
  bool allocate(size_t i, std::vector<int64_t> shape);
  bool fail(std::string message) {
    error = std::move(message);
    return false;
  }
};

/// The sizes of a shape before (outer), along (n) and after (inner) one
/// axis: kernels that work along an axis walk [outer, n, inner].
struct AxisSplit {
  int64_t outer = 1, n = 1, inner = 1;
};

/// \p shape split at \p axis (< its rank).
AxisSplit splitAt(const std::vector<int64_t> &shape, size_t axis);

/// Runs one op: its kernel from a table indexed by OpCode, built over the op
/// table (ir/InterpKernels.cpp); an op without one fails to compile there.
bool runKernel(KernelContext &ctx);

/// The kernel of the fused attention op (ir/InterpAttention.cpp): per query
/// row, softmax(q k^T * scale + mask) v in double. A row whose scores are
/// all -inf, or hold a NaN, gives NaN, as the unfused ops do. Never fails
/// once the shape rule held.
bool attentionKernel(KernelContext &ctx);

/// conv2d_weight_grad (ir/InterpWindowGrad.cpp): each weight's gradient
/// summed in double over the images and output positions. Never fails once
/// the shape rule held.
bool conv2dWeightGradKernel(KernelContext &ctx);

/// max_pool2d_grad (ir/InterpWindowGrad.cpp): each window's g added (in
/// double) at the element max_pool2d took, the first maximum or the first
/// NaN of the window. Never fails once the shape rule held.
bool maxPool2dGradKernel(KernelContext &ctx);

/// cumsum and cumprod (ir/InterpIndexing.cpp): a serial scan along the
/// axis, floats in double (rounded on store), integers in int64 wrapped on
/// store (the same as wrapping in the element type). Never fails.
bool scanKernel(KernelContext &ctx);

/// gather (ir/InterpIndexing.cpp): fails on the first index outside
/// [0, size of the axis), naming it ("index 5 is out of bounds for axis 1
/// of size 3"); negative indices are out of bounds, as in torch.gather.
bool gatherKernel(KernelContext &ctx);

/// sort (ir/InterpIndexing.cpp): a stable sort of each row along the axis,
/// NaN above every number, giving the values and their i64 positions.
/// Never fails.
bool sortKernel(KernelContext &ctx);

/// scatter and scatter_add (ir/InterpIndexing.cpp): x, then for each index
/// position p in row-major order, src[p] stored (added) at p with the axis
/// coordinate replaced by index[p]; so among duplicate targets the last p
/// wins. Fails like gather on an index out of bounds.
bool scatterKernel(KernelContext &ctx);
/// index_add(x, axis, index, source): x with source's slices added at the
/// indexed slices, in order of the index.
bool indexAddKernel(KernelContext &ctx);
/// masked_scatter(x, mask, source): x with the masked elements replaced by
/// source's, both in row-major order.
bool maskedScatterKernel(KernelContext &ctx);
/// index_select (ir/InterpIndexing.cpp): fails on the first index outside
/// [0, size of the axis), naming it.
bool indexSelectKernel(KernelContext &ctx);
/// topk (ir/InterpIndexing.cpp): per row of the last axis, the k largest
/// (a stable sort, NaN the largest) and their i64 positions; fails when k
/// is outside [0, size of the last axis].
bool topkKernel(KernelContext &ctx);

} // namespace tsl
