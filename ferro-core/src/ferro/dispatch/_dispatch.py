"""What happens off the hot path: graph recording, missing kernels, errors.

An op's fast path is ``kernel, table = device._ops[name]`` then
``table[dtype]``; a ``KeyError`` on either lands here, where the reason is
worked out: the op does not accept the dtype at all (a ``DTypeError``), the
backend refuses it, or has no kernel (decomposition, then the opt-in CPU
fallback, then ``UnsupportedOperationError``).
"""

from __future__ import annotations

import functools
import os
import threading
import warnings
from collections.abc import Callable
from typing import Any

from .._core import grad_mode as _mode
from .._core.dtypes import DType, result_type
from .._core.modes import entry
from .._core.naming import RENAMED, in_op
from .._core.node import OUT, Node
from .._core.records import REGISTRY, OpDef
from .._core.tensor import Tensor, _new, _wrap
from ..autograd._copies import track
from ..autograd._views import VIEW_OPS, refresh, view_record
from ..backends._resolve import missing_group
from ..errors import DeviceMismatchError, DTypeError, ShapeError, UnsupportedOperationError

__all__ = ["record", "record1", "record2", "record_n", "resolve", "check_devices", "shape_error", "kernel"]

_warned_fallback: set[tuple[str, str]] = set()


def record(out: Tensor, op: OpDef, inputs: tuple[Any, ...], saved: tuple[Any, ...],
           attrs: dict[str, Any] | None = None, fns: tuple[Any, ...] | None = None, kind: type[Node] = Node) -> Tensor:
    """Make ``out`` the output of a graph node of ``op`` over ``inputs``.

    Called only when grad mode is on and some input requires grad. Inputs
    that are not tensors (Python scalars, index tuples) get no edge. ``kind``:
    :class:`JointNode` where ``fns`` is one formula giving every input's gradient.
    """
    if out._dtype.category < 2:  # only floating and complex outputs carry gradients
        out._rg = False
        return out
    # One pass over the inputs, the node's slots set here (no __init__ frame).
    nxt = []
    meta = []
    partial = False  # some input gets no gradient
    for t in inputs:
        if isinstance(t, Tensor):
            if t._rg:
                gf = t.grad_fn
                if gf is None:
                    nxt.append(t)
                else:
                    if t._view is not None and gf.name in VIEW_OPS:  # a view whose base may have changed in place
                        refresh(t)
                        gf = t.grad_fn
                    nxt.append(gf)
            else:
                nxt.append(None)
                partial = True
            meta.append((t._data.shape, t._dtype))
        else:
            nxt.append(None)
            meta.append(None)
            partial = True
    name = op.name
    node = kind()
    node.name = name
    node.fns = (op.grads or _no_derivative(name, len(nxt))) if fns is None else fns
    node.next = tuple(nxt)
    node.meta = tuple(meta)
    node.attrs = attrs
    node.pre = None
    if saved:
        if partial and (uses := _SAVED_USES.get(name)) is not None:
            # keep only what the needed formula reads (as PyTorch saves)
            keep = uses[0] if nxt[1] is None else uses[1]
            saved = (saved[0] if keep[0] else None, saved[1] if keep[1] else None)
        _save(node, out, saved)
    else:
        node.saved = ()
    out.grad_fn = node
    out._rg = True
    return out


def record1(out: Tensor, op: OpDef, x: Tensor, saved: tuple[Any, ...] = (), attrs: dict[str, Any] | None = None,
            same: bool = False, fns: tuple[Any, ...] | None = None) -> Tensor:
    """:func:`record` for an op of one input, the tensor ``x``, which requires grad (grad mode on: the caller
    checked both). ``same``: the output has ``x``'s shape (an elementwise op), so where it has ``x``'s dtype too,
    the edge needs no metadata (None: the engine checks the gradient against the output's). ``fns``: the
    backward formula where it is not the op record's."""
    dt = out._dtype
    if dt.category < 2:
        out._rg = False
        return out
    gf = x.grad_fn
    if gf is not None and x._view is not None and gf.name in VIEW_OPS:  # a view whose base may have changed
        refresh(x)
        gf = x.grad_fn
    node = Node()
    node.name = op.name
    node.fns = fns or op.grads or _no_derivative(op.name, 1)
    node.next = (x,) if gf is None else (gf,)
    node.meta = _SAME1 if same and x._dtype is dt else ((x._data.shape, x._dtype),)
    node.attrs = attrs
    node.pre = None
    if not saved:
        node.saved = ()
    elif len(saved) == 1 and saved[0] is OUT:  # exp, tanh, sigmoid, relu...: _save's steps for the output alone
        vc = out._vc
        node.out = (out._data, dt, out._device, vc, vc[0])
        node.saved = saved
        node.versions = _NOT_TENSOR
    else:
        _save(node, out, saved)
    out.grad_fn = node
    out._rg = True
    return out


def record2(out: Tensor, op: OpDef, x: Any, y: Any, saved: tuple[Any, ...]) -> Tensor:
    """:func:`record` for an elementwise op of two inputs, at least one of them a tensor that requires grad
    (grad mode on: the caller checked). An input of the output's shape and dtype gets no edge metadata
    (None: the engine checks its gradient against the output's); with a Python number beside it, a tensor
    has the output's shape."""
    dt = out._dtype
    if dt.category < 2:
        out._rg = False
        return out
    if isinstance(x, Tensor):
        if x._rg:  # _edge, inlined for the usual first operand
            nx = x.grad_fn
            if nx is None:
                nx = x
            elif x._view is not None and nx.name in VIEW_OPS:  # a view whose base may have changed in place
                refresh(x)
                nx = x.grad_fn
        else:
            nx = None
        if isinstance(y, Tensor):
            ny = _edge(y) if y._rg else None
            shape = out._data.shape
            xs = x._data.shape
            ys = y._data.shape
            meta = (None if xs == shape and x._dtype is dt else (xs, x._dtype),
                    None if ys == shape and y._dtype is dt else (ys, y._dtype))
        else:
            ny = None
            meta = _SAME_X if x._dtype is dt else ((x._data.shape, x._dtype), None)
    else:
        nx = None
        ny = _edge(y)
        meta = _SAME_Y if y._dtype is dt else (None, (y._data.shape, y._dtype))
    name = op.name
    node = Node()
    node.name = name
    node.fns = op.grads or _no_derivative(name, 2)
    node.next = (nx, ny)
    node.meta = meta
    node.attrs = None
    node.pre = None
    if saved:
        if (nx is None or ny is None) and (uses := _SAVED_USES.get(name)) is not None:
            # keep only what the needed formula reads (as PyTorch saves)
            keep = uses[0] if ny is None else uses[1]
            saved = (saved[0] if keep[0] else None, saved[1] if keep[1] else None)
        _save(node, out, saved)
    else:
        node.saved = ()
    out.grad_fn = node
    out._rg = True
    return out


def record_n(out: Tensor, op: OpDef, tensors: Any, fns: tuple[Any, ...]) -> Tensor:
    """:func:`record` for an op over a sequence of tensors, some of which require grad (grad mode on: the caller
    checked), that saves nothing and whose backward formulas are ``fns`` (cat, stack)."""
    if out._dtype.category < 2:
        out._rg = False
        return out
    node = Node()
    if len(tensors) == 2:  # (the usual call: no loop, no lists)
        x, y = tensors
        nx = ny = None
        if x._rg:  # _edge, inlined
            nx = x.grad_fn
            if nx is None:
                nx = x
            elif x._view is not None and nx.name in VIEW_OPS:  # a view whose base may have changed in place
                refresh(x)
                nx = x.grad_fn
        if y._rg:
            ny = _edge(y)
        node.next = (nx, ny)
        node.meta = ((x._data.shape, x._dtype), (y._data.shape, y._dtype))
        node.name = op.name
        node.fns = fns
        node.attrs = None
        node.pre = None
        node.saved = ()
        out.grad_fn = node
        out._rg = True
        return out
    nxt = []
    meta = []
    for t in tensors:
        if t._rg:
            gf = t.grad_fn
            if gf is None:
                nxt.append(t)
            elif t._view is not None and gf.name in VIEW_OPS:  # a view whose base may have changed in place
                refresh(t)
                nxt.append(t.grad_fn)
            else:
                nxt.append(gf)
        else:
            nxt.append(None)
        meta.append((t._data.shape, t._dtype))
    node.name = op.name
    node.fns = fns
    node.next = tuple(nxt)
    node.meta = tuple(meta)
    node.attrs = None
    node.pre = None
    node.saved = ()
    out.grad_fn = node
    out._rg = True
    return out


def _edge(t: Tensor) -> Any:
    """Where the gradient of ``t``, a tensor that requires grad, goes: its node, or ``t`` itself (a leaf)."""
    gf = t.grad_fn
    if gf is None:
        return t
    if t._view is not None and gf.name in VIEW_OPS:  # a view whose base may have changed in place
        refresh(t)
        return t.grad_fn
    return gf


def _save(node: Node, out: Tensor, saved: tuple[Any, ...]) -> None:
    """Set ``node``'s saved values, with the version of each tensor among them (-1 for anything else)."""
    node.out = None
    versions = []
    for v in saved:
        if isinstance(v, Tensor):
            versions.append(v._vc[0])
        else:
            if v is OUT:  # (not ``OUT in saved``: that would compare tensors with ==)
                vc = out._vc
                node.out = (out._data, out._dtype, out._device, vc, vc[0])
            versions.append(-1)
    node.saved = saved
    node.versions = tuple(versions)


#: The versions of a node that saved one value that is no tensor (its output).
_NOT_TENSOR = (-1,)
#: The edge metadata of an elementwise op's one input of the output's shape and dtype.
_SAME1 = (None,)
#: ... of a binary op's tensor input beside a Python number.
_SAME_X, _SAME_Y = (None, None), (None, None)


#: For binary ops whose input gradients read different saved values: per input, which entries of the saved
#: tuple its formula reads. Where only one input needs a gradient, a value its formula does not read is not
#: kept, so that it is neither held in memory nor checked for in-place changes (``y = x * 2`` keeps nothing
#: of ``x``, as in PyTorch).
_SAVED_USES: dict[str, tuple[tuple[bool, ...], ...]] = {
    "mul": ((False, True), (True, False)), "div": ((False, True), (True, True)),
}


def _no_derivative(name: str, n: int) -> tuple[Callable[..., Any], ...]:
    """Backward formulas for an op without any: a clear error at backward, never a silent zero."""
    def fail(*_: Any, **__: Any) -> Any:
        raise RuntimeError(f"the derivative for '{name}' is not implemented")
    return (fail,) * n


def needs_grad(*inputs: Any) -> bool:
    """Whether an op over ``inputs`` must record a node."""
    return _mode._state.enabled and any(isinstance(t, Tensor) and t._rg for t in inputs)


def check_devices(op: str, tensors: list[Tensor] | tuple[Tensor, ...]) -> Any:
    """The one device of ``tensors``; a clear error when they differ."""
    dev = tensors[0]._device
    for t in tensors[1:]:
        if t._device is not dev:
            raise DeviceMismatchError(
                f"{op}: expected all tensors to be on the same device, but found at least two devices, "
                f"{dev} and {t._device}. Move them with .to(device) first; ferro never moves data silently.")
    return dev


def shape_error(op: str, shapes: list[Any], err: Exception, dev: Any) -> Exception:
    """The error for a kernel's ValueError: a ShapeError naming the shapes when they do not
    broadcast, else the kernel's own complaint (e.g. integers to negative powers) with the op and backend."""
    shown = ", ".join(str(list(s)) for s in shapes)
    if not _broadcastable(shapes):
        return ShapeError(f"{op}: shapes {shown} cannot be broadcast together (backend '{dev.type}' on {dev})")
    return ValueError(f"{op} on backend '{dev.type}' ({dev}) with shapes {shown}: {err}")


def _broadcastable(shapes: list[Any]) -> bool:
    ndim = max((len(s) for s in shapes), default=0)
    for i in range(1, ndim + 1):
        sizes = {s[-i] for s in shapes if len(s) >= i} - {1}
        if len(sizes) > 1:
            return False
    return True


def kernel(dev: Any, name: str) -> Callable[..., Any]:
    """A raw kernel of ``dev`` by name (primitives such as cast, copy_, getitem)."""
    try:
        return dev._kernels[name]
    except KeyError:
        raise UnsupportedOperationError(name, "any", dev.type, dev,
                                        reason=f"the backend has no such kernel{missing_group((name,))}",
                                        others=_others_with(name)) from None
    except TypeError:  # the device was never bound
        dev.backend  # noqa: B018
        return dev._kernels[name]


def _others_with(name: str) -> list[str]:
    from ..backends import _registry
    out = []
    for bname, b in _registry.backends().items():
        try:
            if b.availability() and name in b._device(None)._kernels:
                out.append(bname)
        except Exception:  # a backend that fails here is not a candidate
            continue
    return sorted(out)


def resolve(op: OpDef, dev: Any, dtype: DType) -> tuple[Callable[..., Any] | None, DType, DType]:
    """Why the fast path missed: returns ``(kernel, compute, result)`` or raises.

    ``kernel`` is None when the op must run by its decomposition or on the
    fallback device (the caller handles that through :func:`run_elsewhere`).
    """
    cr = op.table.get(dtype)
    if cr is None:
        raise DTypeError(f"{op.name}: not defined for dtype {dtype}; it takes {op.dtype_words}")
    entry = dev._ops.get(op.name)
    if entry is None and _accepted.op is op:  # its kernel checks arguments and took these (run_elsewhere)
        _accepted.op = None
        entry = dev._checked[op.name][:2]
    if entry is not None:
        k, table = entry
        if dtype in table:
            return k, *table[dtype]
        if cr[0] not in dev._dtypes:
            raise _unsupported(op, dtype, dev, f"the device does not support {cr[0]}")
        if fallback_enabled() and dev.type != "cpu":  # a refused dtype is a missing kernel: run_elsewhere
            return None, cr[0], cr[1]
        raise _unsupported(op, dtype, dev, "the backend's kernel refuses this dtype")
    return None, cr[0], cr[1]


class _Accepted(threading.local):
    #: the op whose kernel's argument check passed, so that the next :func:`resolve` of it binds the kernel
    op: OpDef | None = None


_accepted = _Accepted()


def _refusal(op: OpDef, dev: Any, dtype: DType, args: tuple[Any, ...], kwargs: dict[str, Any]) -> str | None:
    """Whether ``dev``'s kernel for ``op``, which checks its arguments (``Backend.argument_checks``), takes
    ``args``: None where it does, else why not ("" where no check applies)."""
    checked = dev._checked.get(op.name)
    if checked is None or dtype not in checked[1]:
        return ""
    if _accepted.op is op:  # accepted, yet the op came back here without binding its kernel: do not loop
        _accepted.op = None
        return ""
    refused = checked[2].check(*args, **kwargs)
    if refused is None:
        return None
    arg, why = refused
    return f"its kernel does not take this value of argument '{arg}': {why}"


def run_elsewhere(op: OpDef, dev: Any, dtype: DType, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """Run ``op`` without a kernel on ``dev``: its decomposition, else the opt-in CPU fallback. Where the kernel
    is there but checks its arguments, the kernel if it takes them."""
    refused: str | None = ""
    if dev._checked:
        refused = _refusal(op, dev, dtype, args, kwargs)
        if refused is None:  # the kernel takes them: run the op again, its next resolve binding the kernel
            _accepted.op = op
            try:
                return (op.fn or public_function(op))(*args, **kwargs)
            finally:
                _accepted.op = None
    if op.decomposition is not None:
        try:
            return op.decomposition(*args, **kwargs)
        except RENAMED as e:
            in_op(op.name, e)
            raise
    if fallback_enabled() and dev.type != "cpu":
        warn_fallback(op.name, dev, refused or "")
        moved = tuple(a.to("cpu") if isinstance(a, Tensor) else a for a in args)
        result = op.fn(*moved, **kwargs)  # type: ignore[misc]
        if isinstance(result, tuple):
            return type(result)(*(r.to(dev) if isinstance(r, Tensor) else r for r in result))
        return result.to(dev)
    raise _unsupported(op, dtype, dev, refused or f"the backend has no kernel for it{missing_group(op.kernels)}")


def fallback_enabled() -> bool:
    """Whether ``FERRO_FALLBACK=cpu`` is set (read at each missing kernel, never on the hot path)."""
    return os.environ.get("FERRO_FALLBACK", "").strip().lower() == "cpu"
def reported_as(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn``, the public function of op ``name`` (written in other ops and kernels, its first argument a
    tensor), with an op or kernel it misses reported under ``name``: the op the user called, the missing part
    and its reason (an optional group of the contract, a dtype) in the message."""

    @functools.wraps(fn)
    def wrapper(input: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return fn(input, *args, **kwargs)
        except UnsupportedOperationError as e:
            if e.op == name or not isinstance(input, Tensor):
                raise
            raise _unsupported(REGISTRY[name], input._dtype, input._device, f"needs '{e.op}': {e.reason}") from None
    return wrapper


def warn_fallback(op: str, dev: Any, why: str = "") -> None:
    """Warn, once per op and backend, that ``op`` runs on the CPU backend instead of ``dev`` (``why``: the
    reason where it is not a missing kernel)."""
    key = (op, dev.type)
    if key not in _warned_fallback:
        _warned_fallback.add(key)
        what = f"cannot take these arguments ({why})" if why else "has no kernel"
        warnings.warn(f"op '{op}' {what} on backend '{dev.type}'; running it on the CPU backend because "
                      "FERRO_FALLBACK=cpu (data moves to the host and back)", RuntimeWarning, stacklevel=4)


def _unsupported(op: OpDef, dtype: DType, dev: Any, reason: str) -> UnsupportedOperationError:
    from ..backends import _registry
    others = []
    for bname, b in _registry.backends().items():
        if bname == dev.type:
            continue
        try:
            if b.supports(op.name, dtype):
                others.append(bname)
        except Exception:  # a failing backend is not a candidate
            continue
    return UnsupportedOperationError(op.name, dtype, dev.type, dev, reason=reason, others=sorted(others))


def kernel_for(op: OpDef, dev: Any, dtype: DType) -> Callable[..., Any] | None:
    """The kernel of a non-elementwise op for ``dtype`` on ``dev``; None means run elsewhere."""
    try:
        k, table = dev._ops[op.name]
        if dtype in table:
            return k
    except (KeyError, TypeError):
        dev.backend  # binds the device  # noqa: B018
    return resolve(op, dev, dtype)[0]


def finish(op: OpDef, data: Any, dtype: DType, dev: Any, inputs: tuple[Any, ...], saved: tuple[Any, ...] = (),
           attrs: dict[str, Any] | None = None, *, view_of: Tensor | None = None,
           fns: tuple[Any, ...] | None = None) -> Tensor:
    """Wrap a kernel's result; share the version counter of a view; record the node."""
    r = _wrap(data, dtype, dev)
    if view_of is not None:
        r._vc = vc = view_of._vc
        # a tensor that is no view has neither a view record nor a base
        parent = view_of._view
        base = view_of if parent is None else view_of._base
        r._base = view_of if base is None else base
        copied = op.name in dev._copies
        r._view = view_record(view_of, op.name, attrs, data.shape, vc[0], copied, parent)
        if copied:  # the backend's kernel returned a copy: core keeps it in step with its base
            track(r)
    if _mode._state.enabled:
        if len(inputs) == 1 and fns is None:
            x = inputs[0]
            if isinstance(x, Tensor) and x._rg:
                record1(r, op, x, saved, attrs)
            return r
        for t in inputs:
            if isinstance(t, Tensor) and t._rg:
                record(r, op, inputs, saved, attrs, fns)
                break
    return r


def view_result(op: OpDef, data: Any, x: Tensor, attrs: dict[str, Any]) -> Tensor:
    """``finish`` for a view op of one tensor ``x`` whose result has ``x``'s dtype (permute, reshape, view,
    expand, basic indexing): the same result, version counter, view record and node, in fewer steps."""
    r = _new(Tensor)
    r._data = data
    r._dtype = x._dtype
    r._device = dev = x._device
    r._rg = False
    r.grad_fn = r._grad = r._hooks = r._retains = None
    r._vc = vc = x._vc
    name = op.name
    copied = name in dev._copies
    parent = x._view
    if parent is None:
        r._base = x
        r._view = [((name, attrs, data.shape),), vc[0], copied]
    else:
        base = x._base
        r._base = x if base is None else base
        r._view = [parent[0] + ((name, attrs, data.shape),), vc[0], copied or parent[2]]
    if copied:  # the backend's kernel returned a copy: core keeps it in step with its base
        track(r)
    if x._rg and _mode._state.enabled:
        fns = op.grads
        if not fns or r._dtype.category < 2:
            return record1(r, op, x, (), attrs)
        # record1's steps for a view op's node (nothing saved), inlined
        gf = x.grad_fn
        if gf is not None and parent is not None and gf.name in VIEW_OPS:  # a view whose base may have changed
            refresh(x)
            gf = x.grad_fn
        node = Node()
        node.name = name
        node.fns = fns
        node.next = (x,) if gf is None else (gf,)
        node.meta = ((x._data.shape, x._dtype),)
        node.attrs = attrs
        node.pre = None
        node.saved = ()
        r.grad_fn = node
        r._rg = True
    return r


def call(op: OpDef, *args: Any, **attrs: Any) -> Tensor:
    """Run ``op`` on ``args``: the device's kernel for it, else its decomposition (or the opt-in fallback).

    The generic path of an op defined by its record alone (a plugin's op): tensors among ``args`` must
    share a device; their promoted dtype picks the row of the op's dtype table; the kernel receives
    the native arrays (cast to the compute dtype) and Python values in their places, and ``attrs`` as
    keywords; the result is recorded for autograd with the record's backward formulas.
    """
    tensors = [a for a in args if isinstance(a, Tensor)]
    if not tensors:
        raise TypeError(f"{op.name}(): expected at least one Tensor argument, got "
                        f"({', '.join(type(a).__name__ for a in args)})")
    dev = check_devices(op.name, tensors)
    dims = [t._dtype for t in tensors if t._data.ndim]
    dtype = result_type(dims, [t._dtype for t in tensors if not t._data.ndim],
                        [a for a in args if not isinstance(a, Tensor)])
    k = kernel_for(op, dev, dtype)
    if k is None:
        return run_elsewhere(op, dev, dtype, args, attrs)
    compute, out = op.table[dtype]  # as bound (kernel_table keeps the op's own rows)
    cast = dev._kernels["cast"]
    natives = [(a._data if a._dtype is compute else cast(a._data, compute)) if isinstance(a, Tensor) else a
               for a in args]
    saved = tuple(OUT if s is OUT else args[s] for s in op.saves)
    return finish(op, k(*natives, **attrs), out, dev, args, saved, attrs or None)


def public_function(op: OpDef) -> Callable[..., Tensor]:
    """The public function of ``op`` by :func:`call` (what ``ferro.ops.<name>`` is for a plugin's op): its
    dispatch entry."""
    def fn(*args: Any, **attrs: Any) -> Tensor:
        return call(op, *args, **attrs)
    fn.__name__ = fn.__qualname__ = op.name
    fn.__doc__ = op.doc
    return entry(op, fn)


def scalar_tensor(value: Any, dtype: DType, dev: Any) -> Tensor:
    """A 0-d tensor holding a Python scalar, on ``dev``."""
    return _wrap(dev._kernels["full"]((), value, dtype), dtype, dev)


