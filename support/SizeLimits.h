#pragma once
/// \file The one limit on a single tensor's size, shared by every backend
/// (interpreter, CPU, GPU) and by the runtime's checks of caller tensors.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace tsl {

/// The default per-tensor limit: 16 GiB.
inline constexpr int64_t kDefaultMaxTensorBytes = int64_t(1) << 34;

/// The largest tensor, in bytes, that any backend allocates or accepts.
/// `TSL_MAX_TENSOR_BYTES` (a byte count, read once per process) overrides
/// the default; a value that is not a positive integer is ignored, with a
/// warning on stderr naming it.
int64_t maxTensorBytes();

/// Overrides the limit for this process (tests, embedders); <= 0 restores
/// the environment's or the default.
void setMaxTensorBytes(int64_t bytes);

/// The byte size of a tensor of \p rank dims \p shape with \p elementBytes
/// per element; nullopt when a dim is negative or the size leaves int64.
std::optional<int64_t> tensorBytes(const int64_t *shape, size_t rank,
                                   size_t elementBytes);

/// "17179869184 bytes (16 GiB)": a byte count for messages.
std::string describeBytes(int64_t bytes);

/// The message for a tensor over the limit: "a tensor of N bytes (..) is
/// larger than the limit of M bytes (..) per tensor; set
/// TSL_MAX_TENSOR_BYTES to raise it".
std::string tensorTooLargeMessage(int64_t bytes);

} // namespace tsl
