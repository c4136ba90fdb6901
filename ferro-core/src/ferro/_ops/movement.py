"""Shape and movement ops written in primitives (getitem, cat, reshape, permute, where).

Every backend that has the primitives runs them, and gradients come from the
primitives' formulas. Each function is registered as a composite op.
"""

from __future__ import annotations

import builtins
import itertools
from collections.abc import Callable, Sequence
from typing import Any

from .._core.records import REGISTRY, register_composites
from .._core.tensor import Tensor, _wrap_dim
from ..autograd._views import as_copied_view
from ..dispatch._dispatch import finish
from ..errors import ShapeError
from .shape import cat, permute, reshape

__all__ = ["FUNCTIONS", "METHODS"]


def _index(dim: int, ndim: int, key: Any) -> tuple[Any, ...]:
    return (slice(None),) * dim + (key,) + (slice(None),) * (ndim - dim - 1)


def narrow(x: Tensor, dim: int, start: int, length: int) -> Tensor:
    """A view of ``length`` elements of ``dim`` from ``start``."""
    d = _wrap_dim(dim, x.ndim, "narrow")
    n = x.shape[d]
    if start < 0:
        start += n
    if not (0 <= start <= n and 0 <= length <= n - start):
        raise ShapeError(f"narrow: start ({start}) + length ({length}) exceeds dimension {d} of size {n}")
    return x[_index(d, x.ndim, slice(start, start + length))]


def select(x: Tensor, dim: int, index: int) -> Tensor:
    """The slice at ``index`` of ``dim``, without that dimension."""
    return x[_index(_wrap_dim(dim, x.ndim, "select"), x.ndim, index)]


def unbind(x: Tensor, dim: int = 0) -> tuple[Tensor, ...]:
    """All slices along ``dim``."""
    d = _wrap_dim(dim, x.ndim, "unbind")
    return tuple(select(x, d, i) for i in range(x.shape[d]))


def split(x: Tensor, split_size_or_sections: int | Sequence[int], dim: int = 0) -> tuple[Tensor, ...]:
    """Pieces of ``split_size`` along ``dim`` (the last may be smaller), or of the given sizes."""
    d = _wrap_dim(dim, x.ndim, "split")
    n = x.shape[d]
    if isinstance(split_size_or_sections, int):
        step = split_size_or_sections
        if step <= 0:
            raise ValueError(f"split: split_size must be positive, got {step}")
        sizes = [builtins.min(step, n - s) for s in range(0, n, step)] or [0]
    else:
        sizes = list(split_size_or_sections)
        if builtins.sum(sizes) != n:
            raise ShapeError(f"split: sizes {sizes} do not add up to dimension {d} of size {n}")
    out, start = [], 0
    for s in sizes:
        out.append(narrow(x, d, start, s))
        start += s
    return tuple(out)


def chunk(x: Tensor, chunks: int, dim: int = 0) -> tuple[Tensor, ...]:
    """At most ``chunks`` pieces of equal size (the last may be smaller) along ``dim``."""
    if chunks <= 0:
        raise ValueError(f"chunk: chunks must be positive, got {chunks}")
    n = x.shape[_wrap_dim(dim, x.ndim, "chunk")]
    return split(x, builtins.max(1, -(-n // chunks)), dim)


def tensor_split(x: Tensor, indices_or_sections: int | Sequence[int], dim: int = 0) -> tuple[Tensor, ...]:
    """``sections`` nearly equal pieces (the first ones one larger), or pieces between ``indices``."""
    d = _wrap_dim(dim, x.ndim, "tensor_split")
    n = x.shape[d]
    if isinstance(indices_or_sections, int):
        k = indices_or_sections
        q, r = divmod(n, k)
        bounds = [0]
        for i in range(k):
            bounds.append(bounds[-1] + q + (1 if i < r else 0))
    else:
        bounds = [0, *(builtins.min(builtins.max(i, 0), n) for i in indices_or_sections), n]
    return tuple(x[_index(d, x.ndim, slice(a, builtins.max(a, b)))] for a, b in itertools.pairwise(bounds))


def unflatten(x: Tensor, dim: int, sizes: Sequence[int]) -> Tensor:
    """Split dimension ``dim`` into ``sizes``."""
    d = _wrap_dim(dim, x.ndim, "unflatten")
    return reshape(x, *x.shape[:d], *sizes, *x.shape[d + 1:])


def movedim(x: Tensor, source: int | Sequence[int], destination: int | Sequence[int]) -> Tensor:
    """Move dimensions ``source`` to positions ``destination``, keeping the others in order."""
    src = [source] if isinstance(source, int) else list(source)
    dst = [destination] if isinstance(destination, int) else list(destination)
    if len(src) != len(dst):
        raise ShapeError(f"movedim: source {src} and destination {dst} differ in length")
    n = x.ndim
    src = [_wrap_dim(s, n, "movedim") for s in src]
    dst = [_wrap_dim(s, n, "movedim") for s in dst]
    order: list[int | None] = [None] * n
    for s, t in zip(src, dst):
        order[t] = s
    rest = iter(i for i in range(n) if i not in src)
    return permute(x, *[o if o is not None else next(rest) for o in order])


moveaxis = movedim


def flip(x: Tensor, *args: int | Sequence[int], dims: int | Sequence[int] | None = None) -> Tensor:
    """Reverse the order of elements along ``dims``: a tuple (``flip(x, (0, 2))``, ``dims=``) or each dim as
    its own argument (``x.flip(0, 2)``), as PyTorch's function and method take them."""
    if (dims is None) == (not args):
        raise TypeError("flip() takes the dims either as arguments or as dims=, exactly once")
    if dims is not None:
        args = (dims,)
    dims = tuple(args[0]) if len(args) == 1 and isinstance(args[0], (tuple, list)) else args
    ds = {_wrap_dim(d, x.ndim, "flip") for d in dims}
    if len(ds) != len(dims):
        raise ShapeError(f"flip: dims {list(dims)} has a dim more than once")
    return x[tuple(slice(None, None, -1) if i in ds else slice(None) for i in range(x.ndim))]


def roll(x: Tensor, shifts: int | Sequence[int], dims: int | Sequence[int] | None = None) -> Tensor:
    """Shift elements cyclically by ``shifts`` along ``dims`` (the flattened tensor when None)."""
    if dims is None:
        return roll(x.reshape(-1), shifts, 0).reshape(x.shape)
    sh = [shifts] if isinstance(shifts, int) else list(shifts)
    ds = list(dims) if isinstance(dims, (tuple, list)) else [dims]
    if len(sh) != len(ds):
        raise ShapeError(f"roll: shifts {sh} and dims {ds} differ in length")
    out = x
    for s, d in zip(sh, ds):
        d = _wrap_dim(d, x.ndim, "roll")
        n = x.shape[d]
        if n == 0:
            continue
        s %= n
        if s:
            out = cat([narrow(out, d, n - s, s), narrow(out, d, 0, n - s)], d)
    return out


def repeat(x: Tensor, *sizes: Any) -> Tensor:
    """Tile ``x``: ``sizes[i]`` copies along dimension i (leading sizes add dimensions)."""
    reps = tuple(sizes[0]) if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)) else tuple(sizes)
    if len(reps) < x.ndim:
        raise ShapeError(f"repeat: number of repeat dims ({len(reps)}) can not be smaller than the number of "
                         f"dimensions of the tensor ({x.ndim})")
    shape = (1,) * (len(reps) - x.ndim) + tuple(x.shape)
    # Insert a size-r axis before each dimension, expand it, and merge: no data copy until reshape.
    inter = []
    for s in shape:
        inter += [1, s]
    y = x.reshape(inter).expand(*[v for r, s in zip(reps, shape) for v in (r, s)])
    return y.reshape([r * s for r, s in zip(reps, shape)])


def tile(x: Tensor, dims: Sequence[int]) -> Tensor:
    """``repeat`` with missing leading sizes taken as 1."""
    if isinstance(dims, int):
        dims = (dims,)
    if isinstance(dims, (str, bytes)) or not all(isinstance(d, int) for d in dims):
        raise TypeError(f"tile(): argument 'dims' must be a sequence of ints, got {dims!r}")
    dims = tuple(dims)
    return repeat(x, (1,) * (x.ndim - len(dims)) + dims)


def repeat_interleave(x: Tensor, repeats: int | Tensor, dim: int | None = None) -> Tensor:
    """Repeat each element ``repeats`` times along ``dim`` (the flattened tensor when None)."""
    if dim is None:
        x, dim = x.reshape(-1), 0
    d = _wrap_dim(dim, x.ndim, "repeat_interleave")
    counts = [repeats] if isinstance(repeats, int) else repeats.tolist() if isinstance(repeats, Tensor) else repeats
    if any(c < 0 for c in (counts if isinstance(counts, list) else [counts])):
        raise ValueError(f"repeat_interleave: repeats must be non-negative, got {counts}")
    if isinstance(repeats, int):
        y = x.unsqueeze(d + 1)
        shape = list(y.shape)
        shape[d + 1] = repeats
        y = y.expand(*shape)
        new = list(x.shape)
        new[d] *= repeats
        return y.reshape(new)
    from .._creation import tensor
    counts = list(counts)
    if len(counts) == 1 and x.shape[d] != 1:  # one count for every element, as in PyTorch
        counts = counts * x.shape[d]
    if len(counts) != x.shape[d]:
        raise ShapeError(f"repeat_interleave: {len(counts)} repeats for dimension {d} of size {x.shape[d]}")
    idx = [i for i, c in enumerate(counts) for _ in range(c)]
    return x[_index(d, x.ndim, tensor(idx, device=x.device))]


def _band(x: Tensor, diagonal: int, upper: bool) -> Tensor:
    from .._creation import arange
    from .elementwise import where
    if x.ndim < 2:
        raise ShapeError(f"{'triu' if upper else 'tril'}: expected at least 2 dimensions, got {list(x.shape)}")
    rows = arange(x.shape[-2], device=x.device).reshape(-1, 1)
    cols = arange(x.shape[-1], device=x.device).reshape(1, -1)
    keep = (cols - rows >= diagonal) if upper else (cols - rows <= diagonal)
    return where(keep, x, False if x.dtype.kind == "b" else 0)  # a zero of x's own dtype


def tril(x: Tensor, diagonal: int = 0) -> Tensor:
    """The lower triangle (at and below ``diagonal``) of the last two dimensions; zeros elsewhere."""
    return _band(x, diagonal, False)


def triu(x: Tensor, diagonal: int = 0) -> Tensor:
    """The upper triangle (at and above ``diagonal``) of the last two dimensions; zeros elsewhere."""
    return _band(x, diagonal, True)


def _diag_index(n_rows: int, n_cols: int, offset: int) -> tuple[list[int], list[int]]:
    rows = [i for i in range(n_rows) if 0 <= i + offset < n_cols]
    return rows, [i + offset for i in rows]


def diagonal(x: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    """The diagonal of dims ``dim1``, ``dim2`` (moved to the last dimension): a view, as in PyTorch, where
    the backend has the ``diagonal`` view kernel (writes to it change ``x``), else a copy."""
    d1, d2 = _wrap_dim(dim1, x.ndim, "diagonal"), _wrap_dim(dim2, x.ndim, "diagonal")
    if d1 == d2:
        raise ShapeError(f"diagonal: dim1 and dim2 cannot be the same ({d1})")
    dev = x._device
    if dev._kernels is None:
        dev.backend  # binds the device  # noqa: B018
    k = dev._kernels.get("diagonal")
    attrs = {"offset": offset, "dim1": d1, "dim2": d2, "in_shape": tuple(x.shape)}
    if k is None:  # a copy, which core keeps in step with x as a view (autograd._copies)
        return as_copied_view(_diagonal_copy(x, offset, d1, d2), x, "diagonal", attrs)
    return finish(_DIAGONAL, k(x._data, offset, d1, d2), x._dtype, dev, (x,), attrs=attrs, view_of=x)


def _diagonal_copy(x: Tensor, offset: int, d1: int, d2: int) -> Tensor:
    """``diagonal`` by advanced indexing (a copy), for backends without the view kernel."""
    from .._creation import tensor
    y = movedim(x, (d1, d2), (-2, -1))
    r, c = _diag_index(y.shape[-2], y.shape[-1], offset)
    if not r:
        return reshape(y[..., :0, 0], *y.shape[:-2], 0)
    return y[..., tensor(r, device=x.device), tensor(c, device=x.device)]


def _diagonal_grad(g: Tensor, *, offset: int, dim1: int, dim2: int, in_shape: tuple[int, ...]) -> Tensor:
    """Zeros of the input's shape with ``g`` on the diagonal (in ops, so it differentiates again)."""
    from .._creation import tensor, zeros
    z = movedim(zeros(in_shape, dtype=g.dtype, device=g.device), (dim1, dim2), (-2, -1))
    r, c = _diag_index(z.shape[-2], z.shape[-1], offset)
    if r:
        z = z.index_put((Ellipsis, tensor(r, device=g.device), tensor(c, device=g.device)), g)
    return movedim(z, (-2, -1), (dim1, dim2))


def diag_embed(x: Tensor, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    """Matrices with ``x``'s last dimension on their ``offset`` diagonal."""
    from .._creation import tensor, zeros
    n = x.shape[-1] + builtins.abs(offset)
    out = zeros(*x.shape[:-1], n, n, dtype=x.dtype, device=x.device)
    r, c = _diag_index(n, n, offset)
    out = out.index_put((Ellipsis, tensor(r, device=x.device), tensor(c, device=x.device)), x)
    nd = out.ndim
    d1, d2 = _wrap_dim(dim1, nd, "diag_embed"), _wrap_dim(dim2, nd, "diag_embed")
    if d1 == d2:
        raise ValueError(f"diag_embed: dim1 and dim2 must be different dimensions, got {dim1} and {dim2}")
    return movedim(out, (-2, -1), (d1, d2))


def diag(x: Tensor, diagonal: int = 0) -> Tensor:
    """A 1-D tensor's diagonal matrix, or a 2-D tensor's diagonal."""
    if x.ndim == 1:
        return diag_embed(x, diagonal)
    if x.ndim == 2:
        return globals()["diagonal"](x, diagonal).clone()  # a copy, as in PyTorch (diagonal is the view)
    raise ShapeError(f"diag: expected a 1-D or 2-D tensor, got shape {list(x.shape)}")


def pad(x: Tensor, pad: Sequence[int], mode: str = "constant", value: float = 0.0) -> Tensor:
    """Pad the last ``len(pad) // 2`` dimensions: ``pad = (left_last, right_last, left_prev, ...)``.

    Modes: ``constant`` (negative sizes crop), ``reflect``, ``replicate``, ``circular``.
    """
    from .._creation import full, tensor
    if len(pad) % 2:
        raise ValueError(f"pad: the padding length must be even, got {len(pad)}")
    if len(pad) // 2 > x.ndim:
        raise ShapeError(f"pad: padding {list(pad)} covers more dimensions than the tensor has ({x.ndim})")
    out = x
    for i in range(len(pad) // 2):
        d = x.ndim - 1 - i
        left, right = pad[2 * i], pad[2 * i + 1]
        n = out.shape[d]
        if mode == "constant":
            if left < 0:
                out, n, left = narrow(out, d, -left, n + left), n + left, 0
            if right < 0:
                out, n, right = narrow(out, d, 0, n + right), n + right, 0
            parts = []
            for size in (left, None, right):
                if size is None:
                    parts.append(out)
                elif size:
                    shape = list(out.shape)
                    shape[d] = size
                    parts.append(full(shape, value, dtype=out.dtype, device=out.device))
            out = cat(parts, d) if len(parts) > 1 else out
            continue
        if mode == "reflect":
            if left >= n or right >= n:
                raise ShapeError(f"pad: reflect padding ({left}, {right}) must be smaller than dimension {d} "
                                 f"of size {n}")
            idx = [left - j for j in range(left)] + list(range(n)) + [n - 2 - j for j in range(right)]
        elif mode == "replicate":
            idx = [0] * left + list(range(n)) + [n - 1] * right
        elif mode == "circular":
            if left > n or right > n:
                raise ShapeError(f"pad: circular padding ({left}, {right}) larger than dimension {d} of size {n}")
            idx = [(j - left) % n for j in range(left + n + right)]
        else:
            raise ValueError(f"pad: mode must be constant, reflect, replicate or circular, got {mode!r}")
        out = out[_index(d, out.ndim, tensor(idx, device=x.device))]
    return out


_ROWS: list[tuple[str, Callable[..., Any]]] = [
    ("narrow", narrow),
    ("select", select),
    ("unbind", unbind),
    ("split", split),
    ("chunk", chunk),
    ("tensor_split", tensor_split),
    ("unflatten", unflatten),
    ("movedim", movedim),
    ("flip", flip),
    ("roll", roll),
    ("repeat", repeat),
    ("tile", tile),
    ("repeat_interleave", repeat_interleave),
    ("tril", tril),
    ("triu", triu),
    ("diagonal", diagonal, ("permute", "getitem")),  # where no diagonal kernel (cpu, which derives, has one)
    ("diag_embed", diag_embed),
    ("diag", diag),
    ("pad", pad, ("cat",)),  # reflect, replicate, circular (the samples pad with a constant)
]


FUNCTIONS = {**register_composites("composite", _ROWS), "moveaxis": moveaxis}
_DIAGONAL = REGISTRY["diagonal"]
_DIAGONAL.grads = (_diagonal_grad,)  # of the view kernel's result (the copy's gradient comes from its ops)
METHODS = [n for n in FUNCTIONS if n != "pad"]
