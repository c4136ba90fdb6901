"""``ferro.finfo`` / ``ferro.iinfo``: the limits of the floating and integer dtypes, as PyTorch gives them.

Computed from each format's bit layout, so no array library is imported:

>>> from ferro._core.numeric_info import finfo, iinfo
>>> from ferro._core.dtypes import float16, int8
>>> finfo(float16).max, finfo(float16).eps, iinfo(int8).min
(65504.0, 0.0009765625, -128)
"""

from __future__ import annotations

import math

from .dtypes import DType, as_dtype, bfloat16, complex64, complex128, float16, float32, float64, get_default_dtype

__all__ = ["finfo", "iinfo"]

#: floating dtype -> (bits, mantissa bits, exponent bits) of its format.
_FORMATS: dict[DType, tuple[int, int, int]] = {
    float16: (16, 10, 5), bfloat16: (16, 7, 8), float32: (32, 23, 8), float64: (64, 52, 11),
}
_REAL = {complex64: float32, complex128: float64}


class finfo:  # noqa: N801  (spelled as PyTorch spells it)
    """The limits of a floating dtype (a complex dtype gives its real part's); the default float dtype
    without an argument. Attributes: ``bits``, ``eps``, ``max``, ``min``, ``tiny`` (= ``smallest_normal``),
    ``resolution``, ``dtype`` (its name, as PyTorch)."""

    __slots__ = ("bits", "dtype", "eps", "max", "min", "resolution", "smallest_normal", "tiny")

    def __init__(self, type: DType | None = None) -> None:
        dt = get_default_dtype() if type is None else as_dtype(type, "finfo")
        dt = _REAL.get(dt, dt)
        if dt not in _FORMATS:
            raise TypeError(f"ferro.finfo() requires a floating point input type, got {dt}; use ferro.iinfo for "
                            "integer types")
        self.bits, mantissa, exponent = _FORMATS[dt]
        self.eps = 2.0 ** -mantissa
        top = 2 ** (exponent - 1) - 1
        self.max = (2.0 - self.eps) * 2.0 ** top
        self.min = -self.max
        self.tiny = self.smallest_normal = 2.0 ** (1 - top)
        self.resolution = 10.0 ** -math.floor(mantissa * math.log10(2))
        self.dtype = dt.name

    def __repr__(self) -> str:
        return (f"finfo(resolution={self.resolution:g}, min={self.min:g}, max={self.max:g}, eps={self.eps:g}, "
                f"smallest_normal={self.smallest_normal:g}, tiny={self.tiny:g}, dtype={self.dtype})")


class iinfo:  # noqa: N801
    """The limits of an integer dtype: ``bits``, ``min``, ``max``, ``dtype`` (its name)."""

    __slots__ = ("bits", "dtype", "max", "min")

    def __init__(self, type: DType) -> None:
        dt = as_dtype(type, "iinfo")
        if dt is None or dt.kind not in "ui":
            raise TypeError(f"ferro.iinfo() requires an integer input type, got {dt}; use ferro.finfo for "
                            "floating types")
        self.bits = dt.itemsize * 8
        self.min = 0 if dt.kind == "u" else -(2 ** (self.bits - 1))
        self.max = 2 ** self.bits - 1 if dt.kind == "u" else 2 ** (self.bits - 1) - 1
        self.dtype = dt.name

    def __repr__(self) -> str:
        return f"iinfo(min={self.min}, max={self.max}, dtype={self.dtype})"
