"""The op registry and the ops built from it (see ``_registry`` for the format)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .._core.records import REGISTRY, OpDef, get, register
from . import (  # noqa: F401  (each module registers its ops)
    arithmetic,
    complex,
    composite,
    conv,
    conversion,
    elementwise,
    fft,
    indexing,
    inplace,
    linalg,
    linalg_ext,
    movement,
    nn,
    norms,
    products,
    reduction,
    sampling,
    scatter,
    shape,
    sorting,
)

__all__ = ["REGISTRY", "OpDef", "get", "register", "FUNCTIONS", "METHODS", "INPLACE"]

#: Every public op function by name.
FUNCTIONS: dict[str, Callable[..., Any]] = {
    **elementwise.FUNCTIONS, **shape.FUNCTIONS, **reduction.FUNCTIONS, **linalg.FUNCTIONS,
    **indexing.FUNCTIONS, **{n: f for n, f in composite.FUNCTIONS.items() if n in composite.METHODS},
    "allclose": composite.allclose, **movement.FUNCTIONS, **scatter.FUNCTIONS,
    **sorting.FUNCTIONS, **sampling.FUNCTIONS,
    **products.FUNCTIONS, **complex.FUNCTIONS, **arithmetic.FUNCTIONS, **arithmetic.ALIASES,
    **norms.FUNCTIONS,
}
#: Ops that are also Tensor methods.
METHODS: list[str] = ([n for n in elementwise.FUNCTIONS] + shape.METHODS + reduction.METHODS + linalg.METHODS
                      + indexing.METHODS + composite.METHODS + ["allclose"] + movement.METHODS + scatter.METHODS
                      + sorting.METHODS + sampling.METHODS + complex.METHODS + list(arithmetic.ALIASES))
#: Ops with an in-place ``name_`` method.
INPLACE: list[str] = [*elementwise.INPLACE, "scatter", "scatter_add", "scatter_reduce", "index_add", "index_copy",
                       "index_fill", "masked_fill", "masked_scatter", "clamp", "clamp_min", "clamp_max", "lerp",
                       "fmod", "true_divide", "nan_to_num"]
