"""The Tensor: a native array of one backend, a dtype, a device, and autograd state.

Tensors are made by the creation functions (``ferro.tensor``, ``zeros``...)
and by ops; ``_wrap`` is the one place a tensor is assembled. Methods that
are ops (``exp``, ``sum``, ``reshape``...) and the Python operators are
attached from the op registry by :func:`install_methods`, so each op is
defined once.
"""

from __future__ import annotations

import math
import operator
import weakref
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from . import grad_mode as _mode
from . import node as _node
from .device import device as _device_cls
from .dtypes import DType
from .host import numpy_dtype

if TYPE_CHECKING:
    from .node import Node

__all__ = ["Tensor", "Size"]

_new = object.__new__


class Size(tuple):
    """A tensor's shape: a tuple of ints, as ``torch.Size``."""

    __slots__ = ()

    def numel(self) -> int:
        """The number of elements a tensor of this shape holds."""
        n = 1
        for s in self:
            n *= s
        return n

    def __repr__(self) -> str:
        return f"ferro.Size({list(self)})"

    # Slicing, concatenating and repeating give a Size again, as in PyTorch.
    def __getitem__(self, index: Any) -> Any:
        r = tuple.__getitem__(self, index)
        return Size(r) if isinstance(index, slice) else r

    def __add__(self, other: Any) -> Size:
        if not isinstance(other, tuple):
            return NotImplemented
        return Size(tuple.__add__(self, other))

    def __radd__(self, other: Any) -> Size:
        if not isinstance(other, tuple):
            return NotImplemented
        return Size(tuple.__add__(other, self))

    def __mul__(self, n: Any) -> Size:
        return Size(tuple.__mul__(self, n))

    __rmul__ = __mul__


class Tensor:
    """A multi-dimensional array with autograd, living on one backend's device.

    >>> import ferro
    >>> x = ferro.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    >>> (x * x).sum().backward()
    >>> x.grad
    tensor([[2., 4.],
            [6., 8.]])
    """

    __slots__ = (
        "__weakref__",
        "_base",
        "_data",
        "_device",
        "_dtype",
        "_grad",
        "_hooks",
        "_retains",
        "_rg",
        "_vc",
        "_view",  # for views: how they were made from _base (see autograd._views)
        "grad_fn",
    )

    #: NumPy defers ``ndarray + tensor`` to ``Tensor.__radd__`` (as with PyTorch).
    __array_priority__ = 1000

    _data: Any
    _dtype: DType
    _device: _device_cls
    _rg: bool
    grad_fn: Node | None
    _vc: list[int]  # version counter, shared with views and saved aliases
    _grad: Tensor | None
    _base: Tensor | None
    _hooks: list[Callable[[Tensor], Tensor | None]] | None

    # Every slot is assigned when a tensor is made (``_wrap`` and the inlined copies of it on the fast paths):
    # with no ``__getattr__`` fallback, CPython specializes the reads of these slots on every op.

    def _as_subclass(self, cls: type) -> Any:
        t = _new(cls)
        t._data, t._dtype, t._device = self._data, self._dtype, self._device
        t._rg, t.grad_fn, t._vc = self._rg, self.grad_fn, self._vc
        t._grad = t._base = t._hooks = t._retains = t._view = None
        return t

    # -- properties --------------------------------------------------------

    @property
    def shape(self) -> Size:
        """The size of each dimension."""
        return Size(self._data.shape)

    def size(self, dim: int | None = None) -> Any:
        """The shape, or the size of dimension ``dim``."""
        if dim is None:
            return Size(self._data.shape)
        return self._data.shape[_wrap_dim(dim, self.ndim, "size")]

    @property
    def dtype(self) -> DType:
        """The element type."""
        return self._dtype

    @property
    def device(self) -> _device_cls:
        """The device holding the data."""
        return self._device

    @property
    def ndim(self) -> int:
        """The number of dimensions."""
        return len(self._data.shape)

    def dim(self) -> int:
        """The number of dimensions."""
        return len(self._data.shape)

    def numel(self) -> int:
        """The number of elements."""
        return math.prod(self._data.shape)

    nelement = numel
    ndimension = dim

    def element_size(self) -> int:
        """Bytes per element."""
        return self._dtype.itemsize

    @property
    def itemsize(self) -> int:
        """Bytes per element."""
        return self._dtype.itemsize

    @property
    def nbytes(self) -> int:
        """Bytes of all elements."""
        return self.numel() * self._dtype.itemsize

    @property
    def is_floating_point_(self) -> bool:  # pragma: no cover - alias kept private
        return self._dtype.is_floating_point

    def is_floating_point(self) -> bool:
        """Whether the dtype is a floating dtype."""
        return self._dtype.is_floating_point

    def is_complex(self) -> bool:
        """Whether the dtype is complex."""
        return self._dtype.is_complex

    @property
    def is_leaf(self) -> bool:
        """True for tensors not made by a recorded op (user-made, or not requiring grad)."""
        return self.grad_fn is None

    @property
    def requires_grad(self) -> bool:
        """Whether gradients are computed for this tensor."""
        return self._rg

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        self.requires_grad_(value)

    def requires_grad_(self, requires_grad: bool = True) -> Tensor:
        """Set whether autograd records ops on this leaf; returns self."""
        if self.grad_fn is not None and not requires_grad:
            raise RuntimeError("you can only change requires_grad flags of leaf variables. If you want to use "
                               "a computed variable in a subgraph that doesn't require differentiation use "
                               "var_no_grad = var.detach().")
        if requires_grad and not (self._dtype.is_floating_point or self._dtype.is_complex):
            raise RuntimeError(f"only Tensors of floating point and complex dtype can require gradients, "
                               f"got {self._dtype}")
        if self.grad_fn is None:
            self._rg = bool(requires_grad)
        return self

    @property
    def grad(self) -> Tensor | None:
        """The accumulated gradient (leaves, and non-leaves after ``retain_grad()``)."""
        return self._grad

    @grad.setter
    def grad(self, value: Tensor | None) -> None:
        if value is not None:
            if not isinstance(value, Tensor):
                raise TypeError(f"assigned grad must be a Tensor or None, got {type(value).__name__}")
            if value.shape != self.shape:
                raise ValueError(f"assigned grad has shape {list(value.shape)} but the tensor has {list(self.shape)}")
            if value._device is not self._device:
                raise ValueError(f"assigned grad is on {value._device}, the tensor on {self._device}")
        self._grad = value

    @property
    def data(self) -> Tensor:
        """This tensor's values, detached from autograd (shares storage)."""
        return self.detach()

    @data.setter
    def data(self, value: Tensor) -> None:
        if not isinstance(value, Tensor):
            raise TypeError(f"data must be a Tensor, got {type(value).__name__}")
        self._data, self._dtype, self._device = value._data, value._dtype, value._device

    @property
    def T(self) -> Tensor:
        """The tensor with its dimensions reversed."""
        return self.permute(*range(self.ndim - 1, -1, -1))

    @property
    def mT(self) -> Tensor:
        """The tensor with its last two dimensions swapped (batched transpose)."""
        return self.transpose(-2, -1)

    @property
    def mH(self) -> Tensor:
        """The conjugate transpose of the last two dimensions (``mT`` for real tensors)."""
        return self.transpose(-2, -1).conj()

    @property
    def H(self) -> Tensor:
        """The conjugate transpose of a matrix."""
        if self.ndim != 2:
            raise RuntimeError(f"tensor.H is only supported on matrices (2-D tensors), got {self.ndim}-D")
        return self.mH

    def adjoint(self) -> Tensor:
        """The conjugate transpose of the last two dimensions (``mH``)."""
        return self.mH

    @property
    def is_cuda(self) -> bool:
        """Whether the tensor lives on a CUDA device."""
        return self._device.type == "cuda"

    def is_inference(self) -> bool:
        """Whether this is an inference tensor: never in ferro (``inference_mode`` makes ordinary tensors)."""
        return False

    @property
    def is_cpu(self) -> bool:
        """Whether the tensor lives on the ``cpu`` backend."""
        return self._device.type == "cpu"

    @property
    def version(self) -> int:
        """How many in-place changes this tensor's storage has seen (``_version`` in PyTorch)."""
        return self._vc[0]

    _version = version

    # -- autograd ----------------------------------------------------------

    def detach(self) -> Tensor:
        """A tensor sharing this one's storage, cut off from the graph."""
        t = _wrap(self._data, self._dtype, self._device)
        t._vc = self._vc
        t._base = self
        return t

    def detach_(self) -> Tensor:
        """Cut this tensor off from the graph, in place."""
        self.grad_fn = None
        self._rg = False
        return self

    def retain_grad(self) -> None:
        """Keep ``.grad`` for this non-leaf tensor after backward."""
        if self.grad_fn is None:
            if not self._rg:
                raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
            return
        self.grad_fn.retain = weakref.ref(self)
        self._retains = True

    @property
    def retains_grad(self) -> bool:
        """Whether ``retain_grad()`` was called on this non-leaf tensor."""
        return bool(self._retains)

    def register_hook(self, hook: Callable[[Tensor], Tensor | None]) -> Any:
        """Call ``hook(grad)`` when this tensor's gradient is computed; a returned tensor replaces it."""
        if not self._rg:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        if self.grad_fn is not None:
            self.grad_fn.register_hook(hook)
            hooks = self.grad_fn.hooks
        else:
            if self._hooks is None:
                self._hooks = []
            hooks = self._hooks
            hooks.append(hook)
        return _RemovableHandle(hooks, hook)

    # -- conversion ----------------------------------------------------------

    def numpy(self, *, force: bool = False) -> Any:
        """The values as a NumPy array (a copy for non-CPU devices)."""
        if self._rg and not force:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead.")
        return self._device.backend.to_numpy(self._data)

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> Any:
        """The values for ``numpy.asarray`` (NumPy's protocol): CPU tensors only. A tensor on another device
        raises ``TypeError``, as PyTorch's and CuPy's device arrays do: an implicit copy to the host would hide
        a transfer and give NumPy (and SciPy, scikit-learn...) results that silently left the device."""
        if self._device.type != "cpu":
            raise TypeError(f"can't convert a {self._device} tensor to a NumPy array implicitly: copy it to the "
                            "host first with .cpu() (a CPU tensor) or .numpy() (a NumPy array)")
        arr = self._device.backend.to_numpy(self._data)
        return arr if dtype is None else arr.astype(dtype)

    def item(self) -> Any:
        """The value of a one-element tensor as a Python number."""
        data = self._data
        shape = data.shape
        if shape and math.prod(shape) != 1:
            raise RuntimeError(f"a Tensor with {self.numel()} elements cannot be converted to Scalar")
        backend = self._device._backend  # (bound: a tensor's device is; the property binds otherwise)
        if backend is None:
            backend = self._device.backend
        return backend.to_numpy(data).item()  # (NumPy's item() takes any one-element array)

    def tolist(self) -> Any:
        """The values as (nested) Python lists of numbers."""
        return self._device.backend.to_numpy(self._data).tolist()

    def __dlpack__(self, *, stream: Any = None, max_version: tuple[int, int] | None = None,
                   dl_device: tuple[Any, int] | None = None, copy: bool | None = None) -> Any:
        """A DLPack capsule of the data (the array API standard's signature; extra requests are the native array's)."""
        if max_version is None and dl_device is None and copy is None:
            return self._device.backend.to_dlpack(self._data, stream)
        kw = {k: v for k, v in (("stream", stream), ("max_version", max_version), ("dl_device", dl_device),
                                ("copy", copy)) if v is not None}
        return self._data.__dlpack__(**kw)

    def __dlpack_device__(self) -> tuple[int, int]:
        return self._device.backend.dlpack_device(self._data)

    def to_device(self, device: Any, /, *, stream: Any = None) -> Tensor:
        """This array on ``device`` (the array API standard's spelling of ``.to(device)``)."""
        return self.to(device)

    def __float__(self) -> float:
        return float(self.item())

    def __int__(self) -> int:
        return int(self.item())

    def __index__(self) -> int:
        if self._dtype.kind not in "iub":
            raise TypeError(f"only integer tensors of a single element can be converted to an index, got {self._dtype}")
        return int(self.item())

    def __complex__(self) -> complex:
        return complex(self.item())

    def __bool__(self) -> bool:
        if self.numel() != 1:
            raise RuntimeError(f"Boolean value of Tensor with {self.numel()} elements is ambiguous")
        return bool(self.item())

    def __len__(self) -> int:
        if not self._data.shape:
            raise TypeError("len() of a 0-d tensor")
        return self._data.shape[0]

    def __iter__(self) -> Iterator[Tensor]:
        if not self._data.shape:
            raise TypeError("iteration over a 0-d tensor")
        for i in range(self._data.shape[0]):
            yield self[i]

    def __hash__(self) -> int:
        return id(self)

    def __reduce_ex__(self, protocol: Any) -> Any:
        raise TypeError("ferro tensors are not pickled; save them with ferro.save (safetensors)")

    def __repr__(self) -> str:
        from .format import format_tensor
        return format_tensor(self)

    def __format__(self, spec: str) -> str:
        if self.ndim == 0 and spec:
            return format(self.item(), spec)
        return repr(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> Tensor:
        t = self.detach().clone()
        if self._rg:
            t.requires_grad_(True)
        memo[id(self)] = t
        return t


class _RemovableHandle:
    """Returned by ``register_hook``; ``remove()`` takes the hook back."""

    def __init__(self, hooks: list[Any], hook: Any) -> None:
        self._hooks, self._hook = hooks, hook

    def remove(self) -> None:
        """Take the hook back."""
        if self._hook in self._hooks:
            self._hooks.remove(self._hook)


def _assign(part: Tensor, value: Any) -> None:
    """``x.real = value``: copy ``value`` into the view ``part`` (``fill_`` for a number)."""
    if isinstance(value, Tensor):
        part.copy_(value)
    else:
        part.fill_(value)


def full(shape: tuple[int, ...], value: Any, dtype: DType, device: _device_cls) -> Tensor:
    """A new tensor of ``shape`` filled with ``value``, by the device's ``full`` primitive (no grad, no fallback):
    how the layers below the ops (autograd) make seed and zero gradients."""
    device.backend  # binds the device on first use  # noqa: B018
    return _wrap(device._kernels["full"](tuple(shape), value, dtype), dtype, device)  # type: ignore[index]


def from_host(array: Any, dtype: DType, device: _device_cls) -> Tensor:
    """A new tensor of ``dtype`` on ``device`` holding a NumPy array's values (the host-transfer primitive)."""
    a = array.astype(numpy_dtype(dtype), copy=False)
    return _wrap(device.backend.from_numpy(a, device.index), dtype, device)


def _wrap(data: Any, dtype: DType, device: _device_cls) -> Tensor:
    """Assemble a tensor from a native array; the one place tensors are built."""
    t = _new(Tensor)
    t._data = data
    t._dtype = dtype
    t._device = device
    t._rg = False
    t.grad_fn = None
    t._vc = [0]  # the version counter, shared with views and saved aliases
    t._grad = t._base = t._hooks = t._retains = t._view = None
    return t


Tensor._wrap = staticmethod(_wrap)  # type: ignore[attr-defined]
_node._Tensor = Tensor


def _wrap_dim(dim: int, ndim: int, op: str) -> int:
    """Normalize a possibly negative dimension, with PyTorch's errors (TypeError, IndexError) naming ``op``."""
    if type(dim) is not int:
        dim = _dim_int(dim, op)
    n = max(ndim, 1)
    if not -n <= dim < n:
        raise IndexError(f"{op}: dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim}) "
                         f"for a tensor of {ndim} dimension{'s' if ndim != 1 else ''}")
    return dim + n if dim < 0 else dim


def _dim_int(dim: Any, op: str) -> int:
    """``dim`` as an int (NumPy integers, 0-d integer tensors); a TypeError naming ``op`` otherwise."""
    if not isinstance(dim, bool):
        try:
            return operator.index(dim)
        except TypeError:
            pass
    raise TypeError(f"{op}(): argument 'dim' must be an int or a tuple of ints, not {type(dim).__name__} ({dim!r})")


#: Python operator -> op name, for forward, reflected and in-place dunders.
BINARY_OPERATORS: dict[str, str] = {
    "add": "add", "sub": "sub", "mul": "mul", "truediv": "div", "floordiv": "floor_divide",
    "mod": "remainder", "pow": "pow", "matmul": "matmul", "and": "bitwise_and", "or": "bitwise_or",
    "xor": "bitwise_xor", "lshift": "bitwise_left_shift", "rshift": "bitwise_right_shift",
}
COMPARISONS: dict[str, str] = {"eq": "eq", "ne": "ne", "lt": "lt", "le": "le", "gt": "gt", "ge": "ge"}


def install_methods(functions: dict[str, Callable[..., Any]], inplace: Callable[[str], Callable[..., Any]],
                    method_names: list[str], inplace_names: list[str],
                    operators: dict[str, Callable[..., Any]] | None = None) -> None:
    """Attach ops as methods and Python operators (called once by ``ferro/__init__``); ``operators`` gives the
    two-operand functions behind ``+``, ``-``, ``/``... where they differ from the methods (which take keywords)."""
    for name in method_names:
        if not hasattr(Tensor, name) or name in ("sum", "max", "min"):
            setattr(Tensor, name, functions[name])
    for name in inplace_names:
        setattr(Tensor, name + "_", inplace(name))
    for dunder, name in BINARY_OPERATORS.items():
        fn = (operators or {}).get(name) or functions.get(name)
        if fn is None:
            continue
        setattr(Tensor, f"__{dunder}__", fn)
        setattr(Tensor, f"__r{dunder}__", getattr(fn, "reflected", None) or _reflected(fn))
        setattr(Tensor, f"__i{dunder}__", inplace(name) if name != "matmul" else _no_inplace_matmul)
    for dunder, name in COMPARISONS.items():
        setattr(Tensor, f"__{dunder}__", _comparison(functions[name]))
    Tensor.__neg__ = functions["neg"]
    Tensor.__abs__ = functions["abs"]
    Tensor.__invert__ = functions["bitwise_not"]
    Tensor.__pos__ = functions["positive"]
    Tensor.__hash__ = lambda self: id(self)  # restored: defining __eq__ removes it
    _ = _mode


_OPERANDS = (Tensor, bool, int, float, complex)


def _comparison(fn: Callable[[Any, Any], Tensor]) -> Callable[[Tensor, Any], Any]:
    """A comparison operator: NotImplemented for operands that are not tensors, numbers or arrays,
    so that ``t == None`` is False and ``t < "a"`` a TypeError, as in PyTorch."""
    def op(self: Tensor, other: Any) -> Any:
        if isinstance(other, _OPERANDS) or hasattr(other, "__array__"):
            return fn(self, other)
        return NotImplemented
    op.__name__ = fn.__name__
    op.__doc__ = fn.__doc__
    return op


def _reflected(fn: Callable[[Any, Any], Tensor]) -> Callable[[Tensor, Any], Tensor]:
    def r(self: Tensor, other: Any) -> Tensor:
        return fn(other, self)
    r.__name__ = f"r{fn.__name__}"
    r.__doc__ = f"``other {fn.__name__} self``."
    return r


def _no_inplace_matmul(self: Tensor, other: Any) -> Tensor:
    raise RuntimeError("In-place matmul (@=) is not supported; use x = x @ y")


#: PyTorch's flags for devices, layouts and kinds of tensor that ferro has no backend or form for: always False.
NEVER_FLAGS = ("is_xpu", "is_mps", "is_meta", "is_ipu", "is_xla", "is_mtia", "is_maia", "is_vulkan", "is_mkldnn",
               "is_sparse", "is_sparse_csr", "is_quantized", "is_nested")


def _never(name: str) -> property:
    return property(lambda self: False, doc=f"``{name}``: always False in ferro (PyTorch's flag, for scripts "
                                             "that test it).")


for _flag in NEVER_FLAGS:
    setattr(Tensor, _flag, _never(_flag))
