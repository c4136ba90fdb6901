"""Backends: discovery, selection, capability queries, and the plugin contract.

>>> import ferro
>>> "cpu" in ferro.backends.available()
True
"""

from __future__ import annotations

from typing import Any

from .._core.expr import CUDA, OPENCL, Dialect, Expr, Helper, helper_source, substitute, uses_flag
from .._core.lazy import attributes
from .._core.records import OpDef
from . import contract
from ._base import Availability, Backend
from ._registry import FerroPluginWarning, register_plugin
from ._selection import current_backend, current_device, set_backend, use_backend

__all__ = [
    "Backend", "ArrayAPIBackend", "Availability", "FerroPluginWarning", "OpDef",
    "UNARY_FUNCS", "BINARY_FUNCS", "host_kernels", "host_index_reduce", "half_dtypes", "in_float32",
    "with_torch_special_values",
    "available", "unavailable", "status", "installed", "get", "broken", "disabled",
    "set_backend", "use_backend", "current_backend", "current_device",
    "register_plugin", "hookimpl", "PLUGIN_API_VERSION", "PROCESS_GROUP_API_VERSION", "backend_plugin", "explain",
    "explain_table", "op_names", "Resolution", "contract",
    "Expr", "Helper", "Dialect", "OPENCL", "CUDA", "substitute", "helper_source", "uses_flag", "elementwise_ops",
    "ARITY",
]


def installed() -> list[str]:
    """Names of every installed, validated backend, available here or not."""
    return sorted(_registry.backends())


def status() -> dict[str, Availability]:
    """Each installed backend's availability, with the reason when unavailable."""
    got = {name: b.availability() for name, b in sorted(_registry.backends().items())}
    # A backend whose availability() failed just now made its plugin broken: it is no longer installed.
    return {name: a for name, a in got.items() if name in _registry._state.backends}


def available() -> list[str]:
    """Names of the backends that can run here, ``cpu`` first.

    :func:`unavailable` gives the reasons for the others.
    """
    names = [n for n, a in status().items() if a]
    return sorted(names, key=lambda n: (n != "cpu", n))


def unavailable() -> dict[str, str]:
    """Installed backends that cannot run here, with the reason for each."""
    return {n: a.reason for n, a in status().items() if not a}


def get(name: str) -> Backend:
    """The installed backend ``name`` (available or not)."""
    return _registry.get_backend(name)


def broken() -> dict[str, str]:
    """Plugins that failed to load or validate, with their errors."""
    return _registry.broken()


def disabled() -> list[str]:
    """Plugins skipped because ``FERRO_DISABLE_PLUGINS`` names them."""
    _registry.load()
    return list(_registry._state.disabled)


#: Loaded on first use: what a backend plugin builds on (``import ferro`` loads no backend), and torch.backends'
#: switches for the scripts that set them.
_LATER = attributes(__name__, {
    **dict.fromkeys(("BINARY_FUNCS", "UNARY_FUNCS", "ArrayAPIBackend", "half_dtypes", "host_index_reduce",
                     "host_kernels", "in_float32"), "._array_api"),
    **dict.fromkeys(("ARITY", "elementwise_ops"), "._expressions"),
    "with_torch_special_values": "._special",
    "cuda": ".cuda", "cudnn": ".cudnn", "mps": ".mps",
})


def __getattr__(name: str) -> Any:
    # pluggy is imported only when a plugin module asks for the marker.
    if name in ("hookimpl", "PLUGIN_API_VERSION", "PROCESS_GROUP_API_VERSION", "hookspec"):
        from . import _hookspec
        return getattr(_hookspec, name)
    if name == "backend_plugin":
        from ._simple import backend_plugin
        return backend_plugin
    if name in ("explain", "explain_table", "op_names", "Resolution"):  # they read the op registry: loaded at first use
        from . import _explain
        return getattr(_explain, name)
    return _LATER(name)


from . import _registry  # noqa: E402
