// tsl_rt_stream_row (runtime/StreamingStores.cpp) copies a row with
// non-temporal stores where the destination is aligned and normal stores
// at its ends: every alignment of the destination and the source, and
// lengths around the 32-byte blocks, must copy exactly the bytes asked for
// and touch nothing around them.
#include "runtime/StreamingStores.h"
#include "runtime/KernelAbi.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace {

TEST(StreamingStores, CopiesEveryAlignmentAndLengthExactly) {
  std::vector<unsigned char> src(512), dst(512 + 128);
  for (size_t i = 0; i < src.size(); ++i)
    src[i] = static_cast<unsigned char>(i * 7 + 3);
  for (int dstOffset = 0; dstOffset < 64; ++dstOffset)
    for (int srcOffset : {0, 1, 4, 31})
      for (int64_t bytes :
           {0, 1, 3, 31, 32, 33, 63, 64, 65, 95, 96, 100, 255, 256, 300}) {
        std::fill(dst.begin(), dst.end(), 0xEE);
        // The vector's data is only 16-byte aligned: start from a 64-byte
        // boundary inside it so dstOffset is the real alignment.
        auto base = reinterpret_cast<uintptr_t>(dst.data());
        unsigned char *to = dst.data() + (64 - base % 64) % 64 + dstOffset;
        tsl_rt_stream_row(to, src.data() + srcOffset, bytes);
        tsl_rt_stream_fence();
        for (unsigned char *p = dst.data(); p < dst.data() + dst.size(); ++p) {
          int64_t k = p - to;
          unsigned char want = k >= 0 && k < bytes
                                   ? src[static_cast<size_t>(srcOffset + k)]
                                   : 0xEE;
          ASSERT_EQ(*p, want)
              << "dst offset " << dstOffset << ", src offset " << srcOffset
              << ", " << bytes << " bytes, byte " << k;
        }
      }
}

TEST(StreamingStores, ThresholdComesFromTheEnvironmentOrTheCache) {
  struct Case {
    const char *env;
    int64_t cache, want;
  };
  const int64_t mib = int64_t(1) << 20;
  for (const Case &c :
       std::vector<Case>{{nullptr, 32 * mib, 32 * mib}, // the cache's size
                         {nullptr, 0, 32 * mib},        // unknown cache: 32 MiB
                         {"0", 32 * mib, 0},            // every output streams
                         {"4096", 32 * mib, 4096},    // tests' small threshold
                         {"-1", 32 * mib, INT64_MAX}, // nothing streams
                         {"12x", 8 * mib, 8 * mib},   // not a number: ignored
                         {"", 8 * mib, 8 * mib}}) {
    EXPECT_EQ(tsl::rt::streamStoreThreshold(c.env, c.cache), c.want)
        << (c.env ? c.env : "(unset)") << ", cache " << c.cache;
  }
  EXPECT_EQ(tsl_rt_stream_output(0), 0); // an empty output never streams
}

} // namespace
