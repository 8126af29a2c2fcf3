#!/usr/bin/env python3
"""PyTorch peers for bench/gpu.sh, on the same GPU and at the same sizes as
tsl_bench_gpu (bench/GpuBench.cpp): device-to-device copy bandwidth, eager
relu(x*1.5+0.5)*2.0, torch.matmul 4096^3 in f32 and bf16, softmax,
log_softmax and layer_norm over 8192x1024 in f32 and f16, sums over axis 0
of [8192, 1024] and axis 1 of [64, 4096, 256], nonzero of a 4096x4096 mask,
masked_select over 16M floats, the tiny call (exp(x)+1 on 1,000 floats,
synchronized) eager and torch.compile, and TSL's nn.encoder_layer (D=1024)
written as the same explicit ops across the 20 sequence lengths of
tsl_bench_gpu, eager and torch.compile(dynamic=True): steady latency,
compile time, graphs and recompiles. Prints 'key: value' lines; a section
that fails prints 'error_SECTION: ...' and the others still run.

Timing as in GpuBench.cpp: inputs allocated once, two warm-up calls, then the
median over reps of (inner calls back to back + one synchronize) / inner
(fewer reps for slow calls).

--small shrinks every size (a smoke test, also on the CPU)."""
import math
import subprocess
import sys
import time
import traceback

import torch
import torch._dynamo
import torch.nn.functional as F
from torch._dynamo.utils import counters

sys.stdout.reconfigure(line_buffering=True)  # what ran survives a crash or a time limit
small = '--small' in sys.argv
dev = 'cuda' if torch.cuda.is_available() else 'cpu'
if dev == 'cpu' and not small:
    sys.exit('gpu_peers.py: no CUDA device (use --small for a CPU smoke test)')
if dev == 'cpu':
    torch.set_num_threads(1)  # the smoke test shares a few busy cores
REPS = 2 if small else 50
INNER = 1 if small else 10


def sync():
    if dev == 'cuda':
        torch.cuda.synchronize()


def median(fn, reps, inner=1, budget=2.0):
    """Two warm-up calls (the second estimates one call's time), then the
    median over reps of (inner calls + one synchronize) / inner; where that
    would take longer than budget seconds, inner becomes 1 and reps as many
    as fit (at least 3), as in GpuBench.cpp."""
    fn()
    sync()
    start = time.perf_counter()
    fn()
    sync()
    once = time.perf_counter() - start
    if once * reps * inner > budget:
        inner, reps = 1, max(3, min(reps, int(budget / once)))
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        for _ in range(inner):
            fn()
        sync()
        times.append((time.perf_counter() - start) / inner)
    times.sort()
    return times[len(times) // 2]


def randn(*shape, dtype=torch.float32):
    """N(0, 0.05) values, as tsl_bench_gpu's inputs."""
    return (torch.randn(*shape, device=dev) * 0.05).to(dtype)


def mask(*shape):
    """True with probability 1/2."""
    return torch.randn(*shape, device=dev) > 0


def section(name, fn):
    try:
        fn()
    except Exception as e:  # report and go on: one run must show everything
        print(f'error_{name}: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ""}')
        traceback.print_exc(file=sys.stderr)
    sys.stdout.flush()


def versions():
    print(f'device: {torch.cuda.get_device_name() if dev == "cuda" else "cpu"}')
    print(f'torch: {torch.__version__} (CUDA {torch.version.cuda})')
    if dev != 'cuda':
        return
    try:
        out = subprocess.run(['nvidia-smi', '--query-gpu=driver_version',
                              '--format=csv,noheader'], capture_output=True,
                             text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        out = ''
    if not out:  # no nvidia-smi: ask the driver library for its CUDA version
        import ctypes
        v = ctypes.c_int()
        ctypes.CDLL('libcuda.so.1').cuDriverGetVersion(ctypes.byref(v))
        out = f'CUDA {v.value // 1000}.{v.value % 1000 // 10}'
    print(f'driver: {out.splitlines()[0]}')


def copy_and_ew():
    n = 1 << 16 if small else 1 << 28
    x = randn(n)
    y = torch.empty_like(x)
    t = median(lambda: y.copy_(x), 20)
    print(f'copy_gbs: {8.0 * n / t / 1e9:.1f}')
    t = median(lambda: torch.relu(x * 1.5 + 0.5) * 2.0, 20)
    print(f'torch_ew_ms: {t * 1e3:.4f}')


def matmuls():
    m = 64 if small else 4096
    for dtype, name in [(torch.float32, 'f32'), (torch.bfloat16, 'bf16')]:
        a, b = randn(m, m, dtype=dtype), randn(m, m, dtype=dtype)
        t = median(lambda: torch.matmul(a, b), 2 if small else 5)
        print(f'torch_mm_{name}_ms: {t * 1e3:.4f}')


def attention():
    s, heads = (70, 2) if small else (4096, 16)
    q, k, v = (randn(1, heads, s, 64, dtype=torch.bfloat16) for _ in range(3))
    f = torch.nn.functional.scaled_dot_product_attention
    t = median(lambda: f(q, k, v), 2 if small else 10)
    print(f'torch_attention_bf16_ms: {t * 1e3:.4f}')


def rows_and_sums():
    r, c = (48, 1100) if small else (8192, 1024)
    for dtype, name in [(torch.float32, 'f32'), (torch.float16, 'f16')]:
        x, w, b = randn(r, c, dtype=dtype), randn(c, dtype=dtype), randn(c, dtype=dtype)
        for op, fn in [('softmax', lambda: torch.softmax(x, -1)),
                       ('log_softmax', lambda: torch.log_softmax(x, -1)),
                       ('layer_norm', lambda: F.layer_norm(x, (c,), w, b, 1e-5))]:
            print(f'torch_{op}_{name}_ms: {median(fn, REPS, INNER) * 1e3:.4f}')
    x = randn(r, c)
    print(f'torch_sum_axis0_ms: {median(lambda: x.sum(0), REPS, INNER) * 1e3:.4f}')
    x3 = randn(*((4, 33, 20) if small else (64, 4096, 256)))
    print(f'torch_sum_axis1_ms: {median(lambda: x3.sum(1), REPS, INNER) * 1e3:.4f}')


def compaction():
    side = 100 if small else 4096
    reps = 2 if small else 20
    m = mask(side, side)
    print(f'torch_nonzero_ms: {median(lambda: torch.nonzero(m), reps, INNER) * 1e3:.4f}')
    x, m = randn(side * side), mask(side * side)
    t = median(lambda: torch.masked_select(x, m), reps, INNER)
    print(f'torch_masked_select_ms: {t * 1e3:.4f}')


def tiny_call():
    x = randn(1000)
    reps = 20 if small else 2000
    print(f'torch_tiny_eager_us: {median(lambda: torch.exp(x) + 1, reps) * 1e6:.2f}')
    compiled = torch.compile(lambda v: torch.exp(v) + 1)
    print(f'torch_tiny_compile_us: {median(lambda: compiled(x), reps) * 1e6:.2f}')


def encoder_layer(x, heads: int, wq, wk, wv, wo, ln1_w, ln1_b, w1, b1, w2, b2, ln2_w, ln2_b):
    """stdlib/nn.tsl's encoder_layer as explicit ops, the same math: post-norm,
    attention without mask scaled by rsqrt(head width), exact (erf) GELU."""
    bsz, s, d = x.shape
    dh = d // heads

    def split_heads(t):
        return t.reshape(bsz, s, heads, dh).permute(0, 2, 1, 3)

    q, k, v = split_heads(x @ wq), split_heads(x @ wk), split_heads(x @ wv)
    scores = q @ k.transpose(-1, -2) * (1.0 / math.sqrt(dh))
    a = (torch.softmax(scores, -1) @ v).permute(0, 2, 1, 3).reshape(bsz, s, d) @ wo
    h = F.layer_norm(x + a, (d,), ln1_w, ln1_b, 1e-5)
    f = F.gelu(h @ w1 + b1) @ w2 + b2
    return F.layer_norm(h + f, (d,), ln2_w, ln2_b, 1e-5)


def encoders():
    d = 64 if small else 1024
    f, heads = 4 * d, d // 64
    weights = [randn(*shape) for shape in
               [(d, d), (d, d), (d, d), (d, d), (d,), (d,), (d, f), (f,), (f, d), (d,), (d,), (d,)]]
    lengths = [4 + 3 * i if small else 64 + 48 * i for i in range(20)]
    reps = 2 if small else 5
    inputs = [randn(1, s, d) for s in lengths]
    with torch.no_grad():
        eager = [median(lambda: encoder_layer(xs, heads, *weights), reps) for xs in inputs]
        print(f'torch_encoder_eager_ms: {sum(eager) / len(eager) * 1e3:.4f}')

        torch._dynamo.reset()
        counters.clear()
        compiled = torch.compile(encoder_layer, dynamic=True)
        compile_s, steady = 0.0, []
        for xs in inputs:
            start = time.perf_counter()
            compiled(xs, heads, *weights)
            sync()
            first = time.perf_counter() - start
            st = median(lambda: compiled(xs, heads, *weights), reps)
            steady.append(st)
            compile_s += max(0.0, first - st)
    print(f'torch_compile_encoder_ms: {sum(steady) / len(steady) * 1e3:.4f}')
    print(f'torch_compile_time_ms: {compile_s * 1e3:.1f}')
    print(f'torch_compile_graphs: {counters["stats"]["unique_graphs"]}')
    # Frames compiled (the first compile and each recompile), the recompiles
    # as guard failures where this torch records them, and graph breaks.
    frames = counters['frames']['total']
    failures = getattr(torch._dynamo.utils, 'guard_failures', None)
    recompiles = (sum(len(v) for v in failures.values()) if failures is not None
                  else max(0, frames - 1))
    print(f'torch_compile_frames: {frames}')
    print(f'torch_compile_recompiles: {recompiles}')
    print(f'torch_compile_graph_breaks: {sum(counters["graph_break"].values())}')


for name, fn in [('versions', versions), ('copy_ew', copy_and_ew), ('matmul', matmuls),
                 ('rows', rows_and_sums), ('compaction', compaction), ('tiny', tiny_call),
                 ('attention', attention), ('encoder', encoders)]:
    section(name, fn)
