// Finding libdevice.10.bc: the CUDA toolkit's, or a pip wheel's.
#include "backend/nvptx/Libdevice.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <system_error>

namespace tsl {

namespace {

constexpr const char *kFile = "libdevice.10.bc";

/// Where the wheels put libdevice, relative to a site-packages directory.
constexpr const char *kWheelDirs[] = {
    "nvidia/cu13/nvvm/libdevice",      // nvidia-nvvm (CUDA 13)
    "nvidia/cuda_nvcc/nvvm/libdevice", // nvidia-cuda-nvcc-cu12
    "triton/backends/nvidia/lib",      // Triton 3 (PyTorch's)
};

bool isFile(const std::string &path) {
  std::error_code ec;
  return std::filesystem::is_regular_file(path, ec);
}

/// <prefix>/lib/python3*/{site,dist}-packages that exist, sorted; the
/// patterns themselves when none does (so the message says where).
std::vector<std::string> sitePackages(const std::string &prefix) {
  std::vector<std::string> found;
  std::error_code ec;
  std::filesystem::path lib = std::filesystem::path(prefix) / "lib";
  for (std::filesystem::directory_iterator it(lib, ec), end; !ec && it != end;
       it.increment(ec)) {
    std::string name = it->path().filename().string();
    if (name.rfind("python3", 0) != 0)
      continue;
    for (const char *kind : {"site-packages", "dist-packages"})
      if (std::filesystem::is_directory(it->path() / kind, ec))
        found.push_back((it->path() / kind).string());
  }
  std::sort(found.begin(), found.end());
  if (found.empty())
    found.push_back((lib / "python3*/site-packages").string());
  return found;
}

/// Builds the search: directories in order, each looked in once.
struct Search {
  LibdeviceSearch result;

  /// Looks in \p dir (unless found already or searched before).
  void dir(const std::string &dir) {
    if (!result.path.empty() || dir.empty() ||
        std::find(result.searched.begin(), result.searched.end(), dir) !=
            result.searched.end())
      return;
    result.searched.push_back(dir);
    std::string path = dir + "/" + kFile;
    if (dir.find('*') == std::string::npos && isFile(path))
      result.path = path;
  }
  void cudaRoot(const std::string &root) {
    if (!root.empty())
      dir(root + "/nvvm/libdevice");
  }
  void site(const std::string &site) {
    for (const char *w : kWheelDirs)
      dir(site + "/" + w);
  }
  void prefix(const std::string &prefix) {
    if (prefix.empty())
      return;
    for (const std::string &s : sitePackages(prefix))
      site(s);
  }
};

std::string var(const EnvironmentLookup &env, const char *name) {
  const char *v = env(name);
  return v ? v : "";
}

} // namespace

std::string LibdeviceSearch::message() const {
  if (!path.empty())
    return "";
  if (explicitPath)
    return "TSL_LIBDEVICE is '" + searched.front() +
           "', which is not a file; unset it to search the usual places";
  std::string m = "no libdevice.10.bc in ";
  for (size_t i = 0; i < searched.size(); ++i)
    m += (i ? ", " : "") + searched[i];
  return m + "; install the CUDA toolkit, or pip's nvidia-nvvm (CUDA 13) or "
             "nvidia-cuda-nvcc-cu12, or set CUDA_HOME, or TSL_LIBDEVICE to the "
             "file";
}

LibdeviceSearch findLibdevice(const EnvironmentLookup &env,
                              const LibdeviceSystemDirs &system) {
  Search s;
  if (const char *explicitPath = env("TSL_LIBDEVICE"); explicitPath) {
    s.result.searched.push_back(explicitPath);
    s.result.explicitPath = true;
    if (isFile(explicitPath))
      s.result.path = explicitPath;
    return s.result;
  }
  s.cudaRoot(var(env, "CUDA_HOME"));
  s.cudaRoot(var(env, "CUDA_PATH"));
  // The active Python environment: the wheels its packages installed.
  s.prefix(var(env, "VIRTUAL_ENV"));
  std::string conda = var(env, "CONDA_PREFIX");
  s.prefix(conda);
  s.cudaRoot(conda); // conda-forge's cuda-nvvm
  s.prefix(var(env, "PYTHONHOME"));
  std::string pythonPath = var(env, "PYTHONPATH");
  for (size_t start = 0; start <= pythonPath.size();) {
    size_t end = pythonPath.find(':', start);
    if (end == std::string::npos)
      end = pythonPath.size();
    if (end > start)
      s.site(pythonPath.substr(start, end - start));
    start = end + 1;
  }
  for (const std::string &root : system.cudaRoots)
    s.cudaRoot(root);
  for (const std::string &d : system.libdeviceDirs)
    s.dir(d);
  for (const std::string &p : system.pythonPrefixes)
    s.prefix(p);
  if (std::string home = var(env, "HOME"); !home.empty())
    s.prefix(home + "/.local");
  return s.result;
}

LibdeviceSearch findLibdevice() {
  return findLibdevice([](const char *name) { return std::getenv(name); },
                       LibdeviceSystemDirs());
}

} // namespace tsl
