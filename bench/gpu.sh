#!/usr/bin/env bash
# GPU benchmarks in one run, side by side with PyTorch measured in the same
# run on the same GPU (bench/gpu_peers.py), each ratio PyTorch time / TSL
# time (> 1: TSL is faster) with issue 12's target next to it:
# elementwise over 256M floats vs a device-to-device copy; softmax,
# log_softmax and layer_norm over 8192x1024 in f32 and f16 (also as a
# fraction of the copy bandwidth); sums over axis 0 of [8192, 1024] and axis
# 1 of [64, 4096, 256]; nonzero of a 4096x4096 mask and masked_select over
# 16M floats; the tiny call (exp(x)+1 on 1,000 floats, synchronized) vs
# eager and torch.compile; matmul 4096^3 (f32, bf16) vs torch.matmul;
# attention S=T=4096, 16 heads of 64, bf16 vs scaled_dot_product_attention; and
# nn.encoder_layer at D=1024 across 20 sequence lengths vs the same layer as
# explicit PyTorch ops, eager and torch.compile(dynamic=True) (graphs and
# recompiles printed). Needs a CUDA driver and PyTorch with CUDA
# (python3 -c 'import torch' must work, or bench/venv.sh's .venv-bench).
# `--small` shrinks every size: a smoke test of the scripts that also runs
# without a GPU (GPU emulator, CPU torch), not a benchmark. A measurement
# that fails prints "not run" (TSL) or "error_..." (peers); the others still
# run and the exit status is then non-zero.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
small=()
tslflags=()
if [ "${1:-}" = "--small" ]; then
  small=(--small)
  tslflags=(--small)
fi
bin="${TSL_BIN_DIR:-$root/build/bin}"
[ -x "$bin/tsl_bench_gpu" ] || "$root/scripts/build.sh" >/dev/null
python=${TSL_PYTHON:-python3}
if ! "$python" -c 'import torch' 2>/dev/null && [ -x "$root/.venv-bench/bin/python" ]; then
  python="$root/.venv-bench/bin/python"
fi
if [ ${#small[@]} -gt 0 ] &&
  ! "$python" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
  tslflags+=(--emulator)
fi
# Time limits (seconds) keep a hung kernel from eating a whole device
# session; what ran before is still printed.
tsllimit=${TSL_BENCH_TSL_LIMIT:-240}
peerlimit=${TSL_BENCH_PEER_LIMIT:-300}
status=0
tsl=$(timeout "$tsllimit" "$bin/tsl_bench_gpu" "$root/bench/gpu_models.tsl" "${tslflags[@]}") ||
  status=$?
[ "$status" -ne 124 ] || tsl+=$'\n'"tsl_bench_gpu: stopped after $tsllimit s (TSL_BENCH_TSL_LIMIT)"
peerlog=$(mktemp)
trap 'rm -f "$peerlog"' EXIT
peerstatus=0
peers=$(timeout "$peerlimit" "$python" "$root/bench/gpu_peers.py" "${small[@]}" 2>"$peerlog") ||
  peerstatus=$?
[ "$peerstatus" -ne 124 ] ||
  peers+=$'\n'"gpu_peers.py: stopped after $peerlimit s (TSL_BENCH_PEER_LIMIT)"
echo "$tsl"
echo "--- peers"
echo "$peers"
if [ "$peerstatus" -ne 0 ] || grep -q '^error_' <<<"$peers"; then
  echo "--- peers' stderr (last 40 lines)"
  tail -n 40 "$peerlog"
  status=1
fi
[ "$peerstatus" -eq 0 ] || status=1
echo "--- ratios (PyTorch time / TSL time: > 1 means TSL is faster)"
python3 - "$tsl" "$peers" <<'PY' || status=1
import re, sys
tsl, peers = sys.argv[1], dict(l.split(': ', 1) for l in sys.argv[2].splitlines() if ': ' in l)
p = {k: float(v) for k, v in peers.items() if re.fullmatch(r'[0-9.e+-]+', v)}


def tsl_value(pattern):
    """The first group of pattern in the TSL output as a float, or None."""
    m = re.search(pattern, tsl, re.M)
    return float(m.group(1)) if m else None


def missing(what, *keys):
    gone = [k for k in keys if k not in p]
    if gone:
        print(f'{what}: not measured (missing: {", ".join(gone)})')
    return bool(gone)


copy = p.get('copy_gbs')
gbs = tsl_value(r'^ew \d+ f32: [0-9.]+ ms = ([0-9.]+) GB/s')
ew = tsl_value(r'^ew \d+ f32: ([0-9.]+) ms')
if gbs is None:
    print('elementwise: not measured (TSL)')
elif not missing('elementwise', 'copy_gbs', 'torch_ew_ms'):
    print(f'elementwise: {gbs:.0f} GB/s = {gbs / copy:.2f}x the device-to-device copy '
          f'({copy:.0f} GB/s; target >= 0.85)')
    print(f'elementwise vs PyTorch eager: {p["torch_ew_ms"] / ew:.2f}x')

for dtype in ('f32', 'f16'):
    for op in ('softmax', 'log_softmax', 'layer_norm'):
        m = re.search(rf'^{op} (\d+)x(\d+) {dtype}: ([0-9.]+) ms = ([0-9.]+) GB/s', tsl, re.M)
        key = f'torch_{op}_{dtype}_ms'
        if not m:
            print(f'{op} {dtype}: not measured (TSL)')
        elif not missing(f'{op} {dtype}', key, 'copy_gbs'):
            t, g = float(m.group(3)), float(m.group(4))
            print(f'{op} {m.group(1)}x{m.group(2)} {dtype}: TSL {t:.4f} ms, PyTorch '
                  f'{p[key]:.4f} ms: {p[key] / t:.2f}x (target >= 1.0); {g:.0f} GB/s = '
                  f'{g / copy:.2f} of copy bandwidth (target >= 0.8)')

for name, pattern, key, target in [
        ('sum axis 0', r'^sum axis 0 \S+ f32: ([0-9.]+) ms', 'torch_sum_axis0_ms', 'no target'),
        ('sum axis 1', r'^sum axis 1 \S+ f32: ([0-9.]+) ms', 'torch_sum_axis1_ms', 'no target'),
        ('nonzero', r'^nonzero \S+ bool: ([0-9.]+) ms', 'torch_nonzero_ms', 'target >= 0.5'),
        ('masked_select', r'^masked_select \d+ f32: ([0-9.]+) ms', 'torch_masked_select_ms',
         'target >= 0.5')]:
    t = tsl_value(pattern)
    if t is None:
        print(f'{name}: not measured (TSL)')
    elif not missing(name, key):
        print(f'{name}: TSL {t:.4f} ms, PyTorch {p[key]:.4f} ms: {p[key] / t:.2f}x ({target})')
if 'WRONG COUNT' in tsl:
    print('compaction: TSL returned a wrong number of elements (see above)')

tiny = tsl_value(r'^tiny 1000 f32: ([0-9.]+) us')
if tiny is None:
    print('tiny call: not measured (TSL)')
elif not missing('tiny call', 'torch_tiny_eager_us', 'torch_tiny_compile_us'):
    print(f'tiny call: TSL {tiny:.1f} us (target <= 20 us), eager {p["torch_tiny_eager_us"]:.1f} '
          f'us ({p["torch_tiny_eager_us"] / tiny:.2f}x), torch.compile '
          f'{p["torch_tiny_compile_us"]:.1f} us ({p["torch_tiny_compile_us"] / tiny:.2f}x)')

for name in ('f32', 'bf16'):
    for own, target in (('', '>= 0.9 with cuBLASLt'),
                        (' own kernel', '>= 0.5' if name == 'bf16' else 'no target')):
        m = re.search(rf'^matmul \d+\^3 {name}{own}: ([0-9.]+) ms.* via (.*)$', tsl, re.M)
        if m is None:
            print(f'matmul {name}{own}: not measured (TSL)')
        elif not missing(f'matmul {name}', f'torch_mm_{name}_ms'):
            t = float(m.group(1))
            print(f'matmul {name}{own}: {p[f"torch_mm_{name}_ms"] / t:.3f}x torch.matmul '
                  f'({target}; via {m.group(2)})')

m = re.search(r'^attention S=T=(\d+) \S+ bf16: ([0-9.]+) ms = ([0-9.]+) TFLOP/s', tsl, re.M)
if m is None:
    print('attention bf16: not measured (TSL)')
elif not missing('attention bf16', 'torch_attention_bf16_ms'):
    t = float(m.group(2))
    print(f'attention S=T={m.group(1)} bf16: TSL {t:.4f} ms ({m.group(3)} TFLOP/s), SDPA '
          f'{p["torch_attention_bf16_ms"]:.4f} ms: {p["torch_attention_bf16_ms"] / t:.2f}x '
          f'(target >= 0.8)')

m = re.search(r'compiles (\d+), compile time ([0-9.]+) ms, mean latency ([0-9.]+) ms', tsl)
keys = ('torch_encoder_eager_ms', 'torch_compile_encoder_ms', 'torch_compile_time_ms',
        'torch_compile_graphs', 'torch_compile_recompiles')
if not m:
    print('encoder: not measured (TSL)')
elif not missing('encoder', *keys):
    compiles, ctime, lat = int(m.group(1)), float(m.group(2)), float(m.group(3))
    print(f'encoder latency: {p["torch_encoder_eager_ms"] / lat:.2f}x eager, '
          f'{p["torch_compile_encoder_ms"] / lat:.2f}x torch.compile (target >= 1.0 vs '
          f'torch.compile)')
    graphs, recompiles = int(p['torch_compile_graphs']), int(p['torch_compile_recompiles'])
    print(f'encoder compile time: TSL {ctime:.0f} ms ({compiles} compiles) vs torch.compile '
          f'{p["torch_compile_time_ms"]:.0f} ms ({graphs} graphs, {recompiles} recompiles): '
          f'{p["torch_compile_time_ms"] / max(ctime, 1e-3):.1f}x (target >= 10)')
    if graphs == 0:
        print('encoder: torch.compile compiled 0 graphs: the peer did not really compile')
        sys.exit(1)
PY
exit "$status"
