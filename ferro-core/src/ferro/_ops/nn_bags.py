"""``nn.functional``'s ops over variable-length groups, written in ops: ``embedding_bag`` (sums, means or
maxima of bags of embedding rows) and ``ctc_loss`` (the connectionist temporal classification loss, its
forward recursion in log space over the time steps; the gradient comes from the ops)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from .._core.grad_mode import no_grad
from .._core.records import ops, register_composites
from .._core.tensor import Tensor
from .._creation import arange, full, ones, tensor, zeros
from ..errors import DTypeError, ShapeError
from ._rules import check_rule
from .elementwise import where
from .nn import _reduce

__all__ = ["FUNCTIONS"]


def _bags(input: Tensor, offsets: Tensor | None, include_last_offset: bool) -> tuple[Tensor, int, Tensor | None]:
    """The bag of each index of the flattened ``input`` (int64), the number of bags, and which indices are in a
    bag (None: all; with ``include_last_offset`` those from the last offset on are not)."""
    if input.ndim == 2:
        if offsets is not None:
            raise ValueError("embedding_bag: if input is 2D, then offsets has to be None, as input is treated is a "
                             "mini-batch of fixed length sequences")
        b, length = input.shape
        return arange(b * length, device=input.device) // max(length, 1), b, None
    if input.ndim != 1:
        raise ShapeError(f"embedding_bag: input has to be 1D or 2D Tensor, but got Tensor of dimension {input.ndim}")
    if offsets is None:
        raise ValueError("embedding_bag: offsets has to be a 1D Tensor but got None")
    if offsets.ndim != 1 or offsets.dtype.kind not in "iu":
        raise ShapeError(f"embedding_bag: offsets has to be a 1D integer Tensor, got {offsets.dtype} of shape "
                         f"{list(offsets.shape)}")
    starts = offsets[:-1] if include_last_offset else offsets
    b = starts.shape[0]
    if input.shape[0] and b and (int(starts[0].item()) != 0):
        raise ValueError(f"embedding_bag: offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to "
                         f"start from position 0. However, got {int(starts[0].item())}")
    places = arange(input.shape[0], device=input.device)
    bag = ops.searchsorted(starts.long(), places, right=True) - 1
    return bag.clamp(min=0), b, (places < offsets[-1]) if include_last_offset and b else None


def embedding_bag(input: Tensor, weight: Tensor, offsets: Tensor | None = None, max_norm: float | None = None,
                  norm_type: float = 2, scale_grad_by_freq: bool = False, mode: str = "mean", sparse: bool = False,
                  per_sample_weights: Tensor | None = None, include_last_offset: bool = False,
                  padding_idx: int | None = None) -> Tensor:
    """The ``sum``, ``mean`` or ``max`` of the rows of ``weight`` in each bag: the rows of a 2-D ``input``, or
    the runs of a 1-D ``input`` starting at ``offsets``; ``per_sample_weights`` scale the rows (``sum``);
    indices equal to ``padding_idx`` are left out. An empty bag gives zeros. (B, embedding_dim).
    ``sparse`` only changes the gradient's layout in PyTorch: the gradient here is dense."""
    check_rule("embedding_bag", weight)
    if input.dtype.kind not in "iu":
        raise DTypeError(f"embedding_bag: expected integer indices, got {input.dtype}")
    if mode not in ("sum", "mean", "max"):
        raise ValueError(f"embedding_bag: mode has to be one of sum, mean or max, got {mode!r}")
    if per_sample_weights is not None:
        if mode != "sum":
            raise NotImplementedError(f"embedding_bag: per_sample_weights was not None. per_sample_weights is only "
                                      f"supported for mode='sum' (got mode='{mode}'). Please open a feature "
                                      f"request on GitHub.")
        if tuple(per_sample_weights.shape) != tuple(input.shape):
            raise ShapeError(f"embedding_bag: per_sample_weights {list(per_sample_weights.shape)} must have the "
                             f"input's shape {list(input.shape)}")
    if weight.ndim != 2:
        raise ShapeError(f"embedding_bag: weight has to be a 2D Tensor, got shape {list(weight.shape)}")
    n, dim = weight.shape
    if padding_idx is not None:
        if not -n <= padding_idx < n:
            raise ValueError(f"embedding_bag: padding_idx must be within the number of embeddings ({n}), got "
                             f"{padding_idx}")
        padding_idx %= n
    bag, b, inside = _bags(input, offsets, include_last_offset)
    flat = input.reshape(-1).long()
    if flat.numel() and (int(flat.amin().item()) < 0 or int(flat.amax().item()) >= n):
        raise IndexError(f"embedding_bag: index out of range in self (indices must be in [0, {n}))")
    if max_norm is not None and flat.numel():
        with no_grad():  # PyTorch renormalizes the looked-up rows in place first
            rows = flat.unique()
            picked = weight[rows]
            scale = (max_norm / (picked.norm(norm_type, dim=-1, keepdim=True) + 1e-7)).clamp(max=1.0)
            weight[rows] = picked * scale
    rows = weight[flat]  # (M, dim)
    if scale_grad_by_freq and rows.requires_grad:  # each row's gradient over its index's count in the batch
        scale = 1.0 / flat.bincount(minlength=n)[flat].unsqueeze(-1).to(weight.dtype)
        rows = rows * scale + rows.detach() * (1 - scale)
    keep = (flat != padding_idx) if padding_idx is not None else None
    if inside is not None:
        keep = inside if keep is None else keep & inside
    members = keep.to(weight.dtype) if keep is not None else ones(flat.shape[0], dtype=weight.dtype,
                                                                   device=flat.device)
    count = zeros(b, dtype=weight.dtype, device=weight.device).index_add(0, bag, members)
    if mode == "max":
        if keep is not None:
            rows = where(keep.unsqueeze(-1), rows, -math.inf)
        start = full((b, dim), -math.inf, dtype=weight.dtype, device=weight.device)
        out = start.scatter_reduce(0, bag.unsqueeze(-1).expand(bag.shape[0], dim), rows, "amax")
        return where(count.unsqueeze(-1) > 0, out, 0.0)
    if per_sample_weights is not None:
        rows = rows * per_sample_weights.reshape(-1, 1).to(weight.dtype)
    if keep is not None:
        rows = where(keep.unsqueeze(-1), rows, 0.0)
    total = zeros(b, dim, dtype=weight.dtype, device=weight.device).index_add(0, bag, rows)
    return total if mode == "sum" else total / count.clamp(min=1).unsqueeze(-1)


#: A finite stand-in for log(0) in the CTC recursion: exp of it underflows to 0, and no 0 * inf or inf - inf
#: reaches the gradient of a state no alignment passes through.
_LOG_ZERO = -1e30


def _lse3(a: Tensor, b: Tensor, c: Tensor) -> Tensor:
    m = a.maximum(b).maximum(c).detach()
    return m + ((a - m).exp() + (b - m).exp() + (c - m).exp()).log()


def _lengths(value: Any, name: str, count: int) -> list[int]:
    got = value.tolist() if isinstance(value, Tensor) else list(value)
    got = [int(v) for v in (got if isinstance(got, list) else [got])]
    if len(got) != count:
        raise ShapeError(f"ctc_loss: {name} must have one length per batch entry ({count}), got {len(got)}")
    return got


def ctc_loss(log_probs: Tensor, targets: Tensor, input_lengths: Any, target_lengths: Any, blank: int = 0,
             reduction: str = "mean", zero_infinity: bool = False) -> Tensor:
    """The negative log-likelihood of ``targets`` under every alignment of the per-step class log-probabilities
    ``log_probs`` (T, N, C) or (T, C), with ``blank`` between and around labels; ``targets`` (N, S) padded or
    1-D concatenated. ``mean`` divides each loss by its target length, then averages; an impossible alignment
    costs inf (0 with ``zero_infinity``)."""
    check_rule("ctc_loss", log_probs)
    batched = log_probs.ndim == 3
    if log_probs.ndim not in (2, 3):
        raise ShapeError(f"ctc_loss: log_probs must be (T, N, C) or (T, C), got shape {list(log_probs.shape)}")
    lp = log_probs if batched else log_probs.unsqueeze(1)
    if lp.dtype.itemsize < 4:  # 16-bit floats: the recursion's log(0) stand-in needs float32's range
        lp = lp.float()
    steps, nb, classes = lp.shape
    if not 0 <= blank < classes:
        raise ValueError(f"ctc_loss: blank must be in label range [0, {classes}), got {blank}")
    if targets.dtype.kind not in "iu":
        raise DTypeError(f"ctc_loss: expected integer targets, got {targets.dtype}")
    t_len = _lengths(input_lengths, "input_lengths", nb)
    s_len = _lengths(target_lengths, "target_lengths", nb)
    if any(t > steps or t < 0 for t in t_len):
        raise ValueError(f"ctc_loss: input_lengths must be in [0, {steps}], got {t_len}")
    flat = targets.reshape(-1).tolist() if targets.ndim == 1 or not batched else None
    rows: list[list[int]] = []
    for n in range(nb):
        if flat is not None:
            start = sum(s_len[:n])
            rows.append([int(v) for v in flat[start:start + s_len[n]]])
        else:
            rows.append([int(v) for v in targets[n, :s_len[n]].tolist()])
    width = 2 * max(s_len, default=0) + 1
    ext = [[blank] * width for _ in range(nb)]
    skip = [[False] * width for _ in range(nb)]
    for n, labels in enumerate(rows):
        for i, lab in enumerate(labels):
            ext[n][2 * i + 1] = lab
            skip[n][2 * i + 1] = i > 0 and lab != labels[i - 1]
    dev = lp.device
    ext_t = tensor(ext, dtype=targets.dtype, device=dev).long().reshape(nb, width)
    skip_t = tensor(skip, device=dev).reshape(nb, width)
    emit = lp.gather(2, ext_t.unsqueeze(0).expand(steps, nb, width))  # (T, N, width)
    floor = lp.new_full((nb, width), _LOG_ZERO)
    pos = arange(width, device=dev).unsqueeze(0)
    alpha = where(pos < 2, emit[0], floor) if steps else floor
    alpha = where(pos < tensor([2 * s + 1 for s in s_len], device=dev).reshape(nb, 1), alpha, floor)
    live = tensor(t_len, device=dev).reshape(nb, 1)
    for t in range(1, steps):
        one = ops.pad(alpha, (1, 0), value=_LOG_ZERO)[:, :width]
        two = where(skip_t, ops.pad(alpha, (2, 0), value=_LOG_ZERO)[:, :width], floor)
        alpha = where(live > t, _lse3(alpha, one, two) + emit[t], alpha)
    last = tensor([2 * s for s in s_len], device=dev).reshape(nb, 1)
    end_blank = alpha.gather(1, last).reshape(nb)
    end_label = where(last.reshape(nb) > 0, alpha.gather(1, (last - 1).clamp(min=0)).reshape(nb), _LOG_ZERO)
    m = end_blank.maximum(end_label).detach()
    loss = -(m + ((end_blank - m).exp() + (end_label - m).exp()).log())
    impossible = (loss > -_LOG_ZERO / 2) | tensor([t == 0 and s > 0 for t, s in zip(t_len, s_len)], device=dev)
    loss = where(impossible, 0.0 if zero_infinity else math.inf, loss)
    if reduction == "mean":
        loss = (loss / tensor([max(s, 1) for s in s_len], dtype=loss.dtype, device=dev)).mean()
    elif reduction != "none":
        loss = _reduce(loss, reduction)
    loss = loss.to(log_probs.dtype)
    return loss if batched or reduction != "none" else loss.reshape(())


#: (name, function, ops it uses)
_ROWS: list[tuple[str, Callable[..., Any], tuple[str, ...]]] = [
    ("embedding_bag", embedding_bag, ("getitem", "index_add", "scatter_reduce", "searchsorted:int64", "div", "where")),
    ("ctc_loss", ctc_loss, ("gather", "pad", "maximum", "exp", "log", "where", "mean")),
]
FUNCTIONS: dict[str, Callable[..., Any]] = register_composites("nn", _ROWS, dtype_rule="real_floating")
