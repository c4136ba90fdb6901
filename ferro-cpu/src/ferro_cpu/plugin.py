"""The plugin module named by the ``cpu`` entry point: hooks only, no NumPy import."""

from __future__ import annotations

from ferro.backends import PLUGIN_API_VERSION, Backend, hookimpl


@hookimpl
def ferro_plugin_api_version() -> int:
    """The plugin API version ferro-cpu speaks."""
    return PLUGIN_API_VERSION


@hookimpl
def ferro_register_backends() -> list[Backend]:
    """The NumPy backend, named ``cpu``."""
    from ._backend import NumpyBackend
    return [NumpyBackend()]
