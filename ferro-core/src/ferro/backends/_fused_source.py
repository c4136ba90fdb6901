"""The C of a fused group's steps, for a backend that generates one kernel per group (OpenCL C, CUDA C).

:func:`fused_source` writes, from the ops' expressions (``OpDef.expr``), the
statements that compute every step's value from the inputs' values, in the
subset OpenCL C and CUDA C share; the backend wraps them in its kernel
(loads, stores, indexing). Value ``k`` of the group is the C variable ``v<k>``
in the compute type of its dtype (the backend's ``ctype``): the loads define
``v0 .. v<n-1>`` from the inputs, the body the others, the stores read those of
``outputs``. Each step opens a block in which its operands are ``a``, ``b``,
``c`` at the step's compute type, so the expression reads as in its record.
Python scalars are kernel arguments (``s<step>_<operand>``), not literals: a
group whose numbers change (a learning rate) reuses its compiled kernel.

>>> import ferro
>>> from ferro.backends import OPENCL
>>> from ferro.backends.fusion import Const, FusedGroup, Input, Ref, Step, plan
>>> g = FusedGroup((Input((4,), ferro.float32),), (4,), (Step("mul", (Ref(0), Const(2.0)), ferro.float32),), (1,))
>>> src = fused_source(g, plan(g), OPENCL, lambda d: {"float32": "float"}[d.name])
>>> print(src.body)
    float v1;
    { const float a = v0; const float b = s0_1; (void)a; (void)b; v1 = (float)(a * b); }
>>> src.scalars
(('s0_1', ferro.float32, 2.0),)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from .._core.dtypes import DType, bool_
from .._core.expr import Dialect, substitute, used_helpers, uses_flag
from .fusion import Const, FusedGroup, StepPlan, scalar_value

__all__ = ["FusedSource", "fused_source", "Unfusable"]


class Unfusable(ValueError):
    """A group that one kernel cannot compute in this language (a dtype without an expression, two compute
    types of one helper); the backend's hook gives None and the group is replayed."""


class FusedSource(NamedTuple):
    """The pieces of a fused kernel: ``helpers`` (the dialect's prelude and the helper functions the steps call,
    each once), ``body`` (the statements defining the steps' values), ``scalars`` (each Python scalar as a
    kernel argument: its C name, the dtype it is passed at, and its value so), and ``flag`` (whether the body
    sets the device's error flag ``err``)."""

    helpers: str
    body: str
    scalars: tuple[tuple[str, DType, Any], ...]
    flag: bool


def _kind(dtype: DType) -> str:
    return "f" if dtype.is_floating_point else dtype.kind


def fused_source(group: FusedGroup, plans: Sequence[StepPlan], dialect: Dialect, ctype: Callable[[DType], str],
                 indent: str = "    ", rounding: Callable[[DType], str | None] = lambda d: None) -> FusedSource:
    """The C of ``group``'s steps (``plans`` from :func:`ferro.backends.fusion.plan`) in ``dialect``, with
    ``ctype(dtype)`` the C type a kernel computes ``dtype`` in; :class:`Unfusable` where that cannot be done.

    ``rounding(dtype)``: for a dtype computed in a wider C type (float16 and bfloat16 in float), a format
    (``"round_h({})"``) rounding a value of that C type to the dtype and back; each step's result and each cast
    into it is rounded so, as eager execution stores every result, so that fused results are eager's."""
    helpers: dict[str, tuple[str, str]] = {}  # name -> (compute C type, definition), in order of first need
    lines: list[str] = []
    scalars: list[tuple[str, DType, Any]] = []
    flag = False
    n = len(group.inputs)
    for k, (step, p) in enumerate(zip(group.steps, plans)):
        text = p.op.expr.text(_kind(p.compute))
        if text is None:
            raise Unfusable(f"{step.op} has no expression for {p.compute}")
        ct = ctype(p.compute)
        flag = flag or uses_flag(text)
        for h in used_helpers(text, p.op.expr.helpers):
            got = helpers.get(h.name)
            if got is None:
                helpers[h.name] = (ct, substitute(h.source, ct, dialect))
            elif got[0] != ct:
                raise Unfusable(f"helper {h.name} is needed at two compute types ({got[0]}, {ct})")
        loads = []
        for j, o in enumerate(step.operands):
            var = "abc"[j]
            if type(o) is Const:
                at = bool_ if step.op == "where" and j == 0 else p.compute
                name = f"s{k}_{j}"
                scalars.append((name, at, scalar_value(o.value, at)))
                loads.append(f"const {ctype(at)} {var} = {name};")
                continue
            vd = group.value_dtype(o.index)
            if step.op == "where" and j == 0:  # the condition: bool, never cast
                loads.append(f"const {ctype(vd)} {var} = v{o.index};")
            elif vd is p.compute:
                loads.append(f"const {ct} {var} = v{o.index};")
            elif p.compute.kind == "b":
                loads.append(f"const {ct} {var} = ({ct})(v{o.index} != 0);")
            else:
                cast = f"({ct})v{o.index}"
                fmt = rounding(p.compute)
                loads.append(f"const {ct} {var} = {fmt.format(cast) if fmt else cast};")
        rt = ctype(p.result)
        expr = substitute(text, ct, dialect)
        value = f"({rt})(({expr}) != 0)" if p.result.kind == "b" else f"({rt})({expr})"
        if fmt := rounding(p.result):
            value = fmt.format(value)
        voids = " ".join(f"(void){v};" for v in "abc"[:len(step.operands)])
        lines.append(f"{indent}{rt} v{n + k};")
        lines.append(f"{indent}{{ {' '.join(loads)} {voids} v{n + k} = {value}; }}")
    prelude = dialect.prelude + "".join(src + "\n" for _, src in helpers.values())
    return FusedSource(prelude, "\n".join(lines), tuple(scalars), flag)
