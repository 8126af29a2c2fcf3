#!/usr/bin/env python3
"""The PyTorch peer of bench/compile_time.sh: the encoder of
compile_time_gen.py (the same ops in the same order, one weight set per
layer) under torch.compile(dynamic=True). Prints 'key: value' lines.

  compile_time_peer.py compile --ffn W,W,... [--batch B --seq S --threads N]
      In this (fresh) process: eager time of one call, then the first
      compiled call; compile_s = first compiled call - eager call. Run it with
      TORCHINDUCTOR_FORCE_DISABLE_CACHES=1 and a fresh TORCHINDUCTOR_CACHE_DIR
      for a cold compile (compile_time.sh does).
  compile_time_peer.py check --ffn W,W,... --tslc TSLC --tsl FILE --dir DIR
      Numerics: random weights (scaled 1/sqrt(fan-in)) written as .npy to
      DIR, `tslc run` on them, its result compared with PyTorch eager and
      torch.compile; exit 1 if either differs by more than --tol.

The weights are module parameters (static shapes under torch.compile, as
D=768 and the FFN width are static in the TSL signature); B and S are
dynamic on both sides. Use B, S >= 2 and B != S: torch.compile specializes
sizes 0 and 1 and gives equal sizes one symbol."""
import argparse
import os
import resource
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compile_time_gen as gen  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402


class Encoder(torch.nn.Module):
    """compile_time_gen's encoder: its parameters in gen.params order."""

    def __init__(self, ffns, weights):
        super().__init__()
        self.ffns = ffns
        self.w = torch.nn.ParameterList(
            torch.nn.Parameter(torch.from_numpy(w), requires_grad=False) for w in weights)

    @staticmethod
    def layer_norm(x, g, c):
        mu = x.mean(-1, keepdim=True)
        d = x - mu
        var = (d * d).mean(-1, keepdim=True)
        return d * torch.rsqrt(var + 1e-5) * g + c

    def forward(self, x):
        b, s, _ = x.shape
        h, dh = gen.HEADS, gen.DH
        for i in range(len(self.ffns)):
            wq, wk, wv, wo, g1, c1, w1, b1, w2, b2, g2, c2 = self.w[12 * i:12 * i + 12]
            q = (x @ wq).reshape(b, s, h, dh).permute(0, 2, 1, 3)
            k = (x @ wk).reshape(b, s, h, dh).permute(0, 2, 1, 3)
            v = (x @ wv).reshape(b, s, h, dh).permute(0, 2, 1, 3)
            sc = q @ k.transpose(-1, -2) * (1.0 / dh ** 0.5)
            e = torch.exp(sc - sc.amax(-1, keepdim=True))
            p = e / e.sum(-1, keepdim=True)
            o = (p @ v).permute(0, 2, 1, 3).reshape(b, s, gen.D) @ wo
            hh = self.layer_norm(x + o, g1, c1)
            f = torch.nn.functional.gelu(hh @ w1 + b1) @ w2 + b2
            x = self.layer_norm(hh + f, g2, c2)
        return x


def weights(ffns, seed=1):
    """Random f32 weights in gen.params order: matrices scaled 1/sqrt(fan-in),
    norm scales near 1, small shifts and biases."""
    rng = np.random.default_rng(seed)
    out = []
    for name, shape in gen.params(ffns):
        w = rng.standard_normal(shape, dtype=np.float32)
        if len(shape) == 2:
            w *= np.float32(1.0 / np.sqrt(shape[0]))
        elif name.startswith('g'):
            w = np.float32(1.0) + np.float32(0.1) * w
        else:
            w *= np.float32(0.1)
        out.append(w)
    return out


def best(fn, reps):
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def cpu_seconds():
    """User + system CPU of this process and its waited children."""
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def compile_peer(a, ffns):
    """One cold torch.compile(dynamic=True) in this process."""
    model = Encoder(ffns, weights(ffns)).eval()
    x = torch.randn(a.batch, a.seq, gen.D)
    with torch.no_grad():
        model(x)  # the first eager call allocates; not compile time
        eager = best(lambda: model(x), 3)
        cpu0 = cpu_seconds()
        model(x)
        eager_cpu = cpu_seconds() - cpu0
        compiled = torch.compile(model, dynamic=True)
        cpu0, start = cpu_seconds(), time.perf_counter()
        compiled(x)
        first = time.perf_counter() - start
        first_cpu = cpu_seconds() - cpu0
        steady = best(lambda: compiled(x), 3)
    from torch._dynamo.utils import counters
    from torch._inductor import metrics
    print(f'torch: {torch.__version__}')
    print(f'eager_s: {eager:.4f}')
    print(f'first_compiled_call_s: {first:.4f}')
    print(f'compiled_steady_s: {steady:.4f}')
    print(f'compile_s: {max(0.0, first - eager):.4f}')
    print(f'compile_cpu_s: {max(0.0, first_cpu - eager_cpu):.4f}')
    print(f'graphs: {counters["stats"]["unique_graphs"]}')
    print(f'graph_breaks: {sum(counters["graph_break"].values())}')
    print(f'kernels: {metrics.generated_kernel_count}')


def check_peer(a, ffns):
    """TSL's result against eager and compiled PyTorch on one small shape."""
    ws = weights(ffns, seed=2)
    x = np.random.default_rng(3).standard_normal((a.batch, a.seq, gen.D), dtype=np.float32)
    os.makedirs(a.dir, exist_ok=True)
    cmd = [a.tslc, 'run', a.tsl, '--fn', 'encoder']
    for (name, _), w in [(('x', None), x)] + list(zip(gen.params(ffns), ws)):
        path = os.path.join(a.dir, name + '.npy')
        np.save(path, w)
        cmd += ['--arg', f'{name}={path}']
    out = os.path.join(a.dir, 'out.npy')
    cmd += ['-o', out]
    env = dict(os.environ, TSL_CACHE_DIR='off')
    r = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if r.returncode != 0:
        print(f'tslc failed ({r.returncode}): {r.stderr.strip()}')
        sys.exit(1)
    tsl = np.load(out)
    model = Encoder(ffns, ws).eval()
    with torch.no_grad():
        eager = model(torch.from_numpy(x)).numpy()
        compiled = torch.compile(model, dynamic=True)(torch.from_numpy(x)).numpy()
    ok = True
    for name, ref in [('eager', eager), ('torch.compile', compiled)]:
        diff = float(np.max(np.abs(tsl - ref))) if tsl.shape == ref.shape else float('inf')
        good = diff <= a.tol
        ok &= good
        print(f'check vs {name}: shape {list(tsl.shape)}, max |TSL - torch| = {diff:.2e} '
              f'({"ok" if good else "MISMATCH"}, tolerance {a.tol:g})')
    sys.exit(0 if ok else 1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('mode', choices=['compile', 'check'])
    ap.add_argument('--ffn', required=True, help='comma-separated FFN width per layer')
    ap.add_argument('--batch', type=int, default=2)
    ap.add_argument('--seq', type=int, default=8)
    ap.add_argument('--threads', type=int, default=1)
    ap.add_argument('--tslc')
    ap.add_argument('--tsl')
    ap.add_argument('--dir')
    ap.add_argument('--tol', type=float, default=1e-3)
    a = ap.parse_args()
    ffns = [int(w) for w in a.ffn.split(',')]
    torch.set_num_threads(a.threads)
    import torch._inductor.config as inductor_config
    inductor_config.compile_threads = a.threads
    print(f'threads: {torch.get_num_threads()} (compile_threads {inductor_config.compile_threads})')
    if a.mode == 'compile':
        compile_peer(a, ffns)
    else:
        if not (a.tslc and a.tsl and a.dir):
            ap.error('check needs --tslc, --tsl and --dir')
        check_peer(a, ffns)


if __name__ == '__main__':
    main()
