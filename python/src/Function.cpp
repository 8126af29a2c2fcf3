// tsl.Function: calls, statistics and variants.
#include "python/src/Function.h"
#include "python/src/Tensor.h"
#include "runtime/GpuDevice.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace tsl::py {

using namespace nb::literals;

namespace {

std::string joined(const std::vector<std::string> &names) {
  std::string s;
  for (size_t i = 0; i < names.size(); ++i)
    s += (i ? ", " : "") + names[i];
  return s;
}

/// \p names as a Python tuple of str.
nb::tuple namesTuple(const std::vector<std::string> &names) {
  nb::list l;
  for (const std::string &n : names)
    l.append(n);
  return nb::tuple(l);
}

[[noreturn]] void badCall(const std::string &message) {
  raiseError(ErrorKind::InvalidArgument, "error: " + message);
}

} // namespace

Function::Function(std::shared_ptr<ModuleState> module, std::string name,
                   std::vector<std::string> params, std::vector<bool> donated)
    : module_(std::move(module)), name_(std::move(name)),
      params_(std::move(params)), donated_(std::move(donated)) {
  rt::TableOptions options;
  options.device = module_->gpu;
  options.donated = donated_;
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

/// A donated argument's memory as the call got it: a tsl.Tensor's (its
/// own block, or a copy when exported), or a copy of another array.
struct Function::DonatedArg {
  Tensor *tensor = nullptr; ///< null: a copy of another array
  void *data = nullptr;
  bool copied = false;
};

Function *Function::donate(nb::args names) const {
  if (module_->gpu)
    raiseError(ErrorKind::Unsupported,
               "error: not supported: donated arguments on the " +
                   module_->backend + " backend (donate on the CPU)");
  std::vector<bool> donated = donated_;
  donated.resize(params_.size(), false);
  for (nb::handle h : names) {
    std::string name = nb::cast<std::string>(h);
    auto it = std::find(params_.begin(), params_.end(), name);
    if (it == params_.end())
      badCall("'" + name_ + "(" + joined(params_) + ")' has no parameter '" +
              name + "' to donate");
    donated[static_cast<size_t>(it - params_.begin())] = true;
  }
  return new Function(module_, name_, params_, std::move(donated));
}

void Function::donateArg(size_t i, nb::handle obj, ImportedTensor &imported,
                         rt::CallArg &arg,
                         std::vector<DonatedArg> &donated) const {
  std::string where = "argument '" + params_[i] + "' of '" + name_ + "'";
  DonatedArg d;
  if (nb::isinstance<Tensor>(obj)) {
    d.tensor = nb::inst_ptr<Tensor>(obj);
    arg.dtype = d.tensor->dtype();
    arg.shape = d.tensor->shape();
    d.data = d.tensor->donate(where, d.copied);
  } else {
    // Not ours to reuse: the call takes a copy.
    if (!importTensor(obj, module_->placement, params_[i], imported, arg))
      badCall(where + " is a " + std::string(Py_TYPE(obj.ptr())->tp_name) +
              ": a donated argument must be a tensor");
    size_t bytes = rt::elementBytes(arg.dtype);
    for (int64_t s : arg.shape)
      bytes *= static_cast<size_t>(s);
    d.copied = true;
    d.data = std::malloc(bytes ? bytes : 1);
    if (d.data && bytes)
      std::memcpy(d.data, arg.data, bytes);
  }
  if (!d.data)
    raiseError(ErrorKind::Resource,
               "error: out of memory copying donated " + where);
  arg.data = d.data;
  donated.push_back(d);
}

nb::object Function::call(nb::handle args, nb::handle kwargs) {
  size_t n = params_.size();
  std::vector<nb::handle> ordered(n);
  orderArgs(args, kwargs, ordered);
  std::vector<rt::CallArg> callArgs(n);
  std::vector<ImportedTensor> imported(n);
  std::vector<DonatedArg> donated;
  // A raise while gathering gives back what was donated so far.
  struct GiveBack {
    std::vector<DonatedArg> &donated;
    bool called = false;
    ~GiveBack() {
      if (!called)
        for (DonatedArg &d : donated)
          d.tensor ? d.tensor->undonate(d.data, d.copied) : std::free(d.data);
    }
  } giveBack{donated};
  for (size_t i = 0; i < n; ++i) {
    PyObject *o = ordered[i].ptr();
    rt::CallArg &a = callArgs[i];
    if (donates(i) && !PyLong_Check(o)) {
      donateArg(i, ordered[i], imported[i], a, donated);
      continue;
    }
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
  giveBack.called = ok; // the table took the donated memory
  imported.clear();     // releases the producers' memory (with the GIL)
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

namespace {

/// tsl.BoundFunction (fn.bind(**args)): the function with those arguments
/// fixed; calls take the others, positionally in parameter order or by
/// name.
class BoundFunction {
public:
  BoundFunction(nb::object function, nb::dict bound,
                std::vector<std::string> free)
      : function_(std::move(function)), bound_(std::move(bound)),
        free_(std::move(free)) {}

  nb::object call(nb::args args, nb::kwargs kwargs) const {
    Function &f = nb::cast<Function &>(function_);
    auto signature = [&] {
      return "'" + f.name() + "(" + joined(free_) +
             ")' (bound: " + joined(boundNames()) + ")";
    };
    if (args.size() > free_.size())
      badCall(signature() + " takes " + std::to_string(free_.size()) +
              " arguments, got " + std::to_string(args.size()));
    nb::dict merged;
    for (auto [k, v] : bound_)
      merged[k] = v;
    for (size_t i = 0; i < args.size(); ++i)
      merged[free_[i].c_str()] = args[i];
    for (auto [k, v] : kwargs) {
      if (bound_.contains(k))
        badCall("argument '" + nb::cast<std::string>(k) + "' of " +
                signature() + " is bound");
      if (merged.contains(k))
        badCall("argument '" + nb::cast<std::string>(k) + "' of " +
                signature() + " is given twice");
      merged[k] = v;
    }
    return f.call(nb::tuple(), merged);
  }
  std::vector<std::string> boundNames() const {
    std::vector<std::string> names;
    for (auto [k, v] : bound_)
      names.push_back(nb::cast<std::string>(k));
    return names;
  }
  const std::vector<std::string> &free() const { return free_; }
  const nb::object &function() const { return function_; }

private:
  nb::object function_; ///< the tsl.Function
  nb::dict bound_;
  std::vector<std::string> free_;
};

/// fn.bind(**args) of the tsl.Function \p self.
BoundFunction *bind(nb::handle_t<Function> self, nb::kwargs kwargs) {
  const Function &f = nb::cast<const Function &>(self);
  const std::vector<std::string> &params = f.params();
  nb::dict bound;
  for (auto [k, v] : kwargs) {
    std::string name = nb::cast<std::string>(k);
    if (std::find(params.begin(), params.end(), name) == params.end())
      badCall("'" + f.name() + "(" + joined(params) + ")' has no parameter '" +
              name + "' to bind");
    bound[k] = v;
  }
  std::vector<std::string> free;
  for (const std::string &p : params)
    if (!bound.contains(p.c_str()))
      free.push_back(p);
  return new BoundFunction(nb::borrow(self), std::move(bound), std::move(free));
}

} // namespace

void bindFunction(nb::module_ &m) {
  nb::class_<BoundFunction>(
      m, "BoundFunction",
      "A tsl.Function with some arguments fixed (``fn.bind(**weights)``): "
      "calling it passes the rest, positionally in the order of its "
      "``parameters`` or by name.")
      .def("__call__", &BoundFunction::call)
      .def_prop_ro(
          "parameters",
          [](const BoundFunction &b) { return namesTuple(b.free()); },
          "The parameters a call still passes, in order.")
      .def_prop_ro("function", &BoundFunction::function,
                   "The tsl.Function it calls.")
      .def("__repr__", [](const BoundFunction &b) {
        const Function &f = nb::cast<const Function &>(b.function());
        return "<tsl.BoundFunction " + f.name() + "(" + joined(b.free()) +
               "), bound: " + joined(b.boundNames()) + ">";
      });
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
      .def("donate", &Function::donate, nb::rv_policy::take_ownership,
           "``fn.donate(\"w\", \"m\")``: this function with those "
           "parameters' buffers donated to every call (JAX's "
           "donate_argnames), in a variant table of its own. Results are "
           "written into the donated memory where the compiler can (an "
           "optimizer's ``w - lr * g``, a KV cache's ``update_slice``), so "
           "a training step allocates no new weights. A donated tsl.Tensor "
           "is consumed: reading it afterwards raises tsl.Error. A NumPy "
           "array, or a tsl.Tensor a NumPy array or torch tensor still "
           "reads, is copied first and left as it was. Raises tsl.Error for "
           "an unknown name or a GPU module.")
      .def("bind", &bind, nb::rv_policy::take_ownership,
           "``fn.bind(**args)``: a tsl.BoundFunction calling this function "
           "with those arguments fixed (weights loaded once, "
           "``m.main.bind(**tsl.load_weights(path))``); tsl.Error for a "
           "name that is no parameter.")
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
          [](const Function &f) { return namesTuple(f.params()); },
          "Parameter names in order (calls may pass them as keywords).")
      .def("__repr__", [](const Function &f) {
        std::vector<std::string> donated;
        for (size_t i = 0; i < f.params().size(); ++i)
          if (f.donates(i))
            donated.push_back(f.params()[i]);
        return "<tsl.Function " + f.name() + "(" + joined(f.params()) +
               ") of '" + f.module().name + "' on " + f.module().backend +
               (donated.empty() ? "" : ", donating " + joined(donated)) + ">";
      });
}

} // namespace tsl::py
