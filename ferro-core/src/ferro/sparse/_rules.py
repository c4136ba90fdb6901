"""The layout layer's rules for the sparse layouts: which ops take a sparse tensor, and what they do.

An op not listed here raises :class:`ferro.errors.UnsupportedLayoutError` naming the op, the argument and
the layout (the layout layer's answer), never a silent conversion to dense.
"""

from __future__ import annotations

from typing import Any

from .._core.layouts import rule
from . import _functions as F  # noqa: N812  (the functions the rules map to)

__all__: list[str] = []

_KINDS = ("sparse_coo", "sparse_csr")


def _for_both(*op_names: str) -> Any:
    def register(fn: Any) -> Any:
        for kind in _KINDS:
            rule(kind, *op_names)(fn)
        return fn
    return register


_for_both("matmul", "mm", "mv")(F.matmul)
_for_both("mul")(F.mul)
_for_both("div", "true_divide")(F.div)
_for_both("neg", "negative")(F.neg)
_for_both("add")(F.add)
_for_both("clone")(F.clone)
_for_both("cast")(F.to)


@_for_both("sub", "subtract")
def _sub(input: Any, other: Any, alpha: Any = 1) -> Any:
    return F.add(input, other, alpha=-alpha)


@_for_both("sum")
def _sum(input: Any, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Any:
    return F.sum(input, dim, keepdim, dtype)


@_for_both("transpose", "swapaxes", "swapdims")
def _transpose(input: Any, dim0: int, dim1: int) -> Any:
    return F.transpose(input, dim0, dim1)


@_for_both("t")
def _t(input: Any) -> Any:
    return F.transpose(input, 0, 1) if input.ndim == 2 else input


@_for_both("softmax")
def _softmax(input: Any, dim: int, dtype: Any = None, **_: Any) -> Any:
    return F.softmax(input, dim, dtype)


@_for_both("log_softmax")
def _log_softmax(input: Any, dim: int, dtype: Any = None, **_: Any) -> Any:
    return F.log_softmax(input, dim, dtype)
