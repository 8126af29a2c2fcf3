#!/usr/bin/env bash
# Builds the Python package (python/) the way `pip install ./python` does and
# runs its pytest tests (python/tests). scripts/test.sh calls it after ctest.
#
# The venv build/python-venv holds the pinned build and test dependencies
# (made once; remade when the pins below change). The package is built with
# --no-build-isolation into the persistent build directory
# build/python-build (scikit-build-core's build-dir), so a second run only
# rebuilds what changed; ccache is on as for the main build, -j2
# (TSL_JOBS). PyTorch and JAX tests run when those are importable in the
# venv and are skipped otherwise. With --no-tests it only builds and
# installs (bench/python_overhead.sh).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${TSL_BUILD_DIR:-$root/build}
venv=$build/python-venv
pins="nanobind==3.1.0 scikit-build-core==1.1.2 pytest==9.2.0 numpy==2.4.6 scikit-learn==1.9.1"
if [ ! -x "$venv/bin/python" ] || [ "$(cat "$venv/.tsl-pins" 2>/dev/null)" != "$pins" ]; then
  rm -rf "$venv"
  python3 -m venv "$venv"
  # shellcheck disable=SC2086
  "$venv/bin/pip" install -q $pins
  echo "$pins" >"$venv/.tsl-pins"
fi
start=$(date +%s)
CMAKE_BUILD_PARALLEL_LEVEL=${TSL_JOBS:-2} "$venv/bin/pip" install -q --no-build-isolation \
  --config-settings=build-dir="$build/python-build" "$root/python"
echo "test-python: package built and installed in $(( $(date +%s) - start )) s"
[ "${1:-}" = "--no-tests" ] && exit 0
cd "$build"
TSL_CACHE_DIR=off "$venv/bin/python" -m pytest -q -rs "$root/python/tests"
