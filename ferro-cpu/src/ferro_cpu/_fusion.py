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

Measured against numexpr and numba (``benchmarks/compile_chain.py --candidates``):
faster than both, so neither is a dependency (docs/plugins.md has the figures).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ferro._core.host import numpy_dtype
from ferro.backends.fusion import CompiledGroup, Const, FusedGroup, StepPlan, check_inputs, plan, scalar_value

__all__ = ["compile_group", "CHUNK", "buffer_slots", "block_source", "step_call", "outputs_of"]

#: Elements per block: a few float32 blocks (inputs, live values, outputs) fit in a 1 MiB L2 cache (measured: 8K-128K).
CHUNK = 32768


def buffer_slots(group: FusedGroup, live: tuple[int, ...] = ()) -> list[int]:
    """For each step, the buffer its value goes to: a value's buffer is reused once its last reader has run
    (the values of ``live`` are read after the last step)."""
    n = len(group.inputs)
    last = dict.fromkeys(live, len(group.steps))
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


def block_source(group: FusedGroup, steps: list[tuple[Any, list[Any], bool]], slots: list[int],
                 out_of: dict[int, int], returns: tuple[int, ...] = ()) -> tuple[str, dict[str, Any]]:
    """The source of ``block(lo, hi, m, I0.., O0.., B0..)``: one block of every step, straight-line (no loop over
    steps, no argument lists built per call), returning the blocks of the values ``returns``, and the names it
    reads (ufuncs, kernels, constants)."""
    n = len(group.inputs)
    names: dict[str, Any] = {}
    nbuf = max(slots, default=-1) + 1
    params = ["lo", "hi", "m", *(f"I{j}" for j in range(n)), *(f"O{j}" for j in range(len(group.outputs))),
              *(f"B{s}" for s in range(nbuf))]
    lines = [f"    v{j} = I{j}[lo:hi]" for j in range(n)]
    lines += [f"    b{s} = B{s}[:m]" for s in range(nbuf)]
    lines += [f"    o{j} = O{j}[lo:hi]" for j in set(out_of.values())]
    for k, ((fn, srcs, into), s) in enumerate(zip(steps, slots)):
        v = n + k
        names[f"f{k}"] = fn
        args = []
        for j, x in enumerate(srcs):
            if type(x) is int:
                args.append(f"v{x}")
            elif type(x) is tuple:
                names[f"d{k}_{j}"] = x[1]
                args.append(f"v{x[0]}.astype(d{k}_{j})")
            else:
                names[f"c{k}_{j}"] = x
                args.append(f"c{k}_{j}")
        dst = f"o{out_of[v]}" if v in out_of else f"b{s}"
        call = f"f{k}({', '.join(args)}"
        lines.append(f"    v{v} = {call}, out={dst})" if into else f"    {dst}[...] = {call}); v{v} = {dst}")
    lines += [f"    o{j}[...] = v{o}" for o, j in out_of.items() if o < n]  # an input that is an output
    lines.append(f"    return ({''.join(f'v{v}, ' for v in returns)})")
    return f"def block({', '.join(params)}):\n" + "\n".join(lines) + "\n", names


def outputs_of(group: FusedGroup) -> tuple[dict[int, int], list[tuple[int, int]]]:
    """(value -> the output it is written to, (first, other) for a value named twice: copied afterwards)."""
    out_of: dict[int, int] = {}
    again = []
    for j, o in enumerate(group.outputs):
        if o in out_of:
            again.append((out_of[o], j))
        else:
            out_of[o] = j
    return out_of, again


def compile_group(group: FusedGroup, table: dict[str, Callable[..., Any]], pool: Any) -> CompiledGroup:
    """``group`` as a blocked run over ``table``'s kernels (the device's table: plugin overrides count);
    outputs come from ``pool`` (the backend's buffer pool)."""
    plans = plan(group)
    shape = group.shape
    size = math.prod(shape)
    outputs = group.outputs
    out_dtypes = [numpy_dtype(group.value_dtype(o)) for o in outputs]
    slots = buffer_slots(group)
    slot_dtypes: dict[int, Any] = {}
    for s, step in zip(slots, group.steps):
        slot_dtypes[s] = numpy_dtype(step.dtype)
    out_of, again = outputs_of(group)
    text, names = block_source(group, [step_call(st, p, table, group) for st, p in zip(group.steps, plans)], slots,
                                out_of)
    exec(compile(text, "<ferro fused group>", "exec"), names)  # our own generated text: names are its globals
    block = names["block"]
    # blocks: flat over contiguous inputs of the group's shape, else along the first axis (rows of ``rest``)
    rest = shape[1:]
    row = math.prod(rest) if shape else 1
    rows = max(1, CHUNK // max(row, 1))

    in_dtypes = [numpy_dtype(i.dtype) for i in group.inputs]

    def run(*arrays: Any) -> list[Any]:
        check_inputs(group, arrays, in_dtypes)
        outs = [pool.empty(shape, dt) for dt in out_dtypes]
        if not size:
            return outs
        if not shape or all(a.shape == shape and a.flags.c_contiguous for a in arrays):
            ins = [a.reshape(-1) for a in arrays]
            views = [o.reshape(-1) for o in outs]
            stride, total, shape_of_block = CHUNK, size, (CHUNK,)
        else:
            ins = [np.broadcast_to(a, shape) for a in arrays]
            views = outs
            stride, total, shape_of_block = rows, shape[0], (rows, *rest)
        bufs = [np.empty(shape_of_block, slot_dtypes[s]) for s in range(len(slot_dtypes))]
        with np.errstate(all="ignore"):
            for lo in range(0, total, stride):
                hi = min(total, lo + stride)
                block(lo, hi, hi - lo, *ins, *views, *bufs)
        for first, j in again:
            np.copyto(outs[j], outs[first])
        return outs
    return run


def step_call(step: Any, p: StepPlan, table: dict[str, Callable[..., Any]],
              group: FusedGroup) -> tuple[Callable[..., Any], list[Any], bool]:
    """(the function of one step, its operands, whether it writes with ``out=``): a kernel that says how to
    write into a given array (its ``into``, a ufunc for most) is called so, any other kernel plainly. Operands:
    a value's index, a constant (a 0-d array of the compute dtype), or (index, dtype) for a value to cast."""
    compute = numpy_dtype(p.compute)
    kernel = table[step.op]
    into = getattr(kernel, "into", None)
    srcs: list[Any] = []
    for j, o in enumerate(step.operands):
        cond = step.op == "where" and j == 0
        if type(o) is Const:
            srcs.append(np.asarray(bool(o.value), bool) if cond else
                        np.asarray(scalar_value(o.value, p.compute), compute))
        elif cond or group.value_dtype(o.index) is p.compute:
            srcs.append(o.index)
        else:
            srcs.append((o.index, compute))
    return (into, srcs, True) if into is not None else (kernel, srcs, False)
