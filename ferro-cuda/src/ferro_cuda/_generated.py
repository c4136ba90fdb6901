"""Kernels generated from ops' expressions, for the ops CuPy has no routine for: a plugin's op that gives
an ``expr`` runs here with no CUDA code of its own.

Each kernel broadcasts its operands (Python numbers become arrays of the
compute dtype), makes them contiguous and launches the entry point
:mod:`.kernels.elementwise` generates for the op and dtype, compiled once
per (op, dtype) by CuPy (NVRTC). An expression that can fail (integer
division by zero) sets a device flag, read after the launch.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any

from ferro.backends import OpDef, uses_flag

from . import kernels as kern
from .kernels.elementwise import elementwise_entry, elementwise_source, result_is_bool

__all__ = ["generated_kernels"]


@functools.cache
def _compiled(op: OpDef, dtype: str) -> Any:
    import cupy
    return cupy.RawKernel(elementwise_source(op, dtype), elementwise_entry(op.name, dtype), options=kern.OPTIONS)


def _kernel(op: OpDef) -> Callable[..., Any]:
    expr = op.expr
    flags = any(t is not None and uses_flag(t) for t in (expr.floating, expr.integer, expr.boolean))
    to_bool = result_is_bool(op)

    def run(*args: Any) -> Any:
        import cupy as cp
        import numpy as np
        dtype = next(a.dtype for a in args if isinstance(a, cp.ndarray))
        xs = cp.broadcast_arrays(*(a if isinstance(a, cp.ndarray) else cp.asarray(a, dtype=dtype) for a in args))
        out = cp.empty(xs[0].shape, cp.bool_ if to_bool else dtype)
        n = out.size
        if n:
            err = cp.zeros(1, cp.int32)
            grid, block = kern.launch_config(n)
            _compiled(op, dtype.name)(grid, block, (*(cp.ascontiguousarray(x) for x in xs), out, np.int64(n), err))
            if flags and int(err[0]):
                raise ZeroDivisionError(f"{op.name}: integer division by zero")
        return out
    run.__name__ = op.name
    return run


def generated_kernels(ops: Mapping[str, OpDef]) -> dict[str, Callable[..., Any]]:
    """A kernel per op of ``ops`` (ops with an expression), by name."""
    return {name: _kernel(op) for name, op in ops.items()}
