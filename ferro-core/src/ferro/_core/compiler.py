"""``ferro.compile``: PyTorch's ``torch.compile`` for ferro, a small function that loads ``ferro._compile``
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


def compile(model: Callable[..., Any] | None = None, *, fullgraph: bool = False, dynamic: bool | None = None,
            backend: str | Callable[..., Any] = "inductor", mode: str | None = None,
            options: dict[str, Any] | None = None, disable: bool = False) -> Any:
    """``model`` compiled (a function, or a Module whose ``forward`` is compiled in place), or, called without
    it, a decorator that compiles its function: the first call with new guards runs eagerly, the second
    captures the kernel calls, later ones replay them without Python dispatch (docs/compiling.md).

    ``mode``: "default" and "reduce-overhead" (replay of the captured kernels, bitwise eager), "max-fusion"
    (also fuses elementwise chains into one kernel each). ``fullgraph=True`` makes a graph break an error
    naming the line. ``dynamic``, ``backend`` and ``options`` are ``torch.compile``'s, accepted and checked;
    shapes are always guarded. ``disable=True`` returns ``model`` unchanged. ``compile.explain(fn, *args)``
    runs one call under the tracer and reports what it captured and where it broke."""
    if mode is not None and options is not None:
        raise RuntimeError("compile(): either mode or options can be specified, but both can't be specified "
                           "at the same time")
    if not (isinstance(backend, str) or callable(backend)):
        raise TypeError(f"compile(): backend must be a string or a callable, got {type(backend).__name__}")
    if model is None:
        return lambda fn: compile(fn, fullgraph=fullgraph, dynamic=dynamic, backend=backend, mode=mode,
                                  options=options, disable=disable)
    if not callable(model):
        raise TypeError(f"compile(): model must be a callable (a Module or a function), got {type(model).__name__}")
    if disable:
        return model
    return _package().compile_callable(model, fullgraph=fullgraph, mode=mode)


def explain(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``ferro.compile.explain``: run ``fn(*args, **kwargs)`` once under the tracer; what was captured, and each
    graph break with its reason and line (as ``torch._dynamo.explain``)."""
    return _package().explain(fn, *args, **kwargs)


compile.explain = explain  # type: ignore[attr-defined]


def _package() -> Any:
    # ferro._compile sits above the core's layers (it traces ops, optimizers, modules): loaded by name on use
    return importlib.import_module("ferro._compile")
