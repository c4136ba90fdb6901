"""A plugin whose ``ferro_register_kernels`` hands the ``cpu`` backend something malformed.

``FERRO_TESTPLUGINS_BADKERNELS`` (read when ferro calls the hook) picks what,
from :data:`TABLES`; without it the hook returns None and the plugin is fine.
"""

from __future__ import annotations

import os
from typing import Any

from ferro.backends import Backend, hookimpl
from ferro_testplugins import inert_api_version  # noqa: F401 (the hook: this plugin speaks the right API)


def _exp(x: Any) -> Any:
    raise AssertionError("never called: the table is refused")


def _generator_exit() -> Any:
    raise GeneratorExit("ferro_register_kernels stops like a closed generator (on purpose)")


#: The switch's value -> what the hook does.
TABLES = {
    "list": lambda: [("add", _exp)],
    "notcallable": lambda: {"add": 42},
    "unknown": lambda: {"exp": _exp, "no_such_kernel": _exp},
    "badkey": lambda: {1: _exp},
    "generatorexit": _generator_exit,
}


@hookimpl
def ferro_register_kernels(backend: Backend) -> Any:
    what = os.environ.get("FERRO_TESTPLUGINS_BADKERNELS")
    if backend.name != "cpu" or what is None:
        return None
    return TABLES[what]()
