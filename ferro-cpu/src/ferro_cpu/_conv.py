"""Fused conv2d and conv_transpose2d kernels on NumPy (the contract is in ``ferro/_ops/fused.py``).

The input is padded into a channels-last buffer (N, H, W, C) and its windows
are a strided view of it (the strides ``sliding_window_view`` gives), not a
gather: the convolution is one matmul of those windows (copied once, in rows
of ``kh * kw * C``, channels innermost, which NumPy copies fast) with the
weight per group. The input's gradient is, at stride 1, the full convolution
of the gradient with the flipped weight (the same kernel); at a stride that
divides the kernel, one im2col product of the stride's sub-kernels (all
phases of the input at once); otherwise ``kh * kw`` strided slice-adds into
a padded buffer (the windows' positions of kernel element ``(i, j)`` are one
strided slice), never ``np.add.at``. Stride-1 convolutions of 8-32 channels
go to ``_conv_shifted.py`` (shifted products, no im2col): where the output
keeps the input's width (8-24 channels, 64 positions and up), a row-padded
NCHW grid, else on large images a fully padded one.
Channels-last keeps the innermost loop of every strided NumPy op long (C
elements), where NCHW would make it a few elements of a small image row; where
an image row is the longer (one-channel images), the columns are built along
rows instead, and a kernel covering its whole input is a linear layer (max
pooling: ``_maxpool.py``).
Small images (fewer than PER_SAMPLE output positions, one group) build their
columns a few images at a time into one cache-sized buffer, each block
multiplied right after it is copied, and keep their padded input, not the 9x
larger columns, for the weight's gradient, which builds its columns again the
same way: in a training step the whole columns went out to memory and came
back for the backward.
Only float32 and float64 come here (``ferro/_ops/fused.py`` checks).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from typing import Any

from ._conv_shifted import FLOOR, shifted_kernels

__all__ = ["RAN", "conv_kernels"]

Pair = tuple[int, int]

#: The largest columns conv2d's forward keeps for the weight's gradient (bytes): beyond it they are built again
#: in the backward, so that a deep network of large images does not hold its windows' copies, 9x each 3x3
#: layer's input, from forward to backward.
KEEP_LIMIT = 32 << 20
#: From this many output positions per sample, channels-last columns are multiplied sample by sample into an
#: NCHW output (N products of (O, K) @ (K, OH*OW)) instead of one product and a transposing copy.
PER_SAMPLE = 512
#: The same for the weight's gradient from kept columns: N products (O, OH*OW) @ (OH*OW, K), summed, instead of
#: a transposing copy of grad and one product (measured: from 64 positions on, the per-sample products win).
GRAD_PER_SAMPLE = 64
#: Below PER_SAMPLE positions (one group), the columns are built a few images at a time into one buffer of about
#: this many bytes, in cache for the product that reads it, and the forward keeps the padded input (not its 9x
#: larger columns) for the weight's gradient, which builds them again the same way. 0: all at once, kept.
BLOCK = 512 << 10
#: How many times the strided input gradient ran as one product of sub-kernels, the forward built its columns in
#: blocks, the weight's gradient its own from the kept padded input, and columns were built channels first (the
#: tests count them).
RAN = {"sub_kernels": 0, "blocked": 0, "blocked_weight_grad": 0, "channels_first": 0}


def conv_kernels(np: Any, pool: Any) -> dict[str, Callable[..., Any]]:
    """The fused conv2d / conv_transpose2d kernels over NumPy ``np``; their large buffers (padded inputs, columns,
    products, outputs) come from ``pool``, reused without page faults."""
    shifted = shifted_kernels(np, pool)

    def empty(shape: tuple[int, ...], dtype: Any) -> Any:
        return pool.empty(shape, dtype, FLOOR)

    def zeros(shape: tuple[int, ...], dtype: Any) -> Any:
        out = empty(shape, dtype)
        out.fill(0)
        return out

    def copy(a: Any) -> Any:
        """A C-contiguous copy of ``a``."""
        out = empty(a.shape, a.dtype)
        np.copyto(out, a)
        return out

    def mm(a: Any, b: Any) -> Any:
        """``a @ b`` into a pooled buffer."""
        shape = (*np.broadcast_shapes(a.shape[:-2], b.shape[:-2]), a.shape[-2], b.shape[-1])
        return np.matmul(a, b, out=empty(shape, np.result_type(a, b)))

    def padded(x: Any, padding: Pair, value: float) -> Any:
        """``x`` (N, C, H, W) padded with ``value``, as a new channels-last (N, H', W', C) array."""
        n, c, h, w = x.shape
        ph, pw = padding
        out = empty((n, h + 2 * ph, w + 2 * pw, c), x.dtype)
        if ph:  # the border only: the interior is written next
            out[:, :ph].fill(value)
            out[:, ph + h:].fill(value)
        if pw:
            out[:, ph:ph + h, :pw].fill(value)
            out[:, ph:ph + h, pw + w:].fill(value)
        np.copyto(out[:, ph:ph + h, pw:pw + w], x.transpose(0, 2, 3, 1))
        return out

    def unpadded(gp: Any, padding: Pair, shape: tuple[int, ...]) -> Any:
        """The (N, C, H, W) interior of a channels-last padded buffer, contiguous."""
        ph, pw = padding
        return copy(gp[:, ph:ph + shape[2], pw:pw + shape[3]].transpose(0, 3, 1, 2))

    def out_size(size: tuple[int, ...], kernel: Pair, stride: Pair, dilation: Pair, padding: Pair = (0, 0)) -> Pair:
        return tuple((size[i] + 2 * padding[i] - dilation[i] * (kernel[i] - 1) - 1) // stride[i] + 1
                     for i in range(2))

    def taps(kernel: Pair, stride: Pair, dilation: Pair, out: Pair) -> Iterator[tuple[int, int, tuple[slice, ...]]]:
        """For each kernel element (i, j), the strided (rows, cols) of a padded (N, H', W', C) buffer its
        output positions read."""
        for i in range(kernel[0]):
            rows = slice(i * dilation[0], i * dilation[0] + stride[0] * (out[0] - 1) + 1, stride[0])
            for j in range(kernel[1]):
                cols = slice(j * dilation[1], j * dilation[1] + stride[1] * (out[1] - 1) + 1, stride[1])
                yield i, j, (slice(None), rows, cols)

    def columns(xp: Any, kernel: Pair, stride: Pair, dilation: Pair) -> Any:
        """(N, OH, OW, kh, kw, C): the windows of the channels-last padded input ``xp`` (contiguous), a view."""
        n, h, w, c = xp.strides
        shape = (xp.shape[0], *out_size(xp.shape[1:3], kernel, stride, dilation), *kernel, xp.shape[3])
        # sliding_window_view's strides, built directly: its argument checks cost more than the copy they feed
        strides = (n, h * stride[0], w * stride[1], h * dilation[0], w * dilation[1], c)
        return np.ndarray(shape, xp.dtype, buffer=xp, strides=strides)

    def groups_of(weight: Any, groups: int, c: int) -> Iterator[tuple[slice, slice, Any]]:
        """Per group: its input channels, output channels and weight as (O/g, kh * kw * C/g), channels last."""
        og, cg = weight.shape[0] // groups, c // groups
        for g in range(groups):
            w = weight[g * og:(g + 1) * og]
            yield slice(g * cg, (g + 1) * cg), slice(g * og, (g + 1) * og), w.transpose(0, 2, 3, 1).reshape(og, -1)

    def blocks_of(col: Any) -> Iterator[tuple[int, int, Any]]:
        """The columns ``col`` (N, OH, OW, kh, kw, C) a few images at a time: each block's first image, count
        and rows (m * OH * OW, kh * kw * C), copied into one buffer of about BLOCK bytes (reused: it stays in
        the core's cache for the product that reads it)."""
        n = col.shape[0]
        b = max(1, min(n, BLOCK // (math.prod(col.shape[1:]) * col.itemsize)))
        buf = empty((b, *col.shape[1:]), col.dtype)
        k = math.prod(col.shape[3:])
        for n0 in range(0, n, b):
            m = min(b, n - n0)
            np.copyto(buf[:m], col[n0:n0 + m])
            yield n0, m, buf[:m].reshape(-1, k)

    def rows_of(col: Any, cs: slice, whole: bool) -> Any:
        return copy(col if whole else col[..., cs]).reshape(-1, col.shape[3] * col.shape[4] * (cs.stop - cs.start))

    # Channels first: where a window row holds fewer elements in channels-last order (kw * C, or C when dilated)
    # than an output row has positions, the copies run along output rows instead: columns (N, C * kh * kw,
    # OH * OW) of the (unpadded: not copied) NCHW input, the output (N, O, OH * OW) as one batched product (NCHW:
    # no transposing copy; OpenBLAS also runs N products (O, K) @ (K, OH*OW) faster than one over N*OH*OW
    # columns at K = 16). One group only.

    def channels_first(c: int, kernel: Pair, out: Pair, dilation: Pair, groups: int) -> bool:
        return groups == 1 and (c * kernel[1] if dilation[1] == 1 else c) < out[1]

    def padded_nchw(x: Any, padding: Pair) -> Any:
        if not any(padding):
            return x if x.flags.c_contiguous else copy(x)  # (the columns' view is built on its buffer)
        n, c, h, w = x.shape
        ph, pw = padding
        xp = zeros((n, c, h + 2 * ph, w + 2 * pw), x.dtype)
        xp[:, :, ph:ph + h, pw:pw + w] = x
        return xp

    def columns_first(x: Any, kernel: Pair, stride: Pair, padding: Pair, dilation: Pair) -> Any:
        """(N, C * kh * kw, OH * OW): the windows of ``x`` (N, C, H, W), per sample one row per (channel, kernel
        element)."""
        RAN["channels_first"] += 1
        xp = padded_nchw(x, padding)
        out = out_size(xp.shape[2:], kernel, stride, dilation)
        sn, sc, sh, sw = xp.strides
        view = np.ndarray((xp.shape[0], xp.shape[1], *kernel, *out), xp.dtype, buffer=xp, offset=0,
                          strides=(sn, sc, sh * dilation[0], sw * dilation[1], sh * stride[0], sw * stride[1]))
        return copy(view).reshape(xp.shape[0], xp.shape[1] * kernel[0] * kernel[1], -1)

    def whole(size: tuple[int, ...], kernel: Pair, padding: Pair, dilation: Pair, groups: int) -> bool:
        """Whether the kernel covers the whole unpadded input: one output position, a linear layer on (N, C*H*W)."""
        return groups == 1 and tuple(kernel) == tuple(size) and padding == (0, 0) and dilation == (1, 1)

    def batch_first(a: Any) -> Any:
        """(C, N, ...) to a contiguous (N, C, ...), and back."""
        return copy(a.swapaxes(0, 1))

    def kept(cols: Any) -> Any:
        return cols if cols.nbytes <= KEEP_LIMIT else None

    def conv2d_keeping(x: Any, weight: Any, bias: Any, stride: Pair, padding: Pair, dilation: Pair,
                       groups: int) -> tuple[Any, Any]:
        """conv2d's output and, for the weight's gradient, the columns it multiplied, or where it built them in
        blocks its padded input (one group; else None)."""
        out = out_size(x.shape[2:], weight.shape[2:], stride, dilation, padding)
        if whole(x.shape[2:], weight.shape[2:], padding, dilation, groups):
            y = mm(x.reshape(x.shape[0], -1), weight.reshape(weight.shape[0], -1).T)
            if bias is not None:
                y += bias
            return y.reshape(*y.shape, 1, 1), None
        if shifted["same_width"](x.shape, weight.shape[0], weight.shape[2:], stride, padding, dilation, groups, True):
            # output rows as wide as the input's: stacked shifts of a row-padded grid, NCHW in and out; the grid
            # kept for the weight's gradient
            y, grid = shifted["rows_forward"](x, weight, bias, padding, dilation)
            return y, kept(grid)
        if shifted["applies"](x.shape[1], out, stride, groups):
            y, stacked = shifted["forward"](x, weight, bias, padding, dilation)
            return y, None if stacked is None else kept(stacked)
        if channels_first(x.shape[1], weight.shape[2:], out, dilation, groups):
            cols = columns_first(x, weight.shape[2:], stride, padding, dilation)
            y = mm(weight.reshape(weight.shape[0], -1), cols)  # (N, O, OH*OW)
            if bias is not None:
                y += bias[:, None]
            return y.reshape(*y.shape[:2], *out), kept(cols)
        xp = padded(x, padding, 0)
        col = columns(xp, weight.shape[2:], stride, dilation)
        if groups == 1 and out[0] * out[1] < PER_SAMPLE and BLOCK:
            # the columns a few images at a time, in cache for their product; the padded input is kept
            RAN["blocked"] += 1
            y = empty((*col.shape[:3], weight.shape[0]), x.dtype)  # (N, OH, OW, O)
            y2 = y.reshape(-1, weight.shape[0])
            w = weight.transpose(2, 3, 1, 0).reshape(-1, weight.shape[0])  # (K, O)
            positions = out[0] * out[1]
            for n0, m, rows in blocks_of(col):
                np.matmul(rows, w, out=y2[n0 * positions:(n0 + m) * positions])
            if bias is not None:
                y += bias
            return copy(y.transpose(0, 3, 1, 2)), kept(xp)
        if groups == 1 and out[0] * out[1] >= PER_SAMPLE:
            # one product per sample, (O, K) @ (K, OH*OW), written as NCHW: no transposing copy of the output
            rows = rows_of(col, slice(0, x.shape[1]), True)
            y = np.matmul(weight.transpose(0, 2, 3, 1).reshape(weight.shape[0], -1),
                          rows.reshape(x.shape[0], out[0] * out[1], -1).transpose(0, 2, 1),
                          out=empty((x.shape[0], weight.shape[0], out[0] * out[1]), x.dtype))
            if bias is not None:
                y += bias[:, None]
            return y.reshape(*y.shape[:2], *out), kept(rows)
        y = empty((*col.shape[:3], weight.shape[0]), x.dtype)  # (N, OH, OW, O)
        y2 = y.reshape(-1, weight.shape[0])
        rows = None
        for cs, os, w in groups_of(weight, groups, x.shape[1]):
            rows = rows_of(col, cs, groups == 1)
            np.matmul(rows, w.T, out=y2[:, os] if groups > 1 else y2)
        if bias is not None:
            y += bias
        return copy(y.transpose(0, 3, 1, 2)), kept(rows) if groups == 1 else None

    def conv2d_forward(x: Any, weight: Any, bias: Any, stride: Pair, padding: Pair, dilation: Pair,
                       groups: int) -> Any:
        return conv2d_keeping(x, weight, bias, stride, padding, dilation, groups)[0]

    # what fused.py's conv2d rule calls instead where the weight's gradient will be wanted: the columns kept
    # until the backward (an extra copy of the input's windows held) save building them again there
    conv2d_forward.keeping = conv2d_keeping  # type: ignore[attr-defined]

    def input_grad(grad: Any, weight: Any, shape: tuple[int, ...], stride: Pair, padding: Pair, dilation: Pair,
                   groups: int) -> Any:
        """The gradient of conv2d's input of ``shape`` (N, C, H, W) for its output's gradient ``grad``."""
        kernel = weight.shape[2:]
        if whole(shape[2:], kernel, padding, dilation, groups):
            return mm(grad.reshape(shape[0], -1), weight.reshape(weight.shape[0], -1)).reshape(shape)
        full = tuple(d * (k - 1) - p for k, d, p in zip(kernel, dilation, padding))
        # (the full convolution computes each input position's whole window: more work than spreading the
        # outputs where the input has many more positions than grad, as a transposed convolution's 1x1 input)
        if (stride == (1, 1) and min(full) >= 0 and shape[2] * shape[3] <= 2 * grad.shape[2] * grad.shape[3]
                and all(grad.shape[2 + i] + 2 * full[i] - dilation[i] * (kernel[i] - 1) == shape[2 + i]
                        for i in range(2))):
            # stride 1: the input's gradient is the full convolution of grad with the flipped, transposed weight
            og, cg = weight.shape[0] // groups, shape[1] // groups
            flipped = weight.reshape(groups, og, cg, *kernel).transpose(0, 2, 1, 3, 4)
            flipped = flipped.reshape(groups * cg, og, *kernel)[:, :, ::-1, ::-1]
            return conv2d_forward(grad, flipped, None, stride, full, dilation, groups)
        out = grad.shape[2:]
        if channels_first(shape[1], kernel, out, dilation, groups):
            # each output's gradient spread over its window: (C, kh, kw, N, OH, OW), added into (C, N, H', W')
            cols = mm(weight.reshape(weight.shape[0], -1).T, batch_first(grad).reshape(weight.shape[0], -1))
            cols = cols.reshape(shape[1], *kernel, shape[0], *out)
            gp = zeros((shape[1], shape[0], shape[2] + 2 * padding[0], shape[3] + 2 * padding[1]), grad.dtype)
            for i, j, (_, rows, cs) in taps(kernel, stride, dilation, out):
                gp[:, :, rows, cs] += cols[:, i, j]
            return batch_first(gp[:, :, padding[0]:padding[0] + shape[2], padding[1]:padding[1] + shape[3]])
        if groups == 1 and dilation == (1, 1) and kernel[0] % stride[0] == 0 and kernel[1] % stride[1] == 0:
            return by_sub_kernels(grad, weight, shape, stride, padding)
        g2 = copy(grad.transpose(0, 2, 3, 1)).reshape(-1, weight.shape[0])  # (N*OH*OW, O)
        if groups == 1:
            return spread_by_phase(g2, weight, shape, out, stride, padding, dilation)
        gp = zeros((shape[0], shape[2] + 2 * padding[0], shape[3] + 2 * padding[1], shape[1]), grad.dtype)
        for cs, os, w in groups_of(weight, groups, shape[1]):
            # each output's gradient spread over its window: (N, OH, OW, kh, kw, C/g)
            cols = mm(g2[:, os], w).reshape(*grad.shape[:1], *out, *kernel, cs.stop - cs.start)
            for i, j, key in taps(kernel, stride, dilation, out):
                gp[(*key, cs)] += cols[:, :, :, i, j]
        return unpadded(gp, padding, shape)

    def by_sub_kernels(grad: Any, weight: Any, shape: tuple[int, ...], stride: Pair, padding: Pair) -> Any:
        """conv2d's input gradient (one group, undilated, the kernel a multiple of the stride) as one im2col
        product. Input row ``h`` of phase ``r = (h + ph) % s`` takes the taps ``r + s * t`` (t < kh / s) of the
        grad rows ``m - t``, ``m = (h + ph) // s``: for every phase a (kh/s, kw/s) window of grad padded by
        ``k/s - 1`` in front, the same windows for all s*s phases. So one product (N*M*M', kh*kw/(s*s)*O) @
        (kh*kw/(s*s)*O, s*s*C) gives every phase (the phases' weights side by side), instead of kh*kw narrow
        products and as many strided adds; the phases interleave into the input's rows and columns."""
        RAN["sub_kernels"] += 1
        n, c, h, w = shape
        o, kernel = weight.shape[0], weight.shape[2:]
        sub = (kernel[0] // stride[0], kernel[1] // stride[1])
        m = ((h - 1 + padding[0]) // stride[0] + 1, (w - 1 + padding[1]) // stride[1] + 1)  # rows of each phase
        used = (min(grad.shape[2], m[0]), min(grad.shape[3], m[1]))
        gp = zeros((n, m[0] + sub[0] - 1, m[1] + sub[1] - 1, o), grad.dtype)  # grad, channels last, padded
        np.copyto(gp[:, sub[0] - 1:sub[0] - 1 + used[0], sub[1] - 1:sub[1] - 1 + used[1]],
                  grad[:, :, :used[0], :used[1]].transpose(0, 2, 3, 1))
        rows = rows_of(columns(gp, sub, (1, 1), (1, 1)), slice(0, o), True)  # (N*M*M', sub * O), windows t'
        # window element t' is tap r + s * (sub - 1 - t'): (O, C, sub, s, sub', s') flipped in t, to
        # ((t', t'', O), (r, r', C))
        taps_w = weight.reshape(o, c, sub[0], stride[0], sub[1], stride[1])[:, :, ::-1, :, ::-1]
        taps_w = np.ascontiguousarray(taps_w.transpose(2, 4, 0, 3, 5, 1)).reshape(rows.shape[1], -1)
        phases = mm(rows, taps_w).reshape(n, m[0], m[1], stride[0], stride[1], c)
        return interleaved(phases.transpose(3, 4, 0, 1, 2, 5), shape, stride, padding)

    def spread_by_phase(g2: Any, weight: Any, shape: tuple[int, ...], out: Pair, stride: Pair, padding: Pair,
                        dilation: Pair) -> Any:
        """conv2d's input gradient (one group) by spreading each output's gradient over its window: per kernel
        element a (N*OH*OW, C) product, added into the padded input's positions, which at a stride s are one
        of s*s phases (rows and columns of one remainder mod s): each phase a contiguous (N, H'/s, W'/s, C)
        buffer, so that every add runs along whole rows (OW * C elements), not C at a time."""
        n, c, h, w = shape
        kernel = weight.shape[2:]
        hq, wq = (-(-(h + 2 * padding[0]) // stride[0]), -(-(w + 2 * padding[1]) // stride[1]))
        phases = zeros((*stride, n, hq, wq, c), g2.dtype)
        taps_w = np.ascontiguousarray(weight.transpose(2, 3, 0, 1)).reshape(-1, weight.shape[0], c)  # (kh*kw, O, C)
        cols = mm(g2, taps_w)  # (kh*kw, N*OH*OW, C)
        for i in range(kernel[0]):
            q, a = divmod(i * dilation[0], stride[0])
            for j in range(kernel[1]):
                r, b = divmod(j * dilation[1], stride[1])
                phases[a, b, :, q:q + out[0], r:r + out[1]] += cols[i * kernel[1] + j].reshape(n, *out, c)
        return interleaved(phases, shape, stride, padding)

    def interleaved(phases: Any, shape: tuple[int, ...], stride: Pair, padding: Pair) -> Any:
        """The (N, C, H, W) input of ``shape`` from its phases (s, s', N, H'/s, W'/s', C): phase (a, b) holds the
        padded input's rows a mod s and columns b mod s'."""
        h, w = shape[2:]
        gx = empty(shape, phases.dtype)
        for a in range(stride[0]):
            h0 = (a - padding[0]) % stride[0]  # the first row of x in phase a
            u0 = (h0 + padding[0]) // stride[0]
            for b in range(stride[1]):
                w0 = (b - padding[1]) % stride[1]
                v0 = (w0 + padding[1]) // stride[1]
                rows, cols_ = len(range(h0, h, stride[0])), len(range(w0, w, stride[1]))
                gx[:, :, h0::stride[0], w0::stride[1]] = (
                    phases[a, b, :, u0:u0 + rows, v0:v0 + cols_].transpose(0, 3, 1, 2))
        return gx

    def weight_grad(grad: Any, x: Any, weight_shape: tuple[int, ...], stride: Pair, padding: Pair, dilation: Pair,
                    groups: int, kept: Any = None) -> Any:
        """The gradient of conv2d's weight (of ``weight_shape``) for input ``x`` and output gradient ``grad``
        (``kept``: the columns :func:`conv2d_keeping` returned for ``x``, or None)."""
        kernel = weight_shape[2:]
        if whole(x.shape[2:], kernel, padding, dilation, groups):
            return (grad.reshape(x.shape[0], -1).T @ x.reshape(x.shape[0], -1)).reshape(weight_shape)
        if shifted["same_width"](x.shape, weight_shape[0], kernel, stride, padding, dilation, groups):
            # (the forward kept its row grid where it ran the same-width products, else nothing or another stack)
            grid = shifted["same_width"](x.shape, weight_shape[0], kernel, stride, padding, dilation, groups, True)
            return shifted["rows_weight_grad"](grad, x, weight_shape, padding, dilation, kept if grid else None)
        if shifted["applies"](x.shape[1], grad.shape[2:], stride, groups):
            gw = shifted["weight_grad"](grad, x, weight_shape, padding, dilation, kept)
            if gw is not None:
                return gw
            kept = None  # (the stacked input, not im2col's columns)
        if channels_first(x.shape[1], kernel, grad.shape[2:], dilation, groups):
            # per sample (O, OH*OW) @ (OH*OW, C*kh*kw), summed: grad read as it is, NCHW
            cols = kept if kept is not None else columns_first(x, kernel, stride, padding, dilation)
            g = grad if grad.flags.c_contiguous else copy(grad)
            part = mm(g.reshape(*g.shape[:2], -1), cols.transpose(0, 2, 1))
            return part.sum(0).reshape(weight_shape)
        if kept is None and groups == 1 and grad.shape[2] * grad.shape[3] < PER_SAMPLE and BLOCK:
            kept = padded(x, padding, 0)  # (a transposed convolution's weight gradient: nothing kept) blocks too
        if kept is not None and kept.ndim == 4:
            # the padded input the forward kept (one group): its columns a few images at a time, times grad per
            # image, (K, OH*OW) @ (OH*OW, O) (OpenBLAS's faster orientation), summed; below GRAD_PER_SAMPLE
            # positions one product a block, (K, m*OH*OW) @ (m*OH*OW, O), of grad channels last
            RAN["blocked_weight_grad"] += 1
            o, n, positions = weight_shape[0], x.shape[0], grad.shape[2] * grad.shape[3]
            total = np.zeros((math.prod(kernel) * x.shape[1], o), grad.dtype)
            per_image = positions >= GRAD_PER_SAMPLE
            g = grad.reshape(n, o, -1) if per_image else copy(grad.transpose(0, 2, 3, 1)).reshape(-1, o)
            for n0, m, rows in blocks_of(columns(kept, kernel, stride, dilation)):
                if per_image:
                    part = np.matmul(rows.reshape(m, -1, total.shape[0]).transpose(0, 2, 1),
                                     g[n0:n0 + m].transpose(0, 2, 1))
                    total += part.sum(0) if m > 1 else part[0]
                else:
                    total += rows.T @ g[n0 * positions:(n0 + m) * positions]
            return total.reshape(*kernel, -1, o).transpose(3, 2, 0, 1)
        if groups == 1 and grad.shape[2] * grad.shape[3] >= GRAD_PER_SAMPLE and grad.flags.c_contiguous:
            # per sample, (O, OH*OW) @ (OH*OW, K), summed: grad read as it is, NCHW
            n = x.shape[0]
            if kept is None:
                kept = rows_of(columns(padded(x, padding, 0), kernel, stride, dilation), slice(0, x.shape[1]), True)
            part = np.matmul(grad.reshape(n, weight_shape[0], -1), kept.reshape(n, -1, kept.shape[1]),
                             out=empty((n, weight_shape[0], kept.shape[1]), grad.dtype))
            return part.sum(0).reshape(weight_shape[0], *kernel, -1).transpose(0, 3, 1, 2)
        g2 = copy(grad.transpose(0, 2, 3, 1)).reshape(-1, weight_shape[0])  # (N*OH*OW, O)
        if kept is not None:
            return (g2.T @ kept).reshape(weight_shape[0], *kernel, -1).transpose(0, 3, 1, 2)
        col = columns(padded(x, padding, 0), kernel, stride, dilation)
        gw = np.empty(weight_shape, dtype=x.dtype)
        og, cg = weight_shape[0] // groups, x.shape[1] // groups
        for g in range(groups):
            cs, os = slice(g * cg, (g + 1) * cg), slice(g * og, (g + 1) * og)
            part = (g2[:, os].T @ rows_of(col, cs, groups == 1)).reshape(og, *kernel, -1)
            gw[os] = part.transpose(0, 3, 1, 2)
        return gw

    def conv2d_backward(grad: Any, x: Any, weight: Any, has_bias: bool, stride: Pair, padding: Pair,
                        dilation: Pair, groups: int, needs: tuple[bool, bool, bool],
                        kept: Any = None) -> tuple[Any, Any, Any]:
        gx = input_grad(grad, weight, x.shape, stride, padding, dilation, groups) if needs[0] else None
        gw = weight_grad(grad, x, weight.shape, stride, padding, dilation, groups, kept) if needs[1] else None
        gb = grad.sum((0, 2, 3)) if has_bias and needs[2] else None
        return gx, gw, gb

    # A transposed convolution is the adjoint of conv2d in its input: its output is conv2d's input gradient for
    # the weight (C_in, C_out/g, kh, kw), read as conv2d's (O, C/g, kh, kw); its input gradient is conv2d itself.

    def conv_transpose2d_forward(x: Any, weight: Any, bias: Any, stride: Pair, padding: Pair, output_padding: Pair,
                                 groups: int, dilation: Pair) -> Any:
        size = tuple((x.shape[2 + i] - 1) * stride[i] - 2 * padding[i] + dilation[i] * (weight.shape[2 + i] - 1)
                     + output_padding[i] + 1 for i in range(2))
        y = input_grad(x, weight, (x.shape[0], weight.shape[1] * groups, *size), stride, padding, dilation, groups)
        if bias is not None:
            y += bias.reshape(1, -1, 1, 1)
        return y

    def conv_transpose2d_backward(grad: Any, x: Any, weight: Any, has_bias: bool, stride: Pair, padding: Pair,
                                  output_padding: Pair, groups: int, dilation: Pair,
                                  needs: tuple[bool, bool, bool]) -> tuple[Any, Any, Any]:
        # output_padding can leave windows of grad that no element of x spread into: conv2d over grad has
        # more outputs than x; they are dropped from gx, and count with a zero weight in gw.
        windows = out_size(grad.shape[2:], weight.shape[2:], stride, dilation, padding)
        gx = gw = None
        if needs[0]:
            gx = conv2d_forward(grad, weight, None, stride, padding, dilation, groups)
            gx = copy(gx[:, :, :x.shape[2], :x.shape[3]]) if windows != x.shape[2:] else gx
        if needs[1]:
            if windows != x.shape[2:]:
                x = np.pad(x, ((0, 0), (0, 0), (0, windows[0] - x.shape[2]), (0, windows[1] - x.shape[3])))
            gw = weight_grad(x, grad, weight.shape, stride, padding, dilation, groups)
        gb = grad.sum((0, 2, 3)) if has_bias and needs[2] else None
        return gx, gw, gb

    return {"conv2d_forward": conv2d_forward, "conv2d_backward": conv2d_backward,
            "conv_transpose2d_forward": conv_transpose2d_forward,
            "conv_transpose2d_backward": conv_transpose2d_backward}
