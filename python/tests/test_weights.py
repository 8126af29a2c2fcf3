"""Weights files (tsl.load_weights: safetensors and .npz) and fn.bind."""

import json
import struct

import numpy as np
import pytest

import tsl

MODEL = """\
dim B: dynamic;
fn linear(x: f32[B, 3], w: f32[3, 2], b: f32[2]) -> f32[B, 2] {
  return x @ w + b;
}
"""


def write_safetensors(path, tensors, metadata=None):
    """What safetensors.numpy.save_file writes: the header length, the JSON
    header (padded with spaces to 8 bytes), the data."""
    names = {np.dtype(np.float32): "F32", np.dtype(np.int64): "I64",
             np.dtype(np.float16): "F16", np.dtype(np.bool_): "BOOL"}
    header, data = {}, b""
    if metadata:
        header["__metadata__"] = metadata
    for name, a in tensors.items():
        raw = np.ascontiguousarray(a).tobytes()
        header[name] = {"dtype": names[a.dtype], "shape": list(a.shape),
                        "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    path.write_bytes(struct.pack("<Q", len(text)) + text + data)


def test_safetensors_views_and_bind(tmp_path):
    rng = np.random.default_rng(0)
    w = rng.standard_normal((3, 2)).astype(np.float32)
    b = rng.standard_normal(2).astype(np.float32)
    path = tmp_path / "model.safetensors"
    write_safetensors(path, {"w": w, "b": b, "steps": np.array([7], np.int64)},
                      {"format": "np"})
    weights = tsl.load_weights(path)
    assert list(weights) == ["w", "b", "steps"]
    assert isinstance(weights["w"], tsl.Tensor) and weights["w"].shape == (3, 2)
    np.testing.assert_array_equal(np.asarray(weights["w"]), w)
    assert int(np.asarray(weights["steps"])[0]) == 7
    m = tsl.compile(MODEL)
    linear = m.linear.bind(w=weights["w"], b=weights["b"])
    assert linear.parameters == ("x",) and linear.function is m.linear
    assert "bound: w, b" in repr(linear)
    x = rng.standard_normal((4, 3)).astype(np.float32)
    np.testing.assert_allclose(np.asarray(linear(x)), x @ w + b, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(linear(x=x)), x @ w + b, rtol=1e-6)
    # The views keep the file mapped after the dict is gone.
    del weights
    np.testing.assert_allclose(np.asarray(linear(x)), x @ w + b, rtol=1e-6)


def test_bind_errors(tmp_path):
    m = tsl.compile(MODEL)
    with pytest.raises(tsl.Error, match="has no parameter 'q' to bind"):
        m.linear.bind(q=1)
    linear = m.linear.bind(b=np.zeros(2, np.float32))
    with pytest.raises(tsl.Error, match="argument 'b' of .* is bound"):
        linear(np.zeros((1, 3), np.float32), np.zeros((3, 2), np.float32),
               b=np.zeros(2, np.float32))
    with pytest.raises(tsl.Error, match="takes 2 arguments, got 3"):
        linear(1, 2, 3)


def test_npz(tmp_path):
    w = np.arange(6, dtype=np.float32).reshape(3, 2)
    np.savez(tmp_path / "w.npz", w=w, b=np.ones(2, np.float32))
    weights = tsl.load_weights(tmp_path / "w.npz")
    assert sorted(weights) == ["b", "w"]
    out = tsl.compile(MODEL).linear.bind(**weights)(np.ones((1, 3), np.float32))
    np.testing.assert_array_equal(np.asarray(out), [[7, 10]])


def test_donating_a_view_copies_it(tmp_path):
    path = tmp_path / "w.safetensors"
    write_safetensors(path, {"w": np.ones(4, np.float32)})
    w = tsl.load_weights(path)["w"]
    step = tsl.compile("fn f(w: f32[4]) -> f32[4] { return w * 2.0; }").f.donate("w")
    np.testing.assert_array_equal(np.asarray(step(w)), [2, 2, 2, 2])
    assert w.donated
    again = tsl.load_weights(path)["w"]  # the file is unchanged
    np.testing.assert_array_equal(np.asarray(again), [1, 1, 1, 1])


@pytest.mark.parametrize("mangle, message", [
    (lambda b: b[:20], "is past the end of the file"),
    (lambda b: b[:8] + b"[" + b[9:], "malformed header: expected '{' at byte 0"),
    (lambda b: b.replace(b'"F32"', b'"U16"'), "has dtype U16, which TSL has no element type"),
    (lambda b: b.replace(b"[0, 16]", b"[0, 99]"), "holding 99 bytes"),
])
def test_broken_safetensors(tmp_path, mangle, message):
    path = tmp_path / "w.safetensors"
    write_safetensors(path, {"w": np.ones(4, np.float32)})
    path.write_bytes(mangle(path.read_bytes()))
    with pytest.raises(tsl.Error, match=message) as e:
        tsl.load_weights(path)
    assert e.value.kind == "invalid_argument"
    with pytest.raises(tsl.Error, match="weights files are .safetensors or .npz"):
        tsl.load_weights(tmp_path / "w.bin")


def test_torch_safetensors_file(tmp_path):
    """A file written by the safetensors package from PyTorch (skipped where
    either is missing)."""
    torch = pytest.importorskip("torch")
    st = pytest.importorskip("safetensors.torch")
    t = {"a": torch.randn(5, 7), "b": torch.arange(3, dtype=torch.int64),
         "h": torch.randn(2, 2, dtype=torch.bfloat16)}
    st.save_file(t, str(tmp_path / "t.safetensors"))
    w = tsl.load_weights(tmp_path / "t.safetensors")
    np.testing.assert_array_equal(np.asarray(w["a"]), t["a"].numpy())
    np.testing.assert_array_equal(np.asarray(w["b"]), t["b"].numpy())
    assert torch.equal(torch.from_dlpack(w["h"]), t["h"])
