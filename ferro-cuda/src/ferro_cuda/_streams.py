"""CuPy's streams and events behind the contract's ``NativeStream`` / ``NativeEvent`` (``ferro.cuda`` uses these).

``native`` is CuPy's own object, for users who hand it to CuPy code.
"""

from __future__ import annotations

from typing import Any

__all__ = ["CudaStream", "CudaEvent"]


class CudaEvent:
    """A ``cupy.cuda.Event``."""

    __slots__ = ("_cp", "native")

    def __init__(self, cp: Any, native: Any) -> None:
        self._cp = cp
        self.native = native

    def record(self, stream: CudaStream | None) -> None:
        """Record on ``stream`` (None: CuPy's current stream)."""
        self.native.record(None if stream is None else stream.native)

    def synchronize(self) -> None:
        """Wait for the work before the event."""
        self.native.synchronize()

    def query(self) -> bool:
        """Whether the work before the event has finished."""
        return bool(self.native.done)

    def elapsed_time(self, end: CudaEvent) -> float:
        """Milliseconds from this event to ``end`` (both recorded with timing enabled)."""
        return float(self._cp.cuda.get_elapsed_time(self.native, end.native))


class CudaStream:
    """A ``cupy.cuda.Stream`` and the GPU it belongs to."""

    __slots__ = ("_cp", "device_index", "native")

    def __init__(self, cp: Any, native: Any) -> None:
        self._cp = cp
        self.native = native
        self.device_index = int(native.device_id)

    @property
    def handle(self) -> int:
        """The ``cudaStream_t`` as an int."""
        return int(self.native.ptr)

    def synchronize(self) -> None:
        """Wait for the work queued on the stream."""
        self.native.synchronize()

    def query(self) -> bool:
        """Whether the work queued on the stream has finished."""
        return bool(self.native.done)

    def wait_event(self, event: CudaEvent) -> None:
        """Make later work on this stream wait for ``event``."""
        self.native.wait_event(event.native)

    def record(self) -> CudaEvent:
        """A new event recorded on this stream now."""
        return CudaEvent(self._cp, self.native.record())
