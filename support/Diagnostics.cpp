#include "support/Diagnostics.h"

#include <algorithm>
#include <ostream>

namespace tsl {

static const char *severityName(Severity s) {
  switch (s) {
  case Severity::Error:
    return "error";
  case Severity::Warning:
    return "warning";
  case Severity::Note:
    return "note";
  }
  return "error";
}

std::string jsonEscape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  static const char hex[] = "0123456789abcdef";
  for (unsigned char c : text) {
    switch (c) {
    case '"':
      out += "\\\"";
      break;
    case '\\':
      out += "\\\\";
      break;
    case '\n':
      out += "\\n";
      break;
    case '\t':
      out += "\\t";
      break;
    case '\r':
      out += "\\r";
      break;
    default:
      if (c < 0x20 || c >= 0x7f) {
        // Non-ASCII bytes are escaped byte-wise so the output is always
        // valid JSON even for invalid UTF-8 input.
        out += "\\u00";
        out += hex[c >> 4];
        out += hex[c & 15];
      } else {
        out += static_cast<char>(c);
      }
    }
  }
  return out;
}

DiagnosticEngine::DiagnosticEngine(const SourceManager &sm, std::ostream &out)
    : sm_(sm), out_(out) {}

/// Makes a source line printable: tabs become one space (so the caret lines
/// up) and control or non-ASCII bytes become '?'.
static std::string printableLine(std::string_view line) {
  std::string out(line);
  for (char &c : out) {
    unsigned char u = static_cast<unsigned char>(c);
    if (c == '\t')
      c = ' ';
    else if (u < 0x20 || u >= 0x7f)
      c = '?';
  }
  if (out.size() > 400)
    out = out.substr(0, 400) + "...";
  return out;
}

void DiagnosticEngine::renderLocation(std::string &out, Severity sev,
                                      SourceRange range,
                                      const std::string &message) const {
  if (range.isValid())
    out += sm_.describe(range.begin) + ": ";
  out += severityName(sev);
  out += ": " + message + "\n";
  if (!range.isValid())
    return;
  std::string line = printableLine(sm_.lineText(range.begin));
  LineCol begin = sm_.lineCol(range.begin);
  out += line + "\n";
  size_t col = begin.col - 1;
  if (col > line.size())
    col = line.size();
  size_t width = 1;
  if (range.end.isValid() && range.end.file == range.begin.file &&
      range.end.offset > range.begin.offset) {
    LineCol end = sm_.lineCol(range.end);
    size_t endCol = end.line == begin.line ? end.col - 1 : line.size();
    if (endCol > col)
      width = endCol - col;
  }
  width = std::min<size_t>(
      width, std::max<size_t>(line.size() - std::min(col, line.size()), 1));
  out += std::string(col, ' ') + "^";
  if (width > 1)
    out += std::string(width - 1, '~');
  out += "\n";
}

std::string DiagnosticEngine::renderText(const Diagnostic &diag) const {
  std::string out;
  renderLocation(out, diag.severity, diag.range, diag.message);
  for (const DiagNote &note : diag.notes)
    renderLocation(out, Severity::Note, note.range, note.message);
  if (!diag.fix.empty())
    renderLocation(out, Severity::Note, diag.range, "fix: " + diag.fix);
  return out;
}

static std::string jsonLocation(const SourceManager &sm, SourceRange range) {
  if (!range.isValid())
    return "null";
  LineCol lc = sm.lineCol(range.begin);
  LineCol end = sm.lineCol(range.end.isValid() ? range.end : range.begin);
  return "{\"file\": \"" + jsonEscape(sm.name(range.begin.file)) +
         "\", \"line\": " + std::to_string(lc.line) +
         ", \"col\": " + std::to_string(lc.col) +
         ", \"end_line\": " + std::to_string(end.line) +
         ", \"end_col\": " + std::to_string(end.col) + "}";
}

std::string DiagnosticEngine::renderJson(const Diagnostic &diag) const {
  std::string out = "{\"severity\": \"";
  out += severityName(diag.severity);
  out +=
      "\", \"message\": \"" + jsonEscape(diag.message) + "\", \"location\": ";
  out += jsonLocation(sm_, diag.range);
  out += ", \"notes\": [";
  for (size_t i = 0; i < diag.notes.size(); ++i) {
    if (i)
      out += ", ";
    out += "{\"message\": \"" + jsonEscape(diag.notes[i].message) +
           "\", \"location\": " + jsonLocation(sm_, diag.notes[i].range) + "}";
  }
  out += "], \"fix\": ";
  out += diag.fix.empty() ? "null" : "\"" + jsonEscape(diag.fix) + "\"";
  out += "}";
  return out;
}

void DiagnosticEngine::report(Diagnostic diag) {
  if (diag.severity == Severity::Error)
    ++errors_;
  else if (diag.severity == Severity::Warning)
    ++warnings_;
  if (errors_ > maxErrors_) {
    ++suppressed_;
  } else {
    out_ << (json_ ? renderJson(diag) + "\n" : renderText(diag));
    out_.flush();
  }
  if (all_.size() < 10000)
    all_.push_back(std::move(diag));
}

void DiagnosticEngine::error(SourceRange range, std::string message,
                             std::string fix) {
  error(ErrorKind::Type, range, std::move(message), std::move(fix));
}

void DiagnosticEngine::error(ErrorKind kind, SourceRange range,
                             std::string message, std::string fix) {
  Diagnostic d;
  d.kind = kind;
  d.range = range;
  d.message = std::move(message);
  d.fix = std::move(fix);
  report(std::move(d));
}

const Diagnostic *DiagnosticEngine::firstError() const {
  for (const Diagnostic &d : all_)
    if (d.severity == Severity::Error)
      return &d;
  return nullptr;
}

void DiagnosticEngine::warning(SourceRange range, std::string message) {
  Diagnostic d;
  d.severity = Severity::Warning;
  d.range = range;
  d.message = std::move(message);
  report(std::move(d));
}

void DiagnosticEngine::finish() {
  if (suppressed_ == 0)
    return;
  if (json_)
    out_ << "{\"severity\": \"note\", \"message\": \"" << suppressed_
         << " more errors not shown\", \"location\": null, \"notes\": [], "
            "\"fix\": null}\n";
  else
    out_ << "note: " << suppressed_ << " more errors not shown\n";
  suppressed_ = 0;
}

} // namespace tsl
