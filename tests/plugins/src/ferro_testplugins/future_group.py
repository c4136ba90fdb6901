"""A broken process-group plugin: its group speaks a process-group API version this ferro does not."""

from __future__ import annotations

from ferro.backends import PLUGIN_API_VERSION, hookimpl
from ferro.distributed import ProcessGroupBackend

from . import active
from .loopback import FutureBackend


@hookimpl
def ferro_plugin_api_version() -> int:
    return PLUGIN_API_VERSION


@hookimpl
def ferro_register_process_groups() -> list[ProcessGroupBackend]:
    """The broken group when the broken plugins are switched on (``FERRO_TESTPLUGINS=1``), else none."""
    return [FutureBackend()] if active() else []
