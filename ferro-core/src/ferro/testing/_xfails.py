"""The expected failures of the conformance suite: one text file per backend.

Each non-blank line that does not start with ``#`` reads::

    OP KIND DTYPE REASON...

``OP`` is a registry op name (``median``, ``linalg.inv``), ``KIND`` the test it
concerns (:data:`KINDS`: ``forward``, ``gradcheck``, ``errors``, ``nan``,
``view``...), ``DTYPE`` a dtype name or ``-`` for tests that do not run per
dtype (gradients run in float64, the error and view checks are per op); the
rest of the line is the reason, required. Every line names one op: there is no
pattern that covers several.

Where the file of a backend named ``NAME`` is found, the first that exists:

0. ``$FERRO_CONFORMANCE_XFAILS/NAME.txt`` when that environment variable names
   a folder (a list kept outside the package, e.g. while writing a backend);
1. ``conformance_xfails/NAME.txt`` inside the top-level package of the
   backend's class (``ferro_opencl/conformance_xfails/opencl.txt``): a plugin
   ships its own list;
2. ``ferro/testing/conformance/xfails/NAME.txt`` in ferro-core: the fallback.

The pytest plugin marks the matching tests ``xfail(strict=True)``: an expected
failure that passes is reported as a failure, so the list only shrinks.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path

__all__ = ["ENV", "KINDS", "ExpectedFailure", "load", "parse", "locations"]

#: The environment variable naming a folder of expected-failure files that take precedence.
ENV = "FERRO_CONFORMANCE_XFAILS"

#: The conformance tests an expected failure may name (``test_`` + kind in conformance/test_ops.py).
KINDS = ("forward", "gradcheck", "gradgradcheck", "errors", "inputs_unchanged", "nan", "view", "view_complex")


@dataclass(frozen=True)
class ExpectedFailure:
    """One line of a backend's expected-failures file."""

    op: str
    kind: str
    dtype: str
    reason: str
    where: str  # file:line, for messages

    @property
    def key(self) -> tuple[str, str, str]:
        return self.op, self.kind, self.dtype


def parse(text: str, origin: str = "<string>") -> dict[tuple[str, str, str], ExpectedFailure]:
    """The entries of one file's ``text``, keyed by ``(op, kind, dtype)``; a malformed line is a ``ValueError``."""
    out: dict[tuple[str, str, str], ExpectedFailure] = {}
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        parts = line.split(None, 3)
        where = f"{origin}:{n}"
        if len(parts) < 4:
            raise ValueError(f"{where}: expected 'OP KIND DTYPE REASON', got {line!r}")
        op, kind, dtype, reason = parts
        if kind not in KINDS:
            raise ValueError(f"{where}: kind {kind!r} is not one of {', '.join(KINDS)}")
        if op in ("*", "all") or dtype == "*":
            raise ValueError(f"{where}: name one op and one dtype (or '-'), not a pattern: {line!r}")
        entry = ExpectedFailure(op, kind, dtype, reason, where)
        if entry.key in out:
            raise ValueError(f"{where}: {op} {kind} {dtype} is listed twice (first at {out[entry.key].where})")
        out[entry.key] = entry
    return out


def locations(backend_name: str, backend_module: str) -> list[Path]:
    """Where the file of ``backend_name`` may be, in order: ``$FERRO_CONFORMANCE_XFAILS``, the backend's own
    package, then ferro-core's."""
    paths = []
    if os.environ.get(ENV):
        paths.append(Path(os.environ[ENV]) / f"{backend_name}.txt")
    top = sys.modules.get(backend_module.split(".")[0])
    if top is not None and getattr(top, "__file__", None):
        paths.append(Path(top.__file__).parent / "conformance_xfails" / f"{backend_name}.txt")
    paths.append(Path(__file__).parent / "conformance" / "xfails" / f"{backend_name}.txt")
    return paths


def load(backend_name: str, backend_module: str) -> dict[tuple[str, str, str], ExpectedFailure]:
    """The expected failures of one backend (empty when it has no file)."""
    for path in locations(backend_name, backend_module):
        if path.is_file():
            return parse(path.read_text(encoding="utf-8"), str(path))
    return {}
