"""A plugin whose hook has a parameter the specification does not know."""

from ferro.backends import hookimpl
from ferro_testplugins import active, inert_api_version  # noqa: F401 (the hook, valid or not)

if active():
    @hookimpl
    def ferro_register_kernels(backnd):
        return None
