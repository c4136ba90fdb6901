"""The rest of ``nn.functional``'s random layers, written in ops: ``dropout1d`` / ``dropout3d``,
``alpha_dropout`` / ``feature_alpha_dropout`` (which keep SELU's mean and variance), ``rrelu``; and the
deterministic ``channel_shuffle``, ``adaptive_avg_pool1d`` and ``pdist``."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from .._core.records import register_composites
from .._core.tensor import Tensor
from .._creation import rand
from ..errors import ShapeError
from ._rules import check_rule
from .conv import FUNCTIONS as _CONV
from .elementwise import where

__all__ = ["FUNCTIONS"]

_SELU_ALPHA, _SELU_SCALE = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946


def _check(name: str, input: Any, p: float) -> None:
    """A tensor of a dtype the op takes, and a probability."""
    if not isinstance(input, Tensor):
        raise TypeError(f"{name}(): argument 'input' must be a Tensor, not {type(input).__name__}")
    check_rule(name, input)
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def _channel_mask(input: Tensor, n: int, p: float, name: str) -> Tensor:
    if input.ndim not in (n + 1, n + 2):
        raise ShapeError(f"{name}: expected {n + 1}D or {n + 2}D input, got {input.ndim}D input of shape "
                         f"{list(input.shape)}")
    lead = input.shape[:input.ndim - n]
    return rand(*lead, *([1] * n), dtype=input.dtype, device=input.device) >= p


def dropout1d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero whole channels of (N, C, L) or (C, L) with probability ``p``, scaling the rest by ``1 / (1 - p)``."""
    _check("dropout1d", input, p)
    if not training or p == 0.0:
        return input
    return input * 0 if p == 1.0 else input * _channel_mask(input, 1, p, "dropout1d") / (1.0 - p)


def dropout3d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero whole channels of (N, C, D, H, W) or (C, D, H, W) with probability ``p``."""
    _check("dropout3d", input, p)
    if not training or p == 0.0:
        return input
    return input * 0 if p == 1.0 else input * _channel_mask(input, 3, p, "dropout3d") / (1.0 - p)


def _alpha(input: Tensor, keep: Tensor, p: float) -> Tensor:
    """Set dropped values to SELU's negative saturation and rescale so mean and variance stay (PyTorch's)."""
    alpha = -_SELU_ALPHA * _SELU_SCALE
    a = 1.0 / math.sqrt((alpha * alpha * p + 1) * (1 - p))
    b = -a * alpha * p
    return where(keep, input, alpha) * a + b


def alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False, inplace: bool = False) -> Tensor:
    """Dropout for SELU networks: dropped elements take SELU's saturation value, then an affine map keeps the
    input's mean and variance."""
    _check("alpha_dropout", input, p)
    if not training or p == 0.0:
        return input
    if p == 1.0:
        return input * 0
    return _alpha(input, rand(*input.shape, dtype=input.dtype, device=input.device) >= p, p)


def feature_alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False, inplace: bool = False) -> Tensor:
    """``alpha_dropout`` of whole channels (dims after the first two are one feature)."""
    _check("feature_alpha_dropout", input, p)
    if not training or p == 0.0:
        return input
    if p == 1.0:
        return input * 0
    shape = (*input.shape[:2], *([1] * (input.ndim - 2)))
    return _alpha(input, rand(*shape, dtype=input.dtype, device=input.device) >= p, p)


def rrelu(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False,
          inplace: bool = False) -> Tensor:
    """Leaky ReLU whose negative slope is drawn uniformly from ``[lower, upper]`` per element in training, and
    is ``(lower + upper) / 2`` in evaluation."""
    check_rule("rrelu", input)
    if training:
        slope = rand(*input.shape, dtype=input.dtype, device=input.device) * (upper - lower) + lower
    else:
        slope = (lower + upper) / 2
    return where(input >= 0, input, input * slope)


def channel_shuffle(input: Tensor, groups: int) -> Tensor:
    """Interleave the channels (dim 1) of ``groups`` groups."""
    if input.ndim < 3:
        raise ShapeError(f"channel_shuffle expects input to have at least 3 dimensions, but got input with "
                         f"{input.ndim} dimension(s)")
    if groups <= 0:
        raise ValueError(f"Number of groups to divide channels in must be positive. Value of groups:{groups}")
    n, c = input.shape[0], input.shape[1]
    if c % groups:
        raise ShapeError(f"Number of channels must be divisible by groups. Got {c} channels and {groups} groups.")
    rest = tuple(input.shape[2:])
    return input.reshape(n, groups, c // groups, *rest).transpose(1, 2).reshape(n, c, *rest)


def adaptive_avg_pool1d(input: Tensor, output_size: Any) -> Tensor:
    """Average pooling of (N, C, L) or (C, L) to length ``output_size``, with PyTorch's window bounds."""
    if input.ndim not in (2, 3):
        raise ShapeError(f"adaptive_avg_pool1d: expected a 2-D or 3-D input, got shape {list(input.shape)}")
    size = output_size[0] if isinstance(output_size, (tuple, list)) else output_size
    return _CONV["adaptive_avg_pool2d"](input.unsqueeze(-2), (1, size)).squeeze(-2)


def pdist(input: Tensor, p: float = 2) -> Tensor:
    """The ``p``-norm distances between every pair of rows ``i < j`` of an (N, M) input, row by row."""
    check_rule("pdist", input)
    if input.ndim != 2:
        raise ShapeError(f"pdist only supports 2D tensors, got: {input.ndim}D")
    n = input.shape[0]
    pairs_i = [i for i in range(n) for _ in range(i + 1, n)]
    pairs_j = [j for i in range(n) for j in range(i + 1, n)]
    if not pairs_i:
        return input.new_zeros(0)
    idx_i, idx_j = input.new_tensor(pairs_i).long(), input.new_tensor(pairs_j).long()
    return (input[idx_i] - input[idx_j]).norm(p, dim=-1)


#: (name, function, ops it uses)
_ROWS: list[tuple[str, Callable[..., Any], tuple[str, ...]]] = [
    ("dropout1d", dropout1d, ("rand", "ge", "mul", "div")), ("dropout3d", dropout3d, ("rand", "ge", "mul", "div")),
    ("alpha_dropout", alpha_dropout, ("rand", "ge", "where", "mul", "add")),
    ("feature_alpha_dropout", feature_alpha_dropout, ("rand", "ge", "where", "mul", "add")),
    ("rrelu", rrelu, ("rand", "mul", "add", "ge", "where")),
    ("channel_shuffle", channel_shuffle, ("reshape", "permute")),
    ("adaptive_avg_pool1d", adaptive_avg_pool1d, ("adaptive_avg_pool2d",)),
    ("pdist", pdist, ("getitem", "sub", "norm")),
]

#: The random layers and pdist take real floating dtypes; the shuffles and pools any.
_FLOATING = ("dropout1d", "dropout3d", "alpha_dropout", "feature_alpha_dropout", "rrelu", "pdist")
FUNCTIONS: dict[str, Callable[..., Any]] = {
    **register_composites("nn", [r for r in _ROWS if r[0] in _FLOATING], dtype_rule="real_floating"),
    **register_composites("nn", [r for r in _ROWS if r[0] not in _FLOATING]),
}
