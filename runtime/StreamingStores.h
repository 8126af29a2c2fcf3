#pragma once
/// \file When row groups stream their outputs (runtime/StreamingStores.cpp;
/// private to the runtime and its tests).

#include <cstdint>

namespace tsl::rt {

/// Output bytes above which tsl_rt_stream_output says to stream: \p env
/// (TSL_STREAM_STORE_BYTES' value, may be null) when it is a whole integer
/// (0 streams every output, a negative value none), else \p cacheBytes
/// (the largest data cache), else 32 MiB when that is unknown (<= 0).
int64_t streamStoreThreshold(const char *env, int64_t cacheBytes);

} // namespace tsl::rt
