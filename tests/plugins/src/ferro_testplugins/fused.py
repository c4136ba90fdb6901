"""A plugin that supplies fused optimizer kernels, to show that ``ferro.optim`` finds them by name.

Only with ``FERRO_TESTPLUGINS_FUSED=1`` (read when ferro calls the hook):
its ``ferro_register_kernels`` gives ``fused_sgd`` and ``fused_adam`` to the
``cpu`` backend (overriding ferro-cpu's own) and to the ``toy`` backend
(which has none). They count their calls per backend in :data:`calls` and
then run ferro-cpu's NumPy implementation.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from ferro.backends import PLUGIN_API_VERSION, Backend, hookimpl

#: (backend name, kernel name) -> how many times the kernel ran.
calls: dict[str, int] = {}


@hookimpl
def ferro_plugin_api_version() -> int:
    return PLUGIN_API_VERSION


@hookimpl
def ferro_register_kernels(backend: Backend) -> dict[str, Callable[..., Any]] | None:
    if backend.name not in ("cpu", "toy") or os.environ.get("FERRO_TESTPLUGINS_FUSED") != "1":
        return None
    import numpy as np

    from ferro_cpu._fused import fused_kernels

    def counting(name: str, kernel: Callable[..., Any]) -> Callable[..., Any]:
        key = f"{backend.name}.{name}"
        calls[key] = 0

        def k(*args: Any) -> None:
            calls[key] += 1
            kernel(*args)
        return k
    return {name: counting(name, kernel) for name, kernel in fused_kernels(np).items()}
