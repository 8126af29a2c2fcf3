#!/usr/bin/env bash
# Shape checking speed, TSL vs torch.compile(dynamic=True), in one run.
# Makes a venv with the newest PyTorch from PyPI on first use (.venv-bench).
set -euo pipefail
source "$(dirname "$0")/venv.sh"
tsl=$("$root/build/bin/tsl_bench_shapes" 5)
peer=$("$venv/bin/python" "$root/bench/shape_check_peer.py" 167 834)
echo "$tsl"
echo "$peer"
paste <(echo "$tsl" | sed -E 's/.* = ([0-9.]+) us\/op.*/\1/') \
      <(echo "$peer" | sed -E 's/.* = ([0-9.]+) us\/op.*/\1/') |
  awk '{ printf "ratio (torch us/op / tsl us/op): %.0fx faster\n", $2 / $1 }'
