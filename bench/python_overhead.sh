#!/usr/bin/env bash
# Per-call overhead from Python (bench/python_overhead.py): builds the
# project and the Python package (scripts/test-python.sh --no-tests), then
# runs the benchmark in the bench venv (NumPy + PyTorch, bench/venv.sh) with
# the package from its build directory.
set -euo pipefail
source "$(dirname "$0")/venv.sh"
"$root/scripts/test-python.sh" --no-tests
PYTHONPATH="$root/build/python-build/python" "$venv/bin/python" "$root/bench/python_overhead.py" \
  "$root/build/bin/tslc" "$@"
