"""Fused nll_loss on NumPy: ``nll_loss_forward`` / ``nll_loss_backward`` (``docs/plugins.md``).

Core's ``ferro._ops.fused`` runs ``nll_loss`` through these two kernels instead
of its decomposition (a movedim, the ignore mask, a gather, the class weights
and the reduction: about a dozen ops each way). As PyTorch's ATen kernels,
the forward returns ``(output, total_weight)``: the loss (0-d, or one per
sample for ``reduction='none'``) and the sum of the counted samples' weights,
which the backward of ``'mean'`` divides by. Scores ``x`` of (C), (N, C) or
(N, C, d...) are log-probabilities, classes on axis 1. The forward checks the
targets once: one outside ``[0, C)`` that is not ``ignore_index`` raises
``IndexError`` (as PyTorch's CPU kernel) before anything is computed; the
backward trusts them. Ignored samples count for nothing and get a zero
gradient. float16 / bfloat16 are computed in float32 (``_half.py``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from ._aranges import row_indices
from ._quiet import ignoring
from ._rows import row_starts

__all__ = ["nll_kernels"]


def nll_kernels(np: Any) -> dict[str, Callable[..., Any]]:
    """``nll_loss_forward`` and ``nll_loss_backward`` over NumPy ``np``."""
    row_index = row_indices(np)
    starts = row_starts(np)
    add_reduce, count_nonzero = np.add.reduce, np.count_nonzero

    def flat(x: Any, target: Any) -> tuple[Any, Any, int]:
        """(target as one class per sample, x as (C, ...) per sample: (N, C, rest), the class count)."""
        if x.ndim == 1:
            return target.reshape(1), x.reshape(1, -1, 1), x.shape[0]
        n, c = x.shape[0], x.shape[1]
        return target.reshape(-1), x.reshape(n, c, math.prod(x.shape[2:])), c

    def pick(xr: Any, cls: Any) -> Any:
        """The score of each sample's class: xr (N, C, R) at [n, cls[n, r], r], cls flat over (N, R)."""
        n, c, r = xr.shape
        if r == 1:  # (N, C): from xr flat when it is C-contiguous (a take: several times a 2-index pick's speed)
            return xr.reshape(-1).take(cls + starts(n, c)) if xr.flags.c_contiguous else xr[row_index(n), cls, 0]
        return np.take_along_axis(xr, cls.reshape(n, 1, r), 1).reshape(-1)

    def rows_weight(cls: Any, valid: Any, weight: Any, dtype: Any) -> Any:
        """Each sample's weight: its class's (1 without ``weight``), 0 where ignored; None for all ones."""
        if weight is None:
            return None if valid is None else valid.astype(dtype)
        w = weight.astype(dtype, copy=False)[cls]
        return w if valid is None else w * valid

    @ignoring(np)  # -inf log-probabilities give inf / nan losses, as in PyTorch, without warnings
    def nll_loss_forward(x: Any, target: Any, weight: Any, ignore_index: int = -100,
                         reduction: str = "mean") -> tuple[Any, Any]:
        t, xr, c = flat(x, target)
        u = t.view(np.uint64) if t.dtype == np.int64 else t.astype(np.int64).view(np.uint64)
        outside = np.count_nonzero(u >= c)  # one test: negative classes wrap around
        if outside or 0 <= ignore_index < c:
            valid = t != ignore_index
            if outside:
                bad = (u >= c) & valid
                if bad.any():
                    raise IndexError(f"nll_loss: target {int(t[bad][0])} is out of bounds for {c} classes")
            cls = np.where(valid, t, 0)
        else:
            valid, cls = None, t
        picked = pick(xr, cls)
        w = rows_weight(cls, valid, weight, xr.dtype)
        loss = np.negative(picked, out=picked) if w is None else np.multiply(picked, w, out=picked)
        if w is not None:
            np.negative(loss, out=loss)
        total = xr.dtype.type(len(t)) if w is None else w.sum()
        if reduction == "none":
            return loss.reshape(target.shape), np.asarray(total)
        out = add_reduce(loss, axis=None)
        if reduction == "mean":
            out = out / total
        return np.asarray(out, xr.dtype), np.asarray(total, xr.dtype)

    @ignoring(np)
    def nll_loss_backward(grad: Any, x: Any, target: Any, weight: Any, ignore_index: int, reduction: str,
                          total_weight: Any) -> Any:
        t, xr, _ = flat(x, target)
        valid = t != ignore_index  # the targets were checked by the forward
        if count_nonzero(valid) == len(t):
            valid, cls = None, t
        else:
            cls = np.where(valid, t, 0)
        scale = np.negative(grad.astype(xr.dtype, copy=False)).reshape(-1)  # one per sample, or one for all
        if reduction == "mean":
            scale = scale / total_weight.astype(xr.dtype, copy=False)
        w = rows_weight(cls, valid, weight, xr.dtype)
        dx = np.zeros(xr.shape, xr.dtype)
        n, c, r = xr.shape
        if r == 1 and valid is None:  # (N, C), every sample counted: the values put into dx flat
            dx.reshape(-1)[cls + starts(n, c)] = scale if w is None else scale * w
            return dx.reshape(x.shape)
        vals = np.broadcast_to(scale, t.shape) if w is None else scale * w
        if valid is not None:  # ignored samples: no gradient at all (a nan grad stays out, as in PyTorch)
            vals = np.where(valid, vals, 0)
        if r == 1:
            dx[row_index(n), cls, 0] = vals
        else:
            np.put_along_axis(dx, cls.reshape(n, 1, r), vals.reshape(n, 1, r), 1)
        return dx.reshape(x.shape)

    return {"nll_loss_forward": nll_loss_forward, "nll_loss_backward": nll_loss_backward}
