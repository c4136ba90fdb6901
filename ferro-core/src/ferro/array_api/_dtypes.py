"""The standard's data types, type promotion, ``astype``, ``can_cast``, ``finfo``, ``iinfo``, ``isdtype``.

The dtypes are ferro's own :class:`~ferro.DType` singletons. ferro has no
uint16/uint32/uint64, so the namespace leaves those names out (the standard
allows a library to omit dtypes it does not support) and the unsigned
default is uint8.

Promotion follows the standard's lattice, which on ferro's dtypes agrees with
:func:`ferro.promote_types`; what differs from PyTorch is that 0-d arrays
promote like any other array, and that a Python scalar takes the array's
dtype. :func:`promote` does that once for every binary function, so the
registry ops see operands of one dtype.
"""

from __future__ import annotations

import operator
import sys
from dataclasses import dataclass
from typing import Any

from .._core import dtypes as _d
from .._core.dtypes import DType
from .._core.tensor import Tensor
from .._creation import full

builtins_bool = bool

__all__ = [
    "bool", "int8", "int16", "int32", "int64", "uint8", "float32", "float64", "complex64", "complex128",
    "astype", "can_cast", "finfo", "iinfo", "isdtype", "result_type", "promote", "check_array",
]

bool = _d.bool_
int8, int16, int32, int64, uint8 = _d.int8, _d.int16, _d.int32, _d.int64, _d.uint8
float32, float64, complex64, complex128 = _d.float32, _d.float64, _d.complex64, _d.complex128

#: The dtypes the namespace offers (ferro's float16/bfloat16 are outside the standard).
DTYPES: tuple[DType, ...] = (bool, int8, int16, int32, int64, uint8, float32, float64, complex64, complex128)
_KINDS: dict[str, frozenset[DType]] = {
    "bool": frozenset({bool}),
    "signed integer": frozenset({int8, int16, int32, int64}),
    "unsigned integer": frozenset({uint8}),
    "integral": frozenset({int8, int16, int32, int64, uint8}),
    "real floating": frozenset({float32, float64}),
    "complex floating": frozenset({complex64, complex128}),
    "numeric": frozenset(set(DTYPES) - {bool}),
}
_REAL_OF = {complex64: float32, complex128: float64}
_COMPLEX_OF = {float32: complex64, float64: complex128}


def real_dtype(dtype: DType) -> DType:
    """The real dtype of the same precision (complex64 -> float32)."""
    return _REAL_OF.get(dtype, dtype)


def complex_dtype(dtype: DType) -> DType:
    """The complex dtype of the same precision (float32 -> complex64)."""
    return _COMPLEX_OF.get(dtype, dtype)


def check_array(x: Any, fn: str, name: str = "x") -> Tensor:
    """``x`` if it is a tensor, else a TypeError naming the function and argument."""
    if not isinstance(x, Tensor):
        raise TypeError(f"{fn}: {name} must be an array (ferro.Tensor), got {type(x).__name__}")
    return x


def isdtype(dtype: DType, kind: DType | str | tuple[DType | str, ...]) -> builtins_bool:
    """Whether ``dtype`` is of ``kind``: a dtype, a kind name such as ``'real floating'``, or a tuple of those."""
    if not isinstance(dtype, DType):
        raise TypeError(f"isdtype: expected a dtype, got {dtype!r}")
    if isinstance(kind, tuple):
        return any(isdtype(dtype, k) for k in kind)
    if isinstance(kind, DType):
        return dtype is kind
    if isinstance(kind, str):
        if kind not in _KINDS:
            raise ValueError(f"isdtype: unknown kind {kind!r}; expected one of {sorted(_KINDS)}")
        return dtype in _KINDS[kind]
    raise TypeError(f"isdtype: kind must be a dtype, a kind name or a tuple of those, got {kind!r}")


def _promote_dtypes(a: DType, b: DType) -> DType:
    if (a is bool) != (b is bool):
        raise TypeError(f"no type promotion between {a} and {b} in the array API standard")
    return _d.promote_types(a, b)


_SCALAR_KIND = {builtins_bool: 0, int: 1, float: 2, complex: 3}


def _scalar_dtype(s: Any, dtype: DType | None) -> DType:
    """The dtype a Python scalar takes beside an array of ``dtype`` (or alone)."""
    kind = _SCALAR_KIND.get(type(s))
    if kind is None:
        raise TypeError(f"expected an array or a Python scalar, got {type(s).__name__}")
    if dtype is None:
        return {0: bool, 1: int64, 2: _d.get_default_dtype(), 3: _d.get_default_complex_dtype()}[kind]
    if kind == 0 and dtype is not bool:
        raise TypeError(f"a Python bool does not combine with an array of {dtype}")
    if kind > dtype.category:
        if dtype is bool or kind == 2:
            raise TypeError(f"a Python {type(s).__name__} does not combine with an array of {dtype}")
        return complex_dtype(dtype) if dtype.kind == "f" else _d.get_default_complex_dtype()
    return dtype


def result_type(*arrays_and_dtypes: Any) -> DType:
    """The dtype the standard's promotion gives for arrays, dtypes and Python scalars."""
    out: DType | None = None
    scalars = []
    for a in arrays_and_dtypes:
        if isinstance(a, Tensor):
            a = a.dtype
        if isinstance(a, DType):
            out = a if out is None else _promote_dtypes(out, a)
        elif type(a) in _SCALAR_KIND:
            scalars.append(a)
        else:
            raise TypeError(f"result_type: expected arrays, dtypes or Python scalars, got {type(a).__name__}")
    if out is None and not scalars:
        raise ValueError("result_type needs at least one array or dtype")
    for s in scalars:
        out = _scalar_dtype(s, out) if out is not None else _scalar_dtype(s, None)
    return out  # type: ignore[return-value]


def _cast(x: Tensor, dtype: DType) -> Tensor:
    return x if x.dtype is dtype else x.to(dtype)


def scalar_array(s: Any, dtype: DType, like: Tensor | None) -> Tensor:
    """A 0-d array holding scalar ``s`` with ``dtype`` on ``like``'s device."""
    if dtype.kind in "ui" and not isinstance(s, builtins_bool):
        info = iinfo(dtype)
        if not info.min <= s <= info.max:
            raise OverflowError(f"Python int {s} is out of range of {dtype}")
    return full((), s, dtype=dtype, device=None if like is None else like.device)


def promote(x1: Any, x2: Any, fn: str) -> tuple[Tensor, Tensor]:
    """Both operands as arrays of their promoted dtype (Python scalars take the array's dtype)."""
    if isinstance(x1, Tensor):
        if isinstance(x2, Tensor):
            if x1.dtype is x2.dtype:
                return x1, x2
            dt = _promote_dtypes(x1.dtype, x2.dtype)
            return _cast(x1, dt), _cast(x2, dt)
        dt = _scalar_dtype(x2, x1.dtype)
        return _cast(x1, dt), scalar_array(x2, dt, x1)
    if isinstance(x2, Tensor):
        dt = _scalar_dtype(x1, x2.dtype)
        return scalar_array(x1, dt, x2), _cast(x2, dt)
    raise TypeError(f"{fn}: at least one of x1, x2 must be an array, got {type(x1).__name__} and "
                    f"{type(x2).__name__}")


def can_cast(from_: DType | Tensor, to: DType, /) -> builtins_bool:
    """Whether ``from_`` promotes to ``to`` by the standard's rules (no value-changing cast)."""
    if isinstance(from_, Tensor):
        from_ = from_.dtype
    if not isinstance(from_, DType) or not isinstance(to, DType):
        raise TypeError(f"can_cast: expected dtypes or an array, got {from_!r} and {to!r}")
    try:
        return _promote_dtypes(from_, to) is to
    except TypeError:
        return False


def astype(x: Tensor, dtype: DType, /, *, copy: builtins_bool = True, device: Any = None) -> Tensor:
    """``x`` converted to ``dtype`` (and ``device``): a new array unless ``copy=False`` and nothing changes."""
    check_array(x, "astype")
    if not isinstance(dtype, DType):
        raise TypeError(f"astype: dtype must be a dtype, got {dtype!r}")
    if x.dtype.kind == "c" and dtype.kind != "c":
        raise TypeError(f"astype: casting {x.dtype} to {dtype} would drop the imaginary part; use real() first")
    out = x if device is None else x.to(device)
    if out.dtype is not dtype:
        return out.to(dtype)
    return out.clone() if copy and out is x else out


@dataclass(frozen=True)
class finfo_object:  # noqa: N801  (the standard's name)
    """Machine limits of a floating dtype."""

    bits: int
    eps: float
    max: float
    min: float
    smallest_normal: float
    dtype: DType


@dataclass(frozen=True)
class iinfo_object:  # noqa: N801  (the standard's name)
    """Machine limits of an integer dtype."""

    bits: int
    max: int
    min: int
    dtype: DType


_F32_MAX = (2 - 2.0 ** -23) * 2.0 ** 127
_FINFO = {
    float32: finfo_object(32, 2.0 ** -23, _F32_MAX, -_F32_MAX, 2.0 ** -126, float32),
    float64: finfo_object(64, sys.float_info.epsilon, sys.float_info.max, -sys.float_info.max,
                          sys.float_info.min, float64),
}


def finfo(type: DType | Tensor, /) -> finfo_object:
    """Limits of a floating dtype (complex dtypes give their real part's)."""
    dt = type.dtype if isinstance(type, Tensor) else type
    if not isinstance(dt, DType) or dt.kind not in "fc" or real_dtype(dt) not in _FINFO:
        raise ValueError(f"finfo: expected a floating dtype, got {dt!r}")
    info = _FINFO[real_dtype(dt)]
    return info if dt.kind == "f" else finfo_object(info.bits, info.eps, info.max, info.min, info.smallest_normal,
                                                      real_dtype(dt))


def iinfo(type: DType | Tensor, /) -> iinfo_object:
    """Limits of an integer dtype."""
    dt = type.dtype if isinstance(type, Tensor) else type
    if not isinstance(dt, DType) or dt.kind not in "ui":
        raise ValueError(f"iinfo: expected an integer dtype, got {dt!r}")
    bits = dt.itemsize * 8
    if dt.kind == "u":
        return iinfo_object(bits, 2 ** bits - 1, 0, dt)
    return iinfo_object(bits, 2 ** (bits - 1) - 1, -(2 ** (bits - 1)), dt)


def index(v: Any) -> int:
    """``operator.index`` with the function's name in the error."""
    return operator.index(v)
