// The extension module tsl._tsl: loading modules, and the functions of the
// package (tsl/__init__.py wraps them).
#include "python/src/Analysis.h"
#include "python/src/Function.h"
#include "python/src/Tensor.h"
#include "runtime/GpuDevice.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <sys/stat.h>

namespace tsl::py {

using namespace nb::literals;

namespace {

/// One GpuDevice per CUDA ordinal and one emulator for the process (never
/// destroyed: results may outlive every module, and the CUDA driver must
/// not be called during interpreter shutdown).
std::shared_ptr<rt::GpuDevice> sharedDevice(bool cuda, int ordinal,
                                            std::string &error) {
  static std::mutex mutex;
  static auto *devices = new std::map<int, std::shared_ptr<rt::GpuDevice>>();
  std::lock_guard<std::mutex> lock(mutex);
  int key = cuda ? ordinal : -1;
  auto it = devices->find(key);
  if (it != devices->end())
    return it->second;
  std::shared_ptr<rt::GpuDevice> d =
      cuda ? rt::GpuDevice::openCuda(ordinal, error)
           : rt::GpuDevice::emulator();
  if (d)
    (*devices)[key] = d;
  return d;
}

/// Sets \p s's backend, device and placement from \p backend.
void openBackend(ModuleState &s, const std::string &backend) {
  Placement &p = s.placement;
  if (backend == "cpu") {
    s.backend = "cpu";
  } else if (backend == "gpu-emulator") {
    s.backend = backend;
    std::string error;
    s.gpu = sharedDevice(false, 0, error);
  } else if (backend == "cuda" || backend.rfind("cuda:", 0) == 0) {
    int ordinal = 0;
    if (backend.size() > 5) {
      std::string digits = backend.substr(5);
      if (digits.empty() || digits.size() > 4 ||
          digits.find_first_not_of("0123456789") != std::string::npos)
        raiseError(ErrorKind::InvalidArgument,
                   "error: unknown backend '" + backend +
                       "' (cpu, cuda, cuda:N, gpu-emulator)");
      ordinal = std::stoi(digits);
    }
    std::string error;
    {
      nb::gil_scoped_release unlocked;
      s.gpu = sharedDevice(true, ordinal, error);
    }
    if (!s.gpu)
      raiseError(ErrorKind::Unsupported, "error: " + error);
    s.backend = "cuda:" + std::to_string(ordinal);
    p.deviceType = kDLCUDA;
    p.deviceId = ordinal;
    p.stream = s.gpu->cuda()->stream();
  } else {
    raiseError(ErrorKind::InvalidArgument,
               "error: unknown backend '" + backend +
                   "' (cpu, cuda, cuda:N, gpu-emulator)");
  }
  p.backend = s.backend.c_str();
}

/// A module of the package: its state and its Function objects, made once
/// per name.
class Module {
public:
  explicit Module(std::shared_ptr<ModuleState> state)
      : state_(std::move(state)) {}

  nb::object function(const std::string &name) {
    auto it = functions_.find(name);
    if (it != functions_.end())
      return it->second;
    const std::vector<std::string> &names = state_->functions;
    if (!std::binary_search(names.begin(), names.end(), name)) {
      std::string known;
      for (const std::string &n : names)
        known += (known.empty() ? "" : ", ") + n;
      raiseError(ErrorKind::NotFound,
                 "error: '" + state_->name + "' has no function '" + name +
                     "' (it has: " + (known.empty() ? "none" : known) + ")");
    }
    auto *fn = new Function(state_, name, state_->jit->parameterNames(name));
    nb::object obj = nb::cast(fn, nb::rv_policy::take_ownership);
    functions_.emplace(name, obj);
    return obj;
  }
  const ModuleState &state() const { return *state_; }

private:
  std::shared_ptr<ModuleState> state_;
  std::map<std::string, nb::object> functions_;
};

/// Loads a module from \p name (a path) or from \p text, and checks it.
Module *openModule(const std::string &name, std::optional<std::string> text,
                   const std::string &backend) {
  auto s = std::make_shared<ModuleState>();
  s->name = name;
  s->text = std::move(text);
  openBackend(*s, backend);
  if (!s->text) {
    struct stat st;
    if (::stat(name.c_str(), &st) != 0 || !S_ISREG(st.st_mode))
      raiseError(ErrorKind::NotFound, "error: no such file: '" + name + "'");
  }
  s->jit = std::make_unique<JitCompiler>(name);
  if (s->text)
    s->jit->setSourceText(*s->text);
  if (s->gpu)
    s->jit->setDevice(s->gpu);
  Error error;
  bool ok;
  {
    nb::gil_scoped_release unlocked;
    ok = s->jit->check(error);
    if (ok)
      s->functions = s->jit->functionNames();
  }
  if (!ok)
    raiseError(error.kind,
               clangStyle(error, s->name, s->text ? &*s->text : nullptr));
  return new Module(std::move(s));
}

} // namespace

} // namespace tsl::py

NB_MODULE(_tsl, m) {
  using namespace tsl::py;
  m.doc() = "The native part of the tsl package (use `import tsl`).";
  // Functions and results may legitimately live until interpreter shutdown
  // (module globals, framework caches): no leak report then.
  nb::set_leak_warnings(false);
  bindTensor(m);
  bindFunction(m);
  bindWeights(m);
  nb::class_<Module>(m, "Module", "A loaded TSL module (see tsl.Module).")
      .def("function", &Module::function, "name"_a,
           "The tsl.Function NAME (the same object each time); tsl.Error of "
           "kind 'not_found' when there is none.")
      .def_prop_ro(
          "functions",
          [](const Module &mod) {
            nb::list l;
            for (const std::string &n : mod.state().functions)
              l.append(n);
            return l;
          },
          "The names of the module's functions, sorted.")
      .def_prop_ro(
          "name", [](const Module &mod) { return mod.state().name; },
          "The path it was loaded from, or compile()'s name.")
      .def_prop_ro(
          "backend", [](const Module &mod) { return mod.state().backend; },
          "'cpu', 'cuda:N' or 'gpu-emulator'.");
  m.def(
      "load",
      [](const std::string &path, const std::string &backend) {
        return openModule(path, std::nullopt, backend);
      },
      "path"_a, "backend"_a = "cpu", nb::rv_policy::take_ownership);
  m.def(
      "compile",
      [](const std::string &text, const std::string &backend,
         const std::string &name) { return openModule(name, text, backend); },
      "source"_a, "backend"_a = "cpu", "name"_a = "<string>",
      nb::rv_policy::take_ownership);
  m.def("prove", &prove, "expr"_a, "dims"_a = "");
  m.def("simplify", &simplify, "expr"_a, "dims"_a = "");
  m.def(
      "set_logs",
      [](nb::object spec) {
        tsl_status s = tsl_set_logs(
            spec.is_none() ? nullptr : nb::cast<std::string>(spec).c_str());
        if (s != TSL_OK)
          raiseError(tsl::ErrorKind::InvalidArgument,
                     std::string("error: ") + tsl_last_error());
      },
      "spec"_a.none());
  m.def("_register", &registerClasses, "classes"_a);
}
