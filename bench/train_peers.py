#!/usr/bin/env python3
"""The PyTorch side of bench/train.sh: one model's training steps, eager or
under torch.compile(dynamic=True), in a fresh process.

    train_peers.py mlp|gpt|cnn THREADS eager|compile

The same model as bench/train_models.tsl, written as explicit ops on leaf
tensors made from the same NumPy weights (bench/train_common.py), on the
same batches: one train step = zero_grad, then the loss, loss.backward() and
torch.optim.Adam's step (its defaults except lr). `compile` runs the latter
three as one function through torch.compile(dynamic=True) (TorchDynamo breaks the
graph at backward(); AOTAutograd compiles the forward with its backward and
Dynamo the optimizer step): the graphs compiled, recompiles and graph breaks
are printed. Inductor's caches point at a fresh directory, so the first step
is a cold compile, as TSL's (TSL_CACHE_DIR=off).

Fairness as in bench/cpu_peers.py: the thread count is set before torch loads
(OMP/MKL/OPENBLAS_NUM_THREADS, torch.set_num_threads); glibc's malloc gets
the TSL runtime's setting before anything is allocated; bench/train.sh runs
this with the core-type overrides unset and OMP_WAIT_POLICY passive."""
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import train_common as tc  # noqa: E402

if __name__ == "__main__":
    # As a script: the side and the thread count, set before torch loads.
    # Imported (bench/train_breakdown.py): the importer sets them.
    if len(sys.argv) != 4 or sys.argv[3] not in ("eager", "compile"):
        sys.exit("usage: train_peers.py mlp|gpt|cnn THREADS eager|compile")
    mode = sys.argv[3]
    model, threads = tc.parse_args(sys.argv[:3])
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(threads)
    cache = tempfile.TemporaryDirectory(prefix="train-peers-inductor-")
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = cache.name
    os.environ["TRITON_CACHE_DIR"] = os.path.join(cache.name, "triton")
    malloc_tuned = tc.tune_malloc()

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch._dynamo.utils import counters  # noqa: E402


def mlp_loss(p, x, y):
    w1, b1, w2, b2 = p
    return F.cross_entropy(torch.relu(x @ w1 + b1) @ w2 + b2, y)


def gpt_loss(p, ids, targets):
    """stdlib/nn.tsl's gpt2_block (pre-LN, causal attention, tanh GELU) over
    the stacked weights, tied logits, as bench/train_models.tsl's gpt_loss."""
    (wte, wpe, ln1_w, ln1_b, w_attn, b_attn, w_proj, b_proj, ln2_w, ln2_b, w_fc, b_fc, w_out,
     b_out, lnf_w, lnf_b) = p
    bsz, s = ids.shape
    d = wte.shape[1]
    heads = tc.GPT["heads"]

    def split_heads(t):
        return t.reshape(bsz, s, heads, d // heads).transpose(1, 2)

    h = F.embedding(ids, wte) + wpe
    for i in range(w_attn.shape[0]):
        qkv = F.layer_norm(h, (d,), ln1_w[i], ln1_b[i], 1e-5) @ w_attn[i] + b_attn[i]
        q, k, v = qkv.split(d, -1)
        a = F.scaled_dot_product_attention(split_heads(q), split_heads(k), split_heads(v),
                                           is_causal=True)
        h = h + a.transpose(1, 2).reshape(bsz, s, d) @ w_proj[i] + b_proj[i]
        f = F.layer_norm(h, (d,), ln2_w[i], ln2_b[i], 1e-5) @ w_fc[i] + b_fc[i]
        h = h + F.gelu(f, approximate="tanh") @ w_out[i] + b_out[i]
    logits = F.layer_norm(h, (d,), lnf_w, lnf_b, 1e-5) @ wte.t()
    return F.cross_entropy(logits.reshape(bsz * s, -1), targets.reshape(bsz * s))


def cnn_loss(p, x, y):
    c1, g1, be1, c2, g2, be2, wl, bl = p
    h = F.batch_norm(F.conv2d(x, c1, padding=1), None, None, g1, be1, True, 0.0, 1e-5)
    h = F.max_pool2d(torch.relu(h), 2)
    h = torch.relu(F.batch_norm(F.conv2d(h, c2, padding=1), None, None, g2, be2, True, 0.0, 1e-5))
    return F.cross_entropy(h.mean((2, 3)) @ wl + bl, y)


LOSS = {"mlp": mlp_loss, "gpt": gpt_loss, "cnn": cnn_loss}


def main():
    torch.set_num_threads(threads)
    params = [torch.tensor(p, requires_grad=True) for p in tc.init_params(model)]
    data = [tuple(torch.from_numpy(a) for a in b) for b in tc.batches(model)]
    opt = torch.optim.Adam(params, lr=tc.LR[model])
    loss_fn = LOSS[model]

    def train_step(x, y):
        loss = loss_fn(params, x, y)
        loss.backward()
        opt.step()
        return loss.detach()

    fn = torch.compile(train_step, dynamic=True) if mode == "compile" else train_step
    torch._dynamo.reset()
    counters.clear()

    def step(i):
        # zero_grad outside the compiled function: Dynamo does not trace it
        # (a graph break), and it only drops the .grad references.
        opt.zero_grad(set_to_none=True)
        return float(fn(*data[(i - 1) % len(data)]))

    tc.run(step)
    print(f"info_malloc: {'applied' if malloc_tuned else 'FAILED'}")
    print(f"info_torch: torch {torch.__version__}, CPU capability "
          f"{torch.backends.cpu.get_cpu_capability()}, {torch.get_num_threads()} threads, "
          f"Adam foreach={opt.defaults.get('foreach')} fused={opt.defaults.get('fused')}")
    if mode == "compile":
        breaks = sum(counters["graph_break"].values())
        reasons = "; ".join(sorted({r.strip().splitlines()[0][:120]
                                    for r in counters["graph_break"]}))
        print(f"info_compile: {counters['stats']['unique_graphs']} graphs, "
              f"{max(0, counters['frames']['total'] - counters['frames']['ok'])} frames failed, "
              f"{breaks} graph breaks ({reasons or 'none'})")


if __name__ == "__main__":
    main()
