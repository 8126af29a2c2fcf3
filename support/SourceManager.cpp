#include "support/SourceManager.h"
#include "support/FileRead.h"

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace tsl {

struct SourceManager::File {
  std::string name;
  std::string text;
  std::vector<uint32_t> lineStarts;
  /// lineText() shows nothing at or past this offset (hideTextFrom).
  size_t shownEnd = SIZE_MAX;
};

SourceManager::SourceManager() = default;
SourceManager::~SourceManager() = default;

uint32_t SourceManager::addBuffer(std::string name, std::string contents) {
  auto file = std::make_unique<File>();
  file->name = std::move(name);
  file->text = std::move(contents);
  file->lineStarts.push_back(0);
  for (size_t i = 0; i < file->text.size(); ++i)
    if (file->text[i] == '\n')
      file->lineStarts.push_back(static_cast<uint32_t>(i + 1));
  files_.push_back(std::move(file));
  return static_cast<uint32_t>(files_.size());
}

uint32_t SourceManager::addFile(const std::string &path, std::string &error) {
  // open + fstat on the descriptor (no race between the check and the read);
  // O_NONBLOCK so opening a FIFO without a writer returns at once.
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    int err = errno;
    if (err == ENOENT || err == ENOTDIR)
      error = "no such file: '" + path + "'";
    else
      error = "cannot read '" + path + "': " + std::strerror(err);
    return 0;
  }
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    error = "cannot read '" + path + "': " + std::strerror(errno);
    return 0;
  }
  if (S_ISDIR(st.st_mode)) {
    error = "'" + path + "' is a directory, not a file";
    return 0;
  }
  if (!S_ISREG(st.st_mode)) {
    error = "'" + path +
            "' is not a regular file (a device, FIFO or socket cannot be a "
            "source file)";
    return 0;
  }
  std::string tooLarge = "'" + path + "' is larger than the " +
                         std::to_string(kMaxFileBytes >> 20) +
                         " MiB limit for source files";
  if (static_cast<uint64_t>(st.st_size) > kMaxFileBytes) {
    error = tooLarge;
    return 0;
  }
  std::string text;
  switch (readUpTo(fd, kMaxFileBytes, text, static_cast<size_t>(st.st_size))) {
  case FileReadStatus::Ok:
    break;
  case FileReadStatus::TooLarge: // it grew since fstat
    error = tooLarge;
    return 0;
  case FileReadStatus::Failed:
    error = "cannot read '" + path + "': " + std::strerror(errno);
    return 0;
  }
  return addBuffer(path, std::move(text));
}

void SourceManager::hideTextFrom(uint32_t file, size_t offset) {
  if (file == 0 || file > files_.size())
    return;
  File &f = *files_[file - 1];
  f.shownEnd = std::min<size_t>(f.shownEnd, offset);
}

uint32_t SourceManager::findFile(const std::string &name) const {
  for (size_t i = 0; i < files_.size(); ++i)
    if (files_[i]->name == name)
      return static_cast<uint32_t>(i + 1);
  return 0;
}

const SourceManager::File *SourceManager::get(uint32_t file) const {
  if (file == 0 || file > files_.size())
    return nullptr;
  return files_[file - 1].get();
}

const std::string &SourceManager::name(uint32_t file) const {
  static const std::string unknown = "<unknown>";
  const File *f = get(file);
  return f ? f->name : unknown;
}

std::string_view SourceManager::text(uint32_t file) const {
  const File *f = get(file);
  return f ? std::string_view(f->text) : std::string_view();
}

LineCol SourceManager::lineCol(SourceLoc loc) const {
  const File *f = get(loc.file);
  if (!f)
    return {};
  uint32_t offset = std::min<uint32_t>(loc.offset, f->text.size());
  auto it =
      std::upper_bound(f->lineStarts.begin(), f->lineStarts.end(), offset);
  size_t line = static_cast<size_t>(it - f->lineStarts.begin());
  return {static_cast<unsigned>(line),
          static_cast<unsigned>(offset - f->lineStarts[line - 1] + 1)};
}

std::string_view SourceManager::lineText(SourceLoc loc) const {
  const File *f = get(loc.file);
  if (!f)
    return {};
  LineCol lc = lineCol(loc);
  uint32_t start = f->lineStarts[lc.line - 1];
  size_t end = f->text.find('\n', start);
  if (end == std::string::npos)
    end = f->text.size();
  end = std::max<size_t>(start, std::min(end, f->shownEnd));
  std::string_view line(f->text.data() + start, end - start);
  if (!line.empty() && line.back() == '\r')
    line.remove_suffix(1);
  return line;
}

std::string SourceManager::describe(SourceLoc loc) const {
  if (!loc.isValid())
    return "<unknown>";
  LineCol lc = lineCol(loc);
  return name(loc.file) + ":" + std::to_string(lc.line) + ":" +
         std::to_string(lc.col);
}

SourceLoc SourceManager::locAt(uint32_t file, size_t offset) const {
  const File *f = get(file);
  if (!f)
    return {};
  return {file, static_cast<uint32_t>(std::min(offset, f->text.size()))};
}

} // namespace tsl
