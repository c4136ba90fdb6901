"""Memory on the GPU and pinned memory on the host: the peak-tracking allocator and the staging of uploads.

CuPy's memory pool knows what is in use but keeps no peak, so
:class:`MemoryTracker` puts a thin allocator in front of the pool that
raises the device's peak after each allocation (PyTorch's
``max_memory_allocated``); it steps aside when someone installed another
allocator (RMM, say). :class:`PinnedStager` copies large uploads through
page-locked host buffers, so the copy to the GPU runs asynchronously on the
current stream at full bus speed; each buffer is held until an event says its
copy is done.
"""

from __future__ import annotations

from collections import deque
from typing import Any

__all__ = ["MemoryTracker", "PinnedStager"]


class MemoryTracker:
    """Bytes in use and their peak per device, over CuPy's default memory pool."""

    def __init__(self, cupy: Any) -> None:
        self._cp = cupy
        self._pool = pool = cupy.get_default_memory_pool()
        self._peaks: dict[int, int] = {}
        #: False when another allocator was installed before us: the peak is then what is in use now.
        self.tracking = cupy.cuda.get_allocator() == pool.malloc
        if self.tracking:
            cupy.cuda.set_allocator(self._allocator())

    def _allocator(self) -> Any:
        pool_malloc, used, peaks = self._pool.malloc, self._pool.used_bytes, self._peaks

        def malloc(size: int) -> Any:
            mem = pool_malloc(size)
            n = used()  # the pool's bytes in use on the current device, which is mem's
            dev = mem.device_id
            if n > peaks.get(dev, 0):
                peaks[dev] = n
            return mem
        return malloc

    def allocated(self) -> int:
        """Bytes in use on the current device."""
        return int(self._pool.used_bytes())

    def reserved(self) -> int:
        """Bytes the pool holds on the current device, in use or cached."""
        return int(self._pool.total_bytes())

    def peak(self, index: int) -> int:
        """The most bytes in use on device ``index`` since the start or the last reset."""
        with self._cp.cuda.Device(index):
            now = self.allocated()
        return max(self._peaks.get(index, 0), now)

    def reset_peak(self, index: int) -> None:
        """Restart the peak of device ``index`` (the current device) from the bytes in use now."""
        self._peaks[index] = self.allocated()


class PinnedStager:
    """Uploads through pinned host buffers, asynchronous on the current stream."""

    #: Smaller arrays go straight (pageable) copies: staging costs a host copy, worth it only for large ones.
    min_bytes = 1 << 20

    def __init__(self, cupy: Any) -> None:
        self._cp = cupy
        self._in_flight: deque[tuple[Any, Any]] = deque()

    def to_device(self, array: Any) -> Any:
        """A device copy of the NumPy ``array`` on the current device and stream."""
        import cupyx
        import numpy as np
        cp = self._cp
        self._release()
        src = np.ascontiguousarray(array)
        pinned = cupyx.empty_pinned(src.shape, src.dtype)
        pinned[...] = src
        out = cp.empty(src.shape, src.dtype)
        stream = cp.cuda.get_current_stream()
        out.set(pinned, stream=stream)
        # The pinned buffer goes back to its pool when freed: keep it until the copy has run.
        self._in_flight.append((stream.record(), pinned))
        return out

    def _release(self) -> None:
        while self._in_flight and self._in_flight[0][0].done:
            self._in_flight.popleft()
