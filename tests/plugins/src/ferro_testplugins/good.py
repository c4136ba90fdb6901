"""A working plugin: the ``toy`` backend, and, on request, an override of a ``cpu`` kernel.

Environment switches, read when ferro calls the hooks (so a test sets them in
a fresh interpreter before ferro's first use):

- ``FERRO_TESTPLUGINS_OVERRIDE=1``: contribute an ``exp`` kernel to the
  ``cpu`` backend that counts its calls in :data:`calls` and then computes
  ``numpy.exp``;
- ``FERRO_TESTPLUGINS_UNAVAILABLE=1``: also contribute ``toyoff``, a backend
  that is installed but never available (its array library does not exist),
  so that skips and errors carrying an availability reason can be tested on
  any machine.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from ferro.backends import PLUGIN_API_VERSION, ArrayAPIBackend, Backend, hookimpl

#: How many times the overriding ``exp`` kernel ran.
calls = {"exp": 0}

#: The module ``toyoff`` pretends to need; it is never installed.
MISSING_MODULE = "ferro_testplugins_no_such_array_library"


class ToyBackend(ArrayAPIBackend):
    """The generic Array API backend over NumPy, under another name."""

    name = "toy"
    description = "test backend: NumPy through the generic Array API backend"
    module_name = "numpy"


class ToyOffBackend(ArrayAPIBackend):
    """A backend whose array library is missing: installed, listed, never available."""

    name = "toyoff"
    description = "test backend that is never available"
    module_name = MISSING_MODULE


@hookimpl
def ferro_plugin_api_version() -> int:
    return PLUGIN_API_VERSION


@hookimpl
def ferro_register_backends() -> list[Backend]:
    out: list[Backend] = [ToyBackend()]
    if os.environ.get("FERRO_TESTPLUGINS_UNAVAILABLE") == "1":
        out.append(ToyOffBackend())
    return out


@hookimpl
def ferro_register_kernels(backend: Backend) -> dict[str, Callable[..., Any]] | None:
    if backend.name != "cpu" or os.environ.get("FERRO_TESTPLUGINS_OVERRIDE") != "1":
        return None
    import numpy as np

    def exp(x: Any) -> Any:
        calls["exp"] += 1
        return np.asarray(np.exp(x))
    return {"exp": exp}


@hookimpl
def ferro_report_info() -> dict[str, str] | None:
    """The override's call count for ``ferro info``, only when the override is switched on."""
    if os.environ.get("FERRO_TESTPLUGINS_OVERRIDE") != "1":
        return None
    return {"testgood": f"exp override calls: {calls['exp']}"}
