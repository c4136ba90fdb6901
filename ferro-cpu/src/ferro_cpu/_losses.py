"""Fused cross_entropy on NumPy: ``cross_entropy_forward`` / ``cross_entropy_backward`` (``docs/cuda.md``).

Core's ``ferro._ops.fused`` runs ``cross_entropy`` with class-index targets
through these two kernels instead of its decomposition (log_softmax, a
gather, the weights, the reduction: a dozen ops each way). A row is one
sample's scores over the classes: ``x`` of (C), (N, C) or (N, C, d...) is
read as (rows, C) with the classes last. float16 computes in float32 and
rounds once. Per row, the forward keeps ``(max, log(sum(exp(x - max))))`` for the backward (``(0,
log(sum(exp(x))))`` for rows it took without the shift, as ``_rows.log_softmax_block``): their sum,
the logsumexp, would round at the magnitude of the logits (about 1e-3 at 1e4 in float32), an error
that ``x - logsumexp`` keeps while ``(x - max) - log_sum`` does not. A target outside ``[0, C)`` that is
not ``ignore_index`` raises ``IndexError`` here, as PyTorch's CPU kernel does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ._aranges import row_indices
from ._quiet import ignoring
from ._rows import LSE_RANGE, narrow_buffers, row_maxima, row_starts, spread_rows

__all__ = ["loss_kernels", "bce_kernels"]

#: PyTorch's floor of binary_cross_entropy's gradient divisor ``(1 - x) * x``: 1e-12 rounded to float32.
BCE_EPS = 9.999999960041972e-13


def loss_kernels(np: Any) -> dict[str, Callable[..., Any]]:
    """``cross_entropy_forward`` and ``cross_entropy_backward`` over NumPy ``np``."""

    def rows(x: Any) -> Any:
        """``x`` as (rows, classes), computed in float32 at least."""
        r = x.reshape(1, -1) if x.ndim == 1 else x if x.ndim == 2 else np.moveaxis(x, 1, -1).reshape(-1, x.shape[1])
        return r.astype(np.float32) if r.dtype == np.float16 else r

    row_index = row_indices(np)
    starts, by_rows, row_max = row_starts(np), spread_rows(np), row_maxima(np)
    floats = (np.dtype(np.float32), np.dtype(np.float64))
    ones: dict[tuple[int, Any], Any] = {}

    def flat_rows(xr: Any) -> Any:
        """Each row's first index in ``xr`` read flat, where the picks and sums below take ``xr`` so (a
        C-contiguous float32 / float64 array: a classifier's (N, C) scores, the usual case); None otherwise."""
        if xr.dtype not in floats or not xr.flags.c_contiguous or xr.size == 0:
            return None
        return starts(*xr.shape)

    def row_sums(e: Any) -> Any:
        """The sums of the rows of the C-contiguous ``e``: one product with ones (BLAS; NumPy's add.reduce
        pays per row: 64x10 float32 1.7 µs against 0.4)."""
        v = ones.get((e.shape[1], e.dtype))
        if v is None:
            if len(ones) > 64:
                ones.clear()
            v = ones[e.shape[1], e.dtype] = np.ones(e.shape[1], e.dtype)
        return e.dot(v)

    add, count_nonzero, exp, log, subtract = np.add.reduce, np.count_nonzero, np.exp, np.log, np.subtract
    maximum = np.maximum.reduce
    i64, u64 = np.dtype(np.int64), np.dtype(np.uint64)

    def picked(target: Any, ignore_index: int, classes: int) -> tuple[Any, Any]:
        """(the target class of each row, 0 where ignored; whether the row counts, None where all do)."""
        t = target.reshape(-1)
        if not 0 <= ignore_index < classes:  # then every row in range counts: one test, the usual case
            wrapped = t.view(u64) if t.dtype == i64 else t.astype(u64)
            if not count_nonzero(wrapped >= classes):
                return t, None
        valid = t != ignore_index
        cls = np.where(valid, t, 0)
        wrapped = cls.view(u64) if cls.dtype == i64 else cls.astype(u64)  # (int64, the usual: no copy)
        if count_nonzero(wrapped >= classes):  # one test: negative classes wrap around
            bad = (cls < 0) | (cls >= classes)
            raise IndexError(f"cross_entropy: target {int(cls[bad][0])} is out of bounds for {classes} classes")
        return cls, valid

    def trusted(target: Any, ignore_index: int, classes: int) -> tuple[Any, Any]:
        """:func:`picked` for the backward, of targets its forward checked: no range test."""
        t = target.reshape(-1)
        valid = t != ignore_index
        if count_nonzero(valid) == len(t):
            return t, None
        return np.where(valid, t, 0), valid

    def shifted_sums(xr: Any, e: Any, at: Any) -> tuple[Any, Any]:
        """(the row maxima, ``log(sum(exp(x - max)))``) of the C-contiguous (rows, classes) ``xr`` (``e``:
        scratch of its shape, ``at``: :func:`flat_rows`'); a row whose maximum is +-inf or NaN gives NaN
        throughout, as PyTorch's."""
        m = row_max(xr, at)
        by_rows(subtract, xr, m, e, e)
        return m, log(row_sums(exp(e, out=e)))

    @ignoring(np)  # -inf scores give nan losses, as in PyTorch, without NumPy's warnings
    def cross_entropy_forward(x: Any, target: Any, weight: Any, ignore_index: int = -100) -> tuple[Any, Any, Any]:
        xr = rows(x)
        cls, valid = picked(target, ignore_index, xr.shape[1])
        narrow_buffers(np, xr)
        at = flat_rows(xr)
        if at is not None:  # the targets' scores picked from xr flat, sums by BLAS
            e = np.empty(xr.shape, xr.dtype)
            log_sum = log(row_sums(exp(xr, out=e)))
            if float(maximum(abs(log_sum))) < LSE_RANGE:  # no shift needed: log_softmax_block's test (_rows.py)
                m = np.zeros(len(log_sum), xr.dtype)
                loss = np.negative(xr.reshape(-1).take(cls + at))
            else:
                m, log_sum = shifted_sums(xr, e, at)
                loss = subtract(m, xr.reshape(-1).take(cls + at))
        else:
            idx = row_index(len(cls))
            m = xr[idx, xr.argmax(1)]  # the row maxima (a NaN row's first NaN), faster than max(1) over few classes
            e = subtract(xr, m[:, None])
            log_sum = log(add(exp(e, out=e), axis=1))
            loss = subtract(m, xr[idx, cls])  # ((m - x[target]) + log_sum) * w, in one buffer
        loss += log_sum
        if valid is None:  # every row counts: w the weights of the targets, or ones (no product by 1)
            w = weight.astype(xr.dtype)[cls] if weight is not None else np.ones(len(cls), xr.dtype)
            if weight is not None:
                loss *= w
        else:
            w = weight.astype(xr.dtype)[cls] * valid if weight is not None else valid.astype(xr.dtype)
            loss *= w
        lse = np.empty((len(cls), 2), m.dtype)
        lse[:, 0], lse[:, 1] = m, log_sum
        return loss, lse, w

    @ignoring(np)
    def cross_entropy_backward(grad_rows: Any, x: Any, target: Any, weight: Any, lse: Any,
                               ignore_index: int = -100) -> Any:
        xr = rows(x)
        cls, valid = trusted(target, ignore_index, xr.shape[1])
        narrow_buffers(np, xr)
        scale = grad_rows.astype(xr.dtype).reshape(-1)  # grad_rows: one per row, or one for all
        if valid is not None:
            scale = scale * valid
        if weight is not None:
            scale = scale * weight.astype(xr.dtype)[cls]
        at = flat_rows(xr)
        if at is None:
            dx = np.exp((xr - lse[:, :1]) - lse[:, 1:])  # softmax, from (max, log-sum) exact at large logits
            dx[row_index(len(cls)), cls] -= 1
            dx *= scale[:, None]
        else:  # the same steps, one value per row spread first, the targets' entries picked from dx flat
            dx, t = np.empty(xr.shape, xr.dtype), np.empty(xr.shape, xr.dtype)
            if count_nonzero(lse[:, 0]):
                by_rows(subtract, xr, lse[:, 0], dx, t)
                by_rows(subtract, dx, lse[:, 1], dx, t)
            else:  # the forward's unshifted rows (every maximum kept as 0)
                by_rows(subtract, xr, lse[:, 1], dx, t)
            exp(dx, out=dx)
            flat, picks = dx.reshape(-1), cls + at
            flat[picks] = flat.take(picks) - 1
            if len(scale) == 1:
                dx *= scale
            else:
                by_rows(np.multiply, dx, scale, dx, t)
        if x.ndim == 1:
            dx = dx[0]
        elif x.ndim > 2:
            dx = np.moveaxis(dx.reshape(x.shape[0], *x.shape[2:], x.shape[1]), -1, 1)
        return np.ascontiguousarray(dx, dtype=x.dtype)

    return {"cross_entropy_forward": cross_entropy_forward, "cross_entropy_backward": cross_entropy_backward}


def bce_kernels(np: Any) -> dict[str, Callable[..., Any]]:
    """``binary_cross_entropy_forward`` / ``_backward`` over NumPy ``np`` (float32 and float64).

    The decomposition records a dozen ops (two logs, two clamps, products, sums); these are PyTorch's
    formulas in a few passes: the loss ``(t - 1) * max(log1p(-x), -100) - t * max(log(x), -100)``, times the
    weight, reduced in the kernel; the gradient ``g * (x - t) / max((1 - x) * x, eps)``, times the weight,
    divided by the count for ``'mean'``. No range check (the decomposition's NaN outside [0, 1]).
    """

    @ignoring(np)
    def binary_cross_entropy_forward(x: Any, target: Any, weight: Any, reduction: str) -> Any:
        log_x = np.maximum(np.log(x), -100, dtype=x.dtype)
        loss = np.log1p(np.negative(x))
        np.maximum(loss, -100, out=loss)
        loss *= target - 1
        log_x *= target
        loss -= log_x
        if weight is not None:
            loss *= weight
        if reduction == "none":
            return loss
        total = np.add.reduce(loss, axis=None)
        return np.asarray(total / loss.size if reduction == "mean" else total, dtype=x.dtype)

    @ignoring(np)
    def binary_cross_entropy_backward(grad: Any, x: Any, target: Any, weight: Any, reduction: str) -> Any:
        floor = np.subtract(1, x)
        floor *= x
        np.maximum(floor, x.dtype.type(BCE_EPS), out=floor)
        gx = np.subtract(x, target)
        gx *= grad
        gx /= floor
        if weight is not None:
            gx *= weight
        if reduction == "mean":
            gx /= x.dtype.type(x.size)
        return gx

    return {"binary_cross_entropy_forward": binary_cross_entropy_forward,
            "binary_cross_entropy_backward": binary_cross_entropy_backward}
