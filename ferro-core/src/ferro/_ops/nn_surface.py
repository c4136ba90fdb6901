"""The rest of ``nn.functional``'s everyday losses and activations, written in ops: ``softmin``, ``hardshrink``,
``softshrink``, ``soft_margin_loss``, ``multilabel_soft_margin_loss``, ``hinge_embedding_loss``,
``poisson_nll_loss``, ``gaussian_nll_loss``, ``triplet_margin_loss``, ``multi_margin_loss``,
``pixel_shuffle`` / ``pixel_unshuffle``, ``prelu``, ``gumbel_softmax``, ``multilabel_margin_loss``,
``triplet_margin_with_distance_loss``, ``linear_cross_entropy``. Formulas and reductions as PyTorch's."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from .._core.records import register_composites
from .._core.tensor import Tensor
from .._creation import arange, rand
from ..errors import DTypeError, ShapeError
from ._rules import check_rule
from .elementwise import where
from .nn import _reduce, cross_entropy, linear, pairwise_distance

__all__ = ["FUNCTIONS"]


def softmin(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype: Any = None) -> Tensor:
    """``softmax(-input)`` along ``dim`` (PyTorch's implicit dim when None: 0 for 0-, 1- and 3-D, else 1)."""
    check_rule("softmin", input)
    if dim is None:
        dim = 0 if input.ndim in (0, 1, 3) else 1
    return (-input).softmax(dim, dtype=dtype) if dtype is not None else (-input).softmax(dim)


def hardshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """``x`` where ``|x| > lambd``, else 0."""
    check_rule("hardshrink", input)
    return where(input.abs() > lambd, input, 0.0)


def softshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """``x - lambd`` above ``lambd``, ``x + lambd`` below ``-lambd``, else 0."""
    check_rule("softshrink", input)
    if lambd < 0:
        raise ValueError(f"softshrink: lambda must be greater or equal to 0, but found to be {lambd}")
    return where(input > lambd, input - lambd, where(input < -lambd, input + lambd, 0.0))


def soft_margin_loss(input: Tensor, target: Tensor, size_average: Any = None, reduce: Any = None,
                     reduction: str = "mean") -> Tensor:
    """``log(1 + exp(-target * input))`` (targets 1 or -1)."""
    check_rule("soft_margin_loss", input)
    _same_shape("soft_margin_loss", input, target)
    return _reduce((-target * input).exp().log1p(), reduction)


def multilabel_soft_margin_loss(input: Tensor, target: Tensor, weight: Tensor | None = None, size_average: Any = None,
                                reduce: Any = None, reduction: str = "mean") -> Tensor:
    """Per sample, the mean over classes of the binary cross-entropy of ``sigmoid(input)`` with 0/1 targets."""
    check_rule("multilabel_soft_margin_loss", input)
    _same_shape("multilabel_soft_margin_loss", input, target)
    loss = -(target * input.sigmoid().log() + (1 - target) * (-input).sigmoid().log())
    if weight is not None:
        loss = loss * weight
    return _reduce(loss.mean(-1), reduction)


def hinge_embedding_loss(input: Tensor, target: Tensor, margin: float = 1.0, size_average: Any = None,
                         reduce: Any = None, reduction: str = "mean") -> Tensor:
    """``input`` where the target is 1, ``max(0, margin - input)`` where it is -1."""
    check_rule("hinge_embedding_loss", input)
    margin_part = (margin - input).clamp_min(0.0)
    loss = where(target == 1, input, 0.0) + where(target == -1, margin_part, 0.0)
    return _reduce(loss, reduction)


def poisson_nll_loss(input: Tensor, target: Tensor, log_input: bool = True, full: bool = False,
                     size_average: Any = None, eps: float = 1e-8, reduce: Any = None,
                     reduction: str = "mean") -> Tensor:
    """The negative log-likelihood of ``target`` under a Poisson of rate ``input`` (``exp(input)`` with
    ``log_input``); ``full`` adds Stirling's term for targets above 1."""
    check_rule("poisson_nll_loss", input)
    loss = input.exp() - target * input if log_input else input - target * (input + eps).log()
    if full:
        safe = where(target > 1, target, 1.0)
        stirling = safe * safe.log() - safe + 0.5 * (2 * math.pi * safe).log()
        loss = loss + where(target > 1, stirling, 0.0)
    return _reduce(loss, reduction)


def gaussian_nll_loss(input: Tensor, target: Tensor, var: Tensor | float, full: bool = False, eps: float = 1e-6,
                      reduction: str = "mean") -> Tensor:
    """``0.5 * (log(var) + (input - target)^2 / var)`` (+ ``0.5 log(2 pi)`` with ``full``), ``var`` clamped at
    ``eps`` (without gradient through the clamp, as PyTorch)."""
    check_rule("gaussian_nll_loss", input)
    if not isinstance(var, Tensor):
        if var < 0:
            raise ValueError("var has negative entry/entries")
        var = input.new_full((), float(var))
    elif bool((var < 0).any()):
        raise ValueError("var has negative entry/entries")
    if var.ndim == input.ndim - 1 or (var.ndim == input.ndim and var.shape[-1] == 1 and input.shape[-1] != 1):
        var = var.unsqueeze(-1) if var.ndim == input.ndim - 1 else var
    var = var + (var.detach().clamp(min=eps) - var.detach())  # clamp with the identity's gradient
    loss = 0.5 * (var.log() + (input - target) ** 2 / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction)


def triplet_margin_loss(anchor: Tensor, positive: Tensor, negative: Tensor, margin: float = 1.0, p: float = 2,
                        eps: float = 1e-6, swap: bool = False, size_average: Any = None, reduce: Any = None,
                        reduction: str = "mean") -> Tensor:
    """``max(d(a, p) - d(a, n) + margin, 0)`` with the ``p``-norm distance (``swap``: the smaller of
    ``d(a, n)`` and ``d(p, n)``)."""
    check_rule("triplet_margin_loss", anchor)
    d_pos = pairwise_distance(anchor, positive, p, eps)
    d_neg = pairwise_distance(anchor, negative, p, eps)
    if swap:
        d_neg = d_neg.minimum(pairwise_distance(positive, negative, p, eps))
    return _reduce((d_pos - d_neg + margin).clamp_min(0.0), reduction)


def multi_margin_loss(input: Tensor, target: Tensor, p: int = 1, margin: float = 1.0, weight: Tensor | None = None,
                      size_average: Any = None, reduce: Any = None, reduction: str = "mean") -> Tensor:
    """Per sample, the mean over the other classes ``i`` of ``max(0, margin - x[y] + x[i])^p`` (p 1 or 2)."""
    check_rule("multi_margin_loss", input)
    if p not in (1, 2):
        raise ValueError("only p == 1 and p == 2 supported")
    x = input if input.ndim == 2 else input.reshape(1, -1)
    y = target.reshape(-1, 1)
    picked = x.gather(1, y)
    terms = (margin - picked + x).clamp_min(0.0)
    if p == 2:
        terms = terms * terms
    if weight is not None:
        terms = terms * weight.gather(0, y.reshape(-1)).reshape(-1, 1)
    others = x.new_ones(x.shape).scatter(1, y, 0.0)
    loss = (terms * others).sum(1) / x.shape[1]
    return _reduce(loss if input.ndim == 2 else loss.reshape(()), reduction)


def pixel_shuffle(input: Tensor, upscale_factor: int) -> Tensor:
    """(*, C r^2, H, W) to (*, C, H r, W r)."""
    r = upscale_factor
    *lead, c, h, w = input.shape
    if c % (r * r):
        raise ShapeError(f"pixel_shuffle expects its input's 'channel' dimension to be divisible by the square of "
                         f"upscale_factor, but input.size(-3)={c} is not divisible by {r * r}")
    n = len(lead)
    x = input.reshape(*lead, c // (r * r), r, r, h, w)
    x = x.permute(*range(n), n, n + 3, n + 1, n + 4, n + 2)
    return x.reshape(*lead, c // (r * r), h * r, w * r)


def pixel_unshuffle(input: Tensor, downscale_factor: int) -> Tensor:
    """(*, C, H r, W r) to (*, C r^2, H, W)."""
    r = downscale_factor
    *lead, c, h, w = input.shape
    if h % r or w % r:
        raise ShapeError(f"pixel_unshuffle expects height and width to be divisible by downscale_factor {r}, got "
                         f"{h} and {w}")
    n = len(lead)
    x = input.reshape(*lead, c, h // r, r, w // r, r)
    x = x.permute(*range(n), n, n + 2, n + 4, n + 1, n + 3)
    return x.reshape(*lead, c * r * r, h // r, w // r)


def prelu(input: Tensor, weight: Tensor) -> Tensor:
    """``x`` where positive, ``weight * x`` elsewhere; ``weight`` has one slope, or one per channel (dim 1;
    dim 0 of a 1-D input)."""
    check_rule("prelu", input)
    if weight.numel() != 1:
        channels = input.shape[1] if input.ndim >= 2 else (input.shape[0] if input.ndim == 1 else 1)
        if weight.ndim != 1 or weight.numel() != channels:
            raise ShapeError(f"prelu: mismatch in parameter count: weight {list(weight.shape)} has "
                             f"{weight.numel()} slopes, the input {list(input.shape)} has {channels} channels")
        if input.ndim >= 2:
            weight = weight.reshape([1, -1] + [1] * (input.ndim - 2))
    elif weight.ndim:
        weight = weight.reshape(())
    return where(input > 0, input, input * weight)


def gumbel_softmax(logits: Tensor, tau: float = 1, hard: bool = False, eps: float = 1e-10,
                   dim: int = -1) -> Tensor:
    """A sample of the Gumbel-softmax distribution: ``softmax((logits + g) / tau)`` with Gumbel(0, 1) noise
    ``g``; ``hard=True`` returns the one-hot of its argmax with the soft sample's gradient
    (straight-through)."""
    check_rule("gumbel_softmax", logits)
    exponential = -(1 - rand(*logits.shape, dtype=logits.dtype, device=logits.device)).log()
    gumbels = -exponential.clamp_min(1e-30).log()
    y_soft = ((logits + gumbels) / tau).softmax(dim)
    if not hard:
        return y_soft
    index = y_soft.argmax(dim, keepdim=True)
    y_hard = (logits * 0).detach().scatter(dim, index, 1.0)
    return y_hard - y_soft.detach() + y_soft


def multilabel_margin_loss(input: Tensor, target: Tensor, size_average: Any = None, reduce: Any = None,
                           reduction: str = "mean") -> Tensor:
    """Per sample, ``sum over target classes j and other classes i of max(0, 1 - (x[j] - x[i])) / C``; the
    target's class indices end at its first -1."""
    check_rule("multilabel_margin_loss", input)
    if target.dtype.kind not in "iu":
        raise DTypeError(f"multilabel_margin_loss: expected an integer target of class indices, got {target.dtype}")
    _same_shape("multilabel_margin_loss", input, target)
    if input.ndim > 2:
        raise ShapeError(f"multilabel_margin_loss: expected a 1-D or 2-D input, got shape {list(input.shape)}")
    x, y = (input, target) if input.ndim == 2 else (input.reshape(1, -1), target.reshape(1, -1))
    c = x.shape[1]
    valid = (y < 0).long().cumsum(1) == 0  # the indices before the first -1
    safe = where(valid, y, 0)
    if bool(((safe >= c) & valid).any()):
        raise ValueError(f"multilabel_margin_loss: target class out of range [0, {c})")
    is_target = ((safe.unsqueeze(-1) == arange(c, device=y.device)) & valid.unsqueeze(-1)).any(1)  # (N, C)
    picked = x.gather(1, safe)  # (N, J)
    terms = (1 - picked.unsqueeze(-1) + x.unsqueeze(1)).clamp_min(0.0)  # (N, J, C)
    keep = valid.unsqueeze(-1) & ~is_target.unsqueeze(1)
    loss = where(keep, terms, 0.0).sum((1, 2)) / c
    return _reduce(loss if input.ndim == 2 else loss.reshape(()), reduction)


def triplet_margin_with_distance_loss(anchor: Tensor, positive: Tensor, negative: Tensor, *,
                                      distance_function: Callable[[Tensor, Tensor], Tensor] | None = None,
                                      margin: float = 1.0, swap: bool = False, reduction: str = "mean") -> Tensor:
    """``max(d(a, p) - d(a, n) + margin, 0)`` for any distance ``d`` (default ``pairwise_distance``;
    ``swap``: the smaller of ``d(a, n)`` and ``d(p, n)``)."""
    check_rule("triplet_margin_with_distance_loss", anchor)
    if margin <= 0:
        raise ValueError(f"triplet_margin_with_distance_loss: margin must be greater than 0, got {margin}")
    dist = distance_function if distance_function is not None else pairwise_distance
    d_pos, d_neg = dist(anchor, positive), dist(anchor, negative)
    if swap:
        d_neg = d_neg.minimum(dist(positive, negative))
    return _reduce((d_pos - d_neg + margin).clamp_min(0.0), reduction)


def linear_cross_entropy(input: Tensor, linear_weight: Tensor, target: Tensor, *, linear_bias: Tensor | None = None,
                         weight: Tensor | None = None, reduction: str = "mean", ignore_index: int | None = None,
                         label_smoothing: float = 0.0, options: Any = None) -> Tensor:
    """``cross_entropy(linear(input, linear_weight, linear_bias), target, ...)``; ``options`` (PyTorch's
    chunking, a memory strategy with the same result) is accepted and the logits are made whole."""
    check_rule("linear_cross_entropy", input)
    if input.ndim not in (1, 2) or linear_weight.ndim < 2:
        raise ShapeError(f"linear_cross_entropy: expected an input of 1 or 2 dims and a linear_weight of at least 2 "
                         f"(C, *out_features, in_features), got {list(input.shape)} and {list(linear_weight.shape)}")
    classes, out_features = linear_weight.shape[0], tuple(linear_weight.shape[1:-1])
    if linear_bias is not None and tuple(linear_bias.shape) != (classes, *out_features):
        raise ShapeError(f"linear_cross_entropy: expected linear_bias of shape {[classes, *out_features]}, got "
                         f"{list(linear_bias.shape)}")
    if out_features and input.ndim == 1:
        raise ShapeError("linear_cross_entropy: a K-dimensional loss (linear_weight with out_features) needs a batched "
                         "(N, in_features) input")
    flat_bias = None if linear_bias is None else linear_bias.reshape(-1)
    logits = linear(input, linear_weight.reshape(-1, linear_weight.shape[-1]), flat_bias)
    logits = logits.reshape(*input.shape[:-1], classes, *out_features)
    return cross_entropy(logits, target, weight, -100 if ignore_index is None else ignore_index, reduction,
                         label_smoothing)


def _same_shape(name: str, input: Tensor, target: Tensor) -> None:
    if tuple(input.shape) != tuple(target.shape):
        raise ShapeError(f"{name}: target {list(target.shape)} must have the input's shape {list(input.shape)}")


#: (name, function, ops it uses)
_ROWS: list[tuple[str, Callable[..., Any], tuple[str, ...]]] = [
    ("softmin", softmin, ("neg", "softmax")), ("hardshrink", hardshrink, ("abs", "gt", "where")),
    ("softshrink", softshrink, ("gt", "lt", "sub", "add", "where")),
    ("soft_margin_loss", soft_margin_loss, ("neg", "mul", "exp", "log1p", "mean")),
    ("multilabel_soft_margin_loss", multilabel_soft_margin_loss, ("sigmoid", "log", "mul", "sub", "mean")),
    ("hinge_embedding_loss", hinge_embedding_loss, ("eq", "where", "sub", "clamp_min", "add", "mean")),
    ("poisson_nll_loss", poisson_nll_loss, ("exp", "mul", "sub", "log", "where", "mean")),
    ("gaussian_nll_loss", gaussian_nll_loss, ("clamp", "log", "sub", "mul", "div", "mean")),
    ("triplet_margin_loss", triplet_margin_loss, ("pairwise_distance", "sub", "clamp_min", "mean")),
    ("multi_margin_loss", multi_margin_loss, ("gather", "sub", "add", "clamp_min", "mul", "scatter", "sum")),
    ("pixel_shuffle", pixel_shuffle, ("reshape", "permute")),
    ("pixel_unshuffle", pixel_unshuffle, ("reshape", "permute")),
    ("prelu", prelu, ("gt", "mul", "where")),
    ("gumbel_softmax", gumbel_softmax, ("rand", "log", "softmax", "argmax", "scatter", "sub", "add")),
    ("multilabel_margin_loss", multilabel_margin_loss, ("gather", "sub", "add", "clamp_min", "where", "sum")),
    ("triplet_margin_with_distance_loss", triplet_margin_with_distance_loss,
     ("pairwise_distance", "sub", "clamp_min", "mean")),
    ("linear_cross_entropy", linear_cross_entropy, ("linear", "cross_entropy")),
]

#: Layout ops take any dtype; the activations and losses real floating ones, as PyTorch's.
_ANY = ("pixel_shuffle", "pixel_unshuffle")
FUNCTIONS: dict[str, Callable[..., Any]] = {
    **register_composites("nn", [r for r in _ROWS if r[0] not in _ANY], dtype_rule="real_floating"),
    **register_composites("nn", [r for r in _ROWS if r[0] in _ANY]),
}
