#!/usr/bin/env bash
# The GPU checks for a session that is lent a GPU machine, in as few device
# calls as possible. Here: `bash scripts/build.sh && bash ../shared/tools/device-pack.sh`.
# There (one device call each, every command starting with device-pack's
# prefix: tar -xJf .gpu/tsl.tar.xz -C / && export LD_LIBRARY_PATH=... ; cd ROOT):
#   bash scripts/gpu-check.sh tests   # unit tests and the whole lit suite on the GPU
#   bash scripts/gpu-check.sh bench   # bench/gpu.sh (PyTorch peers in the same run)
# Output goes to stdout and, when $OUT is set, to $OUT/gpu-<mode>.log. Exit
# status: non-zero when a test or benchmark failed.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
mode=${1:-tests}
log=/dev/null
[ -n "${OUT:-}" ] && log="$OUT/gpu-$mode.log"
run() {
  cd "$root" || exit 1
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv 2>&1 | head -3
  case "$mode" in
  tests)
    # lit runs its Python helpers with the python3 the build recorded.
    sed -i "s#^config.python = .*#config.python = \"$(command -v python3)\"#" \
      build/tests/lit/lit.site.cfg.py
    status=0
    out=$(mktemp)
    for t in build/bin/tsl_unit_*; do
      "$t" --gtest_brief=1 >"$out" 2>&1 || status=1
      echo "== $t"
      tail -n 15 "$out"
    done
    python3 /usr/lib/llvm-19/build/utils/lit/lit.py -sv build/tests/lit 2>&1 |
      grep -E '^(FAIL|XPASS|UNRESOLVED|  Passed|  Failed|  Unsupported|Total)|mismatch|error:' |
      head -n 200
    [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
    return $status
    ;;
  bench)
    TSL_LOGS=perf bash bench/gpu.sh
    ;;
  *)
    echo "usage: gpu-check.sh tests|bench" >&2
    return 2
    ;;
  esac
}
run 2>&1 | tee "$log"
exit "${PIPESTATUS[0]}"
