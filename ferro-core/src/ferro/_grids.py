"""Tensors PyTorch builds from a few numbers: ``tril_indices`` / ``triu_indices``, ``logspace``, the window
functions (``hann_window``, ``hamming_window``, ``blackman_window``, ``bartlett_window``, ``kaiser_window``)
and ``scalar_tensor``; written with ferro's creation functions and ops, so they run on every backend.

>>> import ferro
>>> ferro.triu_indices(3, 3).tolist()
[[0, 0, 0, 1, 1, 2], [0, 1, 2, 1, 2, 2]]
"""

from __future__ import annotations

import math
from typing import Any

from ._api import Tensor, arange, float32, get_default_dtype, int64, linspace, tensor

__all__ = ["tril_indices", "triu_indices", "logspace", "hann_window", "hamming_window", "blackman_window",
           "bartlett_window", "kaiser_window", "scalar_tensor"]


def _triangle(row: int, col: int, offset: int, lower: bool) -> list[list[int]]:
    rows, cols = [], []
    for i in range(row):
        for j in range(col):
            if (j - i <= offset) if lower else (j - i >= offset):
                rows.append(i)
                cols.append(j)
    return [rows, cols]


def tril_indices(row: int, col: int, offset: int = 0, *, dtype: Any = int64, device: Any = None) -> Tensor:
    """The (2, N) row and column indices of the lower triangle of a ``row`` x ``col`` matrix, row by row."""
    return tensor(_triangle(row, col, offset, True), dtype=dtype, device=device).reshape(2, -1)


def triu_indices(row: int, col: int, offset: int = 0, *, dtype: Any = int64, device: Any = None) -> Tensor:
    """The (2, N) row and column indices of the upper triangle of a ``row`` x ``col`` matrix, row by row."""
    return tensor(_triangle(row, col, offset, False), dtype=dtype, device=device).reshape(2, -1)


def logspace(start: float, end: float, steps: int, base: float = 10.0, *, dtype: Any = None, device: Any = None,
             requires_grad: bool = False) -> Tensor:
    """``base ** linspace(start, end, steps)``."""
    exps = linspace(start, end, steps, dtype=float32 if dtype is None or not dtype.is_floating_point else dtype,
                    device=device)
    out = (base ** exps.to(get_default_dtype() if dtype is None else exps.dtype))
    out = out if dtype is None else out.to(dtype)
    return out.requires_grad_(True) if requires_grad else out


def _window(n: int, periodic: bool, dtype: Any, device: Any) -> tuple[Tensor, int]:
    """The sample positions 0..n-1 and the denominator (``n`` periodic, ``n - 1`` symmetric)."""
    dtype = dtype or get_default_dtype()
    if not dtype.is_floating_point:
        raise ValueError(f"window functions expect a floating point dtype, got {dtype}")
    if n < 0:
        raise ValueError(f"window_length must be non-negative, got {n}")
    return arange(n, dtype=dtype, device=device), (n if periodic else n - 1)


def _cosine_sum(n: int, periodic: bool, coeffs: tuple[float, ...], dtype: Any, device: Any,
                requires_grad: bool) -> Tensor:
    k, m = _window(n, periodic, dtype, device)
    if n <= 1:
        out = k * 0 + 1
    else:
        out = k * 0
        for i, a in enumerate(coeffs):
            out = out + ((-1) ** i) * a * (k * (2 * math.pi * i / m)).cos()
    return out.requires_grad_(True) if requires_grad else out


def hann_window(window_length: int, periodic: bool = True, *, dtype: Any = None, device: Any = None,
                requires_grad: bool = False) -> Tensor:
    """``0.5 - 0.5 cos(2 pi k / N)``."""
    return _cosine_sum(window_length, periodic, (0.5, 0.5), dtype, device, requires_grad)


def hamming_window(window_length: int, periodic: bool = True, alpha: float = 0.54, beta: float = 0.46, *,
                   dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """``alpha - beta cos(2 pi k / N)``."""
    return _cosine_sum(window_length, periodic, (alpha, beta), dtype, device, requires_grad)


def blackman_window(window_length: int, periodic: bool = True, *, dtype: Any = None, device: Any = None,
                    requires_grad: bool = False) -> Tensor:
    """``0.42 - 0.5 cos(2 pi k / N) + 0.08 cos(4 pi k / N)``."""
    return _cosine_sum(window_length, periodic, (0.42, 0.5, 0.08), dtype, device, requires_grad)


def bartlett_window(window_length: int, periodic: bool = True, *, dtype: Any = None, device: Any = None,
                    requires_grad: bool = False) -> Tensor:
    """The triangular window ``1 - |2k / N - 1|``."""
    k, m = _window(window_length, periodic, dtype, device)
    out = k * 0 + 1 if window_length <= 1 else 1 - (k * (2 / m) - 1).abs()
    return out.requires_grad_(True) if requires_grad else out


def kaiser_window(window_length: int, periodic: bool = True, beta: float = 12.0, *, dtype: Any = None,
                  device: Any = None, requires_grad: bool = False) -> Tensor:
    """``I0(beta sqrt(1 - (2k / N - 1)^2)) / I0(beta)``, with I0 the modified Bessel function of order 0."""
    k, m = _window(window_length, periodic, dtype, device)
    if window_length <= 1:
        return k * 0 + 1
    r = (k * (2 / m) - 1).clamp(-1, 1)
    out = _i0(beta * (1 - r * r).sqrt()) / _i0(tensor(beta, dtype=k.dtype, device=k.device))
    return out.requires_grad_(True) if requires_grad else out


def _i0(x: Tensor) -> Tensor:
    """I0 by its power series ``sum (x^2/4)^j / (j!)^2`` (enough terms for |x| up to ~50)."""
    q = x * x / 4
    term, total = q * 0 + 1, q * 0 + 1
    for j in range(1, 120):
        term = term * q / (j * j)
        total = total + term
    return total


def scalar_tensor(s: Any, *, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """A 0-d tensor of ``s`` in the default float dtype (or ``dtype``), as ``torch.scalar_tensor``."""
    out = tensor(s, dtype=dtype or get_default_dtype(), device=device)
    return out.requires_grad_(True) if requires_grad else out

