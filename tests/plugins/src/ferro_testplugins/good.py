"""A working plugin: the ``toy`` backend, and an optional override of a ``cpu`` kernel."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from ferro.backends import PLUGIN_API_VERSION, ArrayAPIBackend, Backend, hookimpl

#: How many times the overriding ``exp`` kernel ran (read by the tests through this module).
calls = {"exp": 0}


class ToyBackend(ArrayAPIBackend):
    """The generic Array API backend over NumPy, under another name."""

    name = "toy"
    description = "test backend: NumPy through the generic Array API backend"
    module_name = "numpy"


@hookimpl
def ferro_plugin_api_version() -> int:
    return PLUGIN_API_VERSION


@hookimpl
def ferro_register_backends() -> list[Backend]:
    return [ToyBackend()]


@hookimpl
def ferro_register_kernels(backend: Backend) -> dict[str, Callable[..., Any]] | None:
    if backend.name != "cpu" or os.environ.get("FERRO_TESTPLUGINS_OVERRIDE") != "1":
        return None
    import numpy as np

    def exp(x: Any) -> Any:
        calls["exp"] += 1
        return np.exp(x, out=...)
    return {"exp": exp}


@hookimpl
def ferro_report_info() -> dict[str, str]:
    return {"testgood": f"exp override calls: {calls['exp']}"}
