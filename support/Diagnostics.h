#pragma once
/// \file Clang-style diagnostics: `file:line:col: error: message`, the source
/// line, a caret under the range, notes and a suggested fix; or one JSON
/// object per diagnostic.

#include "support/Error.h"
#include "support/SourceManager.h"

#include <iosfwd>
#include <string>
#include <vector>

namespace tsl {

enum class Severity { Error, Warning, Note };

/// A secondary message attached to a diagnostic.
struct DiagNote {
  SourceRange range;
  std::string message;
};

/// One diagnostic. Messages are lower case without a final period.
struct Diagnostic {
  Severity severity = Severity::Error;
  /// What kind of error it is (Syntax from the parser, Shape from size
  /// rules, Io for unreadable files; Type otherwise, which report() makes
  /// Unsupported for a message starting "not supported"). Not rendered; callers
  /// that turn diagnostics into an Error (the JIT) take the kind from the
  /// first error. Warnings and notes ignore it.
  ErrorKind kind = ErrorKind::Type;
  SourceRange range;
  std::string message;
  std::vector<DiagNote> notes;
  /// A suggested fix, rendered as `note: fix: ...` (empty when none).
  std::string fix;
};

/// Collects diagnostics and renders them as they are reported. Rendering
/// stops after `maxErrors` errors (a final line says how many were dropped)
/// so garbage input cannot flood the output.
class DiagnosticEngine {
public:
  DiagnosticEngine(const SourceManager &sm, std::ostream &out);

  /// Render each diagnostic as a single-line JSON object instead of text.
  void setJson(bool json) { json_ = json; }
  void setMaxErrors(unsigned n) { maxErrors_ = n; }

  /// Reports a diagnostic: renders it at once (unless past the error limit)
  /// and keeps a copy (the first 10,000) for diagnostics().
  void report(Diagnostic diag);
  /// Reports an error of kind Type at \p range with an optional fix.
  void error(SourceRange range, std::string message, std::string fix = {});
  /// Reports an error of kind \p kind at \p range with an optional fix.
  void error(ErrorKind kind, SourceRange range, std::string message,
             std::string fix = {});
  /// Reports a warning at \p range.
  void warning(SourceRange range, std::string message);

  /// The first error reported since construction or reset(), or null
  /// (also null when it was not kept: past the first 10,000 diagnostics).
  const Diagnostic *firstError() const;

  unsigned errorCount() const { return errors_; }
  unsigned warningCount() const { return warnings_; }
  bool hasErrors() const { return errors_ != 0; }
  /// Every diagnostic reported so far (for tests and tools).
  const std::vector<Diagnostic> &diagnostics() const { return all_; }

  /// Prints "N errors were not shown" if the limit was hit.
  void finish();

  /// Forgets every diagnostic and count (not the settings): an engine that
  /// outlives one compilation (the JIT's, per module) starts each one
  /// afresh, so the error limit and memory are per compilation.
  void reset() {
    errors_ = warnings_ = suppressed_ = 0;
    all_.clear();
  }

  const SourceManager &sources() const { return sm_; }

  /// Renders one diagnostic as text (without sending it anywhere).
  std::string renderText(const Diagnostic &diag) const;
  /// Renders one diagnostic as a JSON object on one line.
  std::string renderJson(const Diagnostic &diag) const;

private:
  void renderLocation(std::string &out, Severity sev, SourceRange range,
                      const std::string &message) const;
  /// Whether a diagnostic at \p range shows its source line: not when the
  /// file's text is hidden (it is not TSL) or the line around the range is
  /// not valid UTF-8.
  bool showsLine(SourceRange range) const;
  const SourceManager &sm_;
  std::ostream &out_;
  bool json_ = false;
  unsigned maxErrors_ = 50;
  unsigned errors_ = 0;
  unsigned warnings_ = 0;
  unsigned suppressed_ = 0;
  std::vector<Diagnostic> all_;
};

/// Escapes a string for a JSON string literal (without the quotes).
std::string jsonEscape(std::string_view text);

} // namespace tsl
