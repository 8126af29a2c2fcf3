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

inline constexpr const char *kManifestVersion = "tsl-aot 3";

/// The manifest's first line: the version and the number of runtime table
/// slots (TSL_RT_NUM_SLOTS) the module's `tsl_rt_table` holds. A runtime
/// fills that many slots, so a module built with another count (before or
/// after runtime functions were added) is refused, never overrun.
std::string manifestHeader();

/// The exported dispatcher of \p function in an AOT module.
inline std::string aotDispatcherSymbol(const std::string &function) {
  return "tsl_" + function + "_dispatch";
}

std::string writeManifest(const std::vector<ManifestVariant> &variants);
/// Parses a manifest; false with \p error on anything unexpected.
bool readManifest(const std::string &text, std::vector<ManifestVariant> &out,
                  std::string &error);

/// The digest file beside an AOT module: `<module>.tslsum`, written by
/// `tslc build` and checked by tsl_module_load_aot before dlopen, so a
/// truncated or corrupt module is an error instead of a crash or wrong
/// results. (A module cannot hold its own digest; and whoever can write both
/// files can forge both: this detects corruption, not an attacker.)
inline std::string moduleDigestPath(const std::string &module) {
  return module + ".tslsum";
}
/// The text of the digest file of a module whose bytes are \p contents:
/// `tsl-module-digest 1`, `size N` and `sha256 HEX` lines.
std::string writeModuleDigest(const std::string &contents);
/// Whether \p contents match the digest file text \p digestText; false with
/// \p problem saying how they differ (or that the digest file is malformed).
bool checkModuleDigest(const std::string &contents,
                       const std::string &digestText, std::string &problem);

} // namespace tsl::rt
