#pragma once
/// \file The manifest of an ahead-of-time module: for each variant its
/// symbol names and the metadata of rt::VariantCode, as text embedded in the
/// shared library (`tsl_manifest`). Written by the compiler, read by the
/// runtime; a malformed or mismatched manifest is rejected, never trusted.

#include "runtime/Variant.h"

#include <string>
#include <vector>

namespace tsl::rt {

/// A variant as named in a manifest (entry points are symbol names). Each
/// function also exports `tsl_<function>_dispatch` over its variants in
/// manifest order (rt::DispatchFn; version 2).
struct ManifestVariant {
  std::string function;
  std::string kernelSymbol, matchSymbol, shapesSymbol;
  VariantCode code; ///< metadata only; entry points unset
};

inline constexpr const char *kManifestVersion = "tsl-aot 2";

/// The exported dispatcher of \p function in an AOT module.
inline std::string aotDispatcherSymbol(const std::string &function) {
  return "tsl_" + function + "_dispatch";
}

std::string writeManifest(const std::vector<ManifestVariant> &variants);
/// Parses a manifest; false with \p error on anything unexpected.
bool readManifest(const std::string &text, std::vector<ManifestVariant> &out,
                  std::string &error);

} // namespace tsl::rt
