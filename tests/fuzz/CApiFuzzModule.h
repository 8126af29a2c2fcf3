#pragma once
/// \file The module the C API fuzz target (CApiFuzzer.cpp) loads, and the
/// signature of each of its functions, so that the target can build calls
/// that fit them ("fit" calls: the dims chosen by the input, 0 and 1
/// included). Together the functions use every op of the op table
/// (ir/Ops.def): elementwise, creation, reductions, scans, layout, library
/// and data-dependent ops, attention (formed by the fusion pass), a `for`
/// loop (loop, end_loop, update_slice) and a helper of more than 16 ops
/// called three times outside loops, which outlining turns into `call` ops.
/// FuzzModuleTest.cpp fails when the op table has an op that no function
/// of this module uses, so the module grows with the table.
///
/// Standard headers only: the fuzz target does not link the compiler's
/// headers, only the C API.

#include <cstdint>

namespace tsl_fuzz {

/// The fuzz module's source. The first five functions are the target's
/// original ones (in the same order: the seeds of corpus-capi/ name them by
/// index).
inline const char *const kModuleSource =
    "dim N: dynamic;\ndim M: dynamic;\ndim K: dynamic;\n"
    "dim B: dynamic;\ndim C: dynamic;\ndim H: dynamic;\ndim W: dynamic;\n"
    "dim O: dynamic;\n"
    // 0-4: the original functions.
    "fn axpy(a: f32[N], b: f32[N], k: int dynamic) -> f32[N] {\n"
    "  return a * 2.0 + b + k;\n}\n"
    "fn rowsum(x: f32[N, 3]) -> (f32[N], f32[N, 3]) {\n"
    "  return (sum(x, axis=1), x);\n}\n"
    "fn mixed(x: i32[N, M], y: f64[M], m: bool[N, M]) -> (f64[N, M], i64[?]) "
    "{\n  return (cast(x, f64) + y, nonzero(m)[:, 0]);\n}\n"
    "fn need_even(a: f16[N], k: int dynamic) -> f16[N] {\n"
    "  check(N % 2 == 0, \"N must be even\");\n  return a;\n}\n"
    "fn scalar(s: f64[], t: i8[N]) -> f64[] {\n"
    "  return s + cast(sum(t), f64);\n}\n"
    // 5: float elementwise ops, comparisons and bool logic.
    "fn unary(x: f32[N, M], y: f32[M], c: bool[N, M]) -> (f32[N, M], "
    "bool[N, M]) {\n"
    "  let a = exp(x) + log(abs(x) + 0.5) + sqrt(abs(y)) + rsqrt(abs(x) + "
    "1.0);\n"
    "  let b = tanh(x) - sigmoid(y) * gelu(x) / (relu(x) + 1.0);\n"
    "  let d = pow(abs(x) + 0.5, erf(y)) + sin(x) * cos(y) + (-x) +\n"
    "      floor(x) - ceil(y) + round(x);\n"
    "  let e = where(c, max(a, b), min(b, d));\n"
    "  let p = ((x < y) & (x <= 1.0)) | ((x > y) ^ (x >= 0.5));\n"
    "  let q = !((x == y) | (x != 0.0)) ^ c;\n"
    "  return (e, p & q);\n}\n"
    // 6: integer ops: floor division (by zero: an error), bit ops, sizes
    // as values, creation, casts.
    "fn ints(a: i32[N, M], b: i32[M], k: int dynamic) -> (i32[N, M], "
    "f32[N, M], i64[M]) {\n"
    "  let d = a / b + (a & b) - (a | 3) * (a ^ b) + N;\n"
    "  let z = zeros([N, M]) + ones([N, 1]) * cast(d, f32) + full([1, M], "
    "0.5);\n"
    "  return (d, z, arange(M) * k);\n}\n"
    // 7: reductions (an empty max/min: an error), scans, sort, topk.
    "fn reduce(x: f32[N, M], k: int dynamic) -> (f32[N], f32[M], f32[N], "
    "f32[M], i64[N], i64[M], f32[N, M], f32[N, M], f32[N, M], i64[?, ?]) "
    "{\n"
    "  let (v, i) = topk(x, k);\n"
    "  return (sum(x, axis=1), mean(x, axis=0), max(x, axis=1), min(x, "
    "axis=0), argmax(x, axis=1), argmin(x, axis=0), cumsum(x, axis=0), "
    "cumprod(x, axis=1), sort(x, axis=1, descending=true), i);\n}\n"
    // 8: layout ops and matmul.
    "fn layout(x: f32[N, M], y: f32[M]) -> (f32[M, M], f32[N], f32[?, ?], "
    "f32[?], f32[?, ?, ?], f32[?, ?, ?], f32[?, ?]) {\n"
    "  return (transpose(x, 0, 1) @ x, x @ y, concat([x, x * 2.0], axis=0)"
    "[1:, :], reshape(x, [-1]), permute(reshape(x, [N, M, 1]), [2, 0, 1]), "
    "expand(reshape(y, [1, M]), [2, 3, -1]), pad(x, [1, 2]));\n}\n"
    // 9: convolution and pooling (padding 1: any H, W >= 1 fits), and
    // their gradients (conv2d_weight_grad, max_pool2d_grad).
    "fn conv(x: f32[B, C, H, W], w: f32[O, C, 3, 3], bias: f32[O]) -> "
    "(f32[?, ?, ?, ?], f32[?, ?, ?, ?], f32[?, ?, ?, ?], f32[?, ?, ?, ?]) "
    "{\n"
    "  let y = conv2d(x, w, bias=bias, stride=1, padding=1);\n"
    "  let p = max_pool2d(x, 2, stride=1, padding=1);\n"
    "  return (y, p, grad(sum(y * y), wrt=w), grad(sum(p * p), wrt=x));\n}\n"
    // 10: the attention pattern, fused into one attention op.
    "fn attend(q: f32[N, K], kk: f32[M, K], v: f32[M, K]) -> f32[N, K] {\n"
    "  let s = q @ transpose(kk, 0, 1) * 0.5;\n"
    "  let e = exp(s - max(s, axis=-1, keepdim=true));\n"
    "  return (e / sum(e, axis=-1, keepdim=true)) @ v;\n}\n"
    // 11: data-dependent sizes, checked indices, index_add, masked_scatter.
    "fn datadep(x: f32[N, M], m: bool[N, M], idx: i64[K], n: i64[1]) -> "
    "(i64[?, 2], f32[?], f32[?], f32[?, ?], f32[?, ?], f32[?, ?], f32[?, "
    "?], f32[N, M], f32[N, M]) {\n"
    "  let u = item(n);\n"
    "  check(u >= 0 && u <= 64, \"u out of range\");\n"
    "  let g = reshape(idx, [K, 1]) + arange(M) * 0;\n"
    "  return (nonzero(m), masked_select(x, m), unique(x), index_select(x, "
    "0, idx), gather(x, 0, g), scatter_add(x, 0, g, cast(g, f32) * 0.5), "
    "full([u, 2], 1.5), index_add(x, 0, idx, index_select(x, 0, idx)), "
    "masked_scatter(x, m, x * 2.0));\n}\n"
    // 12: loops: a carried value, and per-iteration results assigned into
    // a tensor (update_slice).
    "fn loop(x: f32[N, M], k: int dynamic) -> (f32[N, M], f32[N, M]) {\n"
    "  var h = x;\n"
    "  for i in 0..k {\n    h = tanh(h) * 0.5 + x * cast(i, f32);\n  }\n"
    "  var o = zeros([N, M]);\n"
    "  for i in 0..N {\n    o[i] = x[i] * cast(i + 1, f32);\n  }\n"
    "  return (h, o);\n}\n"
    // 13: a helper of more than 16 ops called three times: one callee and
    // three call ops.
    "fn g(h: f32[N, M], x: f32[N, M]) -> f32[N, M] {\n"
    "  let a = tanh(h) * 0.5 + x;\n"
    "  let b = a - max(a, axis=1, keepdim=true);\n"
    "  let c = exp(b) / (sum(exp(b), axis=1, keepdim=true) + 1.0);\n"
    "  return c * 2.0 + h * 0.25 - x;\n}\n"
    "fn calls(x: f32[N, M], y: f32[N, M]) -> f32[N, M] {\n"
    "  return g(g(g(x, y), y), y);\n}\n";

/// A DLPack element type (tsl_dtype without the C API's header).
struct FuzzDType {
  uint8_t code, bits;
};
inline constexpr FuzzDType kF16{2, 16}, kF32{2, 32}, kF64{2, 64}, kI8{0, 8},
    kI32{0, 32}, kI64{0, 64}, kBool{6, 8};

/// One parameter: an `int dynamic`, or a tensor whose extents are spelled
/// by \c dims, one character each: a dim letter of kDimLetters or a digit
/// (a constant extent); "" is a 0-d tensor.
struct FuzzParam {
  const char *name;
  bool isInt;
  FuzzDType dtype;
  const char *dims;
};

/// The dims of the module, in the order a fit call chooses their sizes.
inline constexpr char kDimLetters[] = "NMKBCHWO";
inline constexpr int kNumDims = sizeof(kDimLetters) - 1;

/// A function of the module and its parameters (at most 5).
struct FuzzFunction {
  const char *name;
  int numParams;
  FuzzParam params[5];
};

inline constexpr FuzzFunction kFunctions[] = {
    {"axpy",
     3,
     {{"a", false, kF32, "N"}, {"b", false, kF32, "N"}, {"k", true, kI64, ""}}},
    {"rowsum", 1, {{"x", false, kF32, "N3"}}},
    {"mixed",
     3,
     {{"x", false, kI32, "NM"},
      {"y", false, kF64, "M"},
      {"m", false, kBool, "NM"}}},
    {"need_even", 2, {{"a", false, kF16, "N"}, {"k", true, kI64, ""}}},
    {"scalar", 2, {{"s", false, kF64, ""}, {"t", false, kI8, "N"}}},
    {"unary",
     3,
     {{"x", false, kF32, "NM"},
      {"y", false, kF32, "M"},
      {"c", false, kBool, "NM"}}},
    {"ints",
     3,
     {{"a", false, kI32, "NM"},
      {"b", false, kI32, "M"},
      {"k", true, kI64, ""}}},
    {"reduce", 2, {{"x", false, kF32, "NM"}, {"k", true, kI64, ""}}},
    {"layout", 2, {{"x", false, kF32, "NM"}, {"y", false, kF32, "M"}}},
    {"conv",
     3,
     {{"x", false, kF32, "BCHW"},
      {"w", false, kF32, "OC33"},
      {"bias", false, kF32, "O"}}},
    {"attend",
     3,
     {{"q", false, kF32, "NK"},
      {"kk", false, kF32, "MK"},
      {"v", false, kF32, "MK"}}},
    {"datadep",
     4,
     {{"x", false, kF32, "NM"},
      {"m", false, kBool, "NM"},
      {"idx", false, kI64, "K"},
      {"n", false, kI64, "1"}}},
    {"loop", 2, {{"x", false, kF32, "NM"}, {"k", true, kI64, ""}}},
    {"calls", 2, {{"x", false, kF32, "NM"}, {"y", false, kF32, "NM"}}},
};
inline constexpr int kNumFunctions = sizeof(kFunctions) / sizeof(kFunctions[0]);

} // namespace tsl_fuzz
