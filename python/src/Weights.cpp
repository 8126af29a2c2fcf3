// tsl._tsl.load_safetensors: a safetensors file's tensors as tsl.Tensor
// views of the mapped file (runtime/Safetensors.h).
#include "python/src/Tensor.h"
#include "runtime/Safetensors.h"

namespace tsl::py {

using namespace nb::literals;

namespace {

/// {name: tsl.Tensor} in the header's order; each tensor keeps the mapping
/// alive. Raises tsl.Error with the reader's message.
nb::dict loadSafetensors(const std::string &path) {
  Expected<std::unique_ptr<rt::WeightsFile>> opened = [&] {
    nb::gil_scoped_release unlocked;
    return rt::WeightsFile::open(path);
  }();
  if (!opened)
    raiseError(opened.error().kind, "error: " + opened.error().message);
  std::shared_ptr<const rt::WeightsFile> file = std::move(*opened);
  nb::dict out;
  for (const rt::WeightTensor &t : file->tensors()) {
    rt::Output view;
    view.dtype = t.dtype;
    view.shape = t.shape;
    view.data = const_cast<void *>(t.data);
    out[t.name.c_str()] = nb::cast(new Tensor(std::move(view), file),
                                   nb::rv_policy::take_ownership);
  }
  return out;
}

} // namespace

void bindWeights(nb::module_ &m) {
  m.def("load_safetensors", &loadSafetensors, "path"_a,
        "A safetensors file's tensors, {name: tsl.Tensor} in the file's "
        "order: views of the file mapped read-only (zero copy), checked "
        "first. Use tsl.load_weights.");
}

} // namespace tsl::py
