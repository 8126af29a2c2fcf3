#pragma once
/// \file Finding libdevice.10.bc, the CUDA math library as LLVM bitcode that
/// GPU kernels with exp, log, sin, cos, pow, tanh or erf link. It ships with
/// the CUDA toolkit and with pip wheels (nvidia-nvvm for CUDA 13, as
/// nvidia/cu13/nvvm/libdevice; nvidia-cuda-nvcc-cu12, as
/// nvidia/cuda_nvcc/nvvm/libdevice; and Triton, which PyTorch installs, as
/// triton/backends/nvidia/lib), so a machine with only PyTorch's wheels has
/// one too. No LLVM headers.

#include <functional>
#include <string>
#include <vector>

namespace tsl {

/// The places looked in that do not come from the environment.
struct LibdeviceSystemDirs {
  /// CUDA toolkit roots (libdevice under <root>/nvvm/libdevice).
  std::vector<std::string> cudaRoots{"/usr/local/cuda", "/opt/cuda"};
  /// Directories that hold libdevice.10.bc itself (distribution packages).
  std::vector<std::string> libdeviceDirs{
      "/usr/lib/nvidia-cuda-toolkit/libdevice"};
  /// Prefixes whose lib/python3*/{site,dist}-packages hold wheels.
  std::vector<std::string> pythonPrefixes{"/usr/local", "/usr"};
};

/// Where libdevice was looked for, and what was found.
struct LibdeviceSearch {
  std::string path; ///< libdevice.10.bc, or "" when none was found
  /// The directories looked in for libdevice.10.bc, in order; when
  /// $TSL_LIBDEVICE is set, only its value (a file).
  std::vector<std::string> searched;
  /// The one place searched was $TSL_LIBDEVICE.
  bool explicitPath = false;
  /// Why none was found, naming every place searched, and what to do
  /// ("" when found).
  std::string message() const;
};

/// Reads an environment variable: null when unset.
using EnvironmentLookup = std::function<const char *(const char *)>;

/// Looks for libdevice.10.bc: $TSL_LIBDEVICE when set (only there), else
/// $CUDA_HOME and $CUDA_PATH, the active Python environment's packages
/// ($VIRTUAL_ENV, $CONDA_PREFIX and its nvvm/, $PYTHONHOME, each entry of
/// $PYTHONPATH), the system's CUDA toolkit, then the system's and the
/// user's ($HOME/.local) Python packages. Python package directories are
/// searched for the wheels' layouts (Libdevice.h's file comment).
LibdeviceSearch findLibdevice(const EnvironmentLookup &env,
                              const LibdeviceSystemDirs &system);

/// findLibdevice with the process environment and the default system dirs.
LibdeviceSearch findLibdevice();

} // namespace tsl
