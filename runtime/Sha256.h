#pragma once
/// \file SHA-256 (FIPS 180-4), for the digests that detect corrupt AOT
/// modules and compile-cache entries. Small and dependency-free; not
/// constant-time (nothing secret is hashed).

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace tsl::rt {

class Sha256 {
public:
  Sha256();
  void update(const void *data, size_t size);
  void update(std::string_view data) { update(data.data(), data.size()); }
  /// The digest of everything passed to update; the object is spent.
  std::array<uint8_t, 32> finish();
  /// finish() as 64 lowercase hex digits.
  std::string finishHex();

private:
  void block(const uint8_t *p);
  uint32_t h_[8];
  uint8_t buffer_[64];
  size_t buffered_ = 0;
  uint64_t length_ = 0; ///< bytes hashed
};

/// The SHA-256 of \p data as 64 lowercase hex digits.
std::string sha256Hex(std::string_view data);

} // namespace tsl::rt
