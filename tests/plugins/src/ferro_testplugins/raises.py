"""A plugin whose backend registration raises."""

from ferro.backends import PLUGIN_API_VERSION, hookimpl


@hookimpl
def ferro_plugin_api_version() -> int:
    return PLUGIN_API_VERSION


@hookimpl
def ferro_register_backends() -> list:
    raise RuntimeError("this plugin fails while registering its backends (on purpose)")
