"""The native array of the OpenCL backend: a device buffer seen through shape, strides and an offset.

Strides and the offset count elements, as in PyTorch, so views (reshape,
permute, expand, slicing) are new :class:`CLArray` objects over the same
buffer: metadata only, nothing is copied or enqueued. Kernels take the
buffer, the offset and, for non-contiguous operands, the shape and strides.
An empty array has no buffer (OpenCL has no zero-byte buffers).
"""

from __future__ import annotations

import math
from typing import Any

__all__ = ["CLArray", "contiguous_strides"]


_STRIDES: dict[tuple[int, ...], tuple[tuple[int, ...], int]] = {}


def contiguous_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    """Row-major strides, in elements, of ``shape``."""
    got = _STRIDES.get(shape)
    if got is not None:
        return got[0]
    strides = []
    acc = 1
    for n in reversed(shape):
        strides.append(acc)
        acc *= max(n, 1)
    return tuple(reversed(strides))


class CLArray:
    """``buffer`` (a pyopencl Buffer or pooled buffer, None when empty) read as ``dtype`` from ``offset`` with
    ``shape`` and ``strides`` (elements); ``rt`` is the device's runtime (queue, pool, programs)."""

    __slots__ = ("buffer", "contiguous", "dtype", "offset", "rt", "shape", "size", "strides")

    def __init__(self, rt: Any, buffer: Any, shape: tuple[int, ...], dtype: Any,
                 strides: tuple[int, ...] | None = None, offset: int = 0) -> None:
        self.rt = rt
        self.buffer = buffer
        self.shape = shape
        self.dtype = dtype
        self.offset = offset
        if strides is None:
            got = _STRIDES.get(shape)
            if got is None:
                if len(_STRIDES) > 4096:  # bounded: a workload of ever new shapes must not grow it forever
                    _STRIDES.clear()
                got = _STRIDES[shape] = (contiguous_strides(shape), math.prod(shape))
            self.strides, self.size = got
            self.contiguous = True
        else:
            self.size = math.prod(shape)
            self.strides = strides
            self.contiguous = _is_contiguous(shape, strides)

    @property
    def ndim(self) -> int:
        """The number of dimensions."""
        return len(self.shape)

    @property
    def nbytes(self) -> int:
        """Bytes the elements take (not the buffer's size)."""
        return self.size * self.dtype.itemsize

    @property
    def itemsize(self) -> int:
        """Bytes per element."""
        return self.dtype.itemsize

    @property
    def queue(self) -> Any:
        """The command queue of the array's device."""
        return self.rt.queue

    @property
    def context(self) -> Any:
        """The OpenCL context of the array's device."""
        return self.rt.context

    def view(self, shape: tuple[int, ...], strides: tuple[int, ...] | None = None,
             offset: int | None = None) -> CLArray:
        """Another array over the same buffer."""
        return CLArray(self.rt, self.buffer, shape, self.dtype, strides, self.offset if offset is None else offset)

    def get(self) -> Any:
        """The elements as a NumPy array (waits for the queue)."""
        return self.rt.to_host(self)

    def __repr__(self) -> str:
        return (f"CLArray(shape={self.shape}, dtype={self.dtype}, strides={self.strides}, offset={self.offset}, "
                f"device={self.rt.device.name.strip()!r})")


def _is_contiguous(shape: tuple[int, ...], strides: tuple[int, ...]) -> bool:
    acc = 1
    for n, s in zip(reversed(shape), reversed(strides)):
        if n == 0:
            return True
        if n != 1 and s != acc:
            return False
        acc *= n
    return True
