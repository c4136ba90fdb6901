"""A plugin written against a plugin API version this ferro does not speak."""

from ferro.backends import hookimpl
from ferro_testplugins import active

if active():
    @hookimpl
    def ferro_plugin_api_version() -> int:
        return 999

    @hookimpl
    def ferro_register_backends() -> list:
        raise AssertionError("never called: the API version is refused first")
else:
    from ferro_testplugins import inert_api_version  # noqa: F401 (the hook while inert)
