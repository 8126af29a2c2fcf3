#!/usr/bin/env python3
"""Runs bench/compile_time.sh's measurements within a time budget and prints
the table (Python standard library only; the peer runs in the venv).

  compile_time_run.py --tslc TSLC --python VENV_PYTHON [--threads N]
      [--layers "1 2 4 8 12 24"] [--alt-layers "12"] [--torch-layers ...]
      [--rounds 3] [--round-budget 40] [--budget 810]

Order of work: the numerics check, then steps in this order, each only
while the estimate of its cost fits in what is left of --budget seconds
counted from the end of the check (what does not fit is printed as
skipped):
 1. one cold TSL compile of each case with at most 12 layers (the headline),
    by layer count, then the two-kind cases;
 2. torch.compile of the 12-layer case;
 3. one cold TSL compile of the larger cases;
 4. TSL warm of every case (a cache filled by one run, then a second run);
 5. torch.compile of the other cases, by layer count;
 6. TSL's cold rounds 2.. (none after a compile slower than --round-budget s).
Estimates come from what was measured: a TSL compile scales with the square
of the layer count (as today's does), torch.compile as a fixed cost plus a
cost per layer."""
import argparse
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compile_time_gen as gen  # noqa: E402

HEADLINE = 12
PERF = re.compile(r'perf: (compiled|loaded from the compile cache) encoder variant 0 in ([0-9.]+) ms')
# Distinct kernels, from tslc's perf line "[tsl] perf: N kernel calls, D
# distinct kernels; ..." (backend/cpu/ObjectCompiler.cpp).
KERNELS = re.compile(r'(\d+) distinct kernels')


def ffn_list(n, kind):
    """FFN widths: 3072 every layer (uniform) or 3072/2048 alternating (alt)."""
    return [2048 if kind == 'alt' and i % 2 else 3072 for i in range(n)]


def timed(cmd, env, log):
    """Runs cmd with its output to the file log: (exit code, wall s, CPU s)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    with open(log, 'w') as out:
        code = subprocess.run(cmd, env=env, stdout=out, stderr=subprocess.STDOUT).returncode
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return code, wall, cpu


class Bench:
    """The measurements so far, the budget, and one method per kind of step."""

    def __init__(self, a):
        self.a = a
        self.tmp = tempfile.mkdtemp(prefix='tsl-compile-time-')
        self.deadline = time.monotonic() + a.budget
        self.tsl = {}    # case -> {'cold': [s...], 'wall', 'cpu', 'fill', 'warm', 'kernels'}
        self.torch = {}  # case -> the peer's key: value lines
        self.skipped = []
        self.layers = {}  # case -> layer count

    def fits(self, what, estimate):
        left = self.deadline - time.monotonic()
        if estimate <= left:
            return True
        self.skipped.append(f'{what} (about {estimate:.0f} s, {max(left, 0):.0f} s of the budget left)')
        return False

    def files(self, name, n, kind):
        src = os.path.join(self.tmp, name + '.tsl')
        calls = os.path.join(self.tmp, name + '.calls')
        if not os.path.exists(src):
            ffns = ffn_list(n, kind)
            with open(src, 'w') as f:
                f.write(gen.source(ffns))
            with open(calls, 'w') as f:
                f.write(gen.call_line(ffns, self.a.batch, self.a.seq) + '\n')
        return src, calls

    def tsl_once(self, name, n, kind, cache, tag):
        """One tslc process: (perf seconds, wall s, CPU s, log text)."""
        src, calls = self.files(name, n, kind)
        env = dict(os.environ, TSL_CACHE_DIR=cache, TSL_LOGS='perf',
                   TSL_COMPILE_THREADS=str(self.a.threads))
        log = os.path.join(self.tmp, f'{name}.{tag}.log')
        code, wall, cpu = timed([self.a.tslc, 'run', src, '--fn', 'encoder', '--calls', calls,
                                 '--stats'], env, log)
        text = open(log).read()
        m = PERF.search(text)
        if code != 0 or not m:
            sys.exit(f'tslc failed on {name} ({tag}, exit {code}):\n{text}')
        return float(m.group(2)) / 1e3, wall, cpu, text

    def tsl_cold(self, name, n, kind):
        r = self.tsl.setdefault(name, {'cold': []})
        s, wall, cpu, text = self.tsl_once(name, n, kind, 'off', f'cold{len(r["cold"]) + 1}')
        if not r['cold'] or s < min(r['cold']):
            r['wall'], r['cpu'] = wall, cpu
        r['cold'].append(s)
        m = KERNELS.search(text)
        r['kernels'] = m.group(1) if m else 'n/a'
        print(f'TSL {name:<11} cold {s:7.2f} s (process {wall:.2f} s wall, {cpu:.2f} s CPU), '
              f'distinct kernels {r["kernels"]}', flush=True)

    def tsl_warm(self, name, n, kind):
        cache = os.path.join(self.tmp, 'cache-' + name)
        os.mkdir(cache, 0o700)
        fill = self.tsl_once(name, n, kind, cache, 'fill')[0]
        warm, _, _, text = self.tsl_once(name, n, kind, cache, 'warm')
        if '"cache_hits": 1' not in text:
            sys.exit(f'the warm run of {name} missed the cache:\n{text}')
        self.tsl[name].update(fill=fill, warm=warm)
        print(f'TSL {name:<11} warm {warm:7.3f} s (filling the empty cache: {fill:.2f} s)', flush=True)

    def torch_case(self, name, n, kind):
        inductor = os.path.join(self.tmp, 'inductor-' + name)
        os.mkdir(inductor)
        env = dict(os.environ, TORCHINDUCTOR_FORCE_DISABLE_CACHES='1',
                   TORCHINDUCTOR_CACHE_DIR=inductor, OMP_NUM_THREADS=str(self.a.threads))
        cmd = [self.a.python, self.a.peer, 'compile', '--ffn', ','.join(map(str, ffn_list(n, kind))),
               '--batch', str(self.a.batch), '--seq', str(self.a.seq), '--threads', str(self.a.threads)]
        log = os.path.join(self.tmp, f'torch-{name}.log')
        code, wall, _ = timed(cmd, env, log)
        text = open(log).read()
        kv = dict(line.split(': ', 1) for line in text.splitlines() if re.match(r'^[a-z_]+: ', line))
        if code != 0 or 'compile_s' not in kv:
            sys.exit(f'the torch peer failed on {name} (exit {code}):\n{text}')
        kv['process_s'] = wall
        if not self.torch:
            print(f'torch {kv["torch"]}, threads {kv["threads"]}')
        self.torch[name] = kv
        print(f'torch.compile {name:<11} cold {float(kv["compile_s"]):7.2f} s (first call '
              f'{float(kv["first_compiled_call_s"]):.2f} s - eager {float(kv["eager_s"]):.3f} s; '
              f'{float(kv["compile_cpu_s"]):.2f} s CPU), {kv["graphs"]} graphs, '
              f'{kv["graph_breaks"]} graph breaks, {kv["kernels"]} kernels', flush=True)

    def tsl_estimate(self, name, n):
        """One cold TSL compile: the case's own, else the largest smaller one's
        scaled by the square of the layer count."""
        if name in self.tsl:
            return 1.2 * max(self.tsl[name]['cold']) + 1
        smaller = [(m, min(r['cold'])) for m, r in ((self.layers[k], r) for k, r in self.tsl.items())
                   if m <= n]
        if not smaller:
            return 0.0
        m, t = max(smaller)
        return t * (n / m) ** 2 + 1

    def torch_estimate(self, n):
        """A torch.compile process for n layers: the line through the smallest
        and the largest measured case (a fixed cost plus a cost per layer),
        or, with one measured, that one scaled by layers (never below it)."""
        points = sorted((self.layers[k], v['process_s']) for k, v in self.torch.items())
        if not points:
            return 0.0
        (n0, t0), (n1, t1) = points[0], points[-1]
        if n1 == n0:
            return t0 * max(1.0, n / n0)
        return max(t0, t0 + (t1 - t0) / (n1 - n0) * (n - n0))

    def check(self):
        print(f'--- numerics (2 layers, FFN 3072 and 2048, B=2 S=5)', flush=True)
        src = os.path.join(self.tmp, 'check.tsl')
        with open(src, 'w') as f:
            f.write(gen.source([3072, 2048]))
        env = dict(os.environ, OMP_NUM_THREADS=str(self.a.threads))
        r = subprocess.run([self.a.python, self.a.peer, 'check', '--ffn', '3072,2048', '--batch', '2',
                            '--seq', '5', '--threads', str(self.a.threads), '--tslc', self.a.tslc,
                            '--tsl', src, '--dir', os.path.join(self.tmp, 'check')],
                           env=env, capture_output=True, text=True)
        for line in r.stdout.splitlines():
            if line.startswith('check') or line.startswith('tslc'):
                print(line)
        if r.returncode != 0 and 'check vs' not in r.stdout:
            print(r.stderr.strip()[-2000:])
        return r.returncode == 0


def run_plan(b, cases, torch_layers):
    """The budgeted steps of the module docstring, in order."""
    for name, n, _ in cases:
        b.layers[name] = n
    small = sorted((c for c in cases if c[1] <= HEADLINE), key=lambda c: (c[2] != 'uniform', c[1]))
    large = sorted((c for c in cases if c[1] > HEADLINE), key=lambda c: (c[2] != 'uniform', c[1]))
    torch_cases = [c for c in cases if c[1] in torch_layers]
    headline = [c for c in torch_cases if c[1] == HEADLINE and c[2] == 'uniform']
    for c in small:
        if b.fits(f'TSL cold {c[0]}', b.tsl_estimate(c[0], c[1])):
            b.tsl_cold(*c)
    for c in headline:
        if b.fits(f'torch.compile {c[0]}', b.torch_estimate(c[1])):
            b.torch_case(*c)
    for c in large:
        if b.fits(f'TSL cold {c[0]}', b.tsl_estimate(c[0], c[1])):
            b.tsl_cold(*c)
    for c in cases:
        if c[0] in b.tsl and b.fits(f'TSL warm {c[0]}', 1.3 * min(b.tsl[c[0]]['cold']) + 1):
            b.tsl_warm(*c)
    for c in sorted(torch_cases, key=lambda c: (c[1], c[2] != 'uniform')):
        if c[0] not in b.torch and b.fits(f'torch.compile {c[0]}', b.torch_estimate(c[1])):
            b.torch_case(*c)
    for c in cases:
        colds = b.tsl.get(c[0], {}).get('cold', [])
        while colds and len(colds) < b.a.rounds and max(colds) <= b.a.round_budget:
            if not b.fits(f'TSL cold round {len(colds) + 1} of {c[0]}', b.tsl_estimate(c[0], c[1])):
                break
            b.tsl_cold(*c)


def table(b, cases):
    """The summary: one row per case, then the growth ratios."""
    print('--- compile time (s; ratio = torch cold / TSL cold, > 1 means TSL compiles faster; '
          '(CPU): CPU seconds, steadier than wall time on shared cores)')
    print(f'{"case":<11} {"layers":>6} {"kinds":>5} {"TSL cold":>8} {"rounds":>6} {"(CPU)":>6} '
          f'{"warm":>6} {"kernels":>7} {"torch cold":>10} {"(CPU)":>6} {"graphs":>6} {"t.kernels":>9} '
          f'{"ratio":>5} {"(CPU)":>5}')
    for name, n, kind in cases:
        kinds = len(set(ffn_list(n, kind)))
        if name not in b.tsl:
            print(f'{name:<11} {n:>6} {kinds:>5} {"skipped":>8}')
            continue
        r = b.tsl[name]
        cold = min(r['cold'])
        warm = f'{r["warm"]:.3f}' if 'warm' in r else '-'
        line = (f'{name:<11} {n:>6} {kinds:>5} {cold:>8.2f} {len(r["cold"]):>6} {r["cpu"]:>6.2f} '
                f'{warm:>6} {r["kernels"]:>7}')
        t = b.torch.get(name)
        if t:
            tc, tcpu = float(t['compile_s']), float(t['compile_cpu_s'])
            line += (f' {tc:>10.2f} {tcpu:>6.2f} {t["graphs"]:>6} {t["kernels"]:>9} '
                     f'{tc / cold:>5.1f} {tcpu / r["cpu"]:>5.1f}')
        else:
            line += f' {"skipped":>10} {"-":>6} {"-":>6} {"-":>9} {"-":>5} {"-":>5}'
        print(line)
    cold = {name: min(r['cold']) for name, r in b.tsl.items()}
    for x, y in [('uniform-1', 'uniform-12'), ('uniform-12', 'uniform-24'), ('uniform-12', 'alt-12')]:
        if x in cold and y in cold:
            print(f'TSL cold {y} / {x}: {cold[y] / cold[x]:.2f}x')
    print('(compile time that grows with distinct kernels, not layers: uniform-24 / uniform-12 near 1; '
          f'target: uniform-12 cold <= 2 s)')


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--tslc', required=True)
    ap.add_argument('--python', required=True, help="the venv's python (PyTorch, NumPy)")
    ap.add_argument('--peer', default=os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                   'compile_time_peer.py'))
    ap.add_argument('--threads', type=int, default=1)
    ap.add_argument('--layers', default='1 2 4 8 12 24')
    ap.add_argument('--alt-layers', default='12')
    ap.add_argument('--torch-layers', default=None, help='default: every case')
    ap.add_argument('--rounds', type=int, default=3)
    ap.add_argument('--round-budget', type=float, default=40)
    ap.add_argument('--budget', type=float, default=810)
    ap.add_argument('--batch', type=int, default=2)
    ap.add_argument('--seq', type=int, default=8)
    a = ap.parse_args()
    start = time.monotonic()
    cases = [(f'uniform-{n}', int(n), 'uniform') for n in a.layers.split()]
    cases += [(f'alt-{n}', int(n), 'alt') for n in a.alt_layers.split()]
    torch_layers = set(int(n) for n in (a.torch_layers.split() if a.torch_layers is not None
                                         else [str(n) for _, n, _ in cases]))
    b = Bench(a)
    try:
        model = subprocess.run(['lscpu'], capture_output=True, text=True).stdout
        model = re.search(r'Model name:\s*(.*)', model)
        print(f'cpu: {model.group(1) if model else "?"} ({os.cpu_count()} cores; load average '
              f'{" ".join(open("/proc/loadavg").read().split()[:3])})')
        print(f'threads: {a.threads} on both sides (torch: set_num_threads and inductor '
              f'compile_threads; TSL: TSL_COMPILE_THREADS={a.threads})')
        print(f'call shape: x=f32[{a.batch},{a.seq},768] (B and S dynamic on both sides); '
              f'budget {a.budget:.0f} s')
        ok = b.check()
        b.deadline = time.monotonic() + a.budget
        print('--- measurements (wall times are noisy: the cores are shared)', flush=True)
        run_plan(b, cases, torch_layers)
        skipped_torch = sorted({n for _, n, _ in cases} - torch_layers)
        if skipped_torch:
            b.skipped.append(f'torch.compile for {skipped_torch} layers (not in --torch-layers)')
        table(b, cases)
        for s in b.skipped:
            print(f'skipped: {s}')
        print(f'numerics: {"ok" if ok else "MISMATCH"}; load average '
              f'{" ".join(open("/proc/loadavg").read().split()[:3])}; '
              f'whole run {time.monotonic() - start:.0f} s')
    finally:
        shutil.rmtree(b.tmp, ignore_errors=True)
    sys.exit(0 if ok else 1)


if __name__ == '__main__':
    main()
