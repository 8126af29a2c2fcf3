// runtime/KernelEntryPoints.def is the one list of runtime functions that
// generated code calls: tsl_rt_entry_points() returns each with an address,
// the AOT table and slot lookup agree with it, every function KernelAbi.h
// declares by hand is one the runtime itself calls, and every runtime
// function the backends name is on the list (so a JIT that registers the
// list binds them all).
#include "runtime/KernelAbi.h"

#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace {

std::vector<tsl_rt_entry_point> entryPoints() {
  size_t n = 0;
  const tsl_rt_entry_point *e = tsl_rt_entry_points(&n);
  return std::vector<tsl_rt_entry_point>(e, e + n);
}

std::set<std::string> entryNames() {
  std::set<std::string> names;
  for (const tsl_rt_entry_point &e : entryPoints())
    names.insert(e.name);
  return names;
}

std::string readSource(const std::filesystem::path &path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

/// Every `tsl_rt_xxx` in \p text matching \p pattern (group 1).
std::set<std::string> namesIn(const std::string &text,
                              const std::string &pattern) {
  std::set<std::string> out;
  std::regex re(pattern);
  for (auto it = std::sregex_iterator(text.begin(), text.end(), re);
       it != std::sregex_iterator(); ++it)
    out.insert((*it)[1]);
  return out;
}

TEST(EntryPoints, EveryListedSymbolResolves) {
  std::vector<tsl_rt_entry_point> entries = entryPoints();
  // + index_add's check, masked_scatter, sgemm_at, the conv2d weight and
  // max_pool2d gradients
  ASSERT_EQ(entries.size(), 36u);
  std::set<const void *> addresses;
  for (const tsl_rt_entry_point &e : entries) {
    ASSERT_NE(e.name, nullptr);
    EXPECT_EQ(std::string(e.name).rfind("tsl_rt_", 0), 0u) << e.name;
    EXPECT_NE(e.address, nullptr) << e.name;
    addresses.insert(e.address);
  }
  EXPECT_EQ(addresses.size(), entries.size()); // distinct functions
  EXPECT_EQ(entryNames().size(), entries.size());
  EXPECT_EQ(tsl_rt_entry_points(nullptr), tsl_rt_entry_points(nullptr));
  EXPECT_EQ(entries[0].address, reinterpret_cast<void *>(&tsl_rt_alloc));
  EXPECT_EQ(entries.back().address, reinterpret_cast<void *>(&tsl_rt_dev_gemm));
}

TEST(EntryPoints, SlotsAndTheAotTableFollowTheList) {
  std::vector<tsl_rt_entry_point> entries = entryPoints();
  ASSERT_GE(entries.size(), static_cast<size_t>(TSL_RT_NUM_SLOTS));
  std::vector<void *> table(TSL_RT_NUM_SLOTS, nullptr);
  tsl_rt_fill_table(table.data());
  for (int32_t i = 0; i < TSL_RT_NUM_SLOTS; ++i) {
    EXPECT_EQ(tsl_rt_slot_of(entries[i].name), i) << entries[i].name;
    EXPECT_EQ(table[i], entries[i].address) << entries[i].name;
  }
  for (size_t i = TSL_RT_NUM_SLOTS; i < entries.size(); ++i)
    EXPECT_EQ(tsl_rt_slot_of(entries[i].name), -1) << entries[i].name;
  // The ABI of AOT modules built before the list: slots keep their numbers
  // (issue 32 appended tsl_rt_check_indices, 24, and tsl_rt_masked_scatter;
  // issue 34 tsl_rt_sgemm_at, 26, then the conv2d weight and max_pool2d
  // gradients, 27 and 28).
  EXPECT_EQ(TSL_RT_NUM_SLOTS, 29);
  EXPECT_EQ(TSL_RT_CONV2D_WEIGHT_GRAD, 27);
  EXPECT_EQ(TSL_RT_MAX_POOL2D_GRAD, 28);
  EXPECT_EQ(TSL_RT_CHECK_INDICES, 24);
  EXPECT_EQ(TSL_RT_SGEMM_AT, 26);
  EXPECT_EQ(tsl_rt_slot_of("tsl_rt_alloc"), TSL_RT_ALLOC);
  EXPECT_EQ(TSL_RT_ALLOC, 0);
  EXPECT_EQ(TSL_RT_TOPK, 9);
  EXPECT_EQ(TSL_RT_SGEMM_BT, 13);
  EXPECT_EQ(TSL_RT_ATTENTION, 14);
  EXPECT_EQ(TSL_RT_STREAM_OUTPUT, 21);
  EXPECT_EQ(tsl_rt_slot_of("tsl_rt_no_such_function"), -1);
}

TEST(EntryPoints, TheListMatchesKernelAbiH) {
  namespace fs = std::filesystem;
  fs::path root = TSL_SOURCE_DIR;
  // Functions declared by hand in KernelAbi.h are the runtime's own (it
  // calls them around a kernel); everything generated code calls comes
  // from the list.
  std::set<std::string> declared = namesIn(
      readSource(root / "runtime" / "KernelAbi.h"), R"(\b(tsl_rt_\w+)\s*\()");
  const std::set<std::string> runtimeSide = {"tsl_rt_context_create",
                                             "tsl_rt_context_destroy",
                                             "tsl_rt_context_release",
                                             "tsl_rt_context_take",
                                             "tsl_rt_context_error",
                                             "tsl_rt_context_failed_op",
                                             "tsl_rt_context_set_device",
                                             "tsl_rt_context_take_device",
                                             "tsl_rt_slot_of",
                                             "tsl_rt_fill_table",
                                             "tsl_rt_entry_points"};
  std::set<std::string> listed = entryNames();
  for (const std::string &name : declared)
    EXPECT_TRUE(runtimeSide.count(name) || listed.count(name))
        << name << " is declared in KernelAbi.h outside KernelEntryPoints.def";
  std::set<std::string> inDef =
      namesIn(readSource(root / "runtime" / "KernelEntryPoints.def"),
              R"(TSL_RT_(?:DEVICE_)?ENTRY\((tsl_rt_\w+),)");
  EXPECT_EQ(inDef, listed);
}

TEST(EntryPoints, EveryRuntimeFunctionTheBackendsCallIsListed) {
  namespace fs = std::filesystem;
  fs::path backend = fs::path(TSL_SOURCE_DIR) / "backend";
  std::set<std::string> named;
  for (const fs::directory_entry &f : fs::recursive_directory_iterator(backend))
    if (f.is_regular_file() && f.path().extension() == ".cpp")
      for (const std::string &n :
           namesIn(readSource(f.path()), R"re("(tsl_rt_\w+)")re"))
        named.insert(n);
  named.erase("tsl_rt_table"); // the AOT table's own symbol
  ASSERT_FALSE(named.empty());
  std::set<std::string> listed = entryNames();
  for (const std::string &n : named)
    EXPECT_TRUE(listed.count(n)) << n << " is called but not listed";
}

} // namespace
