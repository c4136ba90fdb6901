"""Module attributes imported on first use, so that ``import ferro`` loads only what every program needs.

>>> from ferro._core.lazy import attributes
>>> __getattr__ = attributes("ferro", {"save": ".serialization", "special": ".special"})  # doctest: +SKIP

``ferro.save`` then imports :mod:`ferro.serialization` and returns its ``save``; ``ferro.special``, whose
name is the module's own, returns the module. Either is then a plain attribute of the package.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["attributes"]


def attributes(package: str, table: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package``: ``name`` in ``table`` is imported from the module
    ``table[name]`` (relative to ``package``) when first asked for; other names raise AttributeError."""
    def getattr_(name: str) -> Any:
        where = table.get(name)
        if where is None:
            raise AttributeError(f"module '{package}' has no attribute '{name}'")
        module = importlib.import_module(where, package)
        value = module if where.rpartition(".")[2] == name else getattr(module, name)
        setattr(sys.modules[package], name, value)
        return value
    return getattr_
