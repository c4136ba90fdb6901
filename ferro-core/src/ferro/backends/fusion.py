"""What a backend's ``compile`` hook receives: a group of elementwise ops to run as one kernel.

``ferro.compile`` records a step as a graph of registry ops; its fusion pass cuts chains of
elementwise ops (those whose record has an ``expr``, :class:`ferro._core.expr.Expr`) into
:class:`FusedGroup` s. A backend that offers the optional hook ``compile_fused(group, index)`` turns a group
into one kernel (OpenCL C, CUDA C, or whatever is fastest on the host); a backend without it gets
:func:`replay`, which runs the group's steps one by one through its ordinary kernel table. :func:`lower`
picks one of the two for a device, so that a caller never asks which.

A group is plain data, independent of any graph: values are numbered, the group's inputs first
(``0 .. len(inputs) - 1``), then one per step in order. Every step's operands broadcast to the group's
``shape``; ``outputs`` names the values that leave the group. :func:`plan` gives each step's compute dtype,
as eager execution would promote its operands (PyTorch's rules: Python scalars are weak).

>>> import ferro
>>> g = FusedGroup(inputs=(Input((3,), ferro.float32),), shape=(3,),
...                steps=(Step("mul", (Ref(0), Const(2.0)), ferro.float32),
...                       Step("exp", (Ref(1),), ferro.float32)),
...                outputs=(2,))
>>> g.value_dtype(2) is ferro.float32
True
>>> run = lower(g, ferro.device("cpu"))
>>> x = ferro.tensor([0.0, 0.5, 1.0])
>>> [round(float(v), 4) for v in run(x._data)[0]]
[1.0, 2.7183, 7.3891]
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np

from .._core.device import device as _device
from .._core.dtypes import DType, bfloat16, bool_, result_type
from .._core.host import numpy_dtype
from .._core.records import REGISTRY, OpDef
from .._core.tensor import _wrap
from ._expressions import ARITY

__all__ = ["Input", "Ref", "Const", "Step", "Reduce", "FusedGroup", "CompiledGroup", "StepPlan", "plan", "replay",
           "lower", "signature", "scalar_value", "REDUCTIONS", "reduction_dtypes", "elementwise_part", "reduce_after",
           "fusable", "check_inputs", "unbound_steps"]

#: The reductions a group may end with (registry ops of kind "reduction"; their kernels take
#: ``(x, dims, keepdim, dtype)`` for sum, ``(x, dims, keepdim)`` for amax).
REDUCTIONS = ("sum", "amax")


class Input(NamedTuple):
    """One array the group reads: its shape (broadcastable to the group's) and dtype."""

    shape: tuple[int, ...]
    dtype: Any


class Ref(NamedTuple):
    """An operand that is a value of the group: an input (``index < len(inputs)``) or an earlier step's result."""

    index: int


class Const(NamedTuple):
    """An operand that is a Python scalar, as the op was called with it (``x * 2.0``)."""

    value: bool | int | float | complex


class Step(NamedTuple):
    """One elementwise op of the group: the registry op's name, its operands, and its result's dtype as eager
    execution gave it (the kernel computes in that op's compute type and stores at ``dtype``)."""

    op: str
    operands: tuple[Ref | Const, ...]
    dtype: Any


class Reduce(NamedTuple):
    """A reduction at the end of a group (softmax's max and sum, a norm): the registry op (one of
    :data:`REDUCTIONS`), the value it reduces (broadcast to the group's shape first), the dims of the group's
    shape it reduces (sorted; None: all), ``keepdim``, and its result's dtype as eager execution gave it."""

    op: str
    value: int
    dims: tuple[int, ...] | None
    keepdim: bool
    dtype: Any


class FusedGroup(NamedTuple):
    """A chain of elementwise ops over one broadcast shape, run as one kernel; ``reductions`` (optional) reduce
    values of the chain, their results returned after the ``outputs``."""

    inputs: tuple[Input, ...]
    shape: tuple[int, ...]
    steps: tuple[Step, ...]
    outputs: tuple[int, ...]
    reductions: tuple[Reduce, ...] = ()

    def value_dtype(self, index: int) -> Any:
        """The dtype of value ``index`` (an input's or a step's)."""
        n = len(self.inputs)
        return self.inputs[index].dtype if index < n else self.steps[index - n].dtype


#: What ``compile_fused`` returns: called with the inputs' native arrays, it returns the outputs' native arrays
#: (fresh ones, of the group's shape and the outputs' dtypes), in the order of ``FusedGroup.outputs``.
CompiledGroup = Callable[..., Sequence[Any]]


def fusable(op: str) -> bool:
    """Whether registry op ``op`` can be a step of a group: an elementwise op whose record gives its C
    expression (``OpDef.expr``); a reduction of :data:`REDUCTIONS` can end one (:class:`Reduce`).

    >>> fusable("mul"), fusable("sigmoid"), fusable("matmul")
    (True, True, False)
    """
    rec = REGISTRY.get(op)
    return rec is not None and rec.expr is not None and rec.kind in ARITY


def check_inputs(group: FusedGroup, arrays: Sequence[Any], dtypes: Sequence[Any]) -> None:
    """A compiled group's check of what it is called with: as many arrays as the group has inputs, each of its
    input's shape and of native dtype ``dtypes[j]``; ``TypeError`` naming the input otherwise."""
    if len(arrays) != len(group.inputs):
        raise TypeError(f"the fused group takes {len(group.inputs)} input arrays, got {len(arrays)}")
    for j, (a, inp, dt) in enumerate(zip(arrays, group.inputs, dtypes)):
        if a.shape != inp.shape or a.dtype != dt:
            raise TypeError(f"fused group input {j}: expected shape {inp.shape} and dtype {inp.dtype.name}, got "
                            f"shape {tuple(a.shape)} and dtype {a.dtype}")


class StepPlan(NamedTuple):
    """How eager execution runs one step: the op's record, the dtype its operands are cast to (``compute``), the
    dtype of its result, and the dtype its operands promote to (what a kernel is bound for)."""

    op: OpDef
    compute: DType
    result: DType
    promoted: DType


def plan(group: FusedGroup) -> tuple[StepPlan, ...]:
    """Each step's op record, compute dtype and result dtype, as eager execution promotes them; a clear
    ``ValueError`` for a step that is no elementwise op with an expression, an operand that refers forward, or
    a dtype that differs from the one the step records."""
    n = len(group.inputs)
    out: list[StepPlan] = []
    ndim = [len(i.shape) for i in group.inputs]  # each value's, as eager sees it: 0-d ones promote weakly
    for k, step in enumerate(group.steps):
        where = f"fused group step {k} ({step.op})"
        op = REGISTRY.get(step.op)
        if op is None or not fusable(step.op):
            raise ValueError(f"{where}: not an elementwise op with an expression (OpDef.expr); it cannot be fused")
        if len(step.operands) != ARITY[op.kind]:
            raise ValueError(f"{where}: takes {ARITY[op.kind]} operands, got {len(step.operands)}")
        for o in step.operands:
            if type(o) is Ref and not 0 <= o.index < n + k:
                raise ValueError(f"{where}: operand Ref({o.index}) is not an input or an earlier step's value")
        if step.op == "where" and (type(step.operands[0]) is not Ref or
                                   group.value_dtype(step.operands[0].index) is not bool_):
            raise ValueError(f"{where}: the condition must be a bool value of the group")
        ndim.append(max((ndim[o.index] for o in step.operands if type(o) is Ref), default=0))
        values = step.operands[1:] if step.op == "where" else step.operands
        dims = [group.value_dtype(o.index) for o in values if type(o) is Ref and ndim[o.index]]
        zero = [group.value_dtype(o.index) for o in values if type(o) is Ref and not ndim[o.index]]
        dtype = result_type(dims, zero, [o.value for o in values if type(o) is Const])
        rule = op.table.get(dtype)
        if rule is None:
            raise ValueError(f"{where}: the op does not take dtype {dtype.name}")
        compute, result = rule
        if result is not step.dtype:
            raise ValueError(f"{where}: eager execution gives {result.name}, the step records "
                             f"{getattr(step.dtype, 'name', step.dtype)}")
        out.append(StepPlan(op, compute, result, dtype))
    for o in group.outputs:
        if not 0 <= o < n + len(group.steps):
            raise ValueError(f"fused group output {o} is no value of the group")
    reduction_dtypes(group)
    return tuple(out)


def reduction_dtypes(group: FusedGroup) -> tuple[tuple[DType, DType], ...]:
    """Each reduction's (compute dtype, result dtype), as eager execution casts and reduces; a clear
    ``ValueError`` for a reduction that is not one of :data:`REDUCTIONS`, of no value, over dims the group's
    shape has not, or of another dtype than eager's."""
    out = []
    nd = len(group.shape)
    for k, r in enumerate(group.reductions):
        where = f"fused group reduction {k} ({r.op})"
        if r.op not in REDUCTIONS:
            raise ValueError(f"{where}: a group may end with {', '.join(REDUCTIONS)} only")
        if not 0 <= r.value < len(group.inputs) + len(group.steps):
            raise ValueError(f"{where}: value {r.value} is no value of the group")
        if r.dims is not None and (list(r.dims) != sorted(set(r.dims)) or any(not 0 <= d < nd for d in r.dims)):
            raise ValueError(f"{where}: dims {r.dims} are not sorted dims of the group's shape {group.shape}")
        rule = REGISTRY[r.op].table.get(group.value_dtype(r.value))
        if rule is None or rule[1] is not r.dtype:
            raise ValueError(f"{where}: eager execution gives {rule[1].name if rule else 'no result'} for "
                             f"{group.value_dtype(r.value).name}, the reduction records "
                             f"{getattr(r.dtype, 'name', r.dtype)}")
        out.append(rule)
    return tuple(out)


def scalar_value(value: Any, compute: DType) -> bool | int | float:
    """A step's Python scalar as its kernel takes it at ``compute``: an int wrapped into an integer dtype
    (``uint8 + 300`` adds 44, as PyTorch), a number rounded once to a 16-bit float (PyTorch's weak scalars).
    Complex scalars are refused (``TypeError``): no generated kernel computes in complex."""
    if isinstance(value, complex) or compute.kind == "c":
        raise TypeError("fused kernels do not compute in complex")
    if compute.kind == "b":
        return bool(value)
    if compute.kind in "iu":
        v = int(value)
        span = 1 << (compute.itemsize * 8)
        lo = -(span >> 1) if compute.kind == "i" else 0
        return v if lo <= v < lo + span else (v - lo) % span + lo
    v = float(value)
    if compute.itemsize == 2:
        with np.errstate(over="ignore"):
            v = float(np.asarray(v, numpy_dtype(compute)).astype(np.float32))
    return v


def signature(group: FusedGroup) -> tuple[Any, ...]:
    """A hashable key of what a kernel generated for ``group`` depends on: the group with each scalar reduced
    to its Python type (the values are kernel arguments, so a new learning rate builds nothing new)."""
    steps = tuple((s.op, tuple(o if type(o) is Ref else type(o.value).__name__ for o in s.operands), s.dtype)
                  for s in group.steps)
    return (group.inputs, group.shape, steps, group.outputs, group.reductions)


def unbound_steps(group: FusedGroup, device: Any) -> frozenset[int]:
    """The steps whose op has no kernel bound on ``device`` at its dtype (eager execution runs its decomposition,
    or the fallback, there): a backend's hook declines a group with such a step, the replay runs it as eager
    does."""
    ops = device._ops
    return frozenset(k for k, p in enumerate(plan(group))
                     if p.op.name not in ops or p.promoted not in ops[p.op.name][1])


def replay(group: FusedGroup, table: dict[str, Callable[..., Any]], device: Any = None) -> CompiledGroup:
    """The group as its steps one by one through a backend's kernel ``table`` (the fallback where the backend
    has no ``compile_fused`` hook): each step casts its operands to its compute dtype and calls the op's kernel,
    as eager execution does, so the results are eager's. With the ``device`` the table is bound to, a step
    whose kernel is not bound there (:func:`unbound_steps`) runs through the op itself, on tensors: its
    decomposition, as in eager execution."""
    plans = plan(group)
    eager = unbound_steps(group, device) if device is not None else frozenset()
    # a kernel that gives another native dtype than its step's (eager's tensor would only carry the label)
    natives = [device.backend.native_dtype(s.dtype) for s in group.steps] if device is not None else None
    reduce_plan = reduction_dtypes(group)
    n = len(group.inputs)
    cast, full, clone, expand = table["cast"], table["full"], table["clone"], table["expand"]
    shape = group.shape

    def operand(o: Ref | Const, values: list[Any], p: StepPlan) -> Any:
        if type(o) is Const:
            v = scalar_value(o.value, p.compute)
            return full((), v, p.compute) if p.compute is bfloat16 else v
        return values[o.index] if group.value_dtype(o.index) is p.compute else cast(values[o.index], p.compute)

    def run(*arrays: Any) -> list[Any]:
        if len(arrays) != n:
            raise TypeError(f"the fused group takes {n} input arrays, got {len(arrays)}")
        values = list(arrays)
        for k, (step, p) in enumerate(zip(group.steps, plans)):
            if k in eager:
                args = [_wrap(values[o.index], group.value_dtype(o.index), device) if type(o) is Ref else o.value
                        for o in step.operands]
                values.append(p.op.fn(*args)._data)  # type: ignore[misc]
                continue
            if step.op == "where":
                cond = step.operands[0]
                args = [values[cond.index] if type(cond) is Ref else cond.value,
                        *(operand(o, values, p) for o in step.operands[1:])]
                r = table["where"](*args)
                if all(type(o) is Const for o in step.operands[1:]):
                    r = cast(r, p.compute)
            else:
                r = table[step.op](*(operand(o, values, p) for o in step.operands))
            if natives is not None and r.dtype != natives[k]:
                r = cast(r, p.result)
            values.append(r)
        outs = []
        for o in group.outputs:
            v = values[o]
            if tuple(v.shape) != shape:
                v = expand(v, shape)
            outs.append(clone(v) if o < n or v is not values[o] else v)
        for r, (compute, _) in zip(group.reductions, reduce_plan):
            outs.append(_reduce(table, r, compute, group, values[r.value]))
        return outs
    return run


def _reduce(table: dict[str, Callable[..., Any]], r: Reduce, compute: DType, group: FusedGroup, x: Any) -> Any:
    """Reduction ``r`` of native array ``x`` (value ``r.value`` of ``group``, broadcast to the group's shape)
    through ``table``, as eager runs it."""
    if tuple(x.shape) != group.shape:
        x = table["expand"](x, group.shape)
    if group.value_dtype(r.value) is not compute:
        x = table["cast"](x, compute)
    return table["sum"](x, r.dims, r.keepdim, r.dtype) if r.op == "sum" else table[r.op](x, r.dims, r.keepdim)


def elementwise_part(group: FusedGroup) -> FusedGroup:
    """``group`` without its reductions, the values they reduce appended to its outputs."""
    return group._replace(outputs=group.outputs + tuple(r.value for r in group.reductions), reductions=())


def reduce_after(group: FusedGroup, compiled: CompiledGroup, table: dict[str, Callable[..., Any]]) -> CompiledGroup:
    """``group`` run as ``compiled`` (the kernel of :func:`elementwise_part`), then its reductions through the
    kernel ``table``: one extra pass over each reduced value, for a backend that does not fuse reductions."""
    nout = len(group.outputs)
    plans = list(zip(group.reductions, (c for c, _ in reduction_dtypes(group))))

    def run(*arrays: Any) -> list[Any]:
        got = list(compiled(*arrays))
        return got[:nout] + [_reduce(table, r, c, group, x) for (r, c), x in zip(plans, got[nout:])]
    return run


def lower(group: FusedGroup, device: Any) -> CompiledGroup:
    """``group`` made runnable on ``device`` (a ``ferro.device`` or its string): the device's backend's
    ``compile_fused`` hook where it has one and takes the group, else :func:`replay` through the device's kernel
    table. The steps are checked first (:func:`plan`). A group with reductions reaches the hook only where the
    backend says it fuses them (``fuses_reductions = True``); elsewhere the hook gets the elementwise part and
    the reductions run after it (:func:`reduce_after`)."""
    dev = _device(device)
    key = (dev, dev.backend, signature(group),  # the backend object: a reloaded one compiles anew
           tuple(repr(o.value) for s in group.steps for o in s.operands if type(o) is Const))
    got = _LOWERED.get(key)
    if got is None:
        if len(_LOWERED) >= 512:  # bounded: a workload of ever new groups must not grow it forever
            _LOWERED.clear()
        got = _LOWERED[key] = _lower(group, dev)
    return got


#: (device, signature, the scalars' values) -> what lower() gave: a group lowered again costs a lookup
_LOWERED: dict[Any, CompiledGroup] = {}


def _lower(group: FusedGroup, dev: Any) -> CompiledGroup:
    plan(group)
    backend = dev.backend  # binds the device: its kernel table exists from here on
    if group.reductions and not getattr(backend, "fuses_reductions", False):
        return reduce_after(group, _lower(elementwise_part(group), dev), dev._kernels)
    hook = getattr(backend, "compile_fused", None)  # Backend's default gives None
    compiled = hook(group, dev.index) if hook is not None else None
    return compiled if compiled is not None else replay(group, dev._kernels, dev)
