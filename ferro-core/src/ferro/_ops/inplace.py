"""In-place variants (``x.add_(y)``, ``x += y``), derived from the out-of-place ops.

The op runs out of place, its result is checked (dtype castable, shape equal
to ``x``'s) and copied into ``x``'s storage, the version counter is bumped,
and ``x`` takes the op's place in the graph. Nothing is written when a check
fails, so a failed in-place op leaves ``x`` and the graph as they were.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .._core.dtypes import can_cast
from .._core.grad_mode import _state
from .._core.layouts import LayoutTensor
from .._core.records import REGISTRY
from .._core.tensor import Tensor, _wrap
from ..autograd._copies import refuse_write
from ..autograd._views import after_inplace, check_inplace
from ..errors import DTypeError, ShapeError, UnsupportedLayoutError

__all__ = ["make_inplace", "copy_", "fill_", "zero_", "refuse_overlap"]


def refuse_overlap(x: Tensor, name: str) -> None:
    """Refuse an in-place write into ``x`` when several of its elements share one memory location (an
    ``expand``ed view: a dimension of stride 0), as PyTorch does: the result would depend on the order of the
    writes. Backends whose arrays have no ``strides`` are not checked here. A view that is a copy (a backend's
    ``view_copies``) and cannot be written back is refused too."""
    if len(x._vc) > 1:  # its storage has views that are copies
        refuse_write(x, name)
    strides = getattr(x._data, "strides", None)
    shape = x._data.shape
    # (an empty array has stride 0 where NumPy likes, and no element to share)
    if strides is not None and 0 in strides and 0 not in shape and any(n > 1 and s == 0
                                                                      for n, s in zip(shape, strides)):
        raise RuntimeError(f"{name}: unsupported operation: more than one element of the written-to tensor refers "
                           "to a single memory location. Please clone() the tensor before performing the operation.")


def _check_leaf(x: Tensor, name: str) -> None:
    if isinstance(x, LayoutTensor):  # a sparse or quantized tensor has no dense storage to write into
        raise UnsupportedLayoutError(name, "self", x.describes, x.way_out)
    refuse_overlap(x, name)
    if not _state.enabled:
        return
    if x._rg and x.grad_fn is None:
        raise RuntimeError(f"{name}: a leaf Variable that requires grad is being used in an in-place operation. "
                           "Wrap it in `with ferro.no_grad():` or operate on x.detach().")
    check_inplace(x, name)  # views: of a leaf that requires grad (refused), or stale after another write


def _write(x: Tensor, out: Tensor, name: str) -> Tensor:
    if not can_cast(out._dtype, x._dtype):
        raise DTypeError(f"{name}: result type {out._dtype} can't be cast to the desired output type {x._dtype}")
    if out._data.shape != x._data.shape:
        raise ShapeError(f"{name}: output with shape {list(x.shape)} doesn't match the broadcast shape "
                         f"{list(out.shape)}")
    dev = x._device
    data = out._data if out._dtype is x._dtype else dev._kernels["cast"](out._data, x._dtype)
    dev._kernels["copy_"](x._data, data)
    x._vc[0] += 1
    if out.grad_fn is not None:
        if out._dtype is not x._dtype:
            out = out.to(x._dtype)
        x.grad_fn, x._rg = out.grad_fn, True
    after_inplace(x)  # a view: the write goes into its base's graph too
    return x


def _snapshot(x: Tensor) -> Tensor:
    """A copy of ``x`` standing at ``x``'s place in the graph, for ops that save their input."""
    t = _wrap(x._device._kernels["clone"](x._data), x._dtype, x._device)
    t.grad_fn, t._rg = x.grad_fn, x._rg
    return t


def make_inplace(name: str, self_at: int = 0) -> Callable[..., Tensor]:
    """The in-place method ``name_`` of the out-of-place op ``name`` (which takes the tensor as its argument
    ``self_at``: 1 for ``polygamma(n, input)``)."""
    op = REGISTRY[name]
    saves_self = 0 in op.saves

    def method(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
        _check_leaf(self, name + "_")
        src = self
        if saves_self and _state.enabled and (self._rg or any(isinstance(a, Tensor) and a._rg for a in args)):
            src = _snapshot(self)
        return _write(self, op.fn(*args[:self_at], src, *args[self_at:], **kwargs), name + "_")  # type: ignore[misc]

    method.__name__ = method.__qualname__ = name + "_"
    method.__doc__ = f"In-place :func:`ferro.{name}`; returns self."
    return method


def copy_(x: Tensor, src: Tensor) -> Tensor:
    """Copy ``src`` (broadcast, cast, moved from its device) into ``x``; returns ``x``."""
    _check_leaf(x, "copy_")
    if not isinstance(src, Tensor):
        raise TypeError(f"copy_(): argument 'src' must be a Tensor, not {type(src).__name__}")
    v = src.to(x._device).to(x._dtype).expand(*x.shape)
    out = v.clone() if v._rg else v
    x._device._kernels["copy_"](x._data, out._data)
    x._vc[0] += 1
    if out._rg and _state.enabled:
        x.grad_fn, x._rg = out.grad_fn, True
    elif x.grad_fn is not None and _state.enabled:  # overwritten by a constant: no gradient flows back
        x.grad_fn, x._rg = None, False
    after_inplace(x)
    return x


def fill_(x: Tensor, value: Any) -> Tensor:
    """Fill ``x`` with ``value`` in place; returns ``x``."""
    _check_leaf(x, "fill_")
    if isinstance(value, Tensor):
        value = value.item()
    x._device._kernels["setitem"](x._data, Ellipsis, value)
    x._vc[0] += 1
    if x.grad_fn is not None and _state.enabled:
        x.grad_fn = None
        x._rg = False
    after_inplace(x)
    return x


def zero_(x: Tensor) -> Tensor:
    """Fill ``x`` with zeros in place; returns ``x``."""
    return fill_(x, 0)
