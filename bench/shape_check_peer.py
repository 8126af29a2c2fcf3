#!/usr/bin/env python3
"""The peer for ShapeCheckBench: the same residual chain traced by
torch.compile(dynamic=True). A counting backend stops after Dynamo's trace
and fake-tensor shape propagation (no code generation), so the time is the
symbolic-shape work per FX node. Prints one line per size."""
import sys
import time

import torch


def make(blocks):
    def f(x, w, g):
        t = x
        for _ in range(blocks):
            t = torch.relu(t @ w) * g + t - t.mean(-1, keepdim=True)
        return t
    return f


def measure(blocks, backend_name):
    torch._dynamo.reset()
    nodes = {}

    def counting(gm, example_inputs):
        nodes['n'] = sum(1 for n in gm.graph.nodes if n.op == 'call_function' or n.op == 'call_method')
        return gm.forward

    backend = counting if backend_name == 'trace' else backend_name
    f = torch.compile(make(blocks), dynamic=True, backend=backend)
    x, w, g = torch.randn(8, 128, 64), torch.randn(64, 64), torch.randn(64)
    start = time.perf_counter()
    f(x, w, g)
    first = time.perf_counter() - start
    start = time.perf_counter()
    make(blocks)(x, w, g)
    eager = time.perf_counter() - start
    ops = nodes.get('n', blocks * 6)
    return ops, first - eager


def main():
    for blocks in [int(b) for b in sys.argv[1:]] or [167, 834]:
        ops, seconds = measure(blocks, 'trace')
        print(f'torch {torch.__version__} compile(dynamic=True) trace+fake-tensor: {ops} ops in '
              f'{seconds * 1e3:.1f} ms = {seconds * 1e6 / ops:.1f} us/op', flush=True)


if __name__ == '__main__':
    main()
