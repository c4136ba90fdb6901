"""Fused kernels of composite ops (softmax, log_softmax, layer_norm, cross_entropy) and ferro.amp's check for
inf/nan and unscale (``fused_amp_unscale``), from ``kernels/fused.cl``.

Core's ``ferro._ops.fused`` runs these instead of the ops' decompositions
when the device's table has a forward and a backward kernel (names and
signatures as the CUDA backend's, in ``docs/plugins.md``): each is one
launch with a work-group per row (plus one for layer_norm's weight and bias
gradients). A program is built once per dtype from the one template;
float16 and bfloat16 are stored in 16 bits and computed in float on every
device (``_runtime.CType``). Inputs
that are not contiguous, and a reduced dimension that is not the last, are
copied to contiguous rows first; results come back as views in the input's
layout.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from string import Template
from typing import Any

import numpy as np

from ._array import CLArray
from ._elementwise import cast_array
from ._runtime import Runtime, compute_dtype, ctypes, is_half, read_source

__all__ = ["fused_kernels"]

_I64 = np.int64
_I32 = np.int32
_LONG = np.dtype(np.int64)
_FLOATS = ("float16", "bfloat16", "float32", "float64")

#: kernel name -> its scalar argument types (None for buffers); ``E`` stands for the compute dtype.
_E = "E"
_SIGNATURES: dict[str, list[Any]] = {
    "softmax_forward": [None, _I64, None, _I64, _I32],
    "softmax_backward": [None, _I64, None, _I64, None, _I64, _I32],
    "layer_norm_forward": [None, _I64, None, _I64, None, _I64, None, None, None, _I64, _E, _I32, _I32],
    "layer_norm_backward": [None, _I64, None, _I64, None, _I64, None, None, None, _I64, _I32],
    "layer_norm_param_grads": [None, _I64, None, _I64, None, None, None, None, _I64, _I64],
    "cross_entropy_forward": [None, _I64, None, _I64, None, _I64, None, None, None, _I64, _I64, _I32, None],
    "cross_entropy_backward": [None, _I64, _I64, None, _I64, None, _I64, None, _I64, None, None, _I64, _I64, _I32],
    "amp_unscale": [None, _I64, _I64, None, _I64, np.float32],
}


def _permute(x: CLArray, dims: Sequence[int]) -> CLArray:
    """A view of ``x`` with its dimensions in the order ``dims``."""
    return x.view(tuple(x.shape[d] for d in dims), tuple(x.strides[d] for d in dims))


def _contig(x: CLArray, dtype: Any = None) -> CLArray:
    """``x`` itself when contiguous (of ``dtype``), else a contiguous copy (converted)."""
    dtype = x.dtype if dtype is None else dtype
    return x if x.contiguous and x.dtype == dtype else cast_array(x, dtype)


def _last(ndim: int, dim: int) -> tuple[int, ...]:
    """The permutation moving ``dim`` to the end (and, applied again through its inverse, back)."""
    return (*(d for d in range(ndim) if d != dim), dim)


def _inverse(perm: Sequence[int]) -> tuple[int, ...]:
    out = [0] * len(perm)
    for i, p in enumerate(perm):
        out[p] = i
    return tuple(out)


class _Rows:
    """An array as contiguous (rows, cols) over one dimension, and the way back to its layout."""

    def __init__(self, x: CLArray, dim: int) -> None:
        if not -x.ndim <= dim < x.ndim:
            n = max(x.ndim, 1)
            raise IndexError(f"dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim}) "
                             f"for a tensor of {x.ndim} dimensions")
        self.dim = dim % x.ndim
        self.perm = _last(x.ndim, self.dim)
        self.moved = tuple(x.shape[d] for d in self.perm)
        self.cols = x.shape[self.dim]
        self.rows = math.prod(self.moved[:-1])

    def flat(self, x: CLArray, dtype: Any = None) -> CLArray:
        """``x`` (of the shape the rows were made for) as contiguous rows."""
        return _contig(x if self.dim == x.ndim - 1 else _permute(x, self.perm), dtype)

    def back(self, y: CLArray) -> CLArray:
        """Contiguous rows ``y`` as a view in the original dimension order."""
        y = y.view(self.moved)
        return y if self.dim == len(self.moved) - 1 else _permute(y, _inverse(self.perm))


def fused_kernels(rt: Runtime, group: int | None = None) -> dict[str, Callable[..., Any]]:
    """The fused kernels of ``rt``'s device (float32, float16, bfloat16, float64 where the device has it);
    building the table compiles nothing. ``group`` caps the work-items per row (a power of two up to 256);
    by default 1 on CPU devices, 256 elsewhere."""
    if group is None:
        # PoCL's CPU device runs a work-group on one core and does not vectorize a work-item's loop over a
        # row: a work-item per row is fastest there (the rows give the parallelism)
        group = 1 if rt.device.type & rt.cl.device_type.CPU else 256
    if group < 1 or group & (group - 1) or group > 256:
        raise ValueError(f"fused kernels: the group size must be a power of two from 1 to 256, got {group}")
    group_cap = min(group, rt.max_group)  # fused.cl's local arrays hold 256

    def kernel(name: str, dt: Any) -> Any:
        if dt.name not in _FLOATS:
            raise TypeError(f"OpenCL fused kernel '{name}' takes float16, bfloat16, float32 or float64, got {dt}")
        c = ctypes(dt)

        def source() -> str:
            y = "exp((${ACC})${load}(x, xb + c) - m)" if is_half(dt) else "(${ACC})${load}(y, yb + c)"
            return Template(Template(read_source("fused.cl")).safe_substitute(scaled=y)).substitute(
                T=c.storage, ACC=c.compute, load=c.load, store=c.store)
        acc = compute_dtype(dt).type
        return rt.kernel(("fused", dt.name), name, source, [acc if t == _E else t for t in _SIGNATURES[name]])

    def group(cols: int) -> int:
        g = 1
        while g < cols and g < group_cap:
            g *= 2
        return g

    def launch(name: str, dt: Any, rows: int, cols: int, *args: Any) -> None:
        if rows:
            g = group(cols)
            kernel(name, dt)(rt.queue, (rows * g,), (g,), *args)

    # -- softmax / log_softmax ----------------------------------------------------------------------------

    def softmax_pair(log: bool) -> tuple[Callable[..., CLArray], Callable[..., CLArray]]:
        def forward(x: CLArray, dim: int = -1) -> CLArray:
            r = _Rows(x, dim)
            xf = r.flat(x)
            y = rt.empty(xf.shape, x.dtype)
            if y.size:
                launch("softmax_forward", x.dtype, r.rows, r.cols, xf.buffer, xf.offset, y.buffer, r.cols, int(log))
            return r.back(y)

        def backward(grad: CLArray, y: CLArray, dim: int = -1) -> CLArray:
            r = _Rows(y, dim)
            yf, gf = r.flat(y), r.flat(grad, y.dtype)
            dx = rt.empty(yf.shape, y.dtype)
            if dx.size:
                launch("softmax_backward", y.dtype, r.rows, r.cols, gf.buffer, gf.offset, yf.buffer, yf.offset,
                       dx.buffer, r.cols, int(log))
            return r.back(dx)
        return forward, backward

    # -- layer_norm ---------------------------------------------------------------------------------------

    def norm_rows(x: CLArray, normalized_shape: Sequence[int] | int) -> tuple[tuple[int, ...], int, int]:
        shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
        if len(shape) > x.ndim or tuple(x.shape[x.ndim - len(shape):]) != shape:
            raise ValueError(f"layer_norm: normalized_shape {list(shape)} does not match the end of {list(x.shape)}")
        cols = math.prod(shape)
        return shape, x.size // cols if cols else math.prod(x.shape[:x.ndim - len(shape)]), cols

    def param(p: CLArray | None, dt: Any, fallback: CLArray) -> CLArray:
        return fallback if p is None else _contig(p, dt)

    def layer_norm_forward(x: CLArray, normalized_shape: Sequence[int] | int, weight: CLArray | None = None,
                           bias: CLArray | None = None, eps: float = 1e-5) -> tuple[CLArray, CLArray, CLArray]:
        """``(y, mean, rstd)``; ``mean`` and ``rstd`` hold one value per normalized row, in the compute dtype."""
        _, rows, cols = norm_rows(x, normalized_shape)
        xf = _contig(x)
        acc = compute_dtype(x.dtype)
        y, mean, rstd = rt.empty(x.shape, x.dtype), rt.empty((rows,), acc), rt.empty((rows,), acc)
        w, b = param(weight, x.dtype, xf), param(bias, x.dtype, xf)
        if cols:
            launch("layer_norm_forward", x.dtype, rows, cols, xf.buffer, xf.offset, w.buffer, w.offset, b.buffer,
                   b.offset, y.buffer, mean.buffer, rstd.buffer, cols, eps, int(weight is not None),
                   int(bias is not None))
        return y, mean, rstd

    def layer_norm_backward(grad: CLArray, x: CLArray, normalized_shape: Sequence[int] | int,
                            weight: CLArray | None, mean: CLArray, rstd: CLArray) -> tuple[Any, Any, Any]:
        """``(dx, dweight, dbias)`` from the saved ``mean`` and ``rstd``; dweight is None without a weight
        (dbias is given always: the caller drops it where there was no bias)."""
        shape, rows, cols = norm_rows(x, normalized_shape)
        xf, gf = _contig(x), _contig(grad, x.dtype)
        w = param(weight, x.dtype, xf)
        dx = rt.empty(x.shape, x.dtype)
        dw, db = rt.empty(shape, x.dtype), rt.empty(shape, x.dtype)
        if cols:
            launch("layer_norm_backward", x.dtype, rows, cols, gf.buffer, gf.offset, xf.buffer, xf.offset, w.buffer,
                   w.offset, mean.buffer, rstd.buffer, dx.buffer, cols, int(weight is not None))
            if rows:
                kernel("layer_norm_param_grads", x.dtype)(rt.queue, rt.grid(cols), None, gf.buffer, gf.offset,
                                                          xf.buffer, xf.offset, mean.buffer, rstd.buffer, dw.buffer,
                                                          db.buffer, rows, cols)
            else:
                from ._elementwise import copy_into
                copy_into(dw, 0)
                copy_into(db, 0)
        return dx, None if weight is None else dw, db

    # -- cross_entropy with class indices -------------------------------------------------------------------

    def class_rows(x: CLArray, target: CLArray, what: str) -> tuple[CLArray, CLArray, int, int]:
        """(N, C, d1, ...) logits and (N, d1, ...) targets as contiguous (rows, C) and (rows,) int64."""
        if x.ndim == 0:
            raise ValueError(f"{what}: the input needs at least one dimension (classes)")
        rows_shape = (x.shape[0], *x.shape[2:]) if x.ndim > 1 else ()
        if target.shape != rows_shape:
            raise ValueError(f"{what}: target of shape {list(target.shape)} does not match input of shape "
                             f"{list(x.shape)} (expected {list(rows_shape)})")
        t = _contig(target, _LONG)
        if x.ndim == 1:
            return _contig(x), t, 1, x.shape[0]
        moved = x if x.ndim == 2 else _permute(x, (0, *range(2, x.ndim), 1))
        return _contig(moved), t, math.prod(rows_shape), x.shape[1]

    def cross_entropy_forward(x: CLArray, target: CLArray, weight: CLArray | None = None,
                              ignore_index: int = -100) -> tuple[CLArray, CLArray, CLArray]:
        """Per-row ``(loss, (max, log-sum) pairs, weight of the row's target)`` for class-index targets."""
        xf, t, n, c = class_rows(x, target, "cross_entropy")
        acc = compute_dtype(x.dtype)
        loss, lse, roww = rt.empty((n,), acc), rt.empty((n, 2), acc), rt.empty((n,), acc)
        w = param(weight, x.dtype, xf)
        if n:
            if c == 0:
                raise ValueError(f"cross_entropy: the input of shape {list(x.shape)} has no classes")
            launch("cross_entropy_forward", x.dtype, n, c, xf.buffer, xf.offset, t.buffer, t.offset, w.buffer,
                   w.offset, loss.buffer, lse.buffer, roww.buffer, c, ignore_index, int(weight is not None),
                   rt.error_flag)
        return loss, lse, roww

    def cross_entropy_backward(grad_rows: CLArray, x: CLArray, target: CLArray, weight: CLArray | None,
                               lse: CLArray, ignore_index: int = -100) -> CLArray:
        """dx of the per-row losses given their gradients ``grad_rows`` ((rows,) or one value for every row:
        the reduction is already applied)."""
        xf, t, n, c = class_rows(x, target, "cross_entropy")
        if grad_rows.size not in (1, n):
            raise ValueError(f"cross_entropy_backward: {grad_rows.size} row gradients for {n} rows")
        g = _contig(grad_rows, x.dtype)
        w = param(weight, x.dtype, xf)
        dx = rt.empty(xf.shape, x.dtype)
        if dx.size:
            launch("cross_entropy_backward", x.dtype, n, c, g.buffer, g.offset, 0 if g.size == 1 else 1, xf.buffer,
                   xf.offset, t.buffer, t.offset, w.buffer, w.offset, lse.buffer, dx.buffer, c, ignore_index,
                   int(weight is not None))
        if x.ndim <= 2:
            return dx.view(x.shape)
        moved = dx.view((x.shape[0], *x.shape[2:], x.shape[1]))
        return _permute(moved, _inverse((0, *range(2, x.ndim), 1)))

    # -- ferro.amp's check for inf/nan and unscale ----------------------------------------------------------

    def fused_amp_unscale(grads: Sequence[CLArray], found_inf: CLArray, inv_scale: float) -> None:
        """Each gradient times ``inv_scale`` in place, ``found_inf`` set to 1 where one holds inf or nan: one
        launch per gradient, none waiting for the device. A strided gradient, or one of a dtype without its own
        instance (bfloat16), runs on a contiguous copy (in float32) written back, rounded once."""
        inv = np.float32(inv_scale)
        for g in grads:
            if not g.size:
                continue
            own = g.dtype.name in _FLOATS
            x = g if own and g.contiguous else _contig(g, g.dtype if own else np.dtype(np.float32))
            kernel("amp_unscale", x.dtype)(rt.queue, rt.grid(x.size), None, x.buffer, x.offset,
                                           x.size, found_inf.buffer, found_inf.offset, inv)
            if x is not g:
                from ._elementwise import copy_into
                copy_into(g, x)

    table: dict[str, Callable[..., Any]] = {"fused_amp_unscale": fused_amp_unscale}
    table["softmax"], table["softmax_backward"] = softmax_pair(log=False)
    table["log_softmax"], table["log_softmax_backward"] = softmax_pair(log=True)
    table.update({
        "layer_norm_forward": layer_norm_forward, "layer_norm_backward": layer_norm_backward,
        "cross_entropy_forward": cross_entropy_forward, "cross_entropy_backward": cross_entropy_backward,
    })
    return table
