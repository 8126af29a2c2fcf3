// DLPack import (call arguments) and export (results) for tsl._tsl.
#include "python/src/DlPack.h"

#include <cstring>
#include <vector>

namespace tsl::py {

namespace {

/// DLPack (code, bits) to the element type codes of KernelAbi.h, or -1.
int32_t dtypeCode(tsl_dtype t) {
  if (t.lanes != 1)
    return -1;
  switch (t.code << 8 | t.bits) {
  case 6 << 8 | 8:
    return 0; // bool
  case 0 << 8 | 8:
    return 1; // i8
  case 0 << 8 | 32:
    return 2; // i32
  case 0 << 8 | 64:
    return 3; // i64
  case 2 << 8 | 16:
    return 4; // f16
  case 4 << 8 | 16:
    return 5; // bf16
  case 2 << 8 | 32:
    return 6; // f32
  case 2 << 8 | 64:
    return 7; // f64
  }
  return -1;
}

/// "uint8", "complex64"...: a DLPack data type TSL has no name for.
std::string describeDtype(tsl_dtype t) {
  static const char *codes[] = {"int",    "uint",    "float", "opaque",
                                "bfloat", "complex", "bool"};
  std::string s = t.code < 7
                      ? codes[t.code]
                      : "DLPack type code " + std::to_string(t.code) + " of ";
  s += std::to_string(t.bits);
  if (t.lanes != 1)
    s += "x" + std::to_string(t.lanes);
  return s;
}

/// "cpu", "cuda:1"... for DLPack device \p d.
std::string describeDevice(tsl_device d) {
  switch (d.device_type) {
  case kDLCPU:
    return "cpu";
  case kDLCUDA:
    return "cuda:" + std::to_string(d.device_id);
  case kDLCUDAHost:
    return "cuda_host";
  case 10:
    return "rocm:" + std::to_string(d.device_id);
  case 13:
    return "cuda_managed:" + std::to_string(d.device_id);
  }
  return "DLPack device " + std::to_string(d.device_type) + ":" +
         std::to_string(d.device_id);
}

/// Who an error is about: "argument 'x'" (made only for a message).
struct Subject {
  const char *noun;
  const std::string &name;
};

[[noreturn]] void invalid(const Subject &who, const std::string &message) {
  raiseError(ErrorKind::InvalidArgument, std::string("error: ") + who.noun +
                                             " '" + who.name + "' " + message);
}

std::string listOf(const int64_t *v, int32_t n) {
  std::string s = "[";
  for (int32_t i = 0; i < n; ++i)
    s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

/// Interned attribute names (made once; kept for the process).
PyObject *interned(const char *name) {
  PyObject *s = PyUnicode_InternFromString(name);
  if (!s)
    throw nb::python_error();
  return s;
}

PyObject *dlpackName() {
  static PyObject *name = interned("__dlpack__");
  return name;
}

/// Calls `obj.__dlpack__(stream=..., max_version=(1, 0))` with the keywords
/// that are given; null (Python error cleared into \p error) on failure.
nb::object callDlpack(nb::handle obj, nb::handle stream, bool versioned,
                      std::string &error) {
  PyObject *r;
  if (!stream.is_valid() && !versioned) {
    // The common case, without a bound method or keyword dict.
    PyObject *self = obj.ptr();
    r = PyObject_VectorcallMethod(dlpackName(), &self,
                                  1 | PY_VECTORCALL_ARGUMENTS_OFFSET, nullptr);
  } else {
    nb::dict kwargs;
    if (stream.is_valid())
      kwargs["stream"] = stream;
    if (versioned)
      kwargs["max_version"] = nb::make_tuple(1, 0);
    nb::object method = nb::steal(PyObject_GetAttr(obj.ptr(), dlpackName()));
    r = method.is_valid()
            ? PyObject_Call(method.ptr(), nb::tuple().ptr(), kwargs.ptr())
            : nullptr;
  }
  if (r)
    return nb::steal(r);
  nb::python_error e; // fetches and clears the error
  error = e.what();
  return nb::object();
}

/// The producer's capsule for \p obj (a capsule itself, or what its
/// `__dlpack__` returns); invalid when \p obj's type has no `__dlpack__`.
nb::object capsuleOf(nb::handle obj, const Placement &where,
                     const Subject &what) {
  if (PyCapsule_CheckExact(obj.ptr()))
    return nb::borrow(obj);
  if (!_PyType_Lookup(Py_TYPE(obj.ptr()), dlpackName()))
    return nb::object();
  nb::object stream;
  if (where.deviceType == kDLCUDA) {
    // Ask where it lives first: only a CUDA producer takes our stream.
    nb::object dev;
    if (nb::hasattr(obj, "__dlpack_device__"))
      dev = obj.attr("__dlpack_device__")();
    if (!dev.is_valid() || !nb::isinstance<nb::tuple>(dev) || nb::len(dev) != 2)
      invalid(what, "has no usable __dlpack_device__()");
    int type = nb::cast<int>(dev[0]), id = nb::cast<int>(dev[1]);
    if (type != kDLCUDA || id != where.deviceId)
      invalid(what, "is on " +
                        describeDevice({type, static_cast<int32_t>(id)}) +
                        ", but this module runs on " + where.backend +
                        ": move it there first");
    // DLPack's stream numbers: 1 is CUDA's legacy default stream.
    uintptr_t s = reinterpret_cast<uintptr_t>(where.stream);
    stream = nb::int_(s ? s : 1);
  }
  std::string error;
  // Unversioned first (what every producer has); then DLPack 1.0, which a
  // read-only array needs (NumPy refuses the old capsule for it).
  nb::object capsule = callDlpack(obj, stream, false, error);
  if (!capsule.is_valid())
    capsule = callDlpack(obj, stream, true, error);
  if (!capsule.is_valid())
    invalid(what, "cannot be exported through DLPack: " + error);
  return capsule;
}

} // namespace

const char *dtypeName(int32_t dtype) {
  static const char *names[] = {"bool", "i8",   "i32", "i64",
                                "f16",  "bf16", "f32", "f64"};
  return dtype >= 0 && dtype < 8 ? names[dtype] : "?";
}

tsl_dtype dlpackDtype(int32_t dtype) {
  static const tsl_dtype table[] = {{6, 8, 1},  {0, 8, 1},  {0, 32, 1},
                                    {0, 64, 1}, {2, 16, 1}, {4, 16, 1},
                                    {2, 32, 1}, {2, 64, 1}};
  return dtype >= 0 && dtype < 8 ? table[dtype] : tsl_dtype{0, 0, 0};
}

bool importTensor(nb::handle obj, const Placement &where,
                  const std::string &name, ImportedTensor &out,
                  rt::CallArg &arg, const char *noun) {
  Subject what{noun, name};
  nb::object capsule = capsuleOf(obj, where, what);
  if (!capsule.is_valid())
    return false;
  const tsl_tensor *t = nullptr;
  if (void *p = PyCapsule_GetPointer(capsule.ptr(), "dltensor")) {
    t = &static_cast<DLManagedTensor *>(p)->dl_tensor;
  } else {
    PyErr_Clear();
    void *v = PyCapsule_GetPointer(capsule.ptr(), "dltensor_versioned");
    if (!v) {
      PyErr_Clear();
      invalid(what, "is not a DLPack tensor (its __dlpack__ returned no "
                    "unused 'dltensor' capsule)");
    }
    auto *managed = static_cast<DLManagedTensorVersioned *>(v);
    if (managed->major != 1)
      invalid(what, "uses DLPack " + std::to_string(managed->major) +
                        ", which this package does not read (1.x)");
    t = &managed->dl_tensor;
  }
  tsl_device dev = t->device;
  bool onCpu = dev.device_type == kDLCPU || dev.device_type == kDLCUDAHost;
  bool fits = where.deviceType == kDLCPU ? onCpu
                                         : dev.device_type == kDLCUDA &&
                                               dev.device_id == where.deviceId;
  if (!fits)
    invalid(what, "is on " + describeDevice(dev) +
                      ", but this module runs on " + where.backend +
                      ": move it there first");
  int32_t dtype = dtypeCode(t->dtype);
  if (dtype < 0)
    invalid(what, "has element type " + describeDtype(t->dtype) +
                      ", which TSL does not have (bool, i8, i32, i64, f16, "
                      "bf16, f32, f64)");
  if (t->ndim < 0 || t->ndim > 32 || (t->ndim > 0 && !t->shape))
    invalid(what,
            "has " + std::to_string(t->ndim) + " dims (TSL takes 0 to 32)");
  arg.isInt = false;
  arg.dtype = dtype;
  arg.shape.assign(t->shape, t->shape + t->ndim);
  bool empty = false;
  for (int64_t d : arg.shape)
    empty |= d == 0;
  if (t->strides && !empty) {
    // Row-major compact (dims of size 1 may have any stride); anything else
    // is rejected, never copied behind the caller's back.
    int64_t expect = 1;
    for (int32_t d = t->ndim; d-- > 0;) {
      if (arg.shape[d] != 1 && t->strides[d] != expect)
        invalid(what, "is not row-major contiguous (shape " +
                          listOf(t->shape, t->ndim) + ", strides " +
                          listOf(t->strides, t->ndim) +
                          " in elements); TSL does not copy arguments: pass "
                          "a contiguous copy (np.ascontiguousarray(x), "
                          "x.contiguous())");
      if (__builtin_mul_overflow(expect, arg.shape[d], &expect))
        invalid(what, "has a size that does not fit in 64 bits");
    }
  }
  uintptr_t address = 0;
  if (t->data && __builtin_add_overflow(reinterpret_cast<uintptr_t>(t->data),
                                        t->byte_offset, &address))
    invalid(what, "has a byte_offset past the end of memory");
  size_t align = rt::elementBytes(dtype);
  if (t->data && align > 1 && address % align != 0)
    invalid(what, "is misaligned: its data is not a multiple of " +
                      std::to_string(align) +
                      " bytes, the size of its elements");
  arg.data = t->data ? reinterpret_cast<const void *>(address) : nullptr;
  out.capsule = std::move(capsule);
  out.view = t;
  return true;
}

namespace {

/// A capsule's managed tensor with its own shape and strides, holding a
/// reference to the Python object that owns the memory.
template <typename M> struct Exported {
  M managed{};
  std::vector<int64_t> shape, strides;
  PyObject *owner = nullptr;
  int *liveExports = nullptr; ///< in owner, decremented on release
};

template <typename M> void deleteExported(M *m) {
  auto *e = static_cast<Exported<M> *>(m->manager_ctx);
  // Consumers may call this from any thread, with or without the GIL.
  if (Py_IsInitialized()) {
    PyGILState_STATE state = PyGILState_Ensure();
    if (e->liveExports)
      --*e->liveExports; // under the GIL, before owner may die
    Py_DECREF(e->owner);
    PyGILState_Release(state);
  }
  delete e;
}

template <typename M> const char *capsuleName();
template <> const char *capsuleName<DLManagedTensor>() { return "dltensor"; }
template <> const char *capsuleName<DLManagedTensorVersioned>() {
  return "dltensor_versioned";
}

/// A capsule that dies unconsumed (still named "dltensor...") frees its
/// tensor; a consumer renames it ("used_dltensor...") and calls the deleter
/// itself.
template <typename M> void destroyCapsule(PyObject *capsule) {
  const char *name = capsuleName<M>();
  if (PyCapsule_IsValid(capsule, name)) {
    M *m = static_cast<M *>(PyCapsule_GetPointer(capsule, name));
    m->deleter(m);
  }
}

template <typename M>
nb::object makeCapsule(nb::handle owner, const tsl_tensor &view,
                       int *liveExports) {
  auto *e = new Exported<M>();
  e->shape.assign(view.shape, view.shape + view.ndim);
  e->strides.assign(view.ndim, 1);
  for (int32_t d = view.ndim - 1; d > 0; --d)
    e->strides[d - 1] = e->strides[d] * e->shape[d];
  e->managed.dl_tensor = view;
  e->managed.dl_tensor.shape = e->shape.data();
  e->managed.dl_tensor.strides = e->strides.data();
  e->managed.manager_ctx = e;
  e->managed.deleter = &deleteExported<M>;
  e->owner = owner.ptr();
  Py_INCREF(e->owner);
  e->liveExports = liveExports;
  if (liveExports)
    ++*liveExports;
  PyObject *capsule =
      PyCapsule_New(&e->managed, capsuleName<M>(), &destroyCapsule<M>);
  if (!capsule) {
    deleteExported<M>(&e->managed);
    throw nb::python_error();
  }
  return nb::steal(capsule);
}

} // namespace

nb::object exportCapsule(nb::handle owner, const tsl_tensor &view,
                         bool versioned, int *liveExports) {
  if (versioned) {
    nb::object c =
        makeCapsule<DLManagedTensorVersioned>(owner, view, liveExports);
    auto *m = static_cast<DLManagedTensorVersioned *>(
        PyCapsule_GetPointer(c.ptr(), "dltensor_versioned"));
    m->major = 1;
    m->minor = 0;
    m->flags = 0;
    return c;
  }
  return makeCapsule<DLManagedTensor>(owner, view, liveExports);
}

} // namespace tsl::py
