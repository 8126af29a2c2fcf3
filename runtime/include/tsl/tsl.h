// The TSL runtime's C++ API: a thin, header-only RAII layer over tsl_c.h.
// Nothing throws; failures come back as Status with the runtime's message.
#pragma once

#include "tsl/tsl_c.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace tsl {

/// The outcome of a call: ok, or a code with the runtime's message.
struct Status {
  tsl_status code = TSL_OK;
  std::string message;
  bool ok() const { return code == TSL_OK; }
  static Status fromC(tsl_status s) {
    return {s, s == TSL_OK ? std::string() : tsl_last_error()};
  }
};

/// A result tensor owned by the caller (row-major, on the runtime's
/// device).
class Output {
public:
  Output() = default;
  Output(tsl_tensor t) : t_(t) {}
  Output(Output &&o) noexcept : t_(o.t_) { o.t_ = tsl_tensor{}; }
  Output &operator=(Output &&o) noexcept {
    std::swap(t_, o.t_);
    return *this;
  }
  ~Output() {
    if (t_.data || t_.shape) {
      // Free one tensor through the same allocator the runtime used.
      tsl_tensor *single =
          static_cast<tsl_tensor *>(std::calloc(1, sizeof(tsl_tensor)));
      *single = t_;
      tsl_outputs_free(single, 1);
    }
  }
  std::vector<int64_t> shape() const {
    return std::vector<int64_t>(t_.shape, t_.shape + t_.ndim);
  }
  template <typename T> const T *data() const {
    return static_cast<const T *>(t_.data);
  }
  const tsl_tensor &raw() const { return t_; }

private:
  tsl_tensor t_{};
};

/// An argument: a view of caller memory, or an int.
class Arg {
public:
  /// A tensor in memory of \p device (the runtime's: the CPU by default).
  static Arg tensor(void *data, tsl_dtype dtype, std::vector<int64_t> shape,
                    tsl_device device = {1, 0}) {
    Arg a;
    a.shape_ = std::move(shape);
    a.arg_.tensor.data = data;
    a.arg_.tensor.device = device;
    a.arg_.tensor.dtype = dtype;
    return a;
  }
  static Arg f32(float *data, std::vector<int64_t> shape,
                 tsl_device device = {1, 0}) {
    return tensor(data, {2, 32, 1}, std::move(shape), device);
  }
  static Arg integer(int64_t v) {
    Arg a;
    a.arg_.is_int = 1;
    a.arg_.int_value = v;
    return a;
  }
  tsl_arg raw() const {
    tsl_arg a = arg_;
    a.tensor.ndim = static_cast<int32_t>(shape_.size());
    a.tensor.shape = const_cast<int64_t *>(shape_.data());
    return a;
  }

private:
  tsl_arg arg_{};
  std::vector<int64_t> shape_;
};

/// A safetensors file of weights (tsl_weights_open): each tensor an Arg
/// viewing the mapped file, valid while this object lives.
class Weights {
public:
  static Status open(const std::string &path, Weights &out) {
    tsl_weights *w = nullptr;
    Status s = Status::fromC(tsl_weights_open(path.c_str(), &w));
    out.w_.reset(w);
    return s;
  }
  size_t size() const {
    return static_cast<size_t>(tsl_weights_count(w_.get()));
  }
  /// The name of tensor \p i (in the header's order).
  std::string name(size_t i) const {
    const char *n = nullptr;
    tsl_tensor t{};
    tsl_weights_get(w_.get(), static_cast<int32_t>(i), &n, &t);
    return n ? n : "";
  }
  /// The tensor named \p name as an argument; TSL_NOT_FOUND when none.
  Status find(const std::string &name, Arg &out) const {
    tsl_tensor t{};
    Status s = Status::fromC(tsl_weights_find(w_.get(), name.c_str(), &t));
    if (s.ok())
      out = Arg::tensor(t.data, t.dtype,
                        std::vector<int64_t>(t.shape, t.shape + t.ndim));
    return s;
  }

private:
  struct Close {
    void operator()(tsl_weights *w) const { tsl_weights_close(w); }
  };
  std::unique_ptr<tsl_weights, Close> w_;
};

class Function {
public:
  explicit Function(tsl_function *f = nullptr) : f_(f) {}
  /// Calls the function; fills \p outputs on success. Up to 16 arguments
  /// are passed from the stack (no allocation besides the results).
  Status call(const std::vector<Arg> &args,
              std::vector<Output> &outputs) const {
    tsl_arg onStack[16];
    std::vector<tsl_arg> onHeap;
    tsl_arg *raw = onStack;
    if (args.size() > 16) {
      onHeap.resize(args.size());
      raw = onHeap.data();
    }
    for (size_t i = 0; i < args.size(); ++i)
      raw[i] = args[i].raw();
    tsl_tensor *outs = nullptr;
    int32_t n = 0;
    Status s = Status::fromC(tsl_function_call(
        f_, raw, static_cast<int32_t>(args.size()), &outs, &n));
    if (!s.ok())
      return s;
    outputs.clear();
    for (int32_t i = 0; i < n; ++i) {
      outputs.emplace_back(outs[i]);
      outs[i] = tsl_tensor{};
    }
    tsl_outputs_free(outs, n);
    return s;
  }
  int compiles() const {
    int32_t c = 0;
    tsl_function_stats(f_, &c, nullptr);
    return c;
  }

private:
  tsl_function *f_;
};

/// A function with some arguments fixed (weights loaded once): call() takes
/// the others, in parameter order. Python's `fn.bind(**weights)`.
class BoundFunction {
public:
  /// \p bound: (parameter index, argument) pairs; \p arity the function's
  /// parameter count.
  BoundFunction(Function f, std::vector<std::pair<size_t, Arg>> bound,
                size_t arity)
      : f_(f), slots_(arity) {
    for (auto &[i, a] : bound)
      if (i < arity) {
        slots_[i] = std::move(a);
        if (std::find(fixed_.begin(), fixed_.end(), i) == fixed_.end())
          fixed_.push_back(i);
      }
  }
  /// Calls with \p rest in the free parameters' order; a count other than
  /// theirs is TSL_INVALID_ARGUMENT.
  Status call(const std::vector<Arg> &rest, std::vector<Output> &outputs) {
    std::vector<Arg> all = slots_;
    size_t k = 0;
    for (size_t i = 0; i < all.size(); ++i)
      if (std::find(fixed_.begin(), fixed_.end(), i) == fixed_.end()) {
        if (k == rest.size())
          break;
        all[i] = rest[k++];
      }
    if (k != rest.size() || k + fixed_.size() != all.size())
      return {TSL_INVALID_ARGUMENT,
              "the bound function takes " +
                  std::to_string(all.size() - fixed_.size()) +
                  " arguments, got " + std::to_string(rest.size())};
    return f_.call(all, outputs);
  }

private:
  Function f_;
  std::vector<Arg> slots_;
  std::vector<size_t> fixed_;
};

class Module {
public:
  explicit Module(tsl_module *m = nullptr) : m_(m) {}
  Status function(const std::string &name, Function &out) const {
    tsl_function *f = nullptr;
    Status s = Status::fromC(tsl_module_get_function(m_, name.c_str(), &f));
    out = Function(f);
    return s;
  }
  /// The function with the parameters at \p donated (indices) donated:
  /// tsl_module_get_function_donating's contract.
  Status function(const std::string &name, const std::vector<int32_t> &donated,
                  Function &out) const {
    tsl_function *f = nullptr;
    Status s = Status::fromC(tsl_module_get_function_donating(
        m_, name.c_str(), donated.data(), static_cast<int32_t>(donated.size()),
        &f));
    out = Function(f);
    return s;
  }

private:
  tsl_module *m_;
};

class Runtime {
public:
  /// A runtime on \p device (the CPU by default; {2, n} CUDA device n);
  /// with \p jit the driver's compiler is installed.
  static Status create(Runtime &out, bool jit = true, int cacheLimit = 8,
                       tsl_device device = {1, 0}) {
    tsl_runtime_options options{cacheLimit, device};
    tsl_runtime *rt = nullptr;
    Status s = Status::fromC(tsl_runtime_create(&options, &rt));
    if (!s.ok())
      return s;
    out.rt_.reset(rt);
    if (jit)
      return Status::fromC(tsl_runtime_enable_jit(rt));
    return s;
  }
  Status loadSource(const std::string &path, Module &out) {
    tsl_module *m = nullptr;
    Status s =
        Status::fromC(tsl_module_load_source(rt_.get(), path.c_str(), &m));
    out = Module(m);
    return s;
  }

private:
  struct Deleter {
    void operator()(tsl_runtime *r) const { tsl_runtime_destroy(r); }
  };
  std::unique_ptr<tsl_runtime, Deleter> rt_;
};

} // namespace tsl
