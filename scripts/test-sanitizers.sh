#!/usr/bin/env bash
# Builds TSL with ASan + UBSan into build-asan/ and runs the test suite
# (without the libFuzzer smoke run, which has its own sanitized build).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/install-deps.sh"
TSL_BUILD_DIR="$root/build-asan" TSL_CMAKE_ARGS="-DTSL_SANITIZE=ON" "$root/scripts/build.sh"
cd "$root/build-asan"
# LLVM's JIT and libz3 are not instrumented; leaks in them are not ours.
ASAN_OPTIONS=detect_leaks=0 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --output-on-failure -j "${TSL_JOBS:-2}" -E fuzz-smoke
