// The kernel origin registry (backend/common/KernelOrigins.h).
#include "backend/common/KernelOrigins.h"

#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>

namespace tsl {

namespace {

struct Registry {
  std::mutex mutex;
  std::map<std::string, std::string, std::less<>> origins;
};

Registry &registry() {
  static Registry r;
  return r;
}

} // namespace

bool perfMapEnabled() {
  static const bool enabled = [] {
    const char *v = std::getenv("TSL_PERF_MAP");
    return v && *v && std::strcmp(v, "0") != 0;
  }();
  return enabled;
}

void recordKernelOrigin(std::string_view kernel, std::string origin) {
  if (!perfMapEnabled())
    return;
  Registry &r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.origins.emplace(std::string(kernel), std::move(origin));
}

std::string kernelOrigin(std::string_view kernel) {
  Registry &r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.origins.find(kernel);
  return it == r.origins.end() ? std::string() : it->second;
}

} // namespace tsl
