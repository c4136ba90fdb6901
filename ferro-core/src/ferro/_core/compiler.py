"""``ferro.compile``: PyTorch's ``torch.compile`` for an eager library, the model or function itself.

``torch.compile`` promises the eager results, faster; ferro has no graph compiler, so it keeps the
eager model, and a script that compiles (nanoGPT does by default) runs as written.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["compile"]


def compile(model: Callable[..., Any] | None = None, *, fullgraph: bool = False, dynamic: bool | None = None,
            backend: str | Callable[..., Any] = "inductor", mode: str | None = None,
            options: dict[str, Any] | None = None, disable: bool = False) -> Any:
    """``model`` unchanged (ferro runs eagerly), or, called without it, a decorator that returns its
    function unchanged; the arguments of ``torch.compile`` are accepted and checked for their types."""
    if mode is not None and options is not None:
        raise RuntimeError("compile(): either mode or options can be specified, but both can't be specified "
                           "at the same time")
    if not (isinstance(backend, str) or callable(backend)):
        raise TypeError(f"compile(): backend must be a string or a callable, got {type(backend).__name__}")
    if model is None:
        return lambda fn: fn
    if not callable(model):
        raise TypeError(f"compile(): model must be a callable (a Module or a function), got {type(model).__name__}")
    return model
