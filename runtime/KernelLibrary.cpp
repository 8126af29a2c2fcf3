// Library kernels called by generated code, and the per-call context. These
// are written independently of the reference interpreter on purpose: the
// interpreter is the oracle they are tested against.
#include "runtime/KernelAbi.h"
#include "support/Float16.h"
#include "support/SizeLimits.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <malloc.h>
#include <numeric>
#include <string>
#include <vector>

#include "runtime/Context.h"
#include "runtime/Variant.h"

namespace {

enum Code : int32_t { Bool = 0, I8, I32, I64, F16, BF16, F32, F64 };

using tsl::rt::elementBytes;
bool isFloatCode(int32_t d) {
  return d == F16 || d == BF16 || d == F32 || d == F64;
}

/// The \p T stored at \p b (any alignment).
template <class T> T loadRaw(const uint8_t *b) {
  T v;
  std::memcpy(&v, b, sizeof(T));
  return v;
}

double loadF(int32_t d, const void *p, int64_t i) {
  const uint8_t *b = static_cast<const uint8_t *>(p) + i * elementBytes(d);
  switch (d) {
  case Bool:
    return *b ? 1 : 0;
  case I8:
    return static_cast<int8_t>(*b);
  case I32:
    return loadRaw<int32_t>(b);
  case I64:
    return static_cast<double>(loadRaw<int64_t>(b));
  case F16:
    return tsl::halfToFloat(loadRaw<uint16_t>(b));
  case BF16:
    return tsl::bf16ToFloat(loadRaw<uint16_t>(b));
  case F32:
    return loadRaw<float>(b);
  default:
    return loadRaw<double>(b);
  }
}

/// Element \p i as an integer: exact for i64 (a double would round above
/// 2^53); every other dtype goes through loadF, exact for bool, i8 and i32.
int64_t loadI(int32_t d, const void *p, int64_t i) {
  if (d == I64)
    return loadRaw<int64_t>(static_cast<const uint8_t *>(p) + i * 8);
  return static_cast<int64_t>(loadF(d, p, i));
}

void storeF(int32_t d, void *p, int64_t i, double v) {
  uint8_t *b = static_cast<uint8_t *>(p) + i * elementBytes(d);
  switch (d) {
  case F16: {
    uint16_t h = tsl::floatToHalf(static_cast<float>(v));
    std::memcpy(b, &h, 2);
    return;
  }
  case BF16: {
    uint16_t h = tsl::floatToBF16(static_cast<float>(v));
    std::memcpy(b, &h, 2);
    return;
  }
  case F32: {
    float f = static_cast<float>(v);
    std::memcpy(b, &f, 4);
    return;
  }
  case F64:
    std::memcpy(b, &v, 8);
    return;
  default: {
    int64_t x =
        std::isnan(v)
            ? 0
            : static_cast<int64_t>(std::max(-9.2e18, std::min(9.2e18, v)));
    if (d == Bool)
      *b = v != 0;
    else if (d == I8)
      *b = static_cast<uint8_t>(x);
    else if (d == I32) {
      int32_t y = static_cast<int32_t>(static_cast<uint32_t>(x));
      std::memcpy(b, &y, 4);
    } else
      std::memcpy(b, &x, 8);
  }
  }
}

/// Stores \p v as an integer element of type \p d (bool, i8, i32, i64),
/// wrapping.
void storeI(int32_t d, void *p, int64_t i, int64_t v) {
  uint8_t *b = static_cast<uint8_t *>(p) + i * elementBytes(d);
  if (d == Bool)
    *b = v != 0;
  else if (d == I8)
    *b = static_cast<uint8_t>(v);
  else if (d == I32) {
    int32_t y = static_cast<int32_t>(static_cast<uint32_t>(v));
    std::memcpy(b, &y, 4);
  } else
    std::memcpy(b, &v, 8);
}

void copyElement(int32_t d, void *dst, int64_t di, const void *src,
                 int64_t si) {
  size_t n = elementBytes(d);
  std::memcpy(static_cast<uint8_t *>(dst) + di * n,
              static_cast<const uint8_t *>(src) + si * n, n);
}

/// Total order used by unique and topk: NaN above everything.
bool lessThan(int32_t d, const void *x, int64_t a, int64_t b) {
  if (!isFloatCode(d))
    return loadI(d, x, a) < loadI(d, x, b);
  double u = loadF(d, x, a), v = loadF(d, x, b);
  if (std::isnan(u))
    return false;
  if (std::isnan(v))
    return true;
  return u < v;
}

} // namespace

extern "C" {

tsl_rt_context *tsl_rt_context_create(void) {
  // Large tensors come and go on every call: keep freed blocks in the heap
  // instead of unmapping them, so the next call does not page-fault on
  // fresh memory (glibc's default returns blocks above 128 KiB to the OS).
  static const bool tuned = [] {
#ifdef __GLIBC__
    mallopt(M_MMAP_THRESHOLD, 1 << 30);
    mallopt(M_TRIM_THRESHOLD, 1 << 30);
#endif
    return true;
  }();
  (void)tuned;
  return new tsl_rt_context();
}

void tsl_rt_context_destroy(tsl_rt_context *ctx) {
  if (!ctx)
    return;
  tsl_rt_context_release(ctx, nullptr, 0);
  tsl::rt::releaseDeviceAllocations(ctx);
  delete ctx;
}

void tsl_rt_context_release(tsl_rt_context *ctx, void *const *keep,
                            int32_t nkeep) {
  std::vector<void *> kept;
  std::vector<int64_t> keptBytes;
  int64_t live = 0;
  for (size_t a = 0; a < ctx->allocations.size(); ++a) {
    void *p = ctx->allocations[a];
    bool k = false;
    for (int32_t i = 0; i < nkeep; ++i)
      k |= keep[i] == p;
    if (k) {
      kept.push_back(p);
      keptBytes.push_back(ctx->allocationBytes[a]);
      live += ctx->allocationBytes[a];
    } else {
      std::free(p);
    }
  }
  ctx->allocations = std::move(kept);
  ctx->allocationBytes = std::move(keptBytes);
  ctx->liveBytes = live;
}

int32_t tsl_rt_context_take(tsl_rt_context *ctx, void *p) {
  for (size_t i = 0; i < ctx->allocations.size(); ++i)
    if (ctx->allocations[i] == p) {
      auto at = static_cast<std::ptrdiff_t>(i);
      ctx->liveBytes -= ctx->allocationBytes[i];
      ctx->allocations.erase(ctx->allocations.begin() + at);
      ctx->allocationBytes.erase(ctx->allocationBytes.begin() + at);
      return 1;
    }
  return 0;
}

const char *tsl_rt_context_error(const tsl_rt_context *ctx) {
  return ctx->error.c_str();
}
int32_t tsl_rt_context_failed_op(const tsl_rt_context *ctx) {
  return ctx->failedOp;
}

void *tsl_rt_alloc(tsl_rt_context *ctx, int64_t bytes) {
  if (bytes < 0) { // generated code passes -1 for a size that left int64
    tsl_rt_error(ctx, "the size of the allocation does not fit in 64 bits");
    return nullptr;
  }
  if (bytes > tsl::maxTensorBytes()) {
    tsl_rt_error(ctx, tsl::tensorTooLargeMessage(bytes).c_str());
    return nullptr;
  }
  size_t rounded = (static_cast<size_t>(bytes) + 63) / 64 * 64;
  // Up to 1 KiB, malloc's 16-byte alignment (what generated code assumes:
  // CodegenValues.cpp) from glibc's per-thread cache; aligned_alloc there
  // splits a larger chunk on every call (64 -> 26 ns for a 64-byte block
  // plus a call's two other small blocks, measured). Larger buffers start
  // on a cache line.
  void *p = rounded <= 1024 ? std::malloc(rounded ? rounded : 64)
                            : std::aligned_alloc(64, rounded);
  if (!p) {
    tsl_rt_error(ctx, "out of memory");
    return nullptr;
  }
  ctx->allocations.push_back(p);
  ctx->allocationBytes.push_back(static_cast<int64_t>(rounded));
  ctx->liveBytes += static_cast<int64_t>(rounded);
  ctx->peakBytes = std::max(ctx->peakBytes, ctx->liveBytes);
  return p;
}

void tsl_rt_free(tsl_rt_context *ctx, void *p) {
  if (p && tsl_rt_context_take(ctx, p))
    std::free(p);
}

void tsl_rt_fail(tsl_rt_context *ctx, int32_t op) {
  // The op is recorded even after a library kernel's message: it gives the
  // message its source location.
  if (ctx->failedOp < 0)
    ctx->failedOp = op;
}

void tsl_rt_error(tsl_rt_context *ctx, const char *message) {
  // (A device failure records its op first, its message after.)
  if (ctx->error.empty())
    ctx->error = message;
}

int32_t tsl_rt_nonzero(tsl_rt_context *ctx, int32_t d, const void *x,
                       const int64_t *shape, int32_t rank, void **out,
                       int64_t *count) {
  int64_t numel = 1;
  for (int32_t i = 0; i < rank; ++i)
    numel *= shape[i];
  std::vector<int64_t> hits;
  for (int64_t i = 0; i < numel; ++i)
    if (loadF(d, x, i) != 0)
      hits.push_back(i);
  int64_t *o = static_cast<int64_t *>(tsl_rt_alloc(
      ctx, static_cast<int64_t>(hits.size()) * std::max(rank, 1) * 8));
  if (!o)
    return 1;
  for (size_t h = 0; h < hits.size(); ++h) {
    int64_t rem = hits[h];
    for (int32_t a = rank; a-- > 0;) {
      o[h * rank + a] = rem % shape[a];
      rem /= shape[a];
    }
  }
  *out = o;
  *count = static_cast<int64_t>(hits.size());
  return 0;
}

int32_t tsl_rt_masked_select(tsl_rt_context *ctx, int32_t d, const void *x,
                             const void *mask, int64_t numel, void **out,
                             int64_t *count) {
  int64_t n = 0;
  for (int64_t i = 0; i < numel; ++i)
    n += static_cast<const uint8_t *>(mask)[i] != 0;
  void *o = tsl_rt_alloc(ctx, n * static_cast<int64_t>(elementBytes(d)));
  if (!o)
    return 1;
  int64_t k = 0;
  for (int64_t i = 0; i < numel; ++i)
    if (static_cast<const uint8_t *>(mask)[i])
      copyElement(d, o, k++, x, i);
  *out = o;
  *count = n;
  return 0;
}

int32_t tsl_rt_unique(tsl_rt_context *ctx, int32_t d, const void *x,
                      int64_t numel, void **out, int64_t *count) {
  std::vector<int64_t> order(static_cast<size_t>(numel));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t a, int64_t b) { return lessThan(d, x, a, b); });
  std::vector<int64_t> keep;
  for (int64_t i : order)
    if (keep.empty() || lessThan(d, x, keep.back(), i))
      keep.push_back(i);
  void *o =
      tsl_rt_alloc(ctx, static_cast<int64_t>(keep.size() * elementBytes(d)));
  if (!o)
    return 1;
  for (size_t i = 0; i < keep.size(); ++i)
    copyElement(d, o, static_cast<int64_t>(i), x, keep[i]);
  *out = o;
  *count = static_cast<int64_t>(keep.size());
  return 0;
}

int32_t tsl_rt_index_select(tsl_rt_context *ctx, int32_t d, const void *x,
                            const int64_t *shape, int32_t rank, int32_t axis,
                            int32_t idxDtype, const void *idx, int64_t nidx,
                            void *out) {
  int64_t n = shape[axis], outer = 1, inner = 1;
  for (int32_t i = 0; i < axis; ++i)
    outer *= shape[i];
  for (int32_t i = axis + 1; i < rank; ++i)
    inner *= shape[i];
  for (int64_t j = 0; j < nidx; ++j) {
    int64_t v = loadI(idxDtype, idx, j);
    if (v < 0 || v >= n) {
      std::string msg = "index " + std::to_string(v) +
                        " is out of bounds for axis " + std::to_string(axis) +
                        " of size " + std::to_string(n);
      tsl_rt_error(ctx, msg.c_str());
      return 1;
    }
  }
  int64_t o = 0;
  for (int64_t b = 0; b < outer; ++b)
    for (int64_t j = 0; j < nidx; ++j)
      for (int64_t k = 0; k < inner; ++k)
        copyElement(d, out, o++, x,
                    (b * n + loadI(idxDtype, idx, j)) * inner + k);
  return 0;
}

int32_t tsl_rt_topk(tsl_rt_context *ctx, int32_t d, const void *x, int64_t rows,
                    int64_t n, int64_t k, void *values, void *indices) {
  if (k < 0 || k > n) {
    tsl_rt_error(ctx, "k is out of range for the last axis");
    return 1;
  }
  std::vector<int64_t> order(static_cast<size_t>(n));
  for (int64_t r = 0; r < rows; ++r) {
    std::iota(order.begin(), order.end(), r * n);
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
      return lessThan(d, x, b, a);
    });
    for (int64_t j = 0; j < k; ++j) {
      copyElement(d, values, r * k + j, x, order[j]);
      static_cast<int64_t *>(indices)[r * k + j] = order[j] - r * n;
    }
  }
  return 0;
}

} // extern "C"

namespace {

/// argmax (\p smallest false) and argmin: the first extreme element along
/// \p axis (the flattened tensor when negative); the first NaN wins.
int32_t argExtreme(tsl_rt_context *ctx, int32_t d, const void *x,
                   const int64_t *shape, int32_t rank, int32_t axis, void *out,
                   bool smallest) {
  int64_t numel = 1;
  for (int32_t i = 0; i < rank; ++i)
    numel *= shape[i];
  int64_t n = axis < 0 ? numel : shape[axis], inner = 1, outer = 1;
  if (axis >= 0) {
    for (int32_t i = 0; i < axis; ++i)
      outer *= shape[i];
    for (int32_t i = axis + 1; i < rank; ++i)
      inner *= shape[i];
  }
  if (n == 0) {
    tsl_rt_error(ctx, smallest ? "argmin over an empty axis"
                               : "argmax over an empty axis");
    return 1;
  }
  int64_t *o = static_cast<int64_t *>(out);
  for (int64_t b = 0; b < outer; ++b)
    for (int64_t k = 0; k < inner; ++k) {
      int64_t best = 0;
      for (int64_t j = 1; j < n; ++j) {
        int64_t cand = (b * n + j) * inner + k,
                cur = (b * n + best) * inner + k;
        bool curNan = isFloatCode(d) && std::isnan(loadF(d, x, cur));
        bool better =
            smallest ? lessThan(d, x, cand, cur) : lessThan(d, x, cur, cand);
        if (!curNan &&
            (better || (isFloatCode(d) && std::isnan(loadF(d, x, cand)))))
          best = j;
      }
      o[b * inner + k] = best;
    }
  return 0;
}

} // namespace

extern "C" {

int32_t tsl_rt_argmax(tsl_rt_context *ctx, int32_t d, const void *x,
                      const int64_t *shape, int32_t rank, int32_t axis,
                      void *out) {
  return argExtreme(ctx, d, x, shape, rank, axis, out, false);
}

int32_t tsl_rt_argmin(tsl_rt_context *ctx, int32_t d, const void *x,
                      const int64_t *shape, int32_t rank, int32_t axis,
                      void *out) {
  return argExtreme(ctx, d, x, shape, rank, axis, out, true);
}

int32_t tsl_rt_gather(tsl_rt_context *ctx, int32_t d, const void *x,
                      const int64_t *xshape, int32_t rank, int32_t axis,
                      int32_t idxDtype, const void *idx, const int64_t *ishape,
                      void *out) {
  std::vector<int64_t> strides(static_cast<size_t>(rank), 1),
      pos(strides.size(), 0);
  int64_t total = 1;
  for (int32_t i = rank; i-- > 0;) {
    if (i + 1 < rank)
      strides[i] = strides[i + 1] * xshape[i + 1];
    total *= ishape[i];
  }
  int64_t n = xshape[axis];
  for (int64_t p = 0; p < total; ++p) {
    int64_t v = loadI(idxDtype, idx, p);
    if (v < 0 || v >= n) {
      std::string msg = "index " + std::to_string(v) +
                        " is out of bounds for axis " + std::to_string(axis) +
                        " of size " + std::to_string(n);
      tsl_rt_error(ctx, msg.c_str());
      return 1;
    }
    int64_t at = 0;
    for (int32_t i = 0; i < rank; ++i)
      at += (i == axis ? v : pos[i]) * strides[i];
    copyElement(d, out, p, x, at);
    for (int32_t i = rank; i-- > 0;) {
      if (++pos[i] < ishape[i])
        break;
      pos[i] = 0;
    }
  }
  return 0;
}

int32_t tsl_rt_sort(tsl_rt_context *, int32_t d, const void *x, int64_t outer,
                    int64_t n, int64_t inner, int32_t descending, void *values,
                    void *indices) {
  std::vector<int64_t> order(static_cast<size_t>(n));
  int64_t *pos = static_cast<int64_t *>(indices);
  for (int64_t b = 0; b < outer; ++b)
    for (int64_t k = 0; k < inner; ++k) {
      int64_t base = b * n * inner + k;
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(), [&](int64_t i, int64_t j) {
        int64_t a = base + i * inner, c = base + j * inner;
        return descending ? lessThan(d, x, c, a) : lessThan(d, x, a, c);
      });
      for (int64_t j = 0; j < n; ++j) {
        copyElement(d, values, base + j * inner, x, base + order[j] * inner);
        pos[base + j * inner] = order[j];
      }
    }
  return 0;
}

int32_t tsl_rt_scatter(tsl_rt_context *ctx, int32_t d, const void *x,
                       const int64_t *xshape, int32_t rank, int32_t axis,
                       int32_t idxDtype, const void *idx, const int64_t *ishape,
                       const void *src, const int64_t *sshape, int32_t add,
                       void *out) {
  size_t r = static_cast<size_t>(rank);
  std::vector<int64_t> xs(r, 1), ss(r, 1), pos(r, 0);
  int64_t total = 1, numel = 1;
  for (size_t i = r; i-- > 0;) {
    if (i + 1 < r) {
      xs[i] = xs[i + 1] * xshape[i + 1];
      ss[i] = ss[i + 1] * sshape[i + 1];
    }
    total *= ishape[i];
    numel *= xshape[i];
  }
  if (numel > 0)
    std::memcpy(out, x, static_cast<size_t>(numel) * elementBytes(d));
  int64_t n = xshape[axis];
  for (int64_t p = 0; p < total; ++p) {
    int64_t v = loadI(idxDtype, idx, p);
    if (v < 0 || v >= n) {
      std::string msg = "index " + std::to_string(v) +
                        " is out of bounds for axis " + std::to_string(axis) +
                        " of size " + std::to_string(n);
      tsl_rt_error(ctx, msg.c_str());
      return 1;
    }
    int64_t at = 0, from = 0;
    for (size_t i = 0; i < r; ++i) {
      at += (static_cast<int32_t>(i) == axis ? v : pos[i]) * xs[i];
      from += pos[i] * ss[i];
    }
    if (!add)
      copyElement(d, out, at, src, from);
    else if (isFloatCode(d))
      storeF(d, out, at, loadF(d, out, at) + loadF(d, src, from));
    else
      storeI(d, out, at,
             static_cast<int64_t>(static_cast<uint64_t>(loadI(d, out, at)) +
                                  static_cast<uint64_t>(loadI(d, src, from))));
    for (size_t i = r; i-- > 0;) {
      if (++pos[i] < ishape[i])
        break;
      pos[i] = 0;
    }
  }
  return 0;
}

int32_t tsl_rt_check_indices(tsl_rt_context *ctx, int32_t idxDtype,
                             const void *idx, int64_t nidx, int32_t axis,
                             int64_t size) {
  for (int64_t j = 0; j < nidx; ++j) {
    int64_t v = loadI(idxDtype, idx, j);
    if (v < 0 || v >= size) {
      std::string msg = "index " + std::to_string(v) +
                        " is out of bounds for axis " + std::to_string(axis) +
                        " of size " + std::to_string(size);
      tsl_rt_error(ctx, msg.c_str());
      return 1;
    }
  }
  return 0;
}

int32_t tsl_rt_masked_scatter(tsl_rt_context *ctx, int32_t d, const void *x,
                              const void *mask, int64_t numel, const void *src,
                              int64_t nsrc, void *out) {
  const uint8_t *m = static_cast<const uint8_t *>(mask);
  int64_t count = 0;
  for (int64_t i = 0; i < numel; ++i)
    count += m[i] != 0;
  if (count > nsrc) {
    std::string msg = "the mask selects " + std::to_string(count) +
                      " elements but the source has " + std::to_string(nsrc);
    tsl_rt_error(ctx, msg.c_str());
    return 1;
  }
  int64_t k = 0;
  for (int64_t i = 0; i < numel; ++i)
    if (m[i])
      copyElement(d, out, i, src, k++);
    else
      copyElement(d, out, i, x, i);
  return 0;
}

static const char *const kSlotNames[TSL_RT_NUM_SLOTS] = {
#define TSL_RT_ENTRY(Name, Slot, Ret, Params) #Name,
#include "runtime/KernelEntryPoints.def"
};

int32_t tsl_rt_slot_of(const char *name) {
  for (int32_t i = 0; i < TSL_RT_NUM_SLOTS; ++i)
    if (std::strcmp(kSlotNames[i], name) == 0)
      return i;
  return -1;
}

void tsl_rt_fill_table(void **table) {
#define TSL_RT_ENTRY(Name, Slot, Ret, Params)                                  \
  table[Slot] = reinterpret_cast<void *>(&Name);
#include "runtime/KernelEntryPoints.def"
}

const tsl_rt_entry_point *tsl_rt_entry_points(size_t *n) {
  // KernelAbi.h declares each entry from the same list, so a definition
  // whose signature differs does not compile (C linkage: no overloads).
  static const tsl_rt_entry_point entries[] = {
#define TSL_RT_ENTRY(Name, Slot, Ret, Params)                                  \
  {#Name, reinterpret_cast<void *>(&Name)},
#define TSL_RT_DEVICE_ENTRY(Name, Ret, Params)                                 \
  {#Name, reinterpret_cast<void *>(&Name)},
#include "runtime/KernelEntryPoints.def"
  };
  if (n)
    *n = sizeof(entries) / sizeof(entries[0]);
  return entries;
}

} // extern "C"
