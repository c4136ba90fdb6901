"""Movement kernels: views as metadata (reshape, view, permute, expand, basic getitem), copies, cat, stack.

A view is a new :class:`CLArray` over the same buffer with other shape,
strides and offset: nothing is enqueued. ``reshape`` copies only when no
strides can express the new shape (NumPy's rule); ``view`` then refuses.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ._array import CLArray, contiguous_strides
from ._elementwise import commit_into, copy_contiguous, copy_into

__all__ = ["movement_kernels", "view_strides", "basic_index"]


def view_strides(x: CLArray, shape: tuple[int, ...]) -> tuple[int, ...] | None:
    """Strides that show ``x``'s elements in ``shape`` without a copy, or None (NumPy's no-copy reshape)."""
    if x.contiguous:
        return contiguous_strides(shape)
    old = [(n, s) for n, s in zip(x.shape, x.strides) if n != 1]
    new = list(shape)
    if x.size == 0:
        return contiguous_strides(shape)
    out = [0] * len(new)
    oi = ni = 0
    while oi < len(old) and ni < len(new):
        if new[ni] == 1:
            out[ni] = 1
            ni += 1
            continue
        # group old dims [oi, oj) and new dims [ni, nj) with equal products
        oj, nj = oi + 1, ni + 1
        op, np_ = old[oi][0], new[ni]
        while op != np_:
            if op < np_:
                op *= old[oj][0]
                oj += 1
            else:
                np_ *= new[nj]
                nj += 1
        for k in range(oi, oj - 1):  # the old group must be contiguous in itself
            if old[k][1] != old[k + 1][1] * old[k + 1][0]:
                return None
        st = old[oj - 1][1]
        for k in range(nj - 1, ni - 1, -1):
            out[k] = st
            st *= new[k]
        oi, ni = oj, nj
    for k in range(ni, len(new)):
        out[k] = 1
    return tuple(out)


def basic_index(x: CLArray, key: Sequence[Any]) -> CLArray:
    """``x[key]`` for a key of ints, slices, None, Ellipsis and bools: a view."""
    n_real = sum(1 for k in key if k is not None and k is not Ellipsis and type(k) is not bool)
    if n_real > x.ndim:
        raise IndexError(f"too many indices for a tensor of dimension {x.ndim}")
    if Ellipsis in key:
        i = key.index(Ellipsis)
        key = (*key[:i], *([slice(None)] * (x.ndim - n_real)), *(k for k in key[i + 1:] if k is not Ellipsis))
    else:
        key = (*key, *([slice(None)] * (x.ndim - n_real)))
    shape: list[int] = []
    strides: list[int] = []
    offset = x.offset
    d = 0
    for k in key:
        if k is None or k is True:
            shape.append(1)
            strides.append(0)
        elif k is False:
            shape.append(0)
            strides.append(0)
        elif type(k) is slice:
            start, stop, step = k.indices(x.shape[d])
            n = len(range(start, stop, step))
            shape.append(n)
            strides.append(x.strides[d] * step)
            if n:
                offset += start * x.strides[d]
            d += 1
        else:
            n = x.shape[d]
            i = k + n if k < 0 else k
            if not 0 <= i < n:
                raise IndexError(f"index {k} is out of bounds for dimension {d} with size {n}")
            offset += i * x.strides[d]
            d += 1
    return x.view(tuple(shape), tuple(strides), offset)


def _resolve(x: CLArray, shape: Sequence[int]) -> tuple[int, ...]:
    """``shape`` with a -1 replaced by what makes the sizes agree."""
    shape = tuple(shape)
    if -1 in shape:
        known = 1
        for n in shape:
            if n != -1:
                known *= n
        shape = tuple(x.size // known if n == -1 and known else (0 if n == -1 else n) for n in shape)
    n = 1
    for m in shape:
        n *= m
    if n != x.size:
        raise ValueError(f"shape {list(shape)} is invalid for input of size {x.size}")
    return shape


def movement_kernels() -> dict[str, Callable[..., Any]]:
    """reshape, view, permute, expand, contiguous, clone, copy_, cast, cat, stack."""

    def reshape(x: CLArray, shape: tuple[int, ...]) -> CLArray:
        shape = _resolve(x, shape)
        st = view_strides(x, shape)
        if st is None:
            return copy_contiguous(x).view(shape)
        return x.view(shape, st)

    def view(x: CLArray, shape: tuple[int, ...]) -> CLArray:
        shape = _resolve(x, shape)
        st = view_strides(x, shape)
        if st is None:
            raise ValueError(f"no view of shape {list(shape)} over strides {list(x.strides)}")
        return x.view(shape, st)

    def permute(x: CLArray, dims: Sequence[int]) -> CLArray:
        return x.view(tuple(x.shape[d] for d in dims), tuple(x.strides[d] for d in dims))

    def diagonal(x: CLArray, offset: int, d1: int, d2: int) -> CLArray:
        """The ``offset`` diagonal of dims ``d1``, ``d2`` as the last dimension: a view (one stride for both)."""
        k = max(0, min(x.shape[d1] + min(offset, 0), x.shape[d2] - max(offset, 0)))
        start = x.offset + (offset * x.strides[d2] if offset >= 0 else -offset * x.strides[d1]) if k else x.offset
        keep = [i for i in range(x.ndim) if i not in (d1, d2)]
        return x.view((*(x.shape[i] for i in keep), k),
                      (*(x.strides[i] for i in keep), x.strides[d1] + x.strides[d2]), start)

    def expand(x: CLArray, shape: tuple[int, ...]) -> CLArray:
        pad = len(shape) - x.ndim
        strides = [0] * pad
        for n, (m, s) in zip(shape[pad:], zip(x.shape, x.strides)):
            if m == n:
                strides.append(s)
            elif m == 1:
                strides.append(0)
            else:
                raise ValueError(f"cannot expand shape {list(x.shape)} to {list(shape)}")
        return x.view(tuple(shape), tuple(strides))

    def contiguous(x: CLArray) -> CLArray:
        return x if x.contiguous else copy_contiguous(x)

    def cast(x: CLArray, dtype: Any) -> CLArray:
        out = x.rt.empty(x.shape, x.rt.np_dtype(dtype))
        copy_into(out, x)
        return out

    def cat(xs: Sequence[CLArray], dim: int) -> CLArray:
        first = xs[0]
        dim = dim % first.ndim if first.ndim else 0
        shape = list(first.shape)
        shape[dim] = sum(x.shape[dim] for x in xs)
        for x in xs:
            if x.ndim != first.ndim or any(a != b for i, (a, b) in enumerate(zip(x.shape, first.shape)) if i != dim):
                raise ValueError(f"cat: shapes {[list(t.shape) for t in xs]} differ outside dimension {dim}")
        out = first.rt.empty(tuple(shape), first.dtype)
        at = 0
        for x in xs:
            n = x.shape[dim]
            if n:
                key = (slice(None),) * dim + (slice(at, at + n),)
                copy_into(basic_index(out, key), x)
            at += n
        return out

    def stack(xs: Sequence[CLArray], dim: int) -> CLArray:
        nd = xs[0].ndim + 1
        dim = dim % nd
        for x in xs:
            if x.shape != xs[0].shape:
                raise ValueError(f"stack expects each tensor to be equal size, got {[list(t.shape) for t in xs]}")
        return cat([basic_index(x, (slice(None),) * dim + (None,)) for x in xs], dim)

    def as_strided(base: CLArray, size: tuple[int, ...], stride: tuple[int, ...], offset: int) -> CLArray:
        # a view of base's buffer; the caller (ferro's as_strided) checked that it stays inside base
        return base.view(tuple(size), tuple(stride), base.offset + offset)

    def storage_layout(base: CLArray, x: CLArray) -> tuple[tuple[int, ...], int]:
        return tuple(x.strides), x.offset - base.offset

    return {"reshape": reshape, "view": view, "permute": permute, "expand": expand, "diagonal": diagonal,
            "contiguous": contiguous, "clone": copy_contiguous, "copy_": commit_into, "cast": cast, "cat": cat,
            "stack": stack, "as_strided": as_strided, "storage_layout": storage_layout}
