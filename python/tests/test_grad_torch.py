"""Gradients: TSL's `grad` against PyTorch autograd, and training.

Each model is one TSL function returning its loss and the gradients `grad`
gives; PyTorch computes the same loss from the same f32 inputs and
`backward()` the reference gradients. Every gradient must agree within 1e-4
relative in f32: max |tsl - torch| <= 1e-4 * max |torch| per gradient
(tests skip where torch is not importable). The CPU and the GPU emulator
(the GPU code path on the CPU) both run; a 4-layer stack is checked both
unrolled by hand and written with `for` over stacked weights. Then, without
torch, examples/train_digits.py trains for a few epochs with a falling loss
(skipped without scikit-learn).
"""

import importlib.util
import pathlib

import numpy as np
import pytest

import tsl

RTOL = 1e-4
BACKENDS = ["cpu", "gpu-emulator"]
EXAMPLE = pathlib.Path(__file__).resolve().parents[2] / "examples" / "train_digits.py"

SOURCE = """\
import nn;

fn mlp_grads(w1: f32[D, H], b1: f32[H], w2: f32[H, C], b2: f32[C], x: f32[B, D], y: i64[B])
    -> (f32, f32[D, H], f32[H], f32[H, C], f32[C], f32[B, D]) {
  let loss = nn.cross_entropy(nn.linear(relu(nn.linear(x, w1, b1)), w2, b2), y);
  let (g1, gb1, g2, gb2, gx) = grad(loss, wrt=(w1, b1, w2, b2, x));
  return (loss, g1, gb1, g2, gb2, gx);
}

fn gpt2_grads(x: f32[B, S, D], r: f32[B, S, D], ln1_w: f32[D], ln1_b: f32[D],
              w_attn: f32[D, 3 * D], b_attn: f32[3 * D], w_proj: f32[D, D], b_proj: f32[D],
              ln2_w: f32[D], ln2_b: f32[D], w_fc: f32[D, F], b_fc: f32[F],
              w_out: f32[F, D], b_out: f32[D])
    -> (f32, f32[B, S, D], f32[D], f32[D], f32[D, 3 * D], f32[3 * D], f32[D, D], f32[D],
        f32[D], f32[D], f32[D, F], f32[F], f32[F, D], f32[D]) {
  let out = nn.gpt2_block(x, 2, ln1_w, ln1_b, w_attn, b_attn, w_proj, b_proj,
                          ln2_w, ln2_b, w_fc, b_fc, w_out, b_out);
  let loss = sum(out * r);
  let (gx, g1, g2, g3, g4, g5, g6, g7, g8, g9, g10, g11, g12) =
      grad(loss, wrt=(x, ln1_w, ln1_b, w_attn, b_attn, w_proj, b_proj, ln2_w, ln2_b,
                      w_fc, b_fc, w_out, b_out));
  return (loss, gx, g1, g2, g3, g4, g5, g6, g7, g8, g9, g10, g11, g12);
}

fn conv_grads(x: f32[N, C, H, W], w: f32[O, C, 3, 3], b: f32[O], mean: f32[O], var: f32[O],
              gamma: f32[O], beta: f32[O], r: f32[N, O, H / 2, W / 2])
    -> (f32, f32[N, C, H, W], f32[O, C, 3, 3], f32[O], f32[O], f32[O]) {
  let c = conv2d(x, w, bias=b, padding=1);
  let h = max_pool2d(relu(nn.batch_norm(c, mean, var, gamma, beta)), 2);
  let loss = sum(h * r);
  let (gx, gw, gb, gg, gbeta) = grad(loss, wrt=(x, w, b, gamma, beta));
  return (loss, gx, gw, gb, gg, gbeta);
}

fn embedding_grads(ids: i64[B, S], table: f32[V, D], r: f32[B, S, D]) -> (f32, f32[V, D]) {
  let loss = sum(nn.embedding(ids, table) * r);
  return (loss, grad(loss, wrt=table));
}

fn stack_unrolled_grads(x: f32[B, D], w: f32[4, D, D], b: f32[4, D])
    -> (f32, f32[B, D], f32[4, D, D], f32[4, D]) {
  let h1 = tanh(x @ w[0] + b[0]);
  let h2 = tanh(h1 @ w[1] + b[1]);
  let h3 = tanh(h2 @ w[2] + b[2]);
  let h4 = tanh(h3 @ w[3] + b[3]);
  let loss = sum(h4 * h4);
  let (gx, gw, gb) = grad(loss, wrt=(x, w, b));
  return (loss, gx, gw, gb);
}

fn stack_loop_grads(x: f32[B, D], w: f32[L, D, D], b: f32[L, D])
    -> (f32, f32[B, D], f32[L, D, D], f32[L, D]) {
  var h = x;
  for l in 0..L {
    h = tanh(h @ w[l] + b[l]);
  }
  let loss = sum(h * h);
  let (gx, gw, gb) = grad(loss, wrt=(x, w, b));
  return (loss, gx, gw, gb);
}

fn masked_grads(x: f32[N, M], t: f32[N, M]) -> (f32, f32[N, M]) {
  let sel = x[t > 0.0];
  let loss = sum(sel * sel * sel) / cast(N * M, f32);
  return (loss, grad(loss, wrt=x));
}
"""

# A 4-layer stack written with a `for` loop over stacked weights.
@pytest.fixture(scope="module")
def torch():
    return pytest.importorskip("torch")


@pytest.fixture(scope="module", params=BACKENDS)
def mod(request):
    return tsl.compile(SOURCE, backend=request.param, name="grads.tsl")


def rng(seed):
    return np.random.default_rng(seed)


def randn(r, *shape, scale=1.0):
    return (r.standard_normal(shape) * scale).astype(np.float32)


def max_rel_error(got, want):
    """max |got - want| over max |want| (0 when both are all zeros)."""
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    assert got.shape == want.shape
    scale = np.max(np.abs(want)) if want.size else 0.0
    err = np.max(np.abs(got - want)) if want.size else 0.0
    return 0.0 if err == 0 else err / max(scale, 1e-30)


def compare(torch, fn, inputs, wrt, torch_loss):
    """Runs the TSL function on `inputs` (NumPy arrays) and torch_loss on
    torch copies of them, the `wrt` names requiring gradients; checks the loss
    and every gradient. Returns the worst relative error."""
    out = fn(*inputs.values())
    leaves = {k: torch.tensor(v, requires_grad=k in wrt) for k, v in inputs.items()}
    loss = torch_loss(**leaves)
    loss.backward()
    errors = {"loss": max_rel_error(np.asarray(out[0]), loss.detach().numpy())}
    for name, got in zip(wrt, out[1:]):
        want = leaves[name].grad
        assert want is not None and bool(want.ne(0).any()), name  # a real gradient
        errors[name] = max_rel_error(np.asarray(got), want.numpy())
    bad = {k: e for k, e in errors.items() if not e <= RTOL}
    assert not bad, f"relative errors above {RTOL}: {bad} (all: {errors})"
    grads = {k: e for k, e in errors.items() if k != "loss"}
    worst = max(grads, key=grads.get)
    print(f"{fn.name}: loss {errors['loss']:.1e}, worst gradient {grads[worst]:.1e} ({worst})")
    return max(errors.values())


def test_mlp_cross_entropy(torch, mod):
    r = rng(1)
    inputs = {"w1": randn(r, 20, 32, scale=0.3), "b1": randn(r, 32, scale=0.1),
              "w2": randn(r, 32, 7, scale=0.3), "b2": randn(r, 7, scale=0.1),
              "x": randn(r, 16, 20), "y": r.integers(0, 7, 16).astype(np.int64)}

    def loss(w1, b1, w2, b2, x, y):
        return torch.nn.functional.cross_entropy(torch.relu(x @ w1 + b1) @ w2 + b2, y)

    compare(torch, mod.mlp_grads, inputs, ("w1", "b1", "w2", "b2", "x"), loss)


def test_gpt2_block(torch, mod):
    r = rng(2)
    B, S, D, F, heads = 2, 5, 8, 16, 2
    inputs = {"x": randn(r, B, S, D), "r": randn(r, B, S, D),
              "ln1_w": 1 + randn(r, D, scale=0.1), "ln1_b": randn(r, D, scale=0.1),
              "w_attn": randn(r, D, 3 * D, scale=0.3), "b_attn": randn(r, 3 * D, scale=0.1),
              "w_proj": randn(r, D, D, scale=0.3), "b_proj": randn(r, D, scale=0.1),
              "ln2_w": 1 + randn(r, D, scale=0.1), "ln2_b": randn(r, D, scale=0.1),
              "w_fc": randn(r, D, F, scale=0.3), "b_fc": randn(r, F, scale=0.1),
              "w_out": randn(r, F, D, scale=0.3), "b_out": randn(r, D, scale=0.1)}
    F_ = torch.nn.functional

    def loss(x, r, ln1_w, ln1_b, w_attn, b_attn, w_proj, b_proj, ln2_w, ln2_b,
             w_fc, b_fc, w_out, b_out):
        def heads_of(t):
            return t.reshape(B, S, heads, D // heads).transpose(1, 2)

        q, k, v = (F_.layer_norm(x, (D,), ln1_w, ln1_b, 1e-5) @ w_attn + b_attn).split(D, -1)
        a = F_.scaled_dot_product_attention(heads_of(q), heads_of(k), heads_of(v), is_causal=True)
        h = x + a.transpose(1, 2).reshape(B, S, D) @ w_proj + b_proj
        f = F_.layer_norm(h, (D,), ln2_w, ln2_b, 1e-5) @ w_fc + b_fc
        out = h + F_.gelu(f, approximate="tanh") @ w_out + b_out
        return (out * r).sum()

    wrt = ("x", "ln1_w", "ln1_b", "w_attn", "b_attn", "w_proj", "b_proj", "ln2_w", "ln2_b",
           "w_fc", "b_fc", "w_out", "b_out")
    compare(torch, mod.gpt2_grads, inputs, wrt, loss)


def test_conv_batch_norm_relu_pool(torch, mod):
    r = rng(3)
    N, C, O, H, W = 2, 3, 4, 6, 8
    inputs = {"x": randn(r, N, C, H, W), "w": randn(r, O, C, 3, 3, scale=0.3),
              "b": randn(r, O, scale=0.1), "mean": randn(r, O, scale=0.1),
              "var": (0.5 + r.random(O)).astype(np.float32), "gamma": 1 + randn(r, O, scale=0.1),
              "beta": randn(r, O, scale=0.1), "r": randn(r, N, O, H // 2, W // 2)}
    F_ = torch.nn.functional

    def loss(x, w, b, mean, var, gamma, beta, r):
        c = F_.conv2d(x, w, b, padding=1)
        h = F_.max_pool2d(torch.relu(F_.batch_norm(c, mean, var, gamma, beta, False, 0.0, 1e-5)), 2)
        return (h * r).sum()

    compare(torch, mod.conv_grads, inputs, ("x", "w", "b", "gamma", "beta"), loss)


def test_embedding(torch, mod):
    r = rng(4)
    # Repeated ids: their rows' gradients add up.
    inputs = {"ids": r.integers(0, 6, (3, 7)).astype(np.int64), "table": randn(r, 10, 5),
              "r": randn(r, 3, 7, 5)}

    def loss(ids, table, r):
        return (torch.nn.functional.embedding(ids, table) * r).sum()

    compare(torch, mod.embedding_grads, inputs, ("table",), loss)


def test_masked_select(torch, mod):
    r = rng(5)
    inputs = {"x": randn(r, 6, 9), "t": randn(r, 6, 9)}

    def loss(x, t):
        sel = x[t > 0]
        return (sel * sel * sel).sum() / x.numel()

    compare(torch, mod.masked_grads, inputs, ("x",), loss)


def test_stack_unrolled(torch, mod):
    """The 4-layer stack below, unrolled by hand: the stacked weights'
    gradients collect one slice per layer."""
    r = rng(6)
    inputs = {"x": randn(r, 3, 6), "w": randn(r, 4, 6, 6, scale=0.5), "b": randn(r, 4, 6, scale=0.1)}

    def loss(x, w, b):
        h = x
        for layer in range(4):
            h = torch.tanh(h @ w[layer] + b[layer])
        return (h * h).sum()

    compare(torch, mod.stack_unrolled_grads, inputs, ("x", "w", "b"), loss)


def test_stack_for_loop(torch, mod):
    """The same 4-layer stack written with `for` over the stacked weights
    (a loop with a dynamic trip count L = 4): reverse mode through the loop
    gives the stacked weights' gradients one slice per iteration."""
    r = rng(6)
    inputs = {"x": randn(r, 3, 6), "w": randn(r, 4, 6, 6, scale=0.5), "b": randn(r, 4, 6, scale=0.1)}

    def loss(x, w, b):
        h = x
        for layer in range(4):
            h = torch.tanh(h @ w[layer] + b[layer])
        return (h * h).sum()

    compare(torch, mod.stack_loop_grads, inputs, ("x", "w", "b"), loss)


def test_train_digits_example_loss_decreases():
    pytest.importorskip("sklearn")
    spec = importlib.util.spec_from_file_location("train_digits", EXAMPLE)
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    data = example.load_data()
    weights, losses = example.train_tsl(example.load_module(), example.init_params(), data,
                                        epochs=3)
    assert len(losses) == 3 and np.isfinite(losses).all()
    assert losses[0] < 2.3  # log(10): the first epoch already learns
    assert losses[2] < losses[1] < losses[0], losses
    assert [w.shape for w in weights] == [(64, 128), (128,), (128, 10), (10,)]
