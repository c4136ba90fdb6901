"""What the bottom layer calls in the layers above it, handed over once at load time by ``ferro._api``.

A device binds to its backend (``ferro.backends``), ``device()`` with no argument means the current
default device, and ``ops.<name>`` may have to load the plugins and build a plugin op's public function
(``ferro.dispatch``), yet ``_core`` imports nothing above it. The functions here stand in until
:func:`install` replaces them with the real ones; every import of ferro runs ``ferro._api`` first, so
they are in place before any device is used.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["current_device", "bind_device", "load_plugins", "public_function", "install"]


def current_device() -> Any:
    """The device new tensors go to by default (``ferro.backends.current_device``)."""
    raise RuntimeError("ferro is not fully imported: import ferro first")


def bind_device(device: Any) -> None:
    """Load the backend that owns ``device`` and resolve its kernel tables (``ferro.backends``)."""
    raise RuntimeError("ferro is not fully imported: import ferro first")


def load_plugins() -> None:
    """Discover and register the installed plugins, once (``ferro.backends``)."""
    raise RuntimeError("ferro is not fully imported: import ferro first")


def public_function(op: Any) -> Callable[..., Any]:
    """The public function of an op record that has none (a plugin's op), built by dispatch."""
    raise RuntimeError("ferro is not fully imported: import ferro first")


def install(**functions: Callable[..., Any]) -> None:
    """Replace the stand-ins above by name (called once, by ``ferro._api``)."""
    for name, fn in functions.items():
        if name not in __all__ or name == "install":
            raise KeyError(f"nothing named {name!r} is provided to the bottom layer")
        globals()[name] = fn
