"""Every error kind: one exception class, tsl.Error, with the clang-style
message and structured diagnostics."""

import ctypes
import pickle

import numpy as np
import pytest

import tsl
from conftest import MODEL


def line_of(text):
    """The 1-based line of MODEL that starts with TEXT (after spaces)."""
    return next(i for i, l in enumerate(MODEL.split("\n"), 1) if l.strip().startswith(text))


def f32(*values):
    return np.array(values, dtype=np.float32)


def test_error_class():
    assert issubclass(tsl.Error, Exception)
    e = tsl.Error("m.tsl:1:2: error: bad\nline\n ^\nm.tsl:3:4: note: here\nline\n   ^", "type")
    assert e.kind == "type" and str(e).startswith("m.tsl:1:2: error: bad")
    [d] = e.diagnostics
    assert (d.file, d.line, d.col, d.severity, d.message) == ("m.tsl", 1, 2, "error", "bad")
    [n] = d.notes
    assert (n.file, n.line, n.col, n.severity, n.message) == ("m.tsl", 3, 4, "note", "here")
    assert pickle.loads(pickle.dumps(e)).kind == "type"


def test_syntax_error():
    with pytest.raises(tsl.Error) as info:
        tsl.compile("fn f(x: f32[N]) -> f32[N] { return x + ; }")
    e = info.value
    assert e.kind == "syntax"
    assert str(e) == ("<string>:1:40: error: unexpected ';'\n"
                      "fn f(x: f32[N]) -> f32[N] { return x + ; }\n"
                      "                                       ^")
    [d] = e.diagnostics
    assert (d.file, d.line, d.col, d.severity) == ("<string>", 1, 40, "error")
    assert d.message == "unexpected ';'" and d.notes == []


def test_compile_error_with_note(tmp_path):
    path = tmp_path / "twice.tsl"
    path.write_text("fn f(x: f32[N]) -> f32[N] { return x; }\n"
                    "fn f(x: f32[N]) -> f32[N] { return x; }\n")
    with pytest.raises(tsl.Error) as info:
        tsl.load(path)
    [d] = info.value.diagnostics
    assert (d.file, d.line, d.col) == (str(path), 2, 4)
    assert d.message == "function 'f' is defined twice"
    [n] = d.notes
    assert (n.line, n.col, n.severity, n.message) == (1, 4, "note", "the first definition is here")


def test_unknown_name_is_a_type_error():
    with pytest.raises(tsl.Error, match="unknown name 'z'") as info:
        tsl.compile("fn f(x: f32[N]) -> f32[N] { return x + z; }")
    assert info.value.kind == "type"


def test_missing_file(tmp_path):
    with pytest.raises(tsl.Error) as info:
        tsl.load(tmp_path / "nope.tsl")
    assert info.value.kind == "not_found"
    assert str(info.value) == f"error: no such file: '{tmp_path / 'nope.tsl'}'"
    [d] = info.value.diagnostics
    assert (d.file, d.line, d.col, d.severity) == (None, None, None, "error")


def test_unknown_function(m, model_path):
    with pytest.raises(tsl.Error) as info:
        m.nope
    assert isinstance(info.value, AttributeError) and info.value.kind == "not_found"
    assert str(info.value).startswith(f"error: '{model_path}' has no function 'nope' (it has: add, ")
    with pytest.raises(tsl.Error):
        m["nope"]


def test_unknown_backend(model_path):
    with pytest.raises(tsl.Error, match=r"unknown backend 'tpu' \(cpu, cuda, cuda:N, gpu-emulator\)") as info:
        tsl.load(model_path, backend="tpu")
    assert info.value.kind == "invalid_argument"


def test_wrong_rank(m, model_path):
    x = np.ones((2, 2), np.float32)
    with pytest.raises(tsl.Error) as info:
        m.add(x, x)
    assert info.value.kind == "type"
    line = line_of("fn add(")
    assert str(info.value) == (f"{model_path}:{line}:11: error: argument 'x' must have rank 1, got 2\n"
                               "fn add(x: f32[N], y: f32[N]) -> f32[N] {\n"
                               "          ^~~~~~")
    [d] = info.value.diagnostics
    assert (d.line, d.col, d.message) == (line, 11, "argument 'x' must have rank 1, got 2")


def test_wrong_element_type(m):
    x = np.ones(2, np.int32)
    with pytest.raises(tsl.Error, match="argument 'x' must have element type f32, got i32"):
        m.add(x, x)


def test_element_type_tsl_lacks(m):
    with pytest.raises(tsl.Error, match=r"argument 'x' has element type uint8, which TSL does not have") as info:
        m.add(np.ones(2, np.uint8), f32(1, 2))
    assert info.value.kind == "invalid_argument"


def test_wrong_size(m):
    with pytest.raises(tsl.Error, match=r"argument 'y': dim 'N' is 2 in an earlier argument but 3 here") as info:
        m.add(f32(1, 2), f32(1, 2, 3))
    assert info.value.diagnostics[0].line == line_of("fn add(")


def test_failed_guard_of_a_variant(m):
    # bcast needs N == M (a guard); a call breaking it is a compile error
    # for those sizes, with the broadcast's location.
    with pytest.raises(tsl.Error, match=r"error: .*broadcast") as info:
        m.bcast(f32(1, 2), f32(1, 2, 3))
    assert info.value.diagnostics[0].file is not None


def test_failed_runtime_check(m, model_path):
    with pytest.raises(tsl.Error) as info:
        m.even(f32(1, 2, 3))
    e = info.value
    line = line_of("check(N % 2")
    assert e.kind == "runtime_check"
    assert str(e) == (f"{model_path}:{line}:3: error: runtime check failed: N % 2 == 0: N must be even\n"
                      "  check(N % 2 == 0, \"N must be even\");\n"
                      "  ^")
    [d] = e.diagnostics
    assert (d.line, d.col, d.severity) == (line, 3, "error")
    assert d.message == "runtime check failed: N % 2 == 0: N must be even"
    # The same function still serves good calls.
    np.testing.assert_array_equal(np.asarray(m.even(f32(1, 2))), f32(2, 4))


def test_failed_runtime_check_in_string_module():
    mod = tsl.compile("dim N: dynamic;\nfn f(x: f32[N]) -> f32[N] {\n  check(N > 2);\n  return x;\n}",
                      name="checks.tsl")
    with pytest.raises(tsl.Error) as info:
        mod.f(f32(1))
    assert str(info.value) == ("checks.tsl:3:3: error: runtime check failed: N > 2\n"
                               "  check(N > 2);\n"
                               "  ^")


@pytest.mark.parametrize("call,message", [
    (lambda m: m.add(f32(1)), r"error: missing argument 'y' of 'add\(x, y\)'"),
    (lambda m: m.add(f32(1), f32(1), f32(1)), r"error: 'add\(x, y\)' takes 2 arguments, got 3"),
    (lambda m: m.add(f32(1), z=f32(1)), r"error: 'add\(x, y\)' has no parameter 'z'"),
    (lambda m: m.add(f32(1), f32(1), x=f32(1)), r"error: 'add\(x, y\)' takes 2 arguments, got 3"),
    (lambda m: m.add(y=f32(1), x=f32(1), z=f32(1)), r"error: 'add\(x, y\)' has no parameter 'z'"),
    (lambda m: m.add(), r"error: missing argument 'x' of 'add\(x, y\)'"),
    (lambda m: m.add(f32(1), x=f32(1)), r"error: argument 'x' of 'add\(x, y\)' is given twice"),
    (lambda m: m.add(f32(1), 2.5), r"error: argument 'y' is a float: pass a tensor"),
    (lambda m: m.add(f32(1), [1.0]), r"error: argument 'y' is a list: pass a tensor"),
    (lambda m: m.scale(f32(1), 2**70), r"error: argument 'k' does not fit in 64 bits"),
])
def test_bad_calls(m, call, message):
    with pytest.raises(tsl.Error, match=message) as info:
        call(m)
    assert info.value.kind == "invalid_argument"


def test_int_for_a_tensor_parameter(m):
    with pytest.raises(tsl.Error, match=r"parameter 'x' is a tensor \(f32\[N\]\)"):
        m.add(3, f32(1))


def test_tensor_for_an_int_parameter(m):
    with pytest.raises(tsl.Error, match=r"parameter 'k' is an int; pass an integer"):
        m.scale(f32(1), f32(1))


def test_misaligned_argument(m):
    x = np.frombuffer(bytearray(20), dtype=np.float32, count=4, offset=1)
    assert not x.flags.aligned
    try:
        x.__dlpack__()
    except Exception:  # NumPy itself refuses to export it
        pytest.skip("this NumPy does not export misaligned arrays")
    with pytest.raises(tsl.Error, match=r"argument 'x' is misaligned"):
        m.add(x, x)


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int32),
                ("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16),
                ("shape", ctypes.POINTER(ctypes.c_int64)), ("strides", ctypes.POINTER(ctypes.c_int64)),
                ("byte_offset", ctypes.c_uint64)]


class _DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", _DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p)]


class FakeCudaTensor:
    """A DLPack producer claiming CUDA memory (never read: the device check
    comes first), for the wrong-device error without a GPU."""

    def __init__(self):
        self.shape = (ctypes.c_int64 * 1)(4)
        self.managed = _DLManagedTensor()
        t = self.managed.dl_tensor
        t.data, t.device, t.ndim = 0x1000, _DLDevice(2, 0), 1
        t.code, t.bits, t.lanes = 2, 32, 1
        t.shape = self.shape

    def __dlpack_device__(self):
        return (2, 0)

    def __dlpack__(self, stream=None, max_version=None, **kwargs):
        if max_version is not None:
            raise TypeError("unversioned only")
        new = ctypes.pythonapi.PyCapsule_New
        new.restype, new.argtypes = ctypes.py_object, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
        return new(ctypes.addressof(self.managed), b"dltensor", None)


def test_wrong_device(m):
    with pytest.raises(tsl.Error) as info:
        m.add(FakeCudaTensor(), f32(1, 2, 3, 4))
    assert str(info.value) == ("error: argument 'x' is on cuda:0, but this module runs on cpu: "
                               "move it there first")
    assert info.value.kind == "invalid_argument"


def test_no_cuda_driver(model_path):
    try:
        tsl.load(model_path, backend="cuda")
    except tsl.Error as e:
        assert e.kind == "unsupported" and "no CUDA driver" in str(e)
    else:
        pytest.skip("a CUDA driver is present")
