"""The ``ferro`` namespace of tensors and functions: Tensor with its methods, every op, dtypes, creation.

This is the top of core: it loads the layers below in order and attaches the ops to Tensor as methods and
operators, and it hands the lower layers the few things they call upward (see ``_core.provided``).
``ferro/__init__`` re-exports it with the subpackages built on it (nn, optim, data, ...), which import
this module rather than ``ferro`` itself, so that no import runs in a circle.
"""

from __future__ import annotations

import builtins
from typing import Any

from . import _ops, autograd, backends, errors, fft, linalg
from ._core import provided
from ._core.compiler import compile
from ._core.device import device
from ._core.dtypes import (
    DType,
    bfloat16,
    bool_,
    can_cast,
    complex64,
    complex128,
    float16,
    float32,
    float64,
    get_default_dtype,
    int8,
    int16,
    int32,
    int64,
    promote_types,
    uint8,
)
from ._core.dtypes import set_default_dtype as _set_default_dtype
from ._core.format import set_printoptions
from ._core.inference_mode import inference_mode, is_inference_mode_enabled
from ._core.numeric_info import finfo, iinfo
from ._core.records import REGISTRY, ops
from ._core.switches import *  # noqa: F403 - use_deterministic_algorithms, set_float32_matmul_precision...
from ._core.switches import __all__ as _switches_all
from ._core.tensor import Size, Tensor, _assign, install_methods
from ._core.threads import get_num_interop_threads, get_num_threads, set_num_interop_threads, set_num_threads
from ._creation import NEW_METHODS as _NEW_METHODS
from ._creation import (
    arange,
    as_tensor,
    empty,
    empty_like,
    eye,
    from_dlpack,
    from_numpy,
    full,
    full_like,
    linspace,
    ones,
    ones_like,
    rand,
    rand_like,
    randint,
    randint_like,
    randn,
    randn_like,
    tensor,
    zeros,
    zeros_like,
)
from ._ops import FUNCTIONS as _FUNCTIONS
from ._ops.conversion import METHOD_FUNCTIONS as _CONVERSIONS
from ._ops.elementwise import where
from ._ops.indexing import getitem as _getitem
from ._ops.indexing import index_put
from ._ops.indexing import setitem as _setitem
from ._ops.inplace import copy_ as _copy_
from ._ops.inplace import fill_ as _fill_
from ._ops.inplace import make_inplace as _make_inplace
from ._ops.inplace import zero_ as _zero_
from ._ops.linalg import bmm, dot, matmul, mm, mv
from ._ops.namespace import *  # noqa: F403 - dtype, memory_format, asarray, vmap, cond...
from ._ops.namespace import FUNCTIONS as _HELPERS
from ._ops.reduction import amax, amin, argmax, argmin, max, mean, min, sum
from ._ops.sampling import INPLACE_METHODS as _RANDOM_FILLS
from ._ops.shape import (
    broadcast_to,
    cat,
    clone,
    concat,
    contiguous,
    expand,
    flatten,
    permute,
    reshape,
    squeeze,
    stack,
    t,
    transpose,
    unsqueeze,
    view,
)
from ._ops.tensor_methods import METHODS as _TENSOR_METHODS
from ._ops.tensor_methods import empty_strided
from ._random import Generator, get_rng_state, initial_seed, manual_seed, seed, set_rng_state
from .autograd import enable_grad, is_grad_enabled, no_grad, set_grad_enabled
from .autograd._engine import register_post_accumulate_grad_hook
from .backends import set_backend, use_backend
from .dispatch._dispatch import public_function
from .errors import BackendUnavailableError, OutOfMemoryError, UnsupportedOperationError

bool = bool_
half, float, double = float16, float32, float64
short, int, long = int16, int32, int64
cfloat, cdouble = complex64, complex128



provided.install(current_device=backends.current_device, bind_device=backends._registry.bind_device,
                 load_plugins=backends._registry.load, public_function=public_function)


def _tensor_new(cls: type[Tensor], *args: Any, dtype: DType | None = None, device: Any = None,
                requires_grad: bool = False) -> Tensor:
    """``ferro.Tensor(data)``: a tensor of the default float dtype made from ``data``; ``ferro.Tensor(3, 4)``
    or ``ferro.Tensor(ferro.Size([3, 4]))``: an uninitialized one of that shape, as ``torch.Tensor``."""
    dtype = dtype or get_default_dtype()
    sizes = builtins.all(isinstance(a, builtins.int) and not isinstance(a, builtins.bool) for a in args)
    if args and (isinstance(args[0], Size) or sizes):
        t = empty(*args, dtype=dtype, device=device)
    elif len(args) > 1:
        raise TypeError(f"Tensor(): expected data or the sizes of a new tensor, got {len(args)} arguments that "
                        f"are not all ints")
    else:
        t = tensor(args[0] if args else [], dtype=dtype, device=device)
    if cls is not Tensor:
        t = t._as_subclass(cls)
    if requires_grad:
        t.requires_grad_(True)
    return t


def _backward(self: Tensor, gradient: Tensor | None = None, retain_graph: bool | None = None,
              create_graph: bool = False, inputs: Any = None) -> None:
    """Accumulate the gradient of this tensor into the leaves' ``.grad``."""
    autograd.backward(self, gradient, retain_graph=retain_graph, create_graph=create_graph, inputs=inputs)


def _part(op: Any, doc: str) -> property:
    """The ``real`` / ``imag`` property: a view of the part, assignable (writes go into the tensor)."""
    def set_part(self: Tensor, value: Any) -> None:
        _assign(op(self), value)
    return property(op, set_part, doc=doc)


Tensor.__new__ = _tensor_new  # type: ignore[method-assign,assignment]
Tensor.backward = _backward  # type: ignore[attr-defined]
#: ``t.register_post_accumulate_grad_hook(hook)``: ``hook(t)`` once backward has accumulated ``t.grad``.
Tensor.register_post_accumulate_grad_hook = register_post_accumulate_grad_hook  # type: ignore[attr-defined]
Tensor.real = _part(_ops.complex.real, "The real part: a view for complex tensors, the tensor itself otherwise.")  # type: ignore[attr-defined]
Tensor.imag = _part(_ops.complex.imag, "The imaginary part of a complex tensor, as a view.")  # type: ignore[attr-defined]

_g = globals()
for _name, _fn in _FUNCTIONS.items():
    _g.setdefault(_name, _fn)
del _g

install_methods(_FUNCTIONS, _make_inplace, _ops.METHODS, _ops.INPLACE, operators=_ops.elementwise.FUNCTIONS)
for _name, _target in _ops.arithmetic.INPLACE_ALIASES.items():  # divide_ is div_, as in PyTorch
    setattr(Tensor, _name, getattr(Tensor, _target))
for _name, _fn in _ops.shape.LAYOUT_METHODS.items():  # stride(), storage_offset()
    setattr(Tensor, _name, _fn)
for _name, _fn in _ops.predicates.METHODS.items():  # equal(), is_nonzero(), get_device()...
    setattr(Tensor, _name, _fn)
for _name, _fn in _TENSOR_METHODS.items():  # t_(), unfold(), data_ptr(), resize_()...
    setattr(Tensor, _name, _fn)
globals().update(_ops.predicates.FUNCTIONS)
for _name, _fn in _NEW_METHODS.items():  # new_zeros(), new_tensor()...
    setattr(Tensor, _name, _fn)
for _name, _fn in _CONVERSIONS.items():
    setattr(Tensor, _name, _fn)
for _alias, _target in _ops.aliases.ALIASES.items():  # arccos is acos, ...: the same function and methods
    _space, _, _name = _target.rpartition(".")
    _fn = (getattr(linalg, _name) if _space == "linalg" else REGISTRY[_name].fn if _space == "ops"
           else globals()[_name])
    globals()[_alias] = _fn
    if _space or hasattr(Tensor, _name):  # det, inverse, slogdet are methods too, as in PyTorch
        setattr(Tensor, _alias, getattr(Tensor, _name, _fn))
    if _alias in _ops.aliases.OPS_INPLACE:
        setattr(Tensor, _alias + "_", _make_inplace(_name))
    elif hasattr(Tensor, _name + "_"):
        setattr(Tensor, _alias + "_", getattr(Tensor, _name + "_"))
polygamma = REGISTRY["polygamma"].fn  # torch.polygamma(n, input), torch.special's order


def _polygamma(self: Tensor, n: int) -> Tensor:
    """``polygamma(n, self)``: the ``n``-th derivative of the digamma function."""
    return polygamma(n, self)


Tensor.polygamma = _polygamma  # type: ignore[attr-defined]
Tensor.polygamma_ = _make_inplace("polygamma", self_at=1)  # type: ignore[attr-defined]
Tensor.__getitem__ = _getitem
Tensor.__setitem__ = _setitem
Tensor.copy_ = _copy_
Tensor.fill_ = _fill_
Tensor.zero_ = _zero_
for _name, _fn in _RANDOM_FILLS.items():
    setattr(Tensor, _name, _fn)


def set_default_dtype(dtype: DType) -> None:
    """Set the dtype of floating tensors made from Python floats (float32 by default)."""
    _set_default_dtype(dtype)
    from ._core.records import refresh_default_dtype
    refresh_default_dtype()
    from .backends._registry import bound_devices
    for dev in bound_devices():  # dtype tables depend on it: resolve them again
        dev._backend = None
        dev.backend  # noqa: B018


def get_default_device() -> device:
    """The device new tensors go to (``ferro.backends.current_device()``), as ``torch.get_default_device``."""
    return backends.current_device()


def set_default_device(device: Any) -> None:
    """Make new tensors go to ``device`` (a backend name or ``name:index``; None: ``cpu``): ``set_backend``."""
    set_backend("cpu" if device is None else str(device))


def is_tensor(obj: object) -> bool:
    """Whether ``obj`` is a ferro Tensor."""
    return isinstance(obj, Tensor)


def numel(x: Tensor) -> int:
    """The number of elements of ``x``."""
    return x.numel()


__all__ = [
    "Tensor", "Size", "DType", "device", "tensor", "as_tensor", "from_numpy", "from_dlpack", "zeros", "ones",
    "full", "empty", "arange", "linspace", "eye", "zeros_like", "ones_like", "full_like", "empty_like", "rand",
    "randn", "randint", "rand_like", "randn_like", "randint_like", "manual_seed", "seed", "initial_seed",
    "get_rng_state", "set_rng_state", "Generator", "bool_", "uint8", "int8", "int16", "int32", "int64", "float16",
    "bfloat16",
    "float32", "float64", "complex64", "complex128", "promote_types", "can_cast", "get_default_dtype",
    "set_default_dtype", "no_grad", "enable_grad", "set_grad_enabled", "is_grad_enabled", "set_backend",
    "use_backend", "autograd", "backends", "errors", "linalg", "fft", "ops",
    "where", "matmul", "mm", "bmm", "mv", "dot",
    "sum", "mean",
    "amax", "amin", "max", "min", "argmax", "argmin", "reshape", "view", "permute", "transpose", "expand",
    "broadcast_to", "squeeze", "unsqueeze", "flatten", "cat", "concat", "stack", "contiguous", "clone", "t",
    "index_put", "is_tensor", "numel", "finfo", "iinfo", "set_printoptions", "inference_mode",
    "is_inference_mode_enabled", "set_num_threads", "get_num_threads", "set_num_interop_threads",
    "get_num_interop_threads", "UnsupportedOperationError", "BackendUnavailableError", "OutOfMemoryError",
    *sorted(_FUNCTIONS), *_ops.aliases.ALIASES, *_ops.predicates.FUNCTIONS, *_switches_all, "compile", "polygamma",
    "get_default_device", "set_default_device", "empty_strided", *_HELPERS,
]
for _name in _ops.aliases.TORCH_INPLACE:  # ferro.abs_(x) is x.abs_()
    if hasattr(Tensor, _name):
        globals()[_name] = getattr(Tensor, _name)
        __all__.append(_name)
