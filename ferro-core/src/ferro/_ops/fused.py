"""Fused kernels of composite ops: ordinary kernels of ordinary registry ops, run instead of the decomposition.

A composite op (``gelu``, ``softmax``, ``layer_norm``, ``cross_entropy``...)
is written in other ops, so every backend runs it. Its record also names a
forward and a backward kernel (:data:`KERNELS`: ``softmax`` and
``softmax_backward``, ``conv2d_forward`` and ``conv2d_backward``...), the
dtypes they take, and a rule mapping the op's arguments onto them
(:func:`attach`). They are bound like every kernel (``bind_tables``), so
``device._ops[op]`` holds them where the backend has both, and the
capability queries and ``ferro.backends.explain`` report them. :func:`run`
then runs them instead of the decomposition: the
forward kernel once, and on ``backward()`` the backward kernel once. When the
backward pass is itself recorded (``create_graph=True``), the gradient is
taken through the decomposition instead, so second and higher derivatives
stay exact. Each rule below maps an op's arguments onto its kernels
(signatures in ``docs/plugins.md``); an argument a rule does not handle
(a float target for cross_entropy, label smoothing, a weight that requires
grad) leaves the op to its decomposition.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from .._core import grad_mode as _mode
from .._core.dtypes import bfloat16, float16, float32, float64
from .._core.host import from_numpy_dtype
from .._core.host import np as host_np
from .._core.layouts import LayoutTensor
from .._core.modes import entry
from .._core.node import OUT, JointNode
from .._core.records import REGISTRY, OpDef
from .._core.tensor import Tensor, _new, _wrap
from ..dispatch._dispatch import record, record1

__all__ = ["run", "attach", "fusable", "KERNELS", "FUSED_OPS"]

#: Input dtypes the fused kernels take (others run the decomposition). Kernels compute float16 and bfloat16
#: in float32 and round their results once.
_DTYPES = frozenset({float16, bfloat16, float32, float64})


def _native_dtype(data: Any) -> Any:
    """ferro's dtype of a kernel's output array."""
    native = data.dtype
    dtype = _BY_NATIVE.get(native)
    if dtype is None:  # once per native dtype: str() and NumPy's dtype() are microseconds per call
        dtype = _BY_NATIVE[native] = from_numpy_dtype(host_np().dtype(str(native)))
    return dtype


def _native_wrap(data: Any, dev: Any) -> Tensor:
    """A tensor around a kernel's output, of the dtype the array itself has (kernels may compute wider)."""
    return _wrap(data, _native_dtype(data), dev)


_BY_NATIVE: dict[Any, Any] = {}  # a kernel output's dtype -> ferro's


def _grad_through(decomposition: Callable[..., Tensor], inputs: tuple[Any, ...], call: Callable[..., Any],
                  grad: Tensor) -> tuple[Any, ...]:
    """Gradients of ``decomposition`` at ``inputs`` (recorded, for double backward), for the tensors among them."""
    from ..autograd import grad as autograd_grad
    wanted = [a for a in inputs if isinstance(a, Tensor) and a._rg]
    out = call(decomposition)
    got = iter(autograd_grad([out], wanted, [grad], create_graph=True, allow_unused=True))
    return tuple(next(got) if (isinstance(a, Tensor) and a._rg) else None for a in inputs)


# -- elementwise activations: k(x, *params), k_backward(grad, x, *params) ------------------------------


def _elementwise_grad(g: Tensor, x: Tensor, *, kernels: Any, params: tuple[Any, ...], kwargs: dict[str, Any],
                      decomposition: Callable[..., Tensor]) -> Tensor:
    """x's gradient: the backward kernel once, or (create_graph) through the decomposition."""
    if _mode._state.enabled:  # create_graph: differentiate the decomposition, exact to any order
        return _grad_through(decomposition, (x,), lambda f: f(x, *params, **kwargs), g)[0]
    return _native_wrap(kernels[1](g._data, x._data, *params, **kwargs), x._device)


def _elementwise(name: str, kernels: tuple[Any, Any], decomposition: Callable[..., Tensor], x: Any,
                 args: tuple[Any, ...], kwargs: dict[str, Any]) -> Tensor | None:
    if not isinstance(x, Tensor) or any(isinstance(a, Tensor) for a in (*args, *kwargs.values())):
        return None
    y = _native_wrap(kernels[0](x._data, *args, **kwargs), x._device)
    if not (x._rg and _mode._state.enabled):
        return y
    # one node over x (no Function, as softmax's)
    return record1(y, REGISTRY[name], x, (x,), {"kernels": kernels, "params": args, "kwargs": kwargs,
                                                "decomposition": decomposition}, False, (_elementwise_grad,))


def _by_output_grad(g: Tensor, y: Tensor, *, kernels: Any, params: tuple[Any, ...], kwargs: dict[str, Any],
                    slope: float) -> Tensor:
    """The gradient of an activation that its output decides as well as its input (leaky_relu with a slope >= 0:
    ``y > 0`` where ``x > 0``): the backward kernel gets the output, as PyTorch's, so that ``inplace=True`` (the
    module writes the result into its input) leaves nothing stale for the backward."""
    if _mode._state.enabled:  # create_graph: linear in g, piecewise constant in x (a zero second derivative)
        return g * (y > 0).to(g._dtype) * (1 - slope) + g * slope
    return _native_wrap(kernels[1](g._data, y._data, *params, **kwargs), y._device)


def _leaky_relu(name: str, kernels: tuple[Any, Any], decomposition: Callable[..., Tensor], x: Any,
                args: tuple[Any, ...], kwargs: dict[str, Any]) -> Tensor | None:
    slope = kwargs.get("negative_slope", args[0] if args else 0.01)
    if (len(args) > 1 or set(kwargs) - {"negative_slope"} or isinstance(slope, bool)
            or not isinstance(slope, (int, float))):
        return None
    if slope < 0:
        return _elementwise(name, kernels, decomposition, x, args, kwargs)
    y = _native_wrap(kernels[0](x._data, *args, **kwargs), x._device)
    if not (x._rg and _mode._state.enabled):
        return y
    # one node that keeps the output (no Function: its bookkeeping cost more than the kernel at DCGAN's sizes)
    return record(y, REGISTRY[name], (x,), (OUT,),
                  {"kernels": kernels, "params": args, "kwargs": kwargs, "slope": float(slope)}, (_by_output_grad,))


# -- softmax / log_softmax: k(x, dim), k_backward(grad, y, dim) ------------------------------------------


def _softmax_grad(g: Tensor, x: Tensor, y: Tensor, *, kernels: Any, dim: int,
                  decomposition: Callable[..., Tensor]) -> Tensor:
    """The input's gradient: the backward kernel once, or (create_graph) through the decomposition."""
    if _mode._state.enabled:
        return _grad_through(decomposition, (x,), lambda f: f(x, dim), g)[0]
    return _native_wrap(kernels[1](g._data, y._data, dim), x._device)


def _softmax(name: str, kernels: tuple[Any, Any], decomposition: Callable[..., Tensor], x: Any,
             args: tuple[Any, ...], kwargs: dict[str, Any]) -> Tensor | None:
    dim = kwargs.pop("dim", args[0] if args else -1)
    if kwargs or len(args) > 1 or not isinstance(dim, int) or not -x.ndim <= dim < x.ndim:
        return None  # (a dim out of range: the decomposition's error)
    y = _native_wrap(kernels[0](x._data, dim), x._device)
    if not (x._rg and _mode._state.enabled):
        return y
    # one node of the op, saving the input and the output (as an alias: no reference cycle through y's node,
    # and an in-place change to y is caught at backward)
    return record(y, REGISTRY[name], (x,), (x, OUT), {"kernels": kernels, "dim": dim, "decomposition": decomposition},
                  (_softmax_grad,))


# -- layer_norm: forward -> (y, mean, rstd); backward(grad, x, shape, weight, mean, rstd) -> (dx, dw, db) --


def _layer_norm_grads(g: Tensor, x: Tensor, weight: Tensor | None, bias: Tensor | None, *, kernels: Any,
                      shape: tuple[int, ...], eps: float, decomposition: Callable[..., Tensor], mean: Any,
                      rstd: Any) -> tuple[Tensor | None, ...]:
    """The gradients of x, weight and bias: the backward kernel once, or (create_graph) through the
    decomposition."""
    if _mode._state.enabled:
        return _grad_through(decomposition, (x, weight, bias), lambda f: f(x, shape, weight, bias, eps), g)
    dx, dw, db = kernels[1](g._data, x._data, shape, None if weight is None else weight._data, mean, rstd)
    dev = x._device
    return (_native_wrap(dx, dev), None if weight is None else _native_wrap(dw, dev),
            None if bias is None else _native_wrap(db, dev))


_LN_ARGS = ("normalized_shape", "weight", "bias", "eps")
_LN_NAMES = frozenset(_LN_ARGS)
_LN_DEFAULTS = (None, None, 1e-5)  # (weight, bias, eps)


def _layer_norm(name: str, kernels: tuple[Any, Any], decomposition: Callable[..., Tensor], x: Any,
                args: tuple[Any, ...], kwargs: dict[str, Any]) -> Tensor | None:
    if len(args) > len(_LN_ARGS):
        return None
    bound = dict(zip(_LN_ARGS, args))
    if kwargs:
        if not kwargs.keys() <= _LN_NAMES or kwargs.keys() & bound.keys():
            return None
        bound.update(kwargs)
    if "normalized_shape" not in bound:
        return None
    ns = bound["normalized_shape"]
    shape = (ns,) if isinstance(ns, int) else tuple(ns)
    weight, bias = bound.get("weight"), bound.get("bias")
    xs = x._data.shape
    if len(shape) > len(xs) or xs[len(xs) - len(shape):] != shape:
        return None  # the decomposition raises the ShapeError
    for t in (weight, bias):  # a wrong size: the decomposition's error, not a bad read
        if t is not None and (not isinstance(t, Tensor) or t._dtype is not x._dtype or t._device is not x._device
                              or t._data.shape != shape):
            return None
    eps = float(bound.get("eps", 1e-5))
    y, mean, rstd = kernels[0](x._data, shape, None if weight is None else weight._data,
                               None if bias is None else bias._data, eps)
    y = _native_wrap(y, x._device)
    if not (_mode._state.enabled and (x._rg or (weight is not None and weight._rg) or (bias is not None and bias._rg))):
        return y  # nothing to record: the kernel alone
    # one node over x, weight and bias whose backward runs the kernel once (no Function, as linear's)
    return record(y, REGISTRY[name], (x, weight, bias), (x, weight, bias),
                  {"kernels": kernels, "shape": shape, "eps": eps, "decomposition": decomposition, "mean": mean,
                   "rstd": rstd}, (_layer_norm_grads,), JointNode)


# -- cross_entropy with class indices: forward -> per-row (loss, lse, target weight) -------------------


def _cross_entropy_grad(g: Tensor, x: Tensor, target: Tensor, weight: Tensor | None, *, kernels: Any,
                        ignore_index: int, reduction: str, lse: Any, total: Tensor | None,
                        decomposition: Callable[..., Tensor]) -> Tensor:
    """x's gradient: the backward kernel once, or (create_graph) through the decomposition."""
    if _mode._state.enabled:
        return _grad_through(decomposition, (x,), lambda f: f(x, target, weight, ignore_index, reduction), g)[0]
    per_row = g.reshape(-1)
    if total is not None:  # 'mean': divided in the kernels' compute dtype (float32 for 16-bit x): one rounding
        per_row = per_row.to(total._dtype) / total
    dx = kernels[1](per_row._data, x._data, target._data, None if weight is None else weight._data, lse, ignore_index)
    return _native_wrap(dx, x._device)


def _reduced_loss(loss: Any, roww: Any, reduction: str, dtype: Any, dev: Any) -> tuple[Tensor, Tensor | None]:
    """(the 'sum' or 'mean' loss in ``dtype``, the total weight for 'mean' else None) from the forward kernel's
    per-row losses and weights: summed in the kernels' compute dtype (float32 for 16-bit x), divided, then
    rounded once. The device's sum / div / cast kernels straight, without a core op each (the values
    those ops give, a few microseconds less per call at a classifier's batch)."""
    kernels = dev._kernels
    dt = _native_dtype(loss)
    add = kernels["sum"]
    y = add(loss, None, False, dt)
    total = None
    if reduction == "mean":
        total = add(roww, None, False, dt)
        y = kernels["div"](y, total)
        total = _wrap(total, dt, dev)
    if dt is not dtype:
        y = kernels["cast"](y, dtype)
    return _wrap(y, dtype, dev), total


_CE_ARGS = ("target", "weight", "ignore_index", "reduction", "label_smoothing")
_CE_NAMES = frozenset(_CE_ARGS)


def _cross_entropy(name: str, kernels: tuple[Any, Any], decomposition: Callable[..., Tensor], x: Any,
                   args: tuple[Any, ...], kwargs: dict[str, Any]) -> Tensor | None:
    if len(args) > len(_CE_ARGS):
        return None
    bound = dict(zip(_CE_ARGS, args))
    if kwargs:
        if kwargs.keys() - _CE_NAMES or kwargs.keys() & bound.keys():
            return None
        bound.update(kwargs)
    target, weight = bound.get("target"), bound.get("weight")
    reduction = bound.get("reduction", "mean")
    xs = x._data.shape
    rows_shape = (xs[0], *xs[2:]) if len(xs) > 1 else ()
    if (not isinstance(target, Tensor) or target._dtype.kind not in "iu" or bound.get("label_smoothing", 0.0)
            or reduction not in ("mean", "sum", "none") or target._device is not x._device or not xs
            or target._data.shape != rows_shape):
        return None
    if weight is not None and (not isinstance(weight, Tensor) or weight._rg or weight._dtype is not x._dtype
                               or weight._device is not x._device
                               or weight._data.shape != (xs[1] if len(xs) > 1 else xs[0],)):
        return None  # the decomposition raises for a weight of the wrong shape
    ignore_index = int(bound.get("ignore_index", -100))
    dev = x._device
    loss, lse, roww = kernels[0](x._data, target._data, None if weight is None else weight._data, ignore_index)
    total = None
    if reduction == "none":
        y = _native_wrap(loss, dev).reshape(rows_shape)
        if y._dtype is not x._dtype:
            y = y.to(x._dtype)
    else:
        y, total = _reduced_loss(loss, roww, reduction, x._dtype, dev)
    if not (x._rg and _mode._state.enabled):
        return y
    # one node over x, as softmax's (no Function: its bookkeeping cost more than the kernels at 64 x 10)
    return record(y, REGISTRY[name], (x,), (x, target, weight),
                  {"kernels": kernels, "ignore_index": ignore_index, "reduction": reduction, "lse": lse,
                   "total": total, "decomposition": decomposition}, (_cross_entropy_grad,))


# -- nll_loss: forward(x, target, weight|None, ignore_index, reduction) -> (output, total_weight), the targets
#    checked there once; backward(grad, x, target, weight|None, ignore_index, reduction, total_weight) -> dx.
#    One node over x (a weight that requires grad, a float target: the decomposition). -----------------------


def _nll_grad(g: Tensor, x: Tensor, target: Tensor, weight: Tensor | None, *, kernels: Any, ignore_index: int,
              reduction: str, total: Any, decomposition: Callable[..., Tensor]) -> Tensor:
    """x's gradient: the backward kernel once, or (create_graph) through the decomposition."""
    if _mode._state.enabled:
        return _grad_through(decomposition, (x,), lambda f: f(x, target, weight, ignore_index, reduction), g)[0]
    dx = kernels[1](g._data, x._data, target._data, None if weight is None else weight._data, ignore_index,
                    reduction, total)
    return _native_wrap(dx, x._device)


_NLL_ARGS = ("target", "weight", "ignore_index", "reduction")
_NLL_NAMES = frozenset(_NLL_ARGS)


def _nll_loss(name: str, kernels: tuple[Any, Any], decomposition: Callable[..., Tensor], x: Any,
              args: tuple[Any, ...], kwargs: dict[str, Any]) -> Tensor | None:
    if len(args) > len(_NLL_ARGS):
        return None
    bound = dict(zip(_NLL_ARGS, args))
    if kwargs:
        if kwargs.keys() - _NLL_NAMES or kwargs.keys() & bound.keys():
            return None
        bound.update(kwargs)
    target, weight = bound.get("target"), bound.get("weight")
    reduction, ignore_index = bound.get("reduction", "mean"), bound.get("ignore_index", -100)
    xs = x._data.shape
    if (not isinstance(target, Tensor) or target._dtype.kind not in "iu" or target._device is not x._device
            or reduction not in ("mean", "sum", "none") or not xs or type(ignore_index) is not int
            or target._data.shape != ((xs[0], *xs[2:]) if len(xs) > 1 else ())):
        return None  # the decomposition's result, or its error
    if weight is not None and (not isinstance(weight, Tensor) or weight._rg or weight._dtype is not x._dtype
                               or weight._device is not x._device
                               or weight._data.shape != (xs[1] if len(xs) > 1 else xs[0],)):
        return None
    out, total = kernels[0](x._data, target._data, None if weight is None else weight._data, ignore_index,
                            reduction)
    y = _native_wrap(out, x._device)
    if not (x._rg and _mode._state.enabled):
        return y
    return record(y, REGISTRY[name], (x,), (x, target, weight),
                  {"kernels": kernels, "ignore_index": ignore_index, "reduction": reduction, "total": total,
                   "decomposition": decomposition}, (_nll_grad,))


# -- binary_cross_entropy: forward(x, target, weight|None, reduction) -> the loss (0-d for 'mean' / 'sum');
#    backward(grad, x, target, weight|None, reduction) -> dx. One node over x, float32 / float64, target and
#    weight constants of x's dtype, shape and device (a weight broadcast to x's shape without growing it);
#    anything else (a target that requires grad, a bad shape) runs the decomposition. -----------------------


def _bce_grad(g: Tensor, x: Tensor, target: Tensor, weight: Tensor | None, *, kernels: Any, reduction: str,
              decomposition: Callable[..., Tensor]) -> Tensor:
    """x's gradient: the backward kernel once, or (create_graph) through the decomposition."""
    if _mode._state.enabled:
        return _grad_through(decomposition, (x,), lambda f: f(x, target, weight, reduction), g)[0]
    return _wrap(kernels[1](g._data, x._data, target._data, None if weight is None else weight._data, reduction),
                 x._dtype, x._device)


_BCE_ARGS = ("target", "weight", "reduction")


def _binary_cross_entropy(name: str, kernels: tuple[Any, Any], decomposition: Callable[..., Tensor], x: Any,
                          args: tuple[Any, ...], kwargs: dict[str, Any]) -> Tensor | None:
    if len(args) > len(_BCE_ARGS):
        return None
    bound = dict(zip(_BCE_ARGS, args))
    if kwargs:
        if kwargs.keys() - set(_BCE_ARGS) or kwargs.keys() & bound.keys():
            return None
        bound.update(kwargs)
    target, weight, reduction = bound.get("target"), bound.get("weight"), bound.get("reduction", "mean")
    xs = x._data.shape
    if (not isinstance(target, Tensor) or target._rg or target._dtype is not x._dtype
            or target._device is not x._device or target._data.shape != xs or isinstance(x, LayoutTensor)
            or isinstance(target, LayoutTensor) or reduction not in ("mean", "sum", "none")):
        return None
    if weight is not None:
        if (not isinstance(weight, Tensor) or isinstance(weight, LayoutTensor) or weight._rg
                or weight._dtype is not x._dtype or weight._device is not x._device):
            return None
        ws = weight._data.shape
        if len(ws) > len(xs) or any(w not in (1, n) for w, n in zip(reversed(ws), reversed(xs))):
            return None  # a weight that grows the loss's shape: the decomposition's broadcast
    loss = kernels[0](x._data, target._data, None if weight is None else weight._data, reduction)
    y = _wrap(loss, x._dtype, x._device)
    if not (x._rg and _mode._state.enabled):
        return y
    return record(y, REGISTRY[name], (x,), (x, target, weight),
                  {"kernels": kernels, "reduction": reduction, "decomposition": decomposition}, (_bce_grad,))


# -- linear: forward(x, weight, bias|None) -> y; backward(grad, x, weight, needs) -> (dx, dweight, dbias), each
#    None where needs says so. One node instead of three (weight.mT, matmul, + bias). Floating tensors of one
#    dtype and device (16-bit ones, autocast's, computed in float32 and rounded once where the backend does so),
#    weight 2-D, bias 1-D of out_features; anything else (a sparse or quantized weight, a shape the
#    decomposition rejects) runs the decomposition. ---------------------------------------------------------


def _linear_backward(g: Tensor, x: Tensor, weight: Tensor, bias: Tensor | None, *, needs: tuple[bool, ...],
                     kernels: Any, decomposition: Callable[..., Tensor]) -> tuple[Any, ...]:
    if _mode._state.enabled:  # create_graph: through the decomposition (exact to any order)
        return _grad_through(decomposition, (x, weight, bias), lambda f: f(x, weight, bias), g)
    grads = kernels[1](g._data, x._data, weight._data, needs)
    dt, dev = x._dtype, x._device
    return tuple(None if d is None else _wrap(d, dt, dev) for d in grads)


def _linear(name: str, kernels: tuple[Any, Any], decomposition: Callable[..., Tensor], x: Any,
            args: tuple[Any, ...], kwargs: dict[str, Any]) -> Tensor | None:
    if not kwargs and 0 < len(args) <= 2:  # linear(x, w) and linear(x, w, b)
        weight, bias = args[0], args[1] if len(args) == 2 else None
    else:
        names = ("weight", "bias")
        bound = dict(zip(names, args, strict=False)) | kwargs
        if len(args) > len(names) or set(bound) - set(names):
            return None
        weight, bias = bound.get("weight"), bound.get("bias")
    if (not isinstance(weight, Tensor) or isinstance(weight, LayoutTensor) or isinstance(x, LayoutTensor)
            or weight._dtype is not x._dtype or weight._device is not x._device):
        return None
    xs, ws = x._data.shape, weight._data.shape
    if len(ws) != 2 or not xs or xs[-1] != ws[1] or 0 in xs or 0 in ws:
        return None  # the decomposition's result, or its ShapeError
    if bias is not None and (not isinstance(bias, Tensor) or isinstance(bias, LayoutTensor)
                             or bias._dtype is not x._dtype or bias._device is not x._device
                             or bias._data.shape != (ws[0],)):
        return None
    y = _wrap(kernels[0](x._data, weight._data, None if bias is None else bias._data), x._dtype, x._device)
    needs = (x._rg, weight._rg, bias is not None and bias._rg)
    if not (_mode._state.enabled and (needs[0] or needs[1] or needs[2])):
        return y
    return record(y, REGISTRY[name], (x, weight, bias), (x, weight, bias),
                  {"kernels": kernels, "decomposition": decomposition, "needs": needs}, (_linear_backward,), JointNode)


def _plain(t: Any) -> bool:
    """Whether ``t`` is a dense tensor (a Parameter too; not a layout tensor)."""
    return type(t) is Tensor or (isinstance(t, Tensor) and not isinstance(t, LayoutTensor))


def _linear_front(op: OpDef, public: Callable[..., Tensor]) -> Callable[..., Tensor]:
    """The public ``linear``: the call :func:`_linear` would hand to the fused kernels (dense tensors of one
    dtype and device that the kernels take, shapes that fit, no layer on) runs them here, its node recorded
    here too, without the frames of the entry, the rule and :func:`run`; any other call (a layer on, keywords,
    anything :func:`_linear` would not take) goes to ``public``, the op's entry."""
    name, registered = op.name, REGISTRY[op.name]
    decomposition = public.__wrapped__.__wrapped__  # type: ignore[attr-defined]  # (fusable's fn, as _linear's)

    def linear(x: Tensor, weight: Tensor, bias: Tensor | None = None, **kwargs: Any) -> Tensor:
        try:
            dt, dev = x._dtype, x._device
            kernels, dtypes = dev._fast[name]  # (a layer on: a KeyError)
            xd, wd = x._data, weight._data
            xs, ws = xd.shape, wd.shape
            if (kwargs or dt not in dtypes or weight._dtype is not dt or weight._device is not dev
                    or (type(x) is not Tensor and not _plain(x)) or (type(weight) is not Tensor and not _plain(weight))
                    or len(ws) != 2 or not xs or xs[-1] != ws[1] or 0 in xs or 0 in ws):
                raise KeyError
            if bias is None:
                bd = None
                rg = x._rg or weight._rg
            else:
                if (bias._dtype is not dt or bias._device is not dev or (type(bias) is not Tensor and not _plain(bias))
                        or bias._data.shape != (ws[0],)):
                    raise KeyError
                bd = bias._data
                rg = x._rg or weight._rg or bias._rg
        except (AttributeError, KeyError, TypeError):
            return public(x, weight, bias, **kwargs)
        r = _new(Tensor)  # _wrap, inlined
        r._data = kernels[0](xd, wd, bd)
        r._dtype = dt
        r._device = dev
        r._rg = False
        r._vc = [0]
        r.grad_fn = r._grad = r._base = r._hooks = r._retains = r._view = None
        if not (rg and _mode._state.enabled):
            return r
        needs = (x._rg, weight._rg, bias is not None and bias._rg)  # (as _linear records it)
        return record(r, registered, (x, weight, bias), (x, weight, bias),
                      {"kernels": kernels, "decomposition": decomposition, "needs": needs}, (_linear_backward,),
                      JointNode)

    functools.update_wrapper(linear, public)
    linear.__dispatches__ = True  # type: ignore[attr-defined]  # its other calls step into the layers
    return linear


_UNSET: Any = object()  # (softmax's dim not given: the entry's own default, and NumPy's axis= alone)


def _softmax_front(op: OpDef, public: Callable[..., Tensor]) -> Callable[..., Tensor]:
    """The public ``softmax`` / ``log_softmax``: an int ``dim`` of a dense tensor whose dtype the fused kernel
    takes, no layer on, runs the forward kernel here and, where grad mode and the input ask for it, records
    the op's node (what :func:`_softmax` would); any other call goes to ``public``, the op's entry."""
    name, table, decomposition = op.name, op.table, op.decomposition

    def softmax(x: Tensor, dim: Any = _UNSET, *args: Any, **kwargs: Any) -> Tensor:
        try:
            if args or kwargs:
                raise KeyError  # other arguments: the entry's path
            if dim is _UNSET:
                dim = -1
            dt = x._dtype
            kernels, dtypes = x._device._fast[name]  # (a layer on: a KeyError)
            data = x._data
            n = len(data.shape)
            if type(dim) is not int or not -n <= dim < n or dt not in dtypes or dt not in table or not _plain(x):
                raise KeyError
        except (AttributeError, KeyError, TypeError):
            return public(x, *args, **kwargs) if dim is _UNSET else public(x, dim, *args, **kwargs)
        yd = kernels[0](data, dim)
        y = _wrap(yd, dt, x._device) if yd.dtype == data.dtype else _native_wrap(yd, x._device)
        if not (x._rg and _mode._state.enabled):
            return y
        return record(y, op, (x,), (x, OUT), {"kernels": kernels, "dim": dim, "decomposition": decomposition},
                      (_softmax_grad,))

    functools.update_wrapper(softmax, public)
    softmax.__dispatches__ = True  # type: ignore[attr-defined]  # its other calls step into the layers
    return softmax


def _layer_norm_front(op: OpDef, public: Callable[..., Tensor]) -> Callable[..., Tensor]:
    """The public ``layer_norm``: dense tensors of one dtype and device that the fused kernels take, no layer on,
    runs the forward kernel here and records the op's node where grad mode and an input ask for it (what
    :func:`_layer_norm` would, without the entry's frames); any other call goes to ``public``, the op's entry."""
    name, table, decomposition = op.name, op.table, op.decomposition

    def layer_norm(x: Tensor, *args: Any, **kwargs: Any) -> Tensor:
        try:
            if kwargs:  # (keywords: bound as the rule binds them)
                bound = dict(zip(_LN_ARGS, args))
                if len(args) > len(_LN_ARGS) or not kwargs.keys() <= _LN_NAMES or kwargs.keys() & bound.keys():
                    raise KeyError
                bound.update(kwargs)
                ns, weight, bias = bound["normalized_shape"], bound.get("weight"), bound.get("bias")
                eps = bound.get("eps", 1e-5)
            else:
                ns, weight, bias, eps = args + _LN_DEFAULTS[len(args) - 1:] if 0 < len(args) <= 4 else ()
            dt, dev = x._dtype, x._device
            kernels, dtypes = dev._fast[name]  # (a layer on: a KeyError)
            xd = x._data
            xs = xd.shape
            shape = (ns,) if isinstance(ns, int) else tuple(ns)
            if dt not in dtypes or dt not in table or not _plain(x) or len(shape) > len(xs) \
                    or xs[len(xs) - len(shape):] != shape:
                raise KeyError
            wd = bd = None
            if weight is not None:
                if weight._dtype is not dt or weight._device is not dev or not _plain(weight) \
                        or weight._data.shape != shape:
                    raise KeyError
                wd = weight._data
            if bias is not None:
                if bias._dtype is not dt or bias._device is not dev or not _plain(bias) or bias._data.shape != shape:
                    raise KeyError
                bd = bias._data
            eps = float(eps)
        except Exception:  # (an argument the checks cannot read: the entry raises its own, named error)
            return public(x, *args, **kwargs)
        yd, mean, rstd = kernels[0](xd, shape, wd, bd, eps)
        y = _wrap(yd, dt, dev) if yd.dtype == xd.dtype else _native_wrap(yd, dev)
        if not (_mode._state.enabled and (x._rg or (weight is not None and weight._rg)
                                          or (bias is not None and bias._rg))):
            return y
        return record(y, op, (x, weight, bias), (x, weight, bias),
                      {"kernels": kernels, "shape": shape, "eps": eps, "decomposition": decomposition, "mean": mean,
                       "rstd": rstd}, (_layer_norm_grads,), JointNode)

    functools.update_wrapper(layer_norm, public)
    layer_norm.__dispatches__ = True  # type: ignore[attr-defined]  # its other calls step into the layers
    return layer_norm


#: op name -> the public function's front: a fast path before the op's entry (see :func:`front`).
_FRONTS: dict[str, Callable[[OpDef, Callable[..., Tensor]], Callable[..., Tensor]]] = {
    "linear": _linear_front, "softmax": _softmax_front, "log_softmax": _softmax_front,
    "layer_norm": _layer_norm_front}


def front(op: OpDef, public: Callable[..., Tensor]) -> Callable[..., Tensor]:
    """The public function of ``op`` whose entry is ``public``: its front, where :data:`_FRONTS` has one."""
    make = _FRONTS.get(op.name)
    return public if make is None else make(op, public)


# -- conv2d: forward(x, w, b|None, stride, padding, dilation, groups) -> y;
#    backward(grad, x, w, has_bias, stride, padding, dilation, groups, needs) -> (gx|None, gw|None, gb|None) --
# -- max_pool2d: forward(x, kernel, stride, padding, dilation) -> (y, first argmax within the window, row-major);
#    backward(grad, x, argmax, kernel, stride, padding, dilation) -> gx ---------------------------------------
# Geometry is pairs of ints with symmetric padding; anything else (unbatched input, an asymmetric 'same'
# padding, a shape the decomposition rejects) runs the decomposition. The kernels' outputs are in x's dtype:
# float16 and bfloat16 computed in float32 (window sums accumulated there) and rounded once, as PyTorch's.

_WINDOW = _DTYPES


def _pair(v: Any) -> tuple[int, int] | None:
    """(a, b) from an int or a sequence of two ints; None for anything else."""
    t = (v, v) if isinstance(v, int) else tuple(v) if isinstance(v, (tuple, list)) else ()
    return t if len(t) == 2 and all(isinstance(i, int) and not isinstance(i, bool) for i in t) else None


def _has_output(x: Tensor, kernel: tuple[int, ...], stride: tuple[int, int], padding: tuple[int, int],
              dilation: tuple[int, int]) -> bool:
    """Whether the sliding-window geometry is valid with at least one output per dimension."""
    return (min(*stride, *dilation) > 0 and min(padding) >= 0
            and all((x.shape[2 + i] + 2 * padding[i] - dilation[i] * (kernel[i] - 1) - 1) // stride[i] >= 0
                    for i in range(2)))


def _conv_backward(g: Tensor, x: Tensor, weight: Tensor, bias: Tensor | None, *, needs: tuple[bool, ...],
                   kernels: Any, geometry: tuple[Any, ...], decomposition: Callable[..., Tensor],
                   kept: Any) -> tuple[Any, ...]:
    if _mode._state.enabled:  # create_graph: through the decomposition (exact to any order)
        return _grad_through(decomposition, (x, weight, bias), lambda f: f(x, weight, bias, *geometry), g)
    if kept is None:
        got = kernels[1](g._data, x._data, weight._data, bias is not None, *geometry, needs)
    else:
        got = kernels[1](g._data, x._data, weight._data, bias is not None, *geometry, needs, kept=kept)
    dt, dev = x._dtype, x._device
    return tuple([None if a is None else _wrap(a, dt, dev) for a in got])


def _conv(name: str, x: Tensor, weight: Tensor, bias: Tensor | None, kernels: Any, geometry: tuple[Any, ...],
          decomposition: Callable[..., Tensor]) -> Tensor:
    """conv2d and conv_transpose2d by their kernels: ``forward(x, weight, bias, *geometry)`` and
    ``backward(grad, x, weight, has_bias, *geometry, needs)``, the geometry in the op's own argument order;
    one graph node over (x, weight, bias)."""
    args = (x._data, weight._data, None if bias is None else bias._data, *geometry)
    needs = (x._rg, weight._rg, bias is not None and bias._rg)
    grad = _mode._state.enabled and (needs[0] or needs[1] or needs[2])
    # A forward kernel may offer ``.keeping``: (y, what its backward takes as ``kept=``), for the weight's
    # gradient (the CPU conv2d keeps its columns, not built again).
    keeping = getattr(kernels[0], "keeping", None) if grad and needs[1] else None
    y, kept = keeping(*args) if keeping is not None else (kernels[0](*args), None)
    out = _wrap(y, x._dtype, x._device)
    if not grad:
        return out
    return record(out, REGISTRY[name], (x, weight, bias), (x, weight, bias),
                  {"kernels": kernels, "geometry": geometry, "decomposition": decomposition, "kept": kept,
                   "needs": needs}, (_conv_backward,), JointNode)


def _conv2d_geometry(kernel: tuple[int, ...], stride: Any, padding: Any, dilation: Any,
                     groups: Any) -> tuple[tuple[Any, ...], tuple[int, int]] | None:
    """conv2d's geometry as its kernels take it, ``(stride, padding, dilation, groups)`` in pairs, and the least
    input height and width that give an output; None where the rule leaves the call to the decomposition."""
    stride, dilation = _pair(stride), _pair(dilation)
    if stride is None or dilation is None or not isinstance(groups, int) or groups < 1:
        return None
    if padding == "valid":
        padding = (0, 0)
    elif padding == "same":
        if stride != (1, 1) or any(d * (k - 1) % 2 for d, k in zip(dilation, kernel)):
            return None  # a strided 'same' raises; an odd total padding is asymmetric
        padding = tuple(d * (k - 1) // 2 for d, k in zip(dilation, kernel))
    padding = None if isinstance(padding, str) else _pair(padding)
    if padding is None or min(*stride, *dilation) <= 0 or min(padding) < 0:
        return None
    return (stride, padding, dilation, groups), tuple(  # type: ignore[return-value]
        dilation[i] * (kernel[i] - 1) + 1 - 2 * padding[i] for i in range(2))


def _conv2d_fits(xs: tuple[int, ...], ws: tuple[int, ...], groups: int, least: tuple[int, int]) -> bool:
    """Whether x (N, C, H, W) and weight (O, C / groups, kH, kW) of these shapes make a conv2d with an output."""
    return (len(xs) == 4 and len(ws) == 4 and xs[1] == ws[1] * groups and not ws[0] % groups
            and xs[2] >= least[0] and xs[3] >= least[1] and 0 not in xs and 0 not in ws)


def _conv_transpose2d_geometry(kernel: tuple[int, ...], stride: Any, padding: Any, output_padding: Any,
                               groups: Any, dilation: Any) -> tuple[tuple[Any, ...], tuple[int, ...]] | None:
    """conv_transpose2d's geometry as its kernels take it, ``(stride, padding, output_padding, groups,
    dilation)``, and per spatial dim ``(stride, extent)``: the output size is ``(size - 1) * stride + extent``;
    None where the rule leaves the call to the decomposition (which raises where PyTorch does)."""
    stride, padding = _pair(stride), _pair(padding)
    extra, dilation = _pair(output_padding), _pair(dilation)
    if (not isinstance(groups, int) or groups < 1 or stride is None or padding is None or extra is None
            or dilation is None or min(*stride, *dilation) < 1 or min(*padding, *extra) < 0
            or any(e >= max(s, d) for e, s, d in zip(extra, stride, dilation))):
        return None
    extent = tuple(dilation[i] * (kernel[i] - 1) + extra[i] - 2 * padding[i] for i in range(2))
    return (stride, padding, extra, groups, dilation), (stride[0], extent[0], stride[1], extent[1])


def _conv_transpose2d_fits(xs: tuple[int, ...], ws: tuple[int, ...], groups: int, least: tuple[int, ...]) -> bool:
    """Whether x (N, C, H, W) and weight (C, O / groups, kH, kW) make a conv_transpose2d with an output."""
    return (len(xs) == 4 and len(ws) == 4 and xs[1] == ws[0] and not ws[0] % groups
            and (xs[2] - 1) * least[0] + least[1] >= 0 and (xs[3] - 1) * least[2] + least[3] >= 0
            and 0 not in xs and 0 not in ws)


#: op -> (its geometry's argument names after weight and bias, their defaults, the geometry's normalizer, the
#: shape check, the output's channels from the weight's shape and groups). Either geometry has groups at 3.
_CONVS: dict[str, tuple[tuple[str, ...], tuple[Any, ...], Callable[..., Any], Callable[..., bool],
                        Callable[[tuple[int, ...], int], int]]] = {
    "conv2d": (("stride", "padding", "dilation", "groups"), (1, 0, 1, 1), _conv2d_geometry, _conv2d_fits,
               lambda ws, groups: ws[0]),
    "conv_transpose2d": (("stride", "padding", "output_padding", "groups", "dilation"), (1, 0, 0, 1, 1),
                         _conv_transpose2d_geometry, _conv_transpose2d_fits, lambda ws, groups: ws[1] * groups),
}


def _conv_rule(name: str, kernels: tuple[Any, Any], decomposition: Callable[..., Tensor], x: Any,
               args: tuple[Any, ...], kwargs: dict[str, Any]) -> Tensor | None:
    """conv2d / conv_transpose2d's rule: the arguments bound, their geometry normalized and checked."""
    names, defaults, geometry_of, fits, c_out_of = _CONVS[name]
    names = ("weight", "bias", *names)
    bound = dict(zip(names, args, strict=False)) | kwargs
    if len(args) > len(names) or set(bound) - set(names):
        return None
    weight, bias = bound.get("weight"), bound.get("bias")
    if not isinstance(weight, Tensor):
        return None
    ws = tuple(weight.shape)
    got = geometry_of(ws[2:], *(bound.get(n, d) for n, d in zip(names[2:], defaults)))
    if got is None or not fits(tuple(x.shape), ws, got[0][3], got[1]):
        return None
    c_out = c_out_of(ws, got[0][3])
    if any(t is not None and (not isinstance(t, Tensor) or t._dtype is not x._dtype or t._device is not x._device)
           for t in (weight, bias)) or (bias is not None and tuple(bias.shape) != (c_out,)):
        return None
    return _conv(name, x, weight, bias, kernels, got[0], decomposition)


_conv2d = _conv_transpose2d = _conv_rule


def _conv_front(op: OpDef, public: Callable[..., Tensor]) -> Callable[..., Tensor]:
    """The public ``conv2d`` / ``conv_transpose2d``: dense tensors of one dtype and device that the fused kernels
    take, the geometry positional (as the modules pass it), no layer on, run the kernels here (what
    :func:`_conv_rule` would, without the frames of the entry, the rule and :func:`run`, and with the geometry's
    normalization kept per call site); any other call goes to ``public``, the op's entry."""
    name, table, decomposition = op.name, op.table, op.decomposition
    _, defaults, geometry_of, fits, c_out_of = _CONVS[name]
    n_geometry = len(defaults)
    cache: dict[tuple[Any, ...], tuple[Any, Any]] = {}  # (see _kept)

    def conv(x: Tensor, weight: Tensor, bias: Tensor | None = None, *geometry: Any, **kwargs: Any) -> Tensor:
        try:
            if kwargs or len(geometry) > n_geometry:
                raise KeyError
            dt, dev = x._dtype, x._device
            kernels, dtypes = dev._fast[name]  # (a layer on: a KeyError)
            if (dt not in dtypes or dt not in table or weight._dtype is not dt or weight._device is not dev
                    or not _plain(x) or not _plain(weight)):
                raise KeyError
            xs, ws = x._data.shape, weight._data.shape
            got = _kept(cache, ws[2:], geometry, defaults, geometry_of)
            if got is None:
                raise KeyError
            geo, least = got
            if not fits(xs, ws, geo[3], least):
                raise KeyError
            if bias is not None and (bias._dtype is not dt or bias._device is not dev or not _plain(bias)
                                     or bias._data.shape != (c_out_of(ws, geo[3]),)):
                raise KeyError
        except (AttributeError, KeyError, TypeError):
            return public(x, weight, bias, *geometry, **kwargs)
        return _conv(name, x, weight, bias, kernels, geo, decomposition)

    functools.update_wrapper(conv, public)
    conv.__dispatches__ = True  # type: ignore[attr-defined]  # its other calls step into the layers
    return conv


_IMMUTABLE = frozenset({int, str, tuple, type(None)})


def _kept(cache: dict[tuple[Any, ...], tuple[Any, Any]], kernel: Any, geometry: tuple[Any, ...],
          defaults: tuple[Any, ...], normalize: Callable[..., Any]) -> Any:
    """``normalize(kernel, *geometry)`` (``geometry`` completed by ``defaults``), kept in ``cache`` per call site.
    The key is the kernel size and the arguments' ids; the entry holds the arguments, so that no id is reused
    while it is kept. Only immutable arguments are kept (ints, strings, None, tuples): a list may change."""
    key = (kernel, *map(id, geometry))
    hit = cache.get(key)
    if hit is not None:
        return hit[1]
    got = normalize(kernel, *geometry, *defaults[len(geometry):])
    if all(type(a) in _IMMUTABLE for a in geometry):
        if len(cache) >= 256:
            cache.clear()
        cache[key] = (geometry, got)
    return got


_FRONTS.update(conv2d=_conv_front, conv_transpose2d=_conv_front)


def _max_pool2d_grad(g: Tensor, x: Tensor, *, kernels: Any, geometry: tuple[Any, ...], argmax: Any,
                     decomposition: Callable[..., Tensor]) -> Tensor:
    """x's gradient: the backward kernel once, or (create_graph) through the decomposition."""
    if _mode._state.enabled:
        return _grad_through(decomposition, (x,), lambda f: f(x, *geometry), g)[0]
    return _wrap(kernels[1](g._data, x._data, argmax, *geometry), x._dtype, x._device)


def _max_pool2d_geometry(_: Any, kernel_size: Any, stride: Any = None, padding: Any = 0,
                         dilation: Any = 1) -> tuple[tuple[Any, ...], tuple[int, int]] | None:
    """max_pool2d's geometry as its kernels take it, ``(kernel, stride, padding, dilation)`` in pairs, and the
    least input height and width that give an output; None where the rule leaves the call to the
    decomposition (which raises where PyTorch does)."""
    kernel = _pair(kernel_size)
    stride = kernel if stride is None or stride == [] else _pair(stride)
    padding, dilation = _pair(padding), _pair(dilation)
    if (kernel is None or stride is None or padding is None or dilation is None or min(kernel) < 1
            or min(*stride, *dilation) <= 0 or min(padding) < 0 or any(2 * p > k for p, k in zip(padding, kernel))):
        return None
    return (kernel, stride, padding, dilation), tuple(  # type: ignore[return-value]
        dilation[i] * (kernel[i] - 1) + 1 - 2 * padding[i] for i in range(2))


def _max_pool(name: str, kernels: Any, decomposition: Callable[..., Tensor], x: Tensor,
              geometry: tuple[Any, ...]) -> Tensor:
    """max_pool2d by its kernels: ``forward(x, *geometry) -> (y, argmax)``; a node over x."""
    y, argmax = kernels[0](x._data, *geometry)
    out = _wrap(y, x._dtype, x._device)
    if not (x._rg and _mode._state.enabled):
        return out
    # one node (no Function: its bookkeeping cost about a tenth of the digits CNN's pools)
    return record1(out, REGISTRY[name], x, (x,), {"kernels": kernels, "geometry": geometry, "argmax": argmax,
                                                  "decomposition": decomposition}, False, (_max_pool2d_grad,))


_POOL_NAMES = ("kernel_size", "stride", "padding", "dilation")
_POOL_DEFAULTS = (None, None, 0, 1)


def _max_pool2d(name: str, kernels: tuple[Any, Any], decomposition: Callable[..., Tensor], x: Any,
                args: tuple[Any, ...], kwargs: dict[str, Any]) -> Tensor | None:
    names = (*_POOL_NAMES, "ceil_mode", "return_indices")
    bound = dict(zip(names, args, strict=False)) | kwargs
    if (len(args) > len(names) or set(bound) - set(names) or x.ndim != 4
            or bound.get("ceil_mode") or bound.get("return_indices")):  # those options: the decomposition
        return None
    got = _max_pool2d_geometry(None, *(bound.get(n, d) for n, d in zip(_POOL_NAMES, _POOL_DEFAULTS)))
    xs = tuple(x.shape)
    if got is None or 0 in xs or xs[2] < got[1][0] or xs[3] < got[1][1]:
        return None  # the decomposition raises
    return _max_pool(name, kernels, decomposition, x, got[0])


def _max_pool2d_front(op: OpDef, public: Callable[..., Tensor]) -> Callable[..., Tensor]:
    """The public ``max_pool2d``: a dense 4-d tensor whose dtype the fused kernels take, the geometry positional
    (as ``MaxPool2d`` passes it), no layer on, runs the kernels here (what :func:`_max_pool2d` would, the
    geometry's normalization kept per call site); any other call goes to ``public``, the op's entry."""
    name, table, decomposition = op.name, op.table, op.decomposition
    cache: dict[tuple[Any, ...], tuple[Any, Any]] = {}  # (see _kept)

    def max_pool2d(x: Tensor, *geometry: Any, **kwargs: Any) -> Tensor:
        try:
            if kwargs or not 0 < len(geometry) <= 4:
                raise KeyError
            dt = x._dtype
            kernels, dtypes = x._device._fast[name]  # (a layer on: a KeyError)
            if dt not in dtypes or dt not in table or not _plain(x):
                raise KeyError
            got = _kept(cache, None, geometry, _POOL_DEFAULTS, _max_pool2d_geometry)
            if got is None:
                raise KeyError
            xs = x._data.shape
            if len(xs) != 4 or 0 in xs or xs[2] < got[1][0] or xs[3] < got[1][1]:
                raise KeyError
        except (AttributeError, KeyError, TypeError):
            return public(x, *geometry, **kwargs)
        return _max_pool(name, kernels, decomposition, x, got[0])

    functools.update_wrapper(max_pool2d, public)
    max_pool2d.__dispatches__ = True  # type: ignore[attr-defined]  # its other calls step into the layers
    return max_pool2d


_FRONTS["max_pool2d"] = _max_pool2d_front


# -- batch_norm: forward(x, weight|None, bias|None, running_mean|None, running_var|None, training, momentum, eps)
#    -> (y, mean, rstd), the running statistics updated in place in training;
#    backward(grad, x, weight|None, mean, rstd, training, needs) -> (gx|None, gw|None, gb|None) ----------------
# Only float32/float64 with every tensor argument of x's dtype and device, (C,)-shaped; anything else (a momentum
# of None, a batch of one value per channel, float16) runs the decomposition, which raises where PyTorch does.


def _batch_norm_backward(g: Tensor, x: Tensor, weight: Tensor | None, *, needs: tuple[bool, ...], kernels: Any,
                         bias: Tensor | None, stats: Any, training: bool, eps: float,
                         decomposition: Callable[..., Tensor], mean: Any, rstd: Any) -> tuple[Any, ...]:
    if _mode._state.enabled:  # create_graph: through the decomposition (exact to any order)
        return _grad_through(decomposition, (x, weight, bias), lambda f: f(x, *stats, weight, bias, training, 0.0, eps),
                             g)
    dev, dt = x._device, x._dtype
    return tuple([None if a is None else _wrap(a, dt, dev) for a in kernels[1](
        g._data, x._data, None if weight is None else weight._data, mean, rstd, training, needs)])


_BN_ARGS = ("running_mean", "running_var", "weight", "bias", "training", "momentum", "eps")
_BN_NAMES = frozenset(_BN_ARGS)


def _batch_norm(name: str, kernels: tuple[Any, Any], decomposition: Callable[..., Tensor], x: Any,
                args: tuple[Any, ...], kwargs: dict[str, Any]) -> Tensor | None:
    if len(args) == 7 and not kwargs:  # every argument positional, as the modules call it
        rm, rv, weight, bias, training, momentum, eps = args
    else:
        bound = dict(zip(_BN_ARGS, args, strict=False)) | kwargs
        if len(args) > len(_BN_ARGS) or bound.keys() - _BN_NAMES:
            return None
        rm, rv, weight, bias = (bound.get(k) for k in _BN_ARGS[:4])
        training, momentum, eps = bound.get("training", False), bound.get("momentum", 0.1), bound.get("eps", 1e-5)
    if isinstance(x, LayoutTensor):
        return None
    xs = x._data.shape
    if len(xs) < 2 or 0 in xs:
        return None
    if (not isinstance(training, bool) or not isinstance(momentum, (int, float)) or not isinstance(eps, (int, float))
            or (training and x._data.size // xs[1] <= 1) or (not training and (rm is None or rv is None))):
        return None
    c = (xs[1],)
    dt, dev = x._dtype, x._device
    for t in (rm, rv, weight, bias):
        if t is not None and (not isinstance(t, Tensor) or t._dtype is not dt or t._device is not dev
                              or t._data.shape != c):
            return None
    if (rm is not None and rm._rg) or (rv is not None and rv._rg):
        return None
    momentum, eps = float(momentum), float(eps)
    y, mean, rstd = kernels[0](x._data, *(None if t is None else t._data for t in (weight, bias, rm, rv)),
                               training, momentum, eps)
    if training:
        for t in (rm, rv):
            if t is not None:
                t._vc[0] += 1  # written in place by the kernel
    out = _wrap(y, x._dtype, x._device)
    needs = (x._rg, weight is not None and weight._rg, bias is not None and bias._rg)
    if not (_mode._state.enabled and (needs[0] or needs[1] or needs[2])):
        return out
    # one node over (x, weight, bias). The decomposition for double backward: batch statistics (no running
    # update) or the running ones.
    return record(out, REGISTRY[name], (x, weight, bias), (x, weight),
                  {"kernels": kernels, "bias": bias, "stats": (None, None) if training else (rm, rv),
                   "training": training, "eps": eps, "decomposition": decomposition, "mean": mean, "rstd": rstd,
                   "needs": needs}, (_batch_norm_backward,), JointNode)


def _batch_norm_front(op: OpDef, public: Callable[..., Tensor]) -> Callable[..., Tensor]:
    """The public ``batch_norm``: a call by position (as the modules make it) of a tensor whose dtype the fused
    kernels take, no layer on, goes to :func:`_batch_norm` at once (without the frames of the entry and
    :func:`run`); any other call, or one the rule leaves to the decomposition, goes to ``public``."""
    name, table, decomposition = op.name, op.table, op.decomposition

    def batch_norm(x: Tensor, *args: Any, **kwargs: Any) -> Tensor:
        try:
            if kwargs or len(args) != 7:
                raise KeyError
            dt = x._dtype
            kernels, dtypes = x._device._fast[name]  # (a layer on: a KeyError)
            if dt not in dtypes or dt not in table:
                raise KeyError
        except (AttributeError, KeyError, TypeError):
            return public(x, *args, **kwargs)
        out = _batch_norm(name, kernels, decomposition, x, args, {})
        return public(x, *args) if out is None else out

    functools.update_wrapper(batch_norm, public)
    batch_norm.__dispatches__ = True  # type: ignore[attr-defined]  # its other calls step into the layers
    return batch_norm


_FRONTS["batch_norm"] = _batch_norm_front

_ACTIVATIONS = ("gelu", "silu", "softplus", "mish", "elu", "celu", "selu", "leaky_relu", "hardtanh", "relu6",
                "hardsigmoid", "hardswish", "softsign", "logsigmoid", "tanhshrink")

#: op name -> (its kernels: forward, backward; the rule; the input dtypes the kernels take).
KERNELS: dict[str, tuple[tuple[str, str], Callable[..., Tensor | None], frozenset[Any]]] = {
    **{n: ((n, f"{n}_backward"), _elementwise, _DTYPES) for n in _ACTIVATIONS},
    "leaky_relu": (("leaky_relu", "leaky_relu_backward"), _leaky_relu, _DTYPES),
    "softmax": (("softmax", "softmax_backward"), _softmax, _DTYPES),
    "log_softmax": (("log_softmax", "log_softmax_backward"), _softmax, _DTYPES),
    "layer_norm": (("layer_norm_forward", "layer_norm_backward"), _layer_norm, _DTYPES),
    "cross_entropy": (("cross_entropy_forward", "cross_entropy_backward"), _cross_entropy, _DTYPES),
    "nll_loss": (("nll_loss_forward", "nll_loss_backward"), _nll_loss, _DTYPES),
    "linear": (("linear_forward", "linear_backward"), _linear, _DTYPES),
    "binary_cross_entropy": (("binary_cross_entropy_forward", "binary_cross_entropy_backward"),
                             _binary_cross_entropy, frozenset({float32, float64})),
    "conv2d": (("conv2d_forward", "conv2d_backward"), _conv2d, _WINDOW),
    "conv_transpose2d": (("conv_transpose2d_forward", "conv_transpose2d_backward"), _conv_transpose2d, _WINDOW),
    "max_pool2d": (("max_pool2d_forward", "max_pool2d_backward"), _max_pool2d, _WINDOW),
    # float32/float64 only: the kernels update the running statistics in place, which a backend that widens
    # 16-bit arrays to compute them would update in a copy
    "batch_norm": (("batch_norm_forward", "batch_norm_backward"), _batch_norm, frozenset({float32, float64})),
}

#: op name -> (forward kernel, backward kernel, rule): the same facts as :data:`KERNELS`, for listings.
FUSED_OPS: dict[str, tuple[str, str, Callable[..., Tensor | None]]] = {
    name: (*kernels, rule) for name, (kernels, rule, _) in KERNELS.items()}


def attach(op: OpDef) -> OpDef:
    """Give a registered composite op its fused kernels, if :data:`KERNELS` has a row for it (at load time)."""
    row = KERNELS.get(op.name)
    if row is not None:
        op.kernels, op.rule, op.kernel_dtypes = row[0], row[1], row[2]
        op.optional_kernels = True
    return op


def run(op: OpDef, decomposition: Callable[..., Tensor], x: Any, args: tuple[Any, ...],
        kwargs: dict[str, Any]) -> Tensor | None:
    """Run ``op`` by the fused kernels bound on ``x``'s device (one dict lookup, as every op);
    None where the device has none for ``x``'s dtype or they do not take these arguments."""
    if not isinstance(x, Tensor):
        return None
    dev = x._device
    ops = dev._ops
    if ops is None:
        dev.backend  # binds the device  # noqa: B018
        ops = dev._ops
    entry = ops.get(op.name)
    if entry is None and dev._checked:  # the backend checks the kernels' arguments: these run the decomposition
        checked = dev._checked.get(op.name)
        entry = checked[:2] if checked is not None and checked[2].check(x, *args, **kwargs) is None else None
    if entry is None or x._dtype not in entry[1]:
        return None
    return op.rule(op.name, entry[0], decomposition, x, args, dict(kwargs))  # type: ignore[misc]


def fusable(name: str, fn: Callable[..., Tensor]) -> Callable[..., Tensor]:
    """The public function of op ``name``: its decomposition ``fn`` (or ``fn``'s dispatch entry) running the
    device's fused kernels first where they apply, below the dispatch layers; attaches the op's kernels to
    its record."""
    op = attach(REGISTRY[name])
    if getattr(fn, "__wrapped_op__", None) is op:
        fn = fn.__wrapped__  # type: ignore[attr-defined]

    @functools.wraps(fn)
    def fused(x: Any, *args: Any, **kwargs: Any) -> Tensor:
        out = run(op, fn, x, args, kwargs)
        return fn(x, *args, **kwargs) if out is None else out
    return front(op, entry(op, fused))
