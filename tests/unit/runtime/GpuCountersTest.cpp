// The GPU emulator's memory counters (runtime/GpuCounters.h): the bank and
// sector arithmetic of one warp access, and launches of C++ kernels that
// report their accesses by hand (as instrumented kernels do) — warp
// grouping, divergent lanes, barriers, blocks, the per-call record.
#include "runtime/GpuCounters.h"
#include "runtime/GpuEmulator.h"

#include <gtest/gtest.h>
#include <memory>
#include <string>
#include <vector>

using namespace tsl::rt;

namespace {

/// 32 lanes, lane l accessing \p bytes at address(l).
template <typename F> std::vector<LaneAccess> warp(uint32_t bytes, F address) {
  std::vector<LaneAccess> lanes(32);
  for (uint32_t l = 0; l < 32; ++l)
    lanes[l] = {static_cast<uint64_t>(address(l)), bytes};
  return lanes;
}

TEST(GpuCounters, BankConflictsOfOneWarpAccess) {
  // Consecutive words: every bank once.
  EXPECT_EQ(sharedReplays(warp(4, [](uint32_t l) { return 4 * l; }).data()), 0);
  // One word for all: a broadcast.
  EXPECT_EQ(sharedReplays(warp(4, [](uint32_t) { return 64; }).data()), 0);
  // Two words apart: 16 banks hold two words each.
  EXPECT_EQ(sharedReplays(warp(4, [](uint32_t l) { return 8 * l; }).data()), 1);
  // A column of a 32-word-wide array: one bank, 32 words.
  EXPECT_EQ(sharedReplays(warp(4, [](uint32_t l) { return 128 * l; }).data()),
            31);
  // 16-bit elements: two lanes per word share it.
  EXPECT_EQ(sharedReplays(warp(2, [](uint32_t l) { return 2 * l; }).data()), 0);
  // 128-bit accesses, consecutive: four quarter-warp phases, no replay.
  EXPECT_EQ(sharedReplays(warp(16, [](uint32_t l) { return 16 * l; }).data()),
            0);
  // 64-bit accesses 256 bytes apart: each half warp in bank pair 0-1.
  EXPECT_EQ(sharedReplays(warp(8, [](uint32_t l) { return 256 * l; }).data()),
            2 * 15);
  // The fallback GEMM's transposed B store before the fix (16-bit elements
  // into rows of 40): lanes 0-15 write rows 0, 8, .. 120 of one column, in
  // one bank; lanes 16-31 the other half of the same words.
  EXPECT_EQ(
      sharedReplays(
          warp(2, [](uint32_t l) { return 2 * ((l & 15) * 8 * 40 + (l >> 4)); })
              .data()),
      15);
  // Attention's V staging (16-bit elements of V transposed into rows of 72,
  // lane l copying 8 rows from 8 (l & 7) at key l >> 3): rows 8 apart share
  // a bank, 8 ways. Two more words after every eighth row (row e at
  // 36 e + 2 (e >> 3) words) would spread them over 16 banks.
  for (int e = 0; e < 8; ++e) {
    EXPECT_EQ(sharedReplays(warp(2,
                                 [e](uint32_t l) {
                                   return 2 *
                                          ((8 * (l & 7) + e) * 72 + (l >> 3));
                                 })
                                .data()),
              7);
    EXPECT_EQ(sharedReplays(warp(2,
                                 [e](uint32_t l) {
                                   uint32_t row = 8 * (l & 7) + e;
                                   return 4 * (36 * row + 2 * (row >> 3)) +
                                          2 * (l >> 3);
                                 })
                                .data()),
              0);
  }
  // Inactive lanes take no part.
  std::vector<LaneAccess> half = warp(4, [](uint32_t l) { return 128 * l; });
  for (int l = 16; l < 32; ++l)
    half[l].bytes = 0;
  EXPECT_EQ(sharedReplays(half.data()), 15);
  std::vector<LaneAccess> none(32);
  EXPECT_EQ(sharedReplays(none.data()), 0);
}

TEST(GpuCounters, SectorsOfOneWarpAccess) {
  int64_t ideal = 0;
  // 128 consecutive aligned bytes: four sectors, as ideal.
  EXPECT_EQ(globalSectors(
                warp(4, [](uint32_t l) { return 4096 + 4 * l; }).data(), ideal),
            4);
  EXPECT_EQ(ideal, 4);
  // Shifted by a word: a fifth sector.
  EXPECT_EQ(globalSectors(
                warp(4, [](uint32_t l) { return 4100 + 4 * l; }).data(), ideal),
            5);
  EXPECT_EQ(ideal, 4);
  // A column of a row-major matrix: a sector per lane.
  EXPECT_EQ(
      globalSectors(warp(4, [](uint32_t l) { return 4096 * (l + 1); }).data(),
                    ideal),
      32);
  EXPECT_EQ(ideal, 4);
  // Everyone reads one value.
  EXPECT_EQ(globalSectors(warp(8, [](uint32_t) { return 4096; }).data(), ideal),
            1);
  EXPECT_EQ(ideal, 1);
  // 16-byte runs: 512 bytes, 16 sectors.
  EXPECT_EQ(
      globalSectors(warp(16, [](uint32_t l) { return 16 * l; }).data(), ideal),
      16);
  EXPECT_EQ(ideal, 16);
}

struct KernelArgs {
  float *global;
};

/// Kernel 7: a conflict-free shared store, a barrier, a shared load down a
/// column (one bank), a global load by the first half of each warp
/// (divergent), and a coalesced global store.
void counted(void *p) {
  auto &a = *static_cast<KernelArgs *>(p);
  int32_t t = tsl_gpu_thread_idx();
  auto *shared = static_cast<char *>(tsl_gpu_shared());
  tsl_gpu_count_kernel(7);
  tsl_gpu_count_access(shared + 4 * t, 4 | kCountStore, 0);
  tsl_gpu_barrier();
  tsl_gpu_count_access(shared + 128 * (t % 32), 4, 1);
  if (t % 32 < 16)
    tsl_gpu_count_access(a.global + 64 * t, 4, 2);
  tsl_gpu_count_access(a.global + t, 4 | kCountStore, 3);
  int local = 0; // the thread's stack: never counted
  tsl_gpu_count_access(&local, 4, 4);
}

/// A kernel compiled without counters: barriers only.
void uncounted(void *) { tsl_gpu_barrier(); }

TEST(GpuCounters, KernelsWithoutCountersCountBarriers) {
  setGpuCountersForced(true);
  beginGpuCounters();
  int unused = 0;
  std::string error;
  ASSERT_TRUE(emulateLaunch(uncounted, &unused, {2, 32, 0}, error)) << error;
  setGpuCountersForced(false);
  std::vector<GpuKernelCounters> all = gpuCountersOfLastCall();
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].kernel, -1);
  EXPECT_EQ(all[0].barriers, 2);
  EXPECT_EQ(formatGpuCounters(all[0]).rfind("kernels compiled without "
                                            "counters: 1 launch of 32 threads",
                                            0),
            0u)
      << formatGpuCounters(all[0]);
}

TEST(GpuCounters, LaunchesCountPerWarpAccess) {
  setGpuCountersForced(true);
  beginGpuCounters();
  struct alignas(32) Buffer {
    float data[64 * 64];
  };
  auto global = std::make_unique<Buffer>(); // sectors align with the rows
  KernelArgs args{global->data};
  std::string error;
  ASSERT_TRUE(emulateLaunch(counted, &args, {5, 64, 4096}, error)) << error;
  ASSERT_TRUE(emulateLaunch(counted, &args, {1, 64, 4096}, error)) << error;
  setGpuCountersForced(false);
  std::vector<GpuKernelCounters> all = gpuCountersOfLastCall();
  ASSERT_EQ(all.size(), 1u);
  const GpuKernelCounters &c = all[0];
  EXPECT_EQ(c.kernel, 7);
  EXPECT_EQ(c.launches, 2);
  EXPECT_EQ(c.blocks, 4); // 3 of the 5, then 1
  EXPECT_EQ(c.barriers, 4);
  // Per block: two warps, each one store and one load.
  EXPECT_EQ(c.sharedStores, 8);
  EXPECT_EQ(c.storeReplays, 0);
  EXPECT_EQ(c.sharedLoads, 8);
  EXPECT_EQ(c.loadReplays, 8 * 31);
  // Per warp: 16 lanes 256 bytes apart (16 sectors, ideal 2), then 32
  // consecutive floats (4 sectors, as ideal).
  EXPECT_EQ(c.globalRequests, 16);
  EXPECT_EQ(c.globalSectors, 8 * (16 + 4));
  EXPECT_EQ(c.globalIdeal, 8 * (2 + 4));
  EXPECT_NE(formatGpuCounters(c).find("kernel 7: 2 launches of 64 threads, "
                                      "4096 shared bytes: 4 blocks, 4 "
                                      "barriers; shared: 8 loads (248 "
                                      "bank-conflict replays), 8 stores (0 "
                                      "replays); global: 16 requests, 160 "
                                      "sectors (10.00 per request, ideal "
                                      "3.00)"),
            std::string::npos)
      << formatGpuCounters(c);
  // A new call starts empty; launches without counters record nothing.
  beginGpuCounters();
  ASSERT_TRUE(emulateLaunch(counted, &args, {1, 64, 4096}, error)) << error;
  EXPECT_TRUE(gpuCountersOfLastCall().empty());
}

} // namespace
