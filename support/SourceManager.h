#pragma once
/// \file Source files, locations and ranges shared by every layer.

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace tsl {

/// A position in a source buffer: a file id (0 = no location) and a byte
/// offset into that file.
struct SourceLoc {
  uint32_t file = 0;
  uint32_t offset = 0;
  bool isValid() const { return file != 0; }
  bool operator==(const SourceLoc &) const = default;
};

/// A half-open byte range [begin, end) in one file. An empty range marks a
/// single position.
struct SourceRange {
  SourceLoc begin;
  SourceLoc end;
  SourceRange() = default;
  SourceRange(SourceLoc b, SourceLoc e) : begin(b), end(e) {}
  explicit SourceRange(SourceLoc at) : begin(at), end(at) {}
  bool isValid() const { return begin.isValid(); }
};

/// A 1-based line and column (columns count bytes).
struct LineCol {
  unsigned line = 0;
  unsigned col = 0;
};

/// Owns the text of every file the compiler reads so locations stay valid for
/// the whole compilation. Files are never removed.
class SourceManager {
public:
  SourceManager();
  ~SourceManager();
  SourceManager(const SourceManager &) = delete;
  SourceManager &operator=(const SourceManager &) = delete;

  /// Adds a buffer under a display name and returns its file id (>= 1).
  uint32_t addBuffer(std::string name, std::string contents);

  /// The largest source file addFile reads (64 MiB).
  static constexpr size_t kMaxFileBytes = size_t(64) << 20;

  /// Reads a regular file from disk. Returns 0 and sets \p error (lower case,
  /// naming the path) when it cannot be read: missing, unreadable, a
  /// directory, not a regular file (a device such as /dev/zero, a FIFO or a
  /// socket: the file is opened non-blocking so a FIFO cannot hang), or
  /// larger than kMaxFileBytes (checked while reading, not only from st_size).
  uint32_t addFile(const std::string &path, std::string &error);

  /// Hides the text of \p file from \p offset on: lineText() stops there.
  /// Set on a file that failed to lex as TSL (binary data, a file that is
  /// not source), so diagnostics never echo its content past the first bad
  /// token.
  void hideTextFrom(uint32_t file, size_t offset);

  /// How many files are loaded (ids are 1..fileCount()).
  uint32_t fileCount() const { return static_cast<uint32_t>(files_.size()); }
  /// The id of an already loaded file with this exact name, or 0.
  uint32_t findFile(const std::string &name) const;

  const std::string &name(uint32_t file) const;
  std::string_view text(uint32_t file) const;

  /// Line and column of a location; {0,0} for an invalid one.
  LineCol lineCol(SourceLoc loc) const;
  /// The full text of the line containing \p loc, without the newline.
  std::string_view lineText(SourceLoc loc) const;
  /// "file:line:col" for a location, "<unknown>" for an invalid one.
  std::string describe(SourceLoc loc) const;

  /// A location inside \p file at \p offset (clamped to the buffer size).
  SourceLoc locAt(uint32_t file, size_t offset) const;

private:
  struct File;
  std::vector<std::unique_ptr<File>> files_;
  const File *get(uint32_t file) const;
};

} // namespace tsl
