"""What the bottom layer calls in the layers above it, handed over once at load time by ``ferro._api``.

A device binds to its backend (``ferro.backends``), and ``device()`` with no argument means the current
default device, yet ``_core`` imports nothing above it. The functions here stand in until
:func:`install` replaces them with the real ones; every import of ferro runs ``ferro._api`` first, so
they are in place before any device is used.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["current_device", "bind_device", "install"]


def current_device() -> Any:
    """The device new tensors go to by default (``ferro.backends.current_device``)."""
    raise RuntimeError("ferro is not fully imported: import ferro first")


def bind_device(device: Any) -> None:
    """Load the backend that owns ``device`` and resolve its kernel tables (``ferro.backends``)."""
    raise RuntimeError("ferro is not fully imported: import ferro first")


def install(**functions: Callable[..., Any]) -> None:
    """Replace the stand-ins above by name (called once, by ``ferro._api``)."""
    for name, fn in functions.items():
        if name not in __all__ or name == "install":
            raise KeyError(f"nothing named {name!r} is provided to the bottom layer")
        globals()[name] = fn
