// libFuzzer target for the safetensors reader (runtime/Safetensors.h): any
// bytes are a file (the first 8 its header length, capped to what follows);
// the header is parsed for the data that follows it. Acceptable outcomes: an
// error, or tensors whose byte ranges lie inside the data and match their
// dtype and shape. Anything else (a crash, a sanitizer report, a range
// outside the data) traps.
#include "runtime/Safetensors.h"

#include <cstddef>
#include <cstdint>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 8)
    return 0;
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i)
    n = n << 8 | data[i];
  if (n > size - 8)
    n = size - 8;
  std::string_view json(reinterpret_cast<const char *>(data + 8), n);
  uint64_t dataBytes = size - 8 - n;
  auto entries = tsl::rt::parseSafetensorsHeader(json, dataBytes);
  if (!entries)
    return 0;
  for (const tsl::rt::HeaderEntry &e : *entries) {
    if (e.begin > e.end || e.end > dataBytes || e.end - e.begin != e.tensor.bytes)
      __builtin_trap();
    volatile uint8_t sink = 0;
    for (uint64_t i = e.begin; i < e.end; ++i) // reads stay in the data
      sink = sink + data[8 + n + i];
  }
  return 0;
}
