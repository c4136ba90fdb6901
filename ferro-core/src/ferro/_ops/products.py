"""Tensor products written in broadcasting, sums and matmul: outer, inner, vdot, tensordot, kron, einsum."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from .._core.records import register_composites
from .._core.tensor import Tensor
from ..errors import ShapeError
from ._rules import check_rule

#: einsum's subscript letters (string.ascii_letters, without importing string at ``import ferro``).
_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
__all__ = ["FUNCTIONS", "METHODS"]


def outer(a: Tensor, b: Tensor) -> Tensor:
    """Outer product of two vectors."""
    if a.ndim != 1 or b.ndim != 1:
        raise ShapeError(f"outer: expected 1-D tensors, got {list(a.shape)} and {list(b.shape)}")
    return a.unsqueeze(-1) * b


def vdot(a: Tensor, b: Tensor) -> Tensor:
    """Dot product of two vectors (the first conjugated for complex inputs)."""
    check_rule("vdot", a, b)
    if a.ndim != 1 or b.ndim != 1:
        raise ShapeError(f"vdot: expected 1-D tensors, got {list(a.shape)} and {list(b.shape)}")
    return (a.conj() * b).sum()


def tensordot(a: Tensor, b: Tensor, dims: int | Sequence[Sequence[int]] = 2) -> Tensor:
    """Contract the last ``dims`` dims of ``a`` with the first of ``b`` (or the listed pairs)."""
    if isinstance(dims, int):
        da, db = list(range(a.ndim - dims, a.ndim)), list(range(dims))
    else:
        da, db = [d % a.ndim for d in dims[0]], [d % b.ndim for d in dims[1]]
    if [a.shape[i] for i in da] != [b.shape[i] for i in db]:
        raise ShapeError(f"tensordot: contracted sizes differ: {[a.shape[i] for i in da]} and "
                         f"{[b.shape[i] for i in db]}")
    fa = [i for i in range(a.ndim) if i not in da]
    fb = [i for i in range(b.ndim) if i not in db]
    k = math.prod(a.shape[i] for i in da)
    left = a.permute(*fa, *da).reshape(math.prod(a.shape[i] for i in fa), k)
    right = b.permute(*db, *fb).reshape(k, math.prod(b.shape[i] for i in fb))
    return (left @ right).reshape(*[a.shape[i] for i in fa], *[b.shape[i] for i in fb])


def inner(a: Tensor, b: Tensor) -> Tensor:
    """Sum over the last dimension of both (a scalar times a tensor for 0-d inputs)."""
    if a.ndim == 0 or b.ndim == 0:
        return a * b
    return tensordot(a, b, ([-1], [-1]))


def kron(a: Tensor, b: Tensor) -> Tensor:
    """Kronecker product."""
    n = max(a.ndim, b.ndim)
    a = a.reshape((1,) * (n - a.ndim) + tuple(a.shape))
    b = b.reshape((1,) * (n - b.ndim) + tuple(b.shape))
    ai = [v for s in a.shape for v in (s, 1)]
    bi = [v for s in b.shape for v in (1, s)]
    return (a.reshape(ai) * b.reshape(bi)).reshape([x * y for x, y in zip(a.shape, b.shape)])


def einsum(equation: str, *operands: Any) -> Tensor:
    """Einstein summation, with ``...`` and implicit output; written as broadcast products and sums."""
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    check_rule("einsum", *operands)
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    inputs = lhs.split(",")
    if len(inputs) != len(operands):
        raise ShapeError(f"einsum: {len(inputs)} operand specs in {equation!r} but {len(operands)} operands")
    used = set(eq) - set(",.->")
    spare = iter(c for c in _LETTERS if c not in used)
    ell = ""
    specs = []
    for spec, t in zip(inputs, operands):
        if "..." in spec:
            n = t.ndim - (len(spec) - 3)
            if not ell or len(ell) < n:
                ell = ell + "".join(next(spare) for _ in range(n - len(ell)))
            spec = spec.replace("...", ell[len(ell) - n:] if n else "")
        if len(spec) != t.ndim:
            raise ShapeError(f"einsum: subscripts {spec!r} for an operand of shape {list(t.shape)}")
        specs.append(spec)
    if arrow:
        out = rhs.replace("...", ell)
    else:
        counts: dict[str, int] = {}
        for s in specs:
            for c in s:
                counts[c] = counts.get(c, 0) + 1
        out = ell + "".join(sorted(c for c, k in counts.items() if k == 1 and c not in ell))
    letters = list(dict.fromkeys(out + "".join(specs)))
    aligned = []
    for spec, t in zip(specs, operands):
        for c in set(spec):  # a repeated letter takes the diagonal
            while spec.count(c) > 1:
                i = spec.index(c)
                j = spec.index(c, i + 1)
                t = t.diagonal(0, i, j)
                spec = spec[:i] + spec[i + 1:j] + spec[j + 1:] + c
        order = sorted(range(len(spec)), key=lambda k: letters.index(spec[k]))
        t = t.permute(*order) if order else t
        present = [spec[k] for k in order]
        shape = [t.shape[present.index(c)] if c in present else 1 for c in letters]
        aligned.append(t.reshape(shape))
    prod = aligned[0]
    for t in aligned[1:]:
        prod = prod * t
    summed = tuple(i for i, c in enumerate(letters) if c not in out)
    if summed:
        prod = prod.sum(summed)
    return prod.reshape([prod.shape[i] for i in range(len(out))]) if out else prod.reshape(())


_ROWS: list[tuple[str, Callable[..., Any]]] = [
    ("outer", outer), ("inner", inner),
    ("tensordot", tensordot), ("kron", kron),
]
#: Sums of products, refused for bool as PyTorch's (and matmul) do: written in mul and sum, a bool input
#: would count the true products as int64 instead.
_SUMS_OF_PRODUCTS: list[tuple[str, Callable[..., Any]]] = [("vdot", vdot), ("einsum", einsum)]


FUNCTIONS = {**register_composites("linalg", _ROWS),
             **register_composites("linalg", _SUMS_OF_PRODUCTS, dtype_rule="numeric")}
#: Ops that are also Tensor methods, as in PyTorch.
METHODS = ["outer", "inner", "vdot", "kron"]
