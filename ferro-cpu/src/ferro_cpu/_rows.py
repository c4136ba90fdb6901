"""Fused softmax, log_softmax and layer_norm on NumPy (the contract is in ``ferro/_ops/fused.py``).

The decompositions take five to eight ferro ops each way (amax, a finiteness
check, a where, sub, exp, sum, div... and as many graph nodes); these make
the same NumPy passes into one buffer with ``out=``. Along the last dim of a
C-contiguous array (softmax in attention, layer_norm, a classifier's scores)
they run block by block over rows (:data:`BLOCK_BYTES`): every pass of a
block finds it in the L2 cache, so the array is read from memory about once
each way instead of once per ufunc. softmax there is ``exp(x) / sum(exp(x))``
without the shift by the row maximum, with one check after that redoes, with
the shift, the rows it does not suit (see ``softmax_rows``); elsewhere the
shift by the maximum is PyTorch's kernels' (a row holding +inf is NaN, where
the decomposition, which does not shift by an infinite maximum, gives NaN
only at the +inf). Row sums are matrix-vector products with ones (BLAS), and
the sums of products (``sum(g * y)``, the variance) ``np.vecdot`` (one pass,
nothing written). A gradient of one value broadcast (``sum()``'s) skips the
passes that would read it.
float16 computes in float32 and rounds once at the end. Arrays of several blocks run their blocks on the
backend's threads (:mod:`._threads`, ``ferro.set_num_threads``), each block as on one thread: the same bits.
``layer_norm`` reads its input as (rows, the normalized trailing elements)
and keeps each row's mean and 1/std for the backward.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from ._pool import MIN_BYTES
from ._quiet import ignoring
from ._threads import MIN_BLOCKS, run, slots

__all__ = ["row_kernels", "last_axis_sums", "narrow_buffers"]

#: Rows up to this long are summed by BLAS (see last_axis_sums); longer ones by NumPy's pairwise sum.
BLAS_ROW = 4096


def narrow_buffers(np: Any, r: Any) -> None:
    """Within a kernel (its ``errstate`` restores the setting on return): ufunc buffers of 256 elements for a
    large (rows, cols) array of 512 to 8191 columns. A broadcast operand of one value per row (``x - max``,
    ``y * (1 / sum)``) makes NumPy's iterator buffer it, and with the default buffer of 8192 elements each
    inner loop copies several rows' worth first: about three times the arithmetic's cost (measured); a
    buffer no longer than a row runs the ufunc's loop with a scalar operand row by row instead."""
    if 512 <= r.shape[-1] < 8192 and r.size >= 1 << 16:
        np.setbufsize(256)


def block_buffers(np: Any) -> Callable[[Any], None]:
    """``narrow_block(b)``: :func:`narrow_buffers` for one block ``b`` of rows of 512 to 8191 columns, whatever
    its size, in a block function that sets its own error state (``_quiet.ignoring``, which runs it with
    NumPy's default buffer, so that a caller's narrowed buffer does not reach it; the block runs on the pool's
    threads too, which do not share the caller's state)."""
    setbufsize = np.setbufsize

    def narrow_block(b: Any) -> None:
        if 512 <= b.shape[-1] < 8192:
            setbufsize(256)
    return narrow_block


def last_axis_sums(np: Any) -> Callable[[Any, bool], Any]:
    """``sums(x, keepdim)``: the sums along the last axis of a C-contiguous float32 or float64 array of several
    rows of at most :data:`BLAS_ROW` elements, as one matrix-vector product with ones (BLAS, with its several
    accumulators, runs it several times faster than ``np.add.reduce``, which pays per row); None for any
    other array (the caller reduces it as usual)."""
    floats = (np.dtype(np.float32), np.dtype(np.float64))
    ones: dict[tuple[int, Any], Any] = {}

    def sums(x: Any, keepdim: bool) -> Any:
        shape = x.shape
        n = shape[-1] if shape else 0
        if not 0 < n <= BLAS_ROW or x.size == n or x.dtype not in floats or not x.flags.c_contiguous:
            return None
        v = ones.get((n, x.dtype))
        if v is None:
            v = ones[n, x.dtype] = np.ones(n, x.dtype)
        if len(shape) == 2 and not keepdim:  # (ndarray.dot: no reshapes, no matmul's gufunc steps)
            return x.dot(v)
        r = x.reshape(-1, n).dot(v)
        return r.reshape((*shape[:-1], 1) if keepdim else shape[:-1])
    return sums


def row_starts(np: Any) -> Callable[[int, int], Any]:
    """``starts(n, cols)``: ``arange(0, n * cols, cols)``, each row's first index in a C-contiguous (n, cols)
    array read flat, read-only, made once per (n, cols) (a row's pick by ``take`` on the flat array runs
    several times faster than NumPy's two-index fancy indexing)."""
    firsts: dict[tuple[int, int], Any] = {}

    def starts(n: int, cols: int) -> Any:
        at = firsts.get((n, cols))
        if at is None:
            if len(firsts) > 64:
                firsts.clear()
            at = firsts[n, cols] = np.arange(0, n * cols, cols)
            at.flags.writeable = False
        return at
    return starts


def spread_rows(np: Any) -> Callable[..., Any]:
    """``by_rows(op, a, r, out, scratch)``: ``op(a, r[:, None], out=out)`` for ``r`` of one value per row of the
    (rows, cols) ``a``. Below 512 columns ``r`` is spread over ``scratch`` (which may be ``out``) first: NumPy's
    ufuncs take an operand of one value per row at several times a full operand's cost there (64x10 float32
    ``x - m[:, None]`` 1.1 µs, the spread and ``x - y`` 0.44 + 0.28); wider rows take it broadcast (with
    :func:`narrow_buffers`, about a pass)."""
    def by_rows(op: Any, a: Any, r: Any, out: Any, scratch: Any) -> Any:
        if a.shape[1] < 512:
            scratch[...] = r[:, None]
            return op(a, scratch, out=out)
        return op(a, r[:, None], out=out)
    return by_rows


def row_maxima(np: Any) -> Callable[[Any, Any], Any]:
    """``row_max(xb, at)``: the maximum of each row of the C-contiguous (rows, cols) ``xb`` (a NaN row's first
    NaN), picked at its argmax (``at``: :func:`row_starts`'s): NumPy's argmax runs through rows several times
    faster than its max (64x10 float32: 1.0 µs with the pick against 3.4; 1008x65: 12 against 37)."""
    def row_max(xb: Any, at: Any) -> Any:
        a = xb.argmax(1)
        a += at
        return xb.reshape(-1).take(a)
    return row_max


#: Bytes of one block of rows: the row kernels make all their passes over a block while it stays in the L2 cache
#: (1 MiB a core here), where one pass per ufunc over the whole array would read it from memory each time. Half a
#: megabyte measured faster than a quarter in every big-row kernel, on one thread and on two (fewer blocks, less
#: Python per row: log_softmax 700x1000 0.75-0.81x, its backward 0.90x, softmax's backward 0.93x, layer_norm's
#: 0.94-0.95x; softmax's forward 0.98x); a megabyte was slower for softmax and layer_norm's backward.
BLOCK_BYTES = 1 << 19

#: Arrays below this many bytes run in one frame (``small_softmax``, ``small_layer_norm``, the one-block
#: log_softmax), their outputs and scratch from NumPy's allocator.
ONE_FRAME_BYTES = 1 << 18

#: log_softmax skips the shift by the row maximum in blocks whose rows' ``log(sum(exp(x)))`` all lie within
#: +- this (see ``log_softmax_block``).
LSE_RANGE = 16.0


def row_kernels(np: Any, pool: Any) -> dict[str, Callable[..., Any]]:
    """``softmax``, ``log_softmax``, their backward kernels and the ``layer_norm`` pair over NumPy ``np``;
    their outputs come from ``pool`` (large buffers reused, without page faults)."""
    f16, f32 = np.dtype(np.float16), np.float32
    floats = (np.dtype(f32), np.dtype(np.float64))
    add, maximum = np.add.reduce, np.maximum.reduce
    dot, einsum, exp, multiply, subtract = np.dot, np.einsum, np.exp, np.multiply, np.subtract
    copyto = np.copyto
    # sums of products per row in one pass, without writing the products (a gufunc over BLAS's dot: about a
    # gemv's time, half of a multiply into scratch and a gemv, measured at 64x1024 float32)
    vecdot = np.vecdot
    quiet = ignoring(np)  # inf - inf and NaN inputs give NaN, as PyTorch, without NumPy's warnings

    def wide(x: Any) -> Any:
        return x.astype(f32) if x.dtype == f16 else x

    def back(y: Any, dtype: Any) -> Any:
        return y.astype(dtype) if y.dtype != dtype else y

    starts, by_rows, row_max = row_starts(np), spread_rows(np), row_maxima(np)
    narrow_block = block_buffers(np)
    ones: dict[tuple[int, Any], Any] = {}

    def ones_of(n: int, dtype: Any) -> Any:
        v = ones.get((n, dtype))
        if v is None:
            v = ones[n, dtype] = np.ones(n, dtype)
        return v

    def row_sum(a: Any, dim: int) -> Any:
        """``a``'s sum along ``dim`` (kept as a dim of 1): along the last dim of a C-contiguous float array, a
        matrix-vector product with ones, which BLAS runs several times faster than ``np.add.reduce``."""
        n = a.shape[-1]
        if dim not in (-1, a.ndim - 1) or not a.flags.c_contiguous or a.dtype.kind != "f" or n == 0:
            return add(a, axis=dim, keepdims=True)
        return (a.reshape(-1, n) @ ones_of(n, a.dtype)).reshape((*a.shape[:-1], 1))

    def new(like: Any) -> Any:
        return np.empty_like(like) if like.nbytes < MIN_BYTES else pool.empty(like.shape, like.dtype)

    def scratch(shape: tuple[int, ...], dtype: Any) -> Any:
        """Scratch blocks from the pool (a fresh allocation of a few hundred KiB page-faults at every call)."""
        return pool.empty(shape, dtype, floor=1 << 16)

    def rows_of(x: Any, dim: int) -> Any:
        """``x`` as (rows, the last dim), when the row kernels take it: ``dim`` the last, a C-contiguous float32
        or float64 array, not empty; None otherwise (the general kernels below run)."""
        if x.ndim == 0 or dim not in (-1, x.ndim - 1) or x.dtype not in floats or not x.flags.c_contiguous \
                or x.size == 0:
            return None
        return x.reshape(-1, x.shape[-1])

    def plan(r: Any, size: int = 0) -> tuple[int, int, int]:
        """(rows per block, blocks, threads) of the (rows, cols) array ``r``, blocks of ``size`` bytes
        (:data:`BLOCK_BYTES` by default)."""
        size = size or BLOCK_BYTES
        step, n = max(1, size // max(1, r.shape[1] * r.itemsize)), len(r)
        if n <= step:
            return step, 1, 1
        blocks = -(-n // step)
        # on several threads from MIN_BLOCKS blocks of 256 KiB (2 MiB), as the elementwise blocked kernels
        return step, blocks, slots(blocks, max(2, -(-(MIN_BLOCKS << 18) // size)))

    def like_rows(a: Any, r: Any) -> Any:
        """``a`` (the gradient: any strides, a broadcast view included) read as ``r``'s (rows, cols)."""
        return a.reshape(r.shape)

    def one_value(g: Any) -> Any:
        """The one value of the gradient ``g`` when it is a broadcast scalar (every stride 0, as ``sum()``'s
        backward gives), else None: the backward kernels then skip the passes that read ``g`` (its row sums
        are the value times the row length)."""
        if g.size == 0 or any(g.strides):
            return None
        return g[(0,) * g.ndim]

    # -- softmax ----------------------------------------------------------------------------------------------

    def small(x: Any, dim: int) -> bool:
        """Whether ``x`` runs in one frame: a C-contiguous float32 / float64 array of one block, ``dim`` its last."""
        return (x.dtype in floats and x.nbytes < ONE_FRAME_BYTES and x.size != 0 and (dim == -1 or dim == x.ndim - 1)
                and x.flags.c_contiguous)

    def softmax(x: Any, dim: int) -> Any:
        if small(x, dim):
            return small_softmax(x)
        if x.size == 0:
            return x.copy()
        xw = wide(x)
        xr = rows_of(xw, dim)
        if xr is None:
            return shifted_softmax(xw, dim, x.dtype)
        y = new(xw)
        softmax_rows(xr, y.reshape(xr.shape))
        return back(y, x.dtype)

    @quiet
    def softmax_rows(xr: Any, yr: Any, shift: bool = False) -> None:
        """exp(x) / sum(exp(x)) per row, without the shift by the row's maximum, block by block; then the rows
        where that is not PyTorch's shifted quotient to rounding again, shifted (``shift``: all rows shifted).
        The check is one sum of products: ``sum(s * (1 / s))`` is the row count exactly when every row's sum
        ``s`` of exponentials is finite (no exp overflowed, no NaN) and above ``1 / max`` of the dtype (a row
        of -inf, or of values whose exponentials all underflow, gives NaN or inf there). An exponential that
        underflows in a row that passes is below ``tiny / s``: its quotient is off by less than the dtype's
        smallest normal number. The row sums are BLAS matrix-vector products of one block each: below
        OpenBLAS's threshold for threads, whose wake-up costs milliseconds on a loaded machine."""
        n, cols = xr.shape
        v = ones_of(cols, xr.dtype)
        step, blocks, threads = plan(xr)
        narrow_buffers(np, xr)

        def block(xb: Any, yb: Any, sb: Any, rb: Any) -> tuple[Any, Any]:
            if shift:  # a row holding +inf or only -inf gives NaN, as PyTorch's
                exp(subtract(xb, maximum(xb, axis=1, keepdims=True), out=yb), out=yb)
            else:
                exp(xb, out=yb)
            sb = dot(yb, v, out=sb)
            rb = np.reciprocal(sb, out=rb)  # PyTorch's kernels multiply by 1 / sum too
            multiply(yb, rb[:, None], out=yb)
            return sb, rb

        if blocks == 1:  # no slices
            s, r = block(xr, yr, None, None)
        else:
            s, r = np.empty(n, xr.dtype), np.empty(n, xr.dtype)

            def nth(j: int, slot: int) -> None:
                i = j * step
                block(xr[i:i + step], yr[i:i + step], s[i:i + step], r[i:i + step])
            run(nth, blocks, threads)
        if shift:
            return
        # (dot threads from 10000 elements on in OpenBLAS; einsum's own loop instead)
        total = dot(s, r) if n <= 8192 else einsum("i,i->", s, r)
        if not abs(float(total) - n) < 1e-3 * n:
            redo_rows(xr, yr, s, r)

    @quiet
    def small_softmax(x: Any) -> Any:
        """:func:`softmax_rows` of an array of one block along its last dim (C-contiguous float32 / float64),
        in one frame: the output is ``exp(x)`` itself, scaled in place."""
        cols = x.shape[-1]
        v = ones.get((cols, x.dtype))
        if v is None:
            v = ones_of(cols, x.dtype)
        y = exp(x)
        yr = y if y.ndim == 2 else y.reshape(-1, cols)
        s = yr.dot(v)
        r = np.reciprocal(s)
        multiply(yr, r[:, None], yr)
        n = len(s)
        if abs(float(s.dot(r) if n <= 8192 else einsum("i,i->", s, r)) - n) < 1e-3 * n:
            return y
        redo_rows(x.reshape(yr.shape), yr, s, r)
        return y

    def redo_rows(xr: Any, yr: Any, s: Any, r: Any) -> None:
        """The rows of ``yr`` whose sum ``s`` of exponentials (``r``: its reciprocal) fails the check of
        :func:`softmax_rows`, again from ``xr`` with the shift by the row's maximum."""
        bad = np.flatnonzero(~(abs(s * r - 1) < 1e-3))
        redo = np.empty((len(bad), xr.shape[1]), xr.dtype)
        softmax_rows(xr[bad], redo, shift=True)
        yr[bad] = redo

    def shifted(x: Any, dim: int) -> Any:
        """``x - max(x)`` along ``dim``, a new array (a row holding +inf or only -inf gives NaN, as PyTorch's)."""
        return subtract(x, maximum(x, axis=dim, keepdims=True), out=new(x))

    @quiet
    def shifted_softmax(xw: Any, dim: int, dtype: Any) -> Any:
        y = shifted(xw, dim)
        exp(y, out=y)
        np.divide(y, row_sum(y, dim), out=y)
        return back(y, dtype)

    def softmax_backward(g: Any, y: Any, dim: int) -> Any:  # y * (g - sum(g * y))
        if small(y, dim) and g.dtype == y.dtype and g.shape == y.shape and g.flags.c_contiguous:
            return small_softmax_backward(g, y)
        return blocked_softmax_backward(g, y, dim)

    @quiet
    def small_softmax_backward(g: Any, y: Any) -> Any:
        """:func:`blocked_softmax_backward` of a C-contiguous gradient and output of one block, in one frame."""
        cols = y.shape[-1]
        yr = y if y.ndim == 2 else y.reshape(-1, cols)
        gr = g.reshape(yr.shape)
        t = np.empty(yr.shape, y.dtype)
        by_rows(subtract, gr, vecdot(gr, yr), t, t)
        multiply(t, yr, out=t)
        return t.reshape(y.shape)

    @quiet
    def blocked_softmax_backward(g: Any, y: Any, dim: int) -> Any:
        gw, yw = wide(g), wide(y)
        t = new(yw)
        yr = rows_of(yw, dim)
        g0 = one_value(gw)
        if g0 is not None:  # g the same everywhere: y * (g - g * sum(y)), two passes
            if yr is None:
                s = row_sum(yw, dim)
                s *= -g0
                s += g0
                return back(multiply(yw, s, out=t), y.dtype)
            tr = t.reshape(yr.shape)
            step, blocks, threads = plan(yr)
            v = ones_of(yr.shape[1], yr.dtype)
            narrow_buffers(np, yr)

            def scaled(j: int, slot: int) -> None:
                i = j * step
                yb = yr[i:i + step]
                d = dot(yb, v)
                d *= -g0
                d += g0
                tb = tr[i:i + step]
                # a copy, then the scaling in place: a ufunc with an operand of one value per row that writes
                # into memory out of the cache runs at about half a copy's speed (1.7 ms for 4096x1024 float32
                # against 1.0 for the copy and the product in place, measured)
                copyto(tb, yb)
                tb *= d[:, None]
            run(scaled, blocks, threads)
            return back(t, y.dtype)
        if yr is None:
            multiply(gw, yw, out=t)
            subtract(gw, row_sum(t, dim), out=t)
        else:
            gr, tr = like_rows(gw, yr), t.reshape(yr.shape)
            step, blocks, threads = plan(yr, BLOCK_BYTES // 2)  # (three arrays a block: g, y and the result)
            v = ones_of(yr.shape[1], yr.dtype)
            narrow_buffers(np, yr)

            def nth(j: int, slot: int) -> None:
                i = j * step
                gb, tb = gr[i:i + step], tr[i:i + step]
                yb = yr[i:i + step]
                d = vecdot(gb, yb)
                copyto(tb, gb)  # (then in place, as in scaled above)
                tb -= d[:, None]
                multiply(tb, yb, out=tb)
            run(nth, blocks, threads)
            return back(t, y.dtype)
        multiply(t, yw, out=t)
        return back(t, y.dtype)

    # -- log_softmax ------------------------------------------------------------------------------------------

    def log_softmax(x: Any, dim: int) -> Any:  # (x - max) - log(sum(exp(x - max))), as PyTorch's kernels
        if small(x, dim):
            cols = x.shape[-1]
            xr = x if x.ndim == 2 else x.reshape(-1, cols)
            y = np.empty(xr.shape, x.dtype)
            log_softmax_block(xr, y, np.empty(xr.shape, x.dtype), ones_of(cols, x.dtype), starts(len(xr), cols))
            return y.reshape(x.shape)
        return blocked_log_softmax(x, dim)

    @quiet
    def log_softmax_block(xb: Any, yb: Any, eb: Any, v: Any, at: Any) -> None:
        """log_softmax of the rows ``xb`` into ``yb`` (``eb``: scratch of their shape, ``v``: ones of a row,
        ``at``: each row's first index in ``xb`` flat). First without the shift by the row maximum, ``x -
        log(sum(exp(x)))`` (an ``exp``, a matrix-vector product and a subtraction: the maximum's pass and the
        shift's are NumPy's most after ``exp``), kept when every row's log-sum lies within +-:data:`LSE_RANGE`:
        its rounding is then at most that of PyTorch's ``log(sum(exp(x - max)))`` at a few thousand columns
        (an absolute error of half an ulp of 16 at most, below 1e-6 in float32), and no exponential that
        counts overflowed or underflowed. Otherwise (an overflow, +-inf, NaN, rows of large magnitude) the
        block again with the shift, PyTorch's ``(x - max) - log(sum(exp(x - max)))``."""
        narrow_block(xb)
        exp(xb, out=eb)
        s = eb.dot(v)
        np.log(s, out=s)
        if float(maximum(abs(s))) < LSE_RANGE:
            by_rows(subtract, xb, s, yb, yb)
            return
        shifted_log_softmax_block(xb, yb, eb, v, at)

    def shifted_log_softmax_block(xb: Any, yb: Any, eb: Any, v: Any, at: Any) -> None:
        """:func:`log_softmax_block` with the shift by the row maximum, as PyTorch's kernels."""
        m = row_max(xb, at)
        by_rows(subtract, xb, m, yb, yb)
        exp(yb, out=eb)
        s = eb.dot(v)
        by_rows(subtract, yb, np.log(s, out=s), yb, eb)

    @quiet
    def blocked_log_softmax(x: Any, dim: int) -> Any:
        if x.size == 0:
            return x.copy()
        xw = wide(x)
        xr = rows_of(xw, dim)
        if xr is None:
            sh = shifted(xw, dim)
            e = exp(sh, out=new(sh))
            s = row_sum(e, dim)
            np.log(s, out=s)
            subtract(sh, s, out=sh)
            return back(sh, x.dtype)
        y = new(xw)
        yr = y.reshape(xr.shape)
        step, blocks, threads = plan(xr)
        narrow_buffers(np, xr)
        cols = xr.shape[1]
        v = ones_of(cols, xr.dtype)
        e = scratch((threads, min(step, len(xr)), cols), xr.dtype)  # scratch per thread
        at = starts(min(step, len(xr)), cols)

        def nth(j: int, slot: int) -> None:
            i = j * step
            xb = xr[i:i + step]
            n = len(xb)
            log_softmax_block(xb, yr[i:i + step], e[slot][:n], v, at[:n])
        run(nth, blocks, threads)
        return back(y, x.dtype)

    def log_softmax_backward(g: Any, y: Any, dim: int) -> Any:  # g - exp(y) * sum(g)
        if small(y, dim) and g.dtype == y.dtype:
            cols = y.shape[-1]
            yr = y if y.ndim == 2 else y.reshape(-1, cols)
            e = np.empty(yr.shape, y.dtype)
            log_softmax_backward_block(g.reshape(yr.shape), yr, e, np.empty(yr.shape, y.dtype), ones_of(cols, y.dtype))
            return e.reshape(y.shape)
        return blocked_log_softmax_backward(g, y, dim)

    @quiet
    def log_softmax_backward_block(gb: Any, yb: Any, eb: Any, tb: Any, v: Any) -> None:
        """``g - exp(y) * sum(g)`` of the rows ``gb``, ``yb`` into ``eb`` (``tb``: scratch of their shape for the
        row sums spread, or None: broadcast)."""
        narrow_block(yb)
        exp(yb, out=eb)
        s = gb.dot(v)
        if tb is None:
            multiply(eb, s[:, None], out=eb)
        else:
            by_rows(multiply, eb, s, eb, tb)
        subtract(gb, eb, out=eb)

    @quiet
    def blocked_log_softmax_backward(g: Any, y: Any, dim: int) -> Any:
        gw, yw = wide(g), wide(y)
        e = new(yw)
        yr = rows_of(yw, dim)
        if yr is None:
            exp(yw, out=e)
            multiply(e, row_sum(gw, dim), out=e)
            subtract(gw, e, out=e)
            return back(e, y.dtype)
        gr, er = like_rows(gw, yr), e.reshape(yr.shape)
        step, blocks, threads = plan(yr)
        narrow_buffers(np, yr)
        v = ones_of(yr.shape[1], yr.dtype)

        def nth(j: int, slot: int) -> None:  # (the row sums broadcast: a block's scratch would cost its page faults)
            i = j * step
            log_softmax_backward_block(gr[i:i + step], yr[i:i + step], er[i:i + step], None, v)
        run(nth, blocks, threads)
        return back(e, y.dtype)

    # -- layer_norm: (rows, the normalized trailing elements); each row's mean and 1/std kept for the backward --

    def as_rows(x: Any, shape: tuple[int, ...]) -> tuple[Any, int]:
        cols = math.prod(shape)
        return wide(x).reshape(-1, cols), cols

    means: dict[tuple[int, Any, float], tuple[Any, Any, Any]] = {}  # (cols, dtype, eps) -> row_means

    def row_means(cols: int, dt: Any, eps: float) -> tuple[Any, Any, Any]:
        """(a vector of ``1 / cols``, ``cols * eps`` and ``sqrt(cols)``, 0-d) for rows of ``cols`` of dtype ``dt``:
        a row's mean is one product with the vector, ``1 / sqrt(var + eps)`` is ``sqrt(cols) / sqrt(sum of
        squares + cols * eps)`` (two passes over the row values fewer than the mean and variance divided out)."""
        got = means.get((cols, dt, eps))
        if got is None:
            if len(means) > 64:
                means.clear()
            got = means[cols, dt, eps] = (np.full(cols, 1 / cols, dt), np.asarray(cols * eps, dt),
                                          np.asarray(math.sqrt(cols), dt))
        return got

    def normalized(x: Any, y: Any, consts: tuple[Any, Any, Any], w: Any, b: Any, t: Any = None) -> tuple[Any, Any]:
        """y = (x - mean) * rstd (* w + b) of a block of rows (``consts``: :func:`row_means`'); returns the rows'
        mean and rstd. The rows' means are spread over ``y`` by an assignment before the subtraction, and with a
        scratch array ``t`` of ``y``'s shape their rstd too: NumPy's ufuncs take an operand of one value per row
        at several times the cost of an operand of the full shape, where an assignment spreads it at about a
        pass's cost (64x256 float32: 2.8 us against 1.2 + 1.0)."""
        mv, ceps, root = consts
        m = x.dot(mv)
        if t is None and x.shape[1] >= 512:
            copyto(y, x)
            y -= m[:, None]
        else:
            y[...] = m[:, None]
            subtract(x, y, out=y)
        r = vecdot(y, y)  # the variance, times cols
        r += ceps
        np.sqrt(r, out=r)
        np.divide(root, r, out=r)
        if t is None:
            multiply(y, r[:, None], out=y)
        else:
            t[...] = r[:, None]
            multiply(y, t, out=y)
        if w is not None:
            y *= w
        if b is not None:
            y += b
        return m, r

    def layer_norm_forward(x: Any, shape: tuple[int, ...], weight: Any, bias: Any, eps: float) -> Any:
        if x.dtype in floats and x.nbytes < ONE_FRAME_BYTES and x.size and x.flags.c_contiguous:
            return small_layer_norm(x, shape, weight, bias, eps)
        return blocked_layer_norm(x, shape, weight, bias, eps)

    @quiet
    def small_layer_norm(x: Any, shape: tuple[int, ...], w: Any, b: Any, eps: float) -> Any:
        """layer_norm's forward of an array of one block (C-contiguous float32 / float64) in one frame."""
        cols = shape[0] if len(shape) == 1 else math.prod(shape)
        xr = x.reshape(-1, cols)
        y, t = np.empty(xr.shape, x.dtype), np.empty(xr.shape, x.dtype)
        m, r = normalized(xr, y, row_means(cols, x.dtype, eps), None if w is None else w.reshape(-1),
                          None if b is None else b.reshape(-1), t)
        return y.reshape(x.shape), m[:, None], r[:, None]

    @quiet
    def blocked_layer_norm(x: Any, shape: tuple[int, ...], weight: Any, bias: Any, eps: float) -> Any:
        xr, cols = as_rows(x, shape)
        n = len(xr)
        if xr.size == 0:
            empty = np.zeros((n, 1), xr.dtype)
            return x.copy(), empty, empty
        dt = xr.dtype
        w = None if weight is None else wide(weight).reshape(-1)
        b = None if bias is None else wide(bias).reshape(-1)
        y = new(xr)
        consts = row_means(cols, dt, eps)
        step, blocks, threads = plan(xr)
        narrow_buffers(np, xr)
        if blocks == 1:
            m, r = normalized(xr, y, consts, w, b)
            return back(y.reshape(x.shape), x.dtype), m[:, None], r[:, None]
        parts: list[Any] = [None] * blocks

        def nth(j: int, slot: int) -> None:
            i = j * step
            parts[j] = normalized(xr[i:i + step], y[i:i + step], consts, w, b)
        run(nth, blocks, threads)
        mean, rstd = (np.concatenate(p)[:, None] for p in zip(*parts))
        return back(y.reshape(x.shape), x.dtype), mean, rstd

    @quiet
    def layer_norm_backward(g: Any, x: Any, shape: tuple[int, ...], weight: Any, mean: Any, rstd: Any) -> Any:
        # per row, with xhat = (x - mean) * rstd and gw = g * weight:
        # dx = rstd * (gw - mean(gw) - xhat * mean(gw * xhat)); dw = sum over rows of g * xhat; db = sum of g
        xr, cols = as_rows(x, shape)
        gr = wide(g).reshape(xr.shape)
        n, dt = len(xr), xr.dtype
        w = None if weight is None else wide(weight).reshape(-1)
        dx = new(xr)
        v = ones_of(cols, dt)
        step, blocks, threads = plan(xr)
        narrow_buffers(np, xr)
        inv = dt.type(1 / cols)
        g0 = one_value(gr)
        if g0 is not None:
            return layer_norm_constant(g0, x, xr, shape, w, mean, rstd, dx, v, inv, step, blocks, threads)
        xhat = scratch((threads, min(step, n), cols), dt)  # scratch per thread
        gw_buf = None if w is None else scratch(xhat.shape, dt)
        # column sums as products with ones (BLAS: several times faster than add.reduce / einsum over rows of
        # 64-1024, measured); a gradient that is a broadcast view (sum().backward()) is not BLAS's: add.reduce.
        # Each block's column sums are kept and added up in order afterwards: the same sums on any threads.
        ones_rows = np.ones(min(step, n), dt)
        blas_g = gr.flags.c_contiguous
        db_parts = np.empty((blocks, cols), dt)
        dw_parts = None if w is None else np.empty((blocks, cols), dt)

        r1 = rstd.reshape(-1)

        def nth(j: int, slot: int) -> None:
            # with d = x - mean (xhat = d * rstd, not formed): dw = sum over rows of rstd * (g * d), and
            # dx = rstd * (gw - mean(gw) - d * rstd**2 * mean(gw * d))
            i = j * step
            gb, dxb, rb, r = gr[i:i + step], dx[i:i + step], rstd[i:i + step], r1[i:i + step]
            d, o = xhat[slot][:len(gb)], ones_rows[:len(gb)]
            subtract(xr[i:i + step], mean[i:i + step], out=d)
            if blas_g:
                dot(o, gb, out=db_parts[j])
            else:
                add(gb, axis=0, out=db_parts[j])
            if w is None:
                gw = gb
            else:
                dot(r, multiply(gb, d, out=dxb), out=dw_parts[j])  # (dxb as scratch: written below)
                gw = multiply(gb, w, out=gw_buf[slot][:len(gb)])
            a = dot(gw, v)
            k = vecdot(gw, d)
            a *= inv
            k *= inv
            k *= r
            k *= r
            multiply(d, k[:, None], out=d)
            subtract(gw, d, out=dxb)
            dxb -= a[:, None]
            dxb *= rb
        run(nth, blocks, threads)
        db = np.zeros(cols, dt)
        for p in db_parts:
            db += p
        dw = None
        if dw_parts is not None:
            dw = np.zeros(cols, dt)
            for p in dw_parts:
                dw += p
        return (back(dx.reshape(x.shape), x.dtype), None if dw is None else back(dw.reshape(shape), x.dtype),
                back(db.reshape(shape), x.dtype))

    def layer_norm_constant(g0: Any, x: Any, xr: Any, shape: tuple[int, ...], w: Any, mean: Any, rstd: Any, dx: Any,
                            v: Any, inv: Any, step: int, blocks: int, threads: int) -> Any:
        """layer_norm's backward for a gradient ``g0`` the same everywhere (``sum()``'s): with d = x - mean,
        gw = g0 * weight and a = mean(gw), dx = rstd * ((gw - a) - d * rstd**2 * mean(d * gw)), the row's one
        sum of products a matrix-vector product with gw; dw = g0 * sum over rows of rstd * d, db = g0 * rows.
        Without a weight gw - a is 0: three passes a block instead of ten."""
        n, cols = xr.shape
        dt = xr.dtype
        gw = v * g0 if w is None else w * g0
        shift = None if w is None else gw - add(gw) * inv  # (gw - a), one row for all rows
        dw_parts = None if w is None else np.empty((blocks, cols), dt)
        r2 = rstd.reshape(-1)

        def nth(j: int, slot: int) -> None:
            i = j * step
            dxb, rb = dx[i:i + step], r2[i:i + step]
            d = subtract(xr[i:i + step], mean[i:i + step], out=dxb)
            if dw_parts is not None:
                dot(rb, d, out=dw_parts[j])
            k = dot(d, gw)  # sum(d * gw)
            k *= inv
            k *= rb
            k *= rb
            if shift is None:
                k *= rb
                np.negative(k, out=k)
                d *= k[:, None]
                return
            d *= k[:, None]
            subtract(shift, d, out=d)
            d *= rb[:, None]
        run(nth, blocks, threads)
        db = np.full(cols, g0 * dt.type(n), dt)
        dw = None
        if dw_parts is not None:
            dw = np.zeros(cols, dt)
            for p in dw_parts:
                dw += p
            dw *= g0
        return (back(dx.reshape(x.shape), x.dtype), None if dw is None else back(dw.reshape(shape), x.dtype),
                back(db.reshape(shape), x.dtype))

    return {"softmax": softmax, "softmax_backward": softmax_backward, "log_softmax": log_softmax,
            "log_softmax_backward": log_softmax_backward, "layer_norm_forward": layer_norm_forward,
            "layer_norm_backward": layer_norm_backward}
