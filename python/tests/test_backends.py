"""The GPU emulator backend (always available) and CUDA (where a driver
and PyTorch with CUDA are)."""

import numpy as np
import pytest

import tsl
from conftest import MODEL


def test_gpu_emulator(model_path):
    m = tsl.load(model_path, backend="gpu-emulator")
    assert m.backend == "gpu-emulator"
    x = np.arange(6, dtype=np.float32)
    r = m.add(x, x)
    assert r.device == "cpu" and r.__dlpack_device__() == (1, 0)
    np.testing.assert_array_equal(np.asarray(r), x + x)
    a = np.asarray(r)
    assert a.ctypes.data == r.data_ptr
    q, w = m.two(x)
    np.testing.assert_array_equal(np.asarray(w), x * 2)
    assert m.add.stats.compiles == 1


def test_gpu_emulator_reductions_and_checks(model_path):
    m = tsl.load(model_path, backend="gpu-emulator")
    assert np.asarray(m.total(np.ones(1000, np.float32))) == 1000
    rng = np.random.default_rng(3)
    a = rng.standard_normal((33, 17)).astype(np.float32)
    b = rng.standard_normal((17, 9)).astype(np.float32)
    np.testing.assert_allclose(np.asarray(m.mm(a, b)), a @ b, rtol=1e-4, atol=1e-4)
    with pytest.raises(tsl.Error, match="runtime check failed: N % 2 == 0") as info:
        m.even(np.ones(3, np.float32))
    assert info.value.kind == "runtime_check"


def test_gpu_emulator_softmax():
    mod = tsl.compile("import nn;\nfn f(x: f32[B, D]) -> f32[B, D] { return nn.softmax(x); }",
                      backend="gpu-emulator")
    x = np.random.default_rng(0).standard_normal((4, 300)).astype(np.float32)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(np.asarray(mod.f(x)), e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-7)


def cuda_module(model_path):
    try:
        return tsl.load(model_path, backend="cuda")
    except tsl.Error as e:
        if e.kind == "unsupported":
            pytest.skip(f"no CUDA device: {e}")
        raise


def test_cuda_with_torch(model_path):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("PyTorch has no CUDA device")
    m = cuda_module(model_path)
    assert m.backend == "cuda:0"
    x = torch.arange(1000, dtype=torch.float32, device="cuda")
    y = torch.ones(1000, dtype=torch.float32, device="cuda") * 2
    x.mul_(3)  # queued on PyTorch's stream: the call must see it
    r = m.add(x, y)
    assert r.device == "cuda:0" and r.__dlpack_device__() == (2, 0)
    t = torch.from_dlpack(r)
    assert t.device.type == "cuda" and t.data_ptr() == r.data_ptr  # no copy
    torch.testing.assert_close(t, x + y)
    # NumPy gets a host copy.
    np.testing.assert_array_equal(np.asarray(r), (x + y).cpu().numpy())
    assert r.cpu().device == "cpu"
    with pytest.raises(ValueError):
        r.__array__(copy=False)
    # Host arrays are on the wrong device.
    with pytest.raises(tsl.Error, match="argument 'x' is on cpu, but this module runs on cuda:0"):
        m.add(np.ones(3, np.float32), np.ones(3, np.float32))
    a = torch.randn(64, 32, device="cuda")
    b = torch.randn(32, 16, device="cuda")
    torch.testing.assert_close(torch.from_dlpack(m.mm(a, b)), a @ b, rtol=1e-3, atol=1e-3)
    with pytest.raises(tsl.Error, match="runtime check failed"):
        m.even(torch.ones(3, device="cuda"))


def test_cuda_rejects_cpu_module_inputs(model_path):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("PyTorch has no CUDA device")
    m = tsl.load(model_path)
    with pytest.raises(tsl.Error, match="argument 'x' is on cuda:0, but this module runs on cpu"):
        m.add(torch.ones(3, device="cuda"), torch.ones(3, device="cuda"))
