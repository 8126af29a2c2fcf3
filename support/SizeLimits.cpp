#include "support/SizeLimits.h"

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>

namespace tsl {

namespace {

/// TSL_MAX_TENSOR_BYTES when it is a positive byte count, else the
/// default; a value that is set but not such a count ("0", "16G", "abc") is
/// named in a warning (read once per process, so said once).
int64_t limitFromEnvironment() {
  const char *text = std::getenv("TSL_MAX_TENSOR_BYTES");
  if (!text || !*text)
    return kDefaultMaxTensorBytes;
  errno = 0;
  char *end = nullptr;
  long long v = std::strtoll(text, &end, 10);
  if (errno == 0 && end != text && *end == '\0' && v > 0)
    return static_cast<int64_t>(v);
  std::fprintf(stderr,
               "[tsl] warning: TSL_MAX_TENSOR_BYTES='%s' is not a positive "
               "byte count; using the default of %s\n",
               text, describeBytes(kDefaultMaxTensorBytes).c_str());
  return kDefaultMaxTensorBytes;
}

std::atomic<int64_t> overrideBytes{0};

} // namespace

int64_t maxTensorBytes() {
  int64_t o = overrideBytes.load(std::memory_order_relaxed);
  if (o > 0)
    return o;
  static const int64_t fromEnvironment = limitFromEnvironment();
  return fromEnvironment;
}

void setMaxTensorBytes(int64_t bytes) {
  overrideBytes.store(bytes > 0 ? bytes : 0, std::memory_order_relaxed);
}

std::optional<int64_t> tensorBytes(const int64_t *shape, size_t rank,
                                   size_t elementBytes) {
  int64_t bytes = static_cast<int64_t>(elementBytes);
  bool overflow = false;
  for (size_t i = 0; i < rank; ++i) {
    if (shape[i] < 0)
      return std::nullopt;
    overflow |= __builtin_mul_overflow(bytes, shape[i], &bytes);
  }
  // A zero dim makes the tensor empty whatever the other dims are, but the
  // product of the others must still be a size (strides, loop bounds).
  if (overflow)
    return std::nullopt;
  return bytes;
}

std::string describeBytes(int64_t bytes) {
  static const char *units[] = {"bytes", "KiB", "MiB", "GiB",
                                "TiB",   "PiB", "EiB"};
  std::string out = std::to_string(bytes) + " bytes";
  double v = static_cast<double>(bytes);
  int unit = 0;
  while (v >= 1024 && unit < 6) {
    v /= 1024;
    ++unit;
  }
  if (unit > 0) {
    char buf[32];
    std::snprintf(buf, sizeof buf, " (%.*f %s)",
                  v == static_cast<int64_t>(v) ? 0 : 1, v, units[unit]);
    out += buf;
  }
  return out;
}

std::string tensorTooLargeMessage(int64_t bytes) {
  return "a tensor of " + describeBytes(bytes) +
         " is larger than the limit of " + describeBytes(maxTensorBytes()) +
         " per tensor; set TSL_MAX_TENSOR_BYTES to raise it";
}

} // namespace tsl
