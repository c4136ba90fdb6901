"""A plugin that calls ``sys.exit`` at import: it must not end the user's process."""

import sys

from ferro_testplugins import active, inert_api_version  # noqa: F401 (the hook while inert)

if active():
    sys.exit("ferro_testplugins.sys_exit exits at import (on purpose)")
