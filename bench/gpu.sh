#!/usr/bin/env bash
# GPU benchmarks in one run, side by side with PyTorch measured in the same
# run on the same GPU (bench/gpu_peers.py): elementwise over 256M floats vs
# a device-to-device copy, matmul 4096^3 (f32, bf16) vs torch.matmul, and
# nn.encoder_layer at D=1024 across 20 sequence lengths vs PyTorch eager and
# torch.compile(dynamic=True). Needs a CUDA driver and PyTorch with CUDA
# (python3 -c 'import torch' must work). `--small` shrinks every size: a
# smoke test of the scripts that also runs without a GPU (GPU emulator, CPU
# torch), not a benchmark.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
small=()
tslflags=()
if [ "${1:-}" = "--small" ]; then
  small=(--small)
  tslflags=(--small)
  if ! python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
    tslflags+=(--emulator)
  fi
fi
bin="${TSL_BIN_DIR:-$root/build/bin}"
[ -x "$bin/tsl_bench_gpu" ] || "$root/scripts/build.sh" >/dev/null
python=${TSL_PYTHON:-python3}
if ! "$python" -c 'import torch' 2>/dev/null && [ -x "$root/.venv-bench/bin/python" ]; then
  python="$root/.venv-bench/bin/python"
fi
tsl=$("$bin/tsl_bench_gpu" "$root/bench/gpu_models.tsl" "${tslflags[@]}")
peers=$("$python" "$root/bench/gpu_peers.py" "${small[@]}" 2>/dev/null)
echo "$tsl"
echo "--- peers"
echo "$peers"
echo "--- ratios (> 1 means TSL is faster)"
python3 - "$tsl" "$peers" <<'PY'
import re, sys
tsl, peers = sys.argv[1], dict(l.split(': ', 1) for l in sys.argv[2].splitlines() if ': ' in l)
p = {k: float(v) for k, v in peers.items() if re.fullmatch(r'[0-9.e+-]+', v)}
gbs = float(re.search(r'ew \d+ f32: [0-9.]+ ms = ([0-9.]+) GB/s', tsl).group(1))
print(f'elementwise: {gbs:.0f} GB/s = {gbs / p["copy_gbs"]:.2f}x the device-to-device copy '
      f'({p["copy_gbs"]:.0f} GB/s; target >= 0.70)')
ew = float(re.search(r'ew \d+ f32: ([0-9.]+) ms', tsl).group(1))
print(f'elementwise vs PyTorch eager: {p["torch_ew_ms"] / ew:.2f}x')
for name in ('f32', 'bf16'):
    t = float(re.search(rf'matmul \d+\^3 {name}: ([0-9.]+) ms', tsl).group(1))
    print(f'matmul {name}: {p[f"torch_mm_{name}_ms"] / t:.3f}x torch.matmul')
m = re.search(r'compiles (\d+), compile time ([0-9.]+) ms, mean latency ([0-9.]+) ms', tsl)
compiles, ctime, lat = int(m.group(1)), float(m.group(2)), float(m.group(3))
print(f'encoder latency: {p["torch_encoder_eager_ms"] / lat:.2f}x eager, '
      f'{p["torch_compile_encoder_ms"] / lat:.2f}x torch.compile (target >= 1.0 vs torch.compile)')
print(f'encoder compile time: TSL {ctime:.0f} ms ({compiles} compiles) vs torch.compile '
      f'{p["torch_compile_time_ms"]:.0f} ms ({int(p["torch_compile_graphs"])} graphs): '
      f'{p["torch_compile_time_ms"] / max(ctime, 1e-3):.1f}x (target >= 10)')
PY
