// Streaming (non-temporal) stores of generated code: a row group whose
// outputs do not fit in the last-level cache writes each row into a row of
// scratch that stays in L1 and streams it out with non-temporal stores
// (tsl_rt_stream_output, tsl_rt_stream_row, tsl_rt_stream_fence). A normal
// store of a line that is not in the cache first reads it (the
// read-for-ownership), so an output that goes straight to memory costs a
// read and a write; a streaming store costs the write only. Softmax and
// layer_norm over [64, 512, 768] (96 MiB out) move a third less memory.
#include "runtime/StreamingStores.h"
#include "runtime/KernelAbi.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace {

/// The size of the largest data cache cpu0 reports in sysfs (32 MiB here;
/// sysconf(_SC_LEVEL3_CACHE_SIZE) gave the whole package's 320 MiB), or 0.
int64_t largestDataCache() {
  int64_t llc = 0;
  for (int index = 0; index < 8; ++index) {
    std::string dir =
        "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index);
    std::ifstream type(dir + "/type"), size(dir + "/size");
    std::string kind, text;
    if (!(type >> kind) || !(size >> text))
      break;
    char *end = nullptr;
    long long n = std::strtoll(text.c_str(), &end, 10);
    if (kind == "Instruction" || end == text.c_str() || n <= 0)
      continue;
    if (*end == 'K')
      n <<= 10;
    else if (*end == 'M')
      n <<= 20;
    llc = std::max<int64_t>(llc, n);
  }
  return llc;
}

#if defined(__x86_64__)
/// Streams the 32-byte aligned [dst, dst + bytes) (bytes a multiple of 32)
/// from src: 32-byte stores measured as fast as 64-byte ones here, and
/// twice as fast as SSE2's 16-byte ones.
__attribute__((target("avx"))) void streamAvx(char *dst, const char *src,
                                              int64_t bytes) {
  for (int64_t i = 0; i < bytes; i += 32)
    _mm256_stream_si256(
        reinterpret_cast<__m256i *>(dst + i),
        _mm256_loadu_si256(reinterpret_cast<const __m256i *>(src + i)));
}

void streamSse2(char *dst, const char *src, int64_t bytes) {
  for (int64_t i = 0; i < bytes; i += 32) {
    _mm_stream_si128(
        reinterpret_cast<__m128i *>(dst + i),
        _mm_loadu_si128(reinterpret_cast<const __m128i *>(src + i)));
    _mm_stream_si128(
        reinterpret_cast<__m128i *>(dst + i + 16),
        _mm_loadu_si128(reinterpret_cast<const __m128i *>(src + i + 16)));
  }
}

using StreamFn = void (*)(char *, const char *, int64_t);
StreamFn chooseStream() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx") ? streamAvx : streamSse2;
}
#endif

} // namespace

int64_t tsl::rt::streamStoreThreshold(const char *env, int64_t cacheBytes) {
  if (env) {
    char *end = nullptr;
    long long n = std::strtoll(env, &end, 10);
    if (end != env && *end == '\0')
      return n < 0 ? INT64_MAX : static_cast<int64_t>(n);
  }
  return cacheBytes > 0 ? cacheBytes : int64_t(32) << 20;
}

int32_t tsl_rt_stream_output(int64_t bytes) {
  static const int64_t threshold = tsl::rt::streamStoreThreshold(
      std::getenv("TSL_STREAM_STORE_BYTES"), largestDataCache());
  return bytes > threshold ? 1 : 0;
}

void tsl_rt_stream_row(void *dst, const void *src, int64_t bytes) {
  if (bytes <= 0)
    return;
  auto *d = static_cast<char *>(dst);
  const auto *s = static_cast<const char *>(src);
#if defined(__x86_64__)
  static const StreamFn stream = chooseStream();
  // Normal stores up to the first 32-byte boundary and after the last.
  int64_t head =
      static_cast<int64_t>((32 - reinterpret_cast<uintptr_t>(d) % 32) % 32);
  if (head >= bytes) {
    std::memcpy(d, s, static_cast<size_t>(bytes));
    return;
  }
  int64_t body = (bytes - head) / 32 * 32;
  std::memcpy(d, s, static_cast<size_t>(head));
  stream(d + head, s + head, body);
  std::memcpy(d + head + body, s + head + body,
              static_cast<size_t>(bytes - head - body));
#else
  std::memcpy(d, s, static_cast<size_t>(bytes));
#endif
}

void tsl_rt_stream_fence(void) {
#if defined(__x86_64__)
  _mm_sfence();
#endif
}
