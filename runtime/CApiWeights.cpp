// The C ABI's weights files (tsl_c.h: tsl_weights_*) over WeightsFile.
#include "runtime/Runtime.h"
#include "runtime/Safetensors.h"

struct tsl_weights {
  std::unique_ptr<tsl::rt::WeightsFile> file;
};

namespace {

tsl_tensor viewOf(const tsl::rt::WeightTensor &t) {
  tsl_tensor v{};
  v.data = const_cast<void *>(t.data);
  v.device = {1, 0};
  v.ndim = static_cast<int32_t>(t.shape.size());
  v.dtype = tsl::rt::dlpackOf(t.dtype);
  v.shape = const_cast<int64_t *>(t.shape.data());
  return v;
}

} // namespace

extern "C" {

tsl_status tsl_weights_open(const char *path, tsl_weights **out) {
  if (!path || !out)
    return tsl::rt::fail(TSL_INVALID_ARGUMENT,
                         "tsl_weights_open: null argument");
  auto file = tsl::rt::WeightsFile::open(path);
  if (!file)
    return tsl::rt::fail(tsl::rt::statusFor(file.error().kind),
                         std::move(file.error().message));
  *out = new tsl_weights{std::move(*file)};
  return TSL_OK;
}

void tsl_weights_close(tsl_weights *weights) { delete weights; }

int32_t tsl_weights_count(const tsl_weights *weights) {
  return weights ? static_cast<int32_t>(weights->file->tensors().size()) : 0;
}

tsl_status tsl_weights_get(const tsl_weights *weights, int32_t index,
                           const char **name, tsl_tensor *out) {
  if (!weights || !out)
    return tsl::rt::fail(TSL_INVALID_ARGUMENT,
                         "tsl_weights_get: null argument");
  const auto &all = weights->file->tensors();
  if (index < 0 || static_cast<size_t>(index) >= all.size())
    return tsl::rt::fail(TSL_INVALID_ARGUMENT,
                         "tsl_weights_get: index " + std::to_string(index) +
                             " is out of range (" + std::to_string(all.size()) +
                             " tensors)");
  if (name)
    *name = all[static_cast<size_t>(index)].name.c_str();
  *out = viewOf(all[static_cast<size_t>(index)]);
  return TSL_OK;
}

tsl_status tsl_weights_find(const tsl_weights *weights, const char *name,
                            tsl_tensor *out) {
  if (!weights || !name || !out)
    return tsl::rt::fail(TSL_INVALID_ARGUMENT,
                         "tsl_weights_find: null argument");
  const tsl::rt::WeightTensor *t = weights->file->find(name);
  if (!t)
    return tsl::rt::fail(TSL_NOT_FOUND,
                         std::string("the weights have no tensor '") + name +
                             "'");
  *out = viewOf(*t);
  return TSL_OK;
}

} // extern "C"
