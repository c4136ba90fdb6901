"""The CPU backend's ``compile_into`` hook (``ferro.compile``'s planned buffers, ``ferro._compile.passes.buffers``):
a kernel call of a captured step rewritten to write its result into a buffer planned once per graph.

Taken: the ufunc kernels (each says its ufunc as ``kernel.into``), the kernels with their own
``into(*args, out=...)``, relu (the maximum with zeros made once per call site, as eager's kernel computes it),
``where`` with a float32 / float64 result (a selection) and ``matmul`` on float32 / float64: the very kernels of
the device's table (a plugin's override is left alone). Each writes with ``out=`` what the kernel computes: the
same ufunc loop or BLAS call on the same operands, so values are eager's bitwise. The buffer is row-major, as the
kernel's own result is for row-major operands: where an operand is not row-major at replay (a caller passing a
transposed input), the call runs the kernel itself, whose result may be laid out otherwise.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["compile_into", "into_buffer"]

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def _row_major(x: Any) -> bool:
    return not isinstance(x, np.ndarray) or x.flags.c_contiguous


def _ufunc_into(kernel: Any, ufunc: Any) -> Callable[..., Any]:
    quiet = getattr(kernel, "__wrapped__", None) is not None  # the kernel runs under np.errstate(all="ignore")
    if ufunc.nin == 1:
        def into1(out: Any, x: Any) -> Any:
            if not x.flags.c_contiguous:
                return kernel(x)
            return ufunc(x, out=out)
        fn = into1
    else:
        def into2(out: Any, x: Any, y: Any) -> Any:
            if not (_row_major(x) and _row_major(y)):
                return kernel(x, y)
            return ufunc(x, y, out=out)
        fn = into2
    return np.errstate(all="ignore")(fn) if quiet else fn


def _function_into(kernel: Any, into: Any) -> Callable[..., Any]:
    def into_any(out: Any, *args: Any) -> Any:
        if not all(_row_major(a) for a in args):
            return kernel(*args)
        return into(*args, out=out)
    return into_any


def _relu_into(kernel: Any, like: Any) -> Callable[..., Any]:
    """relu as eager's kernel computes it, the maximum with an array of zeros (made once here; NumPy's loop
    against a scalar is about 4x slower), written into the buffer."""
    zeros = np.zeros(like.shape, like.dtype)
    zeros.flags.writeable = False

    def into(out: Any, x: Any) -> Any:
        if x.shape != zeros.shape or x.dtype != zeros.dtype or not x.flags.c_contiguous:
            return kernel(x)
        return np.maximum(x, zeros, out=out)
    return into


def _where_into(kernel: Any) -> Callable[..., Any]:
    """where as eager's kernel selects (``y``, then ``x`` where ``c``: a selection, so bitwise whichever way it is
    written), into the buffer; in place over ``x`` (the planner's choice where ``x`` dies here) ``y`` is
    written where not ``c`` instead."""
    copyto, asarray, logical_not = np.copyto, np.asarray, np.logical_not

    def into(out: Any, c: Any, x: Any, y: Any) -> Any:
        if not (c.flags.c_contiguous and _row_major(x) and _row_major(y)):
            return kernel(c, x, y)
        if x is out:
            copyto(out, asarray(y), casting="unsafe", where=logical_not(c))
        else:
            # (a Python scalar as an array first: copyto refuses an out-of-range int that np.where wraps)
            copyto(out, asarray(y), casting="unsafe")
            copyto(out, asarray(x), casting="unsafe", where=c)
        return out
    return into


def _matmul_into(kernel: Any) -> Callable[..., Any]:
    def into(out: Any, x: Any, y: Any) -> Any:
        # the kernel's own paths (ferro_cpu._backend's matmul): a row-major stack times a matrix as one product
        if x.ndim > 2 and y.ndim == 2 and x.flags.c_contiguous:
            np.matmul(x.reshape(-1, x.shape[-1]), y, out=out.reshape(-1, y.shape[-1]))
            return out
        return np.matmul(x, y, out=out)
    return into


def compile_into(table: dict[str, Any], name: str, kernel: Any, args: tuple[Any, ...], kwargs: dict[str, Any],
                 out: Any) -> Callable[..., Any] | None:
    """``f(buffer, *args)`` writing ``kernel``'s result into ``buffer``, or None for a call not taken (see the
    module's docstring); ``table``: the device's kernel table, ``args``/``out``: the call's arrays as captured."""
    if kwargs or not isinstance(out, np.ndarray) or not out.flags.c_contiguous or table.get(name) is not kernel:
        return None
    arrays = [a for a in args if isinstance(a, np.ndarray)]
    if not arrays or any(not isinstance(a, (np.ndarray, bool, int, float)) for a in args):
        return None
    ufunc = getattr(kernel, "into", None)
    if isinstance(ufunc, np.ufunc) and len(args) == ufunc.nin and ufunc.nout == 1:
        if not all(a.flags.c_contiguous for a in arrays) or (ufunc.nin == 1 and not isinstance(args[0], np.ndarray)):
            return None
        return _ufunc_into(kernel, ufunc)
    if (name == "relu" and len(args) == 1 and isinstance(args[0], np.ndarray) and args[0].dtype in _FLOATS
            and args[0].flags.c_contiguous):
        return _relu_into(kernel, args[0])
    if callable(ufunc) and not isinstance(ufunc, np.ufunc) and all(a.flags.c_contiguous for a in arrays):
        return _function_into(kernel, ufunc)  # a kernel's own into(*args, out=...) (relu)
    if (name == "where" and len(args) == 3 and isinstance(args[0], np.ndarray) and args[0].dtype == np.bool_
            and out.dtype in _FLOATS and all(a.flags.c_contiguous for a in arrays)):
        return _where_into(kernel)
    if (name == "matmul" and len(args) == 2 and len(arrays) == 2 and out.dtype in _FLOATS
            and args[0].dtype == args[1].dtype == out.dtype and args[0].ndim >= 2 and args[1].ndim >= 2):
        return _matmul_into(kernel)
    return None


def into_buffer(out: Any) -> Any:
    """A planned buffer for results like ``out`` (row-major, its shape and dtype)."""
    return np.empty(out.shape, out.dtype)
