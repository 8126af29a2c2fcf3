// Code loaded from disk: the compile cache's temporary files never follow a
// symlink planted at their name, its entries are never waited on (FIFOs) or
// read past the size they must have, and a cache path through another
// user's symlink is refused; and AOT modules are checked against their
// digest file before dlopen (a truncated, bit-flipped or digest-less module
// is TSL_INVALID_ARGUMENT naming the file; a bare name is the file in the
// current directory). Also SHA-256 against known digests.
#include "backend/cpu/CpuKernel.h"
#include "frontend/Elaborator.h"
#include "runtime/Manifest.h"
#include "runtime/Sha256.h"
#include "tools/driver/JitCompiler.h"
#include "tsl/tsl_c.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

using namespace tsl;
namespace fs = std::filesystem;

namespace {

std::string readAll(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

void writeAll(const std::string &path, const std::string &data) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << data;
}

/// A fresh directory under the test temp dir.
std::string freshDir(const std::string &name) {
  std::string dir = ::testing::TempDir() + "/load_safety_" + name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return fs::canonical(dir).string();
}

/// Sets TSL_CACHE_DIR for one scope (the unit tests run with it off).
struct CacheDirEnv {
  std::string old;
  bool had;
  explicit CacheDirEnv(const std::string &dir) {
    const char *v = std::getenv("TSL_CACHE_DIR");
    had = v != nullptr;
    old = v ? v : "";
    ::setenv("TSL_CACHE_DIR", dir.c_str(), 1);
  }
  ~CacheDirEnv() {
    if (had)
      ::setenv("TSL_CACHE_DIR", old.c_str(), 1);
    else
      ::unsetenv("TSL_CACHE_DIR");
  }
};

std::string writeModel(const std::string &dir) {
  std::string path = dir + "/model.tsl";
  writeAll(path, "fn f(x: f32[N]) -> f32[N] { return x * 2.0; }\n");
  return path;
}

bool compileF(const std::string &model, rt::VariantCode &out) {
  JitCompiler jit(model);
  rt::CallArg x;
  x.isInt = false;
  x.dtype = 6; // f32
  x.shape = {4};
  std::string error;
  bool ok = jit.compile("f", {x}, {}, false, out, error);
  EXPECT_TRUE(ok) << error;
  return ok;
}

TEST(Sha256, KnownDigests) {
  EXPECT_EQ(rt::sha256Hex(""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(rt::sha256Hex("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(
      rt::sha256Hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
      "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  rt::Sha256 h; // one million 'a', fed in uneven pieces
  std::string a(1000, 'a');
  for (int i = 0; i < 1001; ++i)
    h.update(a.data(), i == 1000 ? 1000 : 999);
  EXPECT_EQ(h.finishHex(),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

// A symlink planted at the name of an entry's temporary file (what the
// cache used to open with O_TRUNC, following links) is not followed: its
// target stays as it was, and the entry is written and loads.
TEST(CompileCache, PlantedSymlinkAtTemporaryNameIsNotFollowed) {
  std::string work = freshDir("symlink");
  std::string model = writeModel(work);
  // Learn the entry's key from a run in another directory.
  std::string probeDir = work + "/probe";
  std::string key;
  {
    CacheDirEnv env(probeDir);
    rt::VariantCode code;
    ASSERT_TRUE(compileF(model, code));
    for (const auto &e : fs::directory_iterator(probeDir))
      if (e.path().extension() == ".o")
        key = e.path().stem().string();
  }
  ASSERT_FALSE(key.empty());
  std::string cacheDir = work + "/cache";
  fs::create_directories(cacheDir);
  fs::permissions(cacheDir, fs::perms::owner_all);
  std::string victim = work + "/victim";
  writeAll(victim, "precious");
  std::string pid = std::to_string(::getpid());
  for (const char *ext : {".o", ".manifest", ".key", ".sum"})
    fs::create_symlink(victim, cacheDir + "/" + key + ext + ".tmp" + pid);
  CacheDirEnv env(cacheDir);
  rt::VariantCode first, second;
  ASSERT_TRUE(compileF(model, first));
  EXPECT_FALSE(first.fromCache);
  EXPECT_EQ(readAll(victim), "precious");
  EXPECT_TRUE(fs::is_symlink(cacheDir + "/" + key + ".o.tmp" + pid));
  for (const char *ext : {".o", ".manifest", ".key"}) {
    std::string entry = cacheDir + "/" + key + ext;
    EXPECT_TRUE(fs::is_regular_file(fs::symlink_status(entry))) << entry;
    EXPECT_EQ(fs::status(entry).permissions() & fs::perms::all,
              fs::perms::owner_read | fs::perms::owner_write)
        << entry;
  }
  ASSERT_TRUE(compileF(model, second));
  EXPECT_TRUE(second.fromCache);
}

// An entry file that is a symlink (to an entry of the same request
// elsewhere) is not opened: the entry is rebuilt, not loaded through it.
TEST(CompileCache, EntryFilesAreNotOpenedThroughSymlinks) {
  std::string work = freshDir("entry_symlink");
  std::string model = writeModel(work);
  std::string elsewhere = work + "/elsewhere", cacheDir = work + "/cache";
  std::string key;
  {
    CacheDirEnv env(elsewhere);
    rt::VariantCode code;
    ASSERT_TRUE(compileF(model, code));
    for (const auto &e : fs::directory_iterator(elsewhere))
      if (e.path().extension() == ".o")
        key = e.path().stem().string();
  }
  fs::create_directories(cacheDir);
  fs::permissions(cacheDir, fs::perms::owner_all);
  for (const char *ext : {".o", ".manifest", ".key"})
    fs::create_symlink(elsewhere + "/" + key + ext, cacheDir + "/" + key + ext);
  CacheDirEnv env(cacheDir);
  rt::VariantCode code;
  ::testing::internal::CaptureStderr();
  ASSERT_TRUE(compileF(model, code));
  std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_FALSE(code.fromCache);
  EXPECT_NE(err.find("is not used (" + key + ".key: "), std::string::npos)
      << err;
  // Rebuilt as regular files in place of the links.
  EXPECT_TRUE(
      fs::is_regular_file(fs::symlink_status(cacheDir + "/" + key + ".o")));
}

/// Compiles f with the cache in \p dir and returns its entry's key (the
/// stem of its `.o` file).
std::string probeEntry(const std::string &model, const std::string &dir) {
  CacheDirEnv env(dir);
  rt::VariantCode code;
  EXPECT_TRUE(compileF(model, code));
  std::string key;
  for (const auto &e : fs::directory_iterator(dir))
    if (e.path().extension() == ".o")
      key = e.path().stem().string();
  EXPECT_FALSE(key.empty());
  return key;
}

/// The names of the per-kernel objects (`k*.kernel`) in \p dir.
std::vector<std::string> kernelFiles(const std::string &dir) {
  std::vector<std::string> names;
  for (const auto &e : fs::directory_iterator(dir))
    if (e.path().extension() == ".kernel")
      names.push_back(e.path().filename().string());
  return names;
}

/// Copies the files of cache directory \p from into a new 0700 \p to.
void copyCache(const std::string &from, const std::string &to) {
  fs::create_directories(to);
  fs::permissions(to, fs::perms::owner_all);
  for (const auto &e : fs::directory_iterator(from))
    fs::copy_file(e.path(), to + "/" + e.path().filename().string());
}

/// How many times \p needle occurs in \p text.
size_t occurrences(const std::string &text, const std::string &needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos;
       at = text.find(needle, at + 1))
    ++n;
  return n;
}

// FIFOs planted as entry files (the key file; the object and every kernel
// object of an otherwise valid entry) are refused, never waited on: they
// were opened without O_NONBLOCK, and open(2) of a FIFO waits for a writer
// that never comes. (alarm() turns a hang into a failure.)
TEST(CompileCache, FifoEntriesAreRefusedNotWaitedOn) {
  std::string work = freshDir("fifo");
  std::string model = writeModel(work);
  std::string key = probeEntry(model, work + "/probe");
  std::vector<std::string> kernels = kernelFiles(work + "/probe");
  ASSERT_FALSE(kernels.empty());
  std::string keyFifo = work + "/key-fifo", objectFifo = work + "/object-fifo";
  copyCache(work + "/probe", keyFifo);
  copyCache(work + "/probe", objectFifo);
  fs::remove(keyFifo + "/" + key + ".key");
  ASSERT_EQ(::mkfifo((keyFifo + "/" + key + ".key").c_str(), 0600), 0);
  fs::remove(objectFifo + "/" + key + ".o");
  ASSERT_EQ(::mkfifo((objectFifo + "/" + key + ".o").c_str(), 0600), 0);
  for (const std::string &k : kernels) {
    fs::remove(objectFifo + "/" + k);
    ASSERT_EQ(::mkfifo((objectFifo + "/" + k).c_str(), 0600), 0);
  }
  for (const std::string &dir : {keyFifo, objectFifo}) {
    SCOPED_TRACE(dir);
    CacheDirEnv env(dir);
    rt::VariantCode code;
    ::testing::internal::CaptureStderr();
    ::alarm(120);
    ASSERT_TRUE(compileF(model, code));
    ::alarm(0);
    std::string err = ::testing::internal::GetCapturedStderr();
    EXPECT_FALSE(code.fromCache);
    std::string file = key + (dir == keyFifo ? ".key" : ".o");
    EXPECT_NE(err.find("entry " + key + " is not used (" + file +
                       " is not a regular file of the current user"),
              std::string::npos)
        << err;
    if (dir == objectFifo) {
      for (const std::string &k : kernels) {
        EXPECT_NE(err.find("kernel " + k + " is not used (" + k +
                           " is not a regular file"),
                  std::string::npos)
            << err;
      }
    }
    // Rebuilt in place, and used.
    EXPECT_TRUE(fs::is_regular_file(fs::symlink_status(dir + "/" + file)));
    rt::VariantCode again;
    ASSERT_TRUE(compileF(model, again));
    EXPECT_TRUE(again.fromCache);
  }
}

// An entry whose object file is not the size its manifest file records (a
// sparse 1 GiB file here) is refused on its size, before any of it is read,
// once; it was read whole (1 GiB) and only then found corrupt. A kernel
// object past the largest a cache entry can be is refused on its size
// too: it used to be read up to that size first.
TEST(CompileCache, OversizedEntriesAreRefusedBeforeTheyAreRead) {
  std::string work = freshDir("oversized");
  std::string model = writeModel(work);
  std::string key = probeEntry(model, work + "/probe");
  std::string cacheDir = work + "/cache";
  copyCache(work + "/probe", cacheDir);
  std::string object = cacheDir + "/" + key + ".o";
  size_t realBytes = fs::file_size(object);
  fs::resize_file(object, size_t(1) << 30);
  CacheDirEnv env(cacheDir);
  {
    rt::VariantCode code;
    ::testing::internal::CaptureStderr();
    ASSERT_TRUE(compileF(model, code));
    std::string err = ::testing::internal::GetCapturedStderr();
    EXPECT_FALSE(code.fromCache);
    std::string line = "[tsl] compile cache: entry " + key + " is not used (" +
                       key + ".o has 1073741824 bytes, its manifest says " +
                       std::to_string(realBytes) + "); rebuilding it\n";
    EXPECT_EQ(occurrences(err, line), 1u) << err;
    EXPECT_EQ(occurrences(err, "[tsl]"), 1u) << err;
    EXPECT_EQ(fs::file_size(object), realBytes); // rebuilt
  }
  // Kernel objects over the limit, with no entry to hit.
  for (const char *ext : {".o", ".manifest", ".key"})
    fs::remove(cacheDir + "/" + key + ext);
  std::vector<std::string> kernels = kernelFiles(cacheDir);
  ASSERT_FALSE(kernels.empty());
  for (const std::string &k : kernels)
    fs::resize_file(cacheDir + "/" + k, (size_t(1) << 30) + 1);
  rt::VariantCode code;
  ::testing::internal::CaptureStderr();
  ASSERT_TRUE(compileF(model, code));
  std::string err = ::testing::internal::GetCapturedStderr();
  for (const std::string &k : kernels)
    EXPECT_EQ(occurrences(err, "[tsl] compile cache: kernel " + k +
                                   " is not used (" + k +
                                   " has 1073741825 bytes, more than a cache "
                                   "entry can have (1073741824)); rebuilding "
                                   "it\n"),
              1u)
        << err;
  EXPECT_EQ(occurrences(err, "[tsl]"), kernels.size()) << err;
}

// A symlink on the way to TSL_CACHE_DIR (the directory itself, or a
// component above it) owned by a user other than the current one or root is
// refused, as ssh refuses such paths: whoever owns the link chooses where
// the cache is. It was followed, and the directory it led to used. One
// owned by the current user is followed.
TEST(CompileCache, SymlinksOfOtherUsersOnTheCachePathAreRefused) {
  if (::geteuid() != 0)
    GTEST_SKIP() << "giving a symlink to another user needs root";
  std::string work = freshDir("foreign_link");
  std::string model = writeModel(work);
  std::string real = work + "/real";
  fs::create_directories(real + "/cache");
  fs::permissions(real, fs::perms::owner_all);
  fs::permissions(real + "/cache", fs::perms::owner_all);
  fs::create_symlink(real + "/cache", work + "/link");
  fs::create_symlink(real, work + "/parent-link");
  for (const char *link : {"/link", "/parent-link"})
    ASSERT_EQ(::lchown((work + link).c_str(), 12345, 12345), 0);
  for (const std::string &dir : {work + "/link", work + "/parent-link/cache"}) {
    SCOPED_TRACE(dir);
    CacheDirEnv env(dir);
    rt::VariantCode code;
    ::testing::internal::CaptureStderr();
    ASSERT_TRUE(compileF(model, code));
    std::string err = ::testing::internal::GetCapturedStderr();
    std::string link = dir == work + "/link" ? dir : work + "/parent-link";
    EXPECT_EQ(err, "[tsl] compile cache: not using '" + dir + "': '" + link +
                       "' is a symlink owned by uid 12345, neither the "
                       "current user (uid 0) nor root; running uncached\n");
    EXPECT_TRUE(fs::is_empty(real + "/cache"));
  }
  // The same links owned by the current user are followed.
  ASSERT_EQ(::lchown((work + "/link").c_str(), 0, 0), 0);
  std::string dir = work + "/link";
  CacheDirEnv env(dir);
  rt::VariantCode code;
  ::testing::internal::CaptureStderr();
  ASSERT_TRUE(compileF(model, code));
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
  EXPECT_FALSE(fs::is_empty(real + "/cache"));
}

/// Builds f ahead of time into \p path (+ its digest file).
void buildModule(const std::string &path) {
  SourceManager sm;
  std::ostringstream sink;
  DiagnosticEngine diags(sm, sink);
  ModuleLoader loader(sm, diags);
  loader.setStdlibDir(std::string(TSL_SOURCE_DIR) + "/stdlib");
  const LoadedModule *m =
      loader.loadText("m.tsl", "fn f(x: f32[N]) -> f32[N] { return x * 2.0; }");
  ASSERT_TRUE(m) << sink.str();
  ElaborateOptions options;
  ExampleArg x;
  x.dtype = DType::F32;
  x.shape = {4};
  options.examples.emplace();
  (*options.examples)["x"] = x;
  Function fn;
  ASSERT_TRUE(elaborateFunction(*m, "f", options, diags, fn)) << sink.str();
  Expected<void> built = buildSharedLibrary({fn}, path);
  ASSERT_TRUE(built) << built.error().message;
}

struct AotModule : ::testing::Test {
  std::string dir, so;
  tsl_runtime *rt = nullptr;
  void SetUp() override {
    dir = freshDir("aot");
    so = dir + "/f.so";
    buildModule(so);
    ASSERT_TRUE(fs::exists(rt::moduleDigestPath(so)));
    ASSERT_EQ(tsl_runtime_create(nullptr, &rt), TSL_OK);
  }
  void TearDown() override { tsl_runtime_destroy(rt); }
  tsl_status load(const std::string &path) {
    tsl_module *m = nullptr;
    return tsl_module_load_aot(rt, path.c_str(), &m);
  }
  /// f(ones[4]) through the module at \p path.
  float callF(const std::string &path) {
    tsl_module *m = nullptr;
    tsl_function *f = nullptr;
    EXPECT_EQ(tsl_module_load_aot(rt, path.c_str(), &m), TSL_OK)
        << tsl_last_error();
    EXPECT_EQ(tsl_module_get_function(m, "f", &f), TSL_OK);
    float x[4] = {1, 1, 1, 1};
    int64_t shape[1] = {4};
    tsl_arg arg = {};
    arg.tensor.data = x;
    arg.tensor.device.device_type = 1;
    arg.tensor.ndim = 1;
    arg.tensor.dtype = {2, 32, 1};
    arg.tensor.shape = shape;
    tsl_tensor *out = nullptr;
    int32_t nout = 0;
    EXPECT_EQ(tsl_function_call(f, &arg, 1, &out, &nout), TSL_OK)
        << tsl_last_error();
    float r = static_cast<float *>(out[0].data)[0];
    tsl_outputs_free(out, nout);
    return r;
  }
};

TEST_F(AotModule, LoadsWithItsDigest) { EXPECT_EQ(callF(so), 2.0f); }

TEST_F(AotModule, TruncatedModuleIsAnErrorNamingTheFile) {
  std::string data = readAll(so);
  writeAll(so, data.substr(0, data.size() / 2));
  EXPECT_EQ(load(so), TSL_INVALID_ARGUMENT);
  EXPECT_EQ(std::string(tsl_last_error()),
            "'" + so + "' does not match its digest file '" + so +
                ".tslsum': the file has " + std::to_string(data.size() / 2) +
                " bytes, its digest file says " + std::to_string(data.size()) +
                " (truncated or corrupt)");
}

TEST_F(AotModule, BitFlipIsAnErrorNamingTheFile) {
  std::string data = readAll(so);
  data[data.size() / 3] ^= 0x10;
  writeAll(so, data);
  EXPECT_EQ(load(so), TSL_INVALID_ARGUMENT);
  EXPECT_EQ(std::string(tsl_last_error()),
            "'" + so + "' does not match its digest file '" + so +
                ".tslsum': its SHA-256 differs from its digest file's "
                "(corrupt)");
}

TEST_F(AotModule, MissingDigestIsAnError) {
  fs::remove(rt::moduleDigestPath(so));
  EXPECT_EQ(load(so), TSL_INVALID_ARGUMENT);
  EXPECT_NE(std::string(tsl_last_error())
                .find("'" + so + "' has no digest file '" + so + ".tslsum'"),
            std::string::npos)
      << tsl_last_error();
}

// A bare name is the file in the current directory, not a library of that
// name on the library path (here the system's libm).
TEST_F(AotModule, BareNameIsTheFileInTheCurrentDirectory) {
  fs::rename(so, dir + "/libm.so.6");
  fs::rename(rt::moduleDigestPath(so), dir + "/libm.so.6.tslsum");
  fs::path old = fs::current_path();
  fs::current_path(dir);
  float r = callF("libm.so.6");
  fs::current_path(old);
  EXPECT_EQ(r, 2.0f);
}

} // namespace

namespace {

// A FIFO where the module (or its digest file) should be: an error, never a
// hang in open(2).
TEST(AotModuleFifo, IsAnErrorNotAHang) {
  std::string dir =
      ::testing::TempDir() + "/aot_fifo_" + std::to_string(::getpid());
  fs::create_directories(dir);
  std::string so = dir + "/f.so";
  fs::remove(so);
  fs::remove(so + ".tslsum");
  ASSERT_EQ(::mkfifo(so.c_str(), 0600), 0);
  ASSERT_EQ(::mkfifo((so + ".tslsum").c_str(), 0600), 0);
  tsl_runtime *rt = nullptr;
  ASSERT_EQ(tsl_runtime_create(nullptr, &rt), TSL_OK);
  tsl_module *m = nullptr;
  EXPECT_EQ(tsl_module_load_aot(rt, so.c_str(), &m), TSL_INVALID_ARGUMENT);
  EXPECT_NE(std::string(tsl_last_error()).find("not a regular file"),
            std::string::npos)
      << tsl_last_error();
  tsl_runtime_destroy(rt);
  fs::remove_all(dir);
}

} // namespace
