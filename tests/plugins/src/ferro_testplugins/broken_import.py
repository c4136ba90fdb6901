"""A plugin whose import fails."""

from ferro_testplugins import active, inert_api_version  # noqa: F401 (the hook while inert)

if active():
    raise ImportError("ferro_testplugins.broken_import needs a library that is not installed (on purpose)")
