"""conv2d at stride 1 as shifted products over a padded grid (used by ``_conv.py`` where it wins).

The input is padded into a channels-first buffer (C, N, H', W') and flattened
to (C, N * H' * W'). An output position (n, h, w) is given the flat index of
input position (n, h, w), and kernel element (i, j) reads the input at that
index plus ``i * dh * W' + j * dw``: one offset for every output position.
The ``kw`` elements of a kernel row are stacked as rows of a (kw * C, ...)
buffer (the input shifted by ``j * dw``, ``kw`` contiguous copies), so that
kernel row ``i`` is one product of its (O, kw * C) weight with that buffer
shifted by ``i * dh * W'``, and the output the sum of ``kh`` products over
the padded grid (the positions past an output row's end or an image's last
output row are computed and dropped when the output is copied out to NCHW).
Against im2col, whose (N * OH * OW, kh * kw * C) copy is nine times the input
for 3x3 and is gathered C elements at a time, this copies ``kw`` times the
input in whole rows and adds ``kh - 1`` outputs; measured, it wins on large
images of few channels (docs/benchmarks.md, "Convolution algorithms by shape").

The forward runs a block of images at a time (BLOCK bytes of stack, at least
one image): the block padded into a grid whose border is zeroed once a call,
all ``kh * kw`` shifts stacked by one copy, one product with ``kh * kw * C``
inner elements while the stack is still in cache (a whole batch's stack, MiBs,
made its products wait on memory), the block's output copied out to NCHW. It
keeps nothing: the weight's gradient stacks the kernel rows of the whole batch
itself, as below (docs/benchmarks.md, "conv2d, second pass").

The weight's gradient is the same correlation the other way, per sample and
kernel row: the stacked buffer (kept from the forward) times the output
gradient laid on the same grid (zero where no output is). Those zeros meet
input values no true (output, input) pair holds; an infinite or NaN input
there would make ``0 * inf`` a NaN no exact sum has, so a non-finite result
is handed back as None for the caller's exact path to compute.

Images whose output rows are as long as the input's (stride 1, "same"
width: ``dw * (kw - 1) == 2 * pw``) take a per-image form of the same idea
(:func:`same_width` / ``rows_forward``): each image is padded by rows only,
into a flat (C, rows * W) grid, so that kernel element (i, j) reads output
position ``oh * W + ow`` at the flat offset ``i * dh * W + j * dw - pw``;
the taps that reach past an image row's end read the neighbouring row's
element, which the stack zeroes (the same columns for every image, a strided
fill a block). A block of images' ``kh * kw`` shifts is stacked by one copy
into a cache-sized buffer, and one batched product ``(O, kh * kw * C) @
(kh * kw * C, OH * OW)`` per image writes NCHW output directly: no
channels-last transpose in, none out, no extra grid positions (images of
more than ROWS_UNIT positions a band of output rows at a time; the weight's
gradient stacks only the ``kw`` column shifts: docs/benchmarks.md, "conv2d,
third pass").
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from . import _threads

__all__ = ["RAN", "shifted_kernels"]

Pair = tuple[int, int]

#: Where the shifted products are taken: input channels in [MIN_CHANNELS, MAX_CHANNELS] (each product's
#: inner dimension is ``kw * C``: too few and BLAS runs slowly, many and im2col's single product wins) and at
#: least MIN_POSITIONS output positions per image (below, the padded grid's extra positions cost more than
#: im2col's copy saves).
MIN_CHANNELS, MAX_CHANNELS, MIN_POSITIONS = 8, 32, 512
#: The forward stacks a block of images of about this many bytes at a time (0: the whole batch's kernel rows,
#: kept for the weight's gradient)
BLOCK = 512 << 10
#: Buffers from this size are pooled (below the pool's default floor): scratch of a few hundred KiB freed
#: and allocated again on every call would otherwise be page-faulted in each time where glibc maps it.
FLOOR = 64 << 10
#: The same-width forward stacks blocks of images of about this many bytes (at least one image): 16x16
#: images of 16 channels two at a time (measured: one image a block 1.3x slower, four 1.07x, eight 1.12x).
#: 0: not taken (im2col's paths instead).
#: Where the same-width products are taken: at least ROWS_MIN_POSITIONS output positions a sample (4x4 images, 16
#: positions, ran 1.3-1.7x im2col's time: products too small) and at most ROWS_MAX_CHANNELS input and output
#: channels (16 -> 32 or 32 -> 32 channels: im2col's (positions, K) @ (K, O) product wins there).
ROWS_MIN_POSITIONS, ROWS_MAX_CHANNELS = 64, 24
#: Output positions of one product of the same-width forward at most: larger images are cut into bands of rows
#: (at 32x32, bands of 8 rows: 0.88x the shifted products' time, where whole images, 590 KiB of stack, took 1.6x).
ROWS_UNIT = 256
#: The banded forward up to this many channels in and out (24 channels at 32x32: 1.17x the shifted products' time,
#: where 8 and 16 channels took 0.85-0.99x).
ROWS_BAND_MAX_CHANNELS = 16
ROWS_BLOCK = 320 << 10
#: The same-width weight gradient stacks blocks of images of about this many bytes (at least one image).
ROWS_GRAD_BLOCK = 1 << 20
#: The same-width weight gradient's per-image products read the output gradient as it is, ``(O, OH * W) @ (OH * W,
#: kw * C)`` with the stack read transposed, in float32 up to this many output positions a sample (0.90x the time
#: of ``(kw * C, OH * W) @ (OH * W, O)`` at the ResNet block's 16x16, 0.97x at 8x8; 1.02-1.03x at 32x32 and
#: 1.11x in float64 at 16x16, which keep the other way round: docs/benchmarks.md, "conv2d and batch norm,
#: fourth pass").
ROWS_GRAD_BY_GRAD = 256
#: Multiply-adds of a convolution from which its blocks of images run on several threads (``ferro.set_num_threads``,
#: the machine's idle cores: ``_threads``); every block computes what it computes on one thread, so the result does
#: not depend on the thread count.
SPLIT_WORK = _threads.SPLIT_WORK
#: How many times the shifted forward and weight gradient, and the same-width forward, ran (the tests count them).
RAN = {"forward": 0, "weight_grad": 0, "rows_forward": 0, "rows_weight_grad": 0, "rows_weight_grad_by_grad": 0,
       "threaded": 0}


def _threads_for(blocks: int, work: int) -> int:
    """The threads that run ``blocks`` blocks of a convolution of ``work`` multiply-adds."""
    if blocks < 2 or work < SPLIT_WORK or (asked := _threads.get_num_threads()) == 1:
        return 1
    threads = _threads._usable(min(asked, blocks))
    if threads > 1:
        RAN["threaded"] += 1
    return threads


class _Scratch(dict):  # type: ignore[type-arg]
    """Per thread slot, the buffers ``make()`` returns, made on the slot's first use."""

    def __init__(self, make: Callable[[], Any]) -> None:
        super().__init__()
        self.make = make

    def __missing__(self, slot: int) -> Any:
        out = self[slot] = self.make()
        return out


def shifted_kernels(np: Any, pool: Any) -> dict[str, Callable[..., Any]]:
    """``applies``, ``forward`` and ``weight_grad`` of the shifted-product conv2d over NumPy ``np``, buffers
    from ``pool``."""

    def empty(shape: tuple[int, ...], dtype: Any) -> Any:
        return pool.empty(shape, dtype, FLOOR)

    def applies(c: int, out: Pair, stride: Pair, groups: int) -> bool:
        """Whether conv2d of ``c`` input channels, ``out`` output positions, ``stride`` and ``groups`` takes
        the shifted products."""
        return (stride == (1, 1) and groups == 1 and MIN_CHANNELS <= c <= MAX_CHANNELS
                and out[0] * out[1] >= MIN_POSITIONS)

    def stacked(x: Any, kernel: Pair, padding: Pair, dilation: Pair) -> tuple[Any, tuple[int, ...]]:
        """(kw * C, N * H' * W' + the last kernel row's offset): row ``j * C + c`` the padded channel ``c``
        flattened and shifted left by ``j * dw`` (zeros after its end); and the grid (N, H', W')."""
        n, c, h, w = x.shape
        (ph, pw), (kh, kw), (dh, dw) = padding, kernel, dilation
        hp, wp = h + 2 * ph, w + 2 * pw
        total = n * hp * wp
        xc = empty((c, n, hp, wp), x.dtype)
        if ph:
            xc[:, :, :ph].fill(0)
            xc[:, :, ph + h:].fill(0)
        if pw:
            xc[:, :, ph:ph + h, :pw].fill(0)
            xc[:, :, ph:ph + h, pw + w:].fill(0)
        np.copyto(xc[:, :, ph:ph + h, pw:pw + w], x.transpose(1, 0, 2, 3))
        xf = xc.reshape(c, total)
        width = total + (kh - 1) * dh * wp
        rows = empty((kw, c, width), x.dtype)
        for j in range(kw):
            np.copyto(rows[j, :, :total - j * dw], xf[:, j * dw:])
            rows[j, :, total - j * dw:].fill(0)
        return rows.reshape(kw * c, width), (n, hp, wp)

    def forward(x: Any, weight: Any, bias: Any, padding: Pair, dilation: Pair) -> tuple[Any, Any]:
        """conv2d's (N, O, OH, OW) output, and the stacked input that :func:`weight_grad` takes as ``kept`` (None
        from the blocked forward)."""
        RAN["forward"] += 1
        if BLOCK:
            return blocked_forward(x, weight, bias, padding, dilation), None
        o, _, kh, kw = weight.shape
        rows, (n, hp, wp) = stacked(x, (kh, kw), padding, dilation)
        oh, ow = hp - dilation[0] * (kh - 1), wp - dilation[1] * (kw - 1)
        span = (n - 1) * hp * wp + (oh - 1) * wp + ow  # the flat positions up to the last output
        step = dilation[0] * wp
        taps = np.ascontiguousarray(weight.transpose(2, 0, 3, 1)).reshape(kh, o, -1)  # (kh, O, kw * C)
        y = empty((o, n, hp, wp), x.dtype)
        yf = y.reshape(o, -1)[:, :span]
        np.matmul(taps[0], rows[:, :span], out=yf)
        if kh > 1:
            part = empty((o, span), x.dtype)
            for i in range(1, kh):
                np.matmul(taps[i], rows[:, i * step:i * step + span], out=part)
                yf += part
        out = empty((n, o, oh, ow), x.dtype)
        valid = y[:, :, :oh, :ow].transpose(1, 0, 2, 3)
        if bias is None:
            np.copyto(out, valid)
        else:
            np.add(valid, bias.reshape(1, -1, 1, 1), out=out)
        return out, rows

    def blocked_forward(x: Any, weight: Any, bias: Any, padding: Pair, dilation: Pair) -> Any:
        """conv2d's output a block of images at a time: each block padded channels-first into one buffer whose
        border stays zero, its ``kh * kw`` shifted copies stacked into (kh * kw * C, positions) by one copy, one
        product ``(O, kh * kw * C) @ (kh * kw * C, positions)`` while the stack is in cache."""
        n, c, h, w = x.shape
        o, _, kh, kw = weight.shape
        (ph, pw), (dh, dw) = padding, dilation
        hp, wp = h + 2 * ph, w + 2 * pw
        oh, ow = hp - dh * (kh - 1), wp - dw * (kw - 1)
        item = x.itemsize
        b = max(1, min(n, BLOCK // (kh * kw * c * hp * wp * item)))

        def scratch() -> tuple[Any, Any, Any]:
            grid = empty((c, b, hp, wp), x.dtype)
            grid.fill(0)  # (each block writes the interior only)
            return grid, empty((kh * kw * c * b * hp * wp,), x.dtype), empty((o, b, hp, wp), x.dtype)
        buffers = _Scratch(scratch)
        taps = np.ascontiguousarray(weight.transpose(0, 2, 3, 1)).reshape(o, -1)  # (O, (i, j, c))
        out = empty((n, o, oh, ow), x.dtype)
        bias4 = None if bias is None else bias.reshape(1, -1, 1, 1)

        def nth(t: int, slot: int) -> None:
            grid, stack, y = buffers[slot]
            n0 = t * b
            m = min(b, n - n0)
            span = (m - 1) * hp * wp + (oh - 1) * wp + ow  # (its last read is the block's last padded position)
            np.copyto(grid[:, :m, ph:ph + h, pw:pw + w], x[n0:n0 + m].transpose(1, 0, 2, 3))
            shifted = np.ndarray((kh, kw, c, span), x.dtype, buffer=grid,
                                 strides=(dh * wp * item, dw * item, b * hp * wp * item, item))
            rows = stack[:kh * kw * c * span].reshape(kh, kw, c, span)
            np.copyto(rows, shifted)
            np.matmul(taps, rows.reshape(-1, span), out=np.ndarray((o, span), x.dtype, buffer=y,
                                                                   strides=(y.strides[0], item)))
            valid = y[:, :m, :oh, :ow].transpose(1, 0, 2, 3)
            if bias4 is None:
                np.copyto(out[n0:n0 + m], valid)
            else:
                np.add(valid, bias4, out=out[n0:n0 + m])
        blocks = -(-n // b)
        _threads.run(nth, blocks, _threads_for(blocks, o * kh * kw * c * n * oh * ow))
        return out

    def weight_grad(grad: Any, x: Any, weight_shape: tuple[int, ...], padding: Pair, dilation: Pair,
                    kept: Any = None) -> Any:
        """conv2d's weight gradient for output gradient ``grad`` and input ``x`` (``kept``: the stacked input
        :func:`forward` returned, or None); None where it is not finite (see the module's docstring)."""
        RAN["weight_grad"] += 1
        o, c, kh, kw = weight_shape
        n, _, h, w = x.shape
        hp, wp = h + 2 * padding[0], w + 2 * padding[1]
        rows = kept if kept is not None else stacked(x, (kh, kw), padding, dilation)[0]
        oh, ow = grad.shape[2:]
        # grad channels last on the padded grid, zero where no output is
        gp = empty((n, hp, wp, o), grad.dtype)
        gp[:, oh:].fill(0)
        gp[:, :oh, ow:].fill(0)
        np.copyto(gp[:, :oh, :ow], grad.transpose(0, 2, 3, 1))
        gp = gp.reshape(n, hp * wp, o)
        gw = np.empty((o, c, kh, kw), grad.dtype)
        item, row_stride = rows.itemsize, rows.strides[0]
        with np.errstate(invalid="ignore"):  # (0 * inf: handed back as None below)
            for i in range(kh):
                per_image = np.ndarray((n, kw * c, hp * wp), rows.dtype, buffer=rows,
                                       offset=i * dilation[0] * wp * item, strides=(hp * wp * item, row_stride, item))
                part = np.matmul(per_image, gp, out=empty((n, kw * c, o), grad.dtype)).sum(0)  # (kw * C, O)
                gw[:, :, i] = part.reshape(kw, c, o).transpose(2, 1, 0)
        return gw if np.isfinite(gw).all() else None

    def same_width(x_shape: tuple[int, ...], o: int, kernel: Pair, stride: Pair, padding: Pair, dilation: Pair,
                   groups: int, forward: bool = False) -> bool:
        """Whether conv2d over ``x_shape`` (N, C, H, W) to ``o`` channels takes :func:`rows_weight_grad` (and
        with ``forward``, :func:`rows_forward`): the output keeps the input's width (stride 1, one group,
        ``dw * (kw - 1) == 2 * pw``, W above the padding), has ROWS_MIN_POSITIONS positions a sample or more,
        and both channel counts are in [MIN_CHANNELS, ROWS_MAX_CHANNELS]; the forward in bands of rows (images
        of more than ROWS_UNIT positions) only up to ROWS_BAND_MAX_CHANNELS."""
        c, h, w = x_shape[1:]
        positions = (h + 2 * padding[0] - dilation[0] * (kernel[0] - 1)) * w
        return (ROWS_BLOCK > 0 and stride == (1, 1) and groups == 1 and dilation[1] * (kernel[1] - 1) == 2 * padding[1]
                and w > padding[1] and MIN_CHANNELS <= min(c, o) and max(c, o) <= ROWS_MAX_CHANNELS
                and positions >= ROWS_MIN_POSITIONS
                and not (forward and positions > ROWS_UNIT and max(c, o) > ROWS_BAND_MAX_CHANNELS))

    def row_grid(x: Any, padding: Pair) -> Any:
        """(N, C, (H + 2 * ph) * W + 2 * pw): each channel of ``x`` flattened, ``ph`` zero rows above and below,
        ``pw`` zeros before and after; kernel element (i, j) of output position ``p`` reads index
        ``p + i * dh * W + j * dw``."""
        n, c, h, w = x.shape
        ph, pw = padding
        grid = empty((n, c, (h + 2 * ph) * w + 2 * pw), x.dtype)
        front, back = pw + ph * w, pw + (ph + h) * w
        grid[:, :, :front].fill(0)
        grid[:, :, back:].fill(0)
        np.copyto(grid[:, :, front:back].reshape(n, c, h, w), x)
        return grid

    def row_edges(w: int, kw: int, pw: int, dw: int) -> list[tuple[int, int, int]]:
        """The taps j that read past an output row's end (shift ``j * dw - pw``), each with the columns
        [lo, hi) of theirs that must read zero instead of the neighbouring row."""
        return [(j, 0, pw - j * dw) if j * dw < pw else (j, w - (j * dw - pw), w) for j in range(kw) if j * dw != pw]

    def rows_forward(x: Any, weight: Any, bias: Any, padding: Pair, dilation: Pair) -> tuple[Any, Any]:
        """conv2d's (N, O, OH, W) output for a :func:`same_width` geometry (see the module's docstring), and
        the row grid :func:`rows_weight_grad` takes as ``kept``. Each product covers one unit: an image, or on
        images of more than ROWS_UNIT positions a band of output rows; the units of a block (images, or bands
        of one image) are stacked by one copy."""
        RAN["rows_forward"] += 1
        n, c, h, w = x.shape
        o, _, kh, kw = weight.shape
        (ph, pw), (dh, dw) = padding, dilation
        oh = h + 2 * ph - dh * (kh - 1)
        grid = row_grid(x, padding)
        length, positions, item = grid.shape[2], oh * w, x.itemsize
        band = min(oh, max(1, ROWS_UNIT // w))  # output rows a unit
        per_unit = kh * kw * c * band * w * item
        if band == oh:  # (first image, first row, units, rows a unit); a unit's stride in the grid and the output
            b = max(1, min(n, ROWS_BLOCK // per_unit))
            plan = [(n0, 0, min(b, n - n0), oh) for n0 in range(0, n, b)]
            steps = (c * length, o * positions)
        else:
            bands = oh // band
            b = max(1, min(bands, ROWS_BLOCK // per_unit))
            per_image = [(r0, min(b, bands - r0 // band), band) for r0 in range(0, bands * band, b * band)]
            if oh % band:
                per_image.append((bands * band, 1, oh % band))
            plan = [(i, r0, m, rows) for i in range(n) for r0, m, rows in per_image]
            steps = (band * w, band * w)
        buffers = _Scratch(lambda: empty((b * kh * kw * c * band * w,), x.dtype))
        cut = row_edges(w, kw, pw, dw)
        taps = np.ascontiguousarray(weight.transpose(0, 2, 3, 1)).reshape(o, -1)  # (O, (i, j, c))
        out = empty((n, o, oh, w), x.dtype)

        def nth(t: int, slot: int) -> None:
            i0, r0, m, rows = plan[t]
            span = rows * w
            stack = buffers[slot][:m * kh * kw * c * span].reshape(m, kh, kw, c, span)
            shifts = np.ndarray(stack.shape, x.dtype, buffer=grid, offset=(i0 * c * length + r0 * w) * item,
                                strides=(steps[0] * item, dh * w * item, dw * item, length * item, item))
            np.copyto(stack, shifts)
            edges = stack.reshape(m, kh, kw, c, rows, w)
            for j, lo, hi in cut:
                edges[:, :, j, :, :, lo:hi].fill(0)
            y = np.ndarray((m, o, span), x.dtype, buffer=out, offset=(i0 * o * positions + r0 * w) * item,
                           strides=(steps[1] * item, positions * item, item))
            np.matmul(taps, stack.reshape(m, -1, span), out=y)
        _threads.run(nth, len(plan), _threads_for(len(plan), o * kh * kw * c * n * positions))
        if bias is not None:
            out.reshape(n, o, positions)[...] += bias.reshape(-1, 1)
        return out, grid

    def rows_weight_grad(grad: Any, x: Any, weight_shape: tuple[int, ...], padding: Pair, dilation: Pair,
                         kept: Any = None) -> Any:
        """conv2d's weight gradient for a :func:`same_width` geometry, from the row grid (``kept``, or built):
        the ``kw`` column shifts of the grid stacked (``kw`` times the input, not im2col's ``kh * kw``), then per
        kernel row ``i`` one batched product ``(N, kw * C, OH * W) @ (N, OH * W, O)`` over the stack shifted by
        ``i * dh`` rows (or, in float32 on small images, ``(N, O, OH * W) @ (N, OH * W, kw * C)``: see
        ROWS_GRAD_BY_GRAD), summed over the images."""
        RAN["rows_weight_grad"] += 1
        o, c, kh, kw = weight_shape
        n, _, h, w = x.shape
        (ph, pw), (dh, dw) = padding, dilation
        grid = kept if kept is not None else row_grid(x, padding)
        length, rows, item = grid.shape[2], h + 2 * ph, grid.itemsize
        positions = grad.shape[2] * w
        b = max(1, min(n, ROWS_GRAD_BLOCK // (kw * c * rows * w * item)))
        cut = row_edges(w, kw, pw, dw)
        by_grad = grad.dtype == np.float32 and positions <= ROWS_GRAD_BY_GRAD  # products (O, K), not (K, O)
        if by_grad:
            RAN["rows_weight_grad_by_grad"] += 1
        dense = grad.flags.c_contiguous  # (else each block's gradient is copied: an expanded gradient's stride-0
        # view would take NumPy's own loop, not BLAS)
        g = grad.reshape(n, o, positions) if dense else grad
        products = (o, kw * c) if by_grad else (kw * c, o)
        buffers = _Scratch(lambda: (empty((b, kw, c, rows * w), grid.dtype), empty((b, *products), grad.dtype),
                                    None if dense else empty((b, o, positions), grad.dtype)))
        blocks = -(-n // b)
        sums = np.empty((blocks, kh, *products), grad.dtype)  # per block, summed in order: the same bits on any
        # number of threads

        def nth(t: int, slot: int) -> None:
            stack, part, gbuf = buffers[slot]
            n0 = t * b
            m = min(b, n - n0)
            if dense:
                gm = g[n0:n0 + m]  # (m, O, OH * W)
            else:
                np.copyto(gbuf[:m].reshape(g[n0:n0 + m].shape), g[n0:n0 + m])
                gm = gbuf[:m]
            shifts = np.ndarray((m, kw, c, rows * w), grid.dtype, buffer=grid, offset=n0 * c * length * item,
                                strides=(c * length * item, dw * item, length * item, item))
            np.copyto(stack[:m], shifts)
            edges = stack.reshape(b, kw, c, rows, w)
            for j, lo, hi in cut:
                edges[:m, j, :, :, lo:hi].fill(0)
            for i in range(kh):
                window = np.ndarray((m, kw * c, positions), grid.dtype, buffer=stack, offset=i * dh * w * item,
                                    strides=(kw * c * rows * w * item, rows * w * item, item))
                product = (np.matmul(gm, window.transpose(0, 2, 1), out=part[:m]) if by_grad
                           else np.matmul(window, gm.transpose(0, 2, 1), out=part[:m]))
                np.sum(product, axis=0, out=sums[t, i])
        _threads.run(nth, blocks, _threads_for(blocks, o * kh * kw * c * n * positions))
        gw = sums[0] if blocks == 1 else sums.sum(0)
        if by_grad:
            return gw.reshape(kh, o, kw, c).transpose(1, 3, 0, 2)
        return gw.reshape(kh, kw, c, o).transpose(3, 2, 0, 1)

    return {"applies": applies, "forward": forward, "weight_grad": weight_grad, "same_width": same_width,
            "rows_forward": rows_forward, "rows_weight_grad": rows_weight_grad}
