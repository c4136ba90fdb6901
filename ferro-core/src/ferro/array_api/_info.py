"""``__array_namespace_info__``: devices, default dtypes, dtypes per device and capabilities."""

from __future__ import annotations

from typing import Any

from .. import _api as ferro
from .._core import dtypes as _d
from .._core.dtypes import DType
from ._dtypes import _KINDS, DTYPES

_NAMES = {d: ("bool" if d is _d.bool_ else d.name) for d in DTYPES}


class Info:
    """The inspection namespace the standard's ``__array_namespace_info__()`` returns."""

    __module__ = "ferro.array_api"

    def capabilities(self) -> dict[str, Any]:
        """What the namespace can do: boolean indexing and data-dependent shapes yes; ``max dimensions`` none."""
        return {"boolean indexing": True, "data-dependent shapes": True, "max dimensions": None}

    def default_device(self) -> ferro.device:
        """The device arrays are made on when no ``device=`` is given (``FERRO_BACKEND`` / ``set_backend``)."""
        from ..backends import current_device
        return current_device()

    def devices(self) -> list[ferro.device]:
        """Every device of every available backend."""
        out = []
        for name in ferro.backends.available():
            b = ferro.backends.get(name)
            out.extend(ferro.device(name, i) for i in range(b.device_count()))
        return out

    def default_dtypes(self, *, device: Any = None) -> dict[str, DType]:
        """The default dtypes: ferro's default float (float32 unless changed), int64 for integers and indices."""
        return {"real floating": _d.get_default_dtype(), "complex floating": _d.get_default_complex_dtype(),
                "integral": _d.int64, "indexing": _d.int64}

    def dtypes(self, *, device: Any = None, kind: str | tuple[str, ...] | None = None) -> dict[str, DType]:
        """The standard's dtypes ``device`` supports (e.g. no float64 without ``cl_khr_fp64``), by ``kind``."""
        dev = ferro.device(device) if device is not None else self.default_device()
        have = dev.backend and dev._dtypes
        kinds = (kind,) if isinstance(kind, str) or kind is None else kind
        want: set[DType] = set()
        for k in kinds:
            if k is None:
                want |= set(DTYPES)
            elif k in _KINDS:
                want |= _KINDS[k]
            else:
                raise ValueError(f"dtypes: unknown kind {k!r}; expected one of {sorted(_KINDS)}")
        return {_NAMES[d]: d for d in DTYPES if d in want and d in have}


_INFO = Info()


def __array_namespace_info__() -> Info:  # noqa: N807  (the standard's name)
    """The namespace's inspection object (devices, dtypes, capabilities)."""
    return _INFO
