"""Fused groups that end with reductions (``ferro.backends.fusion.Reduce``) on the CPU backend.

Reductions over the same trailing dimensions of the group's shape (all of
them included) run inside the blocked run of :mod:`._fusion`: the shape seen as
R rows of C elements, each block's reduced values reduced before the next
block, so the chain is never written out. Rows of at most a block are taken
whole, several per block, and reduced exactly as eager does (one ``np.add``
/ ``np.maximum`` reduction per row); a longer row is reduced block by block
and its blocks' results combined. Other reductions run after the group's run
(``ferro.backends.fusion.reduce_after``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ferro._core.host import numpy_dtype
from ferro.backends.fusion import (
    CompiledGroup,
    FusedGroup,
    check_inputs,
    elementwise_part,
    plan,
    reduce_after,
    reduction_dtypes,
)

from ._fusion import CHUNK, block_source, buffer_slots, compile_group, outputs_of, step_call

__all__ = ["compile_reductions"]


def _first_reduced(group: FusedGroup) -> set[int]:
    nd = len(group.shape)
    return {0 if r.dims is None else (r.dims[0] if tuple(r.dims) == tuple(range(r.dims[0], nd)) else -1)
            for r in group.reductions}


def compile_reductions(group: FusedGroup, table: dict[str, Callable[..., Any]], pool: Any) -> CompiledGroup:
    """``group`` with its reductions as one blocked run (reductions over one set of trailing dimensions),
    else its run followed by the reductions."""
    firsts = _first_reduced(group)
    shape = group.shape
    if not math.prod(shape) or len(firsts) != 1 or -1 in firsts:
        return reduce_after(group, compile_group(elementwise_part(group), table, pool), table)
    first = firsts.pop()
    rows, cols = math.prod(shape[:first]), math.prod(shape[first:])
    plans = plan(group)
    reduced = tuple(r.value for r in group.reductions)
    slots = buffer_slots(group, live=reduced)
    slot_dtypes = {s: numpy_dtype(st.dtype) for s, st in zip(slots, group.steps)}
    out_of, again = outputs_of(group)
    text, names = block_source(group, [step_call(st, p, table, group) for st, p in zip(group.steps, plans)], slots,
                               out_of, reduced)
    exec(compile(text, "<ferro fused group>", "exec"), names)  # our own generated text: names are its globals
    block = names["block"]
    out_dtypes = [numpy_dtype(group.value_dtype(o)) for o in group.outputs]
    reducers = []
    for r, (compute, result) in zip(group.reductions, reduction_dtypes(group)):
        acc = numpy_dtype(compute)
        if r.op == "sum" and compute.itemsize == 2 and compute.is_floating_point:
            acc = np.dtype(np.float32)  # 16-bit floats accumulate in float32, as eager's sum
        out_shape = shape[:first] + (1,) * (len(shape) - first) if r.keepdim else shape[:first]
        reducers.append((np.add if r.op == "sum" else np.maximum, acc, numpy_dtype(result), out_shape))

    in_dtypes = [numpy_dtype(i.dtype) for i in group.inputs]

    def run(*arrays: Any) -> list[Any]:
        check_inputs(group, arrays, in_dtypes)
        outs = [pool.empty(shape, dt) for dt in out_dtypes]
        ins = [np.broadcast_to(a, shape).reshape(rows, cols) for a in arrays]
        views = [o.reshape(rows, cols) for o in outs]
        got = [np.empty(rows, acc) for _, acc, _, _ in reducers]
        with np.errstate(all="ignore"):
            if cols <= CHUNK:  # whole rows, several per block
                per = max(1, CHUNK // cols)
                bufs = [np.empty((per, cols), slot_dtypes[s]) for s in range(len(slot_dtypes))]
                for lo in range(0, rows, per):
                    hi = min(rows, lo + per)
                    values = block(lo, hi, hi - lo, *ins, *views, *bufs)
                    for (ufunc, acc, _, _), g, v in zip(reducers, got, values):
                        ufunc.reduce(np.broadcast_to(v, (hi - lo, cols)), axis=1, dtype=acc, out=g[lo:hi])
            else:  # a row in blocks, each block's result combined
                bufs = [np.empty(CHUNK, slot_dtypes[s]) for s in range(len(slot_dtypes))]
                for row in range(rows):
                    row_ins, row_views = [a[row] for a in ins], [o[row] for o in views]
                    parts: list[list[Any]] = [[] for _ in reducers]
                    for lo in range(0, cols, CHUNK):
                        hi = min(cols, lo + CHUNK)
                        values = block(lo, hi, hi - lo, *row_ins, *row_views, *bufs)
                        for (ufunc, acc, _, _), p, v in zip(reducers, parts, values):
                            p.append(ufunc.reduce(np.broadcast_to(v, (hi - lo,)), dtype=acc))
                    for (ufunc, acc, _, _), g, p in zip(reducers, got, parts):
                        g[row] = ufunc.reduce(np.asarray(p, acc), dtype=acc)
        for first_out, j in again:
            np.copyto(outs[j], outs[first_out])
        return outs + [g.astype(result, copy=False).reshape(out_shape) for (_, _, result, out_shape), g
                       in zip(reducers, got)]
    return run
