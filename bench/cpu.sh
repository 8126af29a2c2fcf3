#!/usr/bin/env bash
# CPU benchmarks in one run, with ratios against peers measured in the same
# run (NumPy/OpenBLAS, PyTorch eager, torch.compile), all single-threaded.
# Makes a venv with the newest NumPy and PyTorch from PyPI on first use.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/build.sh" >/dev/null
venv="$root/.venv-bench"
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c "import torch, numpy" 2>/dev/null; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --upgrade pip torch numpy
fi
tsl=$("$root/build/bin/tsl_bench_cpu" "$root/bench/models.tsl")
peers=$("$venv/bin/python" "$root/bench/cpu_peers.py" 2>/dev/null)
echo "$tsl"
echo "--- peers (ms)"
echo "$peers"
echo "--- ratios (peer time / TSL time; > 1 means TSL is faster)"
python3 - "$tsl" "$peers" <<'PY'
import re, sys
tsl, peers = sys.argv[1], dict(l.split(': ') for l in sys.argv[2].splitlines() if ': ' in l)
p = {k: float(v) for k, v in peers.items()}
d = float(re.search(r'dispatch \(10 guards\): ([0-9.]+) ns', tsl).group(1))
print(f'dispatch: {d:.1f} ns vs torch.compile call overhead {p["torch_compile_call_overhead"] * 1e6:.0f} ns: '
      f'{p["torch_compile_call_overhead"] * 1e6 / d:.0f}x  (target: <= 50 ns)')
m = re.search(r'16M f32: ([0-9.]+) ms \(copy ([0-9.]+) ms', tsl)
ew, copy = float(m.group(1)), float(m.group(2))
print(f'elementwise: {ew / copy:.2f}x the copy (target <= 1.5); vs NumPy {p["numpy_ew"] / ew:.2f}x')
mm = float(re.search(r'matmul 1024\^3 f32: ([0-9.]+) ms', tsl).group(1))
print(f'matmul 1024^3: {p["numpy_mm"] / mm:.2f}x NumPy/OpenBLAS 1 thread (target >= 0.5)')
for m in re.finditer(r'softmax B=(\d+) S=(\d+): ([0-9.]+) ms; encoder_layer: ([0-9.]+) ms', tsl):
    B, S, sm, enc = m.group(1), m.group(2), float(m.group(3)), float(m.group(4))
    print(f'(B,S)=({B},{S}): softmax {p[f"torch_softmax_{B}_{S}"] / sm:.2f}x, '
          f'encoder_layer {p[f"torch_encoder_{B}_{S}"] / enc:.2f}x PyTorch eager (target >= 1.0)')
PY
