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

/// Whether \p text is well-formed UTF-8 (no stray continuation byte,
/// truncated sequence, overlong form, surrogate or code point past U+10FFFF).
static bool isValidUtf8(std::string_view text) {
  for (size_t i = 0; i < text.size();) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    size_t n = c < 0x80         ? 0
               : (c >> 5) == 6  ? 1
               : (c >> 4) == 14 ? 2
               : (c >> 3) == 30 ? 3
                                : 4;
    if (n == 4 || i + n >= text.size() + (n == 0))
      return false;
    uint32_t cp = n == 0 ? c : c & (0x3f >> n);
    for (size_t k = 1; k <= n; ++k) {
      unsigned char d = static_cast<unsigned char>(text[i + k]);
      if ((d >> 6) != 2)
        return false;
      cp = (cp << 6) | (d & 0x3f);
    }
    static const uint32_t least[] = {0, 0x80, 0x800, 0x10000};
    if (cp < least[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
      return false;
    i += n + 1;
  }
  return true;
}

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

bool DiagnosticEngine::showsLine(SourceRange range) const {
  // Only text of a file that began as TSL (not hidden), and only valid
  // UTF-8 around the offending token (which is printed as '?' when it is
  // not text); else the location and the message, which names the
  // offending token, stand alone.
  std::string_view line = sm_.lineText(range.begin);
  size_t col = sm_.lineCol(range.begin).col - 1;
  // lineText() stops where the file's text is hidden (hideTextFrom): the
  // location is hidden when the line is cut before it.
  std::string_view text = sm_.text(range.begin.file);
  size_t start = range.begin.offset - col;
  size_t full = std::min(text.find('\n', start), text.size()) - start;
  if (full > 0 && text[start + full - 1] == '\r')
    --full;
  if (line.size() < full && col >= line.size())
    return false;
  size_t end = col + 1;
  if (range.end.isValid() && range.end.file == range.begin.file &&
      range.end.offset > range.begin.offset)
    end = col + (range.end.offset - range.begin.offset);
  col = std::min(col, line.size());
  end = std::min(std::max(end, col), line.size());
  return isValidUtf8(line.substr(0, col)) && isValidUtf8(line.substr(end));
}

void DiagnosticEngine::renderLocation(std::string &out, Severity sev,
                                      SourceRange range,
                                      const std::string &message) const {
  if (range.isValid())
    out += sm_.describe(range.begin) + ": ";
  out += severityName(sev);
  out += ": " + message + "\n";
  if (!range.isValid() || !showsLine(range))
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
  // "not supported: ..." says what TSL cannot do yet, not what the program
  // got wrong: callers (Python's TslError.kind) tell the two apart.
  if (diag.kind == ErrorKind::Type &&
      diag.message.compare(0, 13, "not supported") == 0)
    diag.kind = ErrorKind::Unsupported;
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
