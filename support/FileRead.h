#pragma once
/// \file Reading a whole file from an open descriptor, bounded: the one read
/// loop of source files, AOT modules and compile-cache entries.

#include <cstddef>
#include <string>

namespace tsl {

/// How readUpTo ended.
enum class FileReadStatus {
  Ok,       ///< the whole file is in `out`
  TooLarge, ///< the file has more than `maxBytes` bytes
  Failed,   ///< read(2) failed; `errno` says why
};

/// Reads everything \p fd yields until end of file into \p out, retrying on
/// EINTR, but never more than \p maxBytes (+1 to tell a larger file): a
/// file's size is not trusted (it may grow while read, or be a device that
/// never ends). \p sizeHint (e.g. st_size) only presizes the buffer.
FileReadStatus readUpTo(int fd, size_t maxBytes, std::string &out,
                        size_t sizeHint = 0);

} // namespace tsl
