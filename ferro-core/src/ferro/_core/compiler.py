"""``ferro.compile``: PyTorch's ``torch.compile`` for ferro, a small callable that loads ``ferro._compile``
(capture, guards, passes, replay) on its first use, so that ``import ferro`` does not.

``ferro.compile(fn)`` (or ``@ferro.compile``, ``@ferro.compile(mode=...)``) returns the compiled function;
``ferro.compile(module)`` compiles the module's ``forward`` in place and returns the module;
``ferro.compile.explain(fn, *args)`` traces one call and reports graph breaks. See docs/compiling.md.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

__all__ = ["compile"]


class _Compile:
    """``ferro.compile`` (see the module's docstring); ``explain`` is ``ferro.compile.explain``."""

    def __call__(self, model: Callable[..., Any] | None = None, *, fullgraph: bool = False,
                 dynamic: bool | None = None, backend: str | Callable[..., Any] = "inductor",
                 mode: str | None = None, options: dict[str, Any] | None = None, disable: bool = False) -> Any:
        """``model`` compiled (a function or a Module), or, called without it, a decorator that compiles its
        function. ``mode``: "default" and "reduce-overhead" (replay of the captured kernels, bitwise eager),
        "max-fusion" (also fuses elementwise chains into one kernel per chain). ``dynamic``, ``backend`` and
        ``options`` are ``torch.compile``'s, accepted and checked; shapes are always guarded (a new shape
        captures a new graph). ``disable=True`` returns ``model`` unchanged."""
        if mode is not None and options is not None:
            raise RuntimeError("compile(): either mode or options can be specified, but both can't be specified "
                               "at the same time")
        if not (isinstance(backend, str) or callable(backend)):
            raise TypeError(f"compile(): backend must be a string or a callable, got {type(backend).__name__}")
        if model is None:
            return lambda fn: self(fn, fullgraph=fullgraph, dynamic=dynamic, backend=backend, mode=mode,
                                   options=options, disable=disable)
        if not callable(model):
            raise TypeError(f"compile(): model must be a callable (a Module or a function), got "
                            f"{type(model).__name__}")
        if disable:
            return model
        return _package().compile_callable(model, fullgraph=fullgraph, mode=mode)

    def explain(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Run ``fn(*args, **kwargs)`` once under the tracer; what was captured and each graph break with its
        reason and line (``torch._dynamo.explain``)."""
        return _package().explain(fn, *args, **kwargs)

    def __repr__(self) -> str:
        return "<function ferro.compile>"


def _package() -> Any:
    # ferro._compile sits above the core's layers (it traces ops, optimizers, modules): loaded by name on use
    return importlib.import_module("ferro._compile")


compile = _Compile()
