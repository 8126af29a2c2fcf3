#!/usr/bin/env bash
# Builds the libFuzzer target for the frontend with clang-19 (ASan + UBSan)
# in build-fuzz/ and runs it.
#   scripts/fuzz.sh --smoke          fixed-count run used by the test suite
#   scripts/fuzz.sh [LIBFUZZER FLAGS] open-ended run, e.g. -max_total_time=600
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build="$root/build-fuzz"
if ! command -v clang++-19 >/dev/null; then
  echo "fuzz: clang++-19 not found (scripts/install-deps.sh installs it); skipping"
  exit 77
fi
gen=()
command -v ninja >/dev/null && gen=(-G Ninja)
if [ ! -f "$build/CMakeCache.txt" ]; then
  cmake -S "$root" -B "$build" "${gen[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTSL_FUZZ=ON \
    -DCMAKE_C_COMPILER=clang-19 -DCMAKE_CXX_COMPILER=clang++-19 >/dev/null
fi
cmake --build "$build" -j "${TSL_JOBS:-2}" --target tsl_frontend_fuzzer >/dev/null
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp "$root"/tests/fuzz/corpus/* "$work/"
flags=(-max_len=65536 -timeout=20 -rss_limit_mb=4096 -print_final_stats=1)
if [ "${1:-}" = "--smoke" ]; then
  shift
  runs=${TSL_FUZZ_RUNS:-20000}
  start=$(date +%s)
  "$build/bin/tsl_frontend_fuzzer" "${flags[@]}" -runs="$runs" -seed=1 "$work" 2>&1 | tail -15
  echo "fuzz: $runs inputs in $(( $(date +%s) - start )) s without a crash"
else
  exec "$build/bin/tsl_frontend_fuzzer" "${flags[@]}" "$@" "$work"
fi
