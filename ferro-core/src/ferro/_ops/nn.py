"""``ferro.nn.functional``: layers, normalizations, losses and attention written in ops.

Every function here is a registry op (kind ``nn``) whose decomposition is the
function itself, so any backend with the primitives runs it, gradients come
from the primitives, and a backend may register a fused kernel by the same
name (capability queries report it).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from .._core.dtypes import bool_, float32, float64
from .._core.grad_mode import _state as _grad_state
from .._core.grad_mode import no_grad
from .._core.records import REGISTRY, ops
from .._core.tensor import Tensor
from .._creation import arange, ones, rand, zeros
from ..autograd._function import Function
from ..errors import DTypeError, ShapeError
from ._rules import register_ruled
from .fused import fusable
from .scatter import refuse_negative

__all__ = ["FUNCTIONS"]


# -- layers ----------------------------------------------------------------------


def linear(x: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """``x @ weight.T + bias``; ``weight`` is (out_features, in_features)."""
    if x.shape[-1] != weight.shape[-1]:
        raise ShapeError(f"linear: input {list(x.shape)} has {x.shape[-1]} features but weight {list(weight.shape)} "
                         f"expects {weight.shape[-1]}")
    if bias is not None and bias.numel() != weight.shape[0] and bias.ndim <= 1:
        raise ShapeError(f"linear: bias should have {weight.shape[0]} elements (one per output feature of weight "
                         f"{list(weight.shape)}), got shape {list(bias.shape)}")
    out = x @ weight.mT
    return out if bias is None else out + bias


def bilinear(x1: Tensor, x2: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """``y_k = x1 @ weight[k] @ x2 + bias[k]``; ``weight`` is (out, in1, in2)."""
    out = ((x1.unsqueeze(-2).unsqueeze(-2) @ weight).squeeze(-2) * x2.unsqueeze(-2)).sum(-1)
    return out if bias is None else out + bias


def _all_dropped(x: Tensor) -> Tensor:
    """Dropout at p=1: zeros in x's dtype (x * 0 would make a bool x int64; x * 0 / (1 - p) nan), still in
    the graph with a zero gradient, as PyTorch's."""
    return x * zeros((), dtype=x.dtype, device=x.device)


def dropout(x: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero each element with probability ``p`` and scale the rest by ``1 / (1 - p)`` (training only)."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0:
        return x
    if p == 1.0:
        return _all_dropped(x)
    keep = rand(*x.shape, dtype=x.dtype, device=x.device) >= p
    return x * keep / (1.0 - p)


def dropout2d(x: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero whole channels (dim 1 of (N, C, H, W) or dim 0 of (C, H, W)) with probability ``p``."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0:
        return x
    if p == 1.0:
        return _all_dropped(x)
    batched = x.ndim == 4
    shape = (x.shape[0], x.shape[1], 1, 1) if batched else (x.shape[0], 1, 1)
    keep = rand(*shape, dtype=x.dtype, device=x.device) >= p
    return x * keep / (1.0 - p)


def embedding(x: Tensor, weight: Tensor, padding_idx: int | None = None) -> Tensor:
    """Rows of ``weight`` at the integer indices ``x``; rows at ``padding_idx`` get no gradient."""
    if x.dtype.kind not in "iu":
        raise DTypeError(f"embedding: expected integer indices, got {x.dtype}")
    out = weight[refuse_negative("embedding", x, 0, weight.shape[0]) if weight.ndim else x]
    if padding_idx is not None:
        n = weight.shape[0] if weight.ndim else 0
        if not -n <= padding_idx < n:
            raise ValueError(f"embedding: padding_idx ({padding_idx}) must be within num_embeddings ({n})")
        padding_idx %= n  # PyTorch counts a negative padding_idx from the end
    if padding_idx is not None and weight.requires_grad:
        out = ops.where((x == padding_idx).unsqueeze(-1), out.detach(), out)
    return out


def one_hot(x: Tensor, num_classes: int = -1) -> Tensor:
    """int64 one-hot encoding of the integer tensor ``x``, a new last dimension of ``num_classes``."""
    if x.dtype.kind not in "iu":
        raise DTypeError(f"one_hot: expected an integer tensor, got {x.dtype}")
    if not x.numel() and num_classes < 0:
        raise ValueError("one_hot: cannot infer the number of classes from an empty tensor; pass num_classes")
    lo, hi = (int(x.amin().item()), int(x.amax().item())) if x.numel() else (0, -1)
    if lo < 0:
        raise ValueError(f"one_hot: class values must be non-negative, got {lo}")
    n = hi + 1 if num_classes < 0 else num_classes
    if hi >= n:
        raise ValueError(f"one_hot: class values must be smaller than num_classes ({n}), got {hi}")
    classes = arange(n, device=x.device)
    return (x.unsqueeze(-1) == classes).long()


# -- normalization ------------------------------------------------------------------


def _affine(y: Tensor, weight: Tensor | None, bias: Tensor | None, shape: Sequence[int]) -> Tensor:
    n = math.prod(shape)
    for arg, t in (("weight", weight), ("bias", bias)):
        if t is not None and t.numel() != n:  # the caller's name is put in front (see _core/naming)
            raise ShapeError(f"{arg} should have {n} elements (shape {[s for s in shape if s != 1] or [1]}), "
                             f"got shape {list(t.shape)}")
    if weight is not None:
        y = y * weight.reshape(shape)
    if bias is not None:
        y = y + bias.reshape(shape)
    return y


def layer_norm(x: Tensor, normalized_shape: Sequence[int], weight: Tensor | None = None,
               bias: Tensor | None = None, eps: float = 1e-5) -> Tensor:
    """Normalize over the last ``len(normalized_shape)`` dimensions."""
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    if tuple(x.shape[-len(shape):]) != shape:
        raise ShapeError(f"layer_norm: normalized_shape {list(shape)} does not match the end of {list(x.shape)}")
    dims = tuple(range(-len(shape), 0))
    mu = x.mean(dims, keepdim=True)
    var = ((x - mu) ** 2).mean(dims, keepdim=True)
    return _affine((x - mu) / (var + eps).sqrt(), weight, bias, shape)


def rms_norm(x: Tensor, normalized_shape: Sequence[int], weight: Tensor | None = None,
             eps: float | None = None) -> Tensor:
    """``x / sqrt(mean(x^2) + eps)`` over the last dimensions, times ``weight``."""
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    dims = tuple(range(-len(shape), 0))
    eps = eps if eps is not None else _finfo_eps(x)
    return _affine(x / ((x * x).mean(dims, keepdim=True) + eps).sqrt(), weight, None, shape)


def _finfo_eps(x: Tensor) -> float:
    return {"float16": 9.765625e-4, "bfloat16": 7.8125e-3, "float32": 1.1920929e-7}.get(x.dtype.name, 2.22e-16)


def batch_norm(x: Tensor, running_mean: Tensor | None, running_var: Tensor | None, weight: Tensor | None = None,
               bias: Tensor | None = None, training: bool = False, momentum: float = 0.1,
               eps: float = 1e-5) -> Tensor:
    """Normalize each channel (dim 1) over the batch and spatial dims; updates running stats in training."""
    if x.ndim < 2:
        raise ShapeError(f"batch_norm: expected an input of at least 2 dims (N, C, ...), got shape {list(x.shape)}")
    for arg, t in (("running_mean", running_mean), ("running_var", running_var), ("weight", weight),
                   ("bias", bias)):
        if t is not None and t.numel() != x.shape[1]:
            raise ShapeError(f"batch_norm: {arg} should contain {x.shape[1]} elements (one per channel of "
                             f"input {list(x.shape)}), not {t.numel()}")
    dims = (0, *range(2, x.ndim))
    shape = [1, x.shape[1]] + [1] * (x.ndim - 2)
    if training:
        n = x.numel() // max(x.shape[1], 1)
        if n == 1:
            raise ValueError(f"batch_norm: expected more than 1 value per channel when training, got input of shape "
                             f"{list(x.shape)}")
        mu = x.mean(dims, keepdim=True)
        var = ((x - mu) ** 2).mean(dims, keepdim=True)
        if running_mean is not None and running_var is not None and n:  # an empty batch leaves them (PyTorch)
            with no_grad():
                running_mean.mul_(1 - momentum).add_(mu.reshape(-1).detach() * momentum)
                running_var.mul_(1 - momentum).add_(var.reshape(-1).detach() * (momentum * n / max(n - 1, 1)))
    else:
        if running_mean is None or running_var is None:
            raise ValueError("batch_norm: running_mean and running_var are needed when not training")
        mu, var = running_mean.reshape(shape), running_var.reshape(shape)
    return _affine((x - mu) / (var + eps).sqrt(), weight, bias, shape)


def instance_norm(x: Tensor, running_mean: Tensor | None = None, running_var: Tensor | None = None,
                  weight: Tensor | None = None, bias: Tensor | None = None, use_input_stats: bool = True,
                  momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """Normalize each channel of each sample over its spatial dims."""
    dims = tuple(range(2, x.ndim))
    mu = x.mean(dims, keepdim=True)
    var = ((x - mu) ** 2).mean(dims, keepdim=True)
    return _affine((x - mu) / (var + eps).sqrt(), weight, bias, [1, x.shape[1]] + [1] * (x.ndim - 2))


def group_norm(x: Tensor, num_groups: int, weight: Tensor | None = None, bias: Tensor | None = None,
               eps: float = 1e-5) -> Tensor:
    """Normalize groups of channels of each sample."""
    n, c = x.shape[0], x.shape[1]
    if c % num_groups:
        raise ShapeError(f"group_norm: {c} channels are not divisible into {num_groups} groups")
    g = x.reshape(n, num_groups, x.numel() // max(n * num_groups, 1))  # not -1: the batch may be empty
    mu = g.mean(-1, keepdim=True)
    var = ((g - mu) ** 2).mean(-1, keepdim=True)
    y = ((g - mu) / (var + eps).sqrt()).reshape(x.shape)
    return _affine(y, weight, bias, [1, c] + [1] * (x.ndim - 2))


def local_response_norm(x: Tensor, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0) -> Tensor:
    """Normalize by the sum of squares of ``size`` neighboring channels."""
    sq = (x * x).unsqueeze(1)
    pads = [0, 0] * (x.ndim - 2) + [size // 2, (size - 1) // 2]
    sq = ops.pad(sq, pads)
    windows = ops.stack([sq.narrow(2, i, x.shape[1]) for i in range(size)]).sum(0).squeeze(1)
    return x / (windows * (alpha / size) + k) ** beta


# -- distances ------------------------------------------------------------------------


def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """Cosine of the angle between ``x1`` and ``x2`` along ``dim``."""
    n1 = (x1 * x1).sum(dim).sqrt().clamp_min(eps)
    n2 = (x2 * x2).sum(dim).sqrt().clamp_min(eps)
    return (x1 * x2).sum(dim) / (n1 * n2)


def pairwise_distance(x1: Tensor, x2: Tensor, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False) -> Tensor:
    """p-norm of ``x1 - x2 + eps`` along the last dimension."""
    return ops.norm(x1 - x2 + eps, p, dim=-1, keepdim=keepdim)


# -- losses --------------------------------------------------------------------------


def _reduce(loss: Tensor, reduction: str, weight_sum: Tensor | None = None) -> Tensor:
    if reduction == "none":
        return loss
    if reduction == "sum":
        return loss.sum()
    if reduction == "mean":
        return loss.sum() / weight_sum if weight_sum is not None else loss.mean()
    raise ValueError(f"reduction must be 'none', 'mean' or 'sum', got {reduction!r}")


def _check_classes(op: str, x: Tensor, target: Tensor, weight: Tensor | None) -> None:
    """Refuse a ``target`` (class indices, or class probabilities when floating) or a ``weight`` whose shape
    does not fit the scores ``x`` of (C), (N, C) or (N, C, d...): PyTorch refuses them too (a smaller target
    would otherwise pick the first rows only)."""
    if x.ndim == 0:
        raise ShapeError(f"{op}: input must have at least 1 dimension (the classes), got a 0-d tensor")
    c = x.shape[1] if x.ndim > 1 else x.shape[0]
    if target.dtype.is_floating_point:
        expected = tuple(x.shape)
    else:
        expected = (x.shape[0], *x.shape[2:]) if x.ndim > 1 else ()
    if tuple(target.shape) != expected:
        kind = "class probabilities" if target.dtype.is_floating_point else "class indices"
        raise ShapeError(f"{op}: input of shape {list(x.shape)} needs a target ({kind}) of shape {list(expected)}, "
                         f"got target of shape {list(target.shape)}")
    if weight is not None and tuple(weight.shape) != (c,):
        raise ShapeError(f"{op}: weight must be 1-D with one entry per class ({c}), got shape {list(weight.shape)}")


def _check_same_shape(op: str, x: Tensor, target: Tensor) -> None:
    """Refuse a target whose shape differs from the input's (PyTorch raises for these losses)."""
    if tuple(target.shape) != tuple(x.shape):
        raise ShapeError(f"{op}: target of shape {list(target.shape)} must have the input's shape "
                         f"{list(x.shape)}")


def nll_loss(x: Tensor, target: Tensor, weight: Tensor | None = None, ignore_index: int = -100,
             reduction: str = "mean") -> Tensor:
    """Negative log-likelihood of class indices ``target`` given log-probabilities ``x`` (N, C, ...)."""
    if target.dtype.kind not in "iu":
        raise DTypeError(f"nll_loss: expected integer class indices, got {target.dtype}")
    _check_classes("nll_loss", x, target, weight)
    logp = x.movedim(1, -1) if x.ndim > 1 else x.unsqueeze(0)
    tgt = target if x.ndim > 1 else target.reshape(1)
    valid = tgt != ignore_index
    safe = ops.where(valid, tgt, 0)
    picked = logp.gather(-1, safe.unsqueeze(-1)).squeeze(-1)
    w = valid.to(x.dtype) if weight is None else weight[safe] * valid
    loss = -picked * w
    if x.ndim == 1:
        loss, w = loss.reshape(()), w.reshape(())
    return _reduce(loss, reduction, w.sum())


def cross_entropy(x: Tensor, target: Tensor, weight: Tensor | None = None, ignore_index: int = -100,
                  reduction: str = "mean", label_smoothing: float = 0.0) -> Tensor:
    """Cross entropy of logits ``x`` (N, C, ...) with class indices or class probabilities ``target``."""
    if target.dtype.kind not in "iuf":
        raise DTypeError(f"cross_entropy: expected integer class indices or floating class probabilities, "
                         f"got {target.dtype}")
    _check_classes("cross_entropy", x, target, weight)
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(f"cross_entropy: label_smoothing must be between 0.0 and 1.0, got {label_smoothing}")
    logp = x.log_softmax(1 if x.ndim > 1 else 0)
    c = x.shape[1] if x.ndim > 1 else x.shape[0]
    if target.dtype.is_floating_point:  # class probabilities
        probs = target * (1 - label_smoothing) + label_smoothing / c if label_smoothing else target
        wshape = [1, c] + [1] * (x.ndim - 2) if x.ndim > 1 else [c]
        terms = -(logp * probs) if weight is None else -(logp * probs * weight.reshape(wshape))
        loss = terms.sum(1 if x.ndim > 1 else 0)
        return _reduce(loss, reduction)
    nll = nll_loss(logp, target, weight, ignore_index, "none")
    if not label_smoothing:
        if reduction == "mean":
            valid = (target != ignore_index).to(x.dtype)
            denom = valid.sum() if weight is None else (weight[ops.where(target != ignore_index, target, 0)] *
                                                        valid).sum()
            return nll.sum() / denom
        return _reduce(nll, reduction)
    valid = (target != ignore_index).to(x.dtype)
    wvec = weight.reshape([1, c] + [1] * (x.ndim - 2)) if (weight is not None and x.ndim > 1) else weight
    smooth = -(logp if wvec is None else logp * wvec).sum(1 if x.ndim > 1 else 0) / c * valid
    loss = nll * (1 - label_smoothing) + smooth * label_smoothing
    if reduction == "mean":
        denom = valid.sum() if weight is None else (weight[ops.where(target != ignore_index, target, 0)] *
                                                    valid).sum()
        return loss.sum() / denom
    return _reduce(loss, reduction)


def mse_loss(x: Tensor, target: Tensor, reduction: str = "mean") -> Tensor:
    """Mean squared error."""
    return _reduce((x - target) ** 2, reduction)


def l1_loss(x: Tensor, target: Tensor, reduction: str = "mean") -> Tensor:
    """Mean absolute error."""
    return _reduce((x - target).abs(), reduction)


def smooth_l1_loss(x: Tensor, target: Tensor, reduction: str = "mean", beta: float = 1.0) -> Tensor:
    """Squared below ``beta`` (scaled by 1 / 2beta), absolute above it."""
    d = (x - target).abs()
    if beta == 0:
        return _reduce(d, reduction)
    return _reduce(ops.where(d < beta, 0.5 * d * d / beta, d - 0.5 * beta), reduction)


def huber_loss(x: Tensor, target: Tensor, reduction: str = "mean", delta: float = 1.0) -> Tensor:
    """Squared below ``delta``, linear above it (``delta`` times smooth_l1)."""
    d = (x - target).abs()
    return _reduce(ops.where(d < delta, 0.5 * d * d, delta * (d - 0.5 * delta)), reduction)


def _bce(x: Tensor, target: Tensor, weight: Tensor | None, reduction: str) -> Tensor:
    loss = -(target * x.log().clamp_min(-100) + (1 - target) * (1 - x).log().clamp_min(-100))
    return _reduce(loss if weight is None else loss * weight, reduction)


def _weighs_in_place(weight: Tensor, x: Tensor) -> bool:
    """Whether ``weight`` is a constant of ``x``'s dtype that broadcasts to ``x``'s shape without growing it."""
    if not isinstance(weight, Tensor) or weight._rg or weight._dtype is not x._dtype or weight.ndim > x.ndim:
        return False
    return all(w in (1, n) for w, n in zip(reversed(weight.shape), reversed(x.shape)))


_BCE_EPS = 9.999999960041972e-13  # PyTorch's divisor floor: 1e-12 rounded to float32, at every dtype


class _BinaryCrossEntropy(Function):
    """BCE as one graph node (the decomposition records a dozen) with PyTorch's gradient of ``x``:
    ``g * (x - t) / max((1 - x) * x, eps) * weight``, divided by the count for the mean."""

    @staticmethod
    def forward(ctx: Any, x: Tensor, target: Tensor, weight: Tensor | None, reduction: str) -> Tensor:
        ctx.save_for_backward(x, target, weight)
        ctx.reduction = reduction
        return _bce(x, target, weight, reduction)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> tuple[Any, ...]:
        x, target, weight = ctx.saved_tensors
        gx = g * (x - target) / ((1 - x) * x).clamp_min(_BCE_EPS)
        if weight is not None:
            gx = gx * weight
        return (gx / x.numel() if ctx.reduction == "mean" else gx), None, None, None


def binary_cross_entropy(x: Tensor, target: Tensor, weight: Tensor | None = None,
                         reduction: str = "mean") -> Tensor:
    """BCE of probabilities ``x``; logs are clamped at -100 as in PyTorch."""
    _check_same_shape("binary_cross_entropy", x, target)
    if (_grad_state.enabled and x._rg and not target._rg and x._dtype in (float32, float64)
            and target._dtype is x._dtype and reduction in ("mean", "sum", "none")
            and (weight is None or _weighs_in_place(weight, x))):
        return _BinaryCrossEntropy.apply(x, target, weight, reduction)  # a gradient of x only: one node
    return _bce(x, target, weight, reduction)


def binary_cross_entropy_with_logits(x: Tensor, target: Tensor, weight: Tensor | None = None,
                                     reduction: str = "mean", pos_weight: Tensor | None = None) -> Tensor:
    """BCE of logits, computed stably: ``max(x, 0) - x * t + log(1 + exp(-|x|))`` (with ``pos_weight``)."""
    _check_same_shape("binary_cross_entropy_with_logits", x, target)
    log_sig_neg = ops.logsigmoid(-x)  # log(1 - sigmoid(x))
    log_sig = ops.logsigmoid(x)
    pw = 1 if pos_weight is None else pos_weight
    loss = -(pw * target * log_sig + (1 - target) * log_sig_neg)
    return _reduce(loss if weight is None else loss * weight, reduction)


def kl_div(x: Tensor, target: Tensor, reduction: str = "mean", log_target: bool = False) -> Tensor:
    """KL divergence with ``x`` in log space; ``reduction='batchmean'`` divides by the batch size."""
    if log_target:
        loss = target.exp() * (target - x)
    else:
        loss = ops.xlogy(target, target) - target * x
    if reduction == "batchmean":
        return loss.sum() / x.shape[0]
    return _reduce(loss, reduction)


def cosine_embedding_loss(x1: Tensor, x2: Tensor, target: Tensor, margin: float = 0.0,
                          reduction: str = "mean") -> Tensor:
    """``1 - cos`` for similar pairs (target 1), ``max(0, cos - margin)`` for dissimilar ones (-1)."""
    cos = cosine_similarity(x1, x2, dim=-1, eps=1e-12)
    loss = ops.where(target > 0, 1 - cos, (cos - margin).clamp_min(0.0))
    return _reduce(loss, reduction)


def margin_ranking_loss(x1: Tensor, x2: Tensor, target: Tensor, margin: float = 0.0,
                        reduction: str = "mean") -> Tensor:
    """``max(0, -target * (x1 - x2) + margin)``."""
    return _reduce((-target * (x1 - x2) + margin).clamp_min(0.0), reduction)


# -- attention -------------------------------------------------------------------------


def scaled_dot_product_attention(q: Tensor, k: Tensor, v: Tensor, attn_mask: Tensor | None = None,
                                 dropout_p: float = 0.0, is_causal: bool = False,
                                 scale: float | None = None) -> Tensor:
    """``softmax(q @ k^T * scale + mask) @ v`` over the last two dimensions."""
    s = (1.0 / math.sqrt(q.shape[-1])) if scale is None else scale
    scores = (q @ k.mT) * s
    if is_causal:
        L, S = q.shape[-2], k.shape[-2]
        causal = ones(L, S, dtype=bool_, device=q.device).tril()
        scores = scores.masked_fill(~causal, -math.inf)
    if attn_mask is not None:
        scores = scores.masked_fill(~attn_mask, -math.inf) if attn_mask.dtype is bool_ else scores + attn_mask
    attn = scores.softmax(-1)
    if dropout_p:
        attn = dropout(attn, dropout_p)
    return attn @ v


_ROWS: list[tuple[str, Callable[..., Any]]] = [
    ("linear", linear), ("bilinear", bilinear),
    ("dropout", dropout), ("dropout2d", dropout2d),
    ("embedding", embedding), ("one_hot", one_hot),
    ("layer_norm", layer_norm), ("rms_norm", rms_norm),
    ("batch_norm", batch_norm), ("instance_norm", instance_norm),
    ("group_norm", group_norm), ("local_response_norm", local_response_norm),
    ("cosine_similarity", cosine_similarity),
    ("pairwise_distance", pairwise_distance),
    ("nll_loss", nll_loss), ("cross_entropy", cross_entropy),
    ("mse_loss", mse_loss), ("l1_loss", l1_loss),
    ("smooth_l1_loss", smooth_l1_loss), ("huber_loss", huber_loss),
    ("binary_cross_entropy", binary_cross_entropy),
    ("binary_cross_entropy_with_logits", binary_cross_entropy_with_logits),
    ("kl_div", kl_div), ("cosine_embedding_loss", cosine_embedding_loss),
    ("margin_ranking_loss", margin_ranking_loss),
    ("scaled_dot_product_attention", scaled_dot_product_attention),
]


#: The dtype rules that are not "any dtype": PyTorch CPU's (these run only on real floating input; the
#: smooth L1 losses on real input: written in abs, a complex input gave a real loss).
_RULES = {**dict.fromkeys(("dropout2d", "nll_loss", "binary_cross_entropy", "kl_div"), "real_floating"),
          **dict.fromkeys(("smooth_l1_loss", "huber_loss"), "real")}
FUNCTIONS = register_ruled("nn", _ROWS, _RULES, first_only=("nll_loss",))
# a backend's fused kernels run first where the device has them
for _name in ("linear", "layer_norm", "cross_entropy", "nll_loss", "batch_norm", "binary_cross_entropy"):
    REGISTRY[_name].fn = FUNCTIONS[_name] = fusable(_name, FUNCTIONS[_name])
