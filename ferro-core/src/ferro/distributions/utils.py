"""Helpers shared by the distributions, as ``torch.distributions.utils``: broadcasting parameters, probs and
logits, summing event dims, packing lower triangles."""

from __future__ import annotations

from functools import cached_property
from numbers import Number
from typing import Any

from .. import _api as api
from .._api import Tensor
from .._grids import tril_indices

__all__ = ["broadcast_all", "clamp_probs", "euler_constant", "lazy_property", "logits_to_probs",
           "probs_to_logits", "sum_rightmost", "tril_matrix_to_vec", "vec_to_tril_matrix"]

#: The Euler-Mascheroni constant.
euler_constant = 0.57721566490153286060

#: A property computed once on first access (a parameter derived from the one given: ``probs`` from ``logits``).
lazy_property = cached_property


def broadcast_all(*values: Any) -> tuple[Tensor, ...]:
    """The values as tensors of one broadcast shape: numbers take the dtype and device of the first tensor
    (the default float dtype without one), as ``torch.distributions.utils.broadcast_all``."""
    if not all(isinstance(v, (Tensor, Number)) for v in values):
        raise ValueError("Input arguments must all be instances of numbers.Number or ferro.Tensor.")
    first = next((v for v in values if isinstance(v, Tensor)), None)
    dtype = first.dtype if first is not None else api.get_default_dtype()
    device = first.device if first is not None else None
    tensors = [v if isinstance(v, Tensor) else api.tensor(float(v), dtype=dtype, device=device) for v in values]
    shape = api.broadcast_shapes(*(t.shape for t in tensors))
    return tuple(t if t.shape == shape else t.expand(shape) for t in tensors)


def sum_rightmost(value: Tensor, dim: int) -> Tensor:
    """``value`` summed over its ``dim`` rightmost dims."""
    return value.reshape((*tuple(value.shape[:value.ndim - dim]), -1)).sum(-1) if dim > 0 else value


_sum_rightmost = sum_rightmost  # PyTorch's (private) name, which libraries built on it import


def clamp_probs(probs: Tensor) -> Tensor:
    """``probs`` kept inside ``[eps, 1 - eps]`` of their dtype, so that their logits are finite."""
    eps = api.finfo(probs.dtype).eps
    return probs.clamp(min=eps, max=1 - eps)


def logits_to_probs(logits: Tensor, is_binary: bool = False) -> Tensor:
    """Probabilities from logits: ``sigmoid`` (binary) or ``softmax`` over the last dim."""
    return logits.sigmoid() if is_binary else logits.softmax(-1)


def probs_to_logits(probs: Tensor, is_binary: bool = False) -> Tensor:
    """Logits from probabilities: ``log(p / (1 - p))`` (binary) or ``log(p)``."""
    p = clamp_probs(probs)
    return p.log() - (-p).log1p() if is_binary else p.log()


def tril_matrix_to_vec(mat: Tensor, diag: int = 0) -> Tensor:
    """The lower triangle (below diagonal ``diag``) of the last two dims, row by row, as a vector."""
    n = mat.shape[-1]
    if diag < -n or diag >= n:
        raise ValueError(f"diag ({diag}) provided is outside [{-n}, {n - 1}].")
    rows, cols = tril_indices(n, n, offset=diag, device=mat.device)
    return mat[..., rows, cols]


def vec_to_tril_matrix(vec: Tensor, diag: int = 0) -> Tensor:
    """The inverse of :func:`tril_matrix_to_vec`: a square matrix whose lower triangle is ``vec``."""
    n = (-(1 + 2 * diag) + ((1 + 2 * diag) ** 2 + 8 * vec.shape[-1] + 4 * abs(diag) * (diag + 1)) ** 0.5) / 2
    eps = api.finfo(vec.dtype).eps
    if not (abs(n - round(n)) < eps):
        raise ValueError(f"The size of last dimension is {vec.shape[-1]} which cannot be expressed as "
                         "the lower triangular part of a square D x D matrix.")
    n = round(n)
    rows, cols = tril_indices(n, n, offset=diag, device=vec.device)
    out = api.zeros((*tuple(vec.shape[:-1]), n, n), dtype=vec.dtype, device=vec.device)
    out[..., rows, cols] = vec
    return out
