// tsl.Tensor: results shared through DLPack and NumPy's __array__.
#include "python/src/Tensor.h"
#include "python/src/DlPack.h"
#include "runtime/GpuDevice.h"

#include <cstdlib>
#include <cstring>

namespace tsl::py {

using namespace nb::literals;

Tensor::Tensor(rt::Output out, std::shared_ptr<rt::GpuDevice> gpu,
               int32_t deviceId)
    : out_(std::move(out)), gpu_(std::move(gpu)) {
  bool cuda = out_.onDevice && gpu_ && !gpu_->isEmulator();
  view_.data = out_.data;
  view_.device = cuda ? tsl_device{2, deviceId} : tsl_device{1, 0};
  view_.ndim = static_cast<int32_t>(out_.shape.size());
  view_.dtype = dlpackDtype(out_.dtype);
  view_.shape = out_.shape.data();
}

Tensor::Tensor(rt::Output view, std::shared_ptr<const void> owner)
    : Tensor(std::move(view), nullptr, 0) {
  owner_ = std::move(owner);
}

Tensor::~Tensor() {
  if (owner_)
    return; // a view: the owner's memory
  if (out_.onDevice)
    rt::GpuDevice::releaseHandedOver(out_.data);
  else
    std::free(out_.data);
}

size_t Tensor::nbytes() const {
  size_t n = rt::elementBytes(out_.dtype);
  for (int64_t d : out_.shape)
    n *= static_cast<size_t>(d);
  return n;
}

std::string Tensor::typeString() const {
  std::string s = std::string(dtypeName(out_.dtype)) + "[";
  for (size_t i = 0; i < out_.shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(out_.shape[i]);
  return s + "]";
}

std::string Tensor::deviceString() const {
  return onCuda() ? "cuda:" + std::to_string(view_.device.device_id) : "cpu";
}

Tensor *Tensor::copyToHost() const {
  size_t bytes = nbytes();
  rt::Output host;
  host.dtype = out_.dtype;
  host.shape = out_.shape;
  host.data = std::malloc(bytes ? bytes : 1);
  std::string error = "out of memory";
  bool ok = host.data != nullptr;
  if (ok && bytes) {
    nb::gil_scoped_release unlocked;
    ok = gpu_->copy(rt::GpuDevice::Copy::ToHost, host.data, out_.data, bytes,
                    error);
  }
  if (!ok) {
    std::free(host.data);
    raiseError(ErrorKind::Resource,
               "error: cannot copy a result to the host: " + error);
  }
  return new Tensor(std::move(host), nullptr, 0);
}

void *Tensor::donate(const std::string &where, bool &copied) {
  checkNotDonated();
  if (onCuda() || out_.onDevice)
    raiseError(ErrorKind::Unsupported,
               "error: not supported: donating a GPU tensor (" + where + ")");
  void *data = out_.data;
  copied = liveExports_ > 0 || owner_; // not ours to give away
  if (copied) {
    // A NumPy array or a torch tensor still reads the memory: the call
    // takes a copy and the original stays theirs until they release it.
    size_t bytes = nbytes();
    data = std::malloc(bytes ? bytes : 1);
    if (!data)
      return nullptr;
    if (bytes)
      std::memcpy(data, out_.data, bytes);
  } else {
    out_.data = view_.data = nullptr;
  }
  donatedTo_ = where;
  return data;
}

void Tensor::undonate(void *data, bool copied) {
  if (copied)
    std::free(data);
  else
    out_.data = view_.data = data;
  donatedTo_.clear();
}

void Tensor::checkNotDonated() const {
  if (donated())
    raiseError(ErrorKind::InvalidArgument,
               "error: this " + typeString() + " tensor was donated as " +
                   donatedTo_ +
                   " and holds no data any more: use that call's result "
                   "(or call a function that does not donate it)");
}

void Tensor::orderConsumer(nb::handle stream) {
  // DLPack's stream numbers for CUDA: None is the legacy default stream
  // (1), 2 the per-thread default stream, -1 "no synchronization", 0 is
  // ambiguous and disallowed; others are CUstream addresses.
  intptr_t number = 1;
  if (!stream.is_none()) {
    if (!nb::isinstance<nb::int_>(stream)) {
      PyErr_SetString(PyExc_TypeError, "tsl.Tensor.__dlpack__: stream must be "
                                       "an int or None");
      throw nb::python_error();
    }
    number = nb::cast<intptr_t>(stream);
  }
  if (number == -1)
    return;
  if (number == 0 || number < -1) {
    PyErr_SetString(PyExc_BufferError,
                    "tsl.Tensor.__dlpack__: stream must be None, -1, 1, 2 or "
                    "a CUstream (DLPack disallows 0 for CUDA)");
    throw nb::python_error();
  }
  std::string error;
  bool ok;
  {
    nb::gil_scoped_release unlocked;
    ok = gpu_->exportTo(out_.data, reinterpret_cast<rt::CUstream>(number),
                        error);
  }
  if (!ok)
    raiseError(ErrorKind::Resource,
               "error: cannot order the consumer's stream after TSL's: " +
                   error);
}

namespace {

nb::object dlpack(Tensor &t, nb::object stream, nb::object maxVersion,
                  nb::object dlDevice, nb::object copy) {
  t.checkNotDonated();
  const tsl_tensor &v = t.view();
  if (t.onCuda())
    t.orderConsumer(stream);
  if (!dlDevice.is_none()) {
    nb::tuple want = nb::cast<nb::tuple>(dlDevice);
    if (nb::len(want) != 2 || nb::cast<int>(want[0]) != v.device.device_type ||
        nb::cast<int>(want[1]) != v.device.device_id) {
      PyErr_SetString(PyExc_BufferError,
                      "tsl.Tensor.__dlpack__: the tensor is on another "
                      "device than dl_device (no cross-device export)");
      throw nb::python_error();
    }
  }
  if (!copy.is_none() && nb::cast<bool>(copy)) {
    PyErr_SetString(PyExc_BufferError,
                    "tsl.Tensor.__dlpack__: copy=True is not supported (it "
                    "exports without copying)");
    throw nb::python_error();
  }
  bool versioned = false;
  if (!maxVersion.is_none()) {
    nb::tuple mv = nb::cast<nb::tuple>(maxVersion);
    versioned = nb::len(mv) >= 1 && nb::cast<int>(mv[0]) >= 1;
  }
  return exportCapsule(nb::find(&t), v, versioned, t.liveExports());
}

nb::object toNumpy(Tensor &t, nb::object dtype, nb::object copy) {
  t.checkNotDonated();
  if (t.dtype() == 5)
    raiseError(ErrorKind::Unsupported,
               "error: a bf16 tensor has no NumPy element type: read it with "
               "torch.from_dlpack(t) or jax.dlpack.from_dlpack(t), or cast "
               "it in TSL");
  bool mustCopy = !copy.is_none() && nb::cast<bool>(copy);
  bool mayCopy = copy.is_none() || mustCopy;
  nb::object host = nb::find(&t);
  bool copied = false;
  if (t.onCuda()) {
    if (!mayCopy) {
      PyErr_SetString(PyExc_ValueError,
                      "tsl.Tensor: a CUDA tensor cannot become a NumPy array "
                      "without a copy (copy=False)");
      throw nb::python_error();
    }
    host = nb::cast(t.copyToHost(), nb::rv_policy::take_ownership);
    copied = true;
  }
  nb::object np = nb::module_::import_("numpy");
  nb::object array = np.attr("from_dlpack")(host);
  if (!dtype.is_none()) {
    nb::object converted = array.attr("astype")(dtype, "copy"_a = false);
    copied |= !converted.is(array);
    array = converted;
  }
  if (mustCopy && !copied)
    array = array.attr("copy")();
  return array;
}

} // namespace

void bindTensor(nb::module_ &m) {
  nb::class_<Tensor>(
      m, "Tensor",
      "A result of a TSL function: row-major memory the runtime allocated, "
      "on the CPU or a CUDA device.\n\n"
      "It implements the DLPack protocol (``__dlpack__``, "
      "``__dlpack_device__``) and NumPy's ``__array__``, so "
      "``np.asarray(t)``, ``torch.from_dlpack(t)``, "
      "``jax.dlpack.from_dlpack(t)`` and ``cupy.from_dlpack(t)`` share its "
      "memory without copying (a CUDA tensor becomes a NumPy array by a "
      "copy). The memory lives as long as the tensor or any array made from "
      "it.")
      .def("__dlpack__", &dlpack, nb::kw_only(), "stream"_a = nb::none(),
           "max_version"_a = nb::none(), "dl_device"_a = nb::none(),
           "copy"_a = nb::none(),
           "A DLPack capsule of the tensor (DLPack 1.0 when max_version "
           "allows it), without copying. For a CUDA tensor, ``stream`` "
           "(DLPack's numbers: None or 1 the legacy default stream, 2 the "
           "per-thread one, a CUstream address, -1 for no ordering) is "
           "ordered after TSL's work on the tensor (an event), and the "
           "memory goes back to TSL only after the work enqueued on that "
           "stream when the consumer releases it. ``copy=True`` and another "
           "``dl_device`` raise BufferError.")
      .def(
          "__dlpack_device__",
          [](const Tensor &t) {
            return nb::make_tuple(t.view().device.device_type,
                                  t.view().device.device_id);
          },
          "``(1, 0)`` on the CPU (also for the GPU emulator's results), "
          "``(2, N)`` on CUDA device N.")
      .def("__array__", &toNumpy, "dtype"_a = nb::none(), "copy"_a = nb::none(),
           "The tensor as a NumPy array: shared memory on the CPU (no copy "
           "unless ``copy=True`` or another ``dtype``); a copy for a CUDA "
           "tensor (``copy=False`` raises ValueError). bf16 raises tsl.Error "
           "(NumPy has no bf16).")
      .def(
          "numpy", [](Tensor &t) { return toNumpy(t, nb::none(), nb::none()); },
          "``np.asarray(self)``: shared memory on the CPU, a copy from CUDA.")
      .def(
          "cpu",
          [](Tensor &t) -> nb::object {
            t.checkNotDonated();
            if (!t.onCuda())
              return nb::find(&t);
            return nb::cast(t.copyToHost(), nb::rv_policy::take_ownership);
          },
          "This tensor when it is on the CPU, else a copy in host memory.")
      .def_prop_ro(
          "shape",
          [](const Tensor &t) {
            nb::list l;
            for (int64_t d : t.shape())
              l.append(d);
            return nb::tuple(l);
          },
          "The sizes, a tuple of ints.")
      .def_prop_ro(
          "dtype", [](const Tensor &t) { return dtypeName(t.dtype()); },
          "The element type's TSL name: bool, i8, i32, i64, f16, bf16, f32, "
          "f64.")
      .def_prop_ro(
          "ndim", [](const Tensor &t) { return t.shape().size(); },
          "The number of dims.")
      .def_prop_ro(
          "device", [](const Tensor &t) { return t.deviceString(); },
          "``'cpu'`` or ``'cuda:N'``.")
      .def_prop_ro("nbytes", &Tensor::nbytes, "The size of the data in bytes.")
      .def_prop_ro(
          "data_ptr",
          [](const Tensor &t) {
            t.checkNotDonated();
            return reinterpret_cast<uintptr_t>(t.view().data);
          },
          "The address of the first element (host or device memory).")
      .def_prop_ro("donated", &Tensor::donated,
                   "Whether the tensor was donated to a call "
                   "(tsl.Function.donate): its data is gone, and reading "
                   "it raises tsl.Error.")
      .def("__len__",
           [](const Tensor &t) {
             if (t.shape().empty()) {
               PyErr_SetString(PyExc_TypeError, "len() of a 0-d tsl.Tensor");
               throw nb::python_error();
             }
             return t.shape()[0];
           })
      .def("__repr__", [](const Tensor &t) {
        return "tsl.Tensor(" + t.typeString() + ", device='" +
               t.deviceString() + "'" + (t.donated() ? ", donated" : "") + ")";
      });
}

} // namespace tsl::py
