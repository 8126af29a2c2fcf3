#include "tools/driver/JitCompiler.h"

#include "backend/cpu/CpuKernel.h"
#include "backend/nvptx/GpuKernel.h"
#include "frontend/Elaborator.h"
#include "ir/Verifier.h"

#include <cstdio>
#include <cstdlib>
#include <dlfcn.h>
#include <filesystem>
#include <fstream>
#include <sys/stat.h>
#include <unistd.h>

namespace tsl {

JitCompiler::JitCompiler(std::string path)
    : path_(std::move(path)), diags_(sm_, diagnosticText_),
      loader_(sm_, diags_) {}

bool JitCompiler::ensureLoaded(std::string &error) {
  if (!module_)
    module_ = loader_.load(path_);
  if (!module_) {
    error = diagnosticText_.str();
    return false;
  }
  return true;
}

bool JitCompiler::check(std::string &error) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!ensureLoaded(error))
    return false;
  if (!checkModule(*module_, diags_)) {
    error = diagnosticText_.str();
    return false;
  }
  return true;
}

std::vector<std::string>
JitCompiler::parameterNames(const std::string &function) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::string error;
  std::vector<std::string> names;
  if (!ensureLoaded(error))
    return names;
  auto it = module_->fns.find(function);
  if (it != module_->fns.end())
    for (const ast::Param &p : it->second->params)
      names.push_back(p.name);
  return names;
}

bool JitCompiler::compileDispatcher(
    const std::vector<const rt::VariantCode *> &variants, rt::Dispatcher &out,
    std::string &error) {
  return tsl::compileDispatcher(variants, out, error);
}

bool JitCompiler::compile(const std::string &function,
                          const std::vector<rt::CallArg> &args,
                          const std::set<std::string> &dynamicDims,
                          bool allDynamic, rt::VariantCode &out,
                          std::string &error) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!ensureLoaded(error))
    return false;
  auto it = module_->fns.find(function);
  if (it == module_->fns.end()) {
    error = "no function named '" + function + "' in " + path_;
    return false;
  }
  const ast::FnDecl &decl = *it->second;
  if (args.size() != decl.params.size()) {
    error = "'" + function + "' takes " + std::to_string(decl.params.size()) +
            " arguments, got " + std::to_string(args.size());
    return false;
  }
  ElaborateOptions options;
  options.examples.emplace();
  for (size_t i = 0; i < args.size(); ++i) {
    ExampleArg ex;
    ex.isInt = args[i].isInt;
    ex.intValue = args[i].intValue;
    ex.dtype = static_cast<DType>(args[i].dtype);
    ex.shape = args[i].shape;
    (*options.examples)[decl.params[i].name] = ex;
  }
  options.forceDynamic = dynamicDims;
  options.allDynamic = allDynamic;
  diagnosticText_.str("");
  Function fn;
  if (!elaborateFunction(*module_, function, options, diags_, fn)) {
    error = diagnosticText_.str();
    while (!error.empty() && error.back() == '\n')
      error.pop_back();
    return false;
  }
  if (!verifyFunction(fn, error)) {
    error = "internal error: " + error;
    return false;
  }
  if (device_)
    return compileGpuVariant(fn, device_, out, error);
  std::string dir = cacheDirectory();
  if (dir.empty())
    return CpuKernel::compileVariant(fn, out, error);
  // The on-disk cache: a hit loads the object compiled by an earlier
  // process; a missing, corrupt or mismatched entry is (re)built.
  std::string key = cacheKey(function, args, dynamicDims, allDynamic);
  if (loadCached(dir, key, function, out))
    return true;
  std::string object, manifest;
  if (!compileObject({fn}, object, manifest, error))
    return false;
  storeCached(dir, key, object, manifest);
  std::vector<std::pair<std::string, rt::VariantCode>> variants;
  if (!loadObjectVariants(object, manifest, variants, error) ||
      variants.empty())
    return false;
  out = std::move(variants[0].second);
  return true;
}

namespace {

uint64_t fnv1a(const std::string &data, uint64_t h = 1469598103934665603ULL) {
  for (unsigned char c : data) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return h;
}

/// Identifies this build of the compiler: the file holding the backend
/// (path, size, modification time). A rebuilt compiler — new code
/// generation under the same version number — must not load objects the
/// old one cached.
std::string compilerBuildId() {
  static const std::string id = [] {
    Dl_info info;
    struct stat st;
    if (dladdr(reinterpret_cast<void *>(&compileObject), &info) &&
        info.dli_fname && ::stat(info.dli_fname, &st) == 0)
      return std::string(info.dli_fname) + " " + std::to_string(st.st_size) +
             " " + std::to_string(st.st_mtim.tv_sec) + "." +
             std::to_string(st.st_mtim.tv_nsec);
    return std::string("unknown build");
  }();
  return id;
}

std::string hex(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

bool readFile(const std::string &path, std::string &out) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return false;
  std::ostringstream buf;
  buf << in.rdbuf();
  out = buf.str();
  return true;
}

/// Writes through a temporary name and renames, so readers never see a
/// partial file.
bool writeFileAtomically(const std::string &path, const std::string &data) {
  std::string tmp = path + ".tmp" + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary);
    out.write(data.data(), static_cast<std::streamsize>(data.size()));
    if (!out)
      return false;
  }
  return std::rename(tmp.c_str(), path.c_str()) == 0;
}

} // namespace

std::string JitCompiler::cacheDirectory() {
  const char *env = std::getenv("TSL_CACHE_DIR");
  std::string dir;
  if (env && *env) {
    if (std::string(env) == "off")
      return {};
    dir = env;
  } else if (const char *home = std::getenv("HOME")) {
    dir = std::string(home) + "/.cache/tsl";
  } else {
    return {};
  }
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  return ec ? std::string() : dir;
}

std::string JitCompiler::cacheKey(const std::string &function,
                                  const std::vector<rt::CallArg> &args,
                                  const std::set<std::string> &dynamicDims,
                                  bool allDynamic) {
  // Everything the compiled code depends on: the compiler, the target, every
  // source file loaded (imports included), and the compile request.
  std::string text =
      "tsl 0.1.0 cache 1\n" + compilerBuildId() + "\n" + hostTargetId() + "\n";
  for (uint32_t f = 1; f <= sm_.fileCount(); ++f)
    text += sm_.name(f) + "\n" + std::string(sm_.text(f)) + "\n";
  text += function + "\n";
  for (const rt::CallArg &a : args) {
    text += a.isInt ? "int " + std::to_string(a.intValue)
                    : "tensor " + std::to_string(a.dtype);
    for (int64_t d : a.shape)
      text += " " + std::to_string(d);
    text += "\n";
  }
  for (const std::string &d : dynamicDims)
    text += "dynamic " + d + "\n";
  text += allDynamic ? "all-dynamic\n" : "";
  return hex(fnv1a(text)) + hex(fnv1a(text, 0x84222325cbf29ce4ULL));
}

bool JitCompiler::loadCached(const std::string &dir, const std::string &key,
                             const std::string &function,
                             rt::VariantCode &out) {
  std::string object, manifest, sum;
  std::string base = dir + "/" + key;
  if (!readFile(base + ".o", object) ||
      !readFile(base + ".manifest", manifest) || !readFile(base + ".sum", sum))
    return false;
  if (sum != hex(fnv1a(key + manifest + object))) {
    std::fprintf(stderr,
                 "[tsl] compile cache: entry %s is corrupt; rebuilding it\n",
                 key.c_str());
    return false;
  }
  std::vector<std::pair<std::string, rt::VariantCode>> variants;
  std::string error;
  if (!loadObjectVariants(object, manifest, variants, error) ||
      variants.empty() || variants[0].first != function) {
    std::fprintf(
        stderr,
        "[tsl] compile cache: entry %s does not load (%s); rebuilding it\n",
        key.c_str(), error.c_str());
    return false;
  }
  out = std::move(variants[0].second);
  out.fromCache = true;
  return true;
}

void JitCompiler::storeCached(const std::string &dir, const std::string &key,
                              const std::string &object,
                              const std::string &manifest) {
  std::string base = dir + "/" + key;
  // The checksum goes last: an entry without a matching one is ignored.
  if (writeFileAtomically(base + ".o", object) &&
      writeFileAtomically(base + ".manifest", manifest))
    writeFileAtomically(base + ".sum", hex(fnv1a(key + manifest + object)));
}

} // namespace tsl
