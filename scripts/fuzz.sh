#!/usr/bin/env bash
# Builds the libFuzzer targets with clang-19 (ASan + UBSan) in build-fuzz/
# and runs one: the frontend (default), the C API, the IR text parser or the
# safetensors reader.
#   scripts/fuzz.sh --smoke          fixed-count runs of all four, used by the
#                                    test suite (TSL_FUZZ_RUNS, TSL_FUZZ_CAPI_RUNS,
#                                    TSL_FUZZ_IR_RUNS, TSL_FUZZ_SAFETENSORS_RUNS)
#   scripts/fuzz.sh [LIBFUZZER FLAGS] open-ended run, e.g. -max_total_time=600
#   TSL_FUZZ_TARGET=capi|ir|safetensors scripts/fuzz.sh ...   another target
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
cmake --build "$build" -j "${TSL_JOBS:-2}" --target tsl_frontend_fuzzer tsl_capi_fuzzer \
  tsl_ir_fuzzer tsl_safetensors_fuzzer >/dev/null
# target name -> binary and seed corpus
binary() { case $1 in frontend) echo tsl_frontend_fuzzer ;; *) echo "tsl_$1_fuzzer" ;; esac; }
corpus() { case $1 in frontend) echo corpus ;; *) echo "corpus-$1" ;; esac; }
target=${TSL_FUZZ_TARGET:-frontend}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
targets=(frontend capi ir safetensors)
for t in "${targets[@]}"; do
  mkdir "$work/$t"
  cp "$root/tests/fuzz/$(corpus $t)"/* "$work/$t/"
done
export TSL_CACHE_DIR=${TSL_CACHE_DIR:-off}
flags=(-max_len=65536 -timeout=20 -rss_limit_mb=4096 -print_final_stats=1)
if [ "${1:-}" = "--smoke" ]; then
  shift
  for t in "${targets[@]}"; do
    case $t in
      frontend) runs=${TSL_FUZZ_RUNS:-20000} ;;
      capi) runs=${TSL_FUZZ_CAPI_RUNS:-6000} ;;
      ir) runs=${TSL_FUZZ_IR_RUNS:-100000} ;;
      safetensors) runs=${TSL_FUZZ_SAFETENSORS_RUNS:-200000} ;;
    esac
    start=$(date +%s)
    "$build/bin/$(binary $t)" "${flags[@]}" -runs="$runs" -seed=1 "$work/$t" 2>&1 | tail -15
    echo "fuzz: $t: $runs inputs in $(( $(date +%s) - start )) s without a crash"
  done
else
  exec "$build/bin/$(binary "$target")" "${flags[@]}" "$@" "$work/$target"
fi
