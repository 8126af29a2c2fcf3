#!/usr/bin/env bash
# Configures and builds TSL into build/ (Release with assertions, ccache when present).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${TSL_BUILD_DIR:-$root/build}
jobs=${TSL_JOBS:-2}
gen=()
command -v ninja >/dev/null && gen=(-G Ninja)
if [ ! -f "$build/CMakeCache.txt" ]; then
  cmake -S "$root" -B "$build" "${gen[@]}" -DCMAKE_BUILD_TYPE=${TSL_BUILD_TYPE:-RelWithDebInfo} ${TSL_CMAKE_ARGS:-}
fi
cmake --build "$build" -j "$jobs"
