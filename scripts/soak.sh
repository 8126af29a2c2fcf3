#!/usr/bin/env bash
# Soak run of the random differential test (tests/unit/driver/
# DifferentialTest.cpp): interpreter vs CPU vs CPU outlined vs GPU emulator,
# native guard matcher vs the interpreter's binding, over many random
# program x shape pairs. CI runs 10,000; this runs a million by default,
# printing a progress line to stderr every TSL_DIFF_PROGRESS (1,000) pairs:
# pairs done, programs, ops of the table covered, mismatches, seconds.
#   scripts/soak.sh [PAIRS [SEED]]    (or TSL_DIFF_PAIRS / TSL_DIFF_SEED)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${TSL_BUILD_DIR:-$root/build}
pairs=${1:-${TSL_DIFF_PAIRS:-1000000}}
seed=${2:-${TSL_DIFF_SEED:-$(date +%s)}}
TSL_BUILD_DIR="$build" "$root/scripts/build.sh" >/dev/null
echo "soak: $pairs pairs, seed $seed (rerun with: scripts/soak.sh $pairs $seed)"
start=$(date +%s)
status=0
TSL_CACHE_DIR=off TSL_DIFF_PAIRS=$pairs TSL_DIFF_SEED=$seed \
  TSL_DIFF_PROGRESS=${TSL_DIFF_PROGRESS:-1000} \
  "$build/bin/tsl_unit_driver" --gtest_filter=Differential.RandomProgramsAtManyShapes || status=$?
echo "soak: $(( $(date +%s) - start )) s, exit status $status"
exit "$status"
