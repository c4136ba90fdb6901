"""``ferro.inference_mode``: PyTorch's faster ``no_grad`` for inference, as a context manager and decorator.

In ferro it is ``no_grad`` plus a flag that ``is_inference_mode_enabled`` reads: tensors made inside are
ordinary tensors (PyTorch marks them "inference tensors" that autograd refuses later; ferro does not, so
``Tensor.is_inference()`` is always False).
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from . import grad_mode

__all__ = ["inference_mode", "is_inference_mode_enabled"]

F = TypeVar("F", bound=Callable[..., Any])


class _State(threading.local):
    on = False


_state = _State()


def is_inference_mode_enabled() -> bool:
    """Whether this thread is inside ``inference_mode()``."""
    return _state.on


class inference_mode:  # noqa: N801  (spelled as PyTorch spells it)
    """Turn graph recording off (``mode=True``) inside a ``with`` block or a decorated function;
    ``inference_mode(False)`` changes nothing. ``@ferro.inference_mode`` works without parentheses too."""

    def __new__(cls, mode: Any = True) -> Any:
        if callable(mode) and not isinstance(mode, bool):  # used as a bare decorator
            return cls()(mode)
        return super().__new__(cls)

    def __init__(self, mode: bool = True) -> None:
        self.mode = bool(mode)
        self._saved: list[tuple[bool, bool]] = []

    def __enter__(self) -> None:
        self._saved.append((grad_mode._state.enabled, _state.on))
        if self.mode:
            grad_mode._state.enabled = False
            _state.on = True

    def __exit__(self, *exc: object) -> None:
        grad_mode._state.enabled, _state.on = self._saved.pop()

    def __call__(self, fn: F) -> F:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with inference_mode(self.mode):
                return fn(*args, **kwargs)
        return wrapper  # type: ignore[return-value]

    def clone(self) -> inference_mode:
        """A new context manager with the same mode."""
        return inference_mode(self.mode)
