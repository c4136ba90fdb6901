"""A plugin written against a plugin API version this ferro does not speak."""

from ferro.backends import hookimpl


@hookimpl
def ferro_plugin_api_version() -> int:
    return 999


@hookimpl
def ferro_register_backends() -> list:
    raise AssertionError("never called: the API version is refused first")
