"""``ferro.backends.explain``: what runs op X at dtype D on device V, and why.

The capability queries (``Backend.supports``, ``Backend.capabilities``,
``ferro ops``) are this module's answers reduced to yes / no; the reasoning
itself is ``ferro.backends._resolve``, over the device's bound kernel table.

>>> import ferro
>>> r = ferro.backends.explain("softmax", ferro.float32, "cpu")
>>> r.route, [p.op for p in r.parts]
('decomposition', ['amax', 'isfinite', 'where', 'sub', 'exp', 'sum', 'div'])
>>> ferro.backends.explain("add", "int64", "cpu").route
'kernel'
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from typing import Any

from .._core.device import device as device_cls
from .._core.dtypes import DType, all_dtypes, by_name
from .._core.records import REGISTRY
from . import _registry
from ._resolve import DeviceFacts, Resolution, facts_of, resolve

__all__ = ["explain", "explain_table", "op_names", "device_facts", "Resolution"]


def _plugin_of(kernel: Any) -> str:
    """The name of the plugin whose module defines ``kernel`` (``"a plugin"`` when it cannot be told)."""
    module = getattr(kernel, "__module__", "") or ""
    pm = _registry._state.pm
    best, found = "a plugin", -1
    for name, plugin in (pm.list_name_plugin() if pm is not None and module else []):
        own = getattr(plugin, "__name__", type(plugin).__module__) or ""
        parts = own.split(".")
        # the plugin module that shares the longest dotted prefix with the kernel's module
        shared = next((i for i in range(len(parts), 0, -1) if module.split(".")[:i] == parts[:i]), 0)
        if shared > found and shared:
            best, found = name, shared
    return best


def device_facts(dev: device_cls, fallback: bool = False) -> DeviceFacts:
    """What the resolver needs of a device (binding it first), with the plugin of each overridden kernel."""
    backend = dev.backend
    overrides = _registry._state.overrides.get(backend.name, {})
    return facts_of(dev, {k: _plugin_of(v) for k, v in overrides.items()}, fallback)


def op_names() -> frozenset[str]:
    """The names of every registered op."""
    return frozenset(REGISTRY)


def explain_table(kernels: Iterable[str], dtype: DType, *, dtypes: Iterable[DType] = all_dtypes,
                  refuses: Callable[[str, DType], str | None] | None = None,
                  device: str = "(a kernel table)") -> dict[str, Resolution]:
    """How every op defined at input ``dtype`` would run on a device whose table has ``kernels`` and whose
    dtypes are ``dtypes``, with ``refuses(kernel, dtype)`` -> why not (or None) as the per-kernel check: the
    resolver without a bound device, for a backend working out its claims (ferro-cuda's bfloat16)."""
    facts = DeviceFacts(device, device, frozenset(kernels), frozenset(dtypes), kernel_refusal=refuses)
    memo: dict[tuple[str, DType], Resolution] = {}
    return {name: resolve(name, dtype, facts, memo) for name, op in REGISTRY.items() if dtype in op.table}


def explain(op: str, dtype: DType | str, device: str | device_cls | None = None) -> Resolution:
    """What runs op ``op`` at input ``dtype`` on ``device`` (default: the current device), and why.

    The answer's ``route`` is ``"kernel"`` (naming the kernels and the backend),
    ``"override"`` (a plugin's kernel), ``"decomposition"`` (with each part
    resolved in turn), ``"fallback"`` (``FERRO_FALLBACK=cpu``) or
    ``"unsupported"`` with the ``reason``; ``print()`` it for the whole tree.
    """
    if isinstance(dtype, str):
        try:
            dtype = by_name[dtype]
        except KeyError:
            names = ", ".join(d.name for d in all_dtypes)
            raise ValueError(f"explain: unknown dtype {dtype!r}; expected one of {names}") from None
    if op not in REGISTRY:
        raise KeyError(f"explain: no op named '{op}' in the registry")
    dev = device_cls(device)
    backend = _registry.get_backend(dev.type)
    avail = backend.availability()
    if not avail:
        return Resolution(op, dtype, str(dev), "unsupported", reason=f"backend '{backend.name}' is not available: "
                          f"{avail.reason}")
    fallback = os.environ.get("FERRO_FALLBACK", "").strip().lower() == "cpu"  # as dispatch reads it
    return resolve(op, dtype, device_facts(dev, fallback))
