"""Elementwise kernels generated from ``kernels/elementwise.cl`` and the ops' expressions (``OpDef.expr``).

A program is built once per (op, operand dtypes, result dtype, which
operands are Python scalars) on first use, and holds two kernels: ``_c``
for operands that are contiguous with the output's shape (an offset is
fine, so slices of the leading dimension stay fast) and ``_s`` for any
strides and broadcasting, which takes the layout by value (``meta_t``).
Dimensions are coalesced first, so a permuted or expanded view often needs
only one or two. Nothing here waits for the device.
"""

from __future__ import annotations

import struct
import threading
from collections.abc import Callable, Sequence
from string import Template
from typing import Any

import numpy as np

from ferro._core.dtypes import bool_
from ferro.backends import ARITY, OPENCL, Expr, Helper, elementwise_ops, helper_source

from ._array import CLArray
from ._runtime import HALF_DTYPES, MAX_DIMS, Runtime, compute_dtype, ctypes, read_source, scalar_arg

__all__ = ["Elementwise", "elementwise_kernels", "copy_contiguous", "copy_into", "commit_into", "cast_array",
           "layout"]

_BOOL = np.dtype(bool)
_F16, _BF16 = HALF_DTYPES
_I64 = np.int64
#: Elements of the innermost dimension per work-item in strided kernels (CHUNK in elementwise.cl).
CHUNK = 16
_TEMPLATE: Template | None = None


def _template() -> Template:
    global _TEMPLATE
    if _TEMPLATE is None:
        _TEMPLATE = Template(read_source("elementwise.cl"))
    return _TEMPLATE


def render(name: str, expr: str, operands: Sequence[tuple[Any, bool]], out_dtype: Any,
           helpers: Sequence[Helper] = (), guard: bool = False) -> str:
    """The source of kernels ``{name}_c`` / ``{name}_s``: ``operands`` are (dtype, is_scalar) bound to a, b, c.
    ``guard``: a commit, which writes nothing while the device's error flag (its last argument) is set."""
    params, loads_c, loads_s, pos_init, pos_step, params_z, loads_z, pos_next = [], [], [], [], [], [], [], []
    compute = ctypes(operands[0][0]).compute
    arrays = 0  # strides of the array operands only: m->st[1], m->st[2], ... (scalars have none)
    for j, (dt, scalar) in enumerate(operands, start=1):
        st, ct, ld = ctypes(dt)[:3]
        var = "abc"[j - 1]
        if scalar:
            params.append(f", const {ct} s{j}")
            params_z.append(f", const {ct} s{j}")
            for loads in (loads_c, loads_z):
                loads.append(f"    const {ct} {var} = s{j};")
            loads_s.append(f"        const {ct} {var} = s{j};")
            continue
        params.append(f", __global const {st} *x{j}, const long off{j}")
        params_z.append(f", __global const {st} *x{j}")
        loads_z.append(f"    const {ct} {var} = {ld}(x{j}, i);")
        loads_c.append(f"    const {ct} {var} = {ld}(x{j}, off{j} + i);")
        loads_s.append(f"        const {ct} {var} = {ld}(x{j}, p{j});")
        arrays += 1
        pos_init.append(f", p{j} = off{j} + lo * m->st[{arrays}][last]")
        pos_step.append(f" p{j} += k * m->st[{arrays}][d];")
        pos_next.append(f" p{j} += m->st[{arrays}][last];")
    out_st, out_ct, _, store = ctypes(out_dtype)[:4]
    if store == "ST_H" and compute == "double":
        out_ct = "double"  # vstore_half_rte rounds a double to half once, as NumPy does (bfloat16 goes through
        # float, as ml_dtypes and PyTorch do)
    body = Template(expr).substitute(T=compute)
    result = f"(({out_ct})(({body}) != 0))" if out_dtype == _BOOL else f"(({out_ct})({body}))"
    prelude = helper_source(expr, helpers, compute, OPENCL)
    return prelude + _template().substitute(
        name=name, out_t=out_st, params="".join(params), loads_c="\n".join(loads_c), loads_s="\n".join(loads_s),
        params_z="".join(params_z), loads_z="\n".join(loads_z), pos_next="".join(pos_next),
        err=", volatile __global int *err" if guard or _needs_flag(expr) else "",
        guard="    if (*err) return;\n" if guard else "",
        store=store, result=result, pos_init="".join(pos_init), pos_step="".join(pos_step))


def _needs_flag(expr: str) -> bool:
    """Whether an expression reports errors through the device's flag (its last kernel argument)."""
    return "err)" in expr


def expression(op_expr: Expr, dtype: Any) -> tuple[str | None, tuple[Helper, ...]]:
    """The expression of an op for ``dtype`` and the helpers it may call (None: the op refuses the dtype)."""
    return op_expr.text("f" if ctypes(dtype).floating else dtype.kind), op_expr.helpers


def _scalar_types(operands: Sequence[tuple[Any, bool]], strided: bool, offsets: bool = True,
                  flag: bool = False) -> list[Any]:
    types: list[Any] = [None, _I64] if offsets else [None]
    for dt, scalar in operands:
        if scalar:
            types.append(compute_dtype(dt))
        else:
            types += [None, _I64] if offsets else [None]
    types.append(_I64)
    if strided:
        types.append(None)
    if flag:
        types.append(None)
    return types


class Elementwise:
    """One op's kernels on one device, built per (dtypes, scalar pattern) on first use."""

    __slots__ = ("cache", "expr_of", "fast", "name", "out_of", "rt")

    def __init__(self, rt: Runtime, name: str, expr_of: Callable[[Any], tuple[str | None, tuple[str, ...]]],
                 out_of: Callable[[Any], Any]) -> None:
        self.rt = rt
        self.name = name
        self.expr_of = expr_of  # operand dtype -> (expression, helpers)
        self.out_of = out_of  # operand dtype -> result dtype
        self.cache: dict[Any, tuple[Any, Any, Any, Any, tuple[Any, ...]]] = {}
        #: for the hot patterns (array,), (array, array), (array, number), by their one dtype: the offset-free
        #: contiguous kernel (pyopencl's, which each thread clones, see _fast) and the result dtype
        self.fast: dict[tuple[bool, ...], dict[Any, tuple[Any, Any]]] = {
            (False,): {}, (False, False): {}, (False, True): {}}

    def kernels(self, operands: tuple[tuple[Any, bool], ...]) -> tuple[Any, Any, Any, Any, tuple[Any, ...]]:
        """(contiguous kernel, strided kernel, result dtype, contiguous kernel without offsets, the extra
        arguments: the error flag for ops that can fail)."""
        got = self.cache.get(operands)
        if got is None:
            dt = operands[-1][0] if self.name == "where" else operands[0][0]
            expr, helpers = self.expr_of(dt)
            if expr is None:
                raise TypeError(f"{self.name}: the OpenCL backend has no kernel for dtype {dt}")
            out = self.out_of(dt)
            key = ("ew", self.name, tuple((d.name, s) for d, s in operands), out.name)
            fname = f"{self.name}_k"

            def source() -> str:
                return render(fname, expr, operands, out, helpers)
            rt = self.rt
            flag = _needs_flag(expr)
            got = (rt.kernel(key, fname + "_c", source, _scalar_types(operands, False, flag=flag)),
                   rt.kernel(key, fname + "_s", source, _scalar_types(operands, True, flag=flag)), out,
                   rt.kernel(key, fname + "_z", source, _scalar_types(operands, False, offsets=False, flag=flag)),
                   (rt.error_flag,) if flag else ())
            self.cache[operands] = got
            hot = self.fast.get(tuple(sc for _, sc in operands))
            if hot is not None and not flag and all(d == operands[0][0] for d, _ in operands):
                hot[operands[0][0]] = (got[3].raw, out)  # the hot path passes no error flag
        return got

    def __call__(self, *args: Any) -> CLArray:
        """Apply the op to CLArrays and Python scalars (broadcasting) into a new array."""
        dt = next(a.dtype for a in args if type(a) is CLArray)
        if self.name == "where":  # the values' dtype; two scalars: bool, int64 or float32 (core casts the result)
            dt = next((a.dtype for a in args[1:] if type(a) is CLArray), None) or \
                np.dtype({bool: np.bool_, int: np.int64}.get(type(args[1]), np.float32))
        ops = tuple((_BOOL, type(a) is not CLArray) if self.name == "where" and i == 0 else
                    (dt, type(a) is not CLArray) for i, a in enumerate(args))
        kc, ks, out_dt, _, extra = self.kernels(ops)
        shapes = [a.shape for a in args if type(a) is CLArray]
        shape = shapes[0] if all(s == shapes[0] for s in shapes) else broadcast(shapes)
        out = self.rt.empty(shape, out_dt)
        launch(self.rt, kc, ks, out, args, dt, extra)
        return out


def broadcast(shapes: Sequence[tuple[int, ...]]) -> tuple[int, ...]:
    """NumPy's broadcast of ``shapes`` (ValueError when they do not broadcast), without NumPy's overhead."""
    nd = max(len(s) for s in shapes)
    out = []
    for i in range(-nd, 0):
        n = 1
        for s in shapes:
            if len(s) >= -i:
                m = s[i]
                if m != 1:
                    if n != 1 and m != n:
                        raise ValueError(f"shapes {[list(t) for t in shapes]} cannot be broadcast together")
                    n = m
        out.append(n)
    return tuple(out)


def launch(rt: Runtime, kc: Any, ks: Any, out: CLArray, args: Sequence[Any], dt: Any,
           extra: tuple[Any, ...] = ()) -> None:
    """Run an elementwise kernel pair writing ``out`` (any strides) from ``args`` (broadcast to it)."""
    n = out.size
    if n == 0:
        return
    shape = out.shape
    flat: list[Any] = [out.buffer, out.offset]
    fast = out.contiguous
    arrays = []
    for a in args:
        if type(a) is CLArray:
            flat += (a.buffer, a.offset)
            arrays.append(a)
            if fast and not (a.contiguous and a.shape == shape):
                fast = False
        else:
            flat.append(a if (type(a) is not bool or dt == _BOOL) and dt is not _F16 and dt is not _BF16
                        else scalar_arg(dt, a))
    if fast:
        flat.append(n)
        kc(rt.queue, rt.grid(n), None, *flat, *extra)
        return
    meta, inner = device_layout(rt, shape, [out, *arrays])  # inner: each work-item takes CHUNK of a row
    work = n // inner * -(-inner // CHUNK)
    flat += (work, meta, *extra)
    ks(rt.queue, rt.grid(work), None, *flat)


def device_layout(rt: Runtime, shape: tuple[int, ...], arrays: Sequence[CLArray]) -> tuple[Any, int]:
    """(device buffer of ``layout(shape, arrays)``, its innermost extent), cached per shapes and strides:
    a training loop launches the same layouts again and again."""
    key = (shape, *((a.shape, a.strides) for a in arrays))
    got = rt.layouts.get(key)
    if got is None:
        if len(rt.layouts) > 4096:
            rt.layouts.clear()
        m = layout(shape, arrays)
        got = rt.layouts[key] = (rt.meta(m), int(m[m[0]]))
    return got


def _aligned(a: CLArray, shape: tuple[int, ...]) -> list[int]:
    """The strides of ``a`` broadcast to ``shape`` (0 along broadcast dimensions)."""
    pad = len(shape) - len(a.shape)
    return [0] * pad + [0 if n == 1 else s for n, s in zip(a.shape, a.strides)]


def layout(shape: tuple[int, ...], arrays: Sequence[CLArray]) -> np.ndarray:
    """The by-value ``meta_t`` of a strided launch: coalesced shape and each array's strides."""
    strides = [_aligned(a, shape) for a in arrays]
    dims: list[int] = []
    cols: list[list[int]] = [[] for _ in arrays]
    for d, n in enumerate(shape):
        if n == 1:
            continue
        if dims and all(col[-1] == st[d] * n for col, st in zip(cols, strides)):
            dims[-1] *= n  # merge into the previous (outer) dimension: it steps exactly over this one
            for col, st in zip(cols, strides):
                col[-1] = st[d]
            continue
        dims.append(n)
        for col, st in zip(cols, strides):
            col.append(st[d])
    if not dims:  # a single element: one dimension of 1, so that kernels always have an innermost one
        dims.append(1)
        for col in cols:
            col.append(0)
    if len(dims) > MAX_DIMS:
        raise ValueError(f"the OpenCL backend's strided kernels take at most {MAX_DIMS} dimensions that cannot be "
                         f"merged; got shape {list(shape)} (make the tensor contiguous first)")
    m = np.zeros(1 + MAX_DIMS * (1 + max(4, len(arrays))), np.int64)  # meta_t: 4 arrays; a fused group, more
    m[0] = len(dims)
    m[1:1 + len(dims)] = dims
    for j, col in enumerate(cols):
        base = 1 + MAX_DIMS * (j + 1)
        m[base:base + len(col)] = col
    return m


# -- the kernel table -------------------------------------------------------------------------------------


def elementwise_kernels(rt: Runtime) -> dict[str, Callable[..., Any]]:
    """A kernel for every op with an expression (``ferro.backends.elementwise_ops``: ferro's, ``where``
    included, and plugins')."""
    table: dict[str, Callable[..., Any]] = {}
    for name, op in elementwise_ops().items():
        def expr_of(dt: Any, _e: Expr = op.expr) -> tuple[str | None, tuple[Helper, ...]]:
            return expression(_e, dt)
        to_bool = all(r is bool_ for _, r in op.table.values())
        out_of = (lambda dt: _BOOL) if to_bool else (lambda dt: _BOOL if dt == _BOOL else dt)
        kernel = Elementwise(rt, name, expr_of, out_of)
        table[name] = _fast(kernel) if ARITY[op.kind] < 3 else kernel
    return table


def _fast(op: Elementwise) -> Callable[..., Any]:
    """The kernel function of ``op``: a contiguous array at offset 0 with another of its shape, or with a number
    on the right, skips every general step once its kernels exist.

    It launches the offset-free ``_z`` kernel itself instead of through pyopencl's invoker: OpenCL keeps a
    kernel's arguments between launches, so only the buffers are set each time, and the element count (and a
    scalar operand) only when it differs from the value the kernel already holds. Kernel arguments are state of
    the kernel object, so each thread launches its own clone of the kernel (made at its first launch of the op at
    that dtype) with what it last gave it: no lock on this path, and threads never see each other's arguments.
    (Measured against a lock around the same lines with benchmarks/opencl.py's overhead row: the clones were as
    fast or a few percent faster; docs/opencl.md has the figures.)
    """
    rt = op.rt
    shared = (op.fast[(False,)], op.fast[(False, False)], op.fast[(False, True)])
    queue = rt.queue
    allocate = rt.pool.allocate
    group = rt.max_group
    enqueue = rt.cl._cl.enqueue_nd_range_kernel
    make = rt.cl.Kernel
    new = object.__new__
    #: per thread, per pattern: dtype -> (its kernel clone, result dtype, [element count, scalar, global size])
    local = threading.local()

    def clone(which: int, dt: Any) -> Any:
        """This thread's kernel of pattern ``which`` at ``dt`` (None until the op has built it)."""
        got = shared[which].get(dt)
        if got is not None:
            got = local.tables[which][dt] = (make(got[0].program, got[0].function_name), got[1],
                                             [None, None, None])
        return got

    def kernel(*args: Any) -> CLArray:
        a = args[0]
        if type(a) is CLArray and a.contiguous and not a.offset:
            try:
                unary, both, scalar = local.tables
            except AttributeError:
                unary, both, scalar = local.tables = ({}, {}, {})
            got = None
            if len(args) == 1:
                got = unary.get(a.dtype) or clone(0, a.dtype)
                sv = None
            else:
                b = args[1]
                tb = type(b)
                if tb is CLArray:
                    if b.contiguous and not b.offset and b.shape == a.shape and b.dtype is a.dtype:
                        got = both.get(a.dtype) or clone(1, a.dtype)
                        sv = None
                elif tb is float or tb is int:  # x * 2.5: the scalar is a by-value argument
                    got = scalar.get(a.dtype) or clone(2, a.dtype)
                    sv = b
            if got is not None:
                out = new(CLArray)  # CLArray(rt, None, a.shape, dtype), without __init__: a's layout is the result's
                out.rt, out.shape, out.strides, out.size, out.contiguous, out.offset, out.dtype = \
                    rt, a.shape, a.strides, a.size, True, 0, got[1]
                n = a.size
                if not n:
                    out.buffer = None
                    return out
                kz, _, last = got
                out.buffer = buf = allocate(n * got[1].itemsize)
                if sv is None:
                    if len(args) == 1:
                        kz._set_arg_multi((0, buf, 1, a.buffer))
                        if last[0] != n:
                            kz._set_arg_buf_multi((2, _pack_q(n)))
                            last[0], last[2] = n, ((n + group - 1) // group * group,)
                    else:
                        kz._set_arg_multi((0, buf, 1, a.buffer, 2, b.buffer))
                        if last[0] != n:
                            kz._set_arg_buf_multi((3, _pack_q(n)))
                            last[0], last[2] = n, ((n + group - 1) // group * group,)
                else:
                    kz._set_arg_multi((0, buf, 1, a.buffer))
                    if last[0] != n or last[1] != sv or type(last[1]) is not type(sv):
                        kz._set_arg_buf_multi((2, _scalar_bytes(a.dtype, sv), 3, _pack_q(n)))
                        last[0], last[1], last[2] = n, sv, ((n + group - 1) // group * group,)
                enqueue(queue, kz, last[2], None, None, None, False, False)
                return out
        return op(*args)
    return kernel


_pack_q = struct.Struct("q").pack


def _scalar_bytes(dt: Any, value: Any) -> bytes:
    """A scalar kernel argument for operands of dtype ``dt``, as the kernel reads it (float for 16-bit floats)."""
    return np.asarray(scalar_arg(dt, value), compute_dtype(dt)).tobytes()


# -- copies and casts ---------------------------------------------------------------------------------------


def _copier(rt: Runtime, src: Any, dst: Any, scalar: bool = False, commit: bool = False) -> tuple[Any, Any]:
    key = ("copy", src, dst, scalar, commit)  # dtype objects: hashing them is cheap, their .name is not
    got = rt.kernels.get(key)
    if got is None:
        ops = ((src, scalar),)

        def source() -> str:
            return render("copy_k", "a", ops, dst, guard=commit)
        got = (rt.kernel(key, "copy_k_c", source, _scalar_types(ops, False, flag=commit)),
               rt.kernel(key, "copy_k_s", source, _scalar_types(ops, True, flag=commit)))
        rt.kernels[key] = got
    return got


def copy_into(dst: CLArray, src: Any, commit: bool = False) -> None:
    """``dst[...] = src`` (a CLArray broadcast to dst, or a Python scalar), converting dtypes. ``commit``: an
    in-place write into a user's tensor, which writes nothing while an error is flagged on the device (the
    result being written may be that of the failed op; the error is raised at the next synchronization)."""
    rt = dst.rt
    extra = (rt.error_flag,) if commit else ()
    if type(src) is CLArray:
        if src.rt is not rt:
            raise ValueError("copy between OpenCL devices goes through the host: use .to(device)")
        if src.shape != dst.shape and broadcast((src.shape, dst.shape)) != dst.shape:
            raise ValueError(f"could not broadcast input array from shape {list(src.shape)} into shape "
                             f"{list(dst.shape)}")
        if src.buffer is dst.buffer and src.buffer is not None and (src.offset, src.strides) != (dst.offset,
                                                                                             dst.strides):
            src = copy_contiguous(src)  # x[1:] = x[:-1]: work-items must not read what others overwrite
        kc, ks = _copier(rt, src.dtype, dst.dtype, commit=commit)
        launch(rt, kc, ks, dst, (src,), src.dtype, extra)
    else:
        sdt = dst.dtype
        kc, ks = _copier(rt, sdt, dst.dtype, True, commit)
        launch(rt, kc, ks, dst, (compute_dtype(sdt).type(scalar_arg(sdt, src)),), sdt, extra)


def commit_into(dst: CLArray, src: Any) -> None:
    """:func:`copy_into` as a commit: the ``copy_`` kernel, the last step of every in-place op."""
    copy_into(dst, src, True)


def copy_contiguous(x: CLArray) -> CLArray:
    """A contiguous copy of ``x``."""
    out = x.rt.empty(x.shape, x.dtype)
    copy_into(out, x)
    return out


def cast_array(x: CLArray, dtype: Any) -> CLArray:
    """``x`` converted to the NumPy dtype ``dtype`` (a new contiguous array)."""
    out = x.rt.empty(x.shape, dtype)
    copy_into(out, x)
    return out
