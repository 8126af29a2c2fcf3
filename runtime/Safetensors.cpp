// safetensors files: the header's JSON read by a small strict parser (only
// what the format uses: objects, arrays, strings, integers; depth-limited),
// the data mapped read-only.
#include "runtime/Safetensors.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <map>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace tsl::rt {

namespace {

/// Headers above this are refused (the format's own readers use 100 MB).
constexpr uint64_t kMaxHeaderBytes = 100'000'000;

/// The element type code of a safetensors dtype name, or -1.
int32_t dtypeCode(std::string_view name) {
  static const std::pair<std::string_view, int32_t> table[] = {
      {"BOOL", 0}, {"I8", 1},   {"I32", 2}, {"I64", 3},
      {"F16", 4},  {"BF16", 5}, {"F32", 6}, {"F64", 7}};
  for (auto [n, code] : table)
    if (n == name)
      return code;
  return -1;
}

size_t elementSize(int32_t code) {
  static const size_t sizes[] = {1, 1, 4, 8, 2, 2, 4, 8};
  return sizes[code];
}

/// A JSON reader over the header: each read* consumes one value or fails
/// with a message naming what was expected and the byte offset.
class JsonReader {
public:
  explicit JsonReader(std::string_view text) : s_(text) {}

  bool fail(const std::string &what) {
    if (error.empty())
      error = "malformed header: " + what + " at byte " + std::to_string(at_);
    return false;
  }
  void skipSpace() {
    while (at_ < s_.size() && (s_[at_] == ' ' || s_[at_] == '\t' ||
                               s_[at_] == '\n' || s_[at_] == '\r'))
      ++at_;
  }
  /// Consumes \p c (after spaces) when it is next.
  bool eat(char c) {
    skipSpace();
    if (at_ < s_.size() && s_[at_] == c) {
      ++at_;
      return true;
    }
    return false;
  }
  bool expect(char c) {
    return eat(c) || fail(std::string("expected '") + c + "'");
  }
  bool atEnd() {
    skipSpace();
    return at_ == s_.size();
  }

  bool readString(std::string &out) {
    if (!eat('"'))
      return fail("expected a string");
    out.clear();
    while (at_ < s_.size() && s_[at_] != '"') {
      char c = s_[at_++];
      if (static_cast<unsigned char>(c) < 0x20)
        return fail("a control character in a string");
      if (c != '\\') {
        out += c;
        continue;
      }
      if (at_ >= s_.size())
        break;
      char e = s_[at_++];
      const char *plain = "\"\\/bfnrt", *meaning = "\"\\/\b\f\n\r\t";
      if (const char *p = std::strchr(plain, e); p && e) {
        out += meaning[p - plain];
        continue;
      }
      if (e != 'u')
        return fail("an unknown escape in a string");
      uint32_t cp;
      if (!readHex4(cp))
        return false;
      if (cp >= 0xD800 && cp < 0xDC00) { // a surrogate pair
        uint32_t low;
        if (at_ + 1 >= s_.size() || s_[at_] != '\\' || s_[at_ + 1] != 'u')
          return fail("an unpaired surrogate");
        at_ += 2;
        if (!readHex4(low) || low < 0xDC00 || low >= 0xE000)
          return fail("an unpaired surrogate");
        cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
      } else if (cp >= 0xDC00 && cp < 0xE000) {
        return fail("an unpaired surrogate");
      }
      appendUtf8(cp, out);
    }
    if (at_ >= s_.size())
      return fail("an unterminated string");
    ++at_;
    return true;
  }

  /// A non-negative integer (no sign, fraction or exponent) below 2^63.
  bool readCount(uint64_t &out) {
    skipSpace();
    size_t start = at_;
    out = 0;
    while (at_ < s_.size() && s_[at_] >= '0' && s_[at_] <= '9') {
      if (out > (uint64_t(INT64_MAX) - 9) / 10)
        return fail("an integer too large");
      out = out * 10 + static_cast<uint64_t>(s_[at_++] - '0');
    }
    if (at_ == start)
      return fail("expected a non-negative integer");
    if (at_ < s_.size() && (s_[at_] == '.' || s_[at_] == 'e' || s_[at_] == 'E'))
      return fail("expected an integer");
    return true;
  }

  /// Any value, discarded (`__metadata__` and unknown fields).
  bool skipValue(int depth = 0) {
    if (depth > 64)
      return fail("nesting deeper than 64");
    skipSpace();
    if (at_ >= s_.size())
      return fail("expected a value");
    char c = s_[at_];
    std::string ignored;
    if (c == '"')
      return readString(ignored);
    if (c == '{' || c == '[') {
      char close = c == '{' ? '}' : ']';
      ++at_;
      if (eat(close))
        return true;
      do {
        if (c == '{' && (!readString(ignored) || !expect(':')))
          return false;
        if (!skipValue(depth + 1))
          return false;
      } while (eat(','));
      return expect(close);
    }
    for (std::string_view word : {"true", "false", "null"})
      if (s_.substr(at_, word.size()) == word) {
        at_ += word.size();
        return true;
      }
    size_t start = at_;
    while (at_ < s_.size() && std::strchr("+-0123456789.eE", s_[at_]) &&
           s_[at_])
      ++at_;
    return at_ > start || fail("expected a value");
  }

  std::string error;

private:
  bool readHex4(uint32_t &out) {
    out = 0;
    for (int i = 0; i < 4; ++i, ++at_) {
      if (at_ >= s_.size())
        return fail("a short \\u escape");
      char h = s_[at_];
      int v = h >= '0' && h <= '9'   ? h - '0'
              : h >= 'a' && h <= 'f' ? h - 'a' + 10
              : h >= 'A' && h <= 'F' ? h - 'A' + 10
                                     : -1;
      if (v < 0)
        return fail("a bad \\u escape");
      out = out * 16 + static_cast<uint32_t>(v);
    }
    return true;
  }
  static void appendUtf8(uint32_t cp, std::string &out) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }

  std::string_view s_;
  size_t at_ = 0;
};

/// One tensor's object: {"dtype": ..., "shape": [...], "data_offsets":
/// [begin, end]} in any order, other fields ignored.
bool readEntry(JsonReader &r, HeaderEntry &e, std::string &problem) {
  if (!r.expect('{'))
    return false;
  bool dtype = false, shape = false, offsets = false;
  if (!r.eat('}')) {
    do {
      std::string key;
      if (!r.readString(key) || !r.expect(':'))
        return false;
      if (key == "dtype") {
        std::string name;
        if (!r.readString(name))
          return false;
        e.tensor.dtype = dtypeCode(name);
        if (e.tensor.dtype < 0) {
          problem = "has dtype " + name +
                    ", which TSL has no element type for (bool, i8, i32, "
                    "i64, f16, bf16, f32, f64)";
          return false;
        }
        dtype = true;
      } else if (key == "shape") {
        if (!r.expect('['))
          return false;
        e.tensor.shape.clear();
        if (!r.eat(']')) {
          do {
            uint64_t d;
            if (!r.readCount(d))
              return false;
            if (e.tensor.shape.size() == 32)
              return r.fail("a shape with more than 32 dims");
            e.tensor.shape.push_back(static_cast<int64_t>(d));
          } while (r.eat(','));
          if (!r.expect(']'))
            return false;
        }
        shape = true;
      } else if (key == "data_offsets") {
        if (!r.expect('[') || !r.readCount(e.begin) || !r.expect(',') ||
            !r.readCount(e.end) || !r.expect(']'))
          return false;
        offsets = true;
      } else if (!r.skipValue()) {
        return false;
      }
    } while (r.eat(','));
    if (!r.expect('}'))
      return false;
  }
  if (!dtype || !shape || !offsets)
    problem = std::string("has no ") + (!dtype   ? "dtype"
                                        : !shape ? "shape"
                                                 : "data_offsets");
  return problem.empty();
}

/// Checks \p e's byte range against its dtype and shape and the data
/// section; the problem, or empty.
std::string checkRange(const HeaderEntry &e, uint64_t dataBytes) {
  uint64_t bytes = elementSize(e.tensor.dtype);
  for (int64_t d : e.tensor.shape)
    if (__builtin_mul_overflow(bytes, static_cast<uint64_t>(d), &bytes))
      return "has a shape whose byte size overflows";
  if (e.end < e.begin)
    return "has data_offsets that end before they begin";
  if (e.end - e.begin != bytes)
    return "has data_offsets [" + std::to_string(e.begin) + ", " +
           std::to_string(e.end) + ") holding " +
           std::to_string(e.end - e.begin) +
           " bytes, but its dtype and shape need " + std::to_string(bytes);
  if (e.end > dataBytes)
    return "has data_offsets up to byte " + std::to_string(e.end) +
           " of a data section of " + std::to_string(dataBytes) + " bytes";
  return {};
}

} // namespace

Expected<std::vector<HeaderEntry>> parseSafetensorsHeader(std::string_view json,
                                                          uint64_t dataBytes) {
  JsonReader r(json);
  std::vector<HeaderEntry> entries;
  std::map<std::string, size_t, std::less<>> seen;
  auto invalid = [](std::string message) {
    return makeError(ErrorKind::InvalidArgument, std::move(message));
  };
  if (!r.expect('{'))
    return invalid(r.error);
  if (!r.eat('}')) {
    do {
      HeaderEntry e;
      if (!r.readString(e.tensor.name) || !r.expect(':'))
        return invalid(r.error);
      if (e.tensor.name == "__metadata__") {
        if (!r.skipValue())
          return invalid(r.error);
        continue;
      }
      std::string problem;
      if (!readEntry(r, e, problem))
        return invalid(problem.empty()
                           ? r.error
                           : "tensor '" + e.tensor.name + "' " + problem);
      if (problem = checkRange(e, dataBytes); !problem.empty())
        return invalid("tensor '" + e.tensor.name + "' " + problem);
      if (!seen.emplace(e.tensor.name, entries.size()).second)
        return invalid("tensor '" + e.tensor.name + "' is named twice");
      e.tensor.bytes = static_cast<size_t>(e.end - e.begin);
      entries.push_back(std::move(e));
    } while (r.eat(','));
    if (!r.expect('}'))
      return invalid(r.error);
  }
  if (!r.atEnd())
    return invalid("malformed header: text after the header's object");
  return entries;
}

Expected<std::unique_ptr<WeightsFile>>
WeightsFile::open(const std::string &path) {
  auto io = [&](const std::string &what) {
    return makeError(ErrorKind::Io, "cannot " + what + " '" + path +
                                        "': " + std::strerror(errno));
  };
  auto invalid = [&](const std::string &what) {
    return makeError(ErrorKind::InvalidArgument,
                     "'" + path + "' is not a safetensors file: " + what);
  };
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0)
    return io("open");
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    Error e = io("read");
    ::close(fd);
    return e;
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return invalid("not a regular file");
  }
  std::unique_ptr<WeightsFile> file(new WeightsFile());
  file->size_ = static_cast<size_t>(st.st_size);
  if (file->size_ < 8) {
    ::close(fd);
    return invalid("shorter than its 8-byte header length");
  }
  void *map = ::mmap(nullptr, file->size_, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (map == MAP_FAILED)
    return io("map");
  file->map_ = map;
  const auto *bytes = static_cast<const unsigned char *>(map);
  uint64_t headerBytes = 0;
  for (int i = 7; i >= 0; --i) // little-endian
    headerBytes = headerBytes << 8 | bytes[i];
  if (headerBytes > kMaxHeaderBytes)
    return invalid("its header length " + std::to_string(headerBytes) +
                   " is over 100 MB");
  if (headerBytes > file->size_ - 8)
    return invalid("its header length " + std::to_string(headerBytes) +
                   " is past the end of the file (" +
                   std::to_string(file->size_) + " bytes): truncated?");
  std::string_view json(reinterpret_cast<const char *>(bytes + 8),
                        static_cast<size_t>(headerBytes));
  uint64_t dataStart = 8 + headerBytes, dataBytes = file->size_ - dataStart;
  Expected<std::vector<HeaderEntry>> entries =
      parseSafetensorsHeader(json, dataBytes);
  if (!entries)
    return invalid(entries.error().message);
  for (HeaderEntry &e : *entries) {
    const unsigned char *at = bytes + dataStart + e.begin;
    size_t align = elementSize(e.tensor.dtype);
    if (reinterpret_cast<uintptr_t>(at) % align != 0) {
      // Kernels load whole elements: a misaligned tensor is copied.
      file->copies_.emplace_back(new uint64_t[(e.tensor.bytes + 7) / 8 + 1]);
      std::memcpy(file->copies_.back().get(), at, e.tensor.bytes);
      at = reinterpret_cast<const unsigned char *>(file->copies_.back().get());
    }
    e.tensor.data = at;
    file->tensors_.push_back(std::move(e.tensor));
  }
  return file;
}

WeightsFile::~WeightsFile() {
  if (map_)
    ::munmap(map_, size_);
}

const WeightTensor *WeightsFile::find(std::string_view name) const {
  auto it = std::find_if(tensors_.begin(), tensors_.end(),
                         [&](const WeightTensor &t) { return t.name == name; });
  return it == tensors_.end() ? nullptr : &*it;
}

} // namespace tsl::rt
