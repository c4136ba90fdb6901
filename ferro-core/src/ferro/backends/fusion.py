"""What a backend's ``compile`` hook receives: a group of elementwise ops to run as one kernel.

``ferro.compile`` records a step as a graph of registry ops; its fusion pass cuts chains of
elementwise ops (those whose record has an ``expr``, :class:`ferro._core.expr.Expr`) into
:class:`FusedGroup` s. A backend that offers the optional hook ``compile_fused(group)`` turns a group
into one kernel (OpenCL C, CUDA C, or whatever is fastest on the host); a backend without it gets
:func:`replay`, which runs the group's steps one by one through its ordinary kernel table.

A group is plain data, independent of any graph: values are numbered, the group's inputs first
(``0 .. len(inputs) - 1``), then one per step in order. Every step's operands broadcast to the group's
``shape``; ``outputs`` names the values that leave the group.

>>> import ferro
>>> g = FusedGroup(inputs=(Input((3,), ferro.float32),), shape=(3,),
...                steps=(Step("mul", (Ref(0), Const(2.0)), ferro.float32),
...                       Step("exp", (Ref(1),), ferro.float32)),
...                outputs=(2,))
>>> g.value_dtype(2) is ferro.float32
True
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

__all__ = ["Input", "Ref", "Const", "Step", "FusedGroup", "CompiledGroup", "replay"]


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


class FusedGroup(NamedTuple):
    """A chain of elementwise ops over one broadcast shape, run as one kernel."""

    inputs: tuple[Input, ...]
    shape: tuple[int, ...]
    steps: tuple[Step, ...]
    outputs: tuple[int, ...]

    def value_dtype(self, index: int) -> Any:
        """The dtype of value ``index`` (an input's or a step's)."""
        n = len(self.inputs)
        return self.inputs[index].dtype if index < n else self.steps[index - n].dtype


#: What ``compile_fused`` returns: called with the inputs' native arrays, it returns the outputs' native arrays
#: (fresh ones, of the group's shape and the outputs' dtypes), in the order of ``FusedGroup.outputs``.
CompiledGroup = Callable[..., Sequence[Any]]


def replay(group: FusedGroup, table: dict[str, Callable[..., Any]]) -> CompiledGroup:
    """The group as its steps one by one through a backend's kernel ``table`` (the fallback where the backend
    has no ``compile_fused`` hook). Filled in by the compile work; a placeholder until then."""
    raise NotImplementedError("replay(): not built yet")
