"""A plugin whose backend registration raises."""

from ferro.backends import hookimpl
from ferro_testplugins import active, inert_api_version  # noqa: F401 (the hook)

if active():
    @hookimpl
    def ferro_register_backends() -> list:
        raise RuntimeError("this plugin fails while registering its backends (on purpose)")
