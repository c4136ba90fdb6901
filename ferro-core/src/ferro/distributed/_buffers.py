"""Tensors as the native buffers a process group moves, and the results written back into them.

A CPU tensor whose data is one C-contiguous NumPy array goes to a host group
as it is: MPI reads and writes its memory, no copy. Any other tensor (an
OpenCL one, a strided view) is staged: copied to a contiguous host array,
moved, and copied back through the device's ``copy_`` kernel. Either way a
tensor written by a collective has its version counter bumped and, if it is a
view, the write recorded as an in-place write (so autograd and the views stay
right); a leaf that requires grad is refused up front, as for ``copy_``.

Dtypes travel as the wire dtypes of :mod:`._backend`: bool as uint8 (SUM and
MAX are OR, PRODUCT and MIN are AND, as PyTorch's), float16 and bfloat16 as
their uint16 bits, reduced in float32 and rounded back.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .._core.dtypes import bfloat16, bool_, float16
from .._core.grad_mode import _state as _grad_state
from .._core.host import np, numpy_dtype
from .._ops.inplace import _check_leaf
from ..autograd._views import after_inplace
from ._backend import ProcessGroup, ReduceOp

if TYPE_CHECKING:
    from .._core.tensor import Tensor

__all__ = ["Buffer", "reduce_op_name", "mark_written", "write_array", "to_group", "to_host"]

_BOOL_OPS = {"sum": "max", "max": "max", "product": "min", "min": "min"}


def reduce_op_name(op: Any, t: Tensor, name: str) -> str:
    """The group's name for ``op`` on ``t``'s dtype (AVG is a SUM divided afterwards)."""
    if not isinstance(op, ReduceOp):
        try:
            op = ReduceOp(op) if isinstance(op, str) else ReduceOp[getattr(op, "name", "")]
        except (KeyError, ValueError):
            raise ValueError(f"{name}: op must be a ferro.distributed.ReduceOp "
                             f"(SUM, AVG, PRODUCT, MIN, MAX), got {op!r}") from None
    d = t._dtype
    if op is ReduceOp.AVG:
        if not (d.is_floating_point or d.is_complex):
            raise TypeError(f"{name}: ReduceOp.AVG needs a floating-point or complex tensor, got {d}")
        return "sum"
    if d.is_complex and op in (ReduceOp.MIN, ReduceOp.MAX):
        raise TypeError(f"{name}: ReduceOp.{op.name} is not defined for complex tensors ({d})")
    return _BOOL_OPS[op.value] if d is bool_ else op.value


def mark_written(t: Tensor) -> None:
    """Bookkeeping after a collective wrote ``t``'s memory: as ``copy_`` from a constant."""
    t._vc[0] += 1
    if t.grad_fn is not None and _grad_state.enabled:
        t.grad_fn, t._rg = None, False
    after_inplace(t)


def write_array(t: Tensor, host: Any) -> None:
    """Copy a native array of ``t``'s shape and NumPy dtype (host or the device's own) into ``t``."""
    dev = t._device
    host = host.reshape(t._data.shape)
    if isinstance(host, np().ndarray):
        host = dev.backend.from_numpy(np().ascontiguousarray(host), dev.index)
    dev._kernels["copy_"](t._data, host)
    mark_written(t)


def to_group(g: ProcessGroup, arr: Any) -> Any:
    """A host array as the group's memory (a device copy for a device group such as NCCL's)."""
    if g.memory == "host":
        return arr
    out = g.empty(arr.shape, arr.dtype)
    out.set(arr)  # CuPy's host-to-device copy
    return out


def to_host(arr: Any) -> Any:
    """A native array of a group's memory as a NumPy array."""
    return arr if isinstance(arr, np().ndarray) else arr.get()


def _direct(t: Tensor, group: ProcessGroup) -> bool:
    data = t._data
    if group.memory == "host":
        return t._device.type == "cpu" and isinstance(data, np().ndarray) and data.flags.c_contiguous \
            and data.flags.writeable
    return bool(getattr(getattr(data, "flags", None), "c_contiguous", False))


class Buffer:
    """One tensor's part in a collective: ``wire`` is what the group moves; :meth:`finish` writes a
    received result back into the tensor."""

    __slots__ = ("cast", "direct", "native", "t", "wire")

    def __init__(self, t: Tensor, group: ProcessGroup, name: str, *, reduce: bool = False,
                 write: bool = False, read: bool = True) -> None:
        if group.memory != "host" and t._device.type != group.memory:
            raise TypeError(f"{name}: process group backend '{group.backend}' moves {group.memory} tensors, "
                            f"got a tensor on {t._device}; use backend 'mpi' for it, or move it with .to()")
        if write:
            _check_leaf(t, name)
            flags = getattr(t._data, "flags", None)
            if flags is not None and not getattr(flags, "writeable", True):
                raise ValueError(f"{name}: the tensor is an expanded view whose elements share memory, so a "
                                 "collective cannot write its result into it; pass a tensor with its own memory "
                                 "(.contiguous() or .clone())")
        self.t = t
        self.direct = _direct(t, group)
        if self.direct:
            native = t._data
        elif not read:
            native = group.empty(tuple(t._data.shape), numpy_dtype(t._dtype))
        elif group.memory == "host":
            native = np().ascontiguousarray(t._device.backend.to_numpy(t._data))
        else:
            native = t._device._kernels["contiguous"](t._data)
        self.native = native
        d = t._dtype
        self.cast = reduce and (d is bfloat16 or d is float16)
        if self.cast:
            self.wire = native.astype(np().float32) if read else group.empty(tuple(native.shape), np().float32)
        elif d is bfloat16 or d is float16:
            self.wire = native.view(np().uint16)
        elif d is bool_:
            self.wire = native.view(np().uint8)
        else:
            self.wire = native

    def finish(self, divide: int = 0) -> None:
        """Write the received ``wire`` into the tensor (``divide``: AVG's world size)."""
        wire = self.wire
        if divide:
            wire /= divide
        if self.cast:
            self.native[...] = wire.astype(self.native.dtype)
        if self.direct:
            mark_written(self.t)
        else:
            write_array(self.t, self.native)
