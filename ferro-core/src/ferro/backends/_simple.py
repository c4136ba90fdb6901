"""Hook implementations for the common plugin: one that only contributes backends."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from typing import Any

from ._base import Backend
from ._hookspec import PLUGIN_API_VERSION, hookimpl
from ._registry import DECLARED

__all__ = ["backend_plugin"]


def backend_plugin(*targets: str, names: Sequence[str] = ()) -> tuple[Callable[[], int],
                                                                      Callable[[], list[Backend]]]:
    """The two hooks of a plugin whose backends are classes named ``"package.module:Class"``.

    The classes are imported when ferro first needs backends, not when the
    plugin module is imported. In the plugin module::

        ferro_plugin_api_version, ferro_register_backends = backend_plugin("my_pkg._backend:MyBackend")

    ``names``, the names of those backends (``names=("mine",)``), lets ferro import the classes only when
    one of them is asked for, or every backend is listed: a program on another backend never imports them.
    """

    @hookimpl
    def ferro_plugin_api_version() -> int:
        return PLUGIN_API_VERSION

    @hookimpl
    def ferro_register_backends() -> list[Backend]:
        out = []
        for target in targets:
            module, _, cls = target.partition(":")
            backend_cls: Any = getattr(importlib.import_module(module), cls)
            out.append(backend_cls())
        return out

    if names:
        setattr(ferro_register_backends, DECLARED, tuple(names))
    return ferro_plugin_api_version, ferro_register_backends
