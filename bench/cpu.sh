#!/usr/bin/env bash
# CPU benchmarks in one run, with ratios against peers measured in the same
# run (NumPy/OpenBLAS, PyTorch eager, torch.compile), all single-threaded.
# Makes a venv with the newest NumPy and PyTorch from PyPI on first use.
#   bash bench/cpu.sh              every row
#   bash bench/cpu.sh conv mm      only those groups (dispatch ew mm encoder conv attention)
set -euo pipefail
source "$(dirname "$0")/venv.sh"
# Rounds alternate TSL and the peers, and each figure is the best of its
# rounds on both sides: this machine's timings drift by 10-30% over a minute
# (shared cores), and alternating keeps both sides under the same drift.
rounds=${TSL_BENCH_ROUNDS:-3}
tsl=""
peers=""
for ((r = 1; r <= rounds; ++r)); do
  out=$("$root/build/bin/tsl_bench_cpu" "$root/bench/models.tsl" "$@")
  tsl+="$out"$'\n'
  peers+=$("$venv/bin/python" "$root/bench/cpu_peers.py" "$@" 2>/dev/null)$'\n'
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
    found = [float(m.group(group)) for m in re.finditer(pattern, tsl)]
    return min(found) if found else None
d = best(r'dispatch \(10 guards\): ([0-9.]+) ns')
if d is not None:
    print(f'dispatch: {d:.1f} ns vs torch.compile call overhead {p["torch_compile_call_overhead"] * 1e6:.0f} ns: '
          f'{p["torch_compile_call_overhead"] * 1e6 / d:.0f}x  (target: <= 50 ns)')
ew = best(r'16M f32: ([0-9.]+) ms')
if ew is not None:
    copy = best(r'16M f32: [0-9.]+ ms \(copy ([0-9.]+) ms')
    print(f'elementwise: {ew / copy:.2f}x the copy (target <= 1.5); vs NumPy {p["numpy_ew"] / ew:.2f}x')
mm = best(r'matmul 1024\^3 f32: ([0-9.]+) ms')
if mm is not None:
    print(f'matmul 1024^3: {p["numpy_mm"] / mm:.2f}x NumPy/OpenBLAS 1 thread (target >= 0.5)')
st = best(r'static variant: ([0-9.]+) ms')
if st is not None:
    dy = best(r'static variant: [0-9.]+ ms; dynamic: ([0-9.]+) ms')
    print(f'dynamic vs static variant (encoder B=4 S=128): {st / dy:.2f}x (target >= 0.9)')
for B, S in [(1, 128), (4, 128), (1, 512), (8, 64)]:
    sm = best(rf'softmax B={B} S={S}: ([0-9.]+) ms')
    if sm is None:
        continue
    enc = best(rf'softmax B={B} S={S}: [0-9.]+ ms; encoder_layer: ([0-9.]+) ms')
    print(f'(B,S)=({B},{S}): softmax {p[f"torch_softmax_{B}_{S}"] / sm:.2f}x, '
          f'encoder_layer {p[f"torch_encoder_{B}_{S}"] / enc:.2f}x PyTorch eager (target >= 1.0)')
conv = best(r'conv3x3 64ch N=4 56x56: ([0-9.]+) ms')
if conv is not None:
    block = best(r'resnet_block: ([0-9.]+) ms')
    print(f'conv2d 3x3 64ch N=4 56x56: {p["torch_conv3x3"] / conv:.2f}x PyTorch 1 thread '
          f'(target >= 0.67: within 1.5x)')
    print(f'ResNet basic block N=4 56x56 64ch: {p["torch_resnet_block"] / block:.2f}x PyTorch '
          f'1 thread (target >= 0.7)')
att = best(r'attention B=1 H=8 S=T=1024 D=64: ([0-9.]+) ms')
if att is not None:
    print(f'attention 8 heads S=T=1024 D=64: {p["torch_attention"] / att:.2f}x '
          f'scaled_dot_product_attention 1 thread (no target)')
PY
