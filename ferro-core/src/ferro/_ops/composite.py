"""Ops written in other ops: one table row each, no kernel needed.

Some have fused kernels (``fused.KERNELS``: activations, softmax, log_softmax),
bound and reported like every kernel, run instead of the decomposition where
the device has them. Each row: name, dtype rule, the
decomposition, its doc (what it calls is derived: ``python -m ferro._usesgen``).
Gradients flow through the ops used, so double backward works as for them.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from .._core.modes import entry
from .._core.records import OpDef, register
from .._core.tensor import Tensor, _wrap_dim
from ..errors import DTypeError, ShapeError
from . import fused

__all__ = ["COMPOSITES", "FUNCTIONS", "ACTIVATIONS"]


def _where(c: Tensor, a: Any, b: Any) -> Tensor:
    from .elementwise import where
    return where(c, a, b)


def clamp(x: Tensor, min: Any = None, max: Any = None) -> Tensor:
    """Limit ``x`` to ``[min, max]``; the gradient passes where ``min <= x <= max``."""
    if min is None and max is None:
        raise ValueError("clamp: at least one of 'min' or 'max' must not be None")
    out = x
    if min is not None:
        out = _where(_past(out < min, min), min, out)
    if max is not None:
        out = _where(_past(out > max, max), max, out)
    return out


def _past(hit: Tensor, bound: Any) -> Any:
    """Where ``clamp`` takes ``bound``: past it, or everywhere the bound is NaN (NaN propagates from the
    bounds as from ``x``, as in PyTorch's ``min(max(x, min), max)``)."""
    if isinstance(bound, Tensor):
        return hit | bound.isnan() if bound._dtype.is_floating_point else hit
    return hit | True if isinstance(bound, float) and math.isnan(bound) else hit


def _softplus(x: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    bx = x * beta
    # log1p(exp(bx)) overflows for large bx, where it equals bx (PyTorch's threshold).
    return _where(bx > threshold, x, (bx.clamp(max=threshold)).exp().log1p() / beta)


def _shift(x: Tensor, dim: Any) -> Any:
    """The (detached) maximum over ``dim``: subtracted before ``exp``, the value is the same and exp cannot
    overflow; the gradient does not depend on the shift, so detaching it changes nothing. An empty tensor
    has nothing to shift (and no maximum): 0, so that sums over an empty dim give log(0) = -inf, as PyTorch."""
    if x.numel() == 0:
        return 0.0
    m = x.amax(dim, keepdim=True).detach()
    return _where(m.isfinite(), m, 0.0)


def _logsumexp(x: Tensor, dim: Any = None, keepdim: bool = False) -> Tensor:
    m = _shift(x, dim)
    out = (x - m).exp().sum(dim, keepdim=True).log() + m
    if keepdim:
        return out
    return out.squeeze(dim) if dim is not None else out.reshape(())


def _softmax(x: Tensor, dim: int = -1, dtype: Any = None) -> Tensor:
    x = x if dtype is None else x.to(dtype)  # PyTorch's dtype=: the input is cast first
    e = (x - _shift(x, dim)).exp()
    return e / e.sum(dim, keepdim=True)


def _log_softmax(x: Tensor, dim: int = -1, dtype: Any = None) -> Tensor:
    x = x if dtype is None else x.to(dtype)
    if x.ndim and x.shape[_wrap_dim(dim, x.ndim, "log_softmax")] == 0:  # nothing to normalize over: empty, as PyTorch
        return x.clone()
    # (x - max) - log(sum(exp(x - max))), not x - logsumexp(x): logsumexp rounds at the magnitude of max
    # (about 1e-3 at 1e4 in float32), which x - logsumexp would keep; x - max is exact near the max.
    m = x.amax(dim, keepdim=True).detach()
    shifted = x - _where(m.isfinite(), m, 0.0)
    return shifted - shifted.exp().sum(dim, keepdim=True).log()


def _glu(x: Tensor, dim: int = -1) -> Tensor:
    n = x.shape[dim]
    if n % 2:
        raise ShapeError(f"glu: halving dimension {dim} needs an even size, got {n} (shape {list(x.shape)})")
    d = dim % x.ndim
    a = x[(slice(None),) * d + (slice(0, n // 2),)]
    b = x[(slice(None),) * d + (slice(n // 2, n),)]
    return a * b.sigmoid()


def _gelu(x: Tensor, approximate: str = "none") -> Tensor:
    if approximate == "tanh":
        return 0.5 * x * (1 + (math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)).tanh())
    if approximate != "none":
        raise ValueError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
    return 0.5 * x * (1 + (x * (1 / math.sqrt(2))).erf())


def _nan_to_num(x: Tensor, nan: float = 0.0, posinf: float | None = None, neginf: float | None = None) -> Tensor:
    if not x._dtype.is_floating_point:
        return x.clone()
    from .._core.host import np, numpy_dtype
    if x._dtype.name == "bfloat16":  # bfloat16's own range (NumPy's finfo does not know ml_dtypes)
        import ml_dtypes
        info = ml_dtypes.finfo(ml_dtypes.bfloat16)
    else:
        info = np().finfo(numpy_dtype(x._dtype))
    hi = float(info.max) if posinf is None else posinf
    lo = float(info.min) if neginf is None else neginf
    out = _where(x.isnan(), nan, x)
    out = _where(out == math.inf, hi, out)
    return _where(out == -math.inf, lo, out)


def _isclose(x: Tensor, y: Any, rtol: float = 1e-5, atol: float = 1e-8, equal_nan: bool = False) -> Tensor:
    close = (x - y).abs() <= atol + rtol * (y.abs() if isinstance(y, Tensor) else abs(y))
    close = close | (x == y)
    if equal_nan:
        close = close | (x.isnan() & (y.isnan() if isinstance(y, Tensor) else math.isnan(y)))
    return close


def _integral(v: Any) -> bool:
    return v._dtype.kind in "iub" if isinstance(v, Tensor) else isinstance(v, int)


def _fmod(x: Any, y: Any) -> Tensor:
    if _integral(x) and _integral(y):
        # Integers: from remainder (the sign of y) moved to the sign of x. Exact at any magnitude, and a
        # zero divisor raises ZeroDivisionError as in remainder and floor_divide (ferro's rule for integer
        # division by zero), where dividing in floats gave x back.
        try:
            r = x % y
        except ZeroDivisionError:
            raise ZeroDivisionError("fmod: integer division by zero") from None
        return _where((r != 0) & ((r < 0) != (x < 0)), r - y, r)
    return x - (x / y).trunc() * y


_SELU_ALPHA, _SELU_SCALE = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946

#: (name, dtype rule, decomposition, doc)
COMPOSITES: list[tuple[str, str, Callable[..., Tensor], str]] = [
    ("clamp", "real", clamp, "Limit values to [min, max]."),
    ("clamp_min", "real", lambda x, min: clamp(x, min=min), "max(x, min)."),
    ("clamp_max", "real", lambda x, max: clamp(x, max=max), "min(x, max)."),
    ("true_divide", "float", lambda x, y: x / y, "x / y (alias of div)."),
    ("fmod", "real_numeric", lambda x, y: _fmod(x, y),
     "Remainder with the sign of x (C's fmod)."),
    ("lerp", "floating", lambda start, end, weight: start + weight * (end - start),
     "start + weight * (end - start)."),
    ("xlogy", "real_float",
     lambda x, y: _where(x == 0, 0.0, x * (y.log() if isinstance(y, Tensor) else math.log(y))),
     "x * log(y), 0 where x == 0."),
    ("nan_to_num", "same", _nan_to_num,
     "Replace nan, +inf and -inf by finite numbers."),
    ("isclose", "same", _isclose, "|x - y| <= atol + rtol * |y|, elementwise."),
    ("logsumexp", "floating", _logsumexp, "log(sum(exp(x))) over dim, stably."),
    ("softmax", "floating", _softmax, "exp(x) / sum(exp(x)) over dim."),
    ("log_softmax", "floating", _log_softmax, "x - logsumexp(x) over dim."),
]

def _hard_clamp(x: Tensor, lo: float, hi: float) -> Tensor:
    """``clamp(x, lo, hi)`` whose gradient is 0 at the bounds too (PyTorch's hardtanh family;
    ``clamp`` itself passes the gradient at the bounds)."""
    return _where(x <= lo, lo, _where(x >= hi, hi, x))


#: Activations of ``ferro.nn.functional``: (name, decomposition, doc).
ACTIVATIONS: list[tuple[str, Callable[..., Tensor], str]] = [
    ("relu6", lambda x: _hard_clamp(x, 0.0, 6.0), "min(max(x, 0), 6)."),
    ("leaky_relu", lambda x, negative_slope=0.01: _where(x > 0, x, x * negative_slope),
     "x if x > 0 else negative_slope * x."),
    ("elu", lambda x, alpha=1.0: _where(x > 0, x, x.expm1() * alpha),
     "x if x > 0 else alpha * (exp(x) - 1)."),
    ("selu", lambda x: _where(x > 0, x, x.expm1() * _SELU_ALPHA) * _SELU_SCALE,
     "scale * elu(x, alpha) with the self-normalizing constants."),
    ("celu", lambda x, alpha=1.0: _where(x > 0, x, (x / alpha).expm1() * alpha),
     "x if x > 0 else alpha * (exp(x / alpha) - 1)."),
    ("gelu", _gelu, "x * Phi(x); approximate='tanh' for the tanh form."),
    ("silu", lambda x: x * x.sigmoid(), "x * sigmoid(x)."),
    ("softplus", _softplus, "log(1 + exp(beta * x)) / beta, linear past threshold."),
    ("mish", lambda x: x * _softplus(x).tanh(), "x * tanh(softplus(x))."),
    ("softsign", lambda x: x / (x.abs() + 1), "x / (1 + |x|)."),
    ("hardtanh", lambda x, min_val=-1.0, max_val=1.0: _hard_clamp(x, min_val, max_val),
     "Clamp to [min_val, max_val]."),
    ("hardsigmoid", lambda x: _hard_clamp(x / 6 + 0.5, 0.0, 1.0), "clamp(x / 6 + 1/2, 0, 1)."),
    ("hardswish", lambda x: x * _hard_clamp(x / 6 + 0.5, 0.0, 1.0), "x * hardsigmoid(x)."),
    ("logsigmoid", lambda x: -_softplus(-x), "log(sigmoid(x)), stably."),
    ("tanhshrink", lambda x: x - x.tanh(), "x - tanh(x)."),
    ("threshold", lambda x, threshold, value: _where(x > threshold, x, value),
     "x if x > threshold else value."),
    ("glu", _glu, "a * sigmoid(b) for the two halves a, b along dim."),
]


#: Uses the conformance samples do not reach, so ``python -m ferro._usesgen`` cannot see them.
_UNREACHED = {"gelu": ("tanh",)}  # approximate="tanh" (the samples take the default)


def _build(op: OpDef) -> Callable[..., Tensor]:
    name, decompose, has_kernels = op.name, op.decomposition, op.rule is not None
    assert decompose is not None

    def fn(x: Any, *args: Any, **kwargs: Any) -> Tensor:
        ref = x if isinstance(x, Tensor) else next((a for a in args if isinstance(a, Tensor)), None)
        if ref is None:
            raise TypeError(f"{name}(): expected a Tensor, got {type(x).__name__}")
        if ref._dtype not in op.table:
            raise DTypeError(f"{name}: not defined for dtype {ref._dtype}; it takes {op.dtype_words}")
        if has_kernels:  # fused kernels, where the device has them for this dtype
            out = fused.run(op, decompose, x, args, kwargs)
            if out is not None:
                return out
        return decompose(x, *args, **kwargs)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = op.doc
    return fn


def _register() -> dict[str, Callable[..., Tensor]]:
    fns: dict[str, Callable[..., Tensor]] = {}
    rows = [*COMPOSITES, *((n, "floating", f, doc) for n, f, doc in ACTIVATIONS)]
    for name, rule, decomposition, doc in rows:
        op = fused.attach(register(OpDef(name, "composite", doc, dtype_rule=rule, decomposition=decomposition,
                                         uses=_UNREACHED.get(name, ()))))
        op.fn = fns[name] = fused.front(op, entry(op, _build(op)))  # (softmax's front: see fused.front)
    return fns


FUNCTIONS = _register()
ACTIVATION_NAMES = [n for n, *_ in ACTIVATIONS]
#: Composites that are also Tensor methods and top-level functions (as in PyTorch).
METHODS = ["clamp", "clamp_min", "clamp_max", "true_divide", "fmod", "lerp", "xlogy", "nan_to_num", "isclose",
           "logsumexp", "softmax", "log_softmax"]


def allclose(x: Tensor, y: Any, rtol: float = 1e-5, atol: float = 1e-8, equal_nan: bool = False) -> bool:
    """Whether every element of x is close to y (see ``isclose``)."""
    return bool(FUNCTIONS["isclose"](x, y, rtol, atol, equal_nan).all())
