#!/usr/bin/env python3
"""Where a train step's time goes (bench/train.sh's models), TSL against
PyTorch eager, in one process per thread count:

    train_breakdown.py THREADS [mlp gpt cnn]

For each model: the forward (the loss alone), forward + backward (the loss
and every weight's gradient: TSL's `<model>_grads` of bench/train_parts.tsl,
torch's loss.backward()) and the whole step (bench/train_models.tsl's
`<model>_step`, torch's step with Adam). Backward = (forward + backward) -
forward; Adam = step - (forward + backward). The GPT's gradients are also
timed with its 4 layers written out (gpt_unrolled_grads) instead of the
`for` loop, whose backward re-runs the loop's forward. Each figure is the
best over TSL_BENCH_ROUNDS (default 3) interleaved rounds of the median of
TSL_BENCH_REPS (default 7) calls after a warm-up call. Run by hand (bench/train.sh does not):
    PYTHONPATH=build/python-build/python .venv-bench/bin/python \\
        bench/train_breakdown.py 1"""
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import train_common as tc  # noqa: E402

threads = int(sys.argv[1]) if len(sys.argv) > 1 else 1
models = sys.argv[2:] or ["mlp", "gpt", "cnn"]
for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "TSL_NUM_THREADS"):
    os.environ[var] = str(threads)
os.environ.setdefault("OMP_WAIT_POLICY", "passive")
tc.tune_malloc()

import numpy as np  # noqa: E402
import torch  # noqa: E402

import train_peers  # noqa: E402  (the torch losses; it sets nothing when imported)
import tsl  # noqa: E402

torch.set_num_threads(threads)
REPS = int(os.environ.get("TSL_BENCH_REPS", "7"))
ROUNDS = int(os.environ.get("TSL_BENCH_ROUNDS", "3"))


def median_ms(fn):
    fn()
    times = []
    for _ in range(REPS):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return sorted(times)[len(times) // 2] * 1e3


def tsl_parts(model, params, batch):
    parts = tsl.load(os.path.join(HERE, "train_parts.tsl"))
    steps = tsl.load(os.path.join(HERE, "train_models.tsl"))
    zeros = [np.zeros_like(p) for p in params]
    one, lr = np.asarray(1, np.float32), np.asarray(tc.LR[model], np.float32)
    fns = {"fwd": lambda: parts[f"{model}_fwd"](*params, *batch),
           "grads": lambda: parts[f"{model}_grads"](*params, *batch),
           "step": lambda: steps[f"{model}_step"](*params, *zeros, *zeros, *batch, one, lr)}
    if model == "gpt":
        fns["grads_unrolled"] = lambda: parts["gpt_unrolled_grads"](*params, *batch)
    return best_of_rounds(fns)


def best_of_rounds(fns):
    """The smallest median of each function over ROUNDS interleaved rounds."""
    best = {}
    for _ in range(ROUNDS):
        for key, fn in fns.items():
            best[key] = min(best.get(key, float("inf")), median_ms(fn))
    return best


def torch_parts(model, params, batch):
    loss_fn = train_peers.LOSS[model]
    weights = [torch.tensor(p, requires_grad=True) for p in params]
    data = [torch.from_numpy(a) for a in batch]
    opt = torch.optim.Adam(weights, lr=tc.LR[model])

    def grads():
        for w in weights:
            w.grad = None
        loss_fn(weights, *data).backward()

    def step():
        opt.zero_grad(set_to_none=True)
        loss_fn(weights, *data).backward()
        opt.step()

    return best_of_rounds({"fwd": lambda: loss_fn(weights, *data), "grads": grads, "step": step})


def main():
    print(f"threads: {threads}; best of {ROUNDS} rounds of the median of {REPS} calls after a "
          f"warm-up; load average "
          f"{open('/proc/loadavg').read().split()[:3]}")
    print(f"{'model':<6}{'side':<12}{'forward':>9}{'backward':>10}{'Adam':>8}{'step':>9}"
          f"  (ms)")
    for model in models:
        params, batch = tc.init_params(model), tc.batches(model)[0]
        for side, parts in (("TSL", tsl_parts(model, params, batch)),
                            ("torch eager", torch_parts(model, params, batch))):
            print(f"{model:<6}{side:<12}{parts['fwd']:>9.2f}{parts['grads'] - parts['fwd']:>10.2f}"
                  f"{parts['step'] - parts['grads']:>8.2f}{parts['step']:>9.2f}")
            if "grads_unrolled" in parts:
                print(f"{'':<6}{'TSL, 4 layers written out: backward':<40}"
                      f"{parts['grads_unrolled'] - parts['fwd']:.2f} ms (forward + backward "
                      f"{parts['grads_unrolled']:.2f} ms)")


if __name__ == "__main__":
    main()
