"""Reductions (sum, mean, prod, amax, amin, any, all, argmax, argmin) from ``kernels/reduce.cl``.

The input is read in place through its strides: the kept and the reduced
dimensions each get a coalesced layout, so no permuted copy is made. When
few outputs reduce many elements (a full sum), the reduced range is split
into chunks whose partial results a second launch combines, so every
compute unit has work.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from string import Template
from typing import Any, NamedTuple

import numpy as np

from ._array import CLArray
from ._elementwise import cast_array, layout
from ._runtime import MAX_DIMS, Runtime, compute_dtype, ctypes, read_source

__all__ = ["reduction_kernels"]

_BOOL = np.dtype(bool)
_I64 = np.int64
_FLOAT_MAX = "(isnan(acc) || isnan(v)) ? acc + v : fmax(acc, v)"
_FLOAT_MIN = "(isnan(acc) || isnan(v)) ? acc + v : fmin(acc, v)"


class Reducer(NamedTuple):
    """How one reduction combines: identity, the combining expression per kind, the final step."""

    identity: str
    floating: str
    integer: str
    final: str = "acc"


_REDUCERS: dict[str, Reducer] = {
    "sum": Reducer("0", "acc + v", "acc + v"),
    "mean": Reducer("0", "acc + v", "acc + v", "acc / ($ACC)n"),
    "prod": Reducer("1", "acc * v", "acc * v"),
    "amax": Reducer("$LOWEST", _FLOAT_MAX, "max(acc, v)"),
    "amin": Reducer("$HIGHEST", _FLOAT_MIN, "min(acc, v)"),
    "any": Reducer("0", "(acc != 0) || (v != 0)", "(acc != 0) || (v != 0)", "acc != 0"),
    "all": Reducer("1", "(acc != 0) && (v != 0)", "(acc != 0) && (v != 0)", "acc != 0"),
}
#: compute type -> (lowest, highest) value, the identities of amax and amin
_LIMITS = {"float": ("-INFINITY", "INFINITY"), "double": ("-INFINITY", "INFINITY"),
           "uchar": ("0", "UCHAR_MAX"), "char": ("CHAR_MIN", "CHAR_MAX"), "short": ("SHRT_MIN", "SHRT_MAX"),
           "ushort": ("0", "USHRT_MAX"), "int": ("INT_MIN", "INT_MAX"), "uint": ("0", "UINT_MAX"),
           "long": ("LONG_MIN", "LONG_MAX"), "ulong": ("0", "ULONG_MAX")}


def _source(op: str, in_dt: Any, acc_dt: Any, out_dt: Any) -> str:
    src, acc_c, dst = ctypes(in_dt), ctypes(acc_dt), ctypes(out_dt)
    acc, out_ct = acc_c.compute, dst.compute
    r = _REDUCERS.get(op, _REDUCERS["sum"])
    lo, hi = _LIMITS[acc]
    kind_f = acc_c.floating
    final = Template(r.final).substitute(ACC=acc)
    better, worse = ("v > best", "v < best") if op != "argmin" else ("v < best", "v > best")
    if kind_f:
        better = f"({better} || (isnan(v) && !isnan(best)))"
        worse = f"({worse} || (isnan(best) && !isnan(v)))"
    return Template(read_source("reduce.cl")).substitute(
        OUT=dst.storage, IN=src.storage, ACC=acc, identity=Template(r.identity).substitute(LOWEST=lo, HIGHEST=hi),
        reduce=r.floating if kind_f else r.integer, final=f"({out_ct})({final})",
        load=src.load, store=dst.store,
        better=better, worse=worse)


def _group(n: int, cap: int) -> int:
    g = 1
    while g < n and g < cap:
        g *= 2
    return g


def _split(x: CLArray, dims: Sequence[int]) -> tuple[tuple[int, ...], np.ndarray, np.ndarray, int, int]:
    """(kept shape, kept layout, reduced layout, number of outputs, reduced count)."""
    kept = [d for d in range(x.ndim) if d not in dims]
    kshape = tuple(x.shape[d] for d in kept)
    rshape = tuple(x.shape[d] for d in dims)
    kv = x.view(kshape, tuple(x.strides[d] for d in kept), 0)
    rv = x.view(rshape, tuple(x.strides[d] for d in dims), 0)
    n_out = int(np.prod(kshape, dtype=np.int64))
    n_red = int(np.prod(rshape, dtype=np.int64))
    return kshape, layout(kshape, [kv, kv]), layout(rshape, [rv, rv]), n_out, n_red


def _fast_kept(mo: np.ndarray, mr: np.ndarray) -> bool:
    """Whether neighbouring outputs are closer in memory than neighbouring reduced elements."""
    def inner_stride(m: np.ndarray) -> int:  # operand 1's stride of the innermost dimension (meta_t's layout)
        return abs(int(m[1 + 2 * MAX_DIMS + int(m[0]) - 1]))
    return inner_stride(mo) < inner_stride(mr)


def _dims(x: CLArray, dims: Sequence[int] | None) -> tuple[int, ...]:
    return tuple(range(x.ndim)) if dims is None else tuple(d % max(x.ndim, 1) for d in dims) if x.ndim else ()


def _out_shape(x: CLArray, dims: tuple[int, ...], keepdim: bool) -> tuple[int, ...]:
    if keepdim:
        return tuple(1 if d in dims else n for d, n in enumerate(x.shape))
    return tuple(n for d, n in enumerate(x.shape) if d not in dims)


def reduction_kernels(rt: Runtime) -> dict[str, Callable[..., Any]]:
    """sum, mean, prod, amax, amin, any, all, argmax, argmin on ``rt``'s device."""
    cap = rt.max_group
    units = rt.device.max_compute_units

    def kernel(op: str, name: str, in_dt: Any, acc_dt: Any, out_dt: Any, types: list[Any]) -> Any:
        key = ("reduce", op, in_dt, acc_dt, out_dt)
        return rt.kernel(key, name, lambda: _source(op, in_dt, acc_dt, out_dt), types)

    plans: dict[Any, tuple[Any, ...]] = {}

    def plan(x: CLArray, dims: Any, keepdim: bool) -> tuple[Any, ...]:
        """(dims, the layouts' device buffers, counts, output shape, whether the kept dimension is the
        fast one), cached per (shape, strides, dims, keepdim): loops reduce the same layouts again and again."""
        key = (x.shape, x.strides, dims, keepdim)
        got = plans.get(key)
        if got is None:
            if len(plans) > 4096:
                plans.clear()
            d = _dims(x, dims)
            _kshape, mo, mr, n_out, n_red = _split(x, d)
            got = plans[key] = (d, rt.meta(mo), rt.meta(mr), n_out, n_red, _out_shape(x, d, keepdim),
                                _fast_kept(mo, mr))
        return got

    def run(op: str, x: CLArray, dims: Any, keepdim: bool, acc_dt: Any, out_dt: Any) -> CLArray:
        dims, dmo, dmr, n_out, n_red, shape, fast_kept = plan(x, dims, keepdim)
        out = rt.empty(shape, out_dt)
        if n_out == 0:
            return out
        if n_red == 0 and op in ("amax", "amin"):
            raise ValueError(f"{op}: cannot reduce over a zero-size dimension (input shape {list(x.shape)}) "
                             "with no identity")
        types = [None, None, _I64, _I64, _I64, _I64, None, None]
        # one work-item per output: many outputs along the fast dimension, or little to reduce per output
        if n_red > 1 and ((n_out >= 4 * cap and fast_kept) or n_red <= 64):
            k = kernel(op, "reduce_columns", x.dtype, acc_dt, out_dt, types)
            k(rt.queue, rt.grid(n_out), None, out.buffer, x.buffer, x.offset, n_red, n_out, n_red, dmo, dmr)
            return out
        chunks = 1
        if n_out < 4 * units and n_red >= 4096 * 4:
            chunks = min(max(1, 8 * units // n_out), n_red // 4096)
        g = _group(max(1, -(-n_red // chunks)), cap)
        if chunks == 1:
            k = kernel(op, "reduce", x.dtype, acc_dt, out_dt, types)
            k(rt.queue, (n_out * g,), (g,), out.buffer, x.buffer, x.offset, n_red, 1, n_red, dmo, dmr)
            return out
        # first pass: partials in the accumulator type; second: combine them (a mean divides by n_red there)
        part_op = "sum" if op == "mean" else op
        # partial results in the compute type: a 16-bit sum is rounded once, at the end
        part = rt.empty((n_out, chunks), compute_dtype(acc_dt) if op not in ("any", "all") else _BOOL)
        k1 = kernel(part_op, "reduce", x.dtype, acc_dt, part.dtype, types)
        k1(rt.queue, (n_out * chunks * g,), (g,), part.buffer, x.buffer, x.offset, n_red, chunks, n_red, dmo, dmr)
        _pk, pmo, pmr, _, _ = _split(part, (1,))
        k2 = kernel(op, "reduce", part.dtype, acc_dt if op not in ("any", "all") else _BOOL, out_dt, types)
        g2 = _group(chunks, cap)
        k2(rt.queue, (n_out * g2,), (g2,), out.buffer, part.buffer, 0, chunks, 1, n_red, rt.meta(pmo), rt.meta(pmr))
        return out

    def sum_(x: CLArray, dims: Any, keepdim: bool, dtype: Any) -> CLArray:
        dt = rt.np_dtype(dtype)
        return run("sum", x, dims, keepdim, dt, dt)

    def reducer(op: str) -> Callable[..., CLArray]:
        def k(x: CLArray, dims: Any, keepdim: bool) -> CLArray:
            if op in ("any", "all"):
                return run(op, x, dims, keepdim, x.dtype, _BOOL)
            return run(op, x, dims, keepdim, x.dtype, x.dtype)
        return k

    def arg(op: str) -> Callable[..., CLArray]:
        def k(x: CLArray, dim: int | None, keepdim: bool) -> CLArray:
            src = x
            if dim is None:
                src = x if x.contiguous else cast_array(x, x.dtype)
                src = src.view((x.size,), (1,), src.offset)
                dims: tuple[int, ...] = (0,)
            else:
                dims = _dims(x, (dim,))
            _kshape, mo, mr, n_out, n_red = _split(src, dims)
            dmo, dmr = rt.meta(mo), rt.meta(mr)
            if dim is None:
                shape = tuple(1 for _ in x.shape) if keepdim else ()
            else:
                shape = _out_shape(x, dims, keepdim)
            out = rt.empty(shape, np.dtype(np.int64))
            if n_red == 0:
                raise ValueError(f"{op}: cannot reduce over a zero-size dimension (input shape {list(x.shape)})")
            if n_out == 0:
                return out
            g = _group(n_red, cap)
            kk = kernel(op, "argreduce", src.dtype, src.dtype, np.dtype(np.int64), [None, None, _I64, _I64, None, None])
            kk(rt.queue, (n_out * g,), (g,), out.buffer, src.buffer, src.offset, n_red, dmo, dmr)
            return out
        return k

    return {"sum": sum_, **{op: reducer(op) for op in ("mean", "prod", "amax", "amin", "any", "all")},
            "argmax": arg("argmax"), "argmin": arg("argmin")}
