"""``ferro.accelerator``: the device that is not the CPU, as ``torch.accelerator`` asks for it.

The accelerator is the backend new tensors go to when that is not ``cpu`` (``FERRO_BACKEND=opencl``,
``ferro.set_backend("opencl")``), else ``cuda`` where it can run, else there is none. So a script that
starts with PyTorch's idiom runs on the CPU here and on the chosen backend once one is chosen:

>>> import ferro
>>> device = ferro.accelerator.current_accelerator() if ferro.accelerator.is_available() else "cpu"
>>> ferro.ones(2, device=device).shape
ferro.Size([2])
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from . import backends, cuda
from ._core.device import device as _device
from .errors import BackendUnavailableError

__all__ = ["is_available", "current_accelerator", "device_count", "current_device_index", "current_device_idx",
           "set_device_index", "set_device_idx", "device_index", "synchronize", "empty_cache"]


def _name() -> str | None:
    """The accelerator's backend name, or None."""
    current = backends.current_backend()
    if current != "cpu":
        return current
    return "cuda" if cuda.is_available() else None


def is_available() -> bool:
    """Whether there is an accelerator (see the module's docstring for which)."""
    return _name() is not None


def current_accelerator(check_available: bool = False) -> _device | None:
    """The accelerator's device type as a ``ferro.device`` (``device(type='cuda')``...), or None."""
    name = _name()
    return None if name is None else _device(name)


def _require() -> str:
    name = _name()
    if name is None:
        raise BackendUnavailableError("accelerator", "no accelerator: ferro's current backend is cpu and CUDA "
                                      "cannot run here (choose one with FERRO_BACKEND or ferro.set_backend)")
    return name


def device_count() -> int:
    """How many devices the accelerator has (0 without one)."""
    name = _name()
    return 0 if name is None else backends.get(name).device_count()


def current_device_index() -> int:
    """The ordinal of the accelerator's current device."""
    name = _require()
    if name == backends.current_backend():
        return backends.current_device().index
    return cuda.current_device()


current_device_idx = current_device_index


def set_device_index(device: Any) -> None:
    """Make the accelerator's device ``device`` (an ordinal, a string or a ``ferro.device``) the current one."""
    name = _require()
    index = device if isinstance(device, int) else _device(device).index
    if name == backends.current_backend():
        backends.set_backend(f"{name}:{index}")
    else:
        cuda.set_device(index)


set_device_idx = set_device_index


@contextmanager
def device_index(device: Any) -> Iterator[None]:
    """Make ``device`` the accelerator's current device inside a ``with`` block (None: change nothing)."""
    if device is None:
        yield
        return
    old = current_device_index()
    set_device_index(device)
    try:
        yield
    finally:
        set_device_index(old)


def synchronize(device: Any = None) -> None:
    """Wait until the work queued on an accelerator device (default: the current one) has finished."""
    name = _require()
    index = current_device_index() if device is None else (device if isinstance(device, int)
                                                           else _device(device).index)
    backends.get(name).synchronize(index)


def empty_cache() -> None:
    """Give cached, unused device memory back (CUDA's pool); nothing to do elsewhere."""
    if _name() == "cuda":
        cuda.empty_cache()
