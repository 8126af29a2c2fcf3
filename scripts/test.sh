#!/usr/bin/env bash
# README command 2: install, build, and run every test (GoogleTest, lit, fuzz smoke run) through ctest,
# then the Python package's pytest tests (scripts/test-python.sh).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/install-deps.sh"
"$root/scripts/build.sh"
cd "${TSL_BUILD_DIR:-$root/build}"
ctest --output-on-failure -j "${TSL_JOBS:-2}"
"$root/scripts/test-python.sh"
