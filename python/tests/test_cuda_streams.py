"""CUDA stream order across DLPack (skips without a CUDA driver and PyTorch
with CUDA): a result consumed on a PyTorch side stream is complete there,
and memory a consumer released is not reused while its stream may still
read it."""

import pytest

import tsl

MM = """\
dim M: dynamic;
dim K: dynamic;
dim N: dynamic;

fn mm(a: f32[M, K], b: f32[K, N]) -> f32[M, N] {
  return a @ b;
}

fn add(x: f32[M, N], y: f32[M, N]) -> f32[M, N] {
  return x + y;
}
"""


@pytest.fixture
def torch_cuda():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("PyTorch has no CUDA device")
    return torch


def cuda_module(torch):
    try:
        return tsl.compile(MM, backend="cuda")
    except tsl.Error as e:
        if e.kind == "unsupported":
            pytest.skip(f"no CUDA device: {e}")
        raise


def test_results_on_a_side_stream_match_a_reference(torch_cuda):
    torch = torch_cuda
    m = cuda_module(torch)
    g = torch.Generator(device="cuda").manual_seed(0)
    a = torch.randn(512, 768, device="cuda", generator=g)
    b = torch.randn(768, 384, device="cuda", generator=g)
    ref = a @ b
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    outs = []
    with torch.cuda.stream(s):
        for _ in range(10):
            # Consumed at once on the side stream: the copy must see the
            # product complete.
            outs.append(torch.from_dlpack(m.mm(a, b)).clone())
    s.synchronize()
    for out in outs:
        torch.testing.assert_close(out, ref, rtol=1e-3, atol=1e-3)


def test_released_results_wait_for_their_consumer_stream(torch_cuda):
    torch = torch_cuda
    m = cuda_module(torch)
    x = torch.ones(1024, 1024, device="cuda")
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    sums = []
    with torch.cuda.stream(s):
        for i in range(10):
            t = torch.from_dlpack(m.add(x, x * i))
            # Long work on the side stream reading t, then t is released
            # while that work may still be queued: the next call's result
            # must not take t's memory before the stream has read it.
            for _ in range(20):
                t = t * 1.0 + 0.0
            sums.append(t.sum())
            del t
    s.synchronize()
    for i, total in enumerate(sums):
        assert total.item() == pytest.approx((1 + i) * 1024 * 1024)


def test_dlpack_stream_arguments(torch_cuda):
    torch = torch_cuda
    m = cuda_module(torch)
    x = torch.ones(4, 4, device="cuda")
    r = m.add(x, x)
    for stream in (None, 1, 2, -1, torch.cuda.Stream().cuda_stream):
        capsule = r.__dlpack__(stream=stream)
        assert capsule is not None
    with pytest.raises(BufferError, match="DLPack disallows 0"):
        r.__dlpack__(stream=0)
