"""The hook implementations ferro finds through the ``ferro.backends`` entry point.

Keep this module cheap to import: no array library here; the backend class
is imported only when ferro first needs a backend.
"""

from ferro.backends import PLUGIN_API_VERSION, hookimpl


@hookimpl
def ferro_plugin_api_version() -> int:
    return PLUGIN_API_VERSION


@hookimpl
def ferro_register_backends() -> list:
    from ._backend import StrictBackend
    return [StrictBackend()]
