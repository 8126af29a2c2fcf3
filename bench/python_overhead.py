#!/usr/bin/env python3
"""Per-call overhead of calling TSL from Python (bench/python_overhead.sh).

A tiny function (x + y on f32[16]) on the CPU, one thread:
  tsl_native   the same call from C++ through the runtime (`tslc bench`:
               dispatch, kernel, result allocation) -- the kernel time here
  tsl_python   fn(x, y) from Python on NumPy arrays (DLPack in, tsl.Tensor out)
  torch_eager  torch.add(x, y) on torch tensors
  torch_compile  the same add through torch.compile(dynamic=True)
Each figure is the best of interleaved rounds (mean per call in a round).
Targets (issue 14): tsl_python - tsl_native <= 2 us, and TSL's overhead at
least 5x lower than torch.compile's (torch_compile - torch_eager).
Usage: python_overhead.py TSLC [N]  (TSLC: path of build/bin/tslc)"""
import os
import re
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("TSL_CACHE_DIR", "off")

import numpy as np  # noqa: E402
import torch  # noqa: E402

import tsl  # noqa: E402

torch.set_num_threads(1)
tslc = sys.argv[1]
n = int(sys.argv[2]) if len(sys.argv) > 2 else 16
rounds = int(os.environ.get("TSL_BENCH_ROUNDS", "5"))
source = "dim N: dynamic;\nfn add(x: f32[N], y: f32[N]) -> f32[N] { return x + y; }\n"


def per_call(fn, calls=20000):
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - start) / calls * 1e6


def native_us(path):
    out = subprocess.run([tslc, "bench", path, "--fn", "add", "--arg", f"x=f32[{n}]",
                          "--arg", f"y=f32[{n}]"], capture_output=True, text=True, check=True)
    median = re.search(r"median = ([0-9.]+) ms", out.stdout)
    return float(median.group(1)) * 1e3


with tempfile.TemporaryDirectory() as tmp:
    path = os.path.join(tmp, "tiny.tsl")
    with open(path, "w") as f:
        f.write(source)
    fn = tsl.load(path).add
    x = np.random.default_rng(0).standard_normal(n).astype(np.float32)
    y = np.random.default_rng(1).standard_normal(n).astype(np.float32)
    np.testing.assert_allclose(np.asarray(fn(x, y)), x + y)
    xt, yt = torch.from_numpy(x), torch.from_numpy(y)
    compiled = torch.compile(lambda a, b: a + b, dynamic=True)
    torch.testing.assert_close(compiled(xt, yt), xt + yt)  # compiles here
    best = {}
    for r in range(rounds):
        figures = {
            "tsl_native": native_us(path),
            "tsl_python": per_call(lambda: fn(x, y)),
            "torch_eager": per_call(lambda: torch.add(xt, yt)),
            "torch_compile": per_call(lambda: compiled(xt, yt), 5000),
        }
        for k, v in figures.items():
            best[k] = min(best.get(k, float("inf")), v)
        print(f"round {r + 1}: " + ", ".join(f"{k} {v:.2f} us" for k, v in figures.items()))

print(f"--- per call, f32[{n}] add, best of {rounds} rounds (us)")
for k, v in best.items():
    print(f"{k:14s} {v:8.2f}")
tsl_overhead = best["tsl_python"] - best["tsl_native"]
torch_overhead = best["torch_compile"] - best["torch_eager"]
print(f"TSL overhead from Python: {tsl_overhead:.2f} us above the native call (target <= 2 us): "
      f"{'ok' if tsl_overhead <= 2 else 'MISSED'}")
print(f"torch.compile overhead: {torch_overhead:.2f} us above eager; "
      f"{torch_overhead / max(tsl_overhead, 1e-3):.1f}x TSL's (target >= 5x): "
      f"{'ok' if torch_overhead >= 5 * tsl_overhead else 'MISSED'}")
print(f"whole call: torch.compile {best['torch_compile'] / best['tsl_python']:.1f}x TSL's time, "
      f"eager {best['torch_eager'] / best['tsl_python']:.1f}x")
