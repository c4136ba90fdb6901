"""CuPy-side launchers of ferro's own CUDA kernels (:mod:`ferro_cuda.kernels`), as kernel-table entries.

Every function takes and returns CuPy arrays. float32 and float64 run the
compiled kernels; float16 computes in float32 and rounds back once (as
PyTorch's CUDA kernels do); other dtypes are refused with a TypeError naming
the kernel and the dtype. Inputs that are not C-contiguous are copied to
contiguous ones first. Names and signatures are listed in ``docs/cuda.md``.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from typing import Any

from . import kernels as kern

__all__ = ["fused_kernels"]

_NATIVE = ("float32", "float64")


def _cp() -> Any:
    import cupy
    return cupy


def _contig(a: Any, dtype: Any = None) -> Any:
    """``a`` C-contiguous (of ``dtype``), keeping its shape (ascontiguousarray makes a 0-d array 1-d)."""
    return _cp().ascontiguousarray(a, dtype=dtype).reshape(a.shape)


def _compute(x: Any, what: str) -> tuple[Any, str]:
    """``x`` as a contiguous float32/float64 array, and that dtype's name."""
    name = x.dtype.name
    if name == "float16":
        return _contig(x, "float32"), "float32"
    if name not in _NATIVE:
        raise TypeError(f"CUDA kernel '{what}' takes float16, float32 or float64, got {name}")
    return _contig(x), name


def _scalar(dtype: str) -> Callable[[float], Any]:
    import numpy as np
    return np.float32 if dtype == "float32" else np.float64


def _int64(v: int) -> Any:
    import numpy as np
    return np.int64(v)


def _int32(v: Any) -> Any:
    import numpy as np
    return np.int32(int(bool(v)))


# -- activations ----------------------------------------------------------------


def _activation(name: str) -> tuple[Callable[..., Any], Callable[..., Any]]:
    """Forward ``k(x, *params)`` and backward ``k(grad, x, *params)`` for a row of ACTIVATIONS."""
    act = kern.ACTIVATIONS[name]
    names = [p for p, _ in act.params]

    def params(given: tuple[Any, ...], named: dict[str, Any], dtype: str) -> list[Any]:
        if len(given) > len(names) or set(named) - set(names[len(given):]):
            raise TypeError(f"{name} takes the parameters ({', '.join(names)}); got {len(given)} positional "
                            f"and {sorted(named)}")
        values = dict(act.params) | dict(zip(names, given, strict=False)) | named
        s = _scalar(dtype)
        return [s(values[p]) for p in names]

    def forward(x: Any, *p: Any, **kw: Any) -> Any:
        xc, dt = _compute(x, name)
        y = _cp().empty_like(xc)
        if xc.size:
            kern.kernel("activations", f"{name}_forward", dt)(*kern.launch_config(xc.size),
                                                            (xc, y, _int64(xc.size), *params(p, kw, dt)))
        return y.astype(x.dtype, copy=False)

    def backward(grad: Any, x: Any, *p: Any, **kw: Any) -> Any:
        xc, dt = _compute(x, name)
        gc = _contig(_cp().broadcast_to(_cp().asarray(grad), x.shape), dt)
        dx = _cp().empty_like(xc)
        if xc.size:
            kern.kernel("activations", f"{name}_backward", dt)(*kern.launch_config(xc.size),
                                                             (gc, xc, dx, _int64(xc.size), *params(p, kw, dt)))
        return dx.astype(x.dtype, copy=False)

    return forward, backward


def _gelu_pair() -> tuple[Callable[..., Any], Callable[..., Any]]:
    exact, exact_b = _activation("gelu")
    tanh, tanh_b = _activation("gelu_tanh")

    def pick(approximate: str) -> bool:
        if approximate not in ("none", "tanh"):
            raise ValueError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
        return approximate == "tanh"

    def gelu(x: Any, approximate: str = "none") -> Any:
        return tanh(x) if pick(approximate) else exact(x)

    def gelu_backward(grad: Any, x: Any, approximate: str = "none") -> Any:
        return tanh_b(grad, x) if pick(approximate) else exact_b(grad, x)

    return gelu, gelu_backward


# -- rows: softmax, layer_norm, cross_entropy --------------------------------------


def _rows(x: Any, dim: int) -> tuple[Any, Callable[[Any], Any]]:
    """``x`` as a contiguous (rows, cols) array reducing over ``dim``, and the map back to ``x``'s layout."""
    cp = _cp()
    dim = dim % x.ndim if x.ndim else 0
    moved = cp.moveaxis(x, dim, -1) if x.ndim else x.reshape(1)
    shape = moved.shape
    flat = cp.ascontiguousarray(moved).reshape(-1, shape[-1] if shape else 1)

    def back(y: Any) -> Any:
        y = y.reshape(shape)
        return cp.moveaxis(y, -1, dim) if x.ndim else y.reshape(())
    return flat, back


def _launch_rows(source: str, kernel: str, dtype: str, rows: int, args: tuple[Any, ...]) -> None:
    if rows:
        kern.kernel(source, kernel, dtype)((rows,), (kern.THREADS,), args)


def _softmax_pair(log: bool) -> tuple[Callable[..., Any], Callable[..., Any]]:
    what = "log_softmax" if log else "softmax"

    def forward(x: Any, dim: int = -1) -> Any:
        xc, dt = _compute(x, what)
        flat, back = _rows(xc, dim)
        y = _cp().empty_like(flat)
        if flat.shape[1]:
            _launch_rows("softmax", "softmax_forward", dt, flat.shape[0],
                         (flat, y, _int64(flat.shape[0]), _int64(flat.shape[1]), _int32(log)))
        return back(y).astype(x.dtype, copy=False)

    def backward(grad: Any, y: Any, dim: int = -1) -> Any:
        yc, dt = _compute(y, what)
        g, back = _rows(_cp().asarray(grad, dtype=dt), dim)
        yf, _ = _rows(yc, dim)
        dx = _cp().empty_like(yf)
        if yf.shape[1]:
            _launch_rows("softmax", "softmax_backward", dt, yf.shape[0],
                         (g, yf, dx, _int64(yf.shape[0]), _int64(yf.shape[1]), _int32(log)))
        return back(dx).astype(y.dtype, copy=False)

    return forward, backward


def _norm_rows(x: Any, normalized_shape: Sequence[int] | int) -> tuple[Any, int]:
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    if tuple(x.shape[x.ndim - len(shape):]) != shape or len(shape) > x.ndim:
        raise ValueError(f"layer_norm: normalized_shape {list(shape)} does not match the end of {list(x.shape)}")
    cols = math.prod(shape)
    return x.reshape(-1, cols), cols


def layer_norm_forward(x: Any, normalized_shape: Sequence[int] | int, weight: Any = None, bias: Any = None,
                       eps: float = 1e-5) -> tuple[Any, Any, Any]:
    """``(y, mean, rstd)``; ``mean`` and ``rstd`` hold one value per normalized row, in the compute dtype."""
    cp = _cp()
    xc, dt = _compute(x, "layer_norm")
    flat, cols = _norm_rows(xc, normalized_shape)
    rows = flat.shape[0]
    w = xc if weight is None else cp.ascontiguousarray(weight, dtype=dt).reshape(-1)
    b = xc if bias is None else cp.ascontiguousarray(bias, dtype=dt).reshape(-1)
    y, mean, rstd = cp.empty_like(flat), cp.empty(rows, dt), cp.empty(rows, dt)
    if cols:
        _launch_rows("layer_norm", "layer_norm_forward", dt, rows,
                     (flat, w, b, y, mean, rstd, _int64(rows), _int64(cols), _scalar(dt)(eps),
                      _int32(weight is not None), _int32(bias is not None)))
    return y.reshape(x.shape).astype(x.dtype, copy=False), mean, rstd


def layer_norm(x: Any, normalized_shape: Sequence[int] | int, weight: Any = None, bias: Any = None,
               eps: float = 1e-5) -> Any:
    """``F.layer_norm`` in one pass per row."""
    return layer_norm_forward(x, normalized_shape, weight, bias, eps)[0]


def layer_norm_backward(grad: Any, x: Any, normalized_shape: Sequence[int] | int, weight: Any, mean: Any,
                        rstd: Any) -> tuple[Any, Any, Any]:
    """``(dx, dweight, dbias)`` of layer_norm from its saved ``mean`` and ``rstd``; dweight is None without a
    weight (dbias is returned always: the caller drops it where there was no bias)."""
    cp = _cp()
    xc, dt = _compute(x, "layer_norm")
    flat, cols = _norm_rows(xc, normalized_shape)
    rows = flat.shape[0]
    g = _contig(cp.broadcast_to(cp.asarray(grad), x.shape), dt).reshape(rows, cols)
    w = flat if weight is None else cp.ascontiguousarray(weight, dtype=dt).reshape(-1)
    dx = cp.empty_like(flat)
    if cols:
        _launch_rows("layer_norm", "layer_norm_backward", dt, rows,
                     (g, flat, w, mean, rstd, dx, _int64(rows), _int64(cols), _int32(weight is not None)))
    wshape = x.shape[x.ndim - (1 if isinstance(normalized_shape, int) else len(normalized_shape)):]
    xhat = (flat - mean[:, None]) * rstd[:, None]
    dweight = None if weight is None else (g * xhat).sum(0).reshape(wshape).astype(weight.dtype, copy=False)
    dbias = g.sum(0).reshape(wshape).astype(x.dtype, copy=False)
    return dx.reshape(x.shape).astype(x.dtype, copy=False), dweight, dbias


def _class_rows(x: Any, target: Any) -> tuple[Any, Any]:
    """(N, C, d1, ...) logits and (N, d1, ...) targets as (rows, C) and (rows,)."""
    cp = _cp()
    t = cp.ascontiguousarray(target, dtype="int64").reshape(-1)
    if x.ndim == 1:
        return x.reshape(1, -1), t
    return cp.ascontiguousarray(cp.moveaxis(x, 1, -1)).reshape(-1, x.shape[1]), t


def cross_entropy_forward(x: Any, target: Any, weight: Any = None, ignore_index: int = -100) -> tuple[Any, Any, Any]:
    """Per-row ``(loss, logsumexp, weight of the row's target)`` for class-index targets."""
    cp = _cp()
    xc, dt = _compute(x, "cross_entropy")
    rows, t = _class_rows(xc, target)
    n, c = rows.shape
    w = rows if weight is None else cp.ascontiguousarray(weight, dtype=dt)
    loss, lse, roww = cp.empty(n, dt), cp.empty(2 * n, dt), cp.empty(n, dt)  # lse: (max, log-sum) per row
    _launch_rows("cross_entropy", "cross_entropy_forward", dt, n,
                 (rows, t, w, loss, lse, roww, _int64(n), _int64(c), _int64(ignore_index), _int32(weight is not None)))
    return loss, lse, roww


def cross_entropy(x: Any, target: Any, weight: Any = None, ignore_index: int = -100, reduction: str = "mean",
                  label_smoothing: float = 0.0) -> Any:
    """``F.cross_entropy`` for integer class targets without label smoothing (else a ValueError: the
    composite handles those)."""
    if label_smoothing or target.dtype.kind not in "iu":
        raise ValueError("the fused cross_entropy takes class-index targets and no label smoothing")
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    loss, _, roww = cross_entropy_forward(x, target, weight, ignore_index)
    if reduction == "none":
        shape = (x.shape[0], *x.shape[2:]) if x.ndim > 1 else ()
        return loss.reshape(shape).astype(x.dtype, copy=False)
    total = loss.sum()
    return (total if reduction == "sum" else total / roww.sum()).astype(x.dtype, copy=False)


def cross_entropy_backward(grad_rows: Any, x: Any, target: Any, weight: Any, lse: Any,
                           ignore_index: int = -100) -> Any:
    """dx of the per-row losses, given their gradients ``grad_rows`` (rows,) (the reduction already applied)."""
    cp = _cp()
    xc, dt = _compute(x, "cross_entropy")
    rows, t = _class_rows(xc, target)
    n, c = rows.shape
    w = rows if weight is None else cp.ascontiguousarray(weight, dtype=dt)
    g = cp.ascontiguousarray(cp.broadcast_to(grad_rows, (n,)), dtype=dt)
    dx = cp.empty_like(rows)
    _launch_rows("cross_entropy", "cross_entropy_backward", dt, n,
                 (g, rows, t, w, lse, dx, _int64(n), _int64(c), _int64(ignore_index), _int32(weight is not None)))
    if x.ndim == 1:
        return dx.reshape(x.shape).astype(x.dtype, copy=False)
    moved = dx.reshape((x.shape[0], *x.shape[2:], x.shape[1]))
    return cp.moveaxis(moved, -1, 1).astype(x.dtype, copy=False)


# -- optimizers (signatures of ferro.optim's fused_adam / fused_sgd) -----------------


def _fusable(*arrays: Any) -> str | None:
    """The dtype name when every array is C-contiguous float32/float64 of one dtype, else None."""
    dt = arrays[0].dtype.name
    if dt not in _NATIVE:
        return None
    return dt if all(a.dtype.name == dt and a.flags.c_contiguous for a in arrays) else None


def fused_adam(p: Any, g: Any, m: Any, v: Any, vmax: Any, step: float, lr: float, beta1: float, beta2: float,
               eps: float, wd: float, decoupled: bool, amsgrad: bool, maximize: bool) -> None:
    """One Adam/AdamW step of one parameter, in place, in one kernel (ferro.optim's ``fused_adam``)."""
    step_size = lr / (1 - beta1 ** step)
    bc2 = (1 - beta2 ** step) ** 0.5
    arrays = (p, g, m, v) if vmax is None else (p, g, m, v, vmax)
    dt = _fusable(*arrays)
    if dt is None:  # float16, complex or strided: the same sequence of operations with CuPy's kernels
        _adam_elementwise(p, g, m, v, vmax, lr, beta1, beta2, eps, wd, decoupled, maximize, step_size, bc2)
        return
    s = _scalar(dt)
    if p.size:
        kern.kernel("optim", "adam_step", dt)(*kern.launch_config(p.size), (
            p, g, m, v, p if vmax is None else vmax, _int64(p.size), s(lr), s(beta1), s(beta2), s(eps), s(wd),
            s(step_size), s(bc2), _int32(decoupled), _int32(vmax is not None and amsgrad), _int32(maximize)))


def _adam_elementwise(p: Any, g: Any, m: Any, v: Any, vmax: Any, lr: float, beta1: float, beta2: float, eps: float,
                      wd: float, decoupled: bool, maximize: bool, step_size: float, bc2: float) -> None:
    cp = _cp()
    if maximize:
        g = -g
    if wd:
        if decoupled:
            p *= 1 - lr * wd
        else:
            g = g + p * wd
    m += (g - m) * (1 - beta1)
    v *= beta2
    v += g * g * (1 - beta2)
    if vmax is not None:
        cp.maximum(vmax, v, out=vmax)
        v = vmax
    p += m / (cp.sqrt(v) / bc2 + eps) * -step_size


def fused_sgd(p: Any, g: Any, buf: Any, lr: float, momentum: float, dampening: float, wd: float, nesterov: bool,
              maximize: bool, first: bool) -> None:
    """One SGD step of one parameter, in place (ferro.optim's ``fused_sgd``); ``buf`` is the momentum buffer
    (None without momentum), filled from the gradient on the ``first`` step."""
    arrays = (p, g) if buf is None else (p, g, buf)
    dt = _fusable(*arrays)
    if dt is None:
        _sgd_elementwise(p, g, buf, lr, momentum, dampening, wd, nesterov, maximize, first)
        return
    s = _scalar(dt)
    if p.size:
        kern.kernel("optim", "sgd_step", dt)(*kern.launch_config(p.size), (
            p, g, p if buf is None else buf, _int64(p.size), s(lr), s(momentum), s(dampening), s(wd),
            _int32(buf is not None), _int32(nesterov), _int32(maximize), _int32(first)))


def _sgd_elementwise(p: Any, g: Any, buf: Any, lr: float, momentum: float, dampening: float, wd: float,
                     nesterov: bool, maximize: bool, first: bool) -> None:
    if maximize:
        g = -g
    if wd:
        g = g + p * wd
    if buf is not None:
        if first:
            buf[...] = g
        else:
            buf *= momentum
            buf += g * (1 - dampening) if dampening else g
        g = g + buf * momentum if nesterov else buf
    p += g * -lr


# -- scatter-add with atomics ---------------------------------------------------------------

#: dtypes cupyx.scatter_add adds atomically, and the view that 64-bit integers add through.
_ATOMIC = {"float16", "float32", "float64", "int32", "uint32", "uint64"}
_ATOMIC_VIEW = {"int64": "uint64"}


def has_index_arrays(key: Any) -> bool:
    """Whether ``key`` holds an integer index array (the keys CuPy wraps around)."""
    return any(hasattr(k, "shape") and k.dtype.kind in "iu" for k in (key if isinstance(key, tuple) else (key,)))


def check_index_bounds(xp: Any, x: Any, key: Any, label: str | None = None) -> None:
    """Raise IndexError, before anything is written, when an integer index array of ``key`` holds an index out
    of range for its dimension of ``x``: CuPy wraps such indices around silently (and ferro's row kernel skips
    them), so a write would land on the wrong elements. Costs one bool read back from the device. ``label``
    (the op and argument, ``"gather: argument 'index' ..."``) starts the message where given."""
    keys = key if isinstance(key, tuple) else (key,)
    used = sum(k.ndim if getattr(k, "dtype", None) is not None and k.dtype.kind == "b" else 1
               for k in keys if k is not None and k is not Ellipsis)
    checks: list[tuple[Any, int, int]] = []
    dim = 0
    for k in keys:
        if k is Ellipsis:
            dim += x.ndim - used
        elif getattr(k, "dtype", None) is not None and k.dtype.kind == "b":
            dim += k.ndim
        elif getattr(k, "dtype", None) is not None and k.dtype.kind in "iu" and getattr(k, "size", 0):
            if dim < x.ndim:
                checks.append((k, dim, x.shape[dim]))
            dim += 1
        elif k is not None:
            dim += 1
    if not checks:
        return
    bad = [xp.any((k < -n) | (k >= n)) for k, _, n in checks]
    if bool(xp.any(xp.stack(bad))):
        k, d, n = next(c for c, b in zip(checks, bad) if bool(b))
        where = f"{label}: " if label else ""
        raise IndexError(f"{where}index {int(k[(k < -n) | (k >= n)][0])} is out of bounds for dimension {d} "
                         f"with size {n}")


def index_put_kernel(generic: Callable[..., None], label: Callable[[], str | None] = lambda: None
                     ) -> Callable[..., None]:
    """``index_put(x, key, value, accumulate)`` whose accumulation adds repeated indices with atomics on
    the GPU: ferro's row kernel for one integer index array (the gradient of embedding and index_select),
    ``cupyx.scatter_add`` otherwise; dtypes without atomics (bool, 8/16-bit integers, complex) go to ``generic``.
    An out-of-range index raises IndexError naming ``label()`` (the op core named, see :mod:`._indexing`)."""
    def index_put(x: Any, key: Any, value: Any, accumulate: bool) -> None:
        cp = _cp()
        if has_index_arrays(key):
            check_index_bounds(cp, x, key, label())
        if not accumulate:
            x[key] = value
            return
        dt = x.dtype.name
        if dt not in _ATOMIC and dt not in _ATOMIC_VIEW:
            generic(x, key, value, accumulate)
            return
        keys = key if isinstance(key, tuple) else (key,)
        if _rows_scatter(cp, x, keys, value):
            return
        import cupyx
        target = x.view(_ATOMIC_VIEW[dt]) if dt in _ATOMIC_VIEW else x
        vals = cp.asarray(value, dtype=x.dtype)
        cupyx.scatter_add(target, key, vals.view(target.dtype) if dt in _ATOMIC_VIEW else vals)
    return index_put


def _rows_scatter(cp: Any, x: Any, keys: tuple[Any, ...], value: Any) -> bool:
    """Run ferro's row kernel when ``keys`` is one 1-d integer array on dim 0 of a contiguous ``x``."""
    dt = x.dtype.name
    if (len(keys) != 1 or not hasattr(keys[0], "ndim") or keys[0].ndim != 1 or keys[0].dtype.kind not in "iu"
            or not x.flags.c_contiguous or x.ndim == 0 or dt not in kern.SOURCES["scatter_add"][1]):
        return False
    index = cp.ascontiguousarray(keys[0], dtype="int64")
    n, rows = index.shape[0], x.shape[0]
    cols = math.prod(x.shape[1:])
    src = cp.ascontiguousarray(cp.broadcast_to(cp.asarray(value, dtype=x.dtype), (n, *x.shape[1:])))
    if n and cols:
        kern.kernel("scatter_add", "scatter_add_rows", dt)(*kern.launch_config(n * cols),
                                                         (x, index, src, _int64(n), _int64(rows), _int64(cols)))
    return True


# -- scans ----------------------------------------------------------------------------------


def cum_extreme_kernel(is_max: bool, generic: Callable[..., Any]) -> Callable[..., Any]:
    """``cummax`` / ``cummin(x, dim)`` -> (values, int64 indices) by ferro's scan kernel; dtypes it is not
    instantiated for (bool, 8/16-bit, complex) go to ``generic``."""
    dtypes = kern.SOURCES["scan"][1]

    def cum_extreme(x: Any, dim: int) -> tuple[Any, Any]:
        if x.dtype.name not in dtypes or x.ndim == 0 or x.size == 0:
            return generic(x, dim)
        cp = _cp()
        flat, back = _rows(x, dim)
        values, indices = cp.empty_like(flat), cp.empty(flat.shape, cp.int64)
        rows, n = flat.shape
        kern.kernel("scan", "cum_extreme", x.dtype.name)(*kern.launch_config(rows), (
            flat, values, indices, _int64(rows), _int64(n), _int32(is_max)))
        return back(values), back(indices)
    return cum_extreme


# -- ferro.amp's check for inf/nan and unscale (the contract's fused_amp_unscale) ---------------


def fused_amp_unscale(grads: Sequence[Any], found_inf: Any, inv_scale: float) -> None:
    """Multiply each gradient by ``inv_scale`` in place and set ``found_inf`` (one float32 element) to 1 where
    one holds inf or nan: one launch of ``amp.cu`` per gradient, none waiting for the device. float16, bfloat16
    and strided gradients run on a contiguous float32 (float64) copy, written back rounded once."""
    import numpy as np
    inv = np.float32(inv_scale)
    for g in grads:
        if not g.size:
            continue
        native = g.dtype.name in _NATIVE and g.flags.c_contiguous
        x = g if native else _contig(g, "float64" if g.dtype.name == "float64" else "float32")
        kern.kernel("amp", "amp_unscale", x.dtype.name)(*kern.launch_config(x.size), (
            x, _int64(x.size), found_inf, inv))
        if x is not g:
            g[...] = x


# -- the table -----------------------------------------------------------------------


@functools.cache
def fused_kernels() -> dict[str, Callable[..., Any]]:
    """Kernel name -> launcher, for :meth:`CudaBackend.extra_kernels`; building it compiles nothing."""
    table: dict[str, Callable[..., Any]] = {}
    for name in kern.ACTIVATIONS:
        if name.startswith("gelu"):
            continue
        table[name], table[f"{name}_backward"] = _activation(name)
    table["gelu"], table["gelu_backward"] = _gelu_pair()
    table["softmax"], table["softmax_backward"] = _softmax_pair(log=False)
    table["log_softmax"], table["log_softmax_backward"] = _softmax_pair(log=True)
    table.update({
        "layer_norm": layer_norm, "layer_norm_forward": layer_norm_forward, "layer_norm_backward": layer_norm_backward,
        "cross_entropy": cross_entropy, "cross_entropy_forward": cross_entropy_forward,
        "cross_entropy_backward": cross_entropy_backward, "fused_adam": fused_adam, "fused_sgd": fused_sgd,
        "fused_amp_unscale": fused_amp_unscale,
    })
    return table
