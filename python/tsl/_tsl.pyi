"""Type stubs of the native module tsl._tsl (use it through ``import tsl``)."""

from typing import Any, Dict, List, Optional, Tuple, Union

import tsl

class Tensor:
    """A result of a TSL function: row-major memory the runtime allocated,
    on the CPU or a CUDA device. ``np.asarray(t)``, ``torch.from_dlpack(t)``,
    ``jax.dlpack.from_dlpack(t)`` and ``cupy.from_dlpack(t)`` share it
    without copying (a CUDA tensor becomes a NumPy array by a copy)."""

    def __dlpack__(
        self,
        *,
        stream: Optional[int] = None,
        max_version: Optional[Tuple[int, int]] = None,
        dl_device: Optional[Tuple[int, int]] = None,
        copy: Optional[bool] = None,
    ) -> Any:
        """A DLPack capsule of the tensor, without copying."""
    def __dlpack_device__(self) -> Tuple[int, int]:
        """(1, 0) on the CPU, (2, N) on CUDA device N."""
    def __array__(self, dtype: Any = None, copy: Optional[bool] = None) -> Any:
        """The tensor as a NumPy array (shared memory on the CPU)."""
    def numpy(self) -> Any:
        """np.asarray(self): shared memory on the CPU, a copy from CUDA."""
    def cpu(self) -> "Tensor":
        """This tensor when on the CPU, else a copy in host memory."""
    @property
    def shape(self) -> Tuple[int, ...]:
        """The sizes."""
    @property
    def dtype(self) -> str:
        """bool, i8, i32, i64, f16, bf16, f32 or f64."""
    @property
    def ndim(self) -> int:
        """The number of dims."""
    @property
    def device(self) -> str:
        """'cpu' or 'cuda:N'."""
    @property
    def nbytes(self) -> int:
        """The size of the data in bytes."""
    @property
    def data_ptr(self) -> int:
        """The address of the first element (host or device memory)."""
    @property
    def donated(self) -> bool:
        """Whether the tensor was donated to a call (Function.donate): its
        data is gone, and reading it raises tsl.Error."""
    def __len__(self) -> int: ...

class Function:
    """A function of a tsl.Module; calling it compiles variants on demand."""

    def __call__(self, *args: Any, **kwargs: Any) -> Union[Tensor, Tuple[Tensor, ...], None]:
        """Calls the function on DLPack tensors (read in place, never copied:
        row-major contiguous, aligned, on the module's device) and Python
        ints for ``int`` parameters. Raises tsl.Error."""
    @property
    def stats(self) -> "tsl.Stats":
        """Compiles, recompiles with their reasons, cache hits, calls."""
    @property
    def variants(self) -> List["tsl.Variant"]:
        """The compiled variants in dispatch order, with their guards and
        how many calls each served."""
    def donate(self, *names: str) -> "Function":
        """This function with those parameters' buffers donated to every
        call (JAX's donate_argnames): results are written into them where
        possible, and a donated tsl.Tensor raises tsl.Error when read again.
        NumPy arrays (and tensors a NumPy array still reads) are copied
        first and left as they were. CPU modules only."""
    def bind(self, **args: Any) -> "BoundFunction":
        """This function with those arguments fixed (weights loaded once:
        ``m.main.bind(**tsl.load_weights(path))``)."""
    def guards(self, **example_types: Any) -> "tsl.GuardReport":
        """Guards, runtime assertions and result types for example argument
        types: ``fn.guards(x="f32[10]", k=3)``."""
    @property
    def name(self) -> str:
        """The function's name."""
    @property
    def parameters(self) -> Tuple[str, ...]:
        """Parameter names in order."""

class BoundFunction:
    """A Function with some arguments fixed (Function.bind)."""

    def __call__(self, *args: Any, **kwargs: Any) -> Union[Tensor, Tuple[Tensor, ...], None]:
        """Calls the function with the bound arguments and these (positional
        in the order of ``parameters``, or by name)."""
    @property
    def parameters(self) -> Tuple[str, ...]:
        """The parameters a call still passes, in order."""
    @property
    def function(self) -> Function:
        """The Function it calls."""

def load_safetensors(path: str) -> Dict[str, Tensor]:
    """A safetensors file's tensors as views of the mapped file (use
    tsl.load_weights)."""

class Module:
    """The native module object behind tsl.Module."""

    def function(self, name: str) -> Function: ...
    @property
    def functions(self) -> List[str]: ...
    @property
    def name(self) -> str: ...
    @property
    def backend(self) -> str: ...

def load(path: str, backend: str = "cpu") -> Module: ...
def compile(source: str, backend: str = "cpu", name: str = "<string>") -> Module: ...
def prove(expr: str, dims: str = "") -> Tuple[Optional[bool], Optional[Dict[str, int]]]: ...
def simplify(expr: str, dims: str = "") -> "tsl.Expr": ...
def set_logs(spec: Optional[str]) -> None: ...
def _register(classes: Dict[str, type]) -> None: ...
