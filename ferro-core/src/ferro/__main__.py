"""``python -m ferro`` is the ``ferro`` command."""

from .cli import main

raise SystemExit(main())
