#!/usr/bin/env bash
# CPU benchmarks in one run, with ratios against peers measured in the same
# run (NumPy/OpenBLAS, PyTorch eager, torch.compile), all single-threaded.
# Makes a venv with the newest NumPy and PyTorch from PyPI on first use.
set -euo pipefail
source "$(dirname "$0")/venv.sh"
# Rounds alternate TSL and the peers, and each figure is the best of its
# rounds on both sides: this machine's timings drift by 10-30% over a minute
# (shared cores), and alternating keeps both sides under the same drift.
rounds=${TSL_BENCH_ROUNDS:-3}
tsl=""
peers=""
for ((r = 1; r <= rounds; ++r)); do
  out=$("$root/build/bin/tsl_bench_cpu" "$root/bench/models.tsl")
  tsl+="$out"$'\n'
  peers+=$("$venv/bin/python" "$root/bench/cpu_peers.py" 2>/dev/null)$'\n'
  echo "--- round $r of $rounds"
  echo "$out"
done
echo "--- peers (ms, best of $rounds rounds)"
python3 - "$peers" <<'PY'
import sys
best = {}
for line in sys.argv[1].splitlines():
    if ': ' in line:
        k, v = line.split(': ')
        best[k] = min(best.get(k, float('inf')), float(v))
for k, v in best.items():
    print(f'{k}: {v}')
PY
echo "--- ratios (peer time / TSL time, best of each side; > 1 means TSL is faster)"
python3 - "$tsl" "$peers" <<'PY'
import re, sys
tsl, peers = sys.argv[1], sys.argv[2]
p = {}
for line in peers.splitlines():
    if ': ' in line:
        k, v = line.split(': ')
        p[k] = min(p.get(k, float('inf')), float(v))
def best(pattern, group=1):
    return min(float(m.group(group)) for m in re.finditer(pattern, tsl))
d = best(r'dispatch \(10 guards\): ([0-9.]+) ns')
print(f'dispatch: {d:.1f} ns vs torch.compile call overhead {p["torch_compile_call_overhead"] * 1e6:.0f} ns: '
      f'{p["torch_compile_call_overhead"] * 1e6 / d:.0f}x  (target: <= 50 ns)')
ew = best(r'16M f32: ([0-9.]+) ms')
copy = best(r'16M f32: [0-9.]+ ms \(copy ([0-9.]+) ms')
print(f'elementwise: {ew / copy:.2f}x the copy (target <= 1.5); vs NumPy {p["numpy_ew"] / ew:.2f}x')
mm = best(r'matmul 1024\^3 f32: ([0-9.]+) ms')
print(f'matmul 1024^3: {p["numpy_mm"] / mm:.2f}x NumPy/OpenBLAS 1 thread (target >= 0.5)')
st = best(r'static variant: ([0-9.]+) ms')
dy = best(r'static variant: [0-9.]+ ms; dynamic: ([0-9.]+) ms')
print(f'dynamic vs static variant (encoder B=4 S=128): {st / dy:.2f}x (target >= 0.9)')
for B, S in [(1, 128), (4, 128), (1, 512), (8, 64)]:
    sm = best(rf'softmax B={B} S={S}: ([0-9.]+) ms')
    enc = best(rf'softmax B={B} S={S}: [0-9.]+ ms; encoder_layer: ([0-9.]+) ms')
    print(f'(B,S)=({B},{S}): softmax {p[f"torch_softmax_{B}_{S}"] / sm:.2f}x, '
          f'encoder_layer {p[f"torch_encoder_{B}_{S}"] / enc:.2f}x PyTorch eager (target >= 1.0)')
PY
