"""The CPU backend's ``compile_step`` hook (``ferro.compile``'s multi-tensor optimizer steps,
``ferro._compile.passes.steps``): the update of SGD, Adam or AdamW over a whole parameter group in a handful of
NumPy calls over flat arrays, instead of a fused kernel's calls per parameter.

On its first update, each parameter group's parameters and their state tensors (momentum buffer; moments) are
laid out as views of one flat array each (values copied; the tensors stay the same objects, only their native
arrays become views), where the group is uniform (one dtype, float32 or float64, every state present) and
nothing else holds those arrays: no other reference and no view of them (a view holds its base: the reference
count says so); else the optimizer's own step runs from then on. Each update then runs the fused kernel's
sequence of ufuncs (``fused_sgd``, ``fused_adam`` in ``ferro_cpu._fused``) over the flat arrays with the same
scalars in the parameters' dtype, so the values are the per-parameter update's bitwise. The gradients are read
one by one: added into their momentum buffer's view (plain momentum SGD), else gathered into one flat array.
Guards run before anything is written: a parameter whose data, gradient or state is not as laid out, a parameter
without a gradient when laid out that has one now, or a hyperparameter that changes which state exists, gives
False (the optimizer's own step runs).
"""

from __future__ import annotations

import sys
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

from ferro.optim import SGD, Adam, AdamW

__all__ = ["compile_step"]

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))
#: optimizer -> its flat update (one per optimizer, shared by the graphs that step it)
_made: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()


def _refs(arr: Any) -> int:
    return sys.getrefcount(arr)


class _Probe:
    __slots__ = ("data",)


def _alone() -> int:
    """What :func:`_refs` counts for an array that one object's slot alone holds (the interpreter's own
    references on the way in vary between Python versions: measured, not assumed)."""
    probe = _Probe()
    probe.data = np.empty(1)
    return _refs(probe.data)


_ALONE = _alone()


def _sole(t: Any) -> bool:
    """Whether tensor ``t``'s array owns its memory and ``t`` is its only holder (no other reference, no view:
    a view holds its base)."""
    arr = t._data
    if not isinstance(arr, np.ndarray) or arr.base is not None or not arr.flags.c_contiguous:
        return False
    del arr
    return _refs(t._data) <= _ALONE


def _flatten(tensors: list[Any], dtype: Any) -> Any:
    """One flat array holding the tensors' values, each tensor's data now a view of it."""
    flat = np.empty(sum(t._data.size for t in tensors), dtype)
    o = 0
    for t in tensors:
        a = t._data
        k = a.size
        flat[o:o + k] = a.reshape(-1)
        t._data = flat[o:o + k].reshape(a.shape)
        o += k
    return flat


class _Flat:
    """One parameter group laid out flat: ``P`` its parameters, ``S[key]`` each state tensor's, ``T`` scratch."""

    def __init__(self, group: dict[str, Any], members: list[Any], params: list[Any], keys: tuple[str, ...],
                 state: list[dict[str, Any]]) -> None:
        dtype = params[0]._data.dtype
        self.group, self.params, self.keys = group, params, keys
        self.members = members  # the group's parameters; ``params``: those laid out (they had gradients)
        self.idle = [p for p in members if all(p is not q for q in params)]  # to have no gradient at each update
        self.step: Any = None  # the step count of the group's parameters (Adam), read at each update
        self.c = dtype.type
        self.tensors = {k: [st[k] for st in state] for k in keys}
        self.P = _flatten(params, dtype)
        self.S = {k: _flatten(ts, dtype) for k, ts in self.tensors.items()}
        self.pviews = [p._data for p in params]
        self.views = {k: [t._data for t in ts] for k, ts in self.tensors.items()}
        self.T = np.empty_like(self.P)
        self.G: Any = None  # the gradients gathered, made on first need

    def gather(self, grads: list[Any]) -> Any:
        if self.G is None:
            self.G = np.empty_like(self.P)
        return np.concatenate([g.reshape(-1) for g in grads], out=self.G)


def _sgd_keys(group: dict[str, Any]) -> tuple[str, ...]:
    return ("momentum_buffer",) if group["momentum"] else ()


def _adam_keys(group: dict[str, Any]) -> tuple[str, ...]:
    return ("exp_avg", "exp_avg_sq", "max_exp_avg_sq") if group["amsgrad"] else ("exp_avg", "exp_avg_sq")


def _sgd(f: _Flat, grads: list[Any]) -> None:
    """``fused_sgd`` (not a first step) over the group's flat arrays."""
    group, c, P, T = f.group, f.c, f.P, f.T
    lr, m, d, wd = group["lr"], group["momentum"], group["dampening"], group["weight_decay"]
    nesterov, maximize = group["nesterov"], group["maximize"]
    multiply, add = np.multiply, np.add
    if m and not (wd or maximize or d or nesterov):  # b = m * b + g; p += b * -lr
        B = f.S["momentum_buffer"]
        multiply(B, c(m), out=B)
        for b, g in zip(f.views["momentum_buffer"], grads):
            add(b, g, out=b)
        add(P, multiply(B, c(-lr), out=T), out=P)
        return
    G = f.gather(grads)
    if maximize:
        np.negative(G, out=G)
    if wd:
        add(G, multiply(P, c(wd), out=T), out=G)
    g = G
    if m:
        B = f.S["momentum_buffer"]
        multiply(B, c(m), out=B)
        add(B, multiply(G, c(1 - d), out=T) if d else G, out=B)
        if nesterov:
            add(G, multiply(B, c(m), out=T), out=G)
        else:
            g = B
    add(P, multiply(g, c(-lr), out=T), out=P)


def _adam(f: _Flat, grads: list[Any]) -> None:
    """``fused_adam`` over the group's flat arrays (``f.step``: the step count, this step's included)."""
    group, c, P, T = f.group, f.c, f.P, f.T
    lr, (beta1, beta2), eps, wd = group["lr"], group["betas"], group["eps"], group["weight_decay"]
    multiply, add = np.multiply, np.add
    G = f.gather(grads)
    if group["maximize"]:
        np.negative(G, out=G)
    if group["decoupled_weight_decay"]:
        if wd:
            multiply(P, c(1 - lr * wd), out=P)
    elif wd:
        add(G, multiply(P, c(wd), out=T), out=G)
    M, V = f.S["exp_avg"], f.S["exp_avg_sq"]
    np.subtract(G, M, out=T)  # exp_avg.lerp_(g, 1 - beta1)
    add(M, multiply(T, c(1 - beta1), out=T), out=M)
    multiply(V, c(beta2), out=V)  # exp_avg_sq = beta2 * exp_avg_sq + g * g * (1 - beta2)
    multiply(G, G, out=T)
    add(V, multiply(T, c(1 - beta2), out=T), out=V)
    if group["amsgrad"]:
        V = np.maximum(f.S["max_exp_avg_sq"], V, out=f.S["max_exp_avg_sq"])
    step = f.step
    step_size = lr / (1 - beta1 ** step)
    bias_correction2_sqrt = (1 - beta2 ** step) ** 0.5
    np.sqrt(V, out=T)
    add(np.divide(T, c(bias_correction2_sqrt), out=T), c(eps), out=T)
    add(P, multiply(np.divide(M, T, out=T), c(-step_size), out=T), out=P)


class _Kind:
    """What the flat update of one optimizer class needs: its state keys, a step count or not, its update."""

    def __init__(self, kernel: str, keys: Callable[[dict[str, Any]], tuple[str, ...]], counts: bool,
                 update: Callable[[_Flat, list[Any]], None]) -> None:
        self.kernel, self.keys, self.counts, self.update = kernel, keys, counts, update


_SGD = _Kind("fused_sgd", _sgd_keys, False, _sgd)
_ADAM = _Kind("fused_adam", _adam_keys, True, _adam)
#: The optimizers taken (exactly these classes: a subclass may change the update).
KINDS = {SGD: _SGD, Adam: _ADAM, AdamW: _ADAM}


class FlatStep:
    """``update()`` of one optimizer over flat arrays (see the module's docstring)."""

    def __init__(self, opt: Any, kind: _Kind, kernel: Callable[..., Any]) -> None:
        self.opt, self.kind, self.kernel = opt, kind, kernel
        self.flats: list[_Flat] | None = None
        self.tries = 3  # layouts tried (a capture's own references may still hold the arrays on the first)

    def _layout(self) -> list[_Flat] | None:
        opt, flats = self.opt, []
        for group in opt.param_groups:
            members = list(group["params"])
            params = [p for p in members if p._grad is not None]  # eager's step skips the others
            if not params:
                return None
            dtype = params[0]._data.dtype
            if dtype not in _FLOATS or any(p._data.dtype != dtype or not _sole(p) for p in params):
                return None
            keys = self.kind.keys(group)
            state = [opt.state.get(p) or {} for p in params]
            for p, st in zip(params, state):
                for k in keys:
                    t = st.get(k)
                    if t is None or t._data.dtype != dtype or t._data.shape != p._data.shape or not _sole(t):
                        return None
            step = state[0].get("step") if self.kind.counts else None
            if self.kind.counts and (type(step) is not float or any(st.get("step") != step for st in state)):
                return None
            flats.append(_Flat(group, members, params, keys, state))
        return flats

    def _grads(self, f: _Flat, group: dict[str, Any]) -> list[Any] | None:
        """The gradients of ``f``'s parameters, or None where the group is not as laid out."""
        members = group["params"]
        if (group is not f.group or self.kind.keys(group) != f.keys or len(members) != len(f.members)
                or group.get("fused") is False or self.opt._kernel_for(group, f.params[0]) is not self.kernel
                or any(p is not q for p, q in zip(members, f.members)) or any(p._grad is not None for p in f.idle)):
            return None
        state, grads, counts = self.opt.state, [], self.kind.counts
        step = (state.get(f.params[0]) or {}).get("step") if counts else None
        if counts and type(step) is not float:
            return None
        for j, p in enumerate(f.params):
            g = p._grad
            if p._data is not f.pviews[j] or g is None:
                return None
            ga = g._data
            if type(ga) is not np.ndarray or ga.shape != f.pviews[j].shape or ga.dtype != f.P.dtype:
                return None  # a sparse gradient, or one eager's update would refuse
            if f.keys:
                st = state.get(p)
                if st is None or (counts and st.get("step") != step):
                    return None
                for k in f.keys:
                    t = f.tensors[k][j]
                    if st.get(k) is not t or t._data is not f.views[k][j]:
                        return None
            grads.append(ga)
        f.step = step
        return grads

    def __call__(self) -> bool:
        opt = self.opt
        if self.flats is None:
            if self.tries <= 0:
                return False
            self.tries -= 1
            self.flats = self._layout()
            if self.flats is None:
                return False
        if len(opt.param_groups) != len(self.flats):
            return False
        work = []
        for group, f in zip(opt.param_groups, self.flats):
            grads = self._grads(f, group)
            if grads is None:
                return False
            work.append((f, grads))
        state = opt.state
        for f, grads in work:
            if self.kind.counts:
                f.step += 1
                for p in f.params:
                    state[p]["step"] = f.step
            with np.errstate(all="ignore"):
                self.kind.update(f, grads)
            for p in f.params:
                p._vc[0] += 1
            for ts in f.tensors.values():
                for t in ts:
                    t._vc[0] += 1
        return True


def compile_step(opt: Any, kernels: dict[str, Any]) -> Callable[[], bool] | None:
    """The flat update of optimizer ``opt`` (see the module's docstring), or None for one not taken: not one of
    :data:`KINDS`, or a device whose fused kernel for it is not this backend's (``kernels``: its kernel table)."""
    kind = KINDS.get(type(opt))
    if kind is None:
        return None
    kernel = kernels.get(kind.kernel)
    if kernel is None or getattr(kernel, "__module__", None) != "ferro_cpu._fused":
        return None
    try:
        made = _made.get(opt)
    except TypeError:
        made = None
    if made is None or made.kernel is not kernel:
        made = FlatStep(opt, kind, kernel)
        try:
            _made[opt] = made
        except TypeError:
            pass
    return made
