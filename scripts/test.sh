#!/usr/bin/env bash
# README command 2: install, build, and run every test (GoogleTest, lit, fuzz smoke run) through ctest.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/install-deps.sh"
"$root/scripts/build.sh"
cd "${TSL_BUILD_DIR:-$root/build}"
ctest --output-on-failure -j "${TSL_JOBS:-2}"
