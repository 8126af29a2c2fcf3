#include "frontend/ModuleLoader.h"

#include "frontend/Parser.h"

#include <cstdlib>
#include <filesystem>

#ifndef TSL_DEFAULT_STDLIB_DIR
#define TSL_DEFAULT_STDLIB_DIR "stdlib"
#endif

namespace tsl {

namespace fs = std::filesystem;

ModuleLoader::ModuleLoader(SourceManager &sm, DiagnosticEngine &diags)
    : sm_(sm), diags_(diags) {
  const char *env = std::getenv("TSL_STDLIB_PATH");
  stdlibDir_ = env && *env ? env : TSL_DEFAULT_STDLIB_DIR;
}

static std::string canonical(const std::string &path) {
  std::error_code ec;
  fs::path p = fs::weakly_canonical(fs::path(path), ec);
  return ec ? path : p.string();
}

/// The directory holding \p file ("." for a bare name or a buffer name
/// such as "<repl>").
static std::string dirOf(const std::string &file) {
  fs::path dir = fs::path(file).parent_path();
  return dir.empty() ? "." : dir.string();
}

const LoadedModule *ModuleLoader::load(const std::string &path) {
  if (rootDir_.empty())
    rootDir_ = dirOf(path);
  if (failed_.count(canonical(path)))
    return nullptr; // reported when it failed
  std::string error;
  uint32_t file = sm_.findFile(path);
  if (!file)
    file = sm_.addFile(path, error);
  if (!file) {
    diags_.error(ErrorKind::Io, SourceRange(), error);
    failed_.insert(canonical(path));
    return nullptr;
  }
  return loadFile(file, SourceRange());
}

const LoadedModule *ModuleLoader::loadText(const std::string &name,
                                           std::string text) {
  if (rootDir_.empty())
    rootDir_ = dirOf(name);
  uint32_t file = sm_.addBuffer(name, std::move(text));
  return loadFile(file, SourceRange());
}

bool ModuleLoader::indexNames(LoadedModule &m) {
  std::error_code ec;
  for (std::filesystem::directory_iterator it(stdlibDir_, ec), end;
       !ec && it != end; it.increment(ec))
    if (it->path().extension() == ".tsl")
      m.stdlibModules.push_back(it->path().stem().string());
  std::sort(m.stdlibModules.begin(), m.stdlibModules.end());
  bool ok = true;
  for (const ast::FnDecl &f : m.ast->fns) {
    auto [it, inserted] = m.fns.emplace(f.name, &f);
    if (!inserted) {
      Diagnostic d;
      d.range = f.nameRange;
      d.message = "function '" + f.name + "' is defined twice";
      d.notes.push_back(
          {it->second->nameRange, "the first definition is here"});
      diags_.report(std::move(d));
      ok = false;
    }
  }
  for (const ast::DimDecl &dim : m.ast->dims) {
    auto [it, inserted] = m.dims.emplace(dim.name, &dim);
    if (!inserted) {
      Diagnostic d;
      d.range = dim.nameRange;
      d.message = "dim '" + dim.name + "' is declared twice";
      d.notes.push_back(
          {it->second->nameRange, "the first declaration is here"});
      diags_.report(std::move(d));
      ok = false;
    }
  }
  return ok;
}

const LoadedModule *ModuleLoader::loadFile(uint32_t file,
                                           SourceRange importedFrom) {
  std::string key = canonical(sm_.name(file));
  auto found = modules_.find(key);
  if (found != modules_.end())
    return found->second.get();
  if (failed_.count(key))
    return nullptr; // its errors were reported when it failed
  const LoadedModule *m = parseAndIndex(file, key, importedFrom);
  if (!m)
    failed_.insert(key);
  return m;
}

const LoadedModule *ModuleLoader::parseAndIndex(uint32_t file,
                                                const std::string &key,
                                                SourceRange importedFrom) {
  auto module = std::make_unique<LoadedModule>();
  module->path = sm_.name(file);
  module->ast = parseSource(sm_, file, diags_);
  if (!module->ast) {
    if (importedFrom.isValid()) {
      Diagnostic d;
      d.severity = Severity::Note;
      d.range = importedFrom;
      d.message = "the module with the error is imported here";
      diags_.report(std::move(d));
    }
    return nullptr;
  }
  if (!indexNames(*module))
    return nullptr;
  loading_.push_back(key);
  bool ok = true;
  for (const ast::ImportDecl &imp : module->ast->imports) {
    if (module->imports.count(imp.name)) {
      diags_.error(imp.range,
                   "module name '" + imp.name + "' is imported twice");
      ok = false;
      continue;
    }
    const LoadedModule *dep = resolveImport(*module, imp);
    if (!dep) {
      ok = false;
      continue;
    }
    module->imports[imp.name] = dep;
  }
  loading_.pop_back();
  if (!ok)
    return nullptr;
  LoadedModule *raw = module.get();
  modules_[key] = std::move(module);
  return raw;
}

/// Whether \p path lies under \p dir (both absolute and normal).
static bool isUnder(const std::string &path, std::string dir) {
  if (dir.empty())
    return false;
  if (dir.back() != '/')
    dir += '/';
  return path.compare(0, dir.size(), dir) == 0;
}

bool ModuleLoader::importAllowed(const LoadedModule &from,
                                 const ast::ImportDecl &imp,
                                 const std::string &path) {
  std::string what = "cannot import '" + imp.path + "': ";
  auto isTsl = [](const fs::path &p) { return p.extension() == ".tsl"; };
  if (!isTsl(imp.path)) {
    diags_.error(imp.range, what + "only .tsl files can be imported",
                 "import a TSL module (a file whose name ends in .tsl)");
    return false;
  }
  std::vector<std::string> roots = {dirOf(from.path), rootDir_, stdlibDir_};
  roots.insert(roots.end(), importDirs_.begin(), importDirs_.end());
  std::error_code ec;
  auto lexical = [&](const std::string &p) {
    fs::path abs = fs::absolute(p, ec);
    return (ec ? fs::path(p) : abs).lexically_normal().string();
  };
  // First by name alone (no file system access: no way to probe for files
  // outside), then by real path (a symbolic link must not lead outside).
  std::string target = lexical(path);
  bool allowed = false;
  for (const std::string &root : roots)
    allowed = allowed || (!root.empty() && isUnder(target, lexical(root)));
  bool viaLink = false;
  if (allowed) {
    fs::path real = fs::canonical(path, ec);
    if (!ec) { // a missing file is reported when it is read
      allowed = false;
      for (const std::string &root : roots) {
        std::error_code rootEc;
        fs::path realRoot = fs::canonical(root.empty() ? "." : root, rootEc);
        allowed = allowed || (!root.empty() && !rootEc &&
                              isUnder(real.string(), realRoot.string()));
      }
      allowed = allowed && isTsl(real);
      viaLink = !allowed;
    }
  }
  if (allowed)
    return true;
  Diagnostic d;
  d.range = imp.range;
  d.message = what + (viaLink ? "it is a link to a file outside the "
                                "directories imports may read"
                              : "it is outside the directories imports may "
                                "read");
  d.notes.push_back({SourceRange(), "imports may read .tsl files under the "
                                    "importing file's directory, the "
                                    "standard library and directories given "
                                    "with -I"});
  d.fix = viaLink ? "if this import is intended, add -I DIR for the "
                    "directory the link points into"
                  : "if this import is intended, add -I " +
                        fs::path(target).parent_path().string() +
                        " to the command line";
  diags_.report(std::move(d));
  return false;
}

const LoadedModule *ModuleLoader::resolveImport(const LoadedModule &from,
                                                const ast::ImportDecl &imp) {
  std::string path;
  if (imp.path.empty()) {
    path = (fs::path(stdlibDir_) / (imp.name + ".tsl")).string();
    if (!fs::exists(path)) {
      std::string available;
      std::error_code ec;
      for (auto &entry : fs::directory_iterator(stdlibDir_, ec))
        if (entry.path().extension() == ".tsl")
          available +=
              (available.empty() ? "" : ", ") + entry.path().stem().string();
      Diagnostic d;
      d.range = imp.range;
      d.message = "no standard-library module named '" + imp.name + "'";
      if (!available.empty())
        d.notes.push_back({SourceRange(), "available modules: " + available});
      d.fix = "to import a file, write 'import \"" + imp.name + ".tsl\" as " +
              imp.name + ";'";
      diags_.report(std::move(d));
      return nullptr;
    }
  } else {
    fs::path base = fs::path(from.path).parent_path();
    path = (base / imp.path).string();
    if (!importAllowed(from, imp, path))
      return nullptr;
  }
  std::string key = canonical(path);
  for (size_t i = 0; i < loading_.size(); ++i) {
    if (loading_[i] == key) {
      std::string cycle;
      for (size_t j = i; j < loading_.size(); ++j)
        cycle += fs::path(loading_[j]).filename().string() + " -> ";
      cycle += fs::path(key).filename().string();
      diags_.error(imp.range, "import cycle: " + cycle);
      return nullptr;
    }
  }
  if (loading_.size() > 64) {
    diags_.error(imp.range, "imports nested too deeply (more than 64 files)");
    return nullptr;
  }
  auto found = modules_.find(key);
  if (found != modules_.end())
    return found->second.get();
  std::string error;
  uint32_t file = sm_.findFile(path);
  if (!file)
    file = sm_.addFile(path, error);
  if (!file) {
    std::error_code ec;
    ErrorKind kind = fs::exists(path, ec) ? ErrorKind::Io : ErrorKind::NotFound;
    diags_.error(kind, imp.range,
                 "cannot import '" + (imp.path.empty() ? imp.name : imp.path) +
                     "': " + error);
    return nullptr;
  }
  return loadFile(file, imp.range);
}

} // namespace tsl
