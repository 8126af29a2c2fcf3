#!/usr/bin/env bash
# Shape checking speed, TSL vs torch.compile(dynamic=True), in one run.
# Makes a venv with the newest PyTorch from PyPI on first use (.venv-bench).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/build.sh" >/dev/null
venv="$root/.venv-bench"
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c "import torch" 2>/dev/null; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --upgrade pip torch numpy
fi
tsl=$("$root/build/bin/tsl_bench_shapes" 5)
peer=$("$venv/bin/python" "$root/bench/shape_check_peer.py" 167 834)
echo "$tsl"
echo "$peer"
paste <(echo "$tsl" | sed -E 's/.* = ([0-9.]+) us\/op.*/\1/') \
      <(echo "$peer" | sed -E 's/.* = ([0-9.]+) us\/op.*/\1/') |
  awk '{ printf "ratio (torch us/op / tsl us/op): %.0fx faster\n", $2 / $1 }'
