#!/usr/bin/env python3
"""Trains a 64-128-10 MLP on scikit-learn's bundled 8x8 digits with TSL.

The whole training step (forward, cross-entropy, `grad`, and stdlib optim's
Adam update of every weight) is one TSL function, `train_step` in
examples/train_digits.tsl, called once per batch from the Python loop below:
the weights and Adam's state go in as NumPy arrays and the updated ones come
out (tsl.Tensor results, passed straight back in at the next step without a
copy). Where PyTorch is importable the same model is trained beside it from
the same initialization, on the same batches, with torch.optim.Adam and the
same hyperparameters, and both loss curves are printed side by side.

    pip install ./python scikit-learn [torch]
    python examples/train_digits.py [--epochs 15] [--backend cpu]

Exits with status 1 unless TSL's test accuracy is above 95% (2 when the backend
cannot be loaded, e.g. --backend cuda without a CUDA driver).
"""

import argparse
import pathlib
import sys
import time

import numpy as np

import tsl

HERE = pathlib.Path(__file__).resolve().parent
HIDDEN = 128
BATCH = 32
LR = 1e-2
NAMES = ("w1", "b1", "w2", "b2")


def load_data(seed=0):
    """The digits as (x_train, y_train, x_test, y_test): f32 pixels scaled to
    [0, 1] and i64 labels, a stratified 80/20 split (no download: the data
    ships with scikit-learn)."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    x, y = load_digits(return_X_y=True)
    x = (x / 16.0).astype(np.float32)
    y = y.astype(np.int64)
    xtr, xte, ytr, yte = train_test_split(x, y, test_size=0.2, random_state=seed, stratify=y)
    return (np.ascontiguousarray(xtr), np.ascontiguousarray(ytr),
            np.ascontiguousarray(xte), np.ascontiguousarray(yte))


def init_params(seed=0, hidden=HIDDEN):
    """He-initialised weights ([in, out] layout, x @ w + b), zero biases."""
    rng = np.random.default_rng(seed)
    w1 = rng.standard_normal((64, hidden)) * np.sqrt(2.0 / 64)
    w2 = rng.standard_normal((hidden, 10)) * np.sqrt(2.0 / hidden)
    return [w1.astype(np.float32), np.zeros(hidden, np.float32),
            w2.astype(np.float32), np.zeros(10, np.float32)]


def batches(n, epochs, seed=0, batch=BATCH):
    """The index arrays of every batch, epoch by epoch (a fresh shuffle each
    epoch; the last batch of an epoch is smaller): both trainers read these."""
    rng = np.random.default_rng(seed + 1)
    for _ in range(epochs):
        order = rng.permutation(n)
        yield [order[i:i + batch] for i in range(0, n, batch)]


def load_module(backend="cpu"):
    return tsl.load(HERE / "train_digits.tsl", backend=backend)


def train_tsl(module, params, data, epochs, lr=LR, seed=0):
    """Trains with TSL's train_step. Returns (weights as NumPy arrays, the mean
    loss of each epoch)."""
    xtr, ytr = data[0], data[1]
    step_fn = module.train_step
    weights = list(params)
    m = [np.zeros_like(p) for p in params]
    v = [np.zeros_like(p) for p in params]
    lr_t = np.asarray(lr, np.float32)
    losses, step = [], 0
    for epoch in batches(len(xtr), epochs, seed):
        total = 0.0
        for idx in epoch:
            step += 1
            out = step_fn(*weights, *m, *v, xtr[idx], ytr[idx],
                          np.asarray(step, np.float32), lr_t)
            total += float(np.asarray(out[0])) * len(idx)
            weights, m, v = list(out[1:5]), list(out[5:9]), list(out[9:13])
        losses.append(total / len(xtr))
    return [np.asarray(w) for w in weights], losses


def train_torch(torch, params, data, epochs, lr=LR, seed=0):
    """The same training in PyTorch: same initial weights, same batches,
    torch.optim.Adam with the same hyperparameters."""
    xtr, ytr = torch.from_numpy(data[0]), torch.from_numpy(data[1])
    weights = [torch.tensor(p, requires_grad=True) for p in params]
    opt = torch.optim.Adam(weights, lr=lr)
    losses = []
    for epoch in batches(len(xtr), epochs, seed):
        total = 0.0
        for idx in epoch:
            idx = torch.from_numpy(idx)
            w1, b1, w2, b2 = weights
            logits = torch.relu(xtr[idx] @ w1 + b1) @ w2 + b2
            loss = torch.nn.functional.cross_entropy(logits, ytr[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.item() * len(idx)
        losses.append(total / len(xtr))
    return [w.detach().numpy() for w in weights], losses


def accuracy(module, weights, x, y):
    return float(np.mean(np.asarray(module.logits(*weights, x)).argmax(axis=1) == y))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--epochs", type=int, default=15)
    ap.add_argument("--backend", default="cpu", help="cpu, cuda, gpu-emulator")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    try:
        import torch
        torch.manual_seed(args.seed)
    except ImportError:
        torch = None

    data = load_data(args.seed)
    params = init_params(args.seed)
    try:
        module = load_module(args.backend)
    except tsl.Error as e:  # e.g. "no CUDA driver" for --backend cuda
        print(e, file=sys.stderr)
        return 2
    print(f"digits: {len(data[0])} train, {len(data[2])} test; MLP 64-{HIDDEN}-10, "
          f"Adam lr={LR}, batch {BATCH}, {args.epochs} epochs, TSL backend {args.backend}")

    # train_step is a pure function: a first call with the initial values
    # compiles it (or loads it from the compile cache) and changes nothing.
    start = time.perf_counter()
    module.train_step(*params, *params, *params, data[0][:BATCH], data[1][:BATCH],
                      np.asarray(1, np.float32), np.asarray(LR, np.float32))
    compile_time = time.perf_counter() - start
    start = time.perf_counter()
    tsl_weights, tsl_losses = train_tsl(module, params, data, args.epochs, seed=args.seed)
    tsl_time = time.perf_counter() - start
    tsl_acc = accuracy(module, tsl_weights, data[2], data[3])

    if torch is not None:
        start = time.perf_counter()
        torch_weights, torch_losses = train_torch(torch, params, data, args.epochs, seed=args.seed)
        torch_time = time.perf_counter() - start
        torch_acc = accuracy(module, torch_weights, data[2], data[3])
        print(f"{'epoch':>5}  {'TSL loss':>10}  {'torch loss':>10}")
        for i, (a, b) in enumerate(zip(tsl_losses, torch_losses), 1):
            print(f"{i:5d}  {a:10.6f}  {b:10.6f}")
    else:
        print("(PyTorch is not importable: TSL's curve alone)")
        print(f"{'epoch':>5}  {'TSL loss':>10}")
        for i, a in enumerate(tsl_losses, 1):
            print(f"{i:5d}  {a:10.6f}")

    how = "from the cache" if module.train_step.variants[0].from_cache else "compiled"
    print(f"TSL   test accuracy {tsl_acc:.4f}  (training {tsl_time:.2f} s; first call "
          f"{compile_time:.2f} s, {how})")
    if torch is not None:
        drift = max(float(np.max(np.abs(a - b))) for a, b in zip(tsl_weights, torch_weights))
        print(f"torch test accuracy {torch_acc:.4f}  (training {torch_time:.2f} s, eager)")
        print(f"largest difference between the final weights: {drift:.3g}")
    if tsl_acc <= 0.95:
        print(f"FAIL: TSL's test accuracy {tsl_acc:.4f} is not above 0.95", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
