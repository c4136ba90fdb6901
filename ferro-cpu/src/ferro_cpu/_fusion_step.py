"""The CPU backend's ``compile_step`` hook (``ferro.compile``'s multi-tensor optimizer steps,
``ferro._compile.passes.steps``): SGD's update of a parameter group in a handful of NumPy calls over flat arrays.

On its first update, each parameter group's parameters and their momentum buffers are laid out as views of one
flat array each (values copied; the tensors stay the same objects, only their native arrays become views), where
the group is uniform (one dtype, float32 or float64) and nothing else holds those arrays: no other reference and
no view of them (a view holds its base: the reference count says so). Each update then runs ``fused_sgd``'s
sequence of ufuncs (``ferro_cpu._fused``) over the flat arrays, with the same scalars in the parameters' dtype,
so the values are the per-parameter update's bitwise; only the gradients are read one by one (added into their
buffer's view, or gathered into one flat array where weight decay, dampening, Nesterov or ``maximize`` read
them more than once). Guards run before anything is written: a parameter whose data, gradient or momentum buffer
is not as laid out, or a changed momentum, gives False (the optimizer's own step runs).
"""

from __future__ import annotations

import sys
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

from ferro.optim import SGD

__all__ = ["compile_step"]

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))
#: optimizer -> its flat update (one per optimizer, shared by the graphs that step it)
_made: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()


def _sole(arr: Any) -> bool:
    """Whether ``arr`` owns its memory and its tensor is its only holder (no other reference, no view)."""
    # references: the tensor's slot, this function's argument, getrefcount's argument
    return isinstance(arr, np.ndarray) and arr.base is None and arr.flags.c_contiguous and sys.getrefcount(arr) <= 3


class _Flat:
    """One parameter group laid out flat."""

    def __init__(self, group: dict[str, Any], params: list[Any], bufs: list[Any] | None) -> None:
        dtype = params[0]._data.dtype
        total = sum(p._data.size for p in params)
        self.group, self.params, self.bufs = group, params, bufs
        self.momentum = group["momentum"]
        self.c = dtype.type
        self.P = self._flatten(params, total, dtype)
        self.B = self._flatten(bufs, total, dtype) if bufs is not None else None
        self.pviews = [p._data for p in params]
        self.bviews = [b._data for b in bufs] if bufs is not None else None
        self.T = np.empty(total, dtype)
        self.G: Any = None  # the gradients gathered, made on first need

    @staticmethod
    def _flatten(tensors: list[Any], total: int, dtype: Any) -> Any:
        flat = np.empty(total, dtype)
        o = 0
        for t in tensors:
            a = t._data
            k = a.size
            flat[o:o + k] = a.reshape(-1)
            t._data = flat[o:o + k].reshape(a.shape)
            o += k
        return flat


def _layout(opt: Any) -> list[_Flat] | None:
    flats = []
    for group in opt.param_groups:
        params = list(group["params"])
        if not params or any(p._grad is None for p in params):
            return None
        dtype = params[0]._data.dtype
        if dtype not in _FLOATS or any(p._data.dtype != dtype or not _sole(p._data) for p in params):
            return None
        bufs = None
        if group["momentum"]:
            st = [opt.state.get(p) for p in params]
            bufs = [s.get("momentum_buffer") if s else None for s in st]
            if any(b is None or b._data.dtype != dtype or b._data.shape != p._data.shape or not _sole(b._data)
                   for b, p in zip(bufs, params)):
                return None
        flats.append(_Flat(group, params, bufs))
    return flats


class FlatSGD:
    """``update()`` of :class:`ferro.optim.SGD` over flat arrays (see the module's docstring)."""

    def __init__(self, opt: Any, kernel: Callable[..., Any]) -> None:
        self.opt, self.kernel = opt, kernel
        self.flats: list[_Flat] | None = None
        self.tries = 3  # layouts tried (a capture's own references may still hold the arrays on the first)

    def _ready(self) -> bool:
        if self.flats is None:
            if self.tries <= 0:
                return False
            self.tries -= 1
            self.flats = _layout(self.opt)
            if self.flats is None:
                return False
        return True

    def _grads(self, f: _Flat) -> list[Any] | None:
        """The gradients of ``f``'s parameters, or None where the group is not as laid out."""
        group = f.group
        if group["momentum"] != f.momentum or len(group["params"]) != len(f.params):
            return None
        state, grads = self.opt.state, []
        for j, p in enumerate(f.params):
            g = p._grad
            if (group["params"][j] is not p or p._data is not f.pviews[j] or g is None
                    or type(g._data) is not np.ndarray):
                return None
            if f.bufs is not None:
                st = state.get(p)
                b = f.bufs[j]
                if st is None or st.get("momentum_buffer") is not b or b._data is not f.bviews[j]:
                    return None
            grads.append(g._data)
        return grads

    def __call__(self) -> bool:
        opt = self.opt
        if not self._ready() or len(opt.param_groups) != len(self.flats):  # type: ignore[arg-type]
            return False
        work = []
        for group, f in zip(opt.param_groups, self.flats):  # type: ignore[arg-type]
            grads = self._grads(f) if group is f.group else None
            if grads is None or group.get("fused") is False or opt._kernel_for(group, f.params[0]) is not self.kernel:
                return False
            work.append((f, grads))
        with np.errstate(all="ignore"):
            for f, grads in work:
                _sgd(f, grads)
        for f, _ in work:
            for p in f.params:
                p._vc[0] += 1
            for b in f.bufs or ():
                b._vc[0] += 1
        return True


def _sgd(f: _Flat, grads: list[Any]) -> None:
    """``fused_sgd`` (not a first step) over the group's flat arrays."""
    group, c = f.group, f.c
    lr, m, d, wd = group["lr"], group["momentum"], group["dampening"], group["weight_decay"]
    nesterov, maximize = group["nesterov"], group["maximize"]
    P, B, T = f.P, f.B, f.T
    multiply, add = np.multiply, np.add
    if m and not (wd or maximize or d or nesterov):  # b = m * b + g; p += b * -lr
        multiply(B, c(m), out=B)
        for b, g in zip(f.bviews, grads):  # type: ignore[arg-type]
            add(b, g, out=b)
        add(P, multiply(B, c(-lr), out=T), out=P)
        return
    if f.G is None:
        f.G = np.empty_like(P)
    G = f.G
    np.concatenate([g.reshape(-1) for g in grads], out=G)
    if maximize:
        np.negative(G, out=G)
    if wd:
        add(G, multiply(P, c(wd), out=T), out=G)
    g = G
    if m:
        multiply(B, c(m), out=B)
        add(B, multiply(G, c(1 - d), out=T) if d else G, out=B)
        if nesterov:
            add(G, multiply(B, c(m), out=T), out=G)
        else:
            g = B
    add(P, multiply(g, c(-lr), out=T), out=P)


def compile_step(opt: Any, kernels: dict[str, Any]) -> Callable[[], bool] | None:
    """The flat update of optimizer ``opt`` (see the module's docstring), or None for one not taken: not an
    :class:`ferro.optim.SGD` as ferro defines it, or a device whose ``fused_sgd`` is not this backend's
    (``kernels``: the device's kernel table)."""
    if type(opt) is not SGD:
        return None
    kernel = kernels.get("fused_sgd")
    if kernel is None or getattr(kernel, "__module__", None) != "ferro_cpu._fused":
        return None
    try:
        made = _made.get(opt)
    except TypeError:
        made = None
    if made is None or made.kernel is not kernel:
        made = FlatSGD(opt, kernel)
        try:
            _made[opt] = made
        except TypeError:
            pass
    return made
