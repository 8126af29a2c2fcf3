#!/usr/bin/env python3
"""The TSL side of bench/train.sh: one model's training steps through the
Python package, in a fresh process.

    train_tsl.py mlp|gpt|cnn THREADS

Loads bench/train_models.tsl and calls its `<model>_step(weights...,
adam_m..., adam_v..., batch..., step, lr)`: the first call with the NumPy
initial weights and zero moments compiles the step and runs it (a cold
compile: TSL_CACHE_DIR=off unless set; bench/train.sh gives the cold run an
empty cache directory and then runs again from it, the warm first step); every later call takes the previous
call's results (tsl.Tensor, no copy) as its weights and moments, donated
(tsl.Function.donate: the update is written into their buffers). The first
step's time includes tsl.load (parsing and checking the module). Prints the
figures of bench/train_common.run."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import train_common as tc  # noqa: E402

model, threads = tc.parse_args(sys.argv)
os.environ["TSL_NUM_THREADS"] = str(threads)
os.environ.setdefault("TSL_CACHE_DIR", "off")
malloc_tuned = tc.tune_malloc()  # the runtime applies it too, on its first context

import numpy as np  # noqa: E402

import tsl  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    params = tc.init_params(model)
    data = tc.batches(model)
    n = len(params)
    fns = []  # the step function, loaded in the first step
    state = {"w": list(params), "m": [np.zeros_like(p) for p in params],
             "v": [np.zeros_like(p) for p in params]}
    lr = np.asarray(tc.LR[model], np.float32)

    def step(i):
        if not fns:  # loading (parse, check) counts in the first step, as compiling
            fn = tsl.load(os.path.join(HERE, "train_models.tsl"))[f"{model}_step"]
            # Weights and moments donated: Adam writes them in place, as
            # torch.optim does (the first step's NumPy arrays are copied).
            fns.append(fn.donate(*fn.parameters[:3 * n]))
        batch = data[(i - 1) % len(data)]
        out = fns[0](*state["w"], *state["m"], *state["v"], *batch, np.asarray(i, np.float32), lr)
        state["w"], state["m"], state["v"] = (list(out[1:1 + n]), list(out[1 + n:1 + 2 * n]),
                                              list(out[1 + 2 * n:1 + 3 * n]))
        return float(np.asarray(out[0]))

    tc.run(step)
    fn = fns[0]
    stats = fn.stats
    print(f"info_malloc: {'applied' if malloc_tuned else 'FAILED'}")
    cached = "from the cache" if fn.variants[0].from_cache else "compiled"
    print(f"info_tsl: {stats.compiles} compile(s) ({cached}), {len(fn.variants)} variant(s), "
          f"{stats.calls} calls, {len(stats.recompiles)} recompile(s), peak_bytes "
          f"{stats.peak_bytes / 2**20:.1f} MiB (the most one call held beyond its arguments)")


if __name__ == "__main__":
    main()
