"""TSL, the Tensor Shape Language compiler, from Python.

Load or compile a module of TSL functions, then call them on any array with
``__dlpack__`` (NumPy, PyTorch, JAX, CuPy)::

    import numpy as np, tsl
    m = tsl.load("model.tsl")                  # or tsl.compile(source_text)
    y = m.classify(x, w1, w2)                  # a tsl.Tensor
    np.asarray(y)                              # the same memory, no copy

Variants are compiled on demand for the argument types and sizes a call
brings (see ``fn.variants`` and ``fn.stats``). Every failure is a
``tsl.Error`` with the compiler's clang-style message and its
``.diagnostics``. docs/python.md in the repository has the details.
"""

from __future__ import annotations

import dataclasses
import os
import re
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple, Union

__version__ = "0.1.0"

# The standard library shipped in the wheel (tsl/stdlib), unless the user
# points TSL_STDLIB_PATH elsewhere. A build-tree import has none here and
# uses the repository's stdlib/ (compiled in).
_stdlib = os.path.join(os.path.dirname(os.path.abspath(__file__)), "stdlib")
if "TSL_STDLIB_PATH" not in os.environ and os.path.isdir(_stdlib):
    os.environ["TSL_STDLIB_PATH"] = _stdlib

from . import _tsl  # noqa: E402

Function = _tsl.Function
Tensor = _tsl.Tensor
BoundFunction = _tsl.BoundFunction

__all__ = [
    "BoundFunction", "Check", "Diagnostic", "Error", "Expr", "Function",
    "GuardReport", "Module", "Stats", "Tensor", "Variant", "compile", "load",
    "load_weights", "prove", "set_logs", "simplify",
]


@dataclasses.dataclass(frozen=True)
class Diagnostic:
    """One diagnostic of a tsl.Error: where (None when it has no location),
    how severe ("error", "warning" or "note"), the message, and its notes
    (Diagnostic objects of severity "note")."""

    file: Optional[str]
    line: Optional[int]
    col: Optional[int]
    severity: str
    message: str
    notes: List["Diagnostic"] = dataclasses.field(default_factory=list)


_HEADER = re.compile(
    r"^(?:(?P<file>.+?):(?P<line>\d+):(?P<col>\d+): )?"
    r"(?P<severity>error|warning|note): (?P<message>.*)$")
_CARET = re.compile(r"^\s*\^~*\s*$")


def _parse_diagnostics(text: str) -> List[Diagnostic]:
    """Splits clang-style text (as support/Diagnostics.cpp renders it) into
    Diagnostic objects: each header line, the source line and caret under a
    located one skipped, notes attached to the error or warning before."""
    lines = text.split("\n")
    out: List[Diagnostic] = []
    i = 0
    while i < len(lines):
        m = _HEADER.match(lines[i])
        i += 1
        if not m:
            continue
        located = m.group("file") is not None
        if located and i + 1 < len(lines) and _CARET.match(lines[i + 1]):
            i += 2  # the source line and the caret
        d = Diagnostic(
            file=m.group("file"),
            line=int(m.group("line")) if located else None,
            col=int(m.group("col")) if located else None,
            severity=m.group("severity"),
            message=m.group("message"),
            notes=[])
        if d.severity == "note" and out:
            out[-1].notes.append(d)
        else:
            out.append(d)
    if not out and text:
        out.append(Diagnostic(None, None, None, "error", text, []))
    return out


class Error(Exception):
    """Every error of the package: compile errors, bad calls (arity, rank,
    element type, size, device, layout) and failed run-time checks.

    ``str(e)`` is the clang-style text (``file:line:col: error: ...``, the
    source line and a caret, notes); ``e.diagnostics`` the same as
    Diagnostic objects; ``e.kind`` what went wrong: "syntax", "type",
    "shape", "io", "not_found", "invalid_argument", "no_variant",
    "cache_limit", "runtime_check", "resource", "unsupported" or
    "internal"."""

    def __init__(self, message: str, kind: str = "internal"):
        super().__init__(message, kind)
        self.message = message
        self.kind = kind
        self.diagnostics: List[Diagnostic] = _parse_diagnostics(message)

    def __str__(self) -> str:
        return self.message


class _NoSuchAttribute(Error, AttributeError):
    """module.NAME for a function the module lacks (also an AttributeError,
    so hasattr() and getattr(m, name, default) work)."""


class _NoSuchKey(Error, KeyError):
    """module["NAME"] for a function the module lacks (also a KeyError)."""

    def __str__(self) -> str:
        return self.message


@dataclasses.dataclass(frozen=True)
class Stats:
    """What a function's variant table did: variants compiled, variants
    loaded from the on-disk cache instead (cache_hits), calls, one reason
    per recompile (a call no variant served), and peak_bytes: the most host
    memory one call held at once beyond its arguments (its intermediates
    and results; 0 before the first call; a GPU variant's device memory is
    not counted)."""

    compiles: int
    cache_hits: int
    calls: int
    recompiles: List[str]
    peak_bytes: int = 0


@dataclasses.dataclass(frozen=True)
class Variant:
    """One compiled variant: its place in dispatch order (the first whose
    guards hold serves a call), its guards (what its native matcher checks
    of a call, in order, as messages name them: "argument 'x' dim 0 must be
    N", "argument 'k' must be 3", declared ranges, and shape guards such as
    "guard N == 4 (m.tsl:3:7, matmul)"), the auto dims and int params it is
    specialized to, how many calls it served, and whether it came from the
    on-disk compile cache."""

    index: int
    guards: List[str]
    specialized: Dict[str, int]
    calls: int
    from_cache: bool


@dataclasses.dataclass(frozen=True)
class Check:
    """A guard or runtime assertion: the condition, where it comes from
    (file:line:col), why (for a guard, the operation that needed it; for an
    assertion, its message) and the op kind."""

    expr: str
    origin: str
    reason: str
    op: str


@dataclasses.dataclass(frozen=True)
class GuardReport:
    """``fn.guards(...)``: what ``tslc guards`` prints, as objects; str() is
    the text."""

    function: str
    guards: List[Check]
    assertions: List[Check]
    results: List[str]
    text: str

    def __str__(self) -> str:
        return self.text


class Expr:
    """A simplified size expression (``tsl.simplify``); str() is its text.
    Compares equal to another Expr or a str of the same text."""

    __slots__ = ("_text",)

    def __init__(self, text: str):
        self._text = text

    def __str__(self) -> str:
        return self._text

    def __repr__(self) -> str:
        return f"tsl.Expr({self._text!r})"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Expr):
            return self._text == other._text
        if isinstance(other, str):
            return self._text == other
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._text)


_tsl._register({
    "Error": Error, "Stats": Stats, "Variant": Variant, "Check": Check,
    "GuardReport": GuardReport, "Expr": Expr,
})


class Module:
    """A loaded TSL module: ``m.NAME`` or ``m["NAME"]`` is its function
    NAME (a tsl.Function; a function named like an attribute of Module,
    such as ``name``, is reached with ``m["name"]``)."""

    def __init__(self, impl: Any):
        self._impl = impl

    def __getattr__(self, name: str) -> Function:
        if name == "_impl" or (name.startswith("__") and name.endswith("__")):
            raise AttributeError(name)
        try:
            fn = self._impl.function(name)
        except Error as e:
            raise _NoSuchAttribute(e.message, e.kind) from None
        self.__dict__[name] = fn  # the next m.NAME is a plain lookup
        return fn

    def __getitem__(self, name: str) -> Function:
        try:
            return self._impl.function(name)
        except Error as e:
            raise _NoSuchKey(e.message, e.kind) from None

    def __contains__(self, name: object) -> bool:
        return name in self._impl.functions

    def __iter__(self) -> Iterator[str]:
        return iter(self._impl.functions)

    def __dir__(self) -> List[str]:
        return sorted(set(super().__dir__()) | set(self._impl.functions))

    @property
    def functions(self) -> List[str]:
        """The names of the module's functions, sorted."""
        return self._impl.functions

    @property
    def name(self) -> str:
        """The path it was loaded from, or compile()'s name."""
        return self._impl.name

    @property
    def backend(self) -> str:
        """Where its functions run: "cpu", "cuda:N" or "gpu-emulator"."""
        return self._impl.backend

    def __repr__(self) -> str:
        return (f"<tsl.Module '{self.name}' on {self.backend}: "
                f"{', '.join(self.functions)}>")


def load(path: Union[str, "os.PathLike[str]"], backend: str = "cpu") -> Module:
    """Loads and checks the .tsl file at PATH (its imports too).

    backend: "cpu" (the default), "cuda" (or "cuda:N": CUDA device N;
    tsl.Error "no CUDA driver" where there is none) or "gpu-emulator" (the
    GPU kernels run on the CPU by simulated threads; it takes and returns
    CPU arrays). Raises tsl.Error with the diagnostics when the file has
    errors or does not exist. Functions compile on their first call."""
    return Module(_tsl.load(os.fspath(path), backend))


def load_weights(path: Union[str, "os.PathLike[str]"]) -> Dict[str, Any]:
    """The tensors of a weights file as {name: tensor}, in the file's order.

    ``.safetensors`` (what ``safetensors.torch.save_file`` and Hugging Face
    write): tsl.Tensor views of the file mapped read-only, no copy, checked
    first (a truncated file, a header that lies about sizes or offsets, or a
    dtype TSL lacks raises tsl.Error). ``.npz`` (``numpy.savez``): NumPy
    arrays read with numpy.load. Pass them to a function (``fn(**w)``) or
    bind them once (``fn.bind(**w)``)."""
    text = os.fspath(path)
    if text.endswith(".npz"):
        import numpy as np
        with np.load(text, allow_pickle=False) as archive:
            return {name: archive[name] for name in archive.files}
    if text.endswith(".safetensors"):
        return _tsl.load_safetensors(text)
    raise Error(f"error: cannot tell the format of '{text}': weights files are "
                ".safetensors or .npz", "invalid_argument")


def compile(source: str, backend: str = "cpu", name: str = "<string>") -> Module:
    """Like load(), for TSL source text; NAME is its file name in
    diagnostics (file imports resolve from the current directory)."""
    return Module(_tsl.compile(source, backend, name))


def prove(expr: str, dims: str = "") -> Tuple[Optional[bool], Optional[Dict[str, int]]]:
    """The REPL's ``:prove`` as a function: is the condition EXPR true for
    every value of the dims declared in DIMS ("dim I: unbacked in 1..1000;
    dim S: dynamic;", which may also hold ``check(...);`` facts)?

    Returns ``(answer, counterexample)``: answer True, False or None
    (unknown); counterexample a dict of dim values when the answer is False
    (None when the prover has no assignment to show). Raises tsl.Error for
    text that does not parse or names unknown dims."""
    return _tsl.prove(expr, dims)


def simplify(expr: str, dims: str = "") -> Expr:
    """The REPL's ``:simplify``: the canonical form of size expression EXPR
    over the dims of DIMS (names it does not declare are plain symbols);
    str() of the result is the text. Raises tsl.Error like prove()."""
    return _tsl.simplify(expr, dims)


def set_logs(spec: Union[str, Sequence[str], None]) -> None:
    """What the runtime logs to stderr, as TSL_LOGS does for tslc:
    "recompiles", "guards", "dynamic", "perf" (a comma-separated string or
    a list; "all"; "" or "none" for nothing). Applies to every function at
    once, existing ones too. None goes back to $TSL_LOGS. Raises tsl.Error
    for an unknown name."""
    if spec is not None and not isinstance(spec, str):
        spec = ",".join(spec)
    _tsl.set_logs(spec)
