"""PyTorch and JAX through DLPack (skipped where they are not installed)."""

import numpy as np
import pytest

import tsl


def test_torch_cpu(m):
    torch = pytest.importorskip("torch")
    x = torch.arange(5, dtype=torch.float32)
    y = torch.ones(5, dtype=torch.float32)
    r = m.add(x, y)
    t = torch.from_dlpack(r)
    assert t.data_ptr() == r.data_ptr  # the same memory
    torch.testing.assert_close(t, x + y)
    # Results feed PyTorch and back.
    torch.testing.assert_close(torch.from_dlpack(m.add(t, t)), 2 * (x + y))
    assert m.scale(x, 2) is not None


def test_torch_dtypes(m):
    torch = pytest.importorskip("torch")
    r = m.to_bf16(torch.tensor([1.0, 2.5]))
    t = torch.from_dlpack(r)
    assert t.dtype == torch.bfloat16 and t.tolist() == [1.0, 2.5]
    i = torch.from_dlpack(m.inc64(torch.arange(3)))
    assert i.dtype == torch.int64 and i.tolist() == [1, 2, 3]
    h = torch.from_dlpack(m.twice16(torch.ones(2, dtype=torch.float16)))
    assert h.dtype == torch.float16 and h.tolist() == [2.0, 2.0]


def test_torch_non_contiguous(m):
    torch = pytest.importorskip("torch")
    a = torch.ones(3, 4)
    with pytest.raises(tsl.Error, match="argument 'a' is not row-major contiguous"):
        m.mm(a.t(), a)
    r = m.mm(a.t().contiguous(), a)
    assert torch.from_dlpack(r).shape == (4, 4)


def test_torch_requires_grad(m):
    torch = pytest.importorskip("torch")
    x = torch.ones(3, requires_grad=True)
    try:
        r = m.add(x, x)
    except tsl.Error as e:  # PyTorch refuses to export a tensor that needs grad
        assert "DLPack" in str(e)
    else:
        assert np.asarray(r).tolist() == [2.0, 2.0, 2.0]


def test_jax(m):
    jnp = pytest.importorskip("jax.numpy")
    jax = pytest.importorskip("jax")
    x = jnp.arange(4, dtype=jnp.float32)
    r = m.add(x, x)
    np.testing.assert_array_equal(np.asarray(r), np.arange(4, dtype=np.float32) * 2)
    j = jax.dlpack.from_dlpack(r)
    np.testing.assert_array_equal(np.asarray(j), np.arange(4, dtype=np.float32) * 2)
