#include "runtime/GpuDevice.h"

#include "runtime/FunctionTable.h"
#include "runtime/GpuEmulator.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>

namespace tsl::rt {

namespace {

/// More blocks than a GPU holds at once buy nothing: kernels stride.
constexpr int64_t kMaxBlocks = 1 << 20;

CUdeviceptr devicePtr(const void *p) {
  return static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(p));
}

/// An output handed to a caller: its device, the stream whose work
/// produced it, and the streams it was exported to (DLPack consumers).
struct Handed {
  std::weak_ptr<GpuDevice> device;
  CUstream stream = nullptr;
  std::vector<CUstream> readers;
};

/// Outputs handed to callers, so tsl_outputs_free can find their device.
std::mutex handedMutex;
std::map<void *, Handed> &handed() {
  static std::map<void *, Handed> m;
  return m;
}

} // namespace

std::shared_ptr<GpuDevice> GpuDevice::openCuda(int ordinal,
                                               std::string &error) {
  std::shared_ptr<CudaDevice> cuda = CudaDevice::open(ordinal, error);
  if (!cuda)
    return nullptr;
  std::shared_ptr<GpuDevice> d(new GpuDevice());
  d->cuda_ = std::move(cuda);
  return d;
}

std::shared_ptr<GpuDevice>
GpuDevice::fromCuda(std::shared_ptr<CudaDevice> cuda) {
  std::shared_ptr<GpuDevice> d(new GpuDevice());
  d->cuda_ = std::move(cuda);
  return d;
}

std::shared_ptr<GpuDevice> GpuDevice::emulator() {
  return std::shared_ptr<GpuDevice>(new GpuDevice());
}

std::string GpuDevice::name() const {
  return cuda_ ? cuda_->architecture() : "emulator";
}

void *GpuDevice::allocate(size_t bytes, std::string &error, CUstream stream) {
  if (!cuda_) {
    size_t n = (bytes + 63) / 64 * 64;
    void *p = std::aligned_alloc(64, n ? n : 64);
    if (!p)
      error = "out of memory";
    return p;
  }
  if (!cuda_->makeCurrent(error))
    return nullptr;
  return reinterpret_cast<void *>(
      static_cast<uintptr_t>(cuda_->allocate(bytes, error, stream)));
}

void GpuDevice::release(void *p, CUstream stream) {
  if (!p)
    return;
  if (!cuda_)
    std::free(p);
  else
    cuda_->release(devicePtr(p), stream);
}

bool GpuDevice::copy(Copy kind, void *dst, const void *src, size_t bytes,
                     std::string &error, CUstream stream) {
  if (!cuda_) {
    std::memcpy(dst, src, bytes);
    return true;
  }
  const CudaApi &a = cuda_->driver().api();
  CUstream s = streamOr(stream);
  CUresult r;
  const char *what;
  switch (kind) {
  case Copy::ToHost:
    what = "copying to the host";
    r = a.cuMemcpyDtoHAsync(dst, devicePtr(src), bytes, s);
    if (r == 0)
      r = a.cuStreamSynchronize(s);
    break;
  case Copy::ToDevice:
    // Pageable host memory: the driver stages it before returning.
    what = "copying to the device";
    r = a.cuMemcpyHtoDAsync(devicePtr(dst), src, bytes, s);
    break;
  default:
    what = "copying on the device";
    r = a.cuMemcpyDtoDAsync(devicePtr(dst), devicePtr(src), bytes, s);
  }
  if (r != 0)
    error = cuda_->driver().describe(what, r);
  return r == 0;
}

void GpuDevice::openGemmLibrary() {
  std::call_once(gemmOnce_, [&] {
    if (!cuda_)
      noLibraryWhy_ = "the emulator has no GEMM library";
    else
      cublasLt_ = CublasLtGemm::open(*cuda_, noLibraryWhy_);
    if (LogFlags::fromEnvironment().perf)
      std::fprintf(stderr, "[tsl] perf: GEMMs on %s: %s\n", name().c_str(),
                   gemmPath().c_str());
  });
}

std::string GpuDevice::gemmPath() {
  openGemmLibrary();
  if (cublasLt_ && libraryGemm_)
    return "cuBLASLt (" + cublasLt_->path() +
           (cublasLt_->refused().empty()
                ? std::string()
                : "; passed over: " + cublasLt_->refused()) +
           ")";
  return "TSL's generated kernel (" +
         (cublasLt_ ? std::string("library GEMMs switched off")
                    : noLibraryWhy_) +
         ")";
}

GemmOutcome GpuDevice::gemm(const tsl_rt_gemm &p, std::string &error,
                            CUstream stream) {
  if (!cuda_ || !libraryGemm_)
    return GemmOutcome::Unavailable;
  openGemmLibrary();
  if (!cublasLt_)
    return GemmOutcome::Unavailable;
  return cublasLt_->run(p, streamOr(stream), error);
}

void GpuDevice::handOver(void *p, CUstream stream) {
  std::lock_guard<std::mutex> lock(handedMutex);
  handed()[p] = Handed{shared_from_this(), stream, {}};
}

bool GpuDevice::exportTo(void *p, CUstream consumer, std::string &error) {
  if (!cuda_)
    return true; // host memory, no streams
  CUstream producer = nullptr;
  {
    std::lock_guard<std::mutex> lock(handedMutex);
    auto it = handed().find(p);
    if (it == handed().end()) {
      error = "internal error: exporting memory that was not handed over";
      return false;
    }
    producer = it->second.stream;
    std::vector<CUstream> &readers = it->second.readers;
    if (std::find(readers.begin(), readers.end(), consumer) == readers.end())
      readers.push_back(consumer);
  }
  return cuda_->makeCurrent(error) &&
         cuda_->orderAfter(consumer, streamOr(producer), error);
}

void GpuDevice::releaseHandedOver(void *p) {
  std::shared_ptr<GpuDevice> device;
  Handed entry;
  {
    std::lock_guard<std::mutex> lock(handedMutex);
    auto it = handed().find(p);
    if (it == handed().end())
      return;
    entry = std::move(it->second);
    device = entry.device.lock();
    handed().erase(it);
  }
  if (!device)
    return;
  if (device->cuda_ && !entry.readers.empty()) {
    // Reuse on the producing stream waits for the readers' work enqueued
    // so far (a consumer frees its view before its stream has run).
    std::string error;
    bool ordered = device->cuda_->makeCurrent(error);
    for (CUstream reader : entry.readers)
      ordered = ordered && device->cuda_->orderAfter(
                               device->streamOr(entry.stream), reader, error);
    if (!ordered) // the safe fallback
      device->cuda_->driver().api().cuCtxSynchronize();
  }
  device->release(p, entry.stream);
}

GpuDevice::Call::Call(GpuDevice &device, const DeviceCode &code,
                      CUstream stream)
    : device_(device), code_(code),
      stream_(stream), abi_{this,          &Call::alloc, &Call::free,
                            &Call::launch, &Call::read,  &Call::status,
                            &Call::gemm} {
  // CUDA contexts are current per thread: calls come from any thread. (A
  // failure here shows again, with its message, at the first allocation.)
  std::string ignored;
  if (device_.cuda_)
    device_.cuda_->makeCurrent(ignored);
}

GpuDevice::Call::~Call() {
  std::string ignored;
  if (pending_)
    finish(false, ignored);
  device_.release(status_, stream_);
}

bool GpuDevice::Call::finish(bool enqueuedElsewhere, std::string &error) {
  if (!device_.cuda_ || !(pending_ || enqueuedElsewhere))
    return true;
  pending_ = false;
  const CudaDriver &driver = device_.cuda_->driver();
  if (CUresult r = driver.api().cuStreamSynchronize(device_.streamOr(stream_));
      r != 0) {
    error = driver.describe("waiting for the call's GPU work", r);
    return false;
  }
  return true;
}

const char *GpuDevice::Call::fail(std::string message) {
  error_ = std::move(message);
  return error_.c_str();
}

void *GpuDevice::Call::alloc(void *self, int64_t bytes, const char **error) {
  auto *c = static_cast<Call *>(self);
  std::string message;
  void *p =
      c->device_.allocate(static_cast<size_t>(bytes), message, c->stream_);
  if (!p)
    *error = c->fail(message);
  return p;
}

void GpuDevice::Call::free(void *self, void *p) {
  auto *c = static_cast<Call *>(self);
  c->device_.release(p, c->stream_);
}

const char *GpuDevice::Call::read(void *self, void *dst, const void *src,
                                  int64_t bytes) {
  auto *c = static_cast<Call *>(self);
  std::string message;
  if (!c->device_.copy(Copy::ToHost, dst, src, static_cast<size_t>(bytes),
                       message, c->stream_))
    return c->fail(message);
  c->pending_ = false; // the copy waited for the stream
  return nullptr;
}

bool GpuDevice::Call::statusWord(std::string &error) {
  if (status_)
    return true;
  static const int64_t zero[TSL_RT_STATUS_WORDS] = {};
  status_ = device_.allocate(sizeof zero, error, stream_);
  if (!status_)
    return false;
  if (!device_.cuda_) {
    std::memcpy(status_, zero, sizeof zero);
    return true;
  }
  // Zeroed on the stream, without waiting (a copy from pageable host
  // memory would stage it synchronously).
  pending_ = true;
  const CudaApi &a = device_.cuda_->driver().api();
  if (CUresult r =
          a.cuMemsetD32Async(devicePtr(status_), 0, 2 * TSL_RT_STATUS_WORDS,
                             device_.streamOr(stream_));
      r != 0) {
    error = device_.cuda_->driver().describe("cuMemsetD32Async", r);
    return false;
  }
  return true;
}

const char *GpuDevice::Call::status(void *self, int64_t *status) {
  auto *c = static_cast<Call *>(self);
  std::fill(status, status + TSL_RT_STATUS_WORDS, 0);
  if (!c->status_) // nothing launched, nothing failed
    return nullptr;
  std::string message;
  if (!c->device_.copy(Copy::ToHost, status, c->status_,
                       TSL_RT_STATUS_WORDS * sizeof *status, message,
                       c->stream_))
    return c->fail(message);
  c->pending_ = false; // the copy waited for the stream
  return nullptr;
}

int32_t GpuDevice::Call::gemm(void *self, const tsl_rt_gemm *g,
                              const char **error) {
  auto *c = static_cast<Call *>(self);
  std::string message;
  switch (c->device_.gemm(*g, message, c->stream_)) {
  case GemmOutcome::Done:
    c->pending_ = true;
    return 0;
  case GemmOutcome::Unavailable:
    return 2;
  case GemmOutcome::Failed:
    break;
  }
  *error = c->fail(message);
  return 1;
}

const char *GpuDevice::Call::launch(void *self, int32_t kernel,
                                    const tsl_rt_grid *grid, int64_t *args,
                                    int64_t nargs) {
  auto *c = static_cast<Call *>(self);
  GpuDevice &d = c->device_;
  std::string message;
  if (nargs < 1 || !c->statusWord(message))
    return c->fail(nargs < 1 ? "a launch without arguments" : message);
  args[0] = static_cast<int64_t>(reinterpret_cast<uintptr_t>(c->status_));
  int64_t blocks = std::min(grid->blocks, kMaxBlocks);
  if (!d.cuda_) {
    if (kernel < 0 || static_cast<size_t>(kernel) >= c->code_.emulated.size())
      return c->fail("no device kernel " + std::to_string(kernel));
    EmulatedLaunch launch{blocks, grid->threads, grid->shared_bytes};
    if (!emulateLaunch(c->code_.emulated[kernel], args, launch, message))
      return c->fail(message);
    return nullptr;
  }
  if (kernel < 0 || static_cast<size_t>(kernel) >= c->code_.cuda.size())
    return c->fail("no device kernel " + std::to_string(kernel));
  CUfunction f = c->code_.cuda[kernel];
  std::string tooMany = d.cuda_->checkLaunchBounds(f, kernel, grid->threads);
  if (!tooMany.empty())
    return c->fail(tooMany);
  // The argument block is the kernel's one parameter, passed by value: no
  // copy to device memory, nothing to wait for.
  void *params[] = {args};
  const CudaApi &a = d.cuda_->driver().api();
  c->pending_ = true;
  if (CUresult r = a.cuLaunchKernel(f, static_cast<unsigned>(blocks), 1, 1,
                                    static_cast<unsigned>(grid->threads), 1, 1,
                                    static_cast<unsigned>(grid->shared_bytes),
                                    d.streamOr(c->stream_), params, nullptr);
      r != 0)
    return c->fail(d.cuda_->driver().describe("cuLaunchKernel", r));
  return nullptr;
}

} // namespace tsl::rt
