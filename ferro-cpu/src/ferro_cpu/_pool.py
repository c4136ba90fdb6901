"""A caching allocator for large NumPy results.

NumPy returns every large buffer to the OS and page-faults a fresh one on the
next allocation, which costs about as much as the arithmetic of a memory-bound
op. Large kernel outputs are instead carved from pooled buffers: a
:class:`_Block` owns one buffer and exposes it through
``__array_interface__``, so every array and view made from it keeps the block
alive (NumPy sets an array's base to the first non-array owner), and when the
last one dies the block hands its buffer back to the pool for the next
allocation of that size.
"""

from __future__ import annotations

import math
import threading
from typing import Any

import numpy as np

__all__ = ["BufferPool"]

#: Outputs smaller than this are left to NumPy's own (cached) small allocations.
MIN_BYTES = 1 << 20


class _Block:
    """One pooled buffer (``raw``, at address ``ptr``), lent to the arrays built on it."""

    __slots__ = ("__array_interface__", "_pool", "_ptr", "_raw")

    def __init__(self, pool: BufferPool, raw: np.ndarray, ptr: int, shape: tuple[int, ...], typestr: str) -> None:
        self._pool, self._raw, self._ptr = pool, raw, ptr
        # (no "descr": the typestr gives every dtype the pool serves; the address is kept with the buffer, as
        # ``raw.ctypes.data`` costs about 0.9 us a call)
        self.__array_interface__ = {"shape": shape, "typestr": typestr, "data": (ptr, False), "version": 3}

    def __del__(self) -> None:
        self._pool._give_back(self._raw, self._ptr)


class BufferPool:
    """Buffers by size, reused across allocations; ``limit`` bytes are kept at most."""

    def __init__(self, limit: int = 2 << 30) -> None:
        self.limit = limit
        self._free: dict[int, list[tuple[np.ndarray, int]]] = {}  # bytes -> (buffer, its address)
        self._cached = 0
        self._in_use = 0
        self._peak = 0
        self._lock = threading.Lock()

    def empty(self, shape: tuple[int, ...], dtype: Any, floor: int = MIN_BYTES) -> np.ndarray:
        """An uninitialized array of ``shape`` and ``dtype``, pooled when it is large (``floor`` bytes or more:
        a kernel whose scratch buffers of a few hundred KiB would page-fault on every call lowers it)."""
        dtype = np.dtype(dtype)
        nbytes = math.prod(shape) * dtype.itemsize  # (np.prod costs microseconds on a tuple)
        if nbytes < floor:
            return np.empty(shape, dtype)
        with self._lock:
            free = self._free.get(nbytes)
            if free:
                raw, ptr = free.pop()
                self._cached -= nbytes
            else:
                raw = None
            self._in_use += nbytes
            self._peak = max(self._peak, self._in_use)
        if raw is None:
            raw = np.empty(nbytes, np.uint8)
            ptr = raw.ctypes.data
        out = np.asarray(_Block(self, raw, ptr, tuple(shape), dtype.str))
        # the interface spells ml_dtypes' bfloat16 as raw bytes ('V2'): a view restores the dtype
        return out if out.dtype == dtype else out.view(dtype)

    def zeros(self, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
        """An array of ``shape`` and ``dtype`` with every byte zero, pooled when it is large (a small one
        from ``np.zeros``: cheaper than an allocation and a fill)."""
        dtype = np.dtype(dtype)
        if math.prod(shape) * dtype.itemsize < MIN_BYTES:
            return np.zeros(shape, dtype)
        out = self.empty(shape, dtype)
        out.view(np.uint8).fill(0)
        return out

    def _give_back(self, raw: np.ndarray, ptr: int) -> None:
        n = raw.nbytes
        with self._lock:
            self._in_use -= n
            if self._cached + n <= self.limit:
                self._free.setdefault(n, []).append((raw, ptr))
                self._cached += n

    def empty_cache(self) -> None:
        """Release every cached buffer to the OS."""
        with self._lock:
            self._free.clear()
            self._cached = 0

    def stats(self) -> dict[str, int]:
        """Bytes in use by live pooled arrays, cached for reuse, and the peak in use."""
        with self._lock:
            return {"allocated": self._in_use, "cached": self._cached, "peak_allocated": self._peak}
