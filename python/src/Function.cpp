// tsl.Function: calls, statistics and variants.
#include "python/src/Function.h"
#include "python/src/Tensor.h"
#include "runtime/GpuDevice.h"

namespace tsl::py {

using namespace nb::literals;

namespace {

std::string joined(const std::vector<std::string> &names) {
  std::string s;
  for (size_t i = 0; i < names.size(); ++i)
    s += (i ? ", " : "") + names[i];
  return s;
}

[[noreturn]] void badCall(const std::string &message) {
  raiseError(ErrorKind::InvalidArgument, "error: " + message);
}

} // namespace

Function::Function(std::shared_ptr<ModuleState> module, std::string name,
                   std::vector<std::string> params)
    : module_(std::move(module)), name_(std::move(name)),
      params_(std::move(params)) {
  rt::TableOptions options;
  options.device = module_->gpu;
  table_ =
      std::make_unique<rt::FunctionTable>(name_, module_->jit.get(), options);
}

void Function::orderArgs(nb::handle args, nb::handle kwargs,
                         std::vector<nb::handle> &ordered) const {
  size_t n = params_.size();
  auto signature = [&] { return "'" + name_ + "(" + joined(params_) + ")'"; };
  size_t positional = static_cast<size_t>(PyTuple_GET_SIZE(args.ptr()));
  size_t keywords = kwargs.is_valid()
                        ? static_cast<size_t>(PyDict_GET_SIZE(kwargs.ptr()))
                        : 0;
  if (positional + keywords > n && (positional >= n || !keywords))
    badCall(signature() + " takes " + std::to_string(n) + " arguments, got " +
            std::to_string(positional + keywords));
  for (size_t i = 0; i < positional; ++i)
    ordered[i] = PyTuple_GET_ITEM(args.ptr(), i);
  if (keywords) {
    for (auto [key, value] : nb::borrow<nb::dict>(kwargs)) {
      std::string k = nb::cast<std::string>(key);
      size_t i = 0;
      while (i < n && params_[i] != k)
        ++i;
      if (i == n)
        badCall(signature() + " has no parameter '" + k + "'");
      if (ordered[i].is_valid())
        badCall("argument '" + k + "' of " + signature() + " is given twice");
      ordered[i] = value;
    }
  }
  for (size_t i = 0; i < n; ++i)
    if (!ordered[i].is_valid())
      badCall("missing argument '" + params_[i] + "' of " + signature());
}

nb::object Function::call(nb::handle args, nb::handle kwargs) {
  size_t n = params_.size();
  std::vector<nb::handle> ordered(n);
  orderArgs(args, kwargs, ordered);
  std::vector<rt::CallArg> callArgs(n);
  std::vector<ImportedTensor> imported(n);
  for (size_t i = 0; i < n; ++i) {
    PyObject *o = ordered[i].ptr();
    rt::CallArg &a = callArgs[i];
    // Python ints (and bool, an int) for int parameters; anything else with
    // __index__ (NumPy integer scalars) only when it is no tensor.
    bool isInt = PyLong_Check(o);
    if (!isInt && importTensor(ordered[i], module_->placement, params_[i],
                               imported[i], a))
      continue;
    std::string what = "argument '" + params_[i] + "'";
    if (!isInt && !PyIndex_Check(o))
      badCall(what + " is a " + std::string(Py_TYPE(o)->tp_name) +
              ": pass a tensor (an object with __dlpack__, such as a NumPy "
              "array or a PyTorch, JAX or CuPy tensor) or an int");
    nb::object index = nb::steal(PyNumber_Index(o));
    if (!index.is_valid())
      throw nb::python_error();
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(index.ptr(), &overflow);
    if (overflow)
      badCall(what + " does not fit in 64 bits");
    a.isInt = true;
    a.intValue = v;
  }
  std::vector<rt::Output> outputs;
  int variant = -1;
  Error error;
  bool ok;
  {
    nb::gil_scoped_release unlocked;
    ok = table_->call(callArgs, outputs, variant, error);
  }
  imported.clear(); // releases the producers' memory (with the GIL)
  if (!ok)
    raiseError(error.kind,
               clangStyle(error, module_->name,
                          module_->text ? &*module_->text : nullptr));
  std::vector<std::unique_ptr<Tensor>> tensors;
  for (rt::Output &o : outputs) {
    std::shared_ptr<rt::GpuDevice> gpu = o.onDevice ? module_->gpu : nullptr;
    tensors.push_back(std::make_unique<Tensor>(std::move(o), std::move(gpu),
                                               module_->placement.deviceId));
  }
  auto wrap = [](std::unique_ptr<Tensor> &t) {
    nb::object obj = nb::cast(t.get(), nb::rv_policy::take_ownership);
    t.release();
    return obj;
  };
  if (tensors.empty())
    return nb::none();
  if (tensors.size() == 1)
    return wrap(tensors[0]);
  nb::list results;
  for (std::unique_ptr<Tensor> &t : tensors)
    results.append(wrap(t));
  return nb::tuple(results);
}

nb::object Function::stats() const {
  rt::Stats st = table_->stats();
  nb::list reasons;
  for (const std::string &r : st.recompileReasons)
    reasons.append(r);
  return pyClass("Stats")("compiles"_a = st.compiles,
                          "cache_hits"_a = st.cacheHits, "calls"_a = st.calls,
                          "recompiles"_a = reasons,
                          "peak_bytes"_a = st.peakBytes);
}

nb::object Function::variants() const {
  std::vector<rt::VariantSummary> summaries = table_->variantSummaries();
  rt::Stats st = table_->stats();
  nb::list out;
  for (size_t i = 0; i < summaries.size(); ++i) {
    const rt::VariantSummary &s = summaries[i];
    nb::list checks;
    for (const std::string &c : s.checks)
      checks.append(c);
    nb::dict specialized;
    for (const auto &[name, value] : s.specialized)
      specialized[name.c_str()] = value;
    size_t calls = i < st.variantCalls.size() ? st.variantCalls[i] : 0;
    out.append(pyClass("Variant")(
        "index"_a = i, "guards"_a = checks, "specialized"_a = specialized,
        "calls"_a = calls, "from_cache"_a = s.fromCache));
  }
  return out;
}

nb::object Function::guards(nb::kwargs examples) const {
  return guardReport(*module_, name_, examples);
}

namespace {

/// tp_call of tsl.Function: straight to Function::call, without nanobind's
/// overload dispatch (the per-call path bench/python_overhead.py measures).
PyObject *callSlot(PyObject *self, PyObject *args, PyObject *kwargs) {
  try {
    Function *f = nb::inst_ptr<Function>(self);
    return f->call(args, kwargs).release().ptr();
  } catch (nb::python_error &e) {
    e.restore();
  } catch (const std::exception &e) { // std::bad_alloc and the like
    PyErr_SetString(PyExc_RuntimeError, e.what());
  }
  return nullptr;
}

PyType_Slot functionSlots[] = {{Py_tp_call, reinterpret_cast<void *>(callSlot)},
                               {0, nullptr}};

} // namespace

void bindFunction(nb::module_ &m) {
  nb::class_<Function>(
      m, "Function", nb::type_slots(functionSlots),
      "A function of a tsl.Module. Calling it runs the first compiled "
      "variant whose guards accept the arguments, compiling a new one on a "
      "miss (with the GIL released); calls from several threads may run at "
      "once.\n\n"
      "``fn(*args, **kwargs)``: tensors are any objects with ``__dlpack__`` "
      "(NumPy, PyTorch, JAX, CuPy), read in place: never copied, so they "
      "must be row-major contiguous, aligned, and on the module's device; "
      "``int`` parameters take Python ints. Returns a tsl.Tensor, a tuple "
      "of them for several results, or None. Raises tsl.Error for a bad "
      "call (arity, rank, element type, size, device, layout), a compile "
      "error for these argument types, or a failed run-time check.")
      .def_prop_ro("stats", &Function::stats,
                   "tsl.Stats: compiles, recompiles with their reasons, "
                   "on-disk cache hits and calls so far.")
      .def_prop_ro("variants", &Function::variants,
                   "The compiled variants (a list of tsl.Variant, in dispatch "
                   "order: the first whose guards hold serves a call), each "
                   "with its guards and how many calls it served.")
      .def("guards", &Function::guards,
           "The guards, runtime assertions and result types of the variant "
           "compiled for example argument types, as ``tslc guards`` prints "
           "them: ``fn.guards(x=\"f32[10]\", k=3)`` (a type string, an int, "
           "or an array whose type is taken). Returns tsl.GuardReport; "
           "raises tsl.Error when the function does not compile for them.")
      .def_prop_ro(
          "name", [](const Function &f) { return f.name(); },
          "The function's name.")
      .def_prop_ro(
          "parameters",
          [](const Function &f) {
            nb::list l;
            for (const std::string &p : f.params())
              l.append(p);
            return nb::tuple(l);
          },
          "Parameter names in order (calls may pass them as keywords).")
      .def("__repr__", [](const Function &f) {
        return "<tsl.Function " + f.name() + "(" + joined(f.params()) +
               ") of '" + f.module().name + "' on " + f.module().backend + ">";
      });
}

} // namespace tsl::py
