"""The ``compile_fused`` hook of the CPU backend: a fused group of elementwise ops run chunk by chunk in cache.

NumPy runs one op over a whole array before the next, so a chain of ten ops
over arrays larger than the cache reads and writes memory twenty times. Here
the group runs over blocks of :data:`CHUNK` elements: every step of a block,
then the next block, each step a NumPy ufunc writing with ``out=`` into a small
preallocated buffer (buffers reused once their value is dead), the outputs'
blocks written in place. Values stay in the cache; memory is read and written
once. A step whose kernel is not a plain ufunc (a plugin's override, a fused
activation) calls the kernel itself on the block. Results are eager's: the
same ufuncs (or kernels) on the same dtypes, with the same casts.

Measured against numexpr and numba by ``benchmarks/compile_chain.py``'s
arguments: neither is a dependency (see docs/plugins.md for the figures).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ferro._core.host import numpy_dtype
from ferro.backends.fusion import CompiledGroup, Const, FusedGroup, StepPlan, plan, scalar_value

__all__ = ["compile_group", "CHUNK"]

#: Elements per block: ten float32 buffers of it (and the inputs' and outputs' blocks) fit in a 1 MiB L2 cache.
CHUNK = 16384


def _slots(group: FusedGroup) -> list[int]:
    """For each step, the buffer its value goes to: a value's buffer is reused once its last reader has run."""
    n = len(group.inputs)
    last = {}
    for k, step in enumerate(group.steps):
        for o in step.operands:
            if type(o) is not Const:
                last[o.index] = k
    free: dict[Any, list[int]] = {}
    slot_dtype: list[Any] = []
    slots: list[int] = []
    for k, step in enumerate(group.steps):
        dt = step.dtype
        pool = free.setdefault(dt, [])
        if pool:
            s = pool.pop()
        else:
            s = len(slot_dtype)
            slot_dtype.append(dt)
        slots.append(s)
        for o in {o.index for o in step.operands if type(o) is not Const}:
            if o >= n and last.get(o) == k:
                free.setdefault(group.steps[o - n].dtype, []).append(slots[o - n])
        if last.get(n + k) is None:  # never read: its buffer is free after the step
            free.setdefault(dt, []).append(s)
    return slots


def compile_group(group: FusedGroup, table: dict[str, Callable[..., Any]], pool: Any) -> CompiledGroup:
    """``group`` as a blocked run over ``table``'s kernels (the device's table: plugin overrides count);
    outputs come from ``pool`` (the backend's buffer pool)."""
    plans = plan(group)
    n = len(group.inputs)
    shape = group.shape
    size = math.prod(shape)
    outputs = group.outputs
    out_dtypes = [numpy_dtype(group.value_dtype(o)) for o in outputs]
    slots = _slots(group)
    slot_dtypes: dict[int, Any] = {}
    for s, step in zip(slots, group.steps):
        slot_dtypes[s] = numpy_dtype(step.dtype)
    steps = [_step(step, p, table, group) for step, p in zip(group.steps, plans)]
    out_of: dict[int, int] = {}
    again = []  # a value named twice in outputs: copied from its first output
    for j, o in enumerate(outputs):
        if o in out_of:
            again.append((out_of[o], j))
        else:
            out_of[o] = j
    # blocks: flat over contiguous inputs of the group's shape, else along the first axis (rows of ``rest``)
    rest = shape[1:]
    row = math.prod(rest) if shape else 1
    rows = max(1, CHUNK // max(row, 1))

    def run(*arrays: Any) -> list[Any]:
        if len(arrays) != n:
            raise TypeError(f"the fused group takes {n} input arrays, got {len(arrays)}")
        outs = [pool.empty(shape, dt) for dt in out_dtypes]
        if not size:
            return outs
        flat = all(a.shape == shape and a.flags.c_contiguous for a in arrays)
        if flat or not shape:
            ins = [a.reshape(-1) for a in arrays]
            views = [o.reshape(-1) for o in outs]
            step_len, total, block = CHUNK, size, (CHUNK,)
        else:
            ins = [np.broadcast_to(a, shape) for a in arrays]
            views = outs
            step_len, total, block = rows, shape[0], (rows, *rest)
        bufs = {s: np.empty(block, dt) for s, dt in slot_dtypes.items()}
        with np.errstate(all="ignore"):
            for lo in range(0, total, step_len):
                hi = min(total, lo + step_len)
                m = hi - lo
                values = [a[lo:hi] for a in ins]
                for k, (fn, s) in enumerate(zip(steps, slots)):
                    j = out_of.get(n + k)
                    dst = views[j][lo:hi] if j is not None else bufs[s][:m]
                    values.append(fn(values, dst))
                for o, j in out_of.items():
                    if o < n:
                        views[j][lo:hi] = values[o]
        for first, j in again:
            np.copyto(outs[j], outs[first])
        return outs
    return run


def _step(step: Any, p: StepPlan, table: dict[str, Callable[..., Any]], group: FusedGroup) -> Callable[..., Any]:
    """``f(values, dst) -> value`` running one step on a block: its ufunc into ``dst``, else its kernel."""
    compute = numpy_dtype(p.compute)
    kernel = table[step.op]
    ufunc = getattr(kernel, "ufunc", None)
    getters = []
    for j, o in enumerate(step.operands):
        if type(o) is Const:
            at = p.compute if not (step.op == "where" and j == 0) else None
            c = np.asarray(o.value if at is None else scalar_value(o.value, at), compute if at else bool)
            getters.append(lambda values, _c=c: _c)
        elif (step.op == "where" and j == 0) or group.value_dtype(o.index) is p.compute:
            getters.append(lambda values, _i=o.index: values[_i])
        else:
            getters.append(lambda values, _i=o.index: values[_i].astype(compute))
    if ufunc is not None:
        def run(values: list[Any], dst: Any) -> Any:
            return ufunc(*(g(values) for g in getters), out=dst)
    else:
        def run(values: list[Any], dst: Any) -> Any:
            r = kernel(*(g(values) for g in getters))
            if r.shape != dst.shape:
                return r
            dst[...] = r
            return dst
    return run
