"""Grad mode: whether ops record a graph. Thread-local, as in PyTorch."""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["no_grad", "enable_grad", "set_grad_enabled", "is_grad_enabled"]

F = TypeVar("F", bound=Callable[..., Any])


class _GradState(threading.local):
    enabled = True


#: Read on the hot path as ``_state.enabled``.
_state = _GradState()


def is_grad_enabled() -> bool:
    """Whether ops on tensors that require grad record the graph in this thread."""
    return _state.enabled


class _GradModeContext:
    """Base of the grad-mode context managers; also usable as decorators."""

    _mode: bool

    def __enter__(self) -> None:
        self._prev = _state.enabled
        _state.enabled = self._mode

    def __exit__(self, *exc: object) -> None:
        _state.enabled = self._prev

    def __call__(self, fn: F) -> F:
        mode = self._mode

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            prev = _state.enabled
            _state.enabled = mode
            try:
                return fn(*args, **kwargs)
            finally:
                _state.enabled = prev
        return wrapper  # type: ignore[return-value]


class no_grad(_GradModeContext):  # noqa: N801
    """Context manager and decorator that turns graph recording off."""

    _mode = False


class enable_grad(_GradModeContext):  # noqa: N801
    """Context manager and decorator that turns graph recording on."""

    _mode = True


class set_grad_enabled(_GradModeContext):  # noqa: N801
    """Set grad mode to ``mode``: at once, and back on leaving a ``with`` block."""

    def __init__(self, mode: bool) -> None:
        self._mode = bool(mode)
        self._prev = _state.enabled
        _state.enabled = self._mode

    def __enter__(self) -> None:
        pass

    def __call__(self, fn: F) -> F:
        # As a decorator, the mode applies inside the function only: undo the switch __init__ made.
        _state.enabled = self._prev
        return super().__call__(fn)
