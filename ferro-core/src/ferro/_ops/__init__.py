"""The op registry and the ops built from it (see ``_core.records`` for the format).

Importing this package registers every op, then gives each op one public function that enters the
dispatcher (``_core.modes.entry``): the op families write plain functions, and :func:`_enter` makes each
the op's entry and rebinds the families' names to it, so every caller (the namespace, Tensor methods,
another op) calls the same function. Elementwise ops and the arithmetic wrappers reach the layers from
their own slow path, at no cost on their hot path, and stay as they are.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from .._core.modes import entry
from .._core.records import REGISTRY, OpDef, get, register
from . import (  # noqa: F401  (each module registers its ops)
    aliases,
    arithmetic,
    blas,
    complex,
    composite,
    conv,
    conversion,
    elementwise,
    elementwise_composites,
    fft,
    indexing,
    inplace,
    linalg,
    linalg_ext,
    linalg_more,
    linalg_solvers,
    movement,
    nn,
    nn_bags,
    nn_dropouts,
    nn_surface,
    nn_windows,
    norms,
    numeric,
    predicates,
    products,
    quantized,
    reduction,
    sampling,
    scatter,
    shape,
    sorting,
    sparse,
    special_functions,
    special_kernels,
    stacking,
    statistics,
)

__all__ = ["REGISTRY", "OpDef", "get", "register", "FUNCTIONS", "METHODS", "INPLACE"]


def _enter() -> None:
    """Make each op's public function its dispatch entry, and rebind the op modules' names to it."""
    entries: dict[int, Callable[..., Any]] = {}
    for op in REGISTRY.values():
        fn = op.fn
        if fn is None or getattr(fn, "__dispatches__", False):
            continue
        if getattr(fn, "__wrapped_op__", None) is not op:
            op.fn = entries[id(fn)] = entries.get(id(fn)) or entry(op, fn)
            continue
        inner = fn.__wrapped__
        while inner is not None:  # the plain functions an entry wraps, wherever a module still holds them
            entries.setdefault(id(inner), fn)
            inner = getattr(inner, "__wrapped__", None)
    prefix = __name__ + "."
    for name, module in list(sys.modules.items()):
        if not name.startswith(prefix):
            continue
        space = vars(module)
        for key, value in list(space.items()):
            if callable(value) and id(value) in entries:
                space[key] = entries[id(value)]
            elif isinstance(value, dict) and key.endswith("FUNCTIONS"):
                for k, v in value.items():
                    if id(v) in entries:
                        value[k] = entries[id(v)]


_enter()

#: Every public op function by name.
FUNCTIONS: dict[str, Callable[..., Any]] = {
    **elementwise.FUNCTIONS, **shape.FUNCTIONS, **reduction.FUNCTIONS, **linalg.FUNCTIONS,
    **indexing.FUNCTIONS, **{n: f for n, f in composite.FUNCTIONS.items() if n in composite.METHODS},
    "allclose": composite.allclose, **movement.FUNCTIONS, **scatter.FUNCTIONS,
    **sorting.FUNCTIONS, **sampling.FUNCTIONS,
    **products.FUNCTIONS, **complex.FUNCTIONS, **arithmetic.FUNCTIONS, **arithmetic.ALIASES,
    **norms.FUNCTIONS, **blas.FUNCTIONS, **stacking.FUNCTIONS, **numeric.FUNCTIONS,
    **elementwise_composites.FUNCTIONS, **statistics.FUNCTIONS, **statistics.ALIASES,
    "sinc": special_functions.FUNCTIONS["sinc"],  # the others are ferro.special's only, as in PyTorch
}
#: Ops that are also Tensor methods.
METHODS: list[str] = ([n for n in elementwise.FUNCTIONS] + shape.METHODS + reduction.METHODS + linalg.METHODS
                      + indexing.METHODS + composite.METHODS + ["allclose"] + movement.METHODS + scatter.METHODS
                      + sorting.METHODS + sampling.METHODS + complex.METHODS + list(arithmetic.ALIASES)
                      + blas.METHODS + stacking.METHODS + numeric.METHODS + products.METHODS
                      + special_functions.METHODS + elementwise_composites.METHODS
                      + statistics.METHODS)
#: Ops with an in-place ``name_`` method.
INPLACE: list[str] = [*elementwise.INPLACE, "scatter", "scatter_add", "scatter_reduce", "index_add", "index_copy",
                       "index_fill", "masked_fill", "masked_scatter", "clamp", "clamp_min", "clamp_max", "lerp",
                       "fmod", "true_divide", "nan_to_num", *blas.INPLACE, *numeric.INPLACE,
                       *special_functions.INPLACE, *elementwise_composites.INPLACE, "tril", "triu",
                       "cumsum", "cumprod", "xlogy", "sgn", "index_put", *aliases.INPLACE]
