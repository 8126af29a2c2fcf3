#!/usr/bin/env python3
"""Peers for bench/cpu.sh: NumPy (OpenBLAS) and PyTorch on the CPU, eager and
torch.compile(dynamic=True), on --threads N threads (default 1).

    cpu_peers.py [--threads N] [--info] [group...]

Groups as for tsl_bench_cpu (dispatch ew mm encoder rows conv attention);
none runs all. Prints 'key: milliseconds' lines for the script to compare,
'count_KEY: n' lines (torch.compile's graphs and recompiles) and, with
--info, 'info: ...' lines saying what ran: OpenBLAS's kernel and threads as
threadpoolctl reports them, PyTorch's BLAS and CPU capability, the
allocator setting.

Fairness with TSL, which runs in the same process layout:
- the thread count is set before NumPy and PyTorch load (OPENBLAS_NUM_THREADS,
  OMP_NUM_THREADS, MKL_NUM_THREADS, torch.set_num_threads);
- glibc's malloc gets the TSL runtime's setting (runtime/KernelLibrary.cpp:
  M_MMAP_THRESHOLD and M_TRIM_THRESHOLD at 1 GiB) before anything is
  allocated, so freed large outputs stay in the heap on both sides instead of
  page-faulting fresh memory on every call;
- bench/cpu.sh runs this with OpenBLAS's and MKL's core-type overrides unset
  (env -u), so each library picks its native kernel for this CPU.
Timing as in CpuBench.cpp: one warm-up call, then the median of reps calls."""
import ctypes
import math
import os
import sys

args = sys.argv[1:]
threads = 1
if '--threads' in args:
    i = args.index('--threads')
    threads = int(args[i + 1])
    del args[i:i + 2]
info = '--info' in args
groups = [a for a in args if a != '--info']
for var in ('OPENBLAS_NUM_THREADS', 'OMP_NUM_THREADS', 'MKL_NUM_THREADS'):
    os.environ[var] = str(threads)

# glibc's mallopt: M_TRIM_THRESHOLD = -1, M_MMAP_THRESHOLD = -3 (malloc.h).
libc = ctypes.CDLL(None)
malloc_tuned = bool(libc.mallopt(-3, 1 << 30)) and bool(libc.mallopt(-1, 1 << 30))

import time  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch._dynamo.utils import counters  # noqa: E402

torch.set_num_threads(threads)
sys.stdout.reconfigure(line_buffering=True)  # what ran survives a crash


def want(group):
    return not groups or group in groups


def median(fn, reps):
    fn()
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    times.sort()
    return times[len(times) // 2]


def ms(key, seconds):
    print(f'{key}: {seconds * 1e3:.4f}')


def print_info():
    """What the peers run on: OpenBLAS's kernel (threadpoolctl), PyTorch's
    BLAS, CPU capability and threads, the allocator setting."""
    try:
        from threadpoolctl import threadpool_info
        pools = threadpool_info()
    except ImportError:
        pools = []
        print('info: threadpoolctl missing (pip install threadpoolctl): kernels not reported')
    for p in pools:
        owner = 'torch' if '/torch/' in p['filepath'] else 'numpy' if 'numpy' in p['filepath'] else '?'
        what = f"{owner}: {p['internal_api']} {p.get('version') or ''}".rstrip()
        arch = f", kernel {p['architecture']}" if p.get('architecture') else ''
        print(f"info: {what}{arch}, {p['num_threads']} threads ({os.path.basename(p['filepath'])})")
    config = torch.__config__.show()
    blas = next((s.split('=')[1] for s in config.replace(',', '\n').split() if s.startswith('BLAS_INFO=')),
                '?')
    print(f'info: torch {torch.__version__}: GEMM by {blas} (linked into libtorch, so threadpoolctl '
          f'does not list it), CPU capability {torch.backends.cpu.get_cpu_capability()}, '
          f'{torch.get_num_threads()} threads')
    overrides = [v for v in ('OPENBLAS_CORETYPE', 'OPENBLAS_VERBOSE', 'MKL_DEBUG_CPU_TYPE',
                             'MKL_ENABLE_INSTRUCTIONS', 'MKL_CBWR', 'ATEN_CPU_CAPABILITY')
                 if v in os.environ]
    print(f'info: kernel overrides in the peers\' environment: {", ".join(overrides) or "none"}')
    if threads > 1:
        print('info: the encoder with NumPy GEMMs runs on one thread only (two thread pools '
              'in one process fight over the cores)')
    print(f'info: peers\' malloc: mallopt(M_MMAP_THRESHOLD and M_TRIM_THRESHOLD, 1 GiB) '
          f'{"applied" if malloc_tuned else "FAILED"}, as the TSL runtime does')


def encoder_layer(x, heads: int, wq, wk, wv, wo, ln1_w, ln1_b, w1, b1, w2, b2, ln2_w, ln2_b,
                  mm=torch.matmul):
    """stdlib/nn.tsl's encoder_layer as explicit ops (bench/gpu_peers.py's
    formulation): post-norm, attention without mask scaled by rsqrt(head
    width), exact (erf) GELU. mm does every matrix product."""
    bsz, s, d = x.shape
    dh = d // heads

    def split_heads(t):
        return t.reshape(bsz, s, heads, dh).permute(0, 2, 1, 3)

    q, k, v = split_heads(mm(x, wq)), split_heads(mm(x, wk)), split_heads(mm(x, wv))
    scores = mm(q, k.transpose(-1, -2)) * (1.0 / math.sqrt(dh))
    a = mm(mm(torch.softmax(scores, -1), v).permute(0, 2, 1, 3).reshape(bsz, s, d), wo)
    h = F.layer_norm(x + a, (d,), ln1_w, ln1_b, 1e-5)
    f = mm(F.gelu(mm(h, w1) + b1), w2) + b2
    return F.layer_norm(h + f, (d,), ln2_w, ln2_b, 1e-5)


def numpy_mm(a, b):
    """A matrix product by NumPy's OpenBLAS on torch tensors (no copies
    where the strides allow)."""
    return torch.from_numpy(np.matmul(a.numpy(), b.numpy()))


def randn(*shape):
    """N(0, 0.05) values, as tsl_bench_cpu's inputs."""
    return torch.randn(*shape) * 0.05


def encoders():
    """The encoder layer at tsl_bench_cpu's shapes (D=256, 4 heads, at four
    (B, S); D=768, 12 heads, at B=1 S=256): PyTorch's module eager, the
    explicit ops eager with PyTorch's and with NumPy's GEMMs, and the explicit
    ops under one torch.compile(dynamic=True) for all shapes. The NumPy-GEMM
    layer runs on one thread only: on more, OpenBLAS's threads and PyTorch's
    OpenMP threads are two pools in one process and take turns spinning on
    each other's cores (2-100x slower here), which measures the mix, not a
    peer anyone would run."""
    shapes = [(256, 4, 1, 128), (256, 4, 4, 128), (256, 4, 1, 512), (256, 4, 8, 64),
              (768, 12, 1, 256)]
    weights = {}
    for d in (256, 768):
        f = 4 * d
        weights[d] = [randn(*s) for s in [(d, d), (d, d), (d, d), (d, d), (d,), (d,), (d, f), (f,),
                                          (f, d), (d,), (d,), (d,)]]
    torch._dynamo.reset()
    counters.clear()
    compiled = torch.compile(encoder_layer, dynamic=True)
    for d, heads, b, s in shapes:
        t = randn(b, s, d)
        w = weights[d]
        tag = f'{b}_{s}' if d == 256 else f'd{d}_{b}_{s}'
        if d == 256:
            sm = median(lambda: torch.softmax(t, dim=-1), 500)
            ms(f'torch_softmax_{b}_{s}', sm)
            layer = torch.nn.TransformerEncoderLayer(d_model=d, nhead=heads, dim_feedforward=4 * d,
                                                     dropout=0.0, activation='gelu',
                                                     batch_first=True).eval()
            ms(f'torch_encoder_{tag}', median(lambda: layer(t), 5))
        ms(f'torch_encoder_ops_{tag}', median(lambda: encoder_layer(t, heads, *w), 5))
        if threads == 1:  # see encoders()' docstring
            ms(f'numpy_encoder_ops_{tag}',
               median(lambda: encoder_layer(t, heads, *w, mm=numpy_mm), 5))
        ms(f'torch_compile_encoder_{tag}', median(lambda: compiled(t, heads, *w), 5))
    # Graphs compiled, frames (the first compile and each recompile), and the
    # recompiles as guard failures where this torch records them.
    frames = counters['frames']['total']
    failures = getattr(torch._dynamo.utils, 'guard_failures', None)
    recompiles = (sum(len(v) for v in failures.values()) if failures is not None
                  else max(0, frames - 1))
    print(f'count_compile_graphs: {counters["stats"]["unique_graphs"]}')
    print(f'count_compile_recompiles: {recompiles}')
    print(f'count_compile_graph_breaks: {sum(counters["graph_break"].values())}')


class BasicBlock(torch.nn.Module):
    """ResNet's basic block (torchvision's, without downsampling)."""

    def __init__(self, c):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn1 = torch.nn.BatchNorm2d(c)
        self.conv2 = torch.nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn2 = torch.nn.BatchNorm2d(c)

    def forward(self, x):
        out = torch.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return torch.relu(out + x)


def dispatch():
    """Guard and dispatch cost of torch.compile(dynamic=True) with ten inputs
    whose sizes must agree: compiled call time minus eager time."""
    def guarded(*xs):
        out = xs[0]
        for v in xs[1:]:
            out = out + v
        return out
    args = [torch.randn(4) for _ in range(11)]
    compiled = torch.compile(guarded, dynamic=True)
    compiled(*args)
    n = 20000
    start = time.perf_counter()
    for _ in range(n):
        compiled(*args)
    per_compiled = (time.perf_counter() - start) / n
    start = time.perf_counter()
    for _ in range(n):
        guarded(*args)
    per_eager = (time.perf_counter() - start) / n
    ms('torch_compile_call_overhead', per_compiled - per_eager)


def main():
    if info:
        print_info()
    rng = np.random.default_rng(1)
    with torch.no_grad():
        if want('ew'):
            x = rng.standard_normal(1 << 24, dtype=np.float32)
            ms('numpy_ew', median(lambda: np.maximum(x * 1.5 + 0.5, 0) * 2.0, 15))
            t = torch.from_numpy(x)
            ms('torch_ew', median(lambda: torch.relu(t * 1.5 + 0.5) * 2.0, 15))
        if want('mm'):
            for n, reps in [(1024, 5), (4096, 3)]:
                a = rng.standard_normal((n, n), dtype=np.float32)
                b = rng.standard_normal((n, n), dtype=np.float32)
                ms(f'numpy_mm_{n}', median(lambda: a @ b, reps))
                if n == 1024:
                    ta, tb = torch.from_numpy(a), torch.from_numpy(b)
                    ms(f'torch_mm_{n}', median(lambda: ta @ tb, reps))
        if want('encoder'):
            encoders()
        if want('rows'):
            x = randn(64, 512, 768)
            w, b = randn(768), randn(768)
            ms('torch_softmax_big', median(lambda: torch.softmax(x, -1), 10))
            ms('torch_layer_norm_big', median(lambda: F.layer_norm(x, (768,), w, b, 1e-5), 10))
        if want('conv'):
            x = torch.randn(4, 64, 56, 56)
            w = torch.randn(64, 64, 3, 3) * 0.05
            bias = torch.randn(64)
            ms('torch_conv3x3', median(lambda: F.conv2d(x, w, bias, padding=1), 10))
            block = BasicBlock(64).eval()
            ms('torch_resnet_block', median(lambda: block(x), 10))
        if want('attention'):
            q, k, v = (torch.randn(1, 8, 1024, 64) for _ in range(3))
            ms('torch_attention', median(lambda: F.scaled_dot_product_attention(q, k, v), 5))
        if want('dispatch'):
            dispatch()


main()
