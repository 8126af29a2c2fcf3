"""Calls from Python: modules, arguments, results, DLPack and zero copies."""

import numpy as np
import pytest

import tsl


def f32(*values):
    return np.array(values, dtype=np.float32)


def test_load_and_call(m):
    r = m.add(f32(1, 2, 3), f32(10, 20, 30))
    assert isinstance(r, tsl.Tensor)
    assert r.shape == (3,) and r.dtype == "f32" and r.ndim == 1
    assert r.device == "cpu" and r.nbytes == 12 and len(r) == 3
    assert repr(r) == "tsl.Tensor(f32[3], device='cpu')"
    np.testing.assert_array_equal(np.asarray(r), f32(11, 22, 33))


def test_compile_source_text():
    mod = tsl.compile("fn sq(x: f32[N]) -> f32[N] { return x * x; }")
    assert mod.name == "<string>" and mod.functions == ["sq"]
    np.testing.assert_array_equal(np.asarray(mod.sq(f32(1, 2, 3))), f32(1, 4, 9))


def test_stdlib_import():
    mod = tsl.compile("import nn;\nfn f(x: f32[B, D]) -> f32[B, D] { return nn.softmax(x); }")
    x = np.random.default_rng(0).standard_normal((3, 5)).astype(np.float32)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(np.asarray(mod.f(x)), e / e.sum(axis=1, keepdims=True), rtol=1e-5)


def test_module_access(m, model_path):
    assert m["add"] is m.add  # one Function object per name
    assert "add" in m and "nope" not in m
    assert "add" in dir(m) and "add" in list(m)
    assert m.backend == "cpu" and m.name == str(model_path)
    assert not hasattr(m, "nope")
    with pytest.raises(KeyError):
        m["nope"]
    assert m.add.name == "add" and m.add.parameters == ("x", "y")
    assert repr(m.add).startswith("<tsl.Function add(x, y) of ")


def test_keyword_arguments(m):
    r = m.add(y=f32(1, 1), x=f32(2, 3))
    np.testing.assert_array_equal(np.asarray(r), f32(3, 4))
    r = m.scale(f32(1, 2), k=3)
    np.testing.assert_array_equal(np.asarray(r), f32(2, 4))


def test_int_parameters(m):
    np.testing.assert_array_equal(np.asarray(m.scale(f32(1, 2), 3)), f32(2, 4))
    # NumPy integer scalars are ints too.
    np.testing.assert_array_equal(np.asarray(m.scale(f32(1, 2), np.int64(5))), f32(2, 4))


def test_several_results(m):
    r = m.two(f32(1, 2))
    assert isinstance(r, tuple) and len(r) == 2
    np.testing.assert_array_equal(np.asarray(r[0]), f32(2, 3))
    np.testing.assert_array_equal(np.asarray(r[1]), f32(2, 4))


def test_zero_dim_result(m):
    r = m.total(f32(1, 2, 3.5))
    assert r.shape == () and r.ndim == 0
    assert np.asarray(r) == np.float32(6.5)
    with pytest.raises(TypeError):
        len(r)


def test_matmul(m):
    rng = np.random.default_rng(1)
    a = rng.standard_normal((5, 7)).astype(np.float32)
    b = rng.standard_normal((7, 3)).astype(np.float32)
    np.testing.assert_allclose(np.asarray(m.mm(a, b)), a @ b, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("fn,dtype,expect", [
    ("halve", np.float64, lambda x: x * 0.5),
    ("inc32", np.int32, lambda x: x + 1),
    ("inc64", np.int64, lambda x: x + 1),
    ("twice16", np.float16, lambda x: x + x),
])
def test_element_types(m, fn, dtype, expect):
    x = np.arange(6).astype(dtype)
    r = np.asarray(m[fn](x))
    assert r.dtype == dtype
    np.testing.assert_array_equal(r, expect(x))


def test_bool(m):
    x = np.array([True, False, True])
    r = np.asarray(m.flip(x))
    assert r.dtype == np.bool_
    np.testing.assert_array_equal(r, ~x)


def test_bf16_has_no_numpy_type(m):
    r = m.to_bf16(f32(1, 2))
    assert r.dtype == "bf16" and r.__dlpack_device__() == (1, 0)
    with pytest.raises(tsl.Error, match="bf16 tensor has no NumPy element type"):
        np.asarray(r)


def test_result_shares_memory_with_numpy(m):
    r = m.add(f32(1, 2, 3), f32(0, 0, 0))
    a = np.asarray(r)
    assert a.ctypes.data == r.data_ptr  # no copy
    b = np.from_dlpack(r)
    assert b.ctypes.data == r.data_ptr
    a[0] = 42
    assert np.asarray(r)[0] == 42
    del r  # the arrays keep the memory alive
    assert a[0] == 42 and b[0] == 42 and a.sum() == 47


def test_array_copy_and_dtype(m):
    r = m.add(f32(1, 2), f32(0, 0))
    c = r.__array__(copy=True)
    assert c.ctypes.data != r.data_ptr
    d = r.__array__(dtype=np.float64)
    assert d.dtype == np.float64 and list(d) == [1.0, 2.0]
    assert r.numpy().ctypes.data == r.data_ptr and r.cpu() is r


def test_dlpack_capsules(m):
    r = m.add(f32(1, 2), f32(3, 4))
    assert type(r.__dlpack__()).__name__ == "PyCapsule"
    assert type(r.__dlpack__(max_version=(1, 0))).__name__ == "PyCapsule"
    assert r.__dlpack__(stream=None, dl_device=(1, 0)) is not None
    with pytest.raises(BufferError):
        r.__dlpack__(copy=True)
    with pytest.raises(BufferError):
        r.__dlpack__(dl_device=(2, 0))


def test_result_as_argument(m):
    # A tsl.Tensor is itself a DLPack producer: results feed calls directly.
    r = m.add(f32(1, 2), f32(1, 1))
    np.testing.assert_array_equal(np.asarray(m.add(r, r)), f32(4, 6))


class OnlyDlpack:
    """A producer with nothing but the DLPack protocol (no buffer protocol,
    no __array__), counting exports: the package must read through it."""

    def __init__(self, array):
        self.array = array
        self.exports = 0

    def __dlpack__(self, **kwargs):
        self.exports += 1
        return self.array.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self.array.__dlpack_device__()


def test_arguments_read_in_place(m):
    x = OnlyDlpack(f32(1, 2, 3))
    r = m.add(x, x)
    assert x.exports == 2
    np.testing.assert_array_equal(np.asarray(r), f32(2, 4, 6))


def test_readonly_argument(m):
    x = f32(1, 2)
    x.flags.writeable = False  # exported as a DLPack 1.0 read-only tensor
    np.testing.assert_array_equal(np.asarray(m.add(x, x)), f32(2, 4))


def test_non_contiguous_rejected(m):
    x = np.arange(8, dtype=np.float32)[::2]
    with pytest.raises(tsl.Error, match=r"argument 'x' is not row-major contiguous"):
        m.add(x, np.ascontiguousarray(x))
    # A contiguous copy works.
    np.testing.assert_array_equal(np.asarray(m.add(np.ascontiguousarray(x), np.zeros(4, np.float32))), x)


def test_size_one_dims_may_have_any_stride(m):
    # Shape (1, 3) cut from a (1, 8) row: strides (8, 1) elements; the size-1
    # dim's stride does not matter, so it is row-major and read in place.
    a = np.arange(8, dtype=np.float32).reshape(1, 8)[:, :3]
    assert a.strides == (32, 4)
    b = np.ones((3, 1), np.float32)
    np.testing.assert_array_equal(np.asarray(m.mm(a, b)), [[3.0]])


def test_empty_tensors(m):
    r = m.add(np.zeros(0, np.float32), np.zeros(0, np.float32))
    assert r.shape == (0,) and np.asarray(r).shape == (0,)
