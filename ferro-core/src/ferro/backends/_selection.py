"""Which backend new tensors go to: ``FERRO_BACKEND``, ``set_backend``, ``use_backend``."""

from __future__ import annotations

import contextlib
import contextvars
import os
from collections.abc import Iterator

from .._core.device import device
from ..errors import BackendUnavailableError
from . import _registry
from ._base import Backend

__all__ = ["set_backend", "use_backend", "current_backend", "current_device"]

_global: list[str | None] = [None]
_override: contextvars.ContextVar[str | None] = contextvars.ContextVar("ferro_backend", default=None)


def _check(name: str) -> str:
    dev = device(name)
    backend = _registry.get_backend(dev.type)
    avail = backend.availability()
    if not avail:
        raise BackendUnavailableError(backend.name, avail.reason)
    return str(dev) if ":" in name else dev.type


def current_backend() -> str:
    """The name of the backend new tensors go to.

    ``FERRO_BACKEND`` is read here, at first use (not at import); the
    default is ``cpu``.
    """
    name = _override.get() or _global[0]
    if name is None:
        name = os.environ.get("FERRO_BACKEND", "").strip() or "cpu"
        _global[0] = _check(name)
        name = _global[0]
    return name.partition(":")[0]


def current_device() -> device:
    """The device new tensors go to when no ``device=`` is given."""
    name = _override.get() or _global[0]
    dev = _fixed.get(name)  # (every creation function asks: one dict lookup in the usual case)
    if dev is not None:
        return dev
    if name is None:
        current_backend()
        name = _global[0]
    assert name is not None
    dev = _named.get(name)
    if dev is None:
        dev = _named[name] = device(name)
    if ":" not in name:
        backend = _registry.get_backend(dev.type)
        if type(backend).default_device_index is Backend.default_device_index:  # always 0: fixed
            _fixed[name] = dev
            return dev
        index = backend.default_device_index()
        if index != dev.index:
            dev = device(dev.type, index)
    else:
        _fixed[name] = dev
    return dev


_named: dict[str, device] = {}  # a backend's name -> its device (index 0 when the name has none)
_fixed = _registry.fixed_devices  # (the registry's dict: its reset() empties it)


def set_backend(name: str) -> None:
    """Make ``name`` (``"cpu"``, ``"opencl"``, ``"cuda:1"``) where new tensors go.

    Raises :class:`~ferro.errors.BackendNotFoundError` if it is not installed and
    :class:`~ferro.errors.BackendUnavailableError` (with the reason) if it cannot run here.
    """
    _global[0] = _check(name)


@contextlib.contextmanager
def use_backend(name: str) -> Iterator[None]:
    """Within the block, new tensors go to backend (or device) ``name``."""
    token = _override.set(_check(name))
    try:
        yield
    finally:
        _override.reset(token)
