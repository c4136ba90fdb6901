"""``ferro.array_api``: the Python array API standard (2024.12) over ferro tensors, on every backend.

>>> import ferro
>>> xp = ferro.tensor([1.0, 2.0]).__array_namespace__()
>>> xp.sum(xp.asarray([[1, 2], [3, 4]]), axis=0)
tensor([4, 6])

A second face on ferro's tensors and kernels, not a second implementation:
the functions take and return :class:`ferro.Tensor` and call ferro's ops,
spelling arguments as the standard does (``axis=``, ``keepdims=``,
``correction=``, ``stable=``, positional-only and keyword-only parameters).
Where the standard's semantics differ from PyTorch's (promotion of 0-d arrays
and Python scalars, integer division by zero, NaNs in ``unique_*``, stable
descending sorts), the difference is handled here; ferro's PyTorch-style
functions are unchanged.

The functions return :class:`Array`, a :class:`ferro.Tensor` whose Python
operators follow the standard too (a 0-d array promotes like any other):
``asarray(17133, dtype=int32) + asarray([3], dtype=int8)`` is ``int32
[17136]``, where two plain tensors give PyTorch's ``int8 [-16]``.

Extensions: ``linalg`` and ``fft`` (over :mod:`ferro.linalg` and :mod:`ferro.fft`).
Not offered: uint16, uint32 and uint64 (ferro has no such dtypes).
"""

from __future__ import annotations

import math as _math
import types as _types

from ._creation import (
    arange,
    asarray,
    empty,
    empty_like,
    eye,
    from_dlpack,
    full,
    full_like,
    linspace,
    meshgrid,
    ones,
    ones_like,
    tril,
    triu,
    zeros,
    zeros_like,
)
from ._dtypes import (
    astype,
    bool,
    can_cast,
    complex64,
    complex128,
    finfo,
    float32,
    float64,
    iinfo,
    int8,
    int16,
    int32,
    int64,
    isdtype,
    result_type,
    uint8,
)
from ._elementwise import FUNCTIONS as _ELEMENTWISE
from ._fft import fft
from ._info import __array_namespace_info__
from ._linalg import linalg, matmul, matrix_transpose, tensordot, vecdot
from ._manipulation import (
    broadcast_arrays,
    broadcast_shapes,
    broadcast_to,
    concat,
    expand_dims,
    flip,
    moveaxis,
    permute_dims,
    repeat,
    reshape,
    roll,
    squeeze,
    stack,
    take,
    take_along_axis,
    tile,
    unstack,
)
from ._searching import argmax, argmin, argsort, count_nonzero, nonzero, searchsorted, sort, where
from ._set import unique_all, unique_counts, unique_inverse, unique_values
from ._statistical import all, any, cumulative_prod, cumulative_sum, diff, max, mean, min, prod, std, sum, var

__array_api_version__ = "2024.12"
__array_api_extensions__ = ("linalg", "fft")

e = _math.e
inf = _math.inf
nan = _math.nan
pi = _math.pi
newaxis = None

globals().update(_ELEMENTWISE)

from ._array import Array, returns_arrays  # noqa: E402  (after the functions it wraps)

# Every function returns Array, whose operators follow the standard (a plain ferro.Tensor's are PyTorch's).
globals().update({_n: returns_arrays(_f) for _n, _f in list(globals().items())
                  if not _n.startswith("_") and isinstance(_f, _types.FunctionType)})
for _ext in (linalg, fft):
    for _n in _ext.__all__:
        setattr(_ext, _n, returns_arrays(getattr(_ext, _n)))

__all__ = [
    "Array", "__array_api_version__", "__array_namespace_info__", "e", "inf", "nan", "pi", "newaxis", "linalg", "fft",
    "bool", "int8", "int16", "int32", "int64", "uint8", "float32", "float64", "complex64", "complex128",
    "astype", "can_cast", "finfo", "iinfo", "isdtype", "result_type",
    "arange", "asarray", "empty", "empty_like", "eye", "from_dlpack", "full", "full_like", "linspace", "meshgrid",
    "ones", "ones_like", "tril", "triu", "zeros", "zeros_like",
    "matmul", "matrix_transpose", "tensordot", "vecdot",
    "broadcast_arrays", "broadcast_shapes", "broadcast_to", "concat", "expand_dims", "flip", "moveaxis",
    "permute_dims", "repeat", "reshape", "roll", "squeeze", "stack", "take", "take_along_axis", "tile", "unstack",
    "argmax", "argmin", "argsort", "count_nonzero", "nonzero", "searchsorted", "sort", "where",
    "unique_all", "unique_counts", "unique_inverse", "unique_values",
    "all", "any", "cumulative_prod", "cumulative_sum", "diff", "max", "mean", "min", "prod", "std", "sum", "var",
]
__all__ += sorted(_ELEMENTWISE)
