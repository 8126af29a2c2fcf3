// An AOT module's manifest names the runtime table's slot count: the loader
// fills that many slots of the module's `tsl_rt_table`, so a module built
// before (or after) runtime functions were added must be refused with a
// message that says to rebuild it, not overrun.
#include "runtime/Manifest.h"
#include "runtime/KernelAbi.h"

#include <gtest/gtest.h>

namespace {

TEST(Manifest, HeaderNamesTheSlotCount) {
  EXPECT_EQ(tsl::rt::manifestHeader(), std::string(tsl::rt::kManifestVersion) +
                                           " slots " +
                                           std::to_string(TSL_RT_NUM_SLOTS));
  std::vector<tsl::rt::ManifestVariant> variants;
  std::string error;
  EXPECT_TRUE(
      tsl::rt::readManifest(tsl::rt::writeManifest({}), variants, error))
      << error;
}

TEST(Manifest, OtherSlotCountsAndOldVersionsAreRefused) {
  for (std::string header :
       {std::string("tsl-aot 2"),
        std::string(tsl::rt::kManifestVersion) + " slots " +
            std::to_string(TSL_RT_NUM_SLOTS - 3),
        std::string(tsl::rt::kManifestVersion) + " slots " +
            std::to_string(TSL_RT_NUM_SLOTS + 1)}) {
    std::vector<tsl::rt::ManifestVariant> variants;
    std::string error;
    EXPECT_FALSE(tsl::rt::readManifest(header + "\n", variants, error))
        << header;
    EXPECT_NE(error.find("rebuild it with this version's 'tslc build'"),
              std::string::npos)
        << error;
    EXPECT_NE(error.find(header), std::string::npos) << error;
  }
}

} // namespace
