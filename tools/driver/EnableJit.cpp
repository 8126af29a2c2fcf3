// tsl_runtime_enable_jit: the C entry point that gives a runtime the
// driver's compiler (the runtime itself contains none).
#include "runtime/Runtime.h"
#include "tools/driver/JitCompiler.h"

extern "C" tsl_status tsl_runtime_enable_jit(tsl_runtime *rt) {
  if (!rt)
    return tsl::rt::fail(TSL_INVALID_ARGUMENT,
                         "tsl_runtime_enable_jit: null runtime");
  tsl::rt::setCompilerFactory(
      rt,
      [](const std::string &path,
         const std::shared_ptr<tsl::rt::GpuDevice> &device)
          -> tsl::Expected<std::unique_ptr<tsl::rt::CompilerHook>> {
        auto jit = std::make_unique<tsl::JitCompiler>(path);
        jit->setDevice(device);
        // Load and check the file now so a broken source fails at load time.
        if (tsl::Error error; !jit->check(error))
          return error;
        return std::unique_ptr<tsl::rt::CompilerHook>(std::move(jit));
      });
  return TSL_OK;
}
