"""Fused max_pool2d on NumPy (the contract is in ``ferro/_ops/fused.py``).

The input's windows are read as ``kh * kw`` planes, one per kernel element: strided
views of the NCHW array, or, where the windows tile the input and rows are short (the
digits CNN's 8x8 and 4x4 maps: NumPy then loops over rows of 4 or 2 elements), one
gather into window-major order by a cached flat index, after which every pass is one
contiguous loop. The maximum is their running ``np.maximum`` (a NaN wins). The kernel
keeps, for each window, the position of its first maximum in window order (PyTorch's
rule: tied maxima give the whole gradient to the first one; a NaN maximum, the first
NaN): the number of leading planes that are not the maximum, a running AND of
``plane != max`` summed over the planes (two passes over bytes a plane; a bitwise
select per plane took five). The backward of gathered windows scatters the gradient
into zeros at each window's maximum (its flat position from the argmax and the cached
index: one pass); other disjoint windows write each plane once (the gradient where the
plane holds the argmax, else +0.0, by a bitwise select: ``np.where`` and ``putmask``
branch per element, ten times slower on random masks), and overlapping ones add into a
padded buffer.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ._rectifiers import select_into

__all__ = ["maxpool_kernels"]

Pair = tuple[int, int]

_GATHER_UP_TO = 1 << 21  # inputs (elements) whose windows are gathered (two int64 indexes of each, cached per shape)


def maxpool_kernels(np: Any, pool: Any) -> dict[str, Callable[..., Any]]:
    """``max_pool2d_forward`` and ``max_pool2d_backward`` over NumPy ``np``, large buffers from ``pool``."""

    def zeros(shape: tuple[int, ...], dtype: Any) -> Any:
        out = pool.empty(shape, dtype)
        out.fill(0)
        return out

    def out_size(size: tuple[int, ...], kernel: Pair, stride: Pair, dilation: Pair) -> Pair:
        return ((size[0] - dilation[0] * (kernel[0] - 1) - 1) // stride[0] + 1,
                (size[1] - dilation[1] * (kernel[1] - 1) - 1) // stride[1] + 1)

    def window_planes(xp: Any, kernel: Pair, stride: Pair, dilation: Pair, out: Pair) -> list[Any]:
        """Per kernel element in window order, the (N, C, OH, OW) strided view of NCHW ``xp`` its windows read."""
        planes = []
        for i in range(kernel[0]):
            rows = slice(i * dilation[0], i * dilation[0] + stride[0] * (out[0] - 1) + 1, stride[0])
            for j in range(kernel[1]):
                cols = slice(j * dilation[1], j * dilation[1] + stride[1] * (out[1] - 1) + 1, stride[1])
                planes.append(xp[:, :, rows, cols])
        return planes

    def first_max(misses: Any, count: int) -> Any:
        """The position of the first maximum per window: how many leading planes miss it (``misses`` yields,
        in window order, each plane's bool array of ``plane != max``, all but the last plane)."""
        leading = where = None
        for miss in misses:
            if leading is None:
                leading = miss
                where = miss.astype(np.int8 if count < 128 else np.int32)
            else:
                leading &= miss
                where += leading
        return where

    gathers: dict[tuple[int, ...], tuple[Any, Any, Any]] = {}  # (x's shape, kernel) -> gather's three arrays

    def gather(shape: tuple[int, ...], kernel: Pair, out: Pair) -> tuple[Any, Any, Any]:
        """For windows that tile the input: the flat index of each window element, (kh * kw, N * C * OH * OW)
        in window order then NCHW order; the same index window by window, and each window's offset in that
        (an argmax plus its window's offset is the position of the window's maximum in it)."""
        key = (*shape, *kernel)
        got = gathers.get(key)
        if got is None:
            (kh, kw), (oh, ow) = kernel, out
            n, c, h, w = shape
            flat = np.arange(n * c * h * w).reshape(shape)[:, :, :oh * kh, :ow * kw]
            index = np.ascontiguousarray(flat.reshape(n * c * oh, kh, ow, kw).transpose(1, 3, 0, 2)).reshape(
                kh * kw, -1)
            by_window = np.ascontiguousarray(index.T)  # a window's elements side by side
            starts = np.arange(index.shape[1]) * index.shape[0]
            if len(gathers) >= 16:
                gathers.clear()
            got = gathers[key] = (index, by_window, starts)
        return got

    def by_gather(x: Any, kernel: Pair, out: Pair) -> bool:
        """Whether max_pool2d's windows tile ``x`` with short rows: NumPy loops over rows of OW elements when it
        reads a kernel element's strided plane (two at a 4x4 input), where one gather into window-major order
        makes every later pass one contiguous loop."""
        return out[1] < 16 and x.size <= _GATHER_UP_TO

    def max_pool2d_forward(x: Any, kernel: Pair, stride: Pair, padding: Pair, dilation: Pair) -> tuple[Any, Any]:
        n, c, h, w = x.shape
        ph, pw = padding
        if ph or pw:
            xp = pool.empty((n, c, h + 2 * ph, w + 2 * pw), x.dtype)
            xp.fill(-np.inf)
            xp[:, :, ph:ph + h, pw:pw + w] = x
        else:
            xp = x  # (any strides: the planes are views)
        out = out_size(xp.shape[2:], kernel, stride, dilation)
        count = kernel[0] * kernel[1]
        if stride == kernel and dilation == (1, 1) and not (ph or pw) and count > 1 and by_gather(x, kernel, out):
            planes = list(x.reshape(-1).take(gather(x.shape, kernel, out)[0]))
        else:
            planes = window_planes(xp, kernel, stride, dilation, out)
        if count == 1:
            return planes[0].copy(), np.zeros(planes[0].shape, np.int8)
        best = np.maximum(planes[0], planes[1])
        for plane in planes[2:]:
            np.maximum(best, plane, out=best)  # a NaN wins
        careful = bool(np.isnan(best).any())  # a NaN maximum: a NaN plane counts as holding it

        def misses() -> Any:
            for plane in planes[:-1]:
                miss = np.not_equal(plane, best)
                if careful:
                    miss &= np.equal(plane, plane)
                yield miss
        return best.reshape(n, c, *out), first_max(misses(), count).reshape(n, c, *out)

    def max_pool2d_backward(grad: Any, x: Any, argmax: Any, kernel: Pair, stride: Pair, padding: Pair,
                            dilation: Pair) -> Any:
        out = argmax.shape[2:]
        if stride == kernel and dilation == (1, 1) and padding == (0, 0) and by_gather(x, kernel, out):
            _, by_window, starts = gather(x.shape, kernel, out)
            # each window's gradient written once at its maximum's flat position (zeros elsewhere: +0.0)
            at = argmax.reshape(-1).astype(np.intp)
            at += starts
            gx = np.zeros(x.shape, grad.dtype)
            gx.reshape(-1)[by_window.reshape(-1).take(at)] = grad.reshape(-1)
            return gx
        if stride == kernel and dilation == (1, 1) and padding == (0, 0):
            # disjoint windows: each plane written once, with the gradient where it holds the argmax, else +0.0
            whole = x.shape[2:] == (out[0] * kernel[0], out[1] * kernel[1])
            gx = pool.empty(x.shape, grad.dtype) if whole else zeros(x.shape, grad.dtype)
            bits = np.dtype(f"i{grad.dtype.itemsize}")
            gbits = grad.view(bits)
            for t, plane in enumerate(window_planes(gx, kernel, stride, dilation, out)):
                m = np.equal(argmax, t).view(np.int8).astype(bits)
                np.negative(m, out=m)
                np.bitwise_and(m, gbits, out=plane.view(bits))
            return gx
        gp = zeros((x.shape[0], x.shape[1], x.shape[2] + 2 * padding[0], x.shape[3] + 2 * padding[1]), grad.dtype)
        for t, plane in enumerate(window_planes(gp, kernel, stride, dilation, out)):
            plane += select_into(np, pool, argmax == t, grad, zeros(grad.shape, grad.dtype))
        ph, pw = padding
        if not (ph or pw):
            return gp
        gx = pool.empty(x.shape, grad.dtype)
        np.copyto(gx, gp[:, :, ph:ph + x.shape[2], pw:pw + x.shape[3]])
        return gx

    return {"max_pool2d_forward": max_pool2d_forward, "max_pool2d_backward": max_pool2d_backward}
