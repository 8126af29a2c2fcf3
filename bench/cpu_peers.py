#!/usr/bin/env python3
"""Peers for bench/cpu.sh, one thread each: NumPy (OpenBLAS) and PyTorch
eager on the CPU, plus torch.compile(dynamic=True)'s per-call guard cost.
Prints lines 'key: milliseconds' for the script to compare. Arguments pick
groups (dispatch ew mm encoder conv attention), as for tsl_bench_cpu; none runs all."""
import os
import sys
os.environ.setdefault('OPENBLAS_NUM_THREADS', '1')
os.environ.setdefault('OMP_NUM_THREADS', '1')
import time

import numpy as np
import torch

torch.set_num_threads(1)
groups = sys.argv[1:]


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


rng = np.random.default_rng(1)
if want('ew'):
    x = rng.standard_normal(1 << 24, dtype=np.float32)
    print(f'numpy_ew: {median(lambda: np.maximum(x * 1.5 + 0.5, 0) * 2.0, 15) * 1e3:.3f}')
if want('mm'):
    a = rng.standard_normal((1024, 1024), dtype=np.float32)
    b = rng.standard_normal((1024, 1024), dtype=np.float32)
    print(f'numpy_mm: {median(lambda: a @ b, 5) * 1e3:.3f}')

layer = torch.nn.TransformerEncoderLayer(d_model=256, nhead=4, dim_feedforward=1024, dropout=0.0,
                                         activation='gelu', batch_first=True).eval()


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


with torch.no_grad():
    if want('conv'):
        x = torch.randn(4, 64, 56, 56)
        w = torch.randn(64, 64, 3, 3) * 0.05
        bias = torch.randn(64)
        conv = median(lambda: torch.nn.functional.conv2d(x, w, bias, padding=1), 10)
        print(f'torch_conv3x3: {conv * 1e3:.3f}')
        block = BasicBlock(64).eval()
        print(f'torch_resnet_block: {median(lambda: block(x), 10) * 1e3:.3f}')
    if want('attention'):
        q, k, v = (torch.randn(1, 8, 1024, 64) for _ in range(3))
        sdpa = torch.nn.functional.scaled_dot_product_attention
        print(f'torch_attention: {median(lambda: sdpa(q, k, v), 5) * 1e3:.3f}')
    if want('encoder'):
        for B, S in [(1, 128), (4, 128), (1, 512), (8, 64)]:
            t = torch.randn(B, S, 256)
            sm = median(lambda: torch.softmax(t, dim=-1), 500)
            enc = median(lambda: layer(t), 5)
            print(f'torch_softmax_{B}_{S}: {sm * 1e3:.3f}')
            print(f'torch_encoder_{B}_{S}: {enc * 1e3:.3f}')

    if want('dispatch'):
        # Guard and dispatch cost of torch.compile(dynamic=True) with ten
        # inputs whose sizes must agree: compiled call time minus eager time.
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
        print(f'torch_compile_call_overhead: {(per_compiled - per_eager) * 1e3:.6f}')
