#!/usr/bin/env bash
# Builds the unit tests with ThreadSanitizer into build-tsan/ and runs the
# runtime tests (the C/C++ API from several threads on the CPU and the GPU
# emulator, the dispatcher, the JIT table: in tsl_unit_driver, which has the
# compiler; GEMM, the thread pool and the GPU emulator's fibers:
# tsl_unit_runtime). Only those two executables are built.
# LLVM's JIT and libz3 are not instrumented: tests/tsan.supp lists what is
# suppressed and why.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/install-deps.sh"
build="$root/build-tsan"
gen=()
command -v ninja >/dev/null && gen=(-G Ninja)
if [ ! -f "$build/CMakeCache.txt" ]; then
  cmake -S "$root" -B "$build" "${gen[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTSL_TSAN=ON >/dev/null
fi
cmake --build "$build" -j "${TSL_JOBS:-2}" --target tsl_unit_driver tsl_unit_runtime
start=$(date +%s)
# halt_on_error: the first race fails the run; second_deadlock_stack for
# lock-order reports.
export TSL_CACHE_DIR=off
export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$root/tests/tsan.supp ${TSAN_OPTIONS:-}"
"$build/bin/tsl_unit_driver" --gtest_filter='Devices/Fixture.*:Runtime.*:GpuRuntime.*:Dispatcher.*'
"$build/bin/tsl_unit_runtime" --gtest_filter='Gemm.*:GpuEmulator.*:ThreadPool.*:CallStats*:CallPath*'
echo "tsan: runtime tests passed in $(( $(date +%s) - start )) s"
