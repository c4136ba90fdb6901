"""The installed distributions' entry points of one group, found without importing importlib.metadata.

Importing :mod:`importlib.metadata` (email, zipfile, pathlib, csv, inspect...) costs more than the rest of
the plugin discovery of the first op. For the usual layout - every ``sys.path`` entry a directory holding
``*.dist-info`` / ``*.egg-info`` folders, and the standard path finder the only one that finds
distributions - :func:`entry_points` does what ``importlib.metadata.entry_points(group=...)`` does, the way
it does it: the same distributions in the same order (``sys.path`` order, then the order of each
directory's listing, grouped by normalized name), the first distribution of a name winning, the same
``entry_points.txt`` syntax (the `entry points specification
<https://packaging.python.org/en/latest/specifications/entry-points/>`_). Anything else (a zip or an egg
on ``sys.path``, another finder of distributions, a line it cannot read) is left to importlib.metadata.
"""

from __future__ import annotations

import os
import re
import sys
from functools import reduce
from importlib import import_module
from importlib.machinery import PathFinder
from typing import Any

__all__ = ["entry_points"]

_INFO = (".dist-info", ".egg-info")
#: An entry point's value (importlib.metadata's EntryPoint.pattern), compiled on first use: ``import ferro``
#: imports this module.
_VALUE = r"(?P<module>[\w.]+)\s*(:\s*(?P<attr>[\w.]+)\s*)?((?P<extras>\[.*\])\s*)?$"


class _Unusual(Exception):
    """The layout is one this module leaves to importlib.metadata."""


class Distribution:
    """The ``name`` and ``version`` of an installed distribution (read from its metadata on first use)."""

    def __init__(self, path: str) -> None:
        self._path = path
        self._fields: dict[str, str] | None = None

    def _field(self, key: str) -> str | None:
        if self._fields is None:
            self._fields = {}
            for name in ("METADATA", "PKG-INFO"):
                text = _read(os.path.join(self._path, name))
                if text:
                    for line in text.splitlines():
                        if not line.strip():
                            break  # the headers end at the first blank line
                        k, sep, v = line.partition(":")
                        if sep and not line[0].isspace():
                            self._fields.setdefault(k.strip().lower(), v.strip())
                    break
        return self._fields.get(key)

    @property
    def name(self) -> str | None:
        """The ``Name`` field of the distribution's metadata."""
        return self._field("name")

    @property
    def version(self) -> str | None:
        """The ``Version`` field of the distribution's metadata."""
        return self._field("version")


class EntryPoint:
    """One entry point: ``name = value`` in section ``group`` of a distribution's ``entry_points.txt``."""

    def __init__(self, name: str, value: str, group: str, dist: Distribution) -> None:
        self.name, self.value, self.group, self.dist = name, value, group, dist

    def load(self) -> Any:
        """The module, or the object inside it, that the entry point names (importing the module)."""
        match = re.match(_VALUE, self.value)
        if match is None:  # what importlib.metadata's EntryPoint.load raises for a malformed value
            raise AttributeError("'NoneType' object has no attribute 'group'")
        module = import_module(match.group("module"))
        return reduce(getattr, filter(None, (match.group("attr") or "").split(".")), module)


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError, PermissionError):
        return None


def _normalize(name: str) -> str:
    """importlib.metadata's ``re.sub(r"[-_.]+", "-", name).lower().replace("-", "_")``, without the regex
    (a few hundred names in a large site-packages)."""
    out = name.lower().replace("-", "_").replace(".", "_")
    while "__" in out:
        out = out.replace("__", "_")
    return out


def _infos(root: Any) -> list[str]:
    """The metadata folders of one ``sys.path`` entry, in importlib.metadata's order."""
    if not isinstance(root, str) or os.path.basename(root).lower().endswith(".egg"):
        raise _Unusual
    try:
        children = os.listdir(root or ".")
    except NotADirectoryError:
        raise _Unusual from None  # a zip: importlib.metadata reads it through zipfile
    except OSError:
        return []
    listing = "\n".join(children).lower()
    if ".dist-info" not in listing and ".egg-info" not in listing:
        return []  # (the standard library's folders, a project's sources: hundreds of names, none of them)
    by_name: dict[str, list[str]] = {}
    for child in children:
        low = child.lower()
        if low.endswith(_INFO):
            if not child.endswith(_INFO):  # importlib.metadata then reads the name from the metadata
                raise _Unusual
            by_name.setdefault(_normalize(low.rpartition(".")[0].partition("-")[0]), []).append(
                os.path.join(root, child))
    return [p for paths in by_name.values() for p in paths]


def _parse(text: str, group: str, dist: Distribution) -> list[EntryPoint]:
    out = []
    section = None
    for line in map(str.strip, text.splitlines()):
        if not line or line.startswith("#"):
            continue
        if line.startswith("[") and line.endswith("]"):
            section = line.strip("[]")
            continue
        if section is None:
            continue
        if "=" not in line:
            raise _Unusual  # importlib.metadata raises on it: let it say so
        if section == group:
            name, value = map(str.strip, line.split("=", 1))
            out.append(EntryPoint(name, value, group, dist))
    return out


def _scan(group: str) -> list[EntryPoint]:
    if any(hasattr(f, "find_distributions") and f is not PathFinder for f in sys.meta_path):
        raise _Unusual
    seen: set[str] = set()
    out: list[EntryPoint] = []
    for root in sys.path:
        for path in _infos(root):
            stem = os.path.basename(path)
            key = _normalize(os.path.splitext(stem)[0].partition("-")[0])
            if key in seen:
                continue
            seen.add(key)
            file = os.path.join(path, "entry_points.txt")
            # (most distributions have none: asking costs one system call, a failed open() an exception too)
            text = _read(file) if os.access(file, os.F_OK) else None
            if text:
                out.extend(_parse(text, group, Distribution(path)))
    return out


def entry_points(group: str) -> list[Any]:
    """The entry points of ``group`` of every installed distribution, as importlib.metadata lists them."""
    try:
        return _scan(group)
    except _Unusual:
        # Deferred: the import is what this module exists to avoid in the usual case.
        from importlib.metadata import entry_points as full
        return list(full(group=group))
