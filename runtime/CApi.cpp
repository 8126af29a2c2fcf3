// The C ABI of tsl_c.h over FunctionTable.
#include "runtime/Manifest.h"
#include "runtime/Runtime.h"
#include "support/FileRead.h"

#include <dlfcn.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace {

thread_local std::string lastError;

/// DLPack (code, bits) to the element type codes of KernelAbi.h, or -1.
inline int32_t dtypeOf(tsl_dtype t) {
  if (t.lanes != 1)
    return -1;
  switch (t.code << 8 | t.bits) {
  case 6 << 8 | 8:
    return 0; // bool
  case 0 << 8 | 8:
    return 1;
  case 0 << 8 | 32:
    return 2;
  case 0 << 8 | 64:
    return 3;
  case 2 << 8 | 16:
    return 4;
  case 4 << 8 | 16:
    return 5;
  case 2 << 8 | 32:
    return 6;
  case 2 << 8 | 64:
    return 7;
  }
  return -1;
}

/// The largest AOT module file read (a module holds code, not weights).
constexpr size_t kMaxModuleBytes = size_t(1) << 30;

/// Reads the whole regular file \p path; false with \p error otherwise.
/// O_NONBLOCK: a FIFO at the path cannot hang the open.
bool readRegularFile(const std::string &path, std::string &out,
                     std::string &error) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    error = std::strerror(errno);
    return false;
  }
  struct stat st;
  bool ok = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
  if (!ok) {
    error = "not a regular file";
  } else {
    switch (tsl::readUpTo(fd, kMaxModuleBytes, out,
                          static_cast<size_t>(st.st_size))) {
    case tsl::FileReadStatus::Ok:
      break;
    case tsl::FileReadStatus::TooLarge:
      error = "larger than " + std::to_string(kMaxModuleBytes >> 20) + " MiB";
      ok = false;
      break;
    case tsl::FileReadStatus::Failed:
      error = std::strerror(errno);
      ok = false;
      break;
    }
  }
  ::close(fd);
  return ok;
}

} // namespace

namespace tsl::rt {

tsl_dtype dlpackOf(int32_t dtype) {
  static const tsl_dtype table[] = {{6, 8, 1},  {0, 8, 1},  {0, 32, 1},
                                    {0, 64, 1}, {2, 16, 1}, {4, 16, 1},
                                    {2, 32, 1}, {2, 64, 1}};
  return table[dtype];
}

tsl_status fail(tsl_status status, std::string message) {
  lastError = std::move(message);
  return status;
}

tsl_status statusFor(ErrorKind kind) {
  switch (kind) {
  case ErrorKind::Syntax:
  case ErrorKind::Type:
  case ErrorKind::Shape:
  case ErrorKind::Internal:
    return TSL_COMPILE_ERROR;
  case ErrorKind::Io:
  case ErrorKind::NotFound:
    return TSL_NOT_FOUND;
  case ErrorKind::InvalidArgument:
    return TSL_INVALID_ARGUMENT;
  case ErrorKind::NoVariant:
  case ErrorKind::CacheLimit:
    return TSL_NO_VARIANT;
  case ErrorKind::RuntimeCheck:
  case ErrorKind::Resource:
    return TSL_RUNTIME_ERROR;
  case ErrorKind::Unsupported:
    return TSL_UNSUPPORTED;
  }
  return TSL_INVALID_ARGUMENT;
}

void setCompilerFactory(tsl_runtime *rt, CompilerFactory factory) {
  std::lock_guard<std::mutex> lock(rt->mutex);
  rt->compilerFactory = std::move(factory);
}

} // namespace tsl::rt

using tsl::rt::fail;

namespace {

/// Checks tensor argument \p i of a call on \p device, in order: its
/// device, element type, shape, strides (row-major contiguous), byte
/// offset and alignment. TSL_OK, or the first problem's status with its
/// message recorded (the C API's messages name the argument).
[[gnu::cold, gnu::noinline]] tsl_status
checkTensor(int32_t i, const tsl_tensor &t, const tsl_device &device) {
  auto which = [i] { return "argument " + std::to_string(i); };
  if (t.device.device_type != device.device_type ||
      (device.device_type == 2 && t.device.device_id != device.device_id))
    return fail(
        TSL_INVALID_ARGUMENT,
        which() + " is on device " + std::to_string(t.device.device_type) +
            ":" + std::to_string(t.device.device_id) +
            " but this runtime runs on " + std::to_string(device.device_type) +
            ":" + std::to_string(device.device_id));
  int32_t dtype = dtypeOf(t.dtype);
  if (dtype < 0)
    return fail(TSL_INVALID_ARGUMENT,
                which() + " has an unsupported element type");
  if (t.ndim < 0 || t.ndim > 32 || (t.ndim > 0 && !t.shape))
    return fail(TSL_INVALID_ARGUMENT, which() + " has an invalid shape");
  if (t.strides) {
    int64_t expect = 1;
    for (int32_t d = t.ndim; d-- > 0;) {
      if (t.shape[d] != 1 && t.strides[d] != expect)
        return fail(TSL_UNSUPPORTED, which() + " is not row-major contiguous");
      if (__builtin_mul_overflow(expect, t.shape[d], &expect))
        return fail(TSL_INVALID_ARGUMENT,
                    which() + " has a size that does not fit in 64 bits");
    }
  }
  // Kernels load whole elements: like DLPack, data + byte_offset must be
  // aligned to the element size (misaligned tensors are rejected, not
  // copied, so a call never copies behind the caller's back).
  uintptr_t address = 0;
  if (t.data && __builtin_add_overflow(reinterpret_cast<uintptr_t>(t.data),
                                       t.byte_offset, &address))
    return fail(TSL_INVALID_ARGUMENT,
                which() + " has a byte_offset past the end of memory");
  size_t align = tsl::rt::elementBytes(dtype);
  if (t.data && align > 1 && address % align != 0)
    return fail(TSL_INVALID_ARGUMENT,
                which() + " is misaligned: data + byte_offset is not a " +
                    "multiple of " + std::to_string(align) +
                    " bytes, the size of its elements");
  return TSL_OK;
}

} // namespace

extern "C" {

const char *tsl_last_error(void) { return lastError.c_str(); }

tsl_status tsl_runtime_create(const tsl_runtime_options *options,
                              tsl_runtime **out) {
  if (!out)
    return fail(TSL_INVALID_ARGUMENT, "tsl_runtime_create: out is null");
  auto rt = std::make_unique<tsl_runtime>();
  if (options)
    rt->options = *options;
  if (rt->options.cache_limit <= 0)
    rt->options.cache_limit = 8;
  tsl_device &d = rt->options.device;
  if (d.device_type == 0)
    d = {1, 0};
  if (d.device_type == 2) {
    std::string error;
    rt->gpu = tsl::rt::GpuDevice::openCuda(d.device_id, error);
    if (!rt->gpu)
      return fail(TSL_UNSUPPORTED, error);
  } else if (d.device_type == TSL_DEVICE_GPU_EMULATOR) {
    rt->gpu = tsl::rt::GpuDevice::emulator();
  } else if (d.device_type != 1) {
    return fail(TSL_UNSUPPORTED, "device type " +
                                     std::to_string(d.device_type) +
                                     " is not supported (CPU 1, CUDA 2)");
  }
  *out = rt.release();
  return TSL_OK;
}

void tsl_runtime_destroy(tsl_runtime *rt) { delete rt; }

tsl_status tsl_module_load_source(tsl_runtime *rt, const char *path,
                                  tsl_module **out) {
  if (!rt || !path || !out)
    return fail(TSL_INVALID_ARGUMENT, "tsl_module_load_source: null argument");
  struct stat st;
  if (::stat(path, &st) != 0)
    return fail(TSL_NOT_FOUND, std::string("no such file: '") + path + "'");
  std::lock_guard<std::mutex> lock(rt->mutex);
  if (!rt->compilerFactory)
    return fail(TSL_UNSUPPORTED,
                "this runtime has no compiler: link tsl_driver and call "
                "tsl_runtime_enable_jit, or load an AOT module");
  tsl::Expected<std::unique_ptr<tsl::rt::CompilerHook>> made =
      rt->compilerFactory(path, rt->gpu);
  if (!made)
    return fail(tsl::rt::statusFor(made.error().kind),
                std::move(made.error().message));
  std::unique_ptr<tsl::rt::CompilerHook> compiler = std::move(*made);
  auto module = std::make_unique<tsl_module>();
  module->path = path;
  module->compiler = std::move(compiler);
  module->gpu = rt->gpu;
  module->device = rt->options.device;
  module->cacheLimit = static_cast<size_t>(rt->options.cache_limit);
  *out = module.get();
  rt->modules.push_back(std::move(module));
  return TSL_OK;
}

tsl_status tsl_module_load_aot(tsl_runtime *rt, const char *path,
                               tsl_module **out) {
  if (!rt || !path || !out)
    return fail(TSL_INVALID_ARGUMENT, "tsl_module_load_aot: null argument");
  // An absolute path: dlopen searches the library path for a bare name
  // ("libm.so.6" would load the system's libm, not ./libm.so.6).
  char resolvedPath[PATH_MAX];
  if (!::realpath(path, resolvedPath))
    return fail(TSL_NOT_FOUND, std::string("no such file: '") + path + "'");
  std::string resolved = resolvedPath;
  if (rt->gpu)
    return fail(TSL_UNSUPPORTED,
                "AOT modules hold CPU code; this runtime runs on a GPU (load "
                "the source instead)");
  // Checked against the digest tslc build wrote beside it before dlopen
  // maps it: a truncated or bit-flipped module is an error, not a SIGBUS or
  // wrong results.
  std::string contents, digest, problem;
  std::string digestPath = tsl::rt::moduleDigestPath(resolved);
  if (!readRegularFile(resolved, contents, problem))
    return fail(TSL_INVALID_ARGUMENT,
                std::string("cannot read '") + path + "': " + problem);
  if (!readRegularFile(digestPath, digest, problem))
    return fail(TSL_INVALID_ARGUMENT,
                std::string("'") + path + "' has no digest file '" +
                    digestPath + "' (" + problem +
                    "); AOT modules are loaded only with the digest file "
                    "tslc build writes beside them");
  if (!tsl::rt::checkModuleDigest(contents, digest, problem))
    return fail(TSL_INVALID_ARGUMENT, std::string("'") + path +
                                          "' does not match its digest file '" +
                                          digestPath + "': " + problem);
  contents.clear();
  contents.shrink_to_fit();
  void *handle = dlopen(resolved.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle)
    return fail(TSL_INVALID_ARGUMENT,
                std::string("cannot load '") + path + "': " + dlerror());
  std::shared_ptr<void> library(handle, [](void *h) { dlclose(h); });
  auto *table = static_cast<void **>(dlsym(handle, "tsl_rt_table"));
  auto *manifest = static_cast<const char *>(dlsym(handle, "tsl_manifest"));
  if (!table || !manifest)
    return fail(TSL_INVALID_ARGUMENT,
                std::string("'") + path +
                    "' is not a TSL module (no manifest)");
  std::vector<tsl::rt::ManifestVariant> variants;
  std::string error;
  if (!tsl::rt::readManifest(manifest, variants, error))
    return fail(TSL_INVALID_ARGUMENT, std::string(path) + ": " + error);
  tsl_rt_fill_table(table);
  auto module = std::make_unique<tsl_module>();
  module->path = path;
  module->cacheLimit = static_cast<size_t>(rt->options.cache_limit);
  for (tsl::rt::ManifestVariant &mv : variants) {
    tsl::rt::VariantCode code = std::move(mv.code);
    code.kernel = reinterpret_cast<tsl::rt::KernelFn>(
        dlsym(handle, mv.kernelSymbol.c_str()));
    code.match = reinterpret_cast<tsl::rt::MatchFn>(
        dlsym(handle, mv.matchSymbol.c_str()));
    code.shapes = reinterpret_cast<tsl::rt::ShapesFn>(
        dlsym(handle, mv.shapesSymbol.c_str()));
    if (!code.kernel || !code.match || !code.shapes)
      return fail(TSL_INVALID_ARGUMENT, std::string(path) +
                                            ": missing entry points of '" +
                                            mv.function + "'");
    code.keepAlive = library;
    auto &fn = module->functions[mv.function];
    if (!fn) {
      fn = std::make_unique<tsl_function>();
      tsl::rt::TableOptions options;
      options.cacheLimit = module->cacheLimit;
      fn->table = std::make_unique<tsl::rt::FunctionTable>(mv.function, nullptr,
                                                           options);
    }
    fn->table->addVariant(std::move(code));
  }
  // Each function's variants are chosen by one native call.
  for (auto &[name, fn] : module->functions) {
    tsl::rt::Dispatcher d;
    d.fn = reinterpret_cast<tsl::rt::DispatchFn>(
        dlsym(handle, tsl::rt::aotDispatcherSymbol(name).c_str()));
    if (!d.fn)
      return fail(TSL_INVALID_ARGUMENT, std::string(path) +
                                            ": missing the dispatcher of '" +
                                            name + "'");
    d.count = fn->table->numVariants();
    d.keepAlive = library;
    fn->table->setDispatcher(std::move(d));
  }
  std::lock_guard<std::mutex> lock(rt->mutex);
  *out = module.get();
  rt->modules.push_back(std::move(module));
  return TSL_OK;
}

tsl_status tsl_module_get_function(tsl_module *module, const char *name,
                                   tsl_function **out) {
  if (!module || !name || !out)
    return fail(TSL_INVALID_ARGUMENT, "tsl_module_get_function: null argument");
  std::lock_guard<std::mutex> lock(module->mutex);
  auto it = module->functions.find(name);
  if (it == module->functions.end() && !module->compiler)
    return fail(TSL_NOT_FOUND, std::string("module '") + module->path +
                                   "' has no function '" + name + "'");
  if (it == module->functions.end()) {
    auto fn = std::make_unique<tsl_function>();
    tsl::rt::TableOptions options;
    options.cacheLimit = module->cacheLimit;
    options.device = module->gpu;
    fn->table = std::make_unique<tsl::rt::FunctionTable>(
        name, module->compiler.get(), options);
    fn->device = module->device;
    it = module->functions.emplace(name, std::move(fn)).first;
  }
  *out = it->second.get();
  return TSL_OK;
}

tsl_status tsl_module_get_function_donating(tsl_module *module,
                                            const char *name,
                                            const int32_t *donated,
                                            int32_t ndonated,
                                            tsl_function **out) {
  if (!module || !name || !out || ndonated < 0 || (ndonated > 0 && !donated))
    return fail(TSL_INVALID_ARGUMENT,
                "tsl_module_get_function_donating: null argument");
  if (module->gpu)
    return fail(TSL_UNSUPPORTED,
                "not supported: donated arguments on a GPU runtime");
  if (!module->compiler)
    return fail(TSL_UNSUPPORTED,
                "not supported: donated arguments of an AOT module (its "
                "variants were compiled without donation); load the source");
  tsl::Error error;
  std::optional<size_t> arity = module->compiler->arity(name, error);
  if (!arity && !error.message.empty())
    return fail(tsl::rt::statusFor(error.kind), std::move(error.message));
  std::vector<bool> mask;
  std::string key = name + std::string("\x1f donating");
  for (int32_t k = 0; k < ndonated; ++k) {
    int32_t i = donated[k];
    if (i < 0 || (arity && static_cast<size_t>(i) >= *arity))
      return fail(TSL_INVALID_ARGUMENT,
                  "tsl_module_get_function_donating: '" + std::string(name) +
                      "' has no parameter " + std::to_string(i));
    if (mask.size() <= static_cast<size_t>(i))
      mask.resize(static_cast<size_t>(i) + 1, false);
    mask[static_cast<size_t>(i)] = true;
  }
  for (size_t i = 0; i < mask.size(); ++i)
    key += mask[i] ? " " + std::to_string(i) : "";
  std::lock_guard<std::mutex> lock(module->mutex);
  std::unique_ptr<tsl_function> &fn = module->functions[key];
  if (!fn) {
    fn = std::make_unique<tsl_function>();
    tsl::rt::TableOptions options;
    options.cacheLimit = module->cacheLimit;
    options.donated = std::move(mask);
    fn->table = std::make_unique<tsl::rt::FunctionTable>(
        name, module->compiler.get(), options);
    fn->device = module->device;
  }
  *out = fn.get();
  return TSL_OK;
}

tsl_status tsl_function_call(tsl_function *fn, const tsl_arg *args,
                             int32_t nargs, tsl_tensor **outputs,
                             int32_t *noutputs) {
  return tsl_function_call_on_stream(fn, args, nargs, nullptr, outputs,
                                     noutputs);
}

tsl_status tsl_function_call_on_stream(tsl_function *fn, const tsl_arg *args,
                                       int32_t nargs, void *stream,
                                       tsl_tensor **outputs,
                                       int32_t *noutputs) {
  if (!fn || (nargs > 0 && !args) || !outputs || !noutputs || nargs < 0)
    return fail(TSL_INVALID_ARGUMENT, "tsl_function_call: null argument");
  if (stream && fn->device.device_type != 2)
    return fail(TSL_INVALID_ARGUMENT,
                "tsl_function_call_on_stream: a stream needs a CUDA runtime");
  // The arity first: nargs sizes what is gathered below (and says how many
  // tsl_args the caller's array holds), so a wrong count is never used.
  tsl::Error arityError;
  std::optional<size_t> arity = fn->table->arity(arityError);
  if (!arity && !arityError.message.empty())
    return fail(tsl::rt::statusFor(arityError.kind),
                std::move(arityError.message));
  if (arity && *arity != static_cast<size_t>(nargs))
    return fail(TSL_INVALID_ARGUMENT,
                "'" + fn->table->name() + "' takes " + std::to_string(*arity) +
                    " arguments, got " + std::to_string(nargs));
  // Views of the caller's arguments, gathered for dispatch as they are
  // checked: a call copies no shapes, and formats no text unless it fails.
  tsl::rt::CallInput callInput;
  callInput.begin(static_cast<size_t>(nargs));
  const tsl_device device = fn->device;
  for (int32_t i = 0; i < nargs; ++i) {
    const tsl_arg &in = args[i];
    if (in.is_int) {
      callInput.set(i, {true, in.int_value, 0, 0, nullptr, nullptr});
      continue;
    }
    const tsl_tensor &t = in.tensor;
    // The common case in one test; anything unusual is looked at (and
    // explained) by checkTensor.
    int32_t dtype = dtypeOf(t.dtype);
    uintptr_t address = 0;
    bool pastTheEnd = __builtin_add_overflow(
        reinterpret_cast<uintptr_t>(t.data), t.byte_offset, &address);
    size_t align = tsl::rt::elementBytes(dtype); // a power of two
    bool unusual =
        (t.device.device_type != device.device_type) |
        ((device.device_type == 2) & (t.device.device_id != device.device_id)) |
        (dtype < 0) | (static_cast<uint32_t>(t.ndim) > 32) |
        ((t.ndim > 0) & (t.shape == nullptr)) | (t.strides != nullptr) |
        ((t.data != nullptr) & (pastTheEnd | ((address & (align - 1)) != 0)));
    if (unusual)
      if (tsl_status s = checkTensor(i, t, device); s != TSL_OK)
        return s;
    callInput.set(i, {false, 0, dtype, static_cast<size_t>(t.ndim),
                      t.ndim > 0 ? t.shape : nullptr,
                      t.data ? static_cast<const char *>(t.data) + t.byte_offset
                             : nullptr});
  }
  tsl::rt::Results outs;
  int variant = -1;
  tsl::Error error;
  if (!fn->table->call(callInput, outs, variant, error, stream))
    return fail(tsl::rt::statusFor(error.kind), std::move(error.message));
  // What the caller frees with tsl_outputs_free: the array, and each
  // result's data and shape. (malloc, not calloc, and no memset after it,
  // which the compiler would turn into a calloc: glibc's calloc bypasses
  // its per-thread cache. Every field is written.)
  size_t n = outs.size(), shapes = 0;
  auto *result =
      static_cast<tsl_tensor *>(std::malloc((n + 1) * sizeof(tsl_tensor)));
  if (result) {
    result[n] = tsl_tensor{};
    for (; shapes < n; ++shapes) {
      result[shapes] = tsl_tensor{};
      result[shapes].shape = static_cast<int64_t *>(
          std::malloc(sizeof(int64_t) * (outs.items[shapes].rank + 1)));
      if (!result[shapes].shape)
        break;
    }
  }
  if (!result || shapes < n) {
    for (size_t i = 0; i < n; ++i) {
      if (outs.items[i].onDevice)
        tsl::rt::GpuDevice::releaseHandedOver(outs.items[i].data);
      else
        std::free(outs.items[i].data);
      if (i < shapes)
        std::free(result[i].shape);
    }
    std::free(result);
    return fail(TSL_RUNTIME_ERROR, "out of memory for the results");
  }
  for (size_t i = 0; i < n; ++i) {
    const tsl::rt::Results::Item &r = outs.items[i];
    tsl_tensor &t = result[i];
    t.data = r.data;
    t.device = r.onDevice ? fn->device : tsl_device{1, 0};
    t.ndim = static_cast<int32_t>(r.rank);
    t.dtype = tsl::rt::dlpackOf(r.dtype);
    std::copy(outs.shape(i), outs.shape(i) + r.rank, t.shape);
  }
  *outputs = result;
  *noutputs = static_cast<int32_t>(outs.size());
  return TSL_OK;
}

void tsl_outputs_free(tsl_tensor *outputs, int32_t noutputs) {
  if (!outputs)
    return;
  for (int32_t i = 0; i < noutputs; ++i) {
    if (outputs[i].device.device_type == 1)
      std::free(outputs[i].data);
    else
      tsl::rt::GpuDevice::releaseHandedOver(outputs[i].data);
    std::free(outputs[i].shape);
  }
  std::free(outputs);
}

tsl_status tsl_set_logs(const char *spec) {
  if (!spec) {
    tsl::rt::LogFlags::setActive(nullptr);
    return TSL_OK;
  }
  tsl::rt::LogFlags flags;
  std::string error;
  if (!tsl::rt::LogFlags::parse(spec, flags, error))
    return fail(TSL_INVALID_ARGUMENT, "tsl_set_logs: " + error);
  tsl::rt::LogFlags::setActive(&flags);
  return TSL_OK;
}

tsl_status tsl_function_stats(tsl_function *fn, int32_t *compiles,
                              int32_t *calls) {
  if (!fn)
    return fail(TSL_INVALID_ARGUMENT, "tsl_function_stats: null function");
  tsl::rt::Stats st = fn->table->stats();
  if (compiles)
    *compiles = static_cast<int32_t>(st.compiles);
  if (calls)
    *calls = static_cast<int32_t>(st.calls);
  return TSL_OK;
}

} // extern "C"
