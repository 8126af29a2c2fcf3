#pragma once
/// \file Weights from safetensors files (the format of Hugging Face and
/// `safetensors.torch.save_file`): an 8-byte little-endian header length,
/// a JSON header naming each tensor's dtype, shape and byte range, then the
/// data. The file is mapped read-only and each tensor is a view into it
/// (zero copy), checked against the header and the file before anything
/// reads it: a truncated file, a header that lies about sizes, offsets past
/// the end, malformed JSON or an unknown dtype is an error, never a read out
/// of bounds.

#include "support/Error.h"

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace tsl::rt {

/// One tensor of a weights file.
struct WeightTensor {
  std::string name;
  int32_t dtype = 0; ///< KernelAbi.h element type code
  std::vector<int64_t> shape;
  /// Its bytes in the mapped file, or in a copy owned by the file when the
  /// file's offset is not a multiple of the element size.
  const void *data = nullptr;
  size_t bytes = 0;
};

/// Where each tensor of a header lies: its entry with data unset and the
/// byte range [begin, end) within the data section.
struct HeaderEntry {
  WeightTensor tensor;
  uint64_t begin = 0, end = 0;
};

/// Parses a safetensors JSON header for a data section of \p dataBytes
/// bytes: the tensors in the header's order (`__metadata__` skipped).
/// Fails (InvalidArgument) naming the problem: malformed JSON, a missing or
/// mistyped field, an unsupported dtype (TSL has bool, i8, i32, i64, f16,
/// bf16, f32, f64), a shape whose byte size does not match its range or
/// overflows, a range outside the data section, a name given twice.
Expected<std::vector<HeaderEntry>> parseSafetensorsHeader(std::string_view json,
                                                          uint64_t dataBytes);

/// A safetensors file, mapped read-only for as long as the object lives.
class WeightsFile {
public:
  /// Maps and checks \p path. Errors: Io (cannot open or map: the system's
  /// reason), InvalidArgument (not a regular file, truncated, a header
  /// longer than 100 MB or than the file, parseSafetensorsHeader's).
  static Expected<std::unique_ptr<WeightsFile>> open(const std::string &path);
  ~WeightsFile();
  WeightsFile(const WeightsFile &) = delete;
  WeightsFile &operator=(const WeightsFile &) = delete;

  /// The tensors in the header's order.
  const std::vector<WeightTensor> &tensors() const { return tensors_; }
  /// The tensor named \p name, or null.
  const WeightTensor *find(std::string_view name) const;

private:
  WeightsFile() = default;
  void *map_ = nullptr;
  size_t size_ = 0;
  std::vector<WeightTensor> tensors_;
  /// Aligned copies of the tensors the file stores misaligned.
  std::vector<std::unique_ptr<uint64_t[]>> copies_;
};

} // namespace tsl::rt
