"""Donated arguments (fn.donate, JAX's donate_argnames): results written
into the donated buffers, donated tensors consumed, NumPy inputs untouched."""

import numpy as np
import pytest

import tsl

SOURCE = """\
import optim;
dim N: dynamic;
dim T: dynamic;
dim C: dynamic;

fn adam(w: f32[N], g: f32[N], m: f32[N], v: f32[N], step: f32) -> (f32[N], f32[N], f32[N]) {
  return optim.adam(w, g, m, v, step, 0.01);
}

fn append(cache: f32[T, C], row: f32[C], t: int) -> f32[T, C] {
  check(t >= 0, "t must not be negative");
  var c = cache;
  c[t] = row;
  return c;
}

fn pair(w: f32[N]) -> (f32[N], f32[N]) {
  return (w, w);
}

fn sub(x: f32[*S], y: f32[*S]) -> f32[*S] {
  return x - y;
}
"""


@pytest.fixture(scope="module")
def mod():
    return tsl.compile(SOURCE)


def rand(n, seed):
    return np.random.default_rng(seed).standard_normal(n).astype(np.float32)


def adam_reference(w, g, m, v, step, lr=0.01):
    m1 = 0.9 * m + 0.1 * g
    v1 = 0.999 * v + 0.001 * g * g
    mhat = m1 / (1 - 0.9**step)
    vhat = v1 / (1 - 0.999**step)
    return w - lr * mhat / (np.sqrt(vhat) + 1e-8), m1, v1


def test_training_loop_updates_in_place(mod):
    step = mod.adam.donate("w", "m", "v")
    assert "donating w, m, v" in repr(step)
    n = 1000
    w, m, v = (tsl.compile("fn z(x: f32[N]) -> f32[N] { return x * 1.0; }").z(a)
               for a in (rand(n, 1), np.zeros(n, np.float32), np.zeros(n, np.float32)))
    ref = [rand(n, 1), np.zeros(n, np.float32), np.zeros(n, np.float32)]
    for k in range(1, 4):
        g = rand(n, 10 + k)
        addresses = [t.data_ptr for t in (w, m, v)]
        old = (w, m, v)
        w, m, v = step(w, g, m, v, np.array(k, np.float32))
        ref = adam_reference(*ref[:1], g, *ref[1:], k)
        # The new weights and moments live where the old ones did.
        assert [t.data_ptr for t in (w, m, v)] == addresses
        assert all(t.donated for t in old) and not w.donated
        for got, want in zip((w, m, v), ref):
            np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-7)
    # A donated tensor is consumed: reading it says why.
    with pytest.raises(tsl.Error, match="was donated as argument 'w' of 'adam'"):
        np.asarray(old[0])
    assert "donated" in repr(old[0])
    with pytest.raises(tsl.Error, match="was donated"):
        step(old[0], g, m, v, np.array(4, np.float32))


def test_numpy_arguments_are_copied_not_changed(mod):
    step = mod.adam.donate("w", "m", "v")
    w, g, m, v = rand(64, 1), rand(64, 2), rand(64, 3), np.abs(rand(64, 4))
    kept = [a.copy() for a in (w, m, v)]
    got = step(w, g, m, v, np.array(1, np.float32))
    for a, b in zip((w, m, v), kept):
        np.testing.assert_array_equal(a, b)
    for r, want in zip(got, adam_reference(w, g, m, v, 1)):
        np.testing.assert_allclose(np.asarray(r), want, rtol=1e-5, atol=1e-7)


def test_exported_tensor_is_copied(mod):
    step = mod.sub.donate("x")
    x = mod.sub(rand(8, 1), np.zeros(8, np.float32))
    view = np.asarray(x)  # NumPy still reads x's memory
    before = view.copy()
    r = step(x, np.ones(8, np.float32))
    np.testing.assert_array_equal(view, before)
    np.testing.assert_allclose(np.asarray(r), before - 1)
    assert x.donated


def test_kv_cache_appended_in_place(mod):
    append = mod.append.donate("cache")
    cache = mod.sub(np.zeros((5, 3), np.float32), np.zeros((5, 3), np.float32))
    address = cache.data_ptr
    for t in range(5):
        cache = append(cache, np.full(3, t + 1, np.float32), t)
        assert cache.data_ptr == address
    np.testing.assert_array_equal(np.asarray(cache)[:, 0], [1, 2, 3, 4, 5])


def test_failed_call_gives_the_tensor_back(mod):
    append = mod.append.donate("cache")
    cache = mod.sub(np.ones((2, 3), np.float32), np.zeros((2, 3), np.float32))
    with pytest.raises(tsl.Error, match="t must not be negative"):
        append(cache, np.zeros(3, np.float32), -1)
    assert not cache.donated
    np.testing.assert_array_equal(np.asarray(cache), np.ones((2, 3)))


def test_one_buffer_for_two_results(mod):
    pair = mod.pair.donate("w")
    w = mod.sub(rand(4, 1), np.zeros(4, np.float32))
    values = np.asarray(w).copy()
    a, b = pair(w)
    assert a.data_ptr != b.data_ptr  # the second result is a copy
    np.testing.assert_array_equal(np.asarray(a), values)
    np.testing.assert_array_equal(np.asarray(b), values)


def test_bad_donations(mod):
    with pytest.raises(tsl.Error, match="has no parameter 'q' to donate"):
        mod.adam.donate("q")
    with pytest.raises(tsl.Error, match="parameter 't' of 'append' is an int"):
        mod.append.donate("t")(np.zeros((2, 3), np.float32), np.zeros(3, np.float32), 0)
    # The same tensor twice: donated first, it cannot be read second.
    x = mod.sub(rand(4, 1), np.zeros(4, np.float32))
    with pytest.raises(tsl.Error, match="was donated as argument 'x' of 'sub'"):
        mod.sub.donate("x")(x, x)
    assert not x.donated  # given back
    # Read first, it is copied for the donation (NumPy semantics hold).
    r = mod.sub.donate("y")(x, x)
    np.testing.assert_array_equal(np.asarray(r), np.zeros(4))
