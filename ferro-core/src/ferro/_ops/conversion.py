"""Casts and moves between devices: ``Tensor.to(dtype | device)`` and friends."""

from __future__ import annotations

from typing import Any

from .._core.device import device as _device_cls
from .._core.dtypes import (
    DType,
    as_dtype,
    bfloat16,
    bool_,
    by_name,
    complex64,
    complex128,
    float16,
    float32,
    float64,
    int8,
    int16,
    int32,
    int64,
    uint8,
)
from .._core.records import OpDef, register
from .._core.tensor import Tensor
from ..dispatch._dispatch import finish, kernel

__all__ = ["to", "cast", "to_device"]

_CAST = register(OpDef("cast", "conversion", "The tensor converted to another dtype.", grads=(lambda g: g,)))
# Not in the registry: moving between devices is the backends' from_numpy /
# to_numpy, not a kernel; the definition only carries the backward formula.
_TO_DEVICE = OpDef("to_device", "conversion", "A copy of the tensor on another device.",
                   grads=(lambda g, *, src: g.to(src),))


def cast(x: Tensor, dtype: DType) -> Tensor:
    """``x`` converted to ``dtype`` (``x`` itself when it already has it)."""
    dtype = as_dtype(dtype, "to")
    if x._dtype is dtype:
        return x
    dev = x._device
    if dtype not in dev._dtypes:
        from ..dispatch._dispatch import _unsupported
        raise _unsupported(_CAST, dtype, dev, f"the device does not support {dtype}")
    data = kernel(dev, "cast")(x._data, dtype)
    return finish(_CAST, data, dtype, dev, (x,))


def to_device(x: Tensor, dev: _device_cls) -> Tensor:
    """A copy of ``x`` on ``dev`` (DLPack where the two backends share a device, else through the host)."""
    src = x._device
    if src is dev:
        return x
    dst_backend = dev.backend  # binds; raises BackendUnavailableError with the reason
    if x._dtype not in dev._dtypes:
        from ..dispatch._dispatch import _unsupported
        raise _unsupported(_TO_DEVICE, x._dtype, dev, f"the device does not support {x._dtype}")
    host = src.backend.to_numpy(x._data)
    data = dst_backend.from_numpy(host, dev.index)
    return finish(_TO_DEVICE, data, x._dtype, dev, (x,), attrs={"src": src})


def _parse(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[_device_cls | None, DType | None]:
    dev, dtype = kwargs.pop("device", None), kwargs.pop("dtype", None)
    kwargs.pop("non_blocking", None)
    kwargs.pop("copy", None)
    if kwargs:
        raise TypeError(f"to() got unexpected keyword arguments {sorted(kwargs)}")
    for a in args:
        if isinstance(a, DType) or (isinstance(a, str) and a.removeprefix("ferro.") in by_name):
            dtype = as_dtype(a, "to")
        elif isinstance(a, (str, _device_cls)):
            dev = a
        elif isinstance(a, Tensor):
            dev, dtype = a._device, a._dtype
        elif isinstance(a, bool):
            continue  # non_blocking / copy, positionally
        else:
            raise TypeError(f"to() expects a dtype, a device or a tensor, got {a!r}")
    return (None if dev is None else _device_cls(dev)), as_dtype(dtype, "to")


def to(x: Tensor, *args: Any, **kwargs: Any) -> Tensor:
    """``x`` on another device and/or with another dtype: ``to("cpu")``, ``to(ferro.float64)``,
    ``to(device, dtype)``, ``to(other_tensor)``. Returns ``x`` itself when nothing changes."""
    copy = bool(kwargs.get("copy", False))
    dev, dtype = _parse(args, dict(kwargs))
    out = x
    if dev is not None and dev is not x._device:
        out = to_device(out, dev)
    if dtype is not None:
        out = cast(out, dtype)
    if copy and out is x:
        out = x.clone()
    return out


def _caster(dtype: DType) -> Any:
    def method(self: Tensor) -> Tensor:
        return cast(self, dtype)
    method.__name__ = dtype.name
    method.__doc__ = f"``self.to(ferro.{dtype.name})``."
    return method


def type_as(x: Tensor, other: Tensor) -> Tensor:
    """``x`` cast to ``other``'s dtype."""
    return cast(x, other._dtype)


def cpu(x: Tensor) -> Tensor:
    """``x`` on the CPU backend."""
    return to(x, "cpu")


def cuda(x: Tensor, device: int | None = None) -> Tensor:
    """``x`` on a CUDA device (``cuda:0`` unless ``device`` says otherwise)."""
    return to(x, f"cuda:{device or 0}")


def type_(x: Tensor, dtype: Any = None) -> Any:
    """With no argument, the type name (``'ferro.FloatTensor'``); else ``x`` cast to ``dtype``."""
    if dtype is None:
        return f"ferro.{x._dtype.name}"
    return cast(x, as_dtype(dtype, "type"))


_CAST.fn = cast
_TO_DEVICE.fn = to_device
METHOD_FUNCTIONS: dict[str, Any] = {
    "to": to, "type_as": type_as, "cpu": cpu, "cuda": cuda, "type": type_,
    "float": _caster(float32), "double": _caster(float64), "half": _caster(float16),
    "bfloat16": _caster(bfloat16), "int": _caster(int32), "long": _caster(int64), "bool": _caster(bool_),
    "byte": _caster(uint8), "char": _caster(int8), "short": _caster(int16), "cfloat": _caster(complex64),
    "cdouble": _caster(complex128),
}
