"""``ferro.cuda``: the CUDA runtime as ``torch.cuda`` offers it, delegating to the ``cuda`` backend.

Every function finds the ``cuda`` backend (the ferro-cuda plugin) when called,
never at ``import ferro``: importing this module imports neither ferro_cuda
nor CuPy. Streams, events and memory statistics go through the contract's
:class:`~ferro.backends.contract.DeviceRuntime`, which ferro-cuda implements
over CuPy; nothing here knows CuPy. Where CUDA cannot run (ferro-cuda or CuPy missing, no driver, no
GPU), :func:`is_available` answers False, :func:`device_count` 0, the seeding functions do
nothing (as PyTorch's), and every other function raises :class:`~ferro.errors.BackendUnavailableError` with the
exact reason.

>>> import ferro
>>> isinstance(ferro.cuda.is_available(), bool)
True
>>> ferro.cuda.matmul.allow_tf32
False
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from .backends.contract import DeviceRuntime, NativeEvent, NativeStream
from .errors import BackendUnavailableError

__all__ = [
    "is_available", "device_count", "current_device", "set_device", "get_device_name", "synchronize",
    "Stream", "Event", "stream", "current_stream", "default_stream",
    "memory_allocated", "max_memory_allocated", "reset_peak_memory_stats", "memory_reserved", "empty_cache",
    "manual_seed", "manual_seed_all", "get_rng_state", "set_rng_state", "matmul",
]

_NAME = "cuda"


def _find() -> Any:
    """The ``cuda`` backend, available or not; None where ferro-cuda is not installed."""
    from .backends import _registry
    return _registry.backends().get(_NAME)


def _not_installed() -> str:
    from .backends import _registry
    broken = _registry.broken().get(_NAME)
    if broken:
        return f"the ferro-cuda plugin is broken ({broken})"
    return "ferro-cuda is not installed (pip install 'ferro-core[cuda]')"


def _backend() -> Any:
    """The available ``cuda`` backend, or BackendUnavailableError with the reason."""
    b = _find()
    if b is None:
        raise BackendUnavailableError(_NAME, _not_installed())
    avail = b.availability()
    if not avail:
        raise BackendUnavailableError(_NAME, avail.reason)
    return b


def _runtime() -> DeviceRuntime:
    """The available ``cuda`` backend as a device runtime (streams, events, memory)."""
    b = _backend()
    if not isinstance(b, DeviceRuntime):
        raise BackendUnavailableError(_NAME, f"the installed cuda backend ({type(b).__name__}) has no device runtime "
                                      "(streams, events, memory statistics)")
    return b


def _index(device: Any) -> int:
    """The ordinal of ``device`` (None, an int, ``"cuda:1"`` or a ferro.device), checked against the count."""
    b = _backend()
    if device is None:
        return b.default_device_index()
    if isinstance(device, int):
        i = device
    else:
        from ._core.device import device as device_cls
        d = device_cls(device)
        if d.type != _NAME:
            raise ValueError(f"expected a cuda device, got {d}")
        i = d.index
    n = b.device_count()
    if not 0 <= i < n:
        raise ValueError(f"invalid CUDA device ordinal {i}: there {'is' if n == 1 else 'are'} {n} GPU(s)")
    return i


# -- devices ----------------------------------------------------------------


def is_available() -> bool:
    """Whether CUDA can run here (never raises; ``ferro.backends.unavailable()['cuda']`` says why not)."""
    b = _find()
    return b is not None and bool(b.availability())


def device_count() -> int:
    """How many GPUs CUDA sees here (0 where it cannot run)."""
    b = _find()
    return b.device_count() if b is not None and b.availability() else 0


def current_device() -> int:
    """The ordinal of the current GPU (what :func:`set_device` chose, 0 by default)."""
    return _backend().default_device_index()


def set_device(device: Any) -> None:
    """Make ``device`` (an ordinal, ``"cuda:N"`` or a ferro.device) the current GPU: the one
    :func:`synchronize`, memory, stream and seed functions use by default. Device strings without an
    ordinal (``"cuda"``) still mean ``cuda:0`` in ferro, and CuPy's own current device is not changed."""
    _backend().set_current_device(_index(device))


def get_device_name(device: Any = None) -> str:
    """The name of a GPU (default: the current one), e.g. ``'NVIDIA H100 80GB HBM3'``."""
    return _backend().device_name(_index(device))


def synchronize(device: Any = None) -> None:
    """Wait until every kernel queued on a GPU (default: the current one) has finished."""
    _backend().synchronize(_index(device))


# -- streams and events ---------------------------------------------------------


class Stream:
    """A CUDA stream: kernels queued on one stream run in order; different streams may overlap.

    ``ferro.cuda.Stream()`` makes a new stream on the current GPU; queue work on it
    with ``with ferro.cuda.stream(s):``. :attr:`native` is the backend's own stream (CuPy's).
    """

    __slots__ = ("_stream",)

    def __init__(self, device: Any = None, priority: int = 0, *, _stream: NativeStream | None = None) -> None:
        self._stream = _stream if _stream is not None else _runtime().new_stream(_index(device), priority)

    @property
    def device_index(self) -> int:
        """The ordinal of the GPU the stream belongs to."""
        return self._stream.device_index

    @property
    def native(self) -> Any:
        """The backend's own stream object (a ``cupy.cuda.Stream``)."""
        return self._stream.native

    @property
    def device(self) -> Any:
        """The ferro device the stream belongs to."""
        from ._core.device import device
        return device(_NAME, self.device_index)

    def synchronize(self) -> None:
        """Wait until all work queued on this stream has finished."""
        self._stream.synchronize()

    def query(self) -> bool:
        """Whether all work queued on this stream has finished."""
        return self._stream.query()

    def wait_stream(self, other: Stream) -> None:
        """Make work queued later on this stream wait for what is queued on ``other`` now."""
        self._stream.wait_event(other._stream.record())

    def wait_event(self, event: Event) -> None:
        """Make work queued later on this stream wait for ``event``."""
        self._stream.wait_event(event._event)

    def record_event(self, event: Event | None = None) -> Event:
        """Record ``event`` (a new one by default) on this stream; returns it."""
        event = event if event is not None else Event()
        event.record(self)
        return event

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Stream) and self._stream.handle == other._stream.handle

    def __hash__(self) -> int:
        return hash((self.device_index, self._stream.handle))

    def __repr__(self) -> str:
        return f"<ferro.cuda.Stream device=cuda:{self.device_index} cuda_stream={self._stream.handle:#x}>"


class Event:
    """A CUDA event: a mark in a stream to wait for or to time between (``enable_timing=True``)."""

    __slots__ = ("_event",)

    def __init__(self, enable_timing: bool = False, blocking: bool = False) -> None:
        self._event: NativeEvent = _runtime().new_event(enable_timing, blocking)

    @property
    def native(self) -> Any:
        """The backend's own event object (a ``cupy.cuda.Event``)."""
        return self._event.native

    def record(self, stream: Stream | None = None) -> None:
        """Record the event on ``stream`` (default: the current stream)."""
        self._event.record(None if stream is None else stream._stream)

    def synchronize(self) -> None:
        """Wait until the work before the event has finished."""
        self._event.synchronize()

    def query(self) -> bool:
        """Whether the work before the event has finished."""
        return self._event.query()

    def elapsed_time(self, end: Event) -> float:
        """Milliseconds between this event and ``end`` (both recorded, with timing enabled)."""
        return self._event.elapsed_time(end._event)


@contextmanager
def stream(s: Stream | None) -> Iterator[Stream | None]:
    """Queue the kernels of the block on ``s`` (and make its GPU current); ``None`` changes nothing."""
    if s is None:
        yield s
        return
    with _runtime().use_stream(s._stream):
        yield s


def current_stream(device: Any = None) -> Stream:
    """The stream kernels of a GPU (default: the current one) are queued on now."""
    return Stream(_stream=_runtime().current_stream(_index(device)))


def default_stream(device: Any = None) -> Stream:
    """A GPU's default stream."""
    return Stream(_stream=_runtime().default_stream(_index(device)))


# -- memory ---------------------------------------------------------------------


def memory_allocated(device: Any = None) -> int:
    """Bytes of GPU memory held by tensors (CuPy's memory pool, in use)."""
    return _runtime().memory_allocated(_index(device))


def max_memory_allocated(device: Any = None) -> int:
    """The most bytes held by tensors since the start or :func:`reset_peak_memory_stats`."""
    return _runtime().max_memory_allocated(_index(device))


def reset_peak_memory_stats(device: Any = None) -> None:
    """Restart :func:`max_memory_allocated` from what is in use now."""
    _runtime().reset_peak_memory_stats(_index(device))


def memory_reserved(device: Any = None) -> int:
    """Bytes the memory pool holds on a GPU: in use plus cached for reuse."""
    return _runtime().memory_reserved(_index(device))


def empty_cache() -> None:
    """Give the pool's cached, unused blocks (GPU and pinned host) back to the driver."""
    _runtime().empty_cache()


# -- random numbers ----------------------------------------------------------------


def manual_seed(seed: int) -> None:
    """Seed the generator of the current GPU; where CUDA cannot run, do nothing (as PyTorch)."""
    if not is_available():
        return
    b = _backend()
    b.manual_seed(int(seed), b.default_device_index())


def manual_seed_all(seed: int) -> None:
    """Seed the generators of every GPU; where CUDA cannot run, do nothing (as PyTorch: the seeding helper
    of a script runs everywhere)."""
    if not is_available():
        return
    b = _backend()
    for i in range(b.device_count()):
        b.manual_seed(int(seed), i)


def get_rng_state(device: Any = "cuda") -> Any:
    """A GPU's generator state as a uint8 tensor on the CPU (restore it with :func:`set_rng_state`)."""
    from ._random import get_rng_state as get
    return get(f"{_NAME}:{_index(device)}")


def set_rng_state(new_state: Any, device: Any = "cuda") -> None:
    """Restore a GPU's generator state from :func:`get_rng_state`."""
    from ._random import set_rng_state as put
    put(new_state, f"{_NAME}:{_index(device)}")


# -- matmul precision ----------------------------------------------------------------


class _Matmul:
    """``ferro.cuda.matmul.allow_tf32``: let cuBLAS run float32 matmul in TF32 (Ampere and newer).

    False by default, as in PyTorch: TF32 keeps float32's range but only 10
    bits of mantissa, so products are faster and less precise.
    """

    __slots__ = ("_allow_tf32",)

    def __init__(self) -> None:
        self._allow_tf32 = False

    @property
    def allow_tf32(self) -> bool:
        """Whether float32 matmul on CUDA may use TF32."""
        return self._allow_tf32

    @allow_tf32.setter
    def allow_tf32(self, value: bool) -> None:
        self._allow_tf32 = bool(value)
        b = _find()
        if b is not None and b.availability():
            b.set_allow_tf32(self._allow_tf32)  # the backend also reads the flag when it starts


matmul = _Matmul()
