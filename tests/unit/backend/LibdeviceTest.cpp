// Finding libdevice (backend/nvptx/Libdevice.h) in fake directory trees:
// the pip wheels' layouts under a virtual environment, conda, PYTHONPATH
// and ~/.local, the search order, $TSL_LIBDEVICE, and a message that names
// every place searched when there is none.
#include "backend/nvptx/Libdevice.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>

using namespace tsl;
namespace fs = std::filesystem;

namespace {

class LibdeviceSearchTest : public ::testing::Test {
protected:
  void SetUp() override {
    root =
        fs::temp_directory_path() /
        ("tsl-libdevice-" +
         std::string(
             ::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(root);
    fs::create_directories(root);
    // No system directory has one: only what a test creates is found.
    system.cudaRoots = {(root / "usr-local-cuda").string()};
    system.libdeviceDirs = {(root / "toolkit-libdevice").string()};
    system.pythonPrefixes = {(root / "usr").string()};
  }
  void TearDown() override { fs::remove_all(root); }

  /// Creates libdevice.10.bc (any bytes) in \p dir under the root; its
  /// path.
  std::string plant(const std::string &dir) {
    fs::create_directories(root / dir);
    std::string path = (root / dir / "libdevice.10.bc").string();
    std::ofstream(path) << "BC";
    return path;
  }
  LibdeviceSearch find() {
    return findLibdevice(
        [this](const char *name) -> const char * {
          auto it = env.find(name);
          return it == env.end() ? nullptr : it->second.c_str();
        },
        system);
  }
  std::string at(const std::string &rel) const { return (root / rel).string(); }

  fs::path root;
  LibdeviceSystemDirs system;
  std::map<std::string, std::string> env;
};

TEST_F(LibdeviceSearchTest, CudaThirteenWheelInVirtualEnv) {
  std::string want =
      plant("venv/lib/python3.12/site-packages/nvidia/cu13/nvvm/libdevice");
  env["VIRTUAL_ENV"] = at("venv");
  LibdeviceSearch s = find();
  EXPECT_EQ(s.path, want);
  EXPECT_EQ(s.message(), "");
}

TEST_F(LibdeviceSearchTest, CudaTwelveWheelInConda) {
  std::string want = plant(
      "conda/lib/python3.10/site-packages/nvidia/cuda_nvcc/nvvm/libdevice");
  env["CONDA_PREFIX"] = at("conda");
  EXPECT_EQ(find().path, want);
}

TEST_F(LibdeviceSearchTest, TritonInUserSitePackages) {
  std::string want =
      plant("home/.local/lib/python3.11/site-packages/triton/backends/nvidia/"
            "lib");
  env["HOME"] = at("home");
  EXPECT_EQ(find().path, want);
}

TEST_F(LibdeviceSearchTest, SystemDistPackagesAndPythonPath) {
  std::string dist =
      plant("usr/lib/python3.11/dist-packages/nvidia/cu13/nvvm/libdevice");
  EXPECT_EQ(find().path, dist);
  // A PYTHONPATH entry is a site directory, searched before the system's.
  std::string mine = plant("mine/nvidia/cuda_nvcc/nvvm/libdevice");
  env["PYTHONPATH"] = at("nowhere") + ":" + at("mine");
  EXPECT_EQ(find().path, mine);
}

TEST_F(LibdeviceSearchTest, CondaNvvmAndToolkits) {
  std::string conda = plant("conda/nvvm/libdevice");
  env["CONDA_PREFIX"] = at("conda");
  EXPECT_EQ(find().path, conda);
  env.clear();
  std::string toolkit = plant("toolkit-libdevice");
  EXPECT_EQ(find().path, toolkit);
}

TEST_F(LibdeviceSearchTest, Order) {
  // CUDA_HOME, then the active environment, then the system toolkit.
  std::string system = plant("usr-local-cuda/nvvm/libdevice");
  std::string venv =
      plant("venv/lib/python3.12/site-packages/nvidia/cu13/nvvm/libdevice");
  std::string home = plant("cuda-home/nvvm/libdevice");
  env["VIRTUAL_ENV"] = at("venv");
  EXPECT_EQ(find().path, venv);
  env["CUDA_HOME"] = at("cuda-home");
  EXPECT_EQ(find().path, home);
  env.clear();
  EXPECT_EQ(find().path, system);
}

TEST_F(LibdeviceSearchTest, ExplicitPathIsTheOnlyPlace) {
  plant("usr-local-cuda/nvvm/libdevice");
  env["TSL_LIBDEVICE"] = at("bad/libdevice.10.bc");
  LibdeviceSearch s = find();
  EXPECT_EQ(s.path, "");
  ASSERT_EQ(s.searched.size(), 1u);
  EXPECT_EQ(s.message(), "TSL_LIBDEVICE is '" + at("bad/libdevice.10.bc") +
                             "', which is not a file; unset it to search the "
                             "usual places");
  std::string good = plant("good");
  env["TSL_LIBDEVICE"] = good;
  EXPECT_EQ(find().path, good);
}

TEST_F(LibdeviceSearchTest, NoneFoundNamesEveryPlaceSearched) {
  fs::create_directories(root / "venv/lib/python3.12/site-packages");
  env["CUDA_HOME"] = at("cuda-home");
  env["VIRTUAL_ENV"] = at("venv");
  env["HOME"] = at("home");
  LibdeviceSearch s = find();
  EXPECT_EQ(s.path, "");
  std::string site = at("venv/lib/python3.12/site-packages");
  std::string want =
      "no libdevice.10.bc in " + at("cuda-home/nvvm/libdevice") + ", " + site +
      "/nvidia/cu13/nvvm/libdevice, " + site +
      "/nvidia/cuda_nvcc/nvvm/libdevice, " + site +
      "/triton/backends/nvidia/lib, " + at("usr-local-cuda/nvvm/libdevice") +
      ", " + at("toolkit-libdevice") + ", " +
      at("usr/lib/python3*/site-packages") + "/nvidia/cu13/nvvm/libdevice, " +
      at("usr/lib/python3*/site-packages") +
      "/nvidia/cuda_nvcc/nvvm/libdevice, " +
      at("usr/lib/python3*/site-packages") + "/triton/backends/nvidia/lib, " +
      at("home/.local/lib/python3*/site-packages") +
      "/nvidia/cu13/nvvm/libdevice, " +
      at("home/.local/lib/python3*/site-packages") +
      "/nvidia/cuda_nvcc/nvvm/libdevice, " +
      at("home/.local/lib/python3*/site-packages") +
      "/triton/backends/nvidia/lib; install the CUDA toolkit, or pip's "
      "nvidia-nvvm (CUDA 13) or nvidia-cuda-nvcc-cu12, or set CUDA_HOME, or "
      "TSL_LIBDEVICE to the file";
  EXPECT_EQ(s.message(), want);
}

} // namespace
