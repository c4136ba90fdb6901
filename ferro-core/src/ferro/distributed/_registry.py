"""Which process-group backends are installed: ferro-core's ``mpi`` plus the plugins' (hook
``ferro_register_process_groups``), gathered on first need, a broken plugin isolated.

The plugins are the same ones :mod:`ferro.backends` discovers (entry-point group
``ferro.backends``); a plugin whose hook raises, or returns something that is not
a :class:`ProcessGroupBackend` of this API version, or takes a name already
taken, is listed in ``ferro.backends.broken()`` with the reason and skipped.
"""

from __future__ import annotations

import threading

from ..backends import _registry as _plugins
from ._backend import ProcessGroupBackend
from ._mpi import MPIBackend

__all__ = ["process_group_backends", "get_process_group_backend", "reset"]

_lock = threading.RLock()
_found: dict[str, ProcessGroupBackend] | None = None


def _discover() -> dict[str, ProcessGroupBackend]:
    from ..backends._hookspec import PROCESS_GROUP_API_VERSION
    _plugins.load()
    found: dict[str, ProcessGroupBackend] = {}
    builtin = MPIBackend()
    builtin.plugin = "ferro-core"
    found[builtin.name] = builtin
    pm = _plugins._manager()
    for impl in reversed(pm.hook.ferro_register_process_groups.get_hookimpls()):  # pluggy's call order
        name = pm.get_name(impl.plugin) or "?"
        try:
            result = list(impl.function() or [])
        except Exception as e:
            _plugins._mark_broken(name, f"ferro_register_process_groups() raised {type(e).__name__}: {e}")
            continue
        error = ""
        for b in result:
            if not isinstance(b, ProcessGroupBackend) or not b.name:
                error = f"ferro_register_process_groups() returned {b!r}, not a named ProcessGroupBackend"
            elif b.api_version != PROCESS_GROUP_API_VERSION:
                error = (f"process group '{b.name}' speaks process-group API version {b.api_version!r}, "
                         f"this ferro speaks {PROCESS_GROUP_API_VERSION}")
            elif b.name in found:
                error = f"process group name '{b.name}' is already taken by '{found[b.name].plugin}'"
            if error:
                break
        if error:
            _plugins._mark_broken(name, error)
            continue
        for b in result:
            b.plugin = name
            found[b.name] = b
    return found


def process_group_backends() -> dict[str, ProcessGroupBackend]:
    """Every installed process-group backend by name (available here or not)."""
    global _found
    if _found is None:
        with _lock:
            if _found is None:
                _found = _discover()
    return dict(_found)


def get_process_group_backend(name: str) -> ProcessGroupBackend:
    """The process-group backend ``name``; a ValueError naming the installed ones and the broken plugins."""
    found = process_group_backends()
    if name not in found:
        broken = _plugins.broken()
        raise ValueError(f"no process-group backend named '{name}'; installed: {', '.join(sorted(found))}"
                         + ("; broken plugins: " + "; ".join(f"{k}: {v}" for k, v in broken.items()) if broken else ""))
    return found[name]


def reset() -> None:
    """Forget the discovered backends (after ``ferro.backends._registry.reset()`` in tests)."""
    global _found
    with _lock:
        _found = None
