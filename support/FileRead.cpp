#include "support/FileRead.h"

#include <algorithm>
#include <cerrno>
#include <unistd.h>

namespace tsl {

FileReadStatus readUpTo(int fd, size_t maxBytes, std::string &out,
                        size_t sizeHint) {
  out.clear();
  // One byte past the hint: a file of exactly sizeHint bytes ends with a
  // read of 0 instead of doubling the buffer (a 3 MB source held 6.5 MB).
  out.resize(std::min(maxBytes + 1, std::max<size_t>(sizeHint + 1, 4096)));
  size_t size = 0;
  for (;;) {
    if (size == out.size()) {
      if (size > maxBytes)
        break;
      out.resize(std::min(maxBytes + 1, 2 * size));
    }
    ssize_t n = ::read(fd, out.data() + size, out.size() - size);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0) {
      out.clear();
      return FileReadStatus::Failed;
    }
    if (n == 0)
      break;
    size += static_cast<size_t>(n);
  }
  if (size > maxBytes) {
    out.clear();
    return FileReadStatus::TooLarge;
  }
  out.resize(size);
  return FileReadStatus::Ok;
}

} // namespace tsl
