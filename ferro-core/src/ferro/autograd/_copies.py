"""Views on backends whose view kernels return copies (``Backend.view_copies``).

Such a view (*detached*: ``Tensor._view[2]``) holds its own array, so core
keeps PyTorch's semantics itself, from the view's record (its base and the
chain of view ops that made it):

- **writes through the view reach the base**: after an in-place op on it,
  its values are scattered into the base at the places the view reads. Those
  places are found by making the same views of ``arange(base.numel())``, so
  every view op that selects elements (indexing, reshape, permute, diagonal,
  as_strided) is written back by one mechanism (:func:`write_back`);
- **writes to the base show in the view**: every in-place write to a
  storage that has copied views (its version counter carries their list, so
  only such storages pay) makes them again from the base, in place
  (:func:`sync_copies`);
- **what cannot be written back is refused before anything is written**
  (:func:`refuse_write`): views whose elements overlap in the base (made by
  ``expand``, ``as_strided`` or overlapping ``unfold`` windows: PyTorch refuses writes to those too), and the
  parts of complex numbers (``real``, ``imag``, ``view_as_real``: a part of
  an element cannot be scattered back without a view, and building the
  element again by arithmetic would turn an infinite part into nan).
- ``reshape``, ``view`` and ``contiguous`` ask :func:`layout` for the
  strides the view would have in its base, so that they copy (or, for
  ``view``, refuse) exactly where PyTorch does.

Writes that bypass the in-place ops (``ferro.optim``'s parameter updates)
do not refresh copied views of the parameters.
"""

from __future__ import annotations

import math
import weakref
from typing import Any

from .._core import grad_mode as _mode
from .._core.dtypes import DType, int64
from .._core.tensor import Tensor, _wrap

__all__ = ["replay", "track", "sync_copies", "write_back", "refuse_write", "layout", "contiguous_layout",
           "view_possible"]

#: Where the view ``chain`` reads one element of its base more than once, a write through it is refused (as
#: PyTorch refuses writes to tensors whose elements overlap in memory).
_OVERLAP = "more than one element of the view stands for a single element of its base (PyTorch refuses writes to " \
           "tensors whose elements overlap in memory too); clone() the view first"

#: View ops whose copies core cannot write back, and why.
_UNWRITABLE = {
    "real": "the view holds one part of each complex element, which core cannot write back without a view; "
            "write to the base instead",
    "imag": "the view holds one part of each complex element, which core cannot write back without a view; "
            "write to the base instead",
    "view_as_real": "the view holds the parts of each complex element, which core cannot write back without a "
                    "view; write to the base instead",
}


def track(view: Tensor) -> None:
    """Note ``view``, whose own kernel returned a copy, on its storage's version counter."""
    vc = view._vc
    if len(vc) == 1:
        vc.append([])
    refs = vc[1]
    refs.append(weakref.ref(view))
    n = len(refs)
    if n >= 64 and not n & (n - 1):  # at powers of two: views made and dropped between writes do not pile up
        refs[:] = [r for r in refs if r() is not None]


def _key(key: tuple[Any, ...], ndim: int) -> tuple[Any, ...]:
    # as getitem does: a key of one int per dimension gives a 0-d array, not a scalar
    return (*key, Ellipsis) if len(key) == ndim and all(type(i) is int for i in key) else key


def replay(t: Tensor, chain: tuple[Any, ...]) -> Tensor:
    """The view of ``t`` that ``chain`` describes, made again with ferro ops (recorded if grad is on)."""
    for name, attrs, shape in chain:
        if name in ("reshape", "view"):
            t = t.reshape(shape)
        elif name == "permute":
            t = t.permute(attrs["dims"])
        elif name == "expand":
            t = t.expand(*shape)
        elif name in ("real", "imag"):  # a complex tensor's parts (ferro._ops.complex)
            t = getattr(t, name)
        elif name == "diagonal":
            t = t.diagonal(attrs["offset"], attrs["dim1"], attrs["dim2"])
        elif "replay" in attrs:  # a view op that records the function making it (view_as_real)
            t = attrs["replay"](t)
        elif name == "as_strided":  # its offset counts from the storage's start: the same from any view
            t = t.as_strided(attrs["size"], attrs["stride"], attrs["offset"])
        else:  # getitem with a basic key
            t = t[attrs["key"]]
    return t


#: The kernel each view op of a chain is made again by natively (any other step: by ferro ops).
_KERNEL_OF = {"reshape": "reshape", "view": "reshape", "permute": "permute", "expand": "expand", "real": "real",
              "imag": "imag", "view_as_real": "view_as_real", "diagonal": "diagonal", "as_strided": "as_strided",
              "getitem": "getitem"}


def _make(dev: Any, data: Any, dtype: DType, chain: tuple[Any, ...]) -> Any:
    """The array the view ``chain`` makes of the base's array ``data``: by the device's kernels, or by ferro ops
    where one is missing (a view op that ran by its decomposition, such as diagonal without its kernel)."""
    k, root = dev._kernels, data
    if any(_KERNEL_OF.get(name, "") not in k for name, _, _ in chain):
        prev = _mode._state.enabled
        _mode._state.enabled = False
        try:
            return replay(_wrap(data, dtype, dev), chain)._data
        finally:
            _mode._state.enabled = prev
    for name, attrs, shape in chain:
        if name in ("reshape", "view"):
            data = k["reshape"](data, shape)
        elif name == "permute":
            data = k["permute"](data, attrs["dims"])
        elif name == "expand":
            data = k["expand"](data, shape)
        elif name in ("real", "imag", "view_as_real"):
            data = k[name](data)
        elif name == "diagonal":
            data = k["diagonal"](data, attrs["offset"], attrs["dim1"], attrs["dim2"])
        elif name == "as_strided":  # its offset counts from the storage's start
            data = k["as_strided"](root, attrs["size"], attrs["stride"], attrs["offset"])
        else:  # getitem with a basic key
            data = k["getitem"](data, _key(attrs["key"], len(data.shape)))
    return data


def _positions(base: Tensor, chain: tuple[Any, ...]) -> Any:
    """For each element of the view ``chain`` of ``base``: its flat position in ``base`` (a native int64 array)."""
    dev, shape = base._device, tuple(base._data.shape)
    k = dev._kernels
    idx = k["reshape"](k["arange"](0, math.prod(shape), 1, int64), shape)
    return _make(dev, idx, int64, chain)


def write_back(base: Tensor, chain: tuple[Any, ...], value: Any) -> None:
    """Write the native array ``value`` (the view ``chain`` of ``base`` after a write) into ``base``'s array."""
    dev, shape = base._device, tuple(base._data.shape)
    k = dev._kernels
    pos = _positions(base, chain)
    flat = k["reshape"](base._data, (math.prod(shape),))
    k["setitem"](flat, (k["reshape"](pos, (-1,)),), k["reshape"](value, (-1,)))
    k["copy_"](base._data, k["reshape"](flat, shape))


def _owner(x: Tensor) -> Tensor:
    """The view whose record describes ``x``'s array (``x``, or what ``x`` is a ``detach()`` of)."""
    while x._view is None and x._base is not None:
        x = x._base
    return x


def refuse_write(x: Tensor, name: str) -> None:
    """Before in-place op ``name`` writes ``x``: refuse where ``x`` is a copied view core cannot write back."""
    rec = _owner(x)._view
    if rec is None or not rec[2]:
        return
    chain = rec[0]
    for op, _, _ in chain:
        why = _UNWRITABLE.get(op)
        if why is None and op in ("expand", "as_strided", "unfold"):
            pos = x._device.backend.to_numpy(_positions(_owner(x)._base, chain))
            why = _OVERLAP if len(set(pos.reshape(-1).tolist())) < pos.size else None
        if why is not None:
            raise RuntimeError(f"{name}: cannot write through a view made by '{op}' on backend '{x._device.type}', "
                               f"whose kernels return copies instead of views: {why}")


def sync_copies(x: Tensor) -> None:
    """After an in-place write to ``x``, whose storage has copied views: carry the write into the base if ``x``
    is such a view, then make every other copied view of the storage again from the base."""
    owner = _owner(x)
    rec = owner._view
    if rec is not None and rec[2]:
        write_back(owner._base, rec[0], owner._data)
    refs = x._vc[1]
    live = []
    for ref in refs:
        v = ref()
        if v is None:
            continue
        live.append(ref)
        if v is not owner:
            base = v._base
            v._device._kernels["copy_"](v._data, _make(v._device, base._data, base._dtype, v._view[0]))
    refs[:] = live


def layout(x: Tensor) -> tuple[int, ...] | None:
    """The strides (in elements) the copied view ``x`` has in its base's memory, as PyTorch's view would;
    None where ``x`` is not a copied view (its array's own layout is the truth)."""
    rec = x._view
    if rec is None or not rec[2]:
        return None
    shape = tuple(x._data.shape)
    strides = [0] * len(shape)
    if 0 in shape or not shape:
        return tuple(strides)
    if all(op in ("reshape", "view") for op, _, _ in rec[0]):  # the whole base, reshaped: row-major
        step = 1
        for d in range(len(shape) - 1, -1, -1):
            strides[d], step = step, step * shape[d]
        return tuple(strides)
    pos = x._device.backend.to_numpy(_positions(x._base, rec[0]))
    origin = int(pos[(0,) * len(shape)])
    step = 1
    for d in range(len(shape) - 1, -1, -1):
        if shape[d] > 1:
            strides[d] = int(pos[tuple(1 if j == d else 0 for j in range(len(shape)))]) - origin
        else:  # a size-1 dim's stride is free: the one that keeps it contiguous
            strides[d] = step
        step = abs(strides[d]) * shape[d] if shape[d] > 1 else step
    return tuple(strides)


def contiguous_layout(shape: tuple[int, ...], strides: tuple[int, ...]) -> bool:
    """Whether ``strides`` are row-major for ``shape`` (dims of size 1 do not count)."""
    step = 1
    for n, st in zip(reversed(shape), reversed(strides)):
        if n != 1 and st != step:
            return False
        step *= n
    return True


def view_possible(shape: tuple[int, ...], strides: tuple[int, ...], new: tuple[int, ...]) -> bool:
    """Whether a tensor of ``shape`` and ``strides`` can be viewed as ``new`` (PyTorch's ``computeStride``)."""
    if not shape or 0 in shape:
        return True
    view_d, chunk, numel, view_numel = len(new) - 1, strides[-1], 1, 1
    for d in range(len(shape) - 1, -1, -1):
        numel *= shape[d]
        if d == 0 or (shape[d - 1] != 1 and strides[d - 1] != numel * chunk):
            while view_d >= 0 and (view_numel < numel or new[view_d] == 1):
                view_numel *= new[view_d]
                view_d -= 1
            if view_numel != numel:
                return False
            if d > 0:
                chunk, numel, view_numel = strides[d - 1], 1, 1
    return view_d == -1
