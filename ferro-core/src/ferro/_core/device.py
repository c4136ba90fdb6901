"""Devices: ``ferro.device("cpu")``, ``ferro.device("cuda:1")``, ``opencl:0``."""

from __future__ import annotations

from typing import Any

from . import provided

__all__ = ["device"]


class device:  # noqa: N801  (spelled as PyTorch spells it)
    """A device of a backend: a type (the backend's name) and an ordinal.

    Devices are interned, so equal devices are the same object:

    >>> device("cpu") is device("cpu:0")
    True
    """

    __slots__ = ("__weakref__", "_backend", "_checked", "_copies", "_dtypes", "_fast", "_kernels", "_ops", "index",
                 "type")
    _interned: dict[tuple[str, int], device] = {}

    type: str
    index: int
    _ops: dict[str, Any] | None  # op name -> (kernel, dtype table), resolved at binding
    _fast: dict[str, Any] | None  # what elementwise hot paths read: _ops, or empty while a dispatch layer is on
    _kernels: dict[str, Any] | None  # kernel name -> kernel
    _dtypes: frozenset[Any]
    _backend: Any
    _checked: dict[str, Any]  # op name -> (kernel, dtype table, ArgumentCheck): bound off the fast path
    _copies: frozenset[str]  # the view ops whose kernel returns a copy

    def __new__(cls, spec: str | device | None = None, index: int | None = None) -> device:
        if isinstance(spec, device):
            return spec
        if spec is None:
            return provided.current_device()
        if not isinstance(spec, str):
            raise TypeError(f"device() expects a string like 'cpu' or 'cuda:1', got {spec!r}")
        typ, _, idx = spec.strip().partition(":")
        if idx:
            if index is not None:
                raise ValueError(f"device {spec!r} already has an index; do not pass index={index}")
            if not idx.isdigit():
                raise ValueError(f"invalid device string {spec!r}: the ordinal after ':' must be a "
                                 "non-negative integer")
            index = int(idx)
        if not typ or not typ.replace("_", "").isalnum():
            raise ValueError(f"invalid device string {spec!r}: expected 'TYPE' or 'TYPE:N', e.g. 'cuda:1'")
        key = (typ, 0 if index is None else index)
        dev = cls._interned.get(key)
        if dev is None:
            dev = object.__new__(cls)
            dev.type, dev.index = key
            dev._ops = dev._fast = dev._kernels = dev._backend = None
            dev._dtypes = dev._copies = frozenset()
            dev._checked = {}
            cls._interned[key] = dev
        return dev

    def __repr__(self) -> str:
        if self.type == "cpu":
            return "device(type='cpu')"
        return f"device(type='{self.type}', index={self.index})"

    def __str__(self) -> str:
        return "cpu" if self.type == "cpu" else f"{self.type}:{self.index}"

    def __reduce__(self) -> tuple[Any, ...]:
        return (device, (str(self),))

    @property
    def backend(self) -> Any:
        """The loaded backend that owns this device (loads it on first use)."""
        if self._backend is None:
            provided.bind_device(self)
        return self._backend
