"""Fused groups that end with reductions (``ferro.backends.fusion.Reduce``) on the OpenCL backend.

A sum or amax over the trailing dimensions of the group's shape (all of them
included: softmax's row max and row sum, a norm, a loss) runs in the kernel
of ``kernels/fusion_reduce.cl``: the group's steps computed and reduced where
they are loaded, nothing of the chain written to memory; the work-groups'
partials are reduced by the backend's own ``sum`` / ``amax`` kernel. The
combine is the registry's: ``add``'s and ``maximum``'s expressions (NaN
propagating). Other reductions (over leading dimensions, an empty group) run
after the group's kernel (``ferro.backends.fusion.reduce_after``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from string import Template
from typing import Any

import numpy as np

from ferro._core.dtypes import DType
from ferro._core.host import numpy_dtype
from ferro._core.records import REGISTRY
from ferro.backends import OPENCL, substitute
from ferro.backends._fused_source import Unfusable
from ferro.backends.fusion import (
    CompiledGroup,
    FusedGroup,
    Reduce,
    check_inputs,
    elementwise_part,
    reduce_after,
    reduction_dtypes,
    signature,
)

from ._array import CLArray
from ._elementwise import device_layout
from ._fusion import arg_dtype, compile_group, inputs_source, prelude, scalars_source, steps_source
from ._runtime import Runtime, ctypes, read_source

__all__ = ["trailing", "compile_reduction", "compile_reductions"]

_I64 = np.int64
_TEMPLATE: list[Template] = []


def trailing(group: FusedGroup, r: Reduce) -> bool:
    """Whether ``r`` reduces the trailing dimensions of the group's shape (all of them included)."""
    nd = len(group.shape)
    return r.dims is None or tuple(r.dims) == tuple(range(nd - len(r.dims), nd))


def _accumulator(r: Reduce, compute: DType) -> Any:
    """The NumPy dtype a work-item accumulates in: the compute dtype, float32 for the 16-bit floats."""
    nd = numpy_dtype(compute)
    return np.dtype(np.float32) if compute.itemsize == 2 and compute.is_floating_point else nd


def _init(r: Reduce, acc: Any, ct: str) -> str:
    if r.op == "sum" or acc.kind in "bu":
        return f"({ct})0"
    if acc.kind == "f":
        return "-INFINITY"
    lo = int(np.iinfo(acc).min)
    return f"({ct})({lo + 1}L - 1)"


def _source(group: FusedGroup, r: Reduce, acc: Any, name: str) -> str:
    if not _TEMPLATE:
        _TEMPLATE.append(Template(read_source("fusion_reduce.cl")))
    src = steps_source(group._replace(outputs=(), reductions=()))
    ct = ctypes(acc).compute
    combine = REGISTRY["add" if r.op == "sum" else "maximum"].expr.text("f" if acc.kind == "f" else "i")
    parts = inputs_source(group, indent="        ")
    strided = ("        long rest = row * C + j;\n" + parts["pos_init"] + "\n"
               "        for (int d = (int)m[0] - 1; d >= 0; --d) {\n"
               "            const long k = rest % m[1 + d];\n            rest /= m[1 + d];\n"
               + parts["pos_step"] + "\n        }")
    flat = "".join(f"        const long p{j} = off{j} + row * C + j;\n" for j in range(len(group.inputs)))
    return prelude(group, src) + "".join(_TEMPLATE[0].substitute(
        name=f"{name}{suffix}", acc_t=ct, params=parts["params"], scalars=scalars_source(src),
        init=_init(r, acc, ct), positions=positions, loads=parts["loads_s"],
        body="\n".join("    " + line for line in src.body.splitlines()), value=str(r.value),
        combine=substitute(combine, ct, OPENCL), err=", volatile __global int *err" if src.flag else "")
        for suffix, positions in (("_r", strided), ("_rc", flat)))


def compile_reduction(rt: Runtime, group: FusedGroup, index: int,
                      table: dict[str, Callable[..., Any]]) -> Callable[..., Any]:
    """Reduction ``group.reductions[index]`` (over trailing dimensions) of ``group`` as one kernel and the
    partials' reduction: ``f(*input_arrays) -> result array``."""
    r = group.reductions[index]
    compute, result = reduction_dtypes(group)[index]
    acc = _accumulator(r, compute)
    src = steps_source(group._replace(outputs=(), reductions=()))
    shape = group.shape
    keep = len(shape) - (len(shape) if r.dims is None else len(r.dims))
    rows, cols = math.prod(shape[:keep]), math.prod(shape[keep:])
    out_shape = shape[:keep] + (1,) * (len(shape) - keep) if r.keepdim else shape[:keep]
    key = ("fused_reduce", signature(group), index)
    types = [None] + [None, _I64] * len(group.inputs) + [arg_dtype(d) for _, d, _ in src.scalars] + \
        [_I64, _I64, None, None] + ([None] if src.flag else [])
    kernels = [rt.kernel(key, f"ferro_fused{suffix}", lambda: _source(group, r, acc, "ferro_fused"), types)
               for suffix in ("_r", "_rc")]
    fits = min(k.raw.get_work_group_info(rt.cl.kernel_work_group_info.WORK_GROUP_SIZE, rt.device) for k in kernels)
    # as the backend's reductions: rows cut in parts only when there are few rows and long ones, the work-group
    # the smallest power of two covering a part (the tree in local memory halves it)
    units = rt.device.max_compute_units
    parts = min(max(1, 8 * units // rows), cols // 4096) if rows < 4 * units and cols >= 16384 else 1
    cap = 1 << (min(rt.max_group, fits).bit_length() - 1)
    local = 1
    while local < -(-cols // parts) and local < cap:
        local *= 2
    scalars = [v for _, _, v in src.scalars]
    extra = (rt.error_flag,) if src.flag else ()
    scratch = rt.cl.LocalMemory(local * acc.itemsize)
    reduce_parts = table["sum"] if r.op == "sum" else table[r.op]
    cast, reshape = table["cast"], table["reshape"]

    def run(*arrays: Any) -> Any:
        partial = rt.empty((rows, parts), acc)
        args: list[Any] = [partial.buffer]
        for a in arrays:
            args += (a.buffer, a.offset)
        meta, _ = device_layout(rt, shape, [CLArray(rt, None, shape, acc), *arrays])
        kernel = kernels[all(a.contiguous and a.shape == shape for a in arrays)]
        kernel(rt.queue, (rows * parts * local,), (local,), *args, *scalars, cols, parts, meta, scratch, *extra)
        out = reduce_parts(partial, (1,), False, result) if r.op == "sum" else reduce_parts(partial, (1,), False)
        if out.dtype != numpy_dtype(result):
            out = cast(out, result)
        return reshape(out, out_shape)
    return run


def compile_reductions(rt: Runtime, group: FusedGroup, table: dict[str, Callable[..., Any]],
                       fuse: bool | None = None) -> CompiledGroup | None:
    """``group`` (with reductions) as the kernel of its outputs (none without outputs) and one fused reduction
    kernel per reduction; reductions over leading dimensions, or of an empty group, run after the group's
    kernel (``reduce_after``). None where the group's steps cannot be generated (it is replayed).

    ``fuse`` (None: on devices other than CPUs) says whether reductions are fused at all: PoCL runs a
    work-group on one core without vectorizing a work-item's loop, so the chain computed in the reduction's
    loop is slower there than the vectorized elementwise kernel followed by the backend's reduction
    (``benchmarks/compile_chain.py``'s row sum measured 0.74x of eager fused, on PoCL)."""
    if fuse is None:
        fuse = not rt.device.type & rt.cl.device_type.CPU
    if not fuse or not math.prod(group.shape) or not all(trailing(group, r) for r in group.reductions):
        inner = compile_group(rt, elementwise_part(group))
        return None if inner is None else reduce_after(group, inner, table)
    outputs = compile_group(rt, group._replace(reductions=())) if group.outputs else None
    if group.outputs and outputs is None:
        return None
    try:
        reducers = [compile_reduction(rt, group, k, table) for k in range(len(group.reductions))]
    except (Unfusable, TypeError):
        return None

    in_dtypes = [numpy_dtype(i.dtype) for i in group.inputs]

    def run(*arrays: Any) -> list[Any]:
        check_inputs(group, arrays, in_dtypes)
        if any(a.rt is not rt for a in arrays):
            raise ValueError("a fused group runs on one OpenCL device: an input is on another")
        outs = list(outputs(*arrays)) if outputs is not None else []
        return outs + [f(*arrays) for f in reducers]
    return run
