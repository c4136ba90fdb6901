"""A plugin whose hook has a parameter the specification does not know."""

from ferro.backends import PLUGIN_API_VERSION, hookimpl


@hookimpl
def ferro_plugin_api_version() -> int:
    return PLUGIN_API_VERSION


@hookimpl
def ferro_register_kernels(backnd):
    return None
