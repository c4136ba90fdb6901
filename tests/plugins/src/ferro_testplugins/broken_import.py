"""A plugin whose import fails."""

raise ImportError("ferro_testplugins.broken_import needs a library that is not installed (on purpose)")
