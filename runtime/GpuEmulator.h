#pragma once
// TEMPORARY sequential stand-in (no barriers): replaced by the fiber
// emulator.
#include <cstddef>
#include <cstdint>
#include <string>

namespace tsl::rt {
using EmulatedKernel = void (*)(void *args);
struct EmulatedLaunch {
  int64_t blocks;
  int32_t threadsPerBlock;
  int32_t sharedBytes;
};
bool emulateLaunch(EmulatedKernel kernel, void *args,
                   const EmulatedLaunch &launch, std::string &error);
struct EmulatedPrimitive {
  const char *name;
  void *address;
};
const EmulatedPrimitive *emulatedPrimitives(size_t *n);
} // namespace tsl::rt

extern "C" {
#define TSL_GPU_PRIMITIVE(Name, Ret, Params) Ret Name Params;
#include "runtime/DevicePrimitives.def"
}
