#include "tools/driver/JitCompiler.h"
#include "support/FileRead.h"

#include "backend/cpu/CpuKernel.h"
#include "backend/cpu/CpuTarget.h"
#include "backend/nvptx/GpuKernel.h"
#include "backend/nvptx/NvptxTarget.h"
#include "frontend/Elaborator.h"
#include "ir/Verifier.h"

#include "runtime/Manifest.h"
#include "runtime/Sha256.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <fcntl.h>
#include <optional>
#include <set>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace tsl {

namespace {
/// The per-kernel object cache in the cache directory \p dir (kept open by
/// the caller while the cache is used).
std::unique_ptr<KernelObjectCache> directoryKernelCache(int dir,
                                                        std::string dirPath);
} // namespace

JitCompiler::JitCompiler(std::string path)
    : path_(std::move(path)), diags_(sm_, diagnosticText_),
      loader_(sm_, diags_) {}

bool JitCompiler::ensureLoaded(std::string &error) {
  if (!module_)
    module_ = text_ ? loader_.loadText(path_, *text_) : loader_.load(path_);
  if (!module_) {
    error = diagnosticText_.str();
    return false;
  }
  return true;
}

Error JitCompiler::diagnosticsError(bool trim) const {
  Error e;
  const Diagnostic *first = diags_.firstError();
  e.kind = first ? first->kind : ErrorKind::Internal;
  if (first && first->range.isValid())
    e.location = sm_.describe(first->range.begin);
  e.message = diagnosticText_.str();
  while (trim && !e.message.empty() && e.message.back() == '\n')
    e.message.pop_back();
  return e;
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

bool JitCompiler::check(Error &error) {
  std::string text;
  if (check(text))
    return true;
  std::lock_guard<std::mutex> lock(mutex_);
  error = diagnosticsError(/*trim=*/true);
  return false;
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

std::vector<std::string> JitCompiler::functionNames() {
  std::lock_guard<std::mutex> lock(mutex_);
  std::string error;
  std::vector<std::string> names;
  if (ensureLoaded(error))
    for (const auto &entry : module_->fns)
      names.push_back(entry.first);
  return names;
}

Expected<void> JitCompiler::compileDispatcher(
    const std::vector<const rt::VariantCode *> &variants, rt::Dispatcher &out) {
  return tsl::compileDispatcher(variants, out);
}

std::optional<size_t> JitCompiler::arity(const std::string &function,
                                         Error &error) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::string text;
  if (!ensureLoaded(text)) {
    error = diagnosticsError(/*trim=*/false);
    return std::nullopt;
  }
  auto it = module_->fns.find(function);
  if (it == module_->fns.end()) {
    error = {ErrorKind::NotFound,
             "no function named '" + function + "' in " + path_,
             {}};
    return std::nullopt;
  }
  return it->second->params.size();
}

bool JitCompiler::compile(const std::string &function,
                          const std::vector<rt::CallArg> &args,
                          const std::set<std::string> &dynamicDims,
                          bool allDynamic, rt::VariantCode &out, Error &error) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::string text;
  if (!ensureLoaded(text)) {
    error = diagnosticsError(/*trim=*/false);
    return false;
  }
  auto it = module_->fns.find(function);
  if (it == module_->fns.end()) {
    error = {ErrorKind::NotFound,
             "no function named '" + function + "' in " + path_,
             {}};
    return false;
  }
  const ast::FnDecl &decl = *it->second;
  if (args.size() != decl.params.size()) {
    error = {ErrorKind::InvalidArgument,
             "'" + function + "' takes " + std::to_string(decl.params.size()) +
                 " arguments, got " + std::to_string(args.size()),
             {}};
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
    if (args[i].donated)
      options.donated.insert(decl.params[i].name);
  }
  options.forceDynamic = dynamicDims;
  options.allDynamic = allDynamic;
  options.pipeline = (device_ ? nvptxTarget() : cpuTarget()).pipelineOptions();
  diagnosticText_.str("");
  diags_.reset(); // the 51st failed compile of a module still has a message
  Function fn;
  if (!elaborateFunction(*module_, function, options, diags_, fn)) {
    error = diagnosticsError(/*trim=*/true);
    return false;
  }
  if (Expected<void> verified = verifyFunction(fn); !verified) {
    error = {
        ErrorKind::Internal, "internal error: " + verified.error().message, {}};
    return false;
  }
  // The backend's error has its kind (an op the target cannot compile:
  // Unsupported); an attribute it misread was noted as an internal error,
  // the root cause of whatever failed after it.
  if (Expected<void> compiled =
          compileVariant(fn, dynamicDims, allDynamic, function, args, out);
      !compiled) {
    std::optional<Error> internal = takeInternalError();
    error = internal ? *internal : compiled.error();
    return false;
  }
  if (std::optional<Error> internal = takeInternalError()) {
    error = *internal;
    return false;
  }
  return true;
}

bool JitCompiler::compile(const std::string &function,
                          const std::vector<rt::CallArg> &args,
                          const std::set<std::string> &dynamicDims,
                          bool allDynamic, rt::VariantCode &out,
                          std::string &error) {
  Error e;
  if (compile(function, args, dynamicDims, allDynamic, out, e))
    return true;
  error = std::move(e.message);
  return false;
}

Expected<void> JitCompiler::compileVariant(
    const Function &fn, const std::set<std::string> &dynamicDims,
    bool allDynamic, const std::string &function,
    const std::vector<rt::CallArg> &args, rt::VariantCode &out) {
  if (device_)
    return compileGpuVariant(fn, device_, out);
  std::string dirPath;
  int dir = openCacheDirectory(dirPath);
  if (dir < 0)
    return CpuKernel::compileVariant(fn, out);
  // The on-disk cache: a hit loads the object compiled by an earlier
  // process; a missing, corrupt or mismatched entry is (re)built.
  std::string request = cacheRequest(function, args, dynamicDims, allDynamic);
  std::string key = rt::sha256Hex(request).substr(0, 32);
  if (loadCached(dir, key, request, function, args, out)) {
    ::close(dir);
    return {};
  }
  // A miss still takes every kernel compiled before (by any function or
  // an earlier version of this source) from the per-kernel cache.
  std::vector<std::string> objects;
  std::string manifest;
  Expected<void> compiled = compileObject(
      {fn}, objects, manifest, directoryKernelCache(dir, dirPath).get());
  if (!compiled) {
    ::close(dir);
    return compiled;
  }
  storeCached(dir, dirPath, key, request, packObjects(objects), manifest);
  ::close(dir);
  std::vector<std::pair<std::string, rt::VariantCode>> variants;
  if (Expected<void> loaded = loadObjectVariants(objects, manifest, variants);
      !loaded)
    return loaded;
  if (variants.empty())
    return makeError(ErrorKind::Internal,
                     "internal error: the compiled object has no variant");
  out = std::move(variants[0].second);
  return {};
}

namespace {

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

/// Prints \p message (one line) once per process for each \p what: a
/// directory that is refused or cannot be written warns once, not per call.
void warnOnce(const std::string &what, const std::string &message) {
  static std::mutex mutex;
  static std::set<std::string> warned;
  std::lock_guard<std::mutex> lock(mutex);
  if (warned.insert(what).second)
    std::fprintf(stderr, "[tsl] compile cache: %s\n", message.c_str());
}

std::string errnoText(int err) { return std::strerror(err); }

/// Why a directory is not safe to load code from, or "" if it is: it must
/// be owned by the current user and writable by no one else (as ssh asks of
/// ~/.ssh).
std::string unsafeDirectoryReason(const struct stat &st) {
  if (!S_ISDIR(st.st_mode))
    return "it is not a directory";
  if (st.st_uid != ::geteuid())
    return "it is owned by uid " + std::to_string(st.st_uid) +
           ", not by the current user (uid " + std::to_string(::geteuid()) +
           ")";
  if (st.st_mode & (S_IWGRP | S_IWOTH)) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o",
                  static_cast<unsigned>(st.st_mode & 07777));
    return std::string("it is writable by group or others (mode ") + mode + ")";
  }
  return "";
}

/// Why the symlinks met in resolving \p path cannot be trusted, or "" when
/// they can: each one (a component of the path, or of a link's target) must
/// be owned by the current user or root, since whoever owns a link chooses
/// where it leads (ssh refuses such paths to ~/.ssh files likewise).
/// Components that do not exist yet end the walk: they are created 0700.
std::string untrustedSymlinkReason(const std::string &path) {
  // Components still to resolve, the next one last.
  std::vector<std::string> todo;
  auto push = [&](const std::string &p) {
    std::vector<std::string> parts;
    for (size_t start = 0; start <= p.size();) {
      size_t slash = std::min(p.find('/', start), p.size());
      if (slash > start)
        parts.push_back(p.substr(start, slash - start));
      start = slash + 1;
    }
    todo.insert(todo.end(), parts.rbegin(), parts.rend());
  };
  std::string done = path.empty() || path[0] != '/' ? "." : "";
  push(path);
  for (int links = 0; !todo.empty();) {
    std::string part = todo.back();
    todo.pop_back();
    if (part == ".")
      continue;
    std::string next = done + "/" + part;
    struct stat st;
    if (::lstat(next.c_str(), &st) != 0)
      return "";
    if (!S_ISLNK(st.st_mode)) {
      done = next;
      continue;
    }
    if (st.st_uid != ::geteuid() && st.st_uid != 0)
      return "'" + next + "' is a symlink owned by uid " +
             std::to_string(st.st_uid) + ", neither the current user (uid " +
             std::to_string(::geteuid()) + ") nor root";
    char target[4096];
    ssize_t n = ::readlink(next.c_str(), target, sizeof target);
    if (n <= 0 || static_cast<size_t>(n) == sizeof target || ++links > 40)
      return "'" + next + "' is a symlink that cannot be followed";
    std::string to(target, static_cast<size_t>(n));
    if (to[0] == '/')
      done = "";
    push(to);
  }
  return "";
}

/// The largest cache entry file read (objects of one function's variant,
/// or one kernel's object).
constexpr size_t kMaxEntryBytes = size_t(1) << 30;
/// The largest `.manifest` file read (one variant's metadata: kilobytes).
constexpr size_t kMaxManifestBytes = size_t(16) << 20;

/// The size an entry file must have, checked with fstat before any of it is
/// read: exactly \p exact bytes when \p says (what gave that size: "its
/// manifest says") is set, else at most \p max.
struct EntrySize {
  size_t max = kMaxEntryBytes;
  size_t exact = 0;
  const char *says = nullptr;
};

/// How readEntryFile ended.
enum class EntryRead {
  Ok,
  Missing,   ///< no such file
  WrongSize, ///< not the size asked for (`problem` says so); nothing read
  Refused,   ///< not a file to load (`problem` says why)
};

/// Reads the entry file \p name of the cache directory \p dir, once: opened
/// without following symlinks and without waiting (O_NONBLOCK: a FIFO
/// planted as an entry opens at once, and is refused), it must be a
/// regular file of the current user that no one else can write, of the
/// size \p size asks for.
EntryRead readEntryFile(int dir, const std::string &name, std::string &out,
                        std::string &problem, EntrySize size = {}) {
  problem.clear();
  out.clear();
  int fd = ::openat(dir, name.c_str(),
                    O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    if (errno == ENOENT)
      return EntryRead::Missing;
    problem = name + ": " + errnoText(errno);
    return EntryRead::Refused;
  }
  struct stat st {};
  EntryRead result = EntryRead::Ok;
  if (::fstat(fd, &st) != 0) {
    problem = name + ": " + errnoText(errno);
    result = EntryRead::Refused;
  } else if (!S_ISREG(st.st_mode) || st.st_uid != ::geteuid() ||
             (st.st_mode & (S_IWGRP | S_IWOTH))) {
    problem = name + " is not a regular file of the current user that only "
                     "it can write";
    result = EntryRead::Refused;
  }
  size_t bytes = static_cast<size_t>(st.st_size);
  if (result == EntryRead::Ok && size.says && bytes != size.exact) {
    problem = name + " has " + std::to_string(bytes) + " bytes, " + size.says +
              " " + std::to_string(size.exact);
    result = EntryRead::WrongSize;
  } else if (result == EntryRead::Ok && bytes > size.max) {
    problem = name + " has " + std::to_string(bytes) +
              " bytes, more than a cache entry can have (" +
              std::to_string(size.max) + ")";
    result = EntryRead::WrongSize;
  }
  if (result == EntryRead::Ok) {
    // At most the size just checked: a file that grows meanwhile is refused.
    FileReadStatus read = readUpTo(fd, bytes, out, bytes);
    if (read != FileReadStatus::Ok) {
      problem = name + (read == FileReadStatus::TooLarge
                            ? ": it changed while it was read"
                            : ": " + errnoText(errno));
      result = EntryRead::Refused;
    }
  }
  ::close(fd);
  return result;
}

/// Writes \p name in \p dir through a new temporary file (O_EXCL |
/// O_NOFOLLOW, mode 0600: a file or symlink planted at the temporary name
/// is never opened) renamed into place, so readers never see a partial
/// file. 0, or the errno of the failure.
int writeEntryFile(int dir, const std::string &name, const std::string &data) {
  std::string tmp;
  int fd = -1;
  for (int attempt = 0; fd < 0 && attempt < 100; ++attempt) {
    tmp = name + ".tmp" + std::to_string(::getpid());
    if (attempt)
      tmp += "-" + std::to_string(attempt);
    fd = ::openat(dir, tmp.c_str(),
                  O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0 && errno != EEXIST)
      return errno;
  }
  if (fd < 0)
    return EEXIST;
  size_t done = 0;
  int err = 0;
  while (done < data.size()) {
    ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      err = n < 0 ? errno : EIO;
      break;
    }
    done += static_cast<size_t>(n);
  }
  if (::close(fd) != 0 && !err)
    err = errno;
  if (!err && ::renameat(dir, tmp.c_str(), dir, name.c_str()) != 0)
    err = errno;
  if (err)
    ::unlinkat(dir, tmp.c_str(), 0);
  return err;
}

/// Kernel objects as files `k<digest>.kernel` of the cache directory, each
/// ending in the digest of what it was made for and of its bytes (a file
/// that was cut short, altered or copied from another key is a miss).
class DirectoryKernelCache : public KernelObjectCache {
public:
  DirectoryKernelCache(int dir, std::string dirPath)
      : dir_(dir), dirPath_(std::move(dirPath)),
        context_("tsl kernel 1\ncompiler " + compilerBuildId() + "\ntarget " +
                 hostTargetId() + "\nkernel ") {}

  bool load(const std::string &key, std::string &object) override {
    std::string data, problem;
    if (readEntryFile(dir_, fileName(key), data, problem) != EntryRead::Ok ||
        data.size() < kDigestChars) {
      if (!problem.empty())
        std::fprintf(stderr,
                     "[tsl] compile cache: kernel %s is not used (%s); "
                     "rebuilding it\n",
                     fileName(key).c_str(), problem.c_str());
      return false;
    }
    object = data.substr(0, data.size() - kDigestChars);
    if (data.compare(object.size(), kDigestChars, digest(key, object)) != 0) {
      std::fprintf(stderr,
                   "[tsl] compile cache: kernel %s is corrupt; rebuilding it\n",
                   fileName(key).c_str());
      return false;
    }
    return true;
  }

  void store(const std::string &key, const std::string &object) override {
    if (int err =
            writeEntryFile(dir_, fileName(key), object + digest(key, object)))
      warnOnce("write " + dirPath_, "cannot write to '" + dirPath_ + "' (" +
                                        errnoText(err) +
                                        "); compiled code is not cached");
  }

private:
  static constexpr size_t kDigestChars = 64;
  /// What an object depends on besides its code: the compiler and target.
  std::string context(const std::string &key) const {
    return context_ + key + "\n";
  }
  std::string fileName(const std::string &key) const {
    return "k" + rt::sha256Hex(context(key)).substr(0, 32) + ".kernel";
  }
  std::string digest(const std::string &key, const std::string &object) const {
    return rt::sha256Hex(context(key) + object);
  }
  int dir_;
  std::string dirPath_;
  /// The compiler build and target, computed once per cache (hostTargetId
  /// asks LLVM about the host each time).
  std::string context_;
};

std::unique_ptr<KernelObjectCache> directoryKernelCache(int dir,
                                                        std::string dirPath) {
  return std::make_unique<DirectoryKernelCache>(dir, std::move(dirPath));
}

/// A DirectoryKernelCache that owns its directory descriptor.
class OwnedKernelCache : public KernelObjectCache {
public:
  OwnedKernelCache(int dir, std::string path)
      : dir_(dir), cache_(dir, std::move(path)) {}
  ~OwnedKernelCache() override { ::close(dir_); }
  bool load(const std::string &key, std::string &object) override {
    return cache_.load(key, object);
  }
  void store(const std::string &key, const std::string &object) override {
    cache_.store(key, object);
  }

private:
  int dir_;
  DirectoryKernelCache cache_;
};

/// The digest an entry's key file records: of the request, the manifest
/// and the object, each preceded by its length.
std::string entryDigest(const std::string &request, const std::string &manifest,
                        const std::string &object) {
  rt::Sha256 h;
  for (const std::string *part : {&request, &manifest, &object}) {
    std::string length = std::to_string(part->size()) + "\n";
    h.update(length);
    h.update(*part);
  }
  return h.finishHex();
}

/// An entry's `.manifest` file: the size of its `.o` file on a line of its
/// own ("object-bytes N"), checked before the object is read, then the
/// manifest.
std::string manifestFileText(size_t objectBytes, const std::string &manifest) {
  return "object-bytes " + std::to_string(objectBytes) + "\n" + manifest;
}

/// The object size and the manifest of a `.manifest` file's \p text;
/// nullopt when its first line is not an object size.
std::optional<size_t> splitManifestFile(const std::string &text,
                                        std::string &manifest) {
  const std::string prefix = "object-bytes ";
  size_t end = text.find('\n');
  if (text.compare(0, prefix.size(), prefix) != 0 || end == std::string::npos ||
      end == prefix.size() || end - prefix.size() > 18)
    return std::nullopt;
  size_t bytes = 0;
  for (size_t i = prefix.size(); i < end; ++i) {
    if (text[i] < '0' || text[i] > '9')
      return std::nullopt;
    bytes = bytes * 10 + static_cast<size_t>(text[i] - '0');
  }
  manifest = text.substr(end + 1);
  return bytes;
}

/// Whether the manifest of a cache entry describes what \p function was
/// compiled for with \p args: one variant of that function, with the entry
/// points compileObject names for it and the request's parameter kinds,
/// element types and ranks. "" if so, else what differs.
std::string manifestMismatch(const std::string &manifestText,
                             const std::string &function,
                             const std::vector<rt::CallArg> &args) {
  std::vector<rt::ManifestVariant> variants;
  std::string error;
  if (!rt::readManifest(manifestText, variants, error))
    return error;
  if (variants.size() != 1)
    return "it has " + std::to_string(variants.size()) + " variants, not 1";
  const rt::ManifestVariant &v = variants[0];
  std::string prefix = "tsl_" + function + "_v0_";
  if (v.function != function || v.kernelSymbol != prefix + "kernel" ||
      v.matchSymbol != prefix + "match" || v.shapesSymbol != prefix + "shapes")
    return "its manifest describes '" + v.function + "' (entry point " +
           v.kernelSymbol + "), this request '" + function + "' (entry point " +
           prefix + "kernel)";
  if (v.code.params.size() != args.size())
    return "its manifest has " + std::to_string(v.code.params.size()) +
           " parameters, the request " + std::to_string(args.size());
  for (size_t i = 0; i < args.size(); ++i) {
    const rt::ParamInfo &p = v.code.params[i];
    const rt::CallArg &a = args[i];
    if (p.isInt != a.isInt ||
        (!a.isInt && (p.dtype != a.dtype ||
                      p.rank != static_cast<int32_t>(a.shape.size()))))
      return "its manifest's parameter " + std::to_string(i) + " ('" + p.name +
             "') differs from the request's";
  }
  return "";
}

} // namespace

std::unique_ptr<KernelObjectCache> JitCompiler::openKernelCache() {
  std::string path;
  int dir = openCacheDirectory(path);
  if (dir < 0)
    return nullptr;
  return std::make_unique<OwnedKernelCache>(dir, std::move(path));
}

int JitCompiler::openCacheDirectory(std::string &path) {
  const char *env = std::getenv("TSL_CACHE_DIR");
  if (env && *env) {
    if (std::string(env) == "off")
      return -1;
    path = env;
  } else if (const char *home = std::getenv("HOME"); home && *home) {
    path = std::string(home) + "/.cache/tsl";
  } else {
    return -1;
  }
  if (std::string reason = untrustedSymlinkReason(path); !reason.empty()) {
    warnOnce("refused " + path,
             "not using '" + path + "': " + reason + "; running uncached");
    return -1;
  }
  // Create the missing components 0700, each checked like the directory
  // itself (a component someone else made first is refused below when it
  // is the cache directory; see docs/design.md for what is not checked).
  for (size_t pos = path.find('/', 1);; pos = path.find('/', pos + 1)) {
    std::string prefix = path.substr(0, pos);
    if (!prefix.empty() && prefix.back() != '/') {
      if (::mkdir(prefix.c_str(), 0700) == 0) {
        struct stat st;
        std::string reason = ::lstat(prefix.c_str(), &st) == 0
                                 ? unsafeDirectoryReason(st)
                                 : errnoText(errno);
        if (!reason.empty()) {
          warnOnce("refused " + path, "not using '" + path + "': '" + prefix +
                                          "', just created: " + reason +
                                          "; running uncached");
          return -1;
        }
      } else if (errno != EEXIST) {
        warnOnce("create " + path, "cannot create '" + prefix + "' (" +
                                       errnoText(errno) +
                                       "); running uncached");
        return -1;
      }
    }
    if (pos == std::string::npos)
      break;
  }
  // The directory itself, checked on the descriptor every entry is then
  // opened through (no path is looked up again).
  int fd =
      ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    warnOnce("create " + path, "cannot open '" + path + "' (" +
                                   errnoText(errno) + "); running uncached");
    return -1;
  }
  struct stat st;
  std::string reason =
      ::fstat(fd, &st) == 0 ? unsafeDirectoryReason(st) : errnoText(errno);
  if (!reason.empty()) {
    ::close(fd);
    warnOnce("refused " + path, "not using '" + path + "': " + reason +
                                    " (it must be owned by you and writable "
                                    "by no one else); running uncached");
    return -1;
  }
  return fd;
}

std::string JitCompiler::cacheRequest(const std::string &function,
                                      const std::vector<rt::CallArg> &args,
                                      const std::set<std::string> &dynamicDims,
                                      bool allDynamic) {
  // Everything the compiled code depends on: the compiler, the target, every
  // source file loaded (imports included), and the compile request.
  rt::Sha256 sources;
  for (uint32_t f = 1; f <= sm_.fileCount(); ++f) {
    std::string name = sm_.name(f);
    std::string_view text = sm_.text(f);
    std::string lengths =
        std::to_string(name.size()) + " " + std::to_string(text.size()) + "\n";
    sources.update(lengths);
    sources.update(name);
    sources.update(text);
  }
  std::string text = "tsl 0.1.0 cache 4\ncompiler " + compilerBuildId() +
                     "\ntarget " + hostTargetId() + "\nsources " +
                     sources.finishHex() + "\nfunction " + function + "\n";
  for (const rt::CallArg &a : args) {
    text += a.isInt ? "arg int " + std::to_string(a.intValue)
                    : "arg tensor " + std::to_string(a.dtype);
    for (int64_t d : a.shape)
      text += " " + std::to_string(d);
    text += a.donated ? " donated\n" : "\n";
  }
  for (const std::string &d : dynamicDims)
    text += "dynamic " + d + "\n";
  text += allDynamic ? "all-dynamic\n" : "";
  return text;
}

bool JitCompiler::loadCached(int dir, const std::string &key,
                             const std::string &request,
                             const std::string &function,
                             const std::vector<rt::CallArg> &args,
                             rt::VariantCode &out) {
  // The key file (the request and the digest) is written last: an entry
  // without one is incomplete. Every file's size is checked before it is
  // read: the key's is the request's plus the digest line, the object's is
  // what the manifest file's first line says.
  std::string keyFile, object, manifestFile, problem;
  auto ignore = [&](const std::string &why) {
    std::fprintf(stderr, "[tsl] compile cache: entry %s %s; rebuilding it\n",
                 key.c_str(), why.c_str());
    return false;
  };
  std::string digestLine = "digest ";
  size_t keyBytes = request.size() + digestLine.size() + 64 + 1;
  switch (readEntryFile(dir, key + ".key", keyFile, problem,
                        {keyBytes, keyBytes, "an entry of this request has"})) {
  case EntryRead::Ok:
    break;
  case EntryRead::Missing:
    return false;
  case EntryRead::WrongSize: // a key collision, or another request's file
    return ignore("was made for another request");
  case EntryRead::Refused:
    return ignore("is not used (" + problem + ")");
  }
  // The entry must have been made for this very request: a key collision or
  // a file copied from another entry is a miss.
  if (keyFile.compare(0, request.size(), request) != 0 ||
      keyFile.compare(request.size(), digestLine.size(), digestLine) != 0)
    return ignore("was made for another request");
  auto incomplete = [&] {
    return ignore("is not used (" +
                  (problem.empty() ? std::string("incomplete") : problem) +
                  ")");
  };
  if (readEntryFile(dir, key + ".manifest", manifestFile, problem,
                    {kMaxManifestBytes}) != EntryRead::Ok)
    return incomplete();
  std::string manifest;
  std::optional<size_t> objectBytes = splitManifestFile(manifestFile, manifest);
  if (!objectBytes)
    return ignore("is corrupt");
  if (readEntryFile(dir, key + ".o", object, problem,
                    {kMaxEntryBytes, *objectBytes, "its manifest says"}) !=
      EntryRead::Ok)
    return incomplete();
  if (keyFile.compare(request.size() + digestLine.size(), 64,
                      entryDigest(request, manifestFile, object)) != 0)
    return ignore("is corrupt");
  // Checked before any of its code is loaded.
  std::string mismatch = manifestMismatch(manifest, function, args);
  if (!mismatch.empty())
    return ignore("is not for this request: " + mismatch);
  std::vector<std::string> objects;
  if (!unpackObjects(object, objects))
    return ignore("is corrupt");
  std::vector<std::pair<std::string, rt::VariantCode>> variants;
  if (Expected<void> loaded = loadObjectVariants(objects, manifest, variants);
      !loaded)
    return ignore("does not load (" + loaded.error().message + ")");
  if (variants.empty() || variants[0].first != function)
    return ignore("does not load (it has no variant of '" + function + "')");
  out = std::move(variants[0].second);
  out.fromCache = true;
  return true;
}

void JitCompiler::storeCached(int dir, const std::string &dirPath,
                              const std::string &key,
                              const std::string &request,
                              const std::string &object,
                              const std::string &manifest) {
  // The key file goes last: an entry without a matching one is ignored.
  std::string manifestFile = manifestFileText(object.size(), manifest);
  int err = writeEntryFile(dir, key + ".o", object);
  if (!err)
    err = writeEntryFile(dir, key + ".manifest", manifestFile);
  if (!err)
    err = writeEntryFile(dir, key + ".key",
                         request + "digest " +
                             entryDigest(request, manifestFile, object) + "\n");
  if (err)
    warnOnce("write " + dirPath, "cannot write to '" + dirPath + "' (" +
                                     errnoText(err) +
                                     "); compiled code is not cached");
}

} // namespace tsl
