"""Tensor methods of PyTorch that are not ops of their own: in-place changes of a tensor's shape (``t_``,
``transpose_``, ``squeeze_``, ``unsqueeze_``, ``as_strided_``, ``resize_``), ``unfold``'s sliding windows,
memory queries (``data_ptr``, ``dim_order``, ``is_pinned``), element-wise Python callbacks
(``apply_``, ``map_``, ``map2_``) and a few small helpers (``sum_to_size``, ``narrow_copy``...).

An in-place shape change makes the tensor the view that the out-of-place op returns: same storage, a new
shape, and (when it is recorded) the view's place in the graph; a leaf that requires grad refuses it, as in
PyTorch.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from typing import Any

from .._core.grad_mode import _state
from .._core.records import ops
from .._core.tensor import Size, Tensor, _wrap_dim
from .._creation import arange, empty, tensor
from ..autograd._views import as_copied_view
from ..errors import ShapeError
from .inplace import _check_leaf, copy_
from .scatter import index_reduce as _index_reduce

__all__ = ["METHODS", "empty_strided"]


def _sizes(args: tuple[Any, ...]) -> tuple[int, ...]:
    return tuple(args[0]) if len(args) == 1 and isinstance(args[0], (tuple, list, Size)) else tuple(args)


def _become(self: Tensor, out: Tensor, name: str) -> Tensor:
    """``self`` takes the shape and strides of ``out``, a view of it, and its place in the graph."""
    self._data = out._data
    if out._view is not None and self._view is not None:  # a view stays a view of its base, one step further
        self._view = out._view
    if out.grad_fn is not None and _state.enabled:
        self.grad_fn, self._rg = out.grad_fn, True
    return self


def _inplace_view(name: str, fn: Callable[..., Tensor]) -> Callable[..., Tensor]:
    def method(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
        _check_leaf(self, name)
        return _become(self, fn(self, *args, **kwargs), name)
    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"In place :meth:`Tensor.{name[:-1]}`: this tensor becomes that view of its storage; returns it."
    return method


def unfold(self: Tensor, dimension: int, size: int, step: int) -> Tensor:
    """A view of the windows of ``size`` elements along ``dimension``, ``step`` apart, in a new last dimension."""
    d = _wrap_dim(dimension, max(self.ndim, 1), "unfold")
    n = self.shape[d] if self.ndim else 1
    if size < 0 or size > n:
        raise ShapeError(f"unfold: maximum size for tensor at dimension {d} is {n} but size is {size}")
    if step <= 0:
        raise ValueError(f"unfold: step is {step} but must be > 0")
    count = (n - size) // step + 1
    if "storage_layout" not in self._device._kernels:
        # no strided views on this backend: the windows copied, which core keeps in step with self as a view
        # (autograd._copies: writes through it reach self, overlapping windows refuse writes)
        return as_copied_view(_windows(self, d, size, step, count), self, "unfold",
                              {"replay": lambda t: _windows(t, d, size, step, count)})
    strides = list(self.stride()) if self.ndim else [1]
    shape = list(self.shape) if self.ndim else [1]
    shape[d] = count
    out_strides = [*strides, strides[d]]
    out_strides[d] = strides[d] * step
    out = self.as_strided([*shape, size], out_strides, self.storage_offset())
    return out if self.ndim else out.squeeze(0)


def _windows(self: Tensor, d: int, size: int, step: int, count: int) -> Tensor:
    """``unfold``'s windows as a new tensor (gathered by ``index_select``)."""
    x = self.reshape(1) if not self.ndim else self
    idx = (arange(count, device=x.device) * step).unsqueeze(-1) + arange(size, device=x.device)
    picked = x.index_select(d, idx.reshape(-1))
    out = picked.reshape(*x.shape[:d], count, size, *x.shape[d + 1:]).movedim(d + 1, -1)
    return out if self.ndim else out.squeeze(0)


def data_ptr(self: Tensor) -> int:
    """The address of the tensor's first element in its device's memory (0 for an empty tensor); on OpenCL,
    which has no addresses, the buffer's handle plus the element's byte offset (an identity, as PyTorch's
    ``data_ptr`` is used: to tell whether two tensors share memory)."""
    data = self._data
    host = getattr(data, "__array_interface__", None)
    if host is not None:
        return int(host["data"][0])
    dev = getattr(data, "__cuda_array_interface__", None)
    if dev is not None:
        return int(dev["data"][0])
    if hasattr(data, "buffer") and hasattr(data, "offset"):  # ferro-opencl's arrays: a buffer, an element offset
        handle = getattr(data.buffer, "int_ptr", 0) if data.buffer is not None else 0
        return int(handle) + int(data.offset) * self.element_size() if handle else 0
    raise NotImplementedError(f"data_ptr(): backend '{self.device.type}' gives no address for its arrays")


def dim_order(self: Tensor, *, ambiguity_check: bool = False) -> tuple[int, ...]:
    """The dimensions from outermost to innermost in memory (by decreasing stride)."""
    strides = self.stride()
    order = tuple(sorted(range(self.ndim), key=lambda d: -strides[d]))
    if ambiguity_check and len(set(strides)) != len(strides):
        raise RuntimeError("dim_order(): the dim order is ambiguous: several dimensions have the same stride")
    return order


def is_pinned(self: Tensor, device: Any = None) -> bool:
    """False: ferro's tensors are not in page-locked host memory (its backends copy from any host memory)."""
    return False


def pin_memory(self: Tensor, device: Any = None) -> Tensor:
    """The tensor itself: ferro's backends copy from any host memory, so there is nothing to pin."""
    return self


def sum_to_size(self: Tensor, *size: Any) -> Tensor:
    """The sum of the tensor down to ``size``, a shape it broadcasts from (autograd's reduction of a
    broadcast gradient)."""
    target = _sizes(size)
    extra = self.ndim - len(target)
    if extra < 0 or any(t not in (1, n) for t, n in zip(target, self.shape[extra:])):
        raise ShapeError(f"sum_to_size: size {list(target)} is not expandable to size {list(self.shape)}")
    out = self.sum(tuple(range(extra))) if extra else self
    dims = tuple(i for i, (t, n) in enumerate(zip(target, out.shape)) if t == 1 and n != 1)
    return out.sum(dims, keepdim=True) if dims else out


def narrow_copy(self: Tensor, dim: int, start: int, length: int) -> Tensor:
    """A copy (not a view) of :meth:`narrow`."""
    return self.narrow(dim, start, length).clone()


def empty_strided(size: Any, stride: Any, *, dtype: Any = None, device: Any = None, requires_grad: bool = False,
                  **_: Any) -> Tensor:
    """An uninitialized tensor of ``size`` laid out with ``stride`` (elements) in its storage."""
    size, stride = tuple(size), tuple(stride)
    if len(size) != len(stride):
        raise ShapeError(f"empty_strided: mismatch in length of strides and shape ({len(stride)} and {len(size)})")
    n = 0 if 0 in size else 1 + sum((s - 1) * st for s, st in zip(size, stride))
    out = empty(n, dtype=dtype, device=device).as_strided(size, stride, 0)
    return out.requires_grad_(True) if requires_grad else out


def new_empty_strided(self: Tensor, size: Any, stride: Any, *, dtype: Any = None, device: Any = None,
                      requires_grad: bool = False, **_: Any) -> Tensor:
    """:func:`ferro.empty_strided` in this tensor's dtype and on its device (unless given)."""
    return empty_strided(size, stride, dtype=dtype or self.dtype, device=device or self.device,
                         requires_grad=requires_grad)


def resize_(self: Tensor, *sizes: Any, memory_format: Any = None) -> Tensor:
    """Give the tensor the shape ``sizes``, keeping its first elements in order (new ones are uninitialized);
    returns it."""
    shape = _sizes(sizes)
    if self.requires_grad and _state.enabled:
        raise RuntimeError("cannot resize variables that require grad")
    if any(s < 0 for s in shape):
        raise ValueError(f"resize_(): negative dimension in {list(shape)}")
    n, have = math.prod(shape), self.numel()
    flat = self.detach().reshape(-1)
    if n <= have:
        data = flat[:n].clone()
    else:
        data = ops.cat([flat, empty(n - have, dtype=self.dtype, device=self.device)])
    self._data = data.reshape(shape)._data
    self._vc[0] += 1
    return self


def resize_as_(self: Tensor, the_template: Tensor, *, memory_format: Any = None) -> Tensor:
    """:meth:`resize_` to ``the_template``'s shape."""
    return resize_(self, the_template.shape)


def resize(self: Tensor, *sizes: Any) -> Tensor:
    """The tensor reshaped to ``sizes`` with as many elements (PyTorch's deprecated out-of-place resize)."""
    warnings.warn("non-inplace resize is deprecated", stacklevel=2)
    shape = _sizes(sizes)
    if math.prod(shape) != self.numel():
        raise ShapeError(f"resize: the new size {list(shape)} must have as many elements ({self.numel()}) as the "
                         "tensor")
    return self.reshape(shape)


def resize_as(self: Tensor, tensor: Tensor) -> Tensor:
    """:meth:`resize` to ``tensor``'s shape."""
    return resize(self, tensor.shape)


def _host_values(name: str, *tensors: Tensor) -> list[list[Any]]:
    for t in tensors:
        if t.device.type != "cpu":
            raise TypeError(f"{name} is only implemented on CPU tensors, got a tensor on {t.device}")
    return [t.reshape(-1).tolist() for t in tensors]


def apply_(self: Tensor, callable: Callable[[Any], Any]) -> Tensor:
    """Replace each element ``x`` with ``callable(x)`` (CPU tensors; slow: one Python call per element)."""
    (values,) = _host_values("apply_", self)
    _check_leaf(self, "apply_")
    copy_(self, tensor([callable(v) for v in values], dtype=self.dtype).reshape(self.shape))
    return self


def map_(self: Tensor, tensor_: Tensor, callable: Callable[[Any, Any], Any]) -> Tensor:
    """Replace each element ``x`` with ``callable(x, y)``, ``y`` from ``tensor_`` broadcast to this shape."""
    values, others = _host_values("map_", self, tensor_.expand(self.shape))
    _check_leaf(self, "map_")
    copy_(self, tensor([callable(a, b) for a, b in zip(values, others)], dtype=self.dtype).reshape(self.shape))
    return self


def map2_(self: Tensor, x: Tensor, y: Tensor, callable: Callable[[Any, Any, Any], Any]) -> Tensor:
    """Replace each element ``a`` with ``callable(a, b, c)``, ``b`` and ``c`` from ``x`` and ``y``."""
    values, xs, ys = _host_values("map2_", self, x.expand(self.shape), y.expand(self.shape))
    _check_leaf(self, "map2_")
    copy_(self, tensor([callable(a, b, c) for a, b, c in zip(values, xs, ys)],
                       dtype=self.dtype).reshape(self.shape))
    return self


def as_subclass(self: Tensor, cls: type) -> Any:
    """This tensor as an instance of ``cls`` (a subclass of Tensor), sharing its data and graph."""
    if not (isinstance(cls, type) and issubclass(cls, Tensor)):
        raise TypeError(f"as_subclass(): cls must be a subclass of ferro.Tensor, got {cls!r}")
    return self._as_subclass(cls)


def is_distributed(self: Tensor) -> bool:
    """False: a ferro tensor lives on one device (``ferro.distributed`` moves values between processes)."""
    return False


def hardshrink(self: Tensor, lambd: float = 0.5) -> Tensor:
    """``nn.functional.hardshrink``: 0 where ``|x| <= lambd``."""
    return ops.hardshrink(self, lambd)


def float_power_(self: Tensor, exponent: Any) -> Tensor:
    """In-place :func:`ferro.float_power`: the tensor must be float64 (complex128 for complex values)."""
    wide = "complex128" if self.dtype.is_complex or isinstance(exponent, complex) or (
        isinstance(exponent, Tensor) and exponent.dtype.is_complex) else "float64"
    if self.dtype.name != wide:
        raise RuntimeError(f"the base given to float_power_ has dtype {self.dtype} but the operation's result "
                           f"requires dtype {wide}")
    _check_leaf(self, "float_power_")
    return copy_(self, ops.float_power(self, exponent))


def fill_diagonal_(self: Tensor, fill_value: Any, wrap: bool = False) -> Tensor:
    """Write ``fill_value`` on the main diagonal (``x[i, i, ...]``; every dimension the same size beyond 2-D);
    ``wrap``: a tall matrix's diagonal starts again every ``columns + 1`` rows, as NumPy's ``fill_diagonal``."""
    if self.ndim < 2:
        raise ShapeError(f"fill_diagonal_: dimensions must be larger than 1, got {self.ndim}")
    if self.ndim > 2 and len(set(self.shape)) != 1:
        raise ShapeError(f"fill_diagonal_: all dimensions of input must be of equal length, got {list(self.shape)}")
    rows, cols = self.shape[0], self.shape[1]
    n = min(self.shape)
    if self.ndim == 2 and wrap and rows > cols:
        flat = range(0, rows * cols, cols + 1)
        r = [p // cols for p in flat]
        c = [p % cols for p in flat]
    else:
        r = c = list(range(n))
    idx = tensor(r, device=self.device)
    key = (idx, tensor(c, device=self.device), *([idx] * (self.ndim - 2)))
    self[key] = fill_value
    return self


def index_reduce_(self: Tensor, dim: int, index: Tensor, source: Tensor, reduce: str, *,
                  include_self: bool = True) -> Tensor:
    """In-place :func:`ferro.index_reduce`; returns self."""
    _check_leaf(self, "index_reduce_")
    return copy_(self, _index_reduce(self, dim, index, source, reduce, include_self=include_self))


def _transpose(x: Tensor, dim0: int, dim1: int) -> Tensor:
    return x.transpose(dim0, dim1)


METHODS: dict[str, Callable[..., Any]] = {
    "t_": _inplace_view("t_", lambda x: x.t()), "transpose_": _inplace_view("transpose_", _transpose),
    "swapaxes_": _inplace_view("swapaxes_", _transpose), "swapdims_": _inplace_view("swapdims_", _transpose),
    "squeeze_": _inplace_view("squeeze_", lambda x, *dim: x.squeeze(*dim)),
    "unsqueeze_": _inplace_view("unsqueeze_", lambda x, dim: x.unsqueeze(dim)),
    "as_strided_": _inplace_view("as_strided_", lambda x, size, stride, storage_offset=None: x.as_strided(
        size, stride, storage_offset)),
    "unfold": unfold, "data_ptr": data_ptr, "const_data_ptr": data_ptr, "dim_order": dim_order,
    "is_pinned": is_pinned, "pin_memory": pin_memory,
    "sum_to_size": sum_to_size, "narrow_copy": narrow_copy, "new_empty_strided": new_empty_strided,
    "resize_": resize_, "resize_as_": resize_as_, "resize": resize, "resize_as": resize_as,
    "apply_": apply_, "map_": map_, "map2_": map2_, "as_subclass": as_subclass, "is_distributed": is_distributed,
    "hardshrink": hardshrink, "float_power_": float_power_, "fill_diagonal_": fill_diagonal_,
    "index_reduce_": index_reduce_,
}
