"""The ops a device backend can generate kernels for: those whose record gives an elementwise expression.

A backend that compiles C (ferro-opencl, ferro-cuda) asks :func:`elementwise_ops`
when it builds its kernel table, so an op a plugin registers with an
``expr`` gets a kernel there with no backend code of its own
(``docs/adding-an-op.md``). :data:`ARITY` gives the operands of each kind.
"""

from __future__ import annotations

from .._core.records import REGISTRY, OpDef

__all__ = ["elementwise_ops", "ARITY"]

#: OpDef.kind -> how many operands (``a``, ``b``, ``c``) its expression reads.
ARITY = {"unary": 1, "binary": 2, "ternary": 3}


def elementwise_ops() -> dict[str, OpDef]:
    """Every registered op with an expression (``OpDef.expr``) and an elementwise kind, by name."""
    return {name: op for name, op in REGISTRY.items() if op.expr is not None and op.kind in ARITY}
