"""The OpenCL backend's kernel table, put together from the kernel families, and what it refuses.

What is not here (linear algebra decompositions, FFT, sorting and the ops
whose results the registry composes from these primitives) runs by its
decomposition in the registry where one exists, or raises
``UnsupportedOperationError`` naming the backends that have it
(``FERRO_FALLBACK=cpu`` opts in to running it on the CPU backend).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ferro._core.dtypes import DType
from ferro.backends import elementwise_ops

from ._creation import creation_kernels
from ._elementwise import elementwise_kernels
from ._indexing import indexing_kernels
from ._matmul import matmul_kernel
from ._movement import movement_kernels
from ._reduction import reduction_kernels
from ._runtime import Runtime
from ._sorting import sorting_kernels

__all__ = ["kernel_table", "refused"]


def kernel_table(rt: Runtime, rng: Callable[[], Any],
                 host: dict[str, Callable[..., Any]]) -> dict[str, Callable[..., Any]]:
    """Op name -> kernel on ``rt``'s device; ``rng()`` is the device's host generator, ``host`` core's
    host-computed kernels (for unique, histc, bincount)."""
    return {**elementwise_kernels(rt), **movement_kernels(), **indexing_kernels(rt), **reduction_kernels(rt),
            "matmul": matmul_kernel(rt), **creation_kernels(rt, rng), **sorting_kernels(rt, host)}


def refused(dtypes: frozenset[DType]) -> dict[str, frozenset[DType]]:
    """Op -> the dtypes whose kind (floating, integer or bool) the op's expression has no C for."""
    out: dict[str, frozenset[DType]] = {}
    for name, op in elementwise_ops().items():
        bad = frozenset(d for d in dtypes if op.expr.text(d.kind) is None)
        if bad:
            out[name] = bad
    return out
