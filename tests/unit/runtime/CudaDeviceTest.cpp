// The CUDA device layer over a fake driver (FakeCudaDriver.h; no GPU
// needed): launch bounds checked before launching, a clear message for
// GPUs below sm_80, the PTX JIT outside the allocator's lock, calls that
// end synchronized with their stream, and DLPack consumers' streams
// ordered after TSL's work and before a released block's reuse.
#include "FakeCudaDriver.h"
#include "FakeVariants.h"
#include "runtime/GpuDevice.h"

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <thread>

using namespace tsl;
using namespace tsl::rt;
using fake::FakeCuda;

namespace {

std::shared_ptr<GpuDevice> openFake() {
  std::string error;
  std::shared_ptr<CudaDevice> cuda =
      CudaDevice::open(fake::fakeCudaDriver(), 0, error);
  EXPECT_TRUE(cuda) << error;
  return cuda ? GpuDevice::fromCuda(cuda) : nullptr;
}

/// One kernel of a fake module.
DeviceCode oneKernel() {
  DeviceCode code;
  code.cuda.push_back(reinterpret_cast<CUfunction>(uintptr_t{0x42}));
  return code;
}

const char *launch(GpuDevice::Call &call, int32_t threads) {
  tsl_rt_grid grid{4, threads, 0};
  int64_t args[4] = {};
  return call.abi()->launch(call.abi()->self, 0, &grid, args, 4);
}

class CudaDeviceTest : public ::testing::Test {
protected:
  void SetUp() override { FakeCuda::reset(); }
  void TearDown() override { FakeCuda::reset(); }
};

TEST_F(CudaDeviceTest, ALaunchBeyondTheKernelsThreadBoundIsExplained) {
  FakeCuda::get().maxThreadsPerBlock = 576; // 112 registers
  FakeCuda::get().numRegs = 112;
  std::shared_ptr<GpuDevice> gpu = openFake();
  ASSERT_TRUE(gpu);
  DeviceCode code = oneKernel();
  GpuDevice::Call call(*gpu, code);
  const char *error = launch(call, 1024);
  ASSERT_NE(error, nullptr);
  EXPECT_STREQ(error, "kernel tsl_k0 cannot launch blocks of 1024 threads on "
                      "sm_90: it allows at most 576 threads per block (112 "
                      "registers per thread)");
  EXPECT_EQ(FakeCuda::get().launches, 0);
  // Within the bound it launches.
  EXPECT_EQ(launch(call, 512), nullptr);
  EXPECT_EQ(FakeCuda::get().launches, 1);
}

TEST_F(CudaDeviceTest, GpusBelowSm80AreToldTheyAreTooOld) {
  FakeCuda::get().major = 7;
  FakeCuda::get().minor = 5;
  FakeCuda::get().name = "Tesla T4";
  std::shared_ptr<GpuDevice> gpu = openFake();
  ASSERT_TRUE(gpu);
  CUmodule module = nullptr;
  std::string error;
  EXPECT_FALSE(gpu->cuda()->loadModule(".version 8.0", module, error));
  EXPECT_EQ(error, "CUDA device 0 (Tesla T4, compute capability 7.5) cannot "
                   "run TSL's GPU code: it needs compute capability 8.0 or "
                   "newer");
  EXPECT_EQ(FakeCuda::get().modulesLoaded, 0); // never reached the JIT
}

TEST_F(CudaDeviceTest, TheJitDoesNotHoldTheAllocatorsLock) {
  std::shared_ptr<GpuDevice> gpu = openFake();
  ASSERT_TRUE(gpu);
  std::mutex m;
  std::condition_variable cv;
  bool jitStarted = false, allocated = false, allocatedDuringJit = false;
  // The fake JIT waits for the allocation on the other thread (bounded, so
  // a JIT that holds the lock fails the test instead of hanging it).
  FakeCuda::get().onModuleLoad = [&]() -> CUresult {
    std::unique_lock<std::mutex> lock(m);
    jitStarted = true;
    cv.notify_all();
    allocatedDuringJit =
        cv.wait_for(lock, std::chrono::seconds(20), [&] { return allocated; });
    return 0;
  };
  std::thread jit([&] {
    CUmodule module = nullptr;
    std::string error;
    EXPECT_TRUE(gpu->cuda()->loadModule(".version 8.0", module, error))
        << error;
  });
  {
    std::unique_lock<std::mutex> lock(m);
    cv.wait(lock, [&] { return jitStarted; });
  }
  std::string error;
  void *p = gpu->allocate(1000, error);
  EXPECT_NE(p, nullptr) << error;
  {
    std::lock_guard<std::mutex> lock(m);
    allocated = true;
  }
  cv.notify_all();
  jit.join();
  EXPECT_TRUE(allocatedDuringJit);
  EXPECT_EQ(FakeCuda::get().modulesLoaded, 1);
  gpu->release(p);
}

TEST_F(CudaDeviceTest, ACallThatLaunchedEndsSynchronizedWithItsStream) {
  std::shared_ptr<GpuDevice> gpu = openFake();
  ASSERT_TRUE(gpu);
  std::string own = fake::handle(gpu->cuda()->stream());
  DeviceCode code = oneKernel();
  std::string error;
  {
    GpuDevice::Call call(*gpu, code);
    EXPECT_TRUE(call.finish(false, error)); // nothing enqueued: no wait
    EXPECT_TRUE(FakeCuda::get().entries("sync").empty());
    ASSERT_EQ(launch(call, 256), nullptr);
    EXPECT_TRUE(call.finish(false, error));
    EXPECT_EQ(FakeCuda::get().entries("sync"),
              std::vector<std::string>{"sync " + own});
  }
  // A status check waited already: the end adds no second wait.
  FakeCuda::get().log.clear();
  {
    GpuDevice::Call call(*gpu, code);
    ASSERT_EQ(launch(call, 256), nullptr);
    int64_t status[TSL_RT_STATUS_WORDS];
    ASSERT_EQ(call.abi()->status(call.abi()->self, status), nullptr);
    EXPECT_EQ(status[0], 0);
    EXPECT_TRUE(call.finish(false, error));
    EXPECT_EQ(FakeCuda::get().entries("sync").size(), 1u);
  }
  // On the caller's stream, the caller's stream is waited for.
  FakeCuda::get().log.clear();
  {
    auto *theirs = reinterpret_cast<CUstream>(uintptr_t{77});
    GpuDevice::Call call(*gpu, code, theirs);
    ASSERT_EQ(launch(call, 256), nullptr);
    EXPECT_TRUE(call.finish(false, error));
    EXPECT_EQ(FakeCuda::get().entries("sync"),
              std::vector<std::string>{"sync 77"});
  }
}

/// A GPU variant of `scale` whose host code allocates its result and
/// launches one kernel (the fake driver runs nothing).
int32_t kernelLaunchOne(void **buffers, int64_t *syms, tsl_rt_context *ctx) {
  void *out = tsl_rt_dev_alloc(ctx, syms[1] * 4);
  if (!out)
    return 1;
  int64_t args[4] = {};
  if (tsl_rt_dev_launch(ctx, 0, 1, 128, 0, args, 4))
    return 1;
  buffers[1] = out;
  return 0;
}

TEST_F(CudaDeviceTest, AFunctionCallReturnsAfterItsGpuWork) {
  std::shared_ptr<GpuDevice> gpu = openFake();
  ASSERT_TRUE(gpu);
  TableOptions options;
  options.device = gpu;
  FunctionTable table("scale", nullptr, options);
  VariantCode v = fake::scaleVariant(fake::matchAny, kernelLaunchOne);
  v.device = std::make_shared<DeviceCode>(oneKernel());
  table.addVariant(std::move(v));
  std::vector<float> x{1, 2, 3};
  std::vector<CallArg> args{fake::vectorArg(x)};
  std::vector<Output> outputs;
  int variant = -1;
  Error error;
  ASSERT_TRUE(table.call(args, outputs, variant, error)) << error.message;
  ASSERT_EQ(outputs.size(), 1u);
  EXPECT_TRUE(outputs[0].onDevice);
  std::string own = fake::handle(gpu->cuda()->stream());
  // The launch, then the wait before the call returned.
  std::vector<std::string> log = FakeCuda::get().log;
  auto launched = std::find(log.begin(), log.end(), "launch " + own);
  ASSERT_NE(launched, log.end());
  EXPECT_NE(std::find(launched, log.end(), "sync " + own), log.end());
  GpuDevice::releaseHandedOver(outputs[0].data);
}

TEST_F(CudaDeviceTest, AConsumerStreamWaitsForTslAndReleaseWaitsForIt) {
  std::shared_ptr<GpuDevice> gpu = openFake();
  ASSERT_TRUE(gpu);
  std::string own = fake::handle(gpu->cuda()->stream());
  std::string error;
  void *p = gpu->allocate(4096, error);
  ASSERT_NE(p, nullptr) << error;
  gpu->handOver(p);
  auto *consumer = reinterpret_cast<CUstream>(uintptr_t{55});
  ASSERT_TRUE(gpu->exportTo(p, consumer, error)) << error;
  // An event recorded on TSL's stream, waited on by the consumer's.
  std::vector<std::string> records = FakeCuda::get().entries("record");
  std::vector<std::string> waits = FakeCuda::get().entries("wait");
  ASSERT_EQ(records.size(), 1u);
  ASSERT_EQ(waits.size(), 1u);
  std::string event = records[0].substr(7, records[0].find(' ', 7) - 7);
  EXPECT_EQ(records[0], "record " + event + " " + own);
  EXPECT_EQ(waits[0], "wait 55 " + event);
  // Legacy default stream (DLPack's 1) is a stream like any other.
  ASSERT_TRUE(
      gpu->exportTo(p, reinterpret_cast<CUstream>(uintptr_t{1}), error));
  FakeCuda::get().log.clear();
  GpuDevice::releaseHandedOver(p);
  // Releasing: TSL's stream waits for each consumer's work first.
  records = FakeCuda::get().entries("record");
  waits = FakeCuda::get().entries("wait");
  ASSERT_EQ(records.size(), 2u);
  ASSERT_EQ(waits.size(), 2u);
  EXPECT_TRUE(records[0].ends_with(" 55")) << records[0];
  EXPECT_TRUE(records[1].ends_with(" 1")) << records[1];
  EXPECT_EQ(waits[0].rfind("wait " + own + " ", 0), 0u) << waits[0];
  EXPECT_EQ(waits[1].rfind("wait " + own + " ", 0), 0u) << waits[1];
  // The block is back in TSL's stream's cache: the next allocation of its
  // size class reuses it without the driver.
  int before = FakeCuda::get().allocations;
  void *q = gpu->allocate(4096, error);
  EXPECT_EQ(q, p);
  EXPECT_EQ(FakeCuda::get().allocations, before);
  gpu->release(q);
}

TEST_F(CudaDeviceTest, OutputsOfACallerStreamGoBackToThatStreamsCache) {
  std::shared_ptr<GpuDevice> gpu = openFake();
  ASSERT_TRUE(gpu);
  auto *theirs = reinterpret_cast<CUstream>(uintptr_t{77});
  std::string error;
  void *p = gpu->allocate(4096, error, theirs);
  ASSERT_NE(p, nullptr) << error;
  gpu->handOver(p, theirs);
  GpuDevice::releaseHandedOver(p);
  // Not reused by the device's own stream (the caller's stream may still
  // read it), reused by the caller's.
  void *own = gpu->allocate(4096, error);
  EXPECT_NE(own, p);
  void *again = gpu->allocate(4096, error, theirs);
  EXPECT_EQ(again, p);
  gpu->release(own);
  gpu->release(again, theirs);
}

} // namespace
