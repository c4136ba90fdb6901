"""MkDocs hook: the capability matrix page, generated from ferro's op registry at build time.

``docs/capabilities.md`` holds the prose and the marker ``<!-- capability-matrix -->``,
which this hook replaces with ``ferro ops --format markdown`` for every installed
backend (an unavailable one appears with its reason).
"""

from __future__ import annotations

import contextlib
import io
import warnings
from typing import Any

MARKER = "<!-- capability-matrix -->"


def on_page_markdown(markdown: str, page: Any, **_: Any) -> str:
    if MARKER not in markdown:
        return markdown
    import ferro
    from ferro.cli import _print_ops, ops_matrix
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf), warnings.catch_warnings():
        warnings.simplefilter("ignore", ferro.backends.FerroPluginWarning)  # broken plugins: `ferro info` shows them
        _print_ops(ops_matrix(None, None), "markdown")
    missing = "".join(f"- `{name}` is not available where these docs were built: {reason}\n"
                      for name, reason in ferro.backends.unavailable().items())
    return markdown.replace(MARKER, (missing + "\n" if missing else "") + buf.getvalue())
