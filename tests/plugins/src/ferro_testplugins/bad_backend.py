"""A plugin whose backend ``bad`` fails in one of its methods.

``FERRO_TESTPLUGINS_BADBACKEND`` (read when ferro calls the hooks) picks the
failure, from :data:`FAILURES`; without it the plugin registers no backend.
"""

from __future__ import annotations

import os
from typing import Any

from ferro.backends import ArrayAPIBackend, Backend, hookimpl
from ferro_testplugins import inert_api_version  # noqa: F401 (the hook: this plugin speaks the right API)

SWITCH = "FERRO_TESTPLUGINS_BADBACKEND"


def _raise(what: str) -> Any:
    raise RuntimeError(f"{what} fails (on purpose)")


#: The switch's value -> (method, what it does instead).
FAILURES = {
    "availability": ("availability", lambda self: _raise("availability()")),
    "availability-systemexit": ("availability", lambda self: exit(3)),
    "availability-type": ("availability", lambda self: True),
    "kernels": ("kernels", lambda self, index: _raise("kernels()")),
    "kernels-notcallable": ("kernels", lambda self, index: {**ArrayAPIBackend.kernels(self, index), "add": 42}),
    "device_count": ("device_count", lambda self: "two"),
    "device_count-raises": ("device_count", lambda self: _raise("device_count()")),
}


class BadBackend(ArrayAPIBackend):
    """NumPy through the generic Array API backend; one method replaced by the switch's failure."""

    name = "bad"
    description = "test backend that fails in one of its methods"
    module_name = "numpy"


@hookimpl
def ferro_register_backends() -> list[Backend]:
    what = os.environ.get(SWITCH)
    if what is None:
        return []
    method, failure = FAILURES[what]
    return [type("BadBackend", (BadBackend,), {method: failure})()]
