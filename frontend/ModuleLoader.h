#pragma once
/// \file Loading a .tsl file and everything it imports: the standard
/// library (`import nn;` reads stdlib/nn.tsl) and files
/// (`import "x.tsl" as m;`, relative to the importing file), with cycle
/// detection and module-level checks (duplicate names, unknown imports).
///
/// Sources may be untrusted, so a file import must name a `.tsl` file whose
/// real path (symlinks resolved) lies under the importing file's directory,
/// the directory of the file the compilation started from, the standard
/// library, or a directory added with addImportDir (`tslc -I DIR`).

#include "frontend/Ast.h"
#include "support/Diagnostics.h"

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace tsl {

/// A parsed module with its name tables.
struct LoadedModule {
  std::unique_ptr<ast::Module> ast;
  std::string path;
  std::map<std::string, const ast::FnDecl *> fns;
  std::map<std::string, const ast::DimDecl *> dims;
  std::map<std::string, const LoadedModule *> imports;
  /// The standard library's modules (`import NAME;` finds them), for the
  /// hint on a name that is one of them but not imported.
  std::vector<std::string> stdlibModules;
};

/// Owns every loaded module for one compilation.
class ModuleLoader {
public:
  ModuleLoader(SourceManager &sm, DiagnosticEngine &diags);

  /// Where `import NAME;` looks for NAME.tsl. Defaults to $TSL_STDLIB_PATH,
  /// else the stdlib folder of the source tree this binary was built from.
  void setStdlibDir(std::string dir) { stdlibDir_ = std::move(dir); }
  const std::string &stdlibDir() const { return stdlibDir_; }
  /// Allows file imports from under \p dir (`tslc -I DIR`).
  void addImportDir(std::string dir) { importDirs_.push_back(std::move(dir)); }

  /// Loads a file and its imports. Returns null after diagnostics.
  const LoadedModule *load(const std::string &path);
  /// Loads source text given directly (the REPL, tests).
  const LoadedModule *loadText(const std::string &name, std::string text);

private:
  /// The module of \p file (loaded once; a file that failed is reported
  /// once, and null after that).
  const LoadedModule *loadFile(uint32_t file, SourceRange importedFrom);
  /// loadFile's work: parses \p file, indexes its names and loads its
  /// imports; \p key is its canonical path.
  const LoadedModule *parseAndIndex(uint32_t file, const std::string &key,
                                    SourceRange importedFrom);
  const LoadedModule *resolveImport(const LoadedModule &from,
                                    const ast::ImportDecl &imp);
  bool indexNames(LoadedModule &m);
  /// Checks that a file import may read \p path (see the file comment);
  /// reports the error at the import otherwise.
  bool importAllowed(const LoadedModule &from, const ast::ImportDecl &imp,
                     const std::string &path);

  SourceManager &sm_;
  DiagnosticEngine &diags_;
  std::string stdlibDir_;
  std::vector<std::string> importDirs_;
  std::string rootDir_; // the directory of the first file loaded
  std::map<std::string, std::unique_ptr<LoadedModule>> modules_;
  /// Canonical paths of files that failed to load (their errors were
  /// reported once: a runtime that asks again does not repeat them).
  std::set<std::string> failed_;
  std::vector<std::string> loading_; // the import chain, for cycle reports
};

} // namespace tsl
