#include "runtime/CublasLt.h"

#include "runtime/Variant.h"

#include <dlfcn.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace tsl::rt {

namespace {

// cuBLASLt's ABI (cublasLt.h, library_types.h, cublas_api.h of CUDA 12/13).
using Status = int;
using Handle = void *;
using MatmulDesc = void *;
using Layout = void *;
using Preference = void *;
struct Algo {
  uint64_t data[8];
};
struct HeuristicResult {
  Algo algo;
  size_t workspaceSize;
  Status state;
  float wavesCount;
  int reserved[4];
};
constexpr int kR32F = 0, kR64F = 1, kR16F = 2, kR16BF = 14; // cudaDataType
constexpr int kCompute32F = 68, kCompute32FFastTf32 = 77, kCompute64F = 70;
constexpr int kOpN = 0, kOpT = 1;
constexpr int kDescTransA = 3,
              kDescTransB = 4; // cublasLtMatmulDescAttributes_t
constexpr int kLayoutBatchCount = 5, kLayoutStridedBatchOffset = 6;
constexpr int kPrefMaxWorkspaceBytes = 1;
constexpr int kPrefMinAlignA = 5, kPrefMinAlignB = 6, kPrefMinAlignC = 7,
              kPrefMinAlignD = 8;
/// PyTorch's choice on Hopper; enough for every algorithm we have seen.
constexpr size_t kWorkspaceBytes = 32u << 20;
/// Plans kept before the cache starts over (dynamic sizes make many).
constexpr size_t kMaxPlans = 512;

bool envIs(const char *name, const char *value) {
  const char *v = std::getenv(name);
  return v && std::strcmp(v, value) == 0;
}

} // namespace

struct CublasLtApi {
  Status (*create)(Handle *) = nullptr;
  Status (*destroy)(Handle) = nullptr;
  const char *(*statusName)(Status) = nullptr;
  Status (*descCreate)(MatmulDesc *, int, int) = nullptr;
  Status (*descDestroy)(MatmulDesc) = nullptr;
  Status (*descSet)(MatmulDesc, int, const void *, size_t) = nullptr;
  Status (*layoutCreate)(Layout *, int, uint64_t, uint64_t, int64_t) = nullptr;
  Status (*layoutDestroy)(Layout) = nullptr;
  Status (*layoutSet)(Layout, int, const void *, size_t) = nullptr;
  Status (*prefCreate)(Preference *) = nullptr;
  Status (*prefDestroy)(Preference) = nullptr;
  Status (*prefSet)(Preference, int, const void *, size_t) = nullptr;
  Status (*heuristic)(Handle, MatmulDesc, Layout, Layout, Layout, Layout,
                      Preference, int, HeuristicResult *, int *) = nullptr;
  Status (*matmul)(Handle, MatmulDesc, const void *, const void *, Layout,
                   const void *, Layout, const void *, const void *, Layout,
                   void *, Layout, const Algo *, void *, size_t,
                   CUstream) = nullptr;
  std::string path;

  std::string describe(const char *what, Status s) const {
    const char *name = statusName ? statusName(s) : nullptr;
    return std::string(what) +
           " failed: " + (name ? name : "status " + std::to_string(s));
  }

  /// Library \p name, loaded once per process (never unloaded); null with
  /// \p why.
  static const CublasLtApi *get(const std::string &name, std::string &why) {
    static std::mutex mutex;
    static auto *loaded =
        new std::map<std::string,
                     std::pair<std::unique_ptr<CublasLtApi>, std::string>>();
    std::lock_guard<std::mutex> lock(mutex);
    auto it = loaded->find(name);
    if (it == loaded->end()) {
      std::string error;
      std::unique_ptr<CublasLtApi> api = open({name}, error);
      it = loaded->emplace(name, std::make_pair(std::move(api), error)).first;
    }
    why = it->second.second;
    return it->second.first.get();
  }

public:
  /// The first of \p names that loads, with every entry point; null with
  /// \p why.
  static std::unique_ptr<CublasLtApi>
  open(const std::vector<std::string> &names, std::string &why) {
    void *lib = nullptr;
    std::string tried;
    for (const std::string &n : names) {
      if ((lib = dlopen(n.c_str(), RTLD_NOW | RTLD_LOCAL))) {
        tried = n;
        break;
      }
      const char *e = dlerror();
      tried +=
          (tried.empty() ? "" : "; ") + n + (e ? std::string(": ") + e : "");
    }
    if (!lib) {
      why = "cuBLASLt cannot be loaded (" + tried + ")";
      return nullptr;
    }
    auto a = std::make_unique<CublasLtApi>();
    a->path = tried;
    std::string missing;
    auto resolve = [&](const char *name, auto &fn) {
      void *p = dlsym(lib, name);
      if (!p)
        missing += (missing.empty() ? "" : ", ") + std::string(name);
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(p);
    };
    resolve("cublasLtCreate", a->create);
    resolve("cublasLtDestroy", a->destroy);
    resolve("cublasLtGetStatusName", a->statusName);
    resolve("cublasLtMatmulDescCreate", a->descCreate);
    resolve("cublasLtMatmulDescDestroy", a->descDestroy);
    resolve("cublasLtMatmulDescSetAttribute", a->descSet);
    resolve("cublasLtMatrixLayoutCreate", a->layoutCreate);
    resolve("cublasLtMatrixLayoutDestroy", a->layoutDestroy);
    resolve("cublasLtMatrixLayoutSetAttribute", a->layoutSet);
    resolve("cublasLtMatmulPreferenceCreate", a->prefCreate);
    resolve("cublasLtMatmulPreferenceDestroy", a->prefDestroy);
    resolve("cublasLtMatmulPreferenceSetAttribute", a->prefSet);
    resolve("cublasLtMatmulAlgoGetHeuristic", a->heuristic);
    resolve("cublasLtMatmul", a->matmul);
    if (!missing.empty()) {
      why = tried + " lacks " + missing;
      return nullptr;
    }
    return a;
  }
};

std::string probeCublasLt(const std::vector<std::string> &names,
                          std::string &why) {
  std::unique_ptr<CublasLtApi> api = CublasLtApi::open(names, why);
  return api ? api->path : "";
}

std::vector<std::string> cublasLtCandidates(std::string &why) {
  if (envIs("TSL_CUBLASLT", "off") || envIs("TSL_CUBLASLT", "0")) {
    why = "cuBLASLt disabled by TSL_CUBLASLT=off";
    return {};
  }
  std::vector<std::string> names;
  if (const char *p = std::getenv("TSL_CUBLASLT_PATH"); p && *p) {
    std::string list = p;
    for (size_t at = 0; at <= list.size();) {
      size_t end = std::min(list.find(':', at), list.size());
      if (end > at)
        names.push_back(list.substr(at, end - at));
      at = end + 1;
    }
  }
  if (names.empty())
    names = {"libcublasLt.so.13", "libcublasLt.so.12"};
  return names;
}

/// A problem's descriptors and chosen algorithm.
struct CublasLtGemm::Plan {
  const CublasLtApi *api = nullptr;
  MatmulDesc desc = nullptr;
  Layout a = nullptr, b = nullptr, d = nullptr;
  Algo algo{};
  bool f64 = false;
  /// cublasLtMatmul failed on it once: TSL's kernel runs it from then on.
  bool failed = false;
  ~Plan() {
    for (Layout l : {a, b, d})
      if (l)
        api->layoutDestroy(l);
    if (desc)
      api->descDestroy(desc);
  }
};

std::unique_ptr<CublasLtGemm> CublasLtGemm::open(CudaDevice &device,
                                                 std::string &why) {
  std::vector<std::string> names = cublasLtCandidates(why);
  if (names.empty())
    return nullptr;
  return open(device, names, why);
}

std::unique_ptr<CublasLtGemm>
CublasLtGemm::open(CudaDevice &device, const std::vector<std::string> &names,
                   std::string &why) {
  if (!device.makeCurrent(why))
    return nullptr;
  // A library that loads may still refuse the device (CUDA 13's cuBLAS on
  // an older driver): the next one is tried.
  std::string refused;
  bool anyLoaded = false;
  for (const std::string &name : names) {
    std::string error;
    const CublasLtApi *api = CublasLtApi::get(name, error);
    void *handle = nullptr;
    // "cuBLASLt cannot be loaded (<name>: <dlerror>)": the reason alone.
    const std::string prefix = "cuBLASLt cannot be loaded (";
    if (!api && error.rfind(prefix, 0) == 0 && error.back() == ')')
      error = error.substr(prefix.size(), error.size() - prefix.size() - 1);
    if (api) {
      anyLoaded = true;
      if (Status s = api->create(&handle); s != 0) {
        error = name + ": " + api->describe("cublasLtCreate", s);
        api = nullptr;
      }
    }
    if (!api) {
      refused += (refused.empty() ? "" : "; ") + error;
      continue;
    }
    std::unique_ptr<CublasLtGemm> g(new CublasLtGemm());
    g->api_ = api;
    g->device_ = &device;
    g->handle_ = handle;
    g->path_ = api->path;
    g->refused_ = refused;
    g->allowTf32_ = envIs("TSL_ALLOW_TF32", "1");
    return g;
  }
  why = (anyLoaded ? "no cuBLASLt serves this device ("
                   : "cuBLASLt cannot be loaded (") +
        refused + ")";
  return nullptr;
}

CublasLtGemm::~CublasLtGemm() {
  plans_.clear();
  for (auto &[stream, p] : workspaces_)
    device_->release(p, stream);
  if (handle_)
    api_->destroy(handle_);
}

CUdeviceptr CublasLtGemm::workspace(CUstream stream, std::string &error) {
  auto it = workspaces_.find(stream);
  if (it != workspaces_.end())
    return it->second;
  CUdeviceptr p = device_->allocate(kWorkspaceBytes, error, stream);
  if (p)
    workspaces_[stream] = p;
  return p;
}

namespace {

/// The largest power of two up to 256 dividing the address and the batch
/// stride in bytes: what the algorithm may assume of the operand.
int32_t alignmentOf(const void *p, int64_t strideBytes) {
  auto bits = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(p)) |
              static_cast<uint64_t>(strideBytes) | 256u;
  return static_cast<int32_t>(bits & (~bits + 1));
}

} // namespace

CublasLtGemm::Plan *CublasLtGemm::plan(const tsl_rt_gemm &p,
                                       GemmOutcome &outcome,
                                       std::string &error) {
  bool transA = (p.flags & 1) != 0, transB = (p.flags & 2) != 0;
  int64_t eb = static_cast<int64_t>(elementBytes(p.dtype));
  int32_t align = std::min({alignmentOf(p.a, p.stride_a * eb),
                            alignmentOf(p.b, p.stride_b * eb),
                            alignmentOf(p.d, p.stride_d * eb)});
  Key key{p.dtype,    p.batch,    p.m,        p.n,           p.k,
          p.stride_a, p.stride_b, p.stride_d, (p.flags & 3), align};
  if (auto it = plans_.find(key); it != plans_.end()) {
    if (it->second->failed) {
      outcome = GemmOutcome::Unavailable;
      return nullptr;
    }
    return it->second.get();
  }
  if (plans_.size() >= kMaxPlans)
    plans_.clear();
  const CublasLtApi &a = *api_;
  auto plan = std::make_unique<Plan>();
  plan->api = api_;
  plan->f64 = p.dtype == 7;
  int type = p.dtype == 4   ? kR16F
             : p.dtype == 5 ? kR16BF
             : plan->f64    ? kR64F
                            : kR32F;
  int compute = plan->f64                      ? kCompute64F
                : (p.dtype == 6 && allowTf32_) ? kCompute32FFastTf32
                                               : kCompute32F;
  auto check = [&](Status s, const char *what) {
    if (s != 0)
      error = a.describe(what, s);
    return s == 0;
  };
  // Row-major D = A B is column-major D^T = B^T A^T: cuBLASLt's "A" is our
  // B and its "B" our A, with m = N and n = M.
  int32_t opA = transB ? kOpT : kOpN, opB = transA ? kOpT : kOpN;
  auto layout = [&](Layout &l, uint64_t rows, uint64_t cols, int64_t ld,
                    int64_t stride) {
    if (!check(a.layoutCreate(&l, type, rows, cols, ld),
               "cublasLtMatrixLayoutCreate"))
      return false;
    auto count = static_cast<int32_t>(p.batch);
    return check(a.layoutSet(l, kLayoutBatchCount, &count, sizeof count),
                 "cublasLtMatrixLayoutSetAttribute") &&
           check(a.layoutSet(l, kLayoutStridedBatchOffset, &stride,
                             sizeof stride),
                 "cublasLtMatrixLayoutSetAttribute");
  };
  auto u = [](int64_t v) { return static_cast<uint64_t>(v); };
  bool made =
      check(a.descCreate(&plan->desc, compute, plan->f64 ? kR64F : kR32F),
            "cublasLtMatmulDescCreate") &&
      check(a.descSet(plan->desc, kDescTransA, &opA, sizeof opA),
            "cublasLtMatmulDescSetAttribute") &&
      check(a.descSet(plan->desc, kDescTransB, &opB, sizeof opB),
            "cublasLtMatmulDescSetAttribute") &&
      (transB ? layout(plan->a, u(p.k), u(p.n), p.k, p.stride_b)
              : layout(plan->a, u(p.n), u(p.k), p.n, p.stride_b)) &&
      (transA ? layout(plan->b, u(p.m), u(p.k), p.m, p.stride_a)
              : layout(plan->b, u(p.k), u(p.m), p.k, p.stride_a)) &&
      layout(plan->d, u(p.n), u(p.m), p.n, p.stride_d);
  if (!made) {
    outcome = GemmOutcome::Failed;
    return nullptr;
  }
  Preference pref = nullptr;
  if (!check(a.prefCreate(&pref), "cublasLtMatmulPreferenceCreate")) {
    outcome = GemmOutcome::Failed;
    return nullptr;
  }
  uint64_t limit = kWorkspaceBytes;
  auto alignBytes = static_cast<uint32_t>(align);
  bool prefs =
      check(a.prefSet(pref, kPrefMaxWorkspaceBytes, &limit, sizeof limit),
            "cublasLtMatmulPreferenceSetAttribute");
  for (int attr :
       {kPrefMinAlignA, kPrefMinAlignB, kPrefMinAlignC, kPrefMinAlignD})
    prefs =
        prefs && check(a.prefSet(pref, attr, &alignBytes, sizeof alignBytes),
                       "cublasLtMatmulPreferenceSetAttribute");
  HeuristicResult result{};
  int found = 0;
  Status s = prefs ? a.heuristic(handle_, plan->desc, plan->a, plan->b, plan->d,
                                 plan->d, pref, 1, &result, &found)
                   : 0;
  a.prefDestroy(pref);
  if (!prefs) {
    outcome = GemmOutcome::Failed;
    return nullptr;
  }
  if (s != 0 || found < 1) { // no algorithm: TSL's own kernel runs it
    outcome = GemmOutcome::Unavailable;
    return nullptr;
  }
  plan->algo = result.algo;
  return (plans_[key] = std::move(plan)).get();
}

GemmOutcome CublasLtGemm::run(const tsl_rt_gemm &p, CUstream stream,
                              std::string &error) {
  if (p.dtype < 4 || p.dtype > 7 || p.k == 0 || p.stride_a < 0 ||
      p.stride_b < 0)
    return GemmOutcome::Unavailable;
  if (p.batch == 0 || p.m == 0 || p.n == 0)
    return GemmOutcome::Done;
  if (p.batch > INT32_MAX)
    return GemmOutcome::Unavailable;
  std::lock_guard<std::mutex> lock(mutex_);
  GemmOutcome outcome = GemmOutcome::Done;
  Plan *plan = this->plan(p, outcome, error);
  if (!plan)
    return outcome;
  CUstream s = stream ? stream : device_->stream();
  CUdeviceptr ws = workspace(s, error);
  if (!ws)
    return GemmOutcome::Failed;
  float one = 1, zero = 0;
  double one64 = 1, zero64 = 0;
  const void *alpha = plan->f64 ? static_cast<const void *>(&one64) : &one;
  const void *beta = plan->f64 ? static_cast<const void *>(&zero64) : &zero;
  auto *wsp = reinterpret_cast<void *>(static_cast<uintptr_t>(ws));
  if (Status st = api_->matmul(handle_, plan->desc, alpha, p.b, plan->a, p.a,
                               plan->b, beta, p.d, plan->d, p.d, plan->d,
                               &plan->algo, wsp, kWorkspaceBytes, s);
      st != 0) {
    // The library refused after its heuristic chose: TSL's kernel runs
    // this problem, now and from now on (said once per device).
    plan->failed = true;
    if (!matmulFailureLogged_) {
      matmulFailureLogged_ = true;
      std::fprintf(stderr,
                   "[tsl] warning: cuBLASLt (%s): %s: this GEMM (and any "
                   "other the library fails) runs on TSL's generated kernel\n",
                   path_.c_str(), api_->describe("cublasLtMatmul", st).c_str());
    }
    return GemmOutcome::Unavailable;
  }
  return GemmOutcome::Done;
}

} // namespace tsl::rt
