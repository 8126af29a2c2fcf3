#pragma once
/// \file The state and commands of tsl-repl, as a library so tests reach
/// every command without a terminal.
///
/// The session keeps what was entered: module items (`dim`, `fn`,
/// `import`), symbolic declarations (`let x: f32[B, S];`) and statements
/// (`let y = ...;`, `check(...);`). Each new entry is checked by elaborating
/// a synthetic function made of all of them; diagnostics point into the
/// entry as typed (`<input>:1:col`) and a failed entry changes nothing.

#include "tools/driver/Driver.h"

#include <iosfwd>
#include <map>
#include <string>
#include <vector>

namespace tsl {

class ReplSession {
public:
  ReplSession(std::ostream &out, std::ostream &err);

  /// Runs one complete entry (a line, or several joined by newlines).
  /// Returns false when it failed (the session itself goes on).
  bool execute(const std::string &entry);
  /// True after `:quit`.
  bool quitRequested() const { return quit_; }
  /// True when \p text has an unclosed bracket, brace or string, so the
  /// entry continues on the next line.
  static bool needsMore(const std::string &text);
  /// Names the session defined, builtins (frontend's builtinNames()),
  /// keywords, element types and commands starting with \p prefix, sorted
  /// and without duplicates.
  std::vector<std::string> completions(const std::string &prefix) const;
  /// Where `import NAME;` looks (defaults like tslc's).
  void setStdlibDir(std::string dir) { stdlibDir_ = std::move(dir); }

  /// User text kept by the session, with where it was typed.
  struct Piece {
    std::string text;
    unsigned entry = 0;     ///< entry number the text came from
    size_t entryOffset = 0; ///< where the text starts in that entry
  };

private:
  bool command(const std::string &line);
  bool addItems(const std::string &text);
  bool declare(const std::string &name, const std::string &type);
  bool statement(const std::string &text,
                 const std::vector<std::string> &names);
  bool expression(const std::string &text, bool typeOnly);
  bool simplify(const std::string &text);
  bool prove(const std::string &text);
  bool facts();
  bool guards(const std::string &args);
  bool ir(const std::string &fn);
  bool load(const std::string &path);
  bool run(const std::string &args);
  void help();

  std::string itemsText() const;
  /// The name of the module itemsText() is loaded as.
  static constexpr const char *kSessionName = "<session>";
  /// Points \p fn's op locations (in itemsText()) at the entries the
  /// items came from: a loaded file's path, else `<input N>`.
  void locateInEntries(Function &fn) const;
  /// Parses `FN ARG=VALUE...` and elaborates FN of the session's items for
  /// those arguments (`:guards`, `:run`).
  bool compileCall(const std::string &argsText, bool withData,
                   SourceManager &sm, DiagnosticEngine &diags,
                   std::vector<ArgSpec> &args, Function &fn);

  std::ostream &out_;
  std::ostream &err_;
  std::string stdlibDir_;
  std::vector<Piece> items_;
  std::vector<std::pair<std::string, Piece>> decls_; ///< name, type text
  std::vector<std::string> entries_;                 ///< every entry as typed
  /// Per entry: the path of a file `:load` read, else "" (`<input N>`).
  std::vector<std::string> entryNames_;
  /// The session's dims: name -> declaration text without blanks (a
  /// repeated identical declaration is dropped, see addItems).
  std::map<std::string, std::string> dimTexts_;
  std::vector<Piece> stmts_;
  std::vector<std::string> boundNames_;
  unsigned entry_ = 0;
  bool quit_ = false;
};

} // namespace tsl
