"""Autograd through in-place changes of views (PyTorch's ``CopySlices``).

A view (``y[0]``, ``y.reshape(...)``, ``y.permute(...)``) shares storage with
its base, so an in-place op on the view changes the base too. The graph must
say so: after ``v.mul_(2)`` on ``v = y[0]``, the base's gradient function
becomes ``copy_slices`` (the old base with the view's region replaced by the
view's new value), and the view becomes ``y[0]`` of that new base. A view
records how it was made from its base (``Tensor._view``: the chain of view ops
and the version of the storage when its graph position was last set), so
that views whose base changed in place since are re-derived from the base
before they are used in an op (:func:`refresh`).

Backends whose arrays cannot alias declare, per view op, that their kernel
returns a copy (``Backend.view_copies``). Such a result is still a view for
ferro: its record says it is *detached* from its base's memory
(``_view[2]``), and core keeps PyTorch's semantics by hand (see
:mod:`ferro.autograd._copies`).
"""

from __future__ import annotations

from typing import Any

from .._core import grad_mode as _mode
from .._core.node import Node
from .._core.tensor import Tensor, full
from ..backends.contract import VIEW_OPS
from ._copies import replay as _replay
from ._copies import sync_copies, track, write_back

__all__ = ["VIEW_OPS", "view_record", "as_copied_view", "refresh", "check_inplace", "after_inplace"]


def view_record(view_of: Tensor, name: str, attrs: dict[str, Any] | None, shape: tuple[int, ...],
                version: int, copied: bool = False, parent: Any = False) -> list[Any]:
    """The ``_view`` of a new view of ``view_of``: ``[chain of (op, attrs, shape), version, detached]``,
    detached where this step's kernel returned a copy (``copied``) or an earlier step's did. ``parent``:
    ``view_of._view`` where the caller has read it already."""
    if parent is False:
        parent = view_of._view
    step = ((name, attrs, shape),)
    if parent is None:
        return [step, version, copied]
    return [parent[0] + step, version, copied or parent[2]]


def as_copied_view(r: Tensor, x: Tensor, name: str, attrs: dict[str, Any]) -> Tensor:
    """Make ``r``, a copy of the view op ``name`` of ``x`` (its decomposition, where the backend has no view
    kernel), a copied view of ``x``: as a kernel's copy, kept in step with its base (``_copies``)."""
    r._vc = vc = x._vc
    base = x._base
    r._base = x if base is None or x._view is None else base
    r._view = view_record(x, name, attrs, r._data.shape, vc[0], True)
    track(r)
    return r


def refresh(t: Tensor) -> None:
    """Re-derive the graph position of view ``t`` from its base if the storage changed in place since."""
    rec = t._view
    if rec is None or rec[1] == t._vc[0]:
        return
    base = t._base
    rec[1] = t._vc[0]
    if base is None or not base._rg:
        return
    prev = _mode._state.enabled
    _mode._state.enabled = True
    try:
        t.grad_fn = _replay(base, rec[0]).grad_fn
    finally:
        _mode._state.enabled = prev
    t._rg = True


def check_inplace(x: Tensor, name: str) -> None:
    """Before an in-place op on ``x`` with grad mode on: refuse views of leaves that require grad,
    and bring a stale view's graph position up to date."""
    rec = x._view
    if rec is None:
        return
    base = x._base
    if base is not None and base._rg and base.grad_fn is None:
        raise RuntimeError(f"{name}: a view of a leaf Variable that requires grad is being used in an in-place "
                           "operation. Wrap it in `with ferro.no_grad():` or clone the leaf first.")
    refresh(x)


def _region_mask(g: Tensor, chain: tuple[Any, ...]) -> Tensor:
    """Ones of ``g``'s shape, zero where the view ``chain`` reads (what the in-place write replaced)."""
    prev = _mode._state.enabled
    _mode._state.enabled = False
    try:
        mask = full(g._data.shape, 1, g._dtype, g._device)
        if g._dtype.is_complex:  # 1 in both components: a write through x.real replaces only the real ones
            mask = mask * (1 + 1j)
        region = _replay(mask, chain)
        region._device._kernels["setitem"](region._data, Ellipsis, 0)
        if region._view is not None and region._view[2]:  # the region is a copy: write the zeros back into the mask
            write_back(mask, chain, region._data)
    finally:
        _mode._state.enabled = prev
    return mask


def _masked(g: Tensor, mask: Tensor) -> Tensor:
    """``g * mask``; for complex ``g``, component by component."""
    if not g._dtype.is_complex:
        return g * mask
    return g.real * mask.real + g.imag * mask.imag * 1j


def _grad_base(g: Tensor, *, chain: tuple[Any, ...]) -> Tensor:
    return _masked(g, _region_mask(g, chain))


def _grad_src(g: Tensor, *, chain: tuple[Any, ...]) -> Tensor:
    return _replay(_masked(g, (1 + 1j if g._dtype.is_complex else 1) - _region_mask(g, chain)), chain)


def after_inplace(x: Tensor) -> None:
    """After ``x`` was written in place (its ``grad_fn`` now giving its new value): if ``x`` is a
    view, record the write into its base's graph and make ``x`` a view of the new base. Where the storage
    has views that are copies, the write is carried to the base and to them first."""
    if len(x._vc) > 1:
        sync_copies(x)
    rec = x._view
    if rec is None or not _mode._state.enabled:
        return
    base = x._base
    if base is None or not (x._rg or base._rg):
        return
    src = (x.grad_fn or x) if x._rg else None
    node = Node.new("copy_slices", (_grad_base, _grad_src), ((base.grad_fn or base) if base._rg else None, src), (),
                ((base._data.shape, base._dtype), (x._data.shape, x._dtype)), {"chain": rec[0]})
    base.grad_fn, base._rg = node, True
    x.grad_fn = _replay(base, rec[0]).grad_fn
    x._rg = True
    rec[1] = x._vc[0]
