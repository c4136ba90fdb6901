"""Shape and movement ops: reshape, view, permute, expand, squeeze, cat, stack..."""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Sequence
from typing import Any

from .._core import grad_mode as _mode
from .._core.dtypes import int64, result_type
from .._core.modes import ARMED, entry, numpy_keywords
from .._core.naming import RENAMED, in_op, not_a_tensor
from .._core.records import OpDef, register
from .._core.tensor import Size, Tensor, _dim_int, _new, _wrap, _wrap_dim
from .._creation import arange, full, zeros
from ..autograd._copies import contiguous_layout, layout, view_possible
from ..dispatch._dispatch import check_devices, finish, kernel, kernel_for, record_n, run_elsewhere, view_result
from ..errors import ShapeError

__all__ = ["as_strided", "stride", "storage_offset", "reshape", "view", "permute", "transpose", "expand",
           "squeeze", "unsqueeze", "flatten", "cat", "stack", "contiguous", "clone", "sum_to", "expand_as", "t"]


def _shape_arg(shape: tuple[Any, ...], op: str, arg: str = "shape") -> tuple[int, ...]:
    """Ints given as arguments or as one sequence; 2.5 or "a" is a TypeError naming ``op`` (int() would
    truncate 2.5 silently)."""
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    try:
        return tuple(map(operator.index, shape))
    except TypeError:
        raise TypeError(f"{op}(): argument '{arg}' must be a tuple of ints, got {list(shape)!r:.80}") from None


def _infer(op: str, numel: int, in_shape: tuple[int, ...], shape: tuple[int, ...]) -> tuple[int, ...]:
    if shape.count(-1) > 1:
        raise ShapeError(f"{op}: only one dimension can be inferred (-1), got shape {list(shape)}")
    known = 1
    for s in shape:
        if s != -1:
            if s < 0:
                raise ShapeError(f"{op}: invalid shape dimension {s} in {list(shape)}")
            known *= s
    if -1 in shape:
        if known == 0 or numel % known:
            raise ShapeError(f"{op}: shape {list(shape)} is invalid for input of size {numel} (shape {list(in_shape)})")
        shape = tuple(numel // known if s == -1 else s for s in shape)
    elif known != numel:
        raise ShapeError(f"{op}: shape {list(shape)} is invalid for input of size {numel} (shape {list(in_shape)})")
    return shape


_RESHAPE = register(OpDef("reshape", "shape", "The same elements in a new shape (a view when possible).",
                          grads=(lambda g, *, in_shape: g.reshape(in_shape),)))
_VIEW = register(OpDef("view", "shape", "A view with a new shape; fails when the strides do not allow one.",
                       grads=(lambda g, *, in_shape: g.reshape(in_shape),)))


def _remember(cache: dict[Any, Any], key: Any, value: Any, bound: int = 4096) -> Any:
    """``cache[key] = value`` (a cache of checked arguments, by their spelling), bounded."""
    if len(cache) >= bound:  # programs use a handful of spellings; a generated stream of them must not pile up
        cache.clear()
    cache[key] = value
    return value


def _remember_in(cache: dict[Any, dict[Any, Any]], outer: Any, key: Any, value: Any) -> Any:
    """``cache[outer][key] = value`` (a two-level cache: a lookup builds no key tuple), bounded: 256 outer keys
    (input shapes) of 32 spellings each, 8192 entries at most (a generated stream of them must not pile up)."""
    inner = cache.get(outer)
    if inner is None:
        inner = _remember(cache, outer, {}, 256)
    return _remember(inner, key, value, 32)


#: Checked target shapes and the node's attrs (one dict, never changed, shared by the views made so) by input
#: shape, then by the shape as given in ints. A lookup's hit is used only where the ints are ints: 16.0 and True
#: hash and compare equal to 16 and 1, and are refused (or taken) by the checks of :func:`_target` alone.
_SHAPES: dict[tuple[int, ...], dict[tuple[Any, ...], tuple[tuple[int, ...], dict[str, Any]]]] = {}
_NONE: dict[Any, Any] = {}  # (an empty inner cache for a lookup's miss, never written)


def _target(op: OpDef, in_shape: tuple[int, ...], shape: tuple[Any, ...]) -> tuple[tuple[int, ...], dict[str, Any]]:
    """The shape ``shape`` (ints, one may be -1) asks for, for an input of shape ``in_shape``, and the attrs of
    the result's node; or its error."""
    new = (_infer(op.name, math.prod(in_shape), in_shape, _shape_arg(shape, op.name)), {"in_shape": in_shape})
    flat = shape[0] if len(shape) == 1 and type(shape[0]) is tuple else shape
    if all(type(s) is int for s in flat):  # plain ints: the same spelling gives the same answer
        _remember_in(_SHAPES, in_shape, shape, new)
    return new



def _int_args(args: tuple[Any, ...]) -> bool:
    """Whether ``args`` (sizes or dims, or one tuple of them) are Python ints only: a cache keyed on them also
    finds an equal float's entry (``16.0 == 16``), which PyTorch refuses."""
    if len(args) == 1 and type(args[0]) is tuple:
        args = args[0]
    for a in args:
        if type(a) is not int:
            return False
    return True

def _reshaper(op: OpDef, doc: str) -> Callable[..., Tensor]:
    """The public function of ``reshape`` or ``view`` (``op``): one function each, no shared frame below it.

    A spelling of the shape met before (ints only), on a device without layers active, that NumPy can view so,
    runs here without the dispatch entry's frame; anything else (a new spelling, a layer, a copy, an error)
    takes ``slow``: the entry of the checked function below, which raises the named errors."""
    name = op.name

    def fn(x: Tensor, *shape: Any) -> Tensor:
        try:
            data = x._data
            new, attrs = _SHAPES[data.shape][shape]
            for s in shape:
                if type(s) is not int and not (type(s) is tuple and _int_args(shape)):  # 16.0 finds 16's entry
                    raise KeyError
            dev = x._device
            k, table = dev._fast[name]
            if x._dtype not in table or dev._copies:
                raise KeyError
            data = (dev._kernels["view"] if op is _RESHAPE else k)(data, new)
        except (AttributeError, KeyError, TypeError, ValueError):  # no view, or any doubt: the checked path
            return slow(x, *shape)
        return view_result(op, data, x, attrs)

    def checked(x: Tensor, *shape: Any) -> Tensor:
        try:
            in_shape = x._data.shape
        except AttributeError:
            raise not_a_tensor(op.name, "input", x) from None
        try:
            hit = _SHAPES.get(in_shape, _NONE).get(shape)
        except TypeError:  # a list (unhashable): checked by _target
            hit = None
        if hit is not None and not _int_args(shape):  # 16.0 finds the entry of 16
            hit = None
        new, attrs = _target(op, in_shape, shape) if hit is None else hit
        dev = x._device
        try:  # kernel_for's lookup, inlined (a frame is a tenth of this op)
            k, table = dev._fast[op.name]
            if x._dtype not in table:
                raise KeyError
        except (KeyError, TypeError):
            k = kernel_for(op, dev, x._dtype)
            if k is None:
                return run_elsewhere(op, dev, x._dtype, (x, *new), {})
        view_of: Tensor | None = x
        data = None
        if dev._copies and (strides := layout(x)) is not None and not view_possible(in_shape, strides, new):
            # x is a copy standing for a view: where PyTorch could not view it so, reshape copies and view fails
            if op is _VIEW:
                raise ShapeError(f"view: shape {list(new)} is not compatible with the input's size and strides "
                                 f"(shape {list(in_shape)}, strides {list(strides)}); use .reshape(...) instead")
            return finish(op, dev._kernels["clone"](k(x._data, new)), x._dtype, dev, (x,), attrs=attrs)
        if op is _RESHAPE and (as_view := dev._kernels.get("view")) is not None:
            # reshape is a view when the strides allow one, else a copy that is not a view (writes to it
            # must not be taken as writes to x, by the version counter or by autograd).
            try:
                data = as_view(x._data, new)
            except (ValueError, AttributeError):
                view_of = None
        try:
            if data is None:
                data = k(x._data, new)
        except (ValueError, AttributeError):
            raise ShapeError(f"view: shape {list(new)} is not compatible with the input's size and strides "
                             f"(shape {list(in_shape)}, strides {list(x.stride())}): a dimension would span memory "
                             "that is not contiguous; use .reshape(...) instead") from None
        if view_of is None:
            return finish(op, data, x._dtype, dev, (x,), attrs=attrs)
        return view_result(op, data, x, attrs)

    checked.__name__ = checked.__qualname__ = fn.__name__ = fn.__qualname__ = name
    checked.__doc__ = fn.__doc__ = doc
    slow = entry(op, checked)
    fn.__dispatches__ = True  # type: ignore[attr-defined]  # its slow path steps into the layers
    return fn


reshape = _reshaper(_RESHAPE, "``x`` with shape ``shape`` (one entry may be -1); a view when the strides allow.")
view = _reshaper(_VIEW, "A view of ``x`` with shape ``shape``; sharing storage, so writes go through.")


def _inverse(dims: tuple[int, ...]) -> tuple[int, ...]:
    inv = [0] * len(dims)
    for i, d in enumerate(dims):
        inv[d] = i
    return tuple(inv)


_PERMUTE = register(OpDef("permute", "shape", "A view with the dimensions reordered.",
                          grads=(lambda g, *, dims: g.permute(_inverse(dims)),)))


#: Validated permutations and the node's attrs (one dict, never changed) by ndim, then dims as given: the checks
#: run once per spelling (bounded: see _remember); a hit counts only for int dims (1.0 finds the entry of 1).
_PERMS: dict[int, dict[tuple[Any, ...], tuple[tuple[int, ...], dict[str, Any]]]] = {}


def permute(x: Tensor, *dims: Any) -> Tensor:
    """A view of ``x`` with its dimensions in the order ``dims``."""
    try:  # a spelling met before (ints only), no layer active: without the dispatch entry's frame
        data = x._data
        norm, attrs = _PERMS[len(data.shape)][dims]
        for d in dims:
            if type(d) is not int and not (type(d) is tuple and _int_args(dims)):  # 1.0 finds 1's entry
                raise KeyError
        k, table = x._device._fast["permute"]
        if x._dtype not in table:
            raise KeyError
        data = k(data, norm)
    except (AttributeError, KeyError, TypeError, ValueError):  # any doubt: the checked path
        return _permute_entry(x, *dims)
    return view_result(_PERMUTE, data, x, attrs)


permute.__dispatches__ = True  # type: ignore[attr-defined]  # its slow path steps into the layers


def _permute_checked(x: Tensor, *dims: Any) -> Tensor:
    """``permute`` with every check (its dispatch entry is :func:`permute`'s slow path)."""
    try:
        n = len(x._data.shape)
    except AttributeError:
        raise not_a_tensor("permute", "input", x) from None
    try:
        hit = _PERMS.get(n, _NONE).get(dims)
    except TypeError:  # a list among dims (unhashable): checked below
        hit = None
    if hit is not None and not _int_args(dims):  # 1.0 finds the entry of 1
        hit = None
    norm, attrs = _permutation(x, dims, n) if hit is None else hit
    dev = x._device
    try:  # _permuted, inlined (a frame is a tenth of this op)
        k, table = dev._fast["permute"]
        if x._dtype not in table:
            raise KeyError
    except (KeyError, TypeError):
        return _permuted(x, norm)
    return view_result(_PERMUTE, k(x._data, norm), x, attrs)


_permute_checked.__name__ = _permute_checked.__qualname__ = "permute"
_permute_entry = entry(_PERMUTE, _permute_checked)


def _permutation(x: Tensor, given: tuple[Any, ...], n: int) -> tuple[tuple[int, ...], dict[str, Any]]:
    """``given`` as a permutation of the ``n`` dims of ``x`` (non-negative) and the node's attrs, or the error."""
    dims = _shape_arg(given, "permute", "dims")
    norm = tuple([d if type(d) is int and 0 <= d < n else _wrap_dim(d, n, "permute") for d in dims])
    if len(norm) != n or sorted(norm) != list(range(n)):
        raise ShapeError(f"permute: dims {list(dims)} are not a permutation of the {n} dimensions of shape "
                         f"{list(x.shape)}")
    flat = given[0] if len(given) == 1 and type(given[0]) is tuple else given
    checked = (norm, {"dims": norm})
    if all(type(d) is int for d in flat):  # x.permute(1, 0) and x.permute((1, 0))
        _remember_in(_PERMS, n, given, checked)
    return checked


def _permuted(x: Tensor, dims: tuple[int, ...]) -> Tensor:
    """``x.permute(dims)`` for a valid permutation ``dims`` of non-negative dims."""
    dev = x._device
    try:  # kernel_for's lookup, inlined (a frame is a tenth of this op)
        k, table = dev._fast["permute"]
        if x._dtype not in table:
            raise KeyError
    except (KeyError, TypeError):
        k = kernel_for(_PERMUTE, dev, x._dtype)
        if k is None:
            return run_elsewhere(_PERMUTE, dev, x._dtype, (x, *dims), {})
    return view_result(_PERMUTE, k(x._data, dims), x, {"dims": dims})


#: ``transpose(dim0, dim1)`` as a permutation, by (ndim, dim0, dim1).
_SWAPS: dict[tuple[Any, ...], tuple[int, ...]] = {}


def transpose(x: Tensor, dim0: int, dim1: int) -> Tensor:
    """A view of ``x`` with dimensions ``dim0`` and ``dim1`` swapped."""
    n = x.ndim
    if n == 0:
        return x.view(())
    dims = _SWAPS.get((n, dim0, dim1)) if type(dim0) is int and type(dim1) is int else None
    if dims is None:
        d0, d1 = _wrap_dim(dim0, n, "transpose"), _wrap_dim(dim1, n, "transpose")
        swapped = list(range(n))
        swapped[d0], swapped[d1] = swapped[d1], swapped[d0]
        dims = tuple(swapped)
        if type(dim0) is int and type(dim1) is int:
            _remember(_SWAPS, (n, dim0, dim1), dims)
    return _permuted(x, dims)


swapaxes = swapdims = transpose

#: The permutations of ``x.T`` and ``x.mT`` by ndim.
_REVERSED: dict[int, tuple[int, ...]] = {}
_LAST_TWO: dict[int, tuple[int, ...]] = {}


def _t_property(x: Tensor) -> Tensor:
    """The tensor with its dimensions reversed."""
    n = len(x._data.shape)
    if ARMED[0]:
        return x.permute(*range(n - 1, -1, -1))
    dims = _REVERSED.get(n)
    if dims is None:
        dims = _REVERSED[n] = tuple(range(n - 1, -1, -1))
    try:  # permute without its entry (taken above while a layer is active), errors named as the entry does
        return _permuted(x, dims)
    except RENAMED as e:
        in_op("permute", e)
        raise


def _mt_property(x: Tensor) -> Tensor:
    """The tensor with its last two dimensions swapped (batched transpose)."""
    n = len(x._data.shape)
    if ARMED[0] or n < 2:
        return x.transpose(-2, -1)
    dims = _LAST_TWO.get(n)
    if dims is None:
        dims = _LAST_TWO[n] = (*range(n - 2), n - 1, n - 2)
    try:
        return _permuted(x, dims)
    except RENAMED as e:
        in_op("permute", e)
        raise


# The properties as views made directly (the generic Tensor.T goes through permute's entry and argument checks).
Tensor.T = property(_t_property, doc=_t_property.__doc__)  # type: ignore[method-assign,assignment]
Tensor.mT = property(_mt_property, doc=_mt_property.__doc__)  # type: ignore[method-assign,assignment]


def t(x: Tensor) -> Tensor:
    """Transpose of a tensor of at most 2 dimensions."""
    if x.ndim > 2:
        raise ShapeError(f"t() expects a tensor with <= 2 dimensions, but got {x.ndim} (shape {list(x.shape)})")
    return x if x.ndim < 2 else transpose(x, 0, 1)


_EXPAND = register(OpDef("expand", "shape", "A broadcast view to a larger shape (no copy).",
                         grads=(lambda g, *, in_shape: sum_to(g, in_shape),)))


def expand(x: Tensor, *sizes: Any) -> Tensor:
    """A view of ``x`` broadcast to ``sizes`` (-1 keeps a dimension)."""
    sizes = _shape_arg(sizes, "expand", "size")
    try:
        in_shape = x._data.shape
    except AttributeError:
        raise not_a_tensor("expand", "input", x) from None
    lead = len(sizes) - len(in_shape)
    if lead < 0:
        raise ShapeError(f"expand: the number of sizes provided ({len(sizes)}) must be greater or equal to the "
                         f"number of dimensions in the tensor ({len(in_shape)})")
    out = []
    for i, s in enumerate(sizes):
        cur = in_shape[i - lead] if i >= lead else None
        if s == -1:
            if cur is None:
                raise ShapeError(f"expand: -1 is not allowed in a leading, non-existing dimension ({list(sizes)})")
            s = cur
        elif s < 0:
            raise ShapeError(f"expand: the size {s} at dimension {i} is invalid: sizes are non-negative, or -1 to "
                             f"keep a dimension. Target sizes: {list(sizes)}. Tensor sizes: {list(in_shape)}")
        elif cur is not None and cur != 1 and cur != s:
            raise ShapeError(f"expand: the expanded size of the tensor ({s}) must match the existing size ({cur}) "
                             f"at non-singleton dimension {i}. Target sizes: {list(sizes)}. "
                             f"Tensor sizes: {list(in_shape)}")
        out.append(s)
    new = tuple(out)
    if new == in_shape:
        return x
    dev = x._device
    k = kernel_for(_EXPAND, dev, x._dtype)
    if k is None:
        return run_elsewhere(_EXPAND, dev, x._dtype, (x, *new), {})
    return view_result(_EXPAND, k(x._data, new), x, {"in_shape": in_shape})


broadcast_to = expand


def broadcast_shapes(*shapes: Any) -> Size:
    """The shape that tensors of ``shapes`` broadcast to, as ``torch.broadcast_shapes`` (ShapeError naming them
    if they do not)."""
    dims = [tuple(s) if isinstance(s, (tuple, list)) else (s,) for s in shapes]
    n = max((len(s) for s in dims), default=0)
    out = [1] * n
    for s in dims:
        for i, d in enumerate(s, n - len(s)):
            if d != out[i] and 1 not in (d, out[i]):
                raise ShapeError(f"shapes {[list(s) for s in dims]} cannot be broadcast together")
            if d != 1:
                out[i] = d
    return Size(out)


def expand_as(x: Tensor, other: Tensor) -> Tensor:
    """``x`` expanded to ``other``'s shape."""
    return expand(x, *other.shape)


@numpy_keywords
def squeeze(x: Tensor, dim: int | Sequence[int] | None = None) -> Tensor:
    """A view without the size-1 dimensions (or only those in ``dim`` that have size 1)."""
    shape = x._data.shape
    if dim is None:
        dims = {i for i, s in enumerate(shape) if s == 1}
    else:
        ds = tuple(dim) if isinstance(dim, (tuple, list)) else (dim,)
        dims = {d for d in (_wrap_dim(d, len(shape), "squeeze") for d in ds) if shape and shape[d] == 1}
    return reshape(x, *[s for i, s in enumerate(shape) if i not in dims]) if dims else reshape(x, *shape)


@numpy_keywords
def unsqueeze(x: Tensor, dim: int) -> Tensor:
    """A view with a size-1 dimension inserted at ``dim``."""
    shape = list(x._data.shape)
    n = len(shape) + 1
    if type(dim) is not int:
        dim = _dim_int(dim, "unsqueeze")
    if not -n <= dim < n:
        raise IndexError(f"unsqueeze: dimension out of range (expected to be in range of [{-n}, {n - 1}], "
                         f"but got {dim}) for a tensor of {n - 1} dimension{'s' if n != 2 else ''}")
    shape.insert(dim + n if dim < 0 else dim, 1)
    return reshape(x, *shape)


def flatten(x: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    """Merge dimensions ``start_dim`` to ``end_dim`` into one."""
    shape = x._data.shape
    if not shape:
        return reshape(x, 1)
    s, e = _wrap_dim(start_dim, len(shape), "flatten"), _wrap_dim(end_dim, len(shape), "flatten")
    if s > e:
        raise ShapeError(f"flatten: start_dim ({start_dim}) must not come after end_dim ({end_dim})")
    n = 1
    for v in shape[s:e + 1]:
        n *= v
    return reshape(x, *shape[:s], n, *shape[e + 1:])


def ravel(x: Tensor) -> Tensor:
    """``x`` flattened to one dimension."""
    return reshape(x, -1)


_CONTIGUOUS = register(OpDef("contiguous", "shape", "The tensor in row-major layout (itself if it already is).",
                             grads=(lambda g: g,)))
_CLONE = register(OpDef("clone", "shape", "A copy with its own storage.", grads=(lambda g: g,)))


def contiguous(x: Tensor) -> Tensor:
    """``x`` itself when row-major already, else a row-major copy."""
    dev = x._device
    k = kernel_for(_CONTIGUOUS, dev, x._dtype)
    if k is None:
        return run_elsewhere(_CONTIGUOUS, dev, x._dtype, (x,), {})
    data = k(x._data)
    if data is x._data and dev._copies and (strides := layout(x)) is not None \
            and not contiguous_layout(x._data.shape, strides):  # a copy standing for a strided view: copy
        data = dev._kernels["clone"](data)
    return x if data is x._data else finish(_CONTIGUOUS, data, x._dtype, dev, (x,))


def clone(x: Tensor) -> Tensor:
    """A copy of ``x`` with its own storage, differentiable."""
    try:
        dev = x._device
    except AttributeError:
        raise not_a_tensor("clone", "input", x) from None
    k = kernel_for(_CLONE, dev, x._dtype)
    if k is None:
        return run_elsewhere(_CLONE, dev, x._dtype, (x,), {})
    return finish(_CLONE, k(x._data), x._dtype, dev, (x,))


def _part_grad(key: tuple[Any, ...]) -> Callable[[Tensor], Tensor]:
    """The gradient of one input of cat / stack: the part ``g[key]`` of the output's gradient."""
    def grad(g: Tensor) -> Tensor:
        return g[key]
    return grad


#: The gradient functions of the inputs of a recorded cat (by dim and the inputs' sizes along it) or stack
#: (by dim and the number of inputs): pure functions of the key, shared by the nodes (bounded: see _remember).
_JOIN_GRADS: dict[tuple[Any, ...], tuple[Callable[[Tensor], Tensor], ...]] = {}


def _join_grads(key: tuple[Any, ...]) -> tuple[Callable[[Tensor], Tensor], ...]:
    new_dim, d, *sizes = key
    lead = (slice(None),) * d
    if new_dim:
        return _remember(_JOIN_GRADS, key, tuple(_part_grad((*lead, i)) for i in range(sizes[0])))
    offs, fns = 0, []
    for n in sizes:
        fns.append(_part_grad((*lead, slice(offs, offs + n))))
        offs += n
    return _remember(_JOIN_GRADS, key, tuple(fns))


_CAT = register(OpDef("cat", "shape", "Join tensors along an existing dimension.", grads=()))
_STACK = register(OpDef("stack", "shape", "Join tensors along a new dimension.", grads=()))


def _join(op: OpDef, tensors: Sequence[Tensor], dim: int, new_dim: bool) -> Tensor:
    if type(tensors) is not list and type(tensors) is not tuple:
        tensors = list(tensors)
    if not tensors:
        raise ValueError(f"{op.name}(): expected a non-empty list of Tensors")
    # one pass over the inputs: their type, device, dtype and arrays
    first = tensors[0]
    dev = dtype = None
    if isinstance(first, Tensor):
        dev, dtype = first._device, first._dtype
    alike = True
    empty = False
    datas = []
    for t in tensors:
        if not isinstance(t, Tensor):
            raise TypeError(f"{op.name}(): expected a sequence of Tensors, got "
                            f"{[type(t).__name__ for t in tensors]}")
        if t._device is not dev:
            check_devices(op.name, tensors)
        a = t._data
        if t._dtype is not dtype:
            alike = False
        if a.shape == (0,):
            empty = True
        datas.append(a)
    if empty and op is _CAT:
        # PyTorch skips 1-d empty tensors in cat (legacy behavior).
        shaped = [t for t in tensors if t._data.shape != (0,)] or [first]
        datas = [t._data for t in shaped]
    else:
        shaped = tensors
    ref = datas[0].shape
    nd = len(ref) + (1 if new_dim else 0)
    if nd == 0:
        raise ShapeError(f"{op.name}(): zero-dimensional tensor cannot be concatenated")
    d = dim if type(dim) is int and 0 <= dim < nd else _wrap_dim(dim, nd, op.name)
    for i, a in enumerate(datas):
        s = a.shape
        if s != ref and (new_dim or len(s) != len(ref) or s[:d] != ref[:d] or s[d + 1:] != ref[d + 1:]):
            raise ShapeError(f"{op.name}(): sizes of tensors must match" + ("" if new_dim else " except in dimension "
                             f"{d}") + f": tensor 0 has shape {list(ref)}, tensor {i} has shape {list(s)}")
    dtype = shaped[0]._dtype
    mixed = not alike and any(t._dtype is not dtype for t in shaped)
    if mixed:
        dtype = result_type([t._dtype for t in shaped], [], [])
    k = kernel_for(op, dev, dtype)
    if k is None:
        return run_elsewhere(op, dev, dtype, (shaped, dim), {})
    if mixed:
        cast = dev._kernels["cast"]
        data = k([t._data if t._dtype is dtype else cast(t._data, dtype) for t in shaped], d)
    else:
        data = k(datas, d)
    if not (_mode._state.enabled and any(t._rg for t in shaped)):
        return _wrap(data, dtype, dev)
    return _recorded(op, data, dtype, dev, shaped, datas, d, new_dim)


def _joiner(op: OpDef, new_dim: bool, doc: str) -> Callable[..., Tensor]:
    """The public function of cat or stack (``op``): tensors (a list or tuple) of one dtype and device whose
    shapes fit go to the device's kernel taking that dtype as it is (no dispatch layer on), in one pass over
    them, without the dispatch entry's frame; anything else to the entry of :func:`_join`, which checks it all and
    says what is wrong. One function each, no shared frame below it."""

    name = op.name

    def fn(tensors: Sequence[Tensor], dim: int = 0, **kwargs: Any) -> Tensor:
        if kwargs:  # (axis=: the entry renames it; a dim given besides goes as a keyword)
            if type(dim) is not int or dim != 0:
                kwargs["dim"] = dim
            return slow(tensors, **kwargs)
        try:  # (anything but a list or tuple of tensors: an exception, the checked path says what is wrong)
            if type(tensors) is not list and type(tensors) is not tuple:
                raise TypeError
            first = tensors[0]
            dev, dtype, a = first._device, first._dtype, first._data
            k, table = dev._fast[name]
            if table[dtype][0] is not dtype:
                raise KeyError
            ref = a.shape
            nd = len(ref) + new_dim
            d = dim + nd if dim < 0 else dim
            if type(dim) is not int or not 0 <= d < nd:
                raise KeyError
            rg = first._rg
            if len(tensors) == 2:  # (the usual call: one step, no loop)
                t = tensors[1]
                b = t._data
                s = b.shape
                if t._dtype is not dtype or t._device is not dev or (s != ref and misfit(s, ref, d)):
                    raise KeyError
                datas = [a, b]
                rg = rg or t._rg
            else:
                datas = []
                for t in tensors:
                    b = t._data
                    s = b.shape
                    if t._dtype is not dtype or t._device is not dev or (s != ref and misfit(s, ref, d)):
                        # (a 1-d empty tensor among others of more dims, which cat skips, goes this way too)
                        raise KeyError
                    if t._rg:
                        rg = True
                    datas.append(b)
        except (AttributeError, IndexError, KeyError, TypeError):
            return slow(tensors, dim)
        data = k(datas, d)
        if rg and _mode._state.enabled:
            return _recorded(op, data, dtype, dev, tensors, datas, d, new_dim)
        r = _new(Tensor)  # _wrap, inlined
        r._data = data
        r._dtype = dtype
        r._device = dev
        r._rg = False
        r._vc = [0]
        r.grad_fn = r._grad = r._base = r._hooks = r._retains = r._view = None
        return r

    def misfit(s: tuple[int, ...], ref: tuple[int, ...], d: int) -> bool:
        """Whether an input of shape ``s`` (not the first's, ``ref``) does not join the first along ``d``."""
        return new_dim or len(s) != len(ref) or s[:d] != ref[:d] or s[d + 1:] != ref[d + 1:]

    def checked(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
        return _join(op, tensors, dim, new_dim)

    checked.__name__ = checked.__qualname__ = fn.__name__ = fn.__qualname__ = op.name
    checked.__doc__ = fn.__doc__ = doc
    slow = entry(op, checked)  # the layers (a layer empties dev._fast), axis= for dim=, errors named
    fn.__dispatches__ = True  # type: ignore[attr-defined]
    fn.__wrapped__ = checked  # type: ignore[attr-defined]  # its signature (the stubs, help()): no **kwargs
    return fn


def _recorded(op: OpDef, data: Any, dtype: Any, dev: Any, shaped: Sequence[Tensor], datas: list[Any], d: int,
              new_dim: bool) -> Tensor:
    """The joined result with its graph node (grad mode on, an input requiring grad): each input's gradient is
    its slice (cat) or index (stack)."""
    if new_dim:
        key: tuple[Any, ...] = (True, d, len(shaped))
    elif len(datas) == 2:
        key = (False, d, datas[0].shape[d], datas[1].shape[d])
    else:
        sizes = [False, d]
        for a in datas:
            sizes.append(a.shape[d])
        key = tuple(sizes)
    fns = _JOIN_GRADS.get(key)
    if fns is None:
        fns = _join_grads(key)
    r = _new(Tensor)  # _wrap, inlined
    r._data = data
    r._dtype = dtype
    r._device = dev
    r._vc = [0]
    r.grad_fn = r._grad = r._base = r._hooks = r._retains = r._view = None
    return record_n(r, op, shaped, fns)


cat = _joiner(_CAT, False, "Concatenate ``tensors`` along dimension ``dim``.")
concat = concatenate = cat
stack = _joiner(_STACK, True, "Stack same-shaped ``tensors`` along a new dimension ``dim``.")


def sum_to(x: Tensor, shape: Sequence[int]) -> Tensor:
    """Sum ``x`` over the dimensions broadcasting added, to get back ``shape``."""
    shape = tuple(shape)
    xs = x._data.shape
    if xs == shape:
        return x
    lead = len(xs) - len(shape)
    if lead < 0:
        raise ShapeError(f"sum_to: shape {list(xs)} cannot be summed to the larger shape {list(shape)}")
    dims = tuple(range(lead)) + tuple(i + lead for i, s in enumerate(shape) if s == 1 and xs[i + lead] != 1)
    r = x.sum(dims, keepdim=True) if dims else x
    return r.reshape(shape)


def _positions(shape: Sequence[int], strides: Sequence[int], offset: int, dev: Any) -> Tensor:
    """The storage position of each element of a strided layout, as an int64 tensor of ``shape``."""
    pos = full((), offset, dtype=int64, device=dev)
    for i, (n, st) in enumerate(zip(shape, strides)):
        at = [1] * len(shape)
        at[i] = n
        pos = pos + arange(n, device=dev).reshape(at) * st
    return pos.expand(*shape)


def _as_strided_grad(g: Tensor, *, size: tuple[int, ...], stride: tuple[int, ...], offset: int, storage: int,
                     x_layout: tuple[tuple[int, ...], int], x_shape: tuple[int, ...]) -> Tensor:
    # The gradient of each storage place is the sum over the output elements that read it (windows overlap);
    # the input's elements take theirs from their own places.
    n = g.numel()
    idx = _positions(size, stride, offset, g._device).reshape(n)
    flat = zeros(storage, dtype=g._dtype, device=g._device).index_add(0, idx, g.reshape(n))
    return flat[_positions(x_shape, *x_layout, g._device)]


# Not in the registry (no kernel of its own to resolve per dtype): the definition carries the backward formula
# and names the view for autograd; the backends' "as_strided" and "storage_layout" kernels do the work.
_AS_STRIDED = OpDef("as_strided", "shape", "A view of the tensor's storage with other sizes, strides and offset.",
                    grads=(_as_strided_grad,))


def _ints(v: Any, arg: str) -> tuple[int, ...]:
    try:
        return tuple(operator.index(i) for i in ((v,) if not isinstance(v, (tuple, list, Size)) else v))
    except TypeError:
        raise TypeError(f"as_strided(): argument '{arg}' must be a tuple of ints, got {v!r}") from None


def _layout(x: Tensor) -> tuple[Tensor, tuple[tuple[int, ...], int]]:
    """The tensor owning ``x``'s storage, and ``x``'s strides and offset in it (elements)."""
    root = x._base if x._base is not None else x
    layout = kernel(x._device, "storage_layout")
    strides = layout(root._data, root._data)[0]
    expect, step = [], 1
    for n in reversed(root.shape):
        expect.append(step)
        step *= n
    if any(n > 1 and st != e for n, st, e in zip(root.shape, strides, reversed(expect))):
        raise NotImplementedError("as_strided: the storage of this tensor is not laid out contiguously (a kernel "
                                  "returned a strided array); call .contiguous() on it first")
    return root, layout(root._data, x._data)


def as_strided(x: Tensor, size: Sequence[int], stride: Sequence[int], storage_offset: int | None = None) -> Tensor:
    """A view of ``x``'s storage with ``size``, ``stride`` (in elements) and ``storage_offset`` (by default
    ``x``'s own), as PyTorch's: windows may overlap; writes go to ``x``'s storage; gradients sum over the
    places an element is read from."""
    if not isinstance(x, Tensor):
        raise TypeError(f"as_strided(): argument 'input' must be a Tensor, not {type(x).__name__}")
    size, stride = _ints(size, "size"), _ints(stride, "stride")
    if len(size) != len(stride):
        raise ShapeError(f"as_strided: size {list(size)} and stride {list(stride)} differ in length")
    if any(n < 0 for n in size) or any(st < 0 for st in stride):
        raise ShapeError(f"as_strided: sizes and strides must not be negative, got size {list(size)} and stride "
                         f"{list(stride)}")
    root, (x_strides, x_offset) = _layout(x)
    offset = x_offset if storage_offset is None else operator.index(storage_offset)
    storage = root.numel()
    need = offset + sum((n - 1) * st for n, st in zip(size, stride)) + 1 if all(size) else offset
    if offset < 0 or need > storage:
        raise IndexError(f"as_strided: size {list(size)} with stride {list(stride)} and storage offset {offset} "
                         f"reaches element {need - 1} of a storage of {storage} elements")
    data = kernel(x._device, "as_strided")(root._data, size, stride, offset)
    attrs = {"size": size, "stride": stride, "offset": offset, "storage": storage,
             "x_layout": (x_strides, x_offset), "x_shape": tuple(x.shape)}
    return finish(_AS_STRIDED, data, x._dtype, x._device, (x,), attrs=attrs, view_of=x)


def stride(x: Tensor, dim: int | None = None) -> Any:
    """The strides of ``x`` in elements (one dim's with ``dim``), as PyTorch's ``Tensor.stride``."""
    strides = _layout(x)[1][0]
    return strides if dim is None else strides[_wrap_dim(dim, x.ndim, "stride")]


def storage_offset(x: Tensor) -> int:
    """Where ``x`` starts in its storage, in elements."""
    return _layout(x)[1][1]


FUNCTIONS: dict[str, Callable[..., Any]] = {
    "as_strided": as_strided, "reshape": reshape, "view": view, "permute": permute, "transpose": transpose,
    "swapaxes": swapaxes,
    "swapdims": swapdims, "t": t, "expand": expand, "broadcast_to": broadcast_to,
    "broadcast_shapes": broadcast_shapes, "expand_as": expand_as,
    "squeeze": squeeze, "unsqueeze": unsqueeze, "flatten": flatten, "ravel": ravel, "contiguous": contiguous,
    "clone": clone, "cat": cat, "concat": concat, "concatenate": concatenate, "stack": stack,
}
for _name, _op in (("reshape", _RESHAPE), ("view", _VIEW), ("permute", _PERMUTE), ("expand", _EXPAND),
                   ("contiguous", _CONTIGUOUS), ("clone", _CLONE), ("cat", _CAT), ("stack", _STACK)):
    _op.fn = FUNCTIONS[_name]
def is_contiguous(x: Tensor, memory_format: Any = None) -> bool:
    """Whether ``x``'s elements lie in its storage in row-major order without gaps (dims of size 1 and
    empty tensors do not count, as in PyTorch)."""
    if memory_format is not None and str(memory_format).rpartition(".")[2] != "contiguous_format":
        raise ValueError(f"is_contiguous(): ferro tensors have one memory format, got memory_format={memory_format!r}")
    if x.numel() == 0:
        return True
    step = 1
    for n, st in zip(reversed(x.shape), reversed(stride(x)), strict=True):
        if n != 1 and st != step:
            return False
        step *= n
    return True


def view_as(x: Tensor, other: Tensor) -> Tensor:
    """``x.view(other.shape)``."""
    return view(x, other.shape)


def reshape_as(x: Tensor, other: Tensor) -> Tensor:
    """``x.reshape(other.shape)``."""
    return reshape(x, other.shape)


#: Tensor methods only (PyTorch has no ``torch.stride`` or ``torch.view_as``).
LAYOUT_METHODS: dict[str, Callable[..., Any]] = {"stride": stride, "storage_offset": storage_offset,
                                                 "is_contiguous": is_contiguous, "view_as": view_as,
                                                 "reshape_as": reshape_as}
METHODS = ["as_strided", "reshape", "view", "permute", "transpose", "swapaxes", "swapdims", "t", "expand", "expand_as",
           "squeeze", "unsqueeze", "flatten", "ravel", "contiguous", "clone", "broadcast_to"]
