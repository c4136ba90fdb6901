"""The standard's ``fft`` extension over :mod:`ferro.fft` (``xp.fft``).

The standard spells ``axis``/``axes`` and ``norm="backward"`` where
``ferro.fft`` (as ``torch.fft``) spells ``dim`` and ``norm=None``; the
transforms themselves are ferro's.
"""

from __future__ import annotations

import types
from collections.abc import Callable, Sequence
from typing import Any, Literal

import ferro.fft as _ff

from .._core.dtypes import DType
from .._core.tensor import Tensor
from ._dtypes import check_array

Norm = Literal["backward", "ortho", "forward"]
_NORMS = ("backward", "ortho", "forward")


def _norm(norm: str, fn: str) -> str:
    if norm not in _NORMS:
        raise ValueError(f"{fn}: norm must be one of {_NORMS}, got {norm!r}")
    return norm


def _one_d(name: str, op: Callable[..., Tensor], doc: str) -> Callable[..., Tensor]:
    def fn(x: Tensor, /, *, n: int | None = None, axis: int = -1, norm: Norm = "backward") -> Tensor:
        return op(check_array(x, name), n=n, dim=axis, norm=_norm(norm, name))
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    return fn


def _n_d(name: str, op: Callable[..., Tensor], doc: str) -> Callable[..., Tensor]:
    def fn(x: Tensor, /, *, s: Sequence[int] | None = None, axes: Sequence[int] | None = None,
           norm: Norm = "backward") -> Tensor:
        check_array(x, name)
        if s is not None and axes is None:
            axes = tuple(range(-len(s), 0))
        return op(x, s=None if s is None else tuple(s), dim=None if axes is None else tuple(axes),
                  norm=_norm(norm, name))
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    return fn


def _freq(name: str, op: Callable[..., Tensor], doc: str) -> Callable[..., Tensor]:
    def fn(n: int, /, *, d: float = 1.0, dtype: DType | None = None, device: Any = None) -> Tensor:
        return op(n, d, dtype=dtype, device=device)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    return fn


def _shift(name: str, op: Callable[..., Tensor], doc: str) -> Callable[..., Tensor]:
    def fn(x: Tensor, /, *, axes: int | Sequence[int] | None = None) -> Tensor:
        return op(check_array(x, name), dim=axes if axes is None or isinstance(axes, int) else tuple(axes))
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    return fn


_ROWS: list[tuple[Callable[..., Callable[..., Tensor]], str, str]] = [
    (_one_d, "fft", "The 1-d discrete Fourier transform along ``axis`` (``n``: crop or zero-pad to this length)."),
    (_one_d, "ifft", "The inverse of :func:`fft`."),
    (_one_d, "rfft", "The 1-d transform of a real array: the ``n // 2 + 1`` non-negative frequencies."),
    (_one_d, "irfft", "The inverse of :func:`rfft`: a real array of length ``n`` (default ``2 * (m - 1)``)."),
    (_one_d, "hfft", "The transform of a Hermitian-symmetric signal given by its first half: a real spectrum."),
    (_one_d, "ihfft", "The inverse of :func:`hfft`."),
    (_n_d, "fftn", "The n-d discrete Fourier transform over ``axes`` (lengths ``s``)."),
    (_n_d, "ifftn", "The inverse of :func:`fftn`."),
    (_n_d, "rfftn", "The n-d transform of a real array (the last axis halved)."),
    (_n_d, "irfftn", "The inverse of :func:`rfftn`."),
    (_freq, "fftfreq", "The sample frequencies of an ``n``-point transform with sample spacing ``d``."),
    (_freq, "rfftfreq", "The non-negative sample frequencies of an ``n``-point real transform."),
    (_shift, "fftshift", "The zero frequency moved to the middle of ``axes`` (all if None)."),
    (_shift, "ifftshift", "The inverse of :func:`fftshift`."),
]

#: The ``fft`` extension, ``xp.fft``.
fft = types.ModuleType("ferro.array_api.fft", "The array API standard's fft extension over ferro.fft.")
for _make, _name, _doc in _ROWS:
    setattr(fft, _name, _make(_name, getattr(_ff, _name), _doc))
fft.__all__ = [name for _, name, _ in _ROWS]  # type: ignore[attr-defined]

