"""What both sides of bench/train.sh share: the models' parameters (made once
with NumPy from a fixed seed), their batches, the training loop's timing and
the memory measurement. bench/train_tsl.py (TSL) and bench/train_peers.py
(PyTorch eager and torch.compile) import this, so the two sides start from the
same weights and see the same batches in the same order.

A run prints 'key: value' lines that bench/train_report.py reads:
  first_step_s   the first step: compile (TSL's, or torch.compile's) and run
  step_ms        median of the steps 2..8 (7 steps after the first)
  steps_ms       every step after the first (for the record)
  loss           the loss after STEPS updates (the loss the step STEPS + 1
                 computes before its update)
  mem_first_mb   peak RSS during the first step minus RSS before it
  mem_steps_mb   peak RSS during the later steps (the peak reset after the
                 first) minus RSS before the first step
  mem_step_mb    peak RSS during the later steps minus RSS after the first
                 step: what a step takes beyond what the process holds
                 between steps (weights, optimizer state, results, and on
                 TSL's side the compiler's heap, which the first figure
                 counts)
  info_*         what ran (graphs compiled, variants, ...)

Memory: the kernel's peak RSS of this process (VmHWM), reset with
/proc/self/clear_refs ('5') before the first step and again after it; both
sides run in a fresh process each and apply the same malloc settings (the TSL
runtime's: mallopt(M_MMAP_THRESHOLD and M_TRIM_THRESHOLD, 1 GiB), so freed
buffers stay in the heap on both sides."""
import ctypes
import os
import sys
import time

import numpy as np

STEPS = 20  # the loss is reported after this many updates
TIMED = 7  # the median step time is over the steps 2 .. TIMED + 1
NUM_BATCHES = 4  # distinct batches, cycled: the loss falls as the model fits them
LR = {"mlp": 1e-3, "gpt": 1e-3, "cnn": 1e-3}
SEED = 34

# GPT sizes (issue 34): 4 layers, D = 256, 4 heads, vocab 8192, B = 8, S = 128.
GPT = dict(layers=4, d=256, heads=4, vocab=8192, batch=8, seq=128)
GPT_NAMES = ("wte", "wpe", "ln1_w", "ln1_b", "w_attn", "b_attn", "w_proj", "b_proj", "ln2_w",
             "ln2_b", "w_fc", "b_fc", "w_out", "b_out", "lnf_w", "lnf_b")
MLP_NAMES = ("w1", "b1", "w2", "b2")
CNN_NAMES = ("c1", "g1", "be1", "c2", "g2", "be2", "wl", "bl")
DESCRIPTION = {
    "mlp": "MLP 784-512-10 (ReLU), B = 256, cross-entropy",
    "gpt": "GPT 4 layers, D = 256, 4 heads, vocab 8192, tied embedding, B = 8, S = 128",
    "cnn": "CNN conv3x3 64-BN-ReLU-maxpool-conv3x3 64-BN-ReLU-mean-linear, B = 32, 3x32x32",
}


def tune_malloc():
    """glibc's mallopt as the TSL runtime applies it (runtime/KernelLibrary.cpp):
    M_MMAP_THRESHOLD (-3) and M_TRIM_THRESHOLD (-1) at 1 GiB. Returns whether
    both took."""
    libc = ctypes.CDLL(None)
    return bool(libc.mallopt(-3, 1 << 30)) and bool(libc.mallopt(-1, 1 << 30))


def _normal(rng, shape, scale):
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def init_params(model):
    """The model's initial parameters as f32 NumPy arrays, in the order of
    its TSL step function's parameters (linear weights [in, out])."""
    rng = np.random.default_rng(SEED)
    if model == "mlp":
        return [_normal(rng, (784, 512), np.sqrt(2 / 784)), np.zeros(512, np.float32),
                _normal(rng, (512, 10), np.sqrt(1 / 512)), np.zeros(10, np.float32)]
    if model == "cnn":
        ones, zeros = np.ones(64, np.float32), np.zeros(64, np.float32)
        return [_normal(rng, (64, 3, 3, 3), np.sqrt(2 / 27)), ones, zeros,
                _normal(rng, (64, 64, 3, 3), np.sqrt(2 / 576)), ones.copy(), zeros.copy(),
                _normal(rng, (64, 10), np.sqrt(1 / 64)), np.zeros(10, np.float32)]
    if model == "gpt":
        g = GPT
        n, d, f = g["layers"], g["d"], 4 * g["d"]
        proj = 0.02 / np.sqrt(2 * n)  # GPT-2's scaled init of the residual projections
        return [_normal(rng, (g["vocab"], d), 0.02), _normal(rng, (g["seq"], d), 0.01),
                np.ones((n, d), np.float32), np.zeros((n, d), np.float32),
                _normal(rng, (n, d, 3 * d), 0.02), np.zeros((n, 3 * d), np.float32),
                _normal(rng, (n, d, d), proj), np.zeros((n, d), np.float32),
                np.ones((n, d), np.float32), np.zeros((n, d), np.float32),
                _normal(rng, (n, d, f), 0.02), np.zeros((n, f), np.float32),
                _normal(rng, (n, f, d), proj), np.zeros((n, d), np.float32),
                np.ones(d, np.float32), np.zeros(d, np.float32)]
    raise ValueError(f"unknown model {model!r}")


def batches(model):
    """NUM_BATCHES fixed random batches, each a tuple of NumPy arrays in the
    order the step function takes them: (x f32, labels i64) for the MLP and
    the CNN, (ids, next-token targets) i64 [B, S] for the GPT."""
    rng = np.random.default_rng(SEED + 1)
    out = []
    for _ in range(NUM_BATCHES):
        if model == "mlp":
            out.append((rng.standard_normal((256, 784)).astype(np.float32),
                        rng.integers(0, 10, 256).astype(np.int64)))
        elif model == "cnn":
            out.append((rng.standard_normal((32, 3, 32, 32)).astype(np.float32),
                        rng.integers(0, 10, 32).astype(np.int64)))
        else:
            g = GPT
            tokens = rng.integers(0, g["vocab"], (g["batch"], g["seq"] + 1)).astype(np.int64)
            out.append((np.ascontiguousarray(tokens[:, :-1]),
                        np.ascontiguousarray(tokens[:, 1:])))
    return out


def _status_kb(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"no {field} in /proc/self/status")


def _reset_peak():
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")


def run(step, steps=STEPS):
    """Runs step(i) for i = 1 .. steps + 1 (each returns that step's loss as a
    Python float, read after the step's work is done) and prints the figures
    described in the module's docstring."""
    sys.stdout.reconfigure(line_buffering=True)
    _reset_peak()
    rss0 = _status_kb("VmRSS")
    start = time.perf_counter()
    loss = step(1)
    first = time.perf_counter() - start
    mem_first = _status_kb("VmHWM") - rss0
    _reset_peak()
    rss1 = _status_kb("VmRSS")
    times, losses = [], [loss]
    for i in range(2, steps + 2):
        start = time.perf_counter()
        losses.append(step(i))
        times.append(time.perf_counter() - start)
    hwm = _status_kb("VmHWM")
    mem_steps, mem_step = hwm - rss0, hwm - rss1
    timed = sorted(times[:TIMED])
    print(f"first_step_s: {first:.4f}")
    print(f"step_ms: {timed[len(timed) // 2] * 1e3:.4f}")
    print("steps_ms: " + " ".join(f"{t * 1e3:.2f}" for t in times))
    print(f"loss: {losses[-1]:.9g}")
    print("losses: " + " ".join(f"{v:.6g}" for v in losses))
    print(f"mem_first_mb: {mem_first / 1024:.1f}")
    print(f"mem_steps_mb: {mem_steps / 1024:.1f}")
    print(f"mem_step_mb: {mem_step / 1024:.1f}")


def parse_args(argv):
    """'MODEL THREADS' from the command line (threads also set before any
    numerical library loads: the caller sets the environment)."""
    if len(argv) != 3 or argv[1] not in DESCRIPTION:
        sys.exit(f"usage: {os.path.basename(argv[0])} mlp|gpt|cnn THREADS")
    return argv[1], int(argv[2])
