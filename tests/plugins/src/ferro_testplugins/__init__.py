"""Test plugins for ferro's plugin manager (see the README of this distribution).

The deliberately broken plugins are inert unless ``FERRO_TESTPLUGINS=1`` (which
``tests/conftest.py`` sets): installed in a developer's environment, they must
not make every ``ferro`` command warn about broken plugins. Inert, each is a
valid plugin that registers nothing.
"""

from __future__ import annotations

import os

from ferro.backends import PLUGIN_API_VERSION, hookimpl

#: The variable that switches the broken plugins on.
SWITCH = "FERRO_TESTPLUGINS"


def active() -> bool:
    """Whether the broken plugins misbehave (``FERRO_TESTPLUGINS=1``, read at their import)."""
    return os.environ.get(SWITCH) == "1"


@hookimpl(specname="ferro_plugin_api_version")
def inert_api_version() -> int:
    """The only hook of an inert broken plugin: it speaks the right API version and registers nothing."""
    return PLUGIN_API_VERSION
