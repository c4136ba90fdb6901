"""The op database of the conformance suite, in the spirit of PyTorch's OpInfo.

One :class:`OpInfo` per registry op: how to call it, a NumPy reference, the
domain its sample inputs are drawn from, the dtypes it is tested on, and
whether its gradient is checked. :func:`samples` makes the inputs: shapes
from a scalar to 4-D, broadcasting pairs, a non-contiguous (transposed) input,
an empty input, and edge values (inf, nan, -0.0) where the op takes them.
Every registry op has an entry (a test enforces it): random ops are sampled
at parameters that leave nothing to chance (dropout with p=1, normal with
std=0...), the FFT primitives are called directly.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

__all__ = ["ALL_DTYPES", "OpInfo", "OP_DB", "Sample", "samples"]

FLOATS = ("float16", "bfloat16", "float32", "float64")
INTS = ("uint8", "int8", "int16", "int32", "int64")
COMPLEX = ("complex64", "complex128")
#: The 12 dtypes of ferro; every op is run at each of them (values where the op and the backend claim the
#: dtype, a refusal where either does not).
ALL_DTYPES = ("bool", *INTS, *FLOATS, *COMPLEX)


@dataclass
class Sample:
    """Positional inputs (NumPy arrays or Python numbers) and keyword arguments of one call."""

    args: tuple[Any, ...]
    kwargs: dict[str, Any] = field(default_factory=dict)
    note: str = ""


@dataclass
class OpInfo:
    """How to test one op. ``ref`` gets NumPy float64 (or the input dtype) arrays."""

    name: str
    ref: Callable[..., Any]
    arity: int = 1
    call: Callable[..., Any] | None = None  # (ferro module, *tensors, **kwargs) -> Tensor; default ferro.<name>
    domain: tuple[float, float] = (-3.0, 3.0)
    dtypes: tuple[str, ...] = ALL_DTYPES
    grad: bool = True
    gradgrad: bool = False
    edge: bool = True  # also try inf, -inf, nan, -0.0
    kwargs: tuple[dict[str, Any], ...] = ({},)
    shapes: tuple[tuple[tuple[int, ...], ...], ...] = ()
    rtol: float | None = None
    atol: float | None = None
    widen: bool = True  # compute the reference in float64 (False: in the input's dtype)
    #: Kept for records written when the suite ran a chosen subset: the suite now runs every op at all of
    #: :data:`ALL_DTYPES`, and the op's dtype rule and the backend's claims decide values or a refusal.
    dtypes: tuple[str, ...] = ALL_DTYPES

    def __call__(self, ferro: Any, *args: Any, **kwargs: Any) -> Any:
        if self.call is not None:
            return self.call(ferro, *args, **kwargs)
        return getattr(ferro, self.name)(*args, **kwargs)


UNARY_SHAPES = ((), (5,), (3, 4), (2, 3, 4), (2, 1, 3, 2), (0, 3))
BINARY_SHAPES = (((3, 4), (3, 4)), ((3, 4), (4,)), ((2, 1, 4), (3, 1)), ((), (2, 3)), ((0, 3), (3,)))


def samples(info: OpInfo, dtype: str, rng: Any, *, small: bool = False) -> Iterator[Sample]:
    """The sample calls of ``info`` at ``dtype`` (``small``: a few tiny shapes, for gradcheck)."""
    import numpy as np
    lo, hi = info.domain

    def draw(shape: tuple[int, ...]) -> Any:
        if dtype == "bool":
            return np.asarray(rng.random(shape) > 0.5)
        if dtype.startswith(("int", "uint")):
            low = max(math.ceil(lo), 0 if dtype.startswith("u") else -5)
            return rng.integers(low, max(min(math.floor(hi), 6), low + 1), shape).astype(dtype)
        x = rng.uniform(lo, hi, shape)
        if dtype in COMPLEX:  # a small imaginary part: the real domain still describes the values
            return np.asarray(x + 0.25j * rng.uniform(-1, 1, shape)).astype(dtype)
        return np.asarray(x).astype("float32" if dtype == "bfloat16" else dtype)

    shapes = info.shapes or (tuple((s,) for s in UNARY_SHAPES) if info.arity == 1 else BINARY_SHAPES)
    if small:  # the two smallest non-empty calls: finite differences cost one call per element
        shapes = tuple(sorted((s for s in shapes if 0 not in sum(s, ())),
                              key=lambda s: sum(math.prod(d) for d in s)))[:2]
    for kw in info.kwargs:
        for shape in shapes:
            yield Sample(tuple(draw(s) for s in shape), dict(kw), f"shapes {list(shape)}")
        if small:
            continue
        if len(shapes[0][0]) == 2 or any(len(s[0]) >= 2 for s in shapes):
            base = next(s for s in shapes if len(s[0]) >= 2)
            args = tuple(np.ascontiguousarray(draw(s[::-1]).T) if i == 0 else draw(s) for i, s in enumerate(base))
            yield Sample(args, dict(kw), "transposed input")
        if info.edge and dtype in FLOATS and info.arity == 1:
            edge = np.array([math.inf, -math.inf, math.nan, -0.0, 0.0, lo, hi], dtype="float32" if dtype ==
                            "bfloat16" else dtype)
            yield Sample((edge,), dict(kw), "edge values")


def _np() -> Any:
    import numpy
    return numpy


def _sp() -> Any:
    from scipy import special
    return special


def _scipy_linalg() -> Any:
    from scipy import linalg
    return linalg


def _u(fn: str, **kw: Any) -> OpInfo:
    return OpInfo(fn, lambda x, _f=fn: getattr(_np(), _f)(x), **kw)


def _softplus(x: Any, beta: float = 1.0, threshold: float = 20.0) -> Any:
    np = _np()
    return np.where(x * beta > threshold, x, np.log1p(np.exp(np.minimum(x * beta, threshold))) / beta)


def _logsumexp(x: Any, dim: int = -1, keepdim: bool = False) -> Any:
    from scipy.special import logsumexp
    return logsumexp(x, axis=dim, keepdims=keepdim)


def _f(name: str) -> Callable[..., Any]:
    return lambda ferro, *a, **k: getattr(ferro.nn.functional, name)(*a, **k)


_NN_SHAPES = (((2, 6),), ((3, 2, 4),))
SELU_A, SELU_S = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946

OP_DB: list[OpInfo] = [
    # -- unary elementwise -------------------------------------------------------
    OpInfo("neg", lambda x: -x),
    OpInfo("positive", lambda x: +x),
    _u("abs", domain=(0.2, 3)),
    _u("sign", domain=(0.2, 3), grad=False),
    _u("exp", gradgrad=True),
    _u("log", domain=(0.1, 5), gradgrad=True),
    _u("sqrt", domain=(0.1, 5), gradgrad=True),
    _u("sin", gradgrad=True), _u("cos"), _u("tan", domain=(-1.2, 1.2)),
    _u("tanh", gradgrad=True),
    OpInfo("sigmoid", lambda x: 1 / (1 + _np().exp(-x)), gradgrad=True),
    OpInfo("relu", lambda x: _np().maximum(x, 0), domain=(0.2, 3)),
    _u("square", gradgrad=True),
    _u("log1p", domain=(-0.5, 3)), _u("expm1"),
    _u("floor", grad=False), _u("ceil", grad=False), _u("trunc", grad=False),
    OpInfo("round", lambda x: _np().rint(x), grad=False),
    OpInfo("asin", lambda x: _np().arcsin(x), domain=(-0.9, 0.9)),
    OpInfo("acos", lambda x: _np().arccos(x), domain=(-0.9, 0.9)),
    OpInfo("atan", lambda x: _np().arctan(x)),
    _u("sinh"), _u("cosh"),
    OpInfo("asinh", lambda x: _np().arcsinh(x)),
    OpInfo("acosh", lambda x: _np().arccosh(x), domain=(1.1, 4)),
    OpInfo("atanh", lambda x: _np().arctanh(x), domain=(-0.9, 0.9)),
    _u("log2", domain=(0.1, 5)), _u("log10", domain=(0.1, 5)), _u("exp2"),
    OpInfo("frac", lambda x: x - _np().trunc(x), domain=(0.1, 0.9)),
    OpInfo("reciprocal", lambda x: 1 / x, domain=(0.2, 3), gradgrad=True),
    OpInfo("rsqrt", lambda x: 1 / _np().sqrt(x), domain=(0.2, 3)),
    OpInfo("erf", lambda x: _sp().erf(x)), OpInfo("erfc", lambda x: _sp().erfc(x)),
    OpInfo("erfinv", lambda x: _sp().erfinv(x), domain=(-0.9, 0.9)),
    # lgamma(-inf) is +inf (C99 and PyTorch); SciPy's gammaln gives -inf there
    OpInfo("lgamma", lambda x: _np().where(x == -_np().inf, _np().inf, _sp().gammaln(x)), domain=(0.5, 4)),
    OpInfo("digamma", lambda x: _sp().digamma(x), domain=(0.5, 4), grad=False),
    _u("isnan", grad=False), _u("isinf", grad=False), _u("isfinite", grad=False),
    OpInfo("logical_not", lambda x: _np().logical_not(x), grad=False),
    OpInfo("bitwise_not", lambda x: _np().invert(x), grad=False),
    # -- binary elementwise ---------------------------------------------------------
    OpInfo("add", lambda x, y: x + y, 2, gradgrad=True),
    OpInfo("sub", lambda x, y: x - y, 2),
    OpInfo("mul", lambda x, y: x * y, 2, gradgrad=True),
    OpInfo("div", lambda x, y: x / y, 2, domain=(0.5, 3), gradgrad=True),
    OpInfo("true_divide", lambda x, y: x / y, 2, domain=(0.5, 3)),
    OpInfo("pow", lambda x, y: x ** y, 2, domain=(0.5, 2), gradgrad=True),
    OpInfo("maximum", lambda x, y: _np().maximum(x, y), 2), OpInfo("minimum", lambda x, y: _np().minimum(x, y), 2),
    OpInfo("atan2", lambda x, y: _np().arctan2(x, y), 2, domain=(0.5, 3)),
    OpInfo("hypot", lambda x, y: _np().hypot(x, y), 2, domain=(0.5, 3)),
    OpInfo("logaddexp", lambda x, y: _np().logaddexp(x, y), 2),
    OpInfo("floor_divide", lambda x, y: _np().floor_divide(x, y), 2, domain=(1, 5), grad=False),
    OpInfo("remainder", lambda x, y: _np().remainder(x, y), 2, domain=(1, 5), grad=False),
    OpInfo("fmod", lambda x, y: _np().fmod(x, y), 2, domain=(1, 5), grad=False),
    OpInfo("xlogy", lambda x, y: _sp().xlogy(x, y), 2, domain=(0.5, 3)),
    *(OpInfo(n, lambda x, y, _f=f: getattr(_np(), _f)(x, y), 2, grad=False)
      for n, f in (("eq", "equal"), ("ne", "not_equal"), ("lt", "less"), ("le", "less_equal"),
                   ("gt", "greater"), ("ge", "greater_equal"))),
    *(OpInfo(n, lambda x, y, _f=n: getattr(_np(), _f)(x, y), 2, grad=False)
      for n in ("logical_and", "logical_or", "logical_xor")),
    *(OpInfo(n, lambda x, y, _f=f: getattr(_np(), _f)(x, y), 2, grad=False, domain=(0, 3))
      for n, f in (("bitwise_and", "bitwise_and"), ("bitwise_or", "bitwise_or"), ("bitwise_xor", "bitwise_xor"))),
    *(OpInfo(n, lambda x, y, _f=f: getattr(_np(), _f)(x, y), 2, grad=False, domain=(0, 3))
      for n, f in (("bitwise_left_shift", "left_shift"), ("bitwise_right_shift", "right_shift"))),
    OpInfo("where", lambda x, y: _np().where(x.real > 0, x, y), 2, call=lambda f, x, y: f.where(x.real > 0, x, y)),
    OpInfo("isclose", lambda x, y: _np().isclose(x, y), 2, grad=False),
    OpInfo("lerp", lambda x, y: x + 0.3 * (y - x), 2, call=lambda f, x, y: f.lerp(x, y, 0.3)),
    # -- composites with arguments -------------------------------------------------
    OpInfo("clamp", lambda x: _np().clip(x, -1, 1), call=lambda f, x: f.clamp(x, -1.0, 1.0), edge=False),
    OpInfo("clamp_min", lambda x: _np().maximum(x, 0.5), call=lambda f, x: f.clamp_min(x, 0.5), edge=False),
    OpInfo("clamp_max", lambda x: _np().minimum(x, 0.5), call=lambda f, x: f.clamp_max(x, 0.5), edge=False),
    OpInfo("nan_to_num", lambda x: _np().nan_to_num(x), grad=False, widen=False),
    # -- reductions -------------------------------------------------------------------
    *(OpInfo(n, lambda x, dim=None, keepdim=False, _f=f: getattr(_np(), _f)(x, axis=dim, keepdims=keepdim),
             shapes=(((3, 4),), ((2, 3, 4),)), edge=False, gradgrad=n in ("sum", "mean", "amax"),
             kwargs=({}, {"dim": 1}, {"dim": -1, "keepdim": True}, {"dim": (0, 1)}))
      for n, f in (("sum", "sum"), ("mean", "mean"), ("amax", "max"), ("amin", "min"))),
    *(OpInfo(n, lambda x, dim=None, keepdim=False, _f=f: getattr(_np(), _f)(x, axis=dim, keepdims=keepdim),
             shapes=(((3, 4),),), edge=False, grad=False,
             kwargs=({}, {"dim": 1}, {"dim": 0, "keepdim": True})) for n, f in (("any", "any"), ("all", "all"))),
    *(OpInfo(n, lambda x, dim=None, keepdim=False, _f=f: getattr(_np(), _f)(x, axis=dim, keepdims=keepdim),
             shapes=(((3, 4),), ((2, 3, 4),)), edge=False, grad=False,
             kwargs=({}, {"dim": 1}, {"dim": -1, "keepdim": True})) for n, f in (("argmax", "argmax"),
                                                                               ("argmin", "argmin"))),
    OpInfo("logsumexp", _logsumexp, shapes=(((3, 4),), ((2, 3, 4),)),
           kwargs=({"dim": 1}, {"dim": -1, "keepdim": True}), edge=False, gradgrad=True),
    OpInfo("softmax", lambda x, dim=-1: _np().exp(x - _logsumexp(x, dim, True)), shapes=_NN_SHAPES,
           kwargs=({"dim": -1}, {"dim": 0}), edge=False, gradgrad=True),
    OpInfo("log_softmax", lambda x, dim=-1: x - _logsumexp(x, dim, True), shapes=_NN_SHAPES,
           kwargs=({"dim": -1}, {"dim": 1}), edge=False, gradgrad=True),
    # -- matmul ---------------------------------------------------------------------
    OpInfo("matmul", lambda x, y: _np().matmul(x, y), 2, edge=False, gradgrad=True,
           shapes=(((3,), (3,)), ((2, 3), (3, 4)), ((4, 2, 3), (3,)), ((2, 1, 2, 3), (3, 3, 2)))),
    # -- activations (ferro.nn.functional) --------------------------------------------
    *(OpInfo(n, r, call=_f(n), domain=(0.1, 3) if n in ("relu6", "hardtanh") else (-3, 3),
             gradgrad=n in ("elu", "selu", "celu", "gelu", "silu", "softplus", "mish", "softsign", "logsigmoid",
                            "tanhshrink"))
      for n, r in (
          ("relu6", lambda x: _np().clip(x, 0, 6)),
          ("leaky_relu", lambda x: _np().where(x > 0, x, 0.01 * x)),
          ("elu", lambda x: _np().where(x > 0, x, _np().expm1(x))),
          ("selu", lambda x: SELU_S * _np().where(x > 0, x, SELU_A * _np().expm1(x))),
          ("celu", lambda x: _np().where(x > 0, x, _np().expm1(x))),
          ("gelu", lambda x: 0.5 * x * (1 + _sp().erf(x / math.sqrt(2)))),
          ("silu", lambda x: x / (1 + _np().exp(-x))),
          ("softplus", _softplus),
          ("mish", lambda x: x * _np().tanh(_softplus(x))),
          ("softsign", lambda x: x / (1 + _np().abs(x))),
          ("hardtanh", lambda x: _np().clip(x, -1, 1)),
          ("hardsigmoid", lambda x: _np().clip(x / 6 + 0.5, 0, 1)),
          ("hardswish", lambda x: x * _np().clip(x / 6 + 0.5, 0, 1)),
          ("logsigmoid", lambda x: -_softplus(-x)),
          ("tanhshrink", lambda x: x - _np().tanh(x)),
      )),
    OpInfo("threshold", lambda x: _np().where(x > 0.5, x, -1.0), call=lambda f, x: f.nn.functional.threshold(
        x, 0.5, -1.0)),
    OpInfo("glu", lambda x: x[..., :3] / (1 + _np().exp(-x[..., 3:])), call=_f("glu"),
           shapes=(((2, 6),), ((3, 2, 6),)), edge=False),
]

_M = (((3, 4),), ((2, 3, 4),))


def _mv(name: str, ref: Callable[..., Any], call: Callable[..., Any], **kw: Any) -> OpInfo:
    return OpInfo(name, ref, call=call, shapes=kw.pop("shapes", _M), edge=False, **kw)


OP_DB += [
    _mv("narrow", lambda x: x[:, 1:3], lambda f, x: f.narrow(x, 1, 1, 2)),
    _mv("select", lambda x: x[:, -1], lambda f, x: f.select(x, 1, -1)),
    _mv("unbind", lambda x: x[1], lambda f, x: f.unbind(x)[1]),
    _mv("split", lambda x: x[:, 2:], lambda f, x: f.split(x, 2, 1)[-1]),
    _mv("chunk", lambda x: x[:, :2], lambda f, x: f.chunk(x, 2, 1)[0]),
    _mv("tensor_split", lambda x: x[:, 1:3], lambda f, x: f.tensor_split(x, [1, 3], 1)[1]),
    _mv("unflatten", lambda x: x.reshape(*x.shape[:-1], 2, 2), lambda f, x: f.unflatten(x, -1, (2, 2))),
    _mv("movedim", lambda x: _np().moveaxis(x, 0, -1), lambda f, x: f.movedim(x, 0, -1)),
    _mv("flip", lambda x: _np().flip(x, (0, -1)), lambda f, x: f.flip(x, (0, -1))),
    _mv("roll", lambda x: _np().roll(x, (1, -2), (0, -1)), lambda f, x: f.roll(x, (1, -2), (0, -1))),
    _mv("repeat", lambda x: _np().tile(x, (2,) + (1,) * (x.ndim - 2) + (3,)),
        lambda f, x: x.repeat(2, *([1] * (x.ndim - 2)), 3)),
    _mv("tile", lambda x: _np().tile(x, (2, 1)), lambda f, x: f.tile(x, (2, 1))),
    _mv("repeat_interleave", lambda x: _np().repeat(x, 2, axis=1), lambda f, x: f.repeat_interleave(x, 2, 1)),
    _mv("tril", lambda x: _np().tril(x, 1), lambda f, x: f.tril(x, 1)),
    _mv("triu", lambda x: _np().triu(x, -1), lambda f, x: f.triu(x, -1)),
    _mv("diagonal", lambda x: _np().diagonal(x, 1, -2, -1), lambda f, x: f.diagonal(x, 1, -2, -1)),
    _mv("diag_embed", lambda x: _np().stack([_np().diag(r) for r in x.reshape(-1, x.shape[-1])]).reshape(
        *x.shape, x.shape[-1]), lambda f, x: f.diag_embed(x)),
    _mv("diag", lambda x: _np().diag(x, 1), lambda f, x: f.diag(x, 1), shapes=(((3, 4),), ((5,),))),
    _mv("pad", lambda x: _np().pad(x, [(0, 0)] * (x.ndim - 1) + [(1, 2)], mode="reflect"),
        lambda f, x: f.nn.functional.pad(x, (1, 2), mode="reflect")),
]

_IDX = [[0, 2, 1, 0], [2, 2, 1, 0]]  # repeated indices on purpose


def _scatter_ref(x: Any, how: str, include_self: bool = True) -> Any:
    np = _np()
    out = x.copy()
    idx = np.array(_IDX)
    src = _src(x)
    cols = np.broadcast_to(np.arange(4), idx.shape)
    if not include_self:
        big = np.iinfo(x.dtype).max if x.dtype.kind in "iu" else np.inf
        out[idx, cols] = {"sum": 0, "amax": -big, "amin": big, "prod": 1}[how]
    ufunc = {"sum": np.add, "amax": np.maximum, "amin": np.minimum, "prod": np.multiply}[how]
    ufunc.at(out, (idx, cols), src)
    return out


def _src(x: Any) -> Any:
    return _np().linspace(-1, 1, 8).reshape(2, 4).astype(x.dtype)


def _ix(f: Any, x: Any) -> Any:
    return f.tensor(_IDX, device=x.device)


def _fsrc(f: Any, x: Any) -> Any:
    return f.tensor(_src(x.detach().float().numpy()), device=x.device).to(x.dtype)


def _put(x: Any) -> Any:
    out = x.copy()
    _np().put_along_axis(out, _np().array([[1, 0, 2, 0]]), _src(x)[:1], 0)
    return out


def _add_cols(x: Any, cols: list[int], v: float) -> Any:
    out = x.copy()
    _np().add.at(out, (slice(None), cols), v)
    return out


def _put_cols(x: Any, cols: list[int], v: float) -> Any:
    out = x.copy()
    out[:, cols] = v
    return out


def _mscatter(x: Any) -> Any:
    out = x.copy()
    m = x.real > 0  # the real part: complex numbers have no order
    out[m] = _np().arange(x.size).astype(x.dtype)[: int(m.sum())]
    return out


_S = (((3, 4),),)
OP_DB += [
    _mv("gather", lambda x: _np().take_along_axis(x, _np().array(_IDX), 0), lambda f, x: f.gather(x, 0, _ix(f, x)),
        shapes=_S),
    _mv("take_along_dim", lambda x: _np().take_along_axis(x, _np().array(_IDX), 0),
        lambda f, x: f.take_along_dim(x, _ix(f, x), 0), shapes=_S),
    _mv("scatter", _put, lambda f, x: f.scatter(x, 0, f.tensor([[1, 0, 2, 0]], device=x.device), _fsrc(f, x)[:1]),
        shapes=_S),
    _mv("scatter_add", lambda x: _scatter_ref(x, "sum"), lambda f, x: f.scatter_add(x, 0, _ix(f, x), _fsrc(f, x)),
        shapes=_S),
    _mv("scatter_reduce", lambda x, reduce, include_self: _scatter_ref(x, reduce, include_self),
        lambda f, x, reduce, include_self: f.scatter_reduce(x, 0, _ix(f, x), _fsrc(f, x), reduce,
                                                           include_self=include_self), shapes=_S,
        kwargs=({"reduce": "sum", "include_self": True}, {"reduce": "amax", "include_self": True},
                {"reduce": "amin", "include_self": False})),
    _mv("index_select", lambda x: x[:, [2, 0, 2]], lambda f, x: f.index_select(x, 1, f.tensor([2, 0, 2],
        device=x.device)), shapes=_S),
    _mv("index_add", lambda x: _add_cols(x, [2, 0, 2], 2.0),
        lambda f, x: f.index_add(x, 1, f.tensor([2, 0, 2], device=x.device), f.full((3, 3), 2.0,
                                                                                  dtype=x.dtype, device=x.device)),
        shapes=_S),
    _mv("index_copy", lambda x: _put_cols(x, [3, 1], 5.0),
        lambda f, x: f.index_copy(x, 1, f.tensor([3, 1], device=x.device), f.full((3, 2), 5.0, dtype=x.dtype,
                                                                                  device=x.device)), shapes=_S),
    _mv("index_fill", lambda x: _put_cols(x, [3, 1], 5.0), lambda f, x: f.index_fill(x, 1, f.tensor(
        [3, 1], device=x.device), 5.0), shapes=_S),
    _mv("masked_fill", lambda x: _np().where(x.real > 0, 7, x), lambda f, x: f.masked_fill(x, x.real > 0, 7)),
    _mv("masked_select", lambda x: x[x.real > 0], lambda f, x: f.masked_select(x, x.real > 0)),
    _mv("masked_scatter", lambda x: _mscatter(x), lambda f, x: f.masked_scatter(x, x.real > 0, f.arange(
        x.numel(), device=x.device).to(x.dtype)), shapes=_S),
    _mv("take", lambda x: x.reshape(-1)[[5, 0, 5]], lambda f, x: f.take(x, f.tensor([5, 0, 5], device=x.device))),
    OpInfo("nonzero", lambda x: _np().argwhere(x), call=lambda f, x: f.nonzero(x), grad=False, edge=False,
           shapes=_M),
]


def _sorted(x: Any, dim: int = -1) -> Any:
    return _np().sort(x, axis=dim, kind="stable")


def _mode(x: Any) -> Any:
    """The most frequent value of each row of the last dim, the smallest of equally frequent ones (as PyTorch)."""
    np = _np()
    rows = x.reshape(-1, x.shape[-1])
    out = []
    for r in rows:
        vals, counts = np.unique(r, return_counts=True)
        out.append(vals[np.argmax(counts)])
    return np.asarray(out, dtype=x.dtype).reshape(x.shape[:-1])


def _median(x: Any) -> Any:
    """The lower median of the last dim; NaN where the row has one (PyTorch propagates NaN)."""
    np = _np()
    return np.where(np.isnan(x).any(-1), np.nan, _sorted(x)[..., (x.shape[-1] - 1) // 2])


def _ints(name: str, ref: Callable[..., Any], call: Callable[..., Any], **kw: Any) -> OpInfo:
    return OpInfo(name, ref, call=call, grad=False, edge=False, domain=(0, 4),
                  shapes=kw.pop("shapes", (((12,),),)), **kw)


OP_DB += [
    _mv("argsort", lambda x: _np().argsort(x, axis=-1, kind="stable"), lambda f, x: f.argsort(x), grad=False),
    _mv("sort", _sorted, lambda f, x: f.sort(x).values),
    _mv("topk", lambda x: _np().sort(x, axis=-1)[..., ::-1][..., :2], lambda f, x: f.topk(x, 2).values),
    _mv("kthvalue", lambda x: _sorted(x)[..., 1], lambda f, x: f.kthvalue(x, 2).values),
    _mv("median", _median, lambda f, x: f.median(x, -1).values),
    _mv("mode", _mode, lambda f, x: f.mode(x, -1).values, grad=False,
        domain=(7, 8)),
    _mv("cumsum", lambda x: _np().cumsum(x, axis=1), lambda f, x: f.cumsum(x, 1)),
    _mv("cumprod", lambda x: _np().cumprod(x, axis=0), lambda f, x: f.cumprod(x, 0), domain=(0.5, 1.5)),
    _mv("cummax", lambda x: _np().maximum.accumulate(x, axis=-1), lambda f, x: f.cummax(x, -1).values),
    _mv("cummin", lambda x: _np().minimum.accumulate(x, axis=0), lambda f, x: f.cummin(x, 0).values),
    _mv("logcumsumexp", lambda x: _np().log(_np().cumsum(_np().exp(x), axis=-1)) if x.dtype.kind == "c"
        else _np().logaddexp.accumulate(x, axis=-1), lambda f, x: f.logcumsumexp(x, -1)),  # NumPy's has no complex
    _mv("prod", lambda x: _np().prod(x, axis=-1), lambda f, x: f.prod(x, -1), domain=(0.5, 1.5)),
    _mv("var", lambda x: _np().var(x, axis=-1, ddof=1), lambda f, x: f.var(x, -1)),
    _mv("std", lambda x: _np().std(x, ddof=0), lambda f, x: f.std(x, correction=0)),
    _mv("norm", lambda x: _np().sqrt((_np().abs(x) ** 2).sum(axis=-1)), lambda f, x: f.norm(x, dim=-1)),
    _mv("count_nonzero", lambda x: (x != 0).sum(), lambda f, x: f.count_nonzero(x), grad=False),
    _ints("searchsorted", lambda x: _np().searchsorted([0, 1, 2], x), lambda f, x: f.searchsorted(
        f.tensor([0, 1, 2], device=x.device), x)),
    _ints("bucketize", lambda x: _np().searchsorted([0, 1, 2], x, side="right"), lambda f, x: f.bucketize(
        x, f.tensor([0, 1, 2], device=x.device), right=True)),
    _ints("unique", lambda x: _np().unique(x), lambda f, x: f.unique(x)),
    _ints("unique_consecutive", lambda x: x[_np().r_[True, x[1:] != x[:-1]]], lambda f, x: f.unique_consecutive(x)),
    _ints("bincount", lambda x: _np().bincount(x), lambda f, x: f.bincount(x)),
    OpInfo("histc", lambda x: _np().histogram(x, 4, (-3, 3))[0], call=lambda f, x: f.histc(x, 4, -3, 3).long(),
           grad=False, edge=False, shapes=(((20,),),)),
]

def _lsm(x: Any, axis: int = 1) -> Any:
    return x - _logsumexp(x, axis, True)


def _norm_ref(x: Any, axes: tuple[int, ...], eps: float = 1e-5) -> Any:
    mu = x.mean(axis=axes, keepdims=True)
    return (x - mu) / _np().sqrt(((x - mu) ** 2).mean(axis=axes, keepdims=True) + eps)


_T3 = [0, 2, 1, 2]


_LOSSES = {"nll_loss", "cross_entropy", "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "binary_cross_entropy",
           "binary_cross_entropy_with_logits", "kl_div", "cosine_embedding_loss", "margin_ranking_loss"}
_SMOOTH_LOSSES = _LOSSES - {"l1_loss", "smooth_l1_loss", "huber_loss", "margin_ranking_loss"}


def _nn(name: str, ref: Callable[..., Any], call: Callable[..., Any], shapes: Any = (((4, 3),),),
        **kw: Any) -> OpInfo:
    return OpInfo(name, ref, call=lambda f, *a, _c=call: _c(f, f.nn.functional, *a), shapes=shapes, edge=False,
                  gradgrad=kw.pop("gradgrad", name in _SMOOTH_LOSSES or name in ("linear", "layer_norm", "conv2d")),
                  **kw)


def _t(f: Any, x: Any, v: Any) -> Any:
    return f.tensor(v, device=x.device)


def _w(f: Any, x: Any, v: Any) -> Any:
    return f.tensor(v, device=x.device).to(x.dtype)


def _clamped_norm(x: Any, eps: float) -> Any:
    """Row norms clamped at ``eps``, as PyTorch's cosine similarity divides by them (an all-zero row: cos 0,
    not 0 / 0)."""
    return _np().maximum(_np().linalg.norm(x, axis=1), eps)


_W = [[0.5, -1.0, 2.0], [1.5, 0.25, -0.5]]
OP_DB += [
    _nn("linear", lambda x: x @ _np().array(_W).astype(x.dtype).T + 1, lambda f, F, x: F.linear(x, _w(f, x, _W),
                                                                               _w(f, x, [1.0, 1.0]))),
    _nn("bilinear", lambda x: _np().einsum("bi,kij,bj->bk", x, _np().ones((2, 3, 3)), x),
        lambda f, F, x: F.bilinear(x, x, _w(f, x, _np().ones((2, 3, 3))))),
    _nn("embedding", lambda x: x[[2, 0, 2]], lambda f, F, x: F.embedding(_t(f, x, [2, 0, 2]), x)),
    _nn("one_hot", lambda x: _np().eye(3, dtype=_np().int64)[_T3], lambda f, F, x: F.one_hot(_t(f, x, _T3), 3),
        grad=False),
    _nn("layer_norm", lambda x: _norm_ref(x, (-1,)), lambda f, F, x: F.layer_norm(x, (3,))),
    _nn("rms_norm", lambda x: x / _np().sqrt((x * x).mean(-1, keepdims=True) + 1e-6),
        lambda f, F, x: F.rms_norm(x, (3,), eps=1e-6)),
    _nn("group_norm", lambda x: _norm_ref(x.reshape(2, 2, -1), (-1,)).reshape(x.shape),
        lambda f, F, x: F.group_norm(x, 2), shapes=(((2, 4, 3),),)),
    _nn("instance_norm", lambda x: _norm_ref(x, (2,)), lambda f, F, x: F.instance_norm(x), shapes=(((2, 4, 3),),)),
    _nn("batch_norm", lambda x: _norm_ref(x, (0, 2)), lambda f, F, x: F.batch_norm(x, None, None, training=True),
        shapes=(((4, 2, 3),),)),
    _nn("local_response_norm", lambda x: x / (1 + 1e-4 / 3 * _np().stack(
        [_np().pad(x * x, ((0, 0), (1, 1), (0, 0)))[:, i:i + x.shape[1]] for i in range(3)]).sum(0)) ** 0.75,
        lambda f, F, x: F.local_response_norm(x, 3), shapes=(((2, 4, 3),),)),
    _nn("cosine_similarity", lambda x: (x * x[::-1]).sum(1) / (_clamped_norm(x, 1e-8) * _clamped_norm(x[::-1], 1e-8)),
        lambda f, F, x: F.cosine_similarity(x, x.flip(0))),
    _nn("pairwise_distance", lambda x: _np().linalg.norm(x - x[::-1] + 1e-6, axis=-1),
        lambda f, F, x: F.pairwise_distance(x, x.flip(0))),
    _nn("nll_loss", lambda x: -_lsm(x)[range(4), _T3].mean(), lambda f, F, x: F.nll_loss(F.log_softmax(x, 1),
                                                                                        _t(f, x, _T3))),
    _nn("cross_entropy", lambda x: -(_lsm(x)[range(4), _T3] * _np().array([1, 0, 1, 1])).sum() / 3,
        lambda f, F, x: F.cross_entropy(x, _t(f, x, [0, -100, 1, 2]))),
    _nn("mse_loss", lambda x: ((x - x[::-1]) ** 2).mean(), lambda f, F, x: F.mse_loss(x, x.flip(0))),
    _nn("l1_loss", lambda x: _np().abs(x - x[::-1]).sum(), lambda f, F, x: F.l1_loss(x, x.flip(0), "sum")),
    _nn("smooth_l1_loss", lambda x: _np().where(_np().abs(x - 1) < 1, 0.5 * (x - 1) ** 2,
                                                 _np().abs(x - 1) - 0.5).mean(),
        lambda f, F, x: F.smooth_l1_loss(x, f.full_like(x, 1))),
    _nn("huber_loss", lambda x: _np().where(_np().abs(x - 1) < 1, 0.5 * (x - 1) ** 2,
                                             _np().abs(x - 1) - 0.5).mean(),
        lambda f, F, x: F.huber_loss(x, f.full_like(x, 1))),
    _nn("binary_cross_entropy", lambda x: -_np().log(1 / (1 + _np().exp(-x))).mean(),
        lambda f, F, x: F.binary_cross_entropy(x.sigmoid(), f.ones_like(x))),
    _nn("binary_cross_entropy_with_logits", lambda x: _np().logaddexp(0, -x).mean(),
        lambda f, F, x: F.binary_cross_entropy_with_logits(x, f.ones_like(x))),
    _nn("kl_div", lambda x: (_np().exp(_lsm(x[::-1])) * (_lsm(x[::-1]) - _lsm(x))).sum() / 4,
        lambda f, F, x: F.kl_div(F.log_softmax(x, 1), F.softmax(x.flip(0), 1), reduction="batchmean")),
    _nn("cosine_embedding_loss", lambda x: (1 - (x * x[::-1]).sum(1) / (_clamped_norm(x, 1e-12) *
                                                                         _clamped_norm(x[::-1], 1e-12))).mean(),
        lambda f, F, x: F.cosine_embedding_loss(x, x.flip(0), f.ones(4, device=x.device))),
    # -target * (x1 - x2) with a float target: the difference is negated as a float (NumPy's -x of uint8 wraps)
    _nn("margin_ranking_loss", lambda x: _np().maximum(0, -1.0 * (x[:, 0] - x[:, 1]) + 0.1).mean(),
        lambda f, F, x: F.margin_ranking_loss(x[:, 0], x[:, 1], f.ones(4, device=x.device), 0.1)),
    _nn("scaled_dot_product_attention", lambda x: _np().exp(_lsm(x @ x.swapaxes(-1, -2) / _np().sqrt(3), -1)) @ x,
        lambda f, F, x: F.scaled_dot_product_attention(x, x, x), shapes=(((2, 4, 3),),)),
]

def _windows(x: Any, k: tuple[int, ...], pad: int, fill: float = 0.0) -> Any:
    np = _np()
    n = len(k)
    xp = np.pad(x, [(0, 0), (0, 0)] + [(pad, pad)] * n, constant_values=fill)
    return np.lib.stride_tricks.sliding_window_view(xp, k, axis=tuple(range(2, 2 + n)))


_CONV_W2 = [[[[0.2, -0.5, 0.1], [0.3, 0.0, -0.2], [0.4, 0.1, 0.5]]] * 2] * 3
_CONV_W1 = [[[0.5, -1.0, 0.25]] * 2] * 3

OP_DB += [
    _nn("conv2d", lambda x: _np().einsum("ncijkl,ockl->noij", _windows(x, (3, 3), 1),
                                        _np().array(_CONV_W2).astype(x.dtype)),
        lambda f, F, x: F.conv2d(x, _w(f, x, _CONV_W2), padding=1), shapes=(((2, 2, 5, 4),),)),
    _nn("conv1d", lambda x: _np().einsum("ncik,ock->noi", _windows(x, (3,), 0), _np().array(_CONV_W1).astype(x.dtype)),
        lambda f, F, x: F.conv1d(x, _w(f, x, _CONV_W1)), shapes=(((2, 2, 6),),)),
    _nn("max_pool2d", lambda x: _windows(x, (2, 2), 0)[:, :, ::2, ::2].max((-2, -1)),
        lambda f, F, x: F.max_pool2d(x, 2), shapes=(((2, 2, 4, 6),),)),
    _nn("avg_pool2d", lambda x: _windows(x, (3, 3), 1).mean((-2, -1)),
        lambda f, F, x: F.avg_pool2d(x, 3, stride=1, padding=1), shapes=(((1, 2, 4, 5),),)),
    _nn("max_pool1d", lambda x: _windows(x, (2,), 0)[:, :, ::2].max(-1), lambda f, F, x: F.max_pool1d(x, 2),
        shapes=(((2, 3, 6),),)),
    _nn("avg_pool1d", lambda x: _windows(x, (3,), 0).mean(-1), lambda f, F, x: F.avg_pool1d(x, 3, 1),
        shapes=(((2, 3, 6),),)),
    _nn("adaptive_avg_pool2d", lambda x: x.reshape(*x.shape[:2], 2, 2, 3, 2).mean((3, 5)),
        lambda f, F, x: F.adaptive_avg_pool2d(x, (2, 3)), shapes=(((1, 2, 4, 6),),)),
    _nn("adaptive_max_pool2d", lambda x: x.reshape(*x.shape[:2], 2, 2, 3, 2).max((3, 5)),
        lambda f, F, x: F.adaptive_max_pool2d(x, (2, 3)), shapes=(((1, 2, 4, 6),),)),
    _nn("interpolate", lambda x: x.repeat(2, axis=2).repeat(3, axis=3),
        lambda f, F, x: F.interpolate(x, scale_factor=(2, 3)), shapes=(((1, 2, 3, 2),),)),
]

OP_DB += [
    OpInfo("outer", lambda x, y: _np().outer(x, y), 2, shapes=(((3,), (4,)),), edge=False),
    OpInfo("inner", lambda x, y: _np().inner(x, y), 2, shapes=(((2, 3), (4, 3)),), edge=False),
    OpInfo("vdot", lambda x, y: _np().vdot(x, y), 2, shapes=(((5,), (5,)),), edge=False),
    OpInfo("tensordot", lambda x, y: _np().tensordot(x, y, 1), 2, call=lambda f, x, y: f.tensordot(x, y, 1),
           shapes=(((2, 3), (3, 4)),), edge=False),
    OpInfo("kron", lambda x, y: _np().kron(x, y), 2, shapes=(((2, 3), (2, 2)),), edge=False),
    OpInfo("einsum", lambda x, y: _np().einsum("bij,jk->bik", x, y), 2,
           call=lambda f, x, y: f.einsum("bij,jk->bik", x, y), shapes=(((2, 3, 4), (4, 2)),), edge=False),
]

# -- complex numbers and the FFT ------------------------------------------------------------------------------
# At each dtype the op gets the sample itself (complex samples have an imaginary part). The float64 gradient
# checks make their real input complex by x * (1 - 0.6j) + 0.3j, so they run through complex numbers back to a
# real input.
_ZC = 1 - 0.6j


def _zf(name: str, fft: bool = False) -> Callable[..., Any]:
    def call(f: Any, x: Any, **kw: Any) -> Any:
        dev = x.device  # a device without complex dtypes gets its float64 gradient check on the real input
        grad_path = x.requires_grad and x.dtype is f.float64
        z = x * _ZC + 0.3j if grad_path and f.complex128 in dev.backend.dtypes(dev.index) else x
        return getattr(f.fft if fft else f, name)(z, **kw)
    return call


def _fft_ref(name: str, complex_in: bool) -> Callable[..., Any]:
    def ref(x: Any, dim: Any = None, **kw: Any) -> Any:
        if dim is None and "s" in kw:  # the last len(s) axes, named (NumPy 2 wants them)
            dim = tuple(range(x.ndim - len(kw["s"]), x.ndim))
        if dim is not None:
            kw["axis" if isinstance(dim, int) else "axes"] = dim
        if name in ("hfft2", "hfftn", "ihfft2", "ihfftn"):  # not in numpy.fft
            from scipy import fft
            return getattr(fft, name)(x, **kw)
        return getattr(_np().fft, name)(x, **kw)
    return ref


_FFT1 = (((8,),), ((3, 5),))
_FFTN = (((4, 6),), ((2, 3, 4),))
_FFT_KW1 = ({}, {"n": 5, "norm": "ortho"}, {"n": 12, "dim": 0, "norm": "forward"})
_FFT_KWN = ({}, {"s": (3, 5), "norm": "ortho"}, {"s": (4, 2), "dim": (0, 1), "norm": "forward"})
OP_DB += [
    OpInfo("real", lambda x: x.real, call=_zf("real"), edge=False),
    OpInfo("imag", lambda x: x.imag, call=_zf("imag"), edge=False),
    OpInfo("conj", lambda x: x.conj(), call=_zf("conj"), edge=False, gradgrad=True),
    OpInfo("conj_physical", lambda x: x.conj(), call=_zf("conj_physical"), edge=False),
    OpInfo("resolve_conj", lambda x: x, call=_zf("resolve_conj"), edge=False),
    OpInfo("resolve_neg", lambda x: x, call=_zf("resolve_neg"), edge=False),
    OpInfo("angle", lambda x: _np().angle(x), call=_zf("angle"), edge=False, gradgrad=True),
    OpInfo("sgn", lambda x: _np().where(x == 0, 0, x / _np().where(x == 0, 1, _np().abs(x))), call=_zf("sgn"),
           edge=False),
    OpInfo("complex", lambda x, y: x + 1j * y, 2, gradgrad=True),
    OpInfo("polar", lambda x, y: x * _np().exp(1j * y), 2, domain=(0.5, 3)),
    OpInfo("view_as_real", lambda x: _np().stack([x.real, x.imag], -1), call=_zf("view_as_real"), edge=False),
    OpInfo("view_as_complex", lambda x: x[..., 0] + 1j * x[..., 1], edge=False,
           shapes=(((3, 2),), ((2, 4, 2),))),
    *(OpInfo(f"fft.{n}", _fft_ref(n, True), call=_zf(n, True),
             shapes=_FFT1, kwargs=_FFT_KW1, edge=False, gradgrad=n == "fft")
      for n in ("fft", "ifft", "irfft", "hfft")),
    *(OpInfo(f"fft.{n}", _fft_ref(n, False), call=lambda f, x, _n=n, **k: getattr(f.fft, _n)(x, **k), shapes=_FFT1,
             kwargs=_FFT_KW1, edge=False, gradgrad=n == "rfft")
      for n in ("rfft", "ihfft")),
    *(OpInfo(f"fft.{n}", _fft_ref(n, True), call=_zf(n, True),
             shapes=_FFTN, kwargs=_FFT_KWN, edge=False, gradgrad=n == "irfftn")
      for n in ("fft2", "ifft2", "irfft2", "fftn", "ifftn", "irfftn", "hfft2", "hfftn")),
    *(OpInfo(f"fft.{n}", _fft_ref(n, False), call=lambda f, x, _n=n, **k: getattr(f.fft, _n)(x, **k), shapes=_FFTN,
             kwargs=_FFT_KWN, edge=False)
      for n in ("rfft2", "rfftn", "ihfft2", "ihfftn")),
    *(OpInfo(f"fft.{n}", lambda x, dim=None, _n=n: getattr(_np().fft, _n)(x, axes=dim),
             call=lambda f, x, _n=n, **k: getattr(f.fft, _n)(x, **k), shapes=(((5,),), ((4, 5),), ((2, 3, 4),)),
             kwargs=({}, {"dim": -1}, {"dim": (0, -1)}), edge=False) for n in ("fftshift", "ifftshift")),
    *(OpInfo(f"fft.{n}", lambda x, _n=n: getattr(_np().fft, _n)(x.shape[-1], 0.5),
             call=lambda f, x, _n=n: getattr(f.fft, _n)(x.shape[-1], 0.5, dtype=x.dtype, device=x.device),
             grad=False, edge=False, shapes=(((1,),), ((5,),), ((8,),)))
      for n in ("fftfreq", "rfftfreq")),
]

def _prim(name: str) -> Any:
    from .._ops import REGISTRY  # the primitive itself: no public function calls it alone
    return REGISTRY[name].fn


OP_DB += [  # the FFT primitives, called directly
    OpInfo("fft_c2c", lambda x: _np().fft.fft(x, axis=-1), call=lambda f, x: _prim("fft_c2c")(
        x, (x.ndim - 1,), "backward", True), shapes=_FFT1, edge=False),
    OpInfo("fft_r2c", lambda x: _np().fft.rfft(x, axis=-1), call=lambda f, x: _prim("fft_r2c")(
        x, (x.ndim - 1,), "backward"), shapes=_FFT1, edge=False),
    OpInfo("fft_c2r", lambda x: _np().fft.irfft(x, 6, axis=-1), call=lambda f, x: _prim("fft_c2r")(
        x, (x.ndim - 1,), "backward", 6), shapes=(((4,),), ((3, 4),)), edge=False),
]

# -- shape ops, joins, indexing, conversion --------------------------------------------------------------------


def _index_put_ref(x: Any) -> Any:
    out = x.copy()
    out[[1, 0]] = 5
    return out


OP_DB += [
    _mv("reshape", lambda x: x.reshape(-1, 2), lambda f, x: f.reshape(x, (-1, 2))),
    _mv("view", lambda x: x.reshape(*x.shape[:-1], 2, -1), lambda f, x: x.view(*x.shape[:-1], 2, -1)),
    _mv("permute", lambda x: x.transpose(), lambda f, x: f.permute(x, tuple(range(x.ndim))[::-1])),
    _mv("expand", lambda x: _np().broadcast_to(x[None], (2, *x.shape)), lambda f, x: x[None].expand(2, *x.shape)),
    _mv("contiguous", lambda x: _np().swapaxes(x, 0, -1), lambda f, x: x.transpose(0, -1).contiguous()),
    _mv("clone", lambda x: x, lambda f, x: f.clone(x)),
    _mv("cat", lambda x: _np().concatenate([x, x[::-1]], 0), lambda f, x: f.cat([x, x.flip(0)], 0)),
    _mv("stack", lambda x: _np().stack([x, x[::-1]], 1), lambda f, x: f.stack([x, x.flip(0)], 1)),
    _mv("getitem", lambda x: x[1:, [0, 2]][..., ::2], lambda f, x: x[1:, [0, 2]][..., ::2]),
    _mv("index_put", _index_put_ref, lambda f, x: f.index_put(x, (f.tensor([1, 0], device=x.device),), f.full(
        x.shape[1:], 5, dtype=x.dtype, device=x.device))),
    _mv("cast", lambda x: x.astype("complex64" if x.dtype.kind == "c" else "float32"),
        lambda f, x: x.to(f.complex64 if x.dtype.is_complex else f.float32), widen=False,
        grad=False),  # to float32 and back: finite differences at float32 precision; tests/test_tensor.py
]

# -- random ops at parameters that leave nothing to chance -------------------------------------------------------


def _rnd(name: str, ref: Callable[..., Any], call: Callable[..., Any], **kw: Any) -> OpInfo:
    """A random op's entry: seeded before each call, so the result does not depend on the tests run before."""
    def seeded(f: Any, *a: Any, **k: Any) -> Any:
        f.manual_seed(0)
        return call(f, *a, **k)
    return _mv(name, ref, seeded, grad=False, **kw)


OP_DB += [
    _rnd("dropout", lambda x: x * 0, lambda f, x: f.nn.functional.dropout(x, 1.0)),
    _rnd("dropout2d", lambda x: x * 0, lambda f, x: f.nn.functional.dropout2d(x, 1.0), shapes=(((2, 3, 4),),)),
    _rnd("bernoulli", lambda x: (x.real > 1).astype(x.dtype), lambda f, x: f.bernoulli((x.real > 1).to(x.dtype)),
         domain=(0, 3)),
    _rnd("multinomial", lambda x: _np().array([[2, 2], [0, 0], [3, 3]]), lambda f, x: f.multinomial(
        f.eye(4, dtype=x.dtype, device=x.device)[[2, 0, 3]], 2, replacement=True), shapes=_S),
    _rnd("normal", lambda x: x, lambda f, x: f.normal(x, 0.0)),
    _rnd("randperm", lambda x: _np().arange(7), lambda f, x: f.randperm(7, dtype=x.dtype, device=x.device)
        .sort().values, shapes=_S),
]

# -- linalg: on symmetric positive-definite inputs; factorizations compared through what does not depend on signs


def _spd_np(x: Any) -> Any:
    np = _np()
    return x @ np.swapaxes(x, -1, -2).conj() + 3 * np.eye(x.shape[-1])


def _spd(f: Any, x: Any) -> Any:
    return x @ x.mT.conj() + 3 * f.eye(x.shape[-1], dtype=x.dtype, device=x.device)


def _la(name: str, ref: Callable[..., Any], call: Callable[..., Any], **kw: Any) -> OpInfo:
    return OpInfo(f"linalg.{name}", lambda x, _r=ref: _r(_np().linalg, _spd_np(x)), call=lambda f, x, _c=call: _c(
        f.linalg, _spd(f, x)), shapes=kw.pop("shapes", (((3, 3),), ((2, 3, 3),))), edge=False,
        rtol=kw.pop("rtol", 1e-4), atol=kw.pop("atol", 1e-4), **kw)


_B3 = [[1.0, -2.0], [0.5, 3.0], [2.0, 1.0]]
OP_DB += [
    _la("inv", lambda L, a: L.inv(a), lambda L, a: L.inv(a)),
    _la("det", lambda L, a: L.det(a), lambda L, a: L.det(a)),
    _la("slogdet", lambda L, a: L.slogdet(a)[1], lambda L, a: L.slogdet(a)[1]),
    _la("solve", lambda L, a: L.solve(a, _np().broadcast_to(_np().array(_B3), (*a.shape[:-2], 3, 2))),
        lambda L, a: L.solve(a, _B3t(a))),
    _la("cholesky", lambda L, a: L.cholesky(a), lambda L, a: L.cholesky(a)),
    _la("eigh", lambda L, a: L.eigh(a)[0], lambda L, a: L.eigh(a)[0]),
    _la("eigvalsh", lambda L, a: L.eigvalsh(a), lambda L, a: L.eigvalsh(a)),
    _la("svd", lambda L, a: L.svd(a)[1], lambda L, a: L.svd(a)[1]),
    _la("svdvals", lambda L, a: L.svd(a)[1], lambda L, a: L.svdvals(a)),
    _la("qr", lambda L, a: a, lambda L, a: L.qr(a)[0] @ L.qr(a)[1]),
    _la("pinv", lambda L, a: L.pinv(a), lambda L, a: L.pinv(a)),
    _la("lstsq", lambda L, a: L.solve(a, _np().broadcast_to(_np().array(_B3), (*a.shape[:-2], 3, 2))),
        lambda L, a: L.lstsq(a, _B3t(a)).solution),
    _la("lu", lambda L, a: a, lambda L, a: _lu_product(L.lu(a))),
    _la("lu_factor", lambda L, a: a, lambda L, a: _lu_factor_product(L, a), shapes=(((3, 3),),)),
    _la("vector_norm", lambda L, a: L.norm(a.reshape(*a.shape[:-2], -1), axis=-1),
        lambda L, a: L.vector_norm(a, dim=(-2, -1))),
    _la("matrix_norm", lambda L, a: L.norm(a, "fro", axis=(-2, -1)), lambda L, a: L.matrix_norm(a)),
    OpInfo("linalg.cross", lambda x: _np().cross(x, x[..., ::-1]), call=lambda f, x: f.linalg.cross(x, x.flip(-1)),
           shapes=(((3,),), ((4, 3),)), edge=False),
    OpInfo("linalg.cdist", lambda x: _np().sqrt((_np().abs(x[:, None] - x[None, ::-1]) ** 2).sum(-1)),
           call=lambda f, x: f.linalg.cdist(x, x.flip(0)), shapes=(((4, 3),),), edge=False, rtol=1e-4, atol=1e-4),
]


def _B3t(a: Any) -> Any:
    import ferro
    b = ferro.tensor(_B3, device=a.device).to(a.dtype)
    return b.expand(*a.shape[:-2], 3, 2)


def _lu_product(plu: Any) -> Any:
    p, lo, up = plu
    return p @ lo @ up


def _lu_factor_product(L: Any, a: Any) -> Any:
    """``a`` rebuilt from ``lu_factor``'s packed LU and its (1-based, LAPACK) row swaps."""
    import ferro
    lu, piv = L.lu_factor(a)
    n = a.shape[-1]
    m = (lu.tril(-1) + ferro.eye(n, dtype=a.dtype, device=a.device)) @ lu.triu()
    rows = list(range(n))
    for i, p in enumerate(piv.tolist()):
        rows[i], rows[p - 1] = rows[p - 1], rows[i]
    inverse = sorted(range(n), key=rows.__getitem__)
    return m[ferro.tensor(inverse, device=a.device)]


# -- the convolutions the entries above leave out -------------------------------------------------------------
_CONV_W3 = [[[[[0.2, -0.5], [0.3, 0.1]], [[0.4, 0.1], [-0.2, 0.5]]]] * 2] * 3  # (3, 2, 2, 2, 2)
_CONVT_W1 = [[[0.5, -1.0, 0.25], [1.0, 0.5, -0.5]]] * 2  # (in 2, out 2, k 3)
_CONVT_W2 = [[[[0.5, -1.0], [0.25, 1.0]]] * 3] * 2  # (in 2, out 3, 2, 2)


def _conv_t(x: Any, w: Any) -> Any:
    """Transposed convolution, stride 1, no padding: each input element spreads ``w`` over the output."""
    np = _np()
    k = w.shape[2:]
    out = np.zeros((x.shape[0], w.shape[1], *(s + kk - 1 for s, kk in zip(x.shape[2:], k))), dtype=x.dtype)
    for off in np.ndindex(*k):
        sl = tuple(slice(o, o + s) for o, s in zip(off, x.shape[2:]))
        out[(slice(None), slice(None), *sl)] += np.einsum("nc...,co->no...", x, w[(slice(None), slice(None), *off)])
    return out


OP_DB += [
    _nn("conv3d", lambda x: _np().einsum("ncijkpqr,ocpqr->noijk", _windows(x, (2, 2, 2), 0),
                                         _np().array(_CONV_W3).astype(x.dtype)),
        lambda f, F, x: F.conv3d(x, _w(f, x, _CONV_W3)), shapes=(((1, 2, 3, 4, 3),),), gradgrad=False),
    _nn("conv_transpose1d", lambda x: _conv_t(x, _np().array(_CONVT_W1).astype(x.dtype)),
        lambda f, F, x: F.conv_transpose1d(x, _w(f, x, _CONVT_W1)), shapes=(((2, 2, 5),),), gradgrad=False),
    _nn("conv_transpose2d", lambda x: _conv_t(x, _np().array(_CONVT_W2).astype(x.dtype)),
        lambda f, F, x: F.conv_transpose2d(x, _w(f, x, _CONVT_W2)), shapes=(((1, 2, 3, 4),),), gradgrad=False),
]

# -- the optimizers' per-parameter updates (registry ops since the kernel route is one) -----------------------
# One step of each optimizer at its default hyperparameters, from a fresh state, on parameter ``p`` with
# gradient ``g``: the update runs through the op (its fused kernel where the device binds one, else the
# unfused decomposition). From a fresh state Adam's, Adagrad's and Adamax's first steps are ``lr * g / (|g| + eps)``.


def _one_step(name: str, optimizer: str, f: Any, p: Any, g: Any) -> Any:
    if p.dtype not in f._core.records.REGISTRY[name].table:  # the op's own refusal (an optimizer refuses earlier)
        return getattr(f.ops, name)(p, g)
    param = f.nn.Parameter(p.detach().clone())
    param.grad = g.detach().clone()
    getattr(f.optim, optimizer)([param]).step()
    return param.detach()


def _nadam_ref(p: Any, g: Any, lr: float = 2e-3, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8) -> Any:
    np = _np()
    mu1, mu2 = b1 * (1 - 0.5 * 0.96 ** 0.004), b1 * (1 - 0.5 * 0.96 ** 0.008)
    denom = np.sqrt(b2 * 0 + (1 - b2) * g * g) / np.sqrt(1 - b2) + eps
    m = (1 - b1) * g
    return p - lr * (1 - mu1) / (1 - mu1) * g / denom - lr * mu2 / (1 - mu1 * mu2) * m / denom


_STEPS = {
    "sgd_step": ("SGD", lambda p, g: p - 1e-3 * g),
    "adam_step": ("Adam", lambda p, g: p - 1e-3 * g / (_np().abs(g) + 1e-8)),
    "adagrad_step": ("Adagrad", lambda p, g: p - 1e-2 * g / (_np().abs(g) + 1e-10)),
    "rmsprop_step": ("RMSprop", lambda p, g: p - 1e-2 * g / (_np().sqrt(0.01 * g * g) + 1e-8)),
    "adamax_step": ("Adamax", lambda p, g: p - 2e-3 * g / (_np().abs(g) + 1e-8)),
    "nadam_step": ("NAdam", _nadam_ref),
    "adadelta_step": ("Adadelta", lambda p, g: p - _np().sqrt(1e-6) / _np().sqrt(0.1 * g * g + 1e-6) * g),
    "radam_step": ("RAdam", lambda p, g: p - 1e-3 * g),  # rho_1 = 1 <= 5: the unrectified step lr * m_hat
    "rprop_step": ("Rprop", lambda p, g: p - 1e-2 * _np().sign(g)),  # no previous gradient: the step is lr
    "asgd_step": ("ASGD", lambda p, g: p * (1 - 1e-4 * _np().float32(1e-2)) - _np().float32(1e-2) * g),
}
OP_DB += [OpInfo(name, ref, arity=2, call=lambda f, p, g, _n=name, _o=opt: _one_step(_n, _o, f, p, g),
                 dtypes=FLOATS, grad=False, edge=False, shapes=(((3, 4), (3, 4)), ((5,), (5,))), domain=(0.5, 2.0))
          for name, (opt, ref) in _STEPS.items()]


def _unscaled(f: Any, g: Any) -> Any:
    """One gradient through ferro.amp's check-and-unscale (inf and nan stay, the flag aside)."""
    out = g.detach().clone()
    f.ops.amp_unscale_([out], f.zeros((), device=g.device), 0.25)
    return out


OP_DB.append(OpInfo("amp_unscale_", lambda g: g * 0.25, call=_unscaled, grad=False))
# int8 x int8 -> int32 (ferro.quantization's products): exact, so the reference is the int64 product
OP_DB.append(OpInfo("int8_matmul", lambda a, b: a.astype("int64") @ b.astype("int64"), 2,
                    call=lambda f, a, b: f.ops.int8_matmul(a, b), grad=False, edge=False, widen=False,
                    shapes=(((3, 4), (4, 5)), ((1, 7), (7, 1)), ((2, 0), (0, 3)), ((0, 2), (2, 3)))))
# -- PyTorch's fused multiply-adds, stacking and small numeric ops (_ops/blas, _ops/stacking, _ops/numeric) ----
_AB = {"beta": 2, "alpha": 3}
OP_DB += [
    OpInfo("addmm", lambda i, a, b, beta=1, alpha=1: beta * i + alpha * (a @ b), 3, edge=False,
           shapes=(((2, 4), (2, 3), (3, 4)), ((4,), (2, 3), (3, 4))), kwargs=({}, _AB)),
    OpInfo("addmv", lambda i, a, v, beta=1, alpha=1: beta * i + alpha * (a @ v), 3, edge=False,
           shapes=(((2,), (2, 3), (3,)), ((), (2, 3), (3,))), kwargs=({}, _AB)),
    OpInfo("addr", lambda i, a, b, beta=1, alpha=1: beta * i + alpha * _np().outer(a, b), 3, edge=False,
           shapes=(((2, 3), (2,), (3,)),), kwargs=({}, _AB)),
    OpInfo("baddbmm", lambda i, a, b, beta=1, alpha=1: beta * i + alpha * (a @ b), 3, edge=False,
           shapes=(((2, 2, 4), (2, 2, 3), (2, 3, 4)), ((2, 4), (2, 2, 3), (2, 3, 4))), kwargs=({}, _AB)),
    OpInfo("addbmm", lambda i, a, b, beta=1, alpha=1: beta * i + alpha * (a @ b).sum(0), 3, edge=False,
           shapes=(((2, 4), (3, 2, 3), (3, 3, 4)),), kwargs=({}, _AB)),
    OpInfo("addcmul", lambda i, a, b, value=1: i + value * a * b, 3, edge=False,
           shapes=(((3, 4), (3, 4), (3, 4)), ((3, 4), (4,), (3, 1))), kwargs=({}, {"value": 2})),
    OpInfo("addcdiv", lambda i, a, b, value=1: i + value * a / b, 3, edge=False, domain=(0.5, 3.0),
           shapes=(((3, 4), (3, 4), (3, 4)), ((3, 4), (4,), (3, 1))), kwargs=({}, {"value": 0.5})),
    OpInfo("trace", lambda x: _np().trace(x), shapes=(((3, 4),), ((4, 4),)), edge=False),
    OpInfo("atleast_1d", lambda x: _np().atleast_1d(x), shapes=(((),), ((3,),), ((2, 3),)), edge=False),
    OpInfo("atleast_2d", lambda x: _np().atleast_2d(x), shapes=(((),), ((3,),), ((2, 3),)), edge=False),
    OpInfo("atleast_3d", lambda x: _np().atleast_3d(x), shapes=(((),), ((3,),), ((2, 3),), ((2, 1, 3, 2),)),
           edge=False),
    OpInfo("hstack", lambda x, y: _np().hstack([x, y]), 2, call=lambda f, x, y: f.hstack([x, y]), edge=False,
           shapes=(((3,), (2,)), ((2, 3), (2, 1)))),
    OpInfo("vstack", lambda x, y: _np().vstack([x, y]), 2, call=lambda f, x, y: f.vstack([x, y]), edge=False,
           shapes=(((3,), (3,)), ((2, 3), (1, 3)))),
    OpInfo("dstack", lambda x, y: _np().dstack([x, y]), 2, call=lambda f, x, y: f.dstack([x, y]), edge=False,
           shapes=(((3,), (3,)), ((2, 3), (2, 3)))),
    OpInfo("column_stack", lambda x, y: _np().column_stack([x, y]), 2, call=lambda f, x, y: f.column_stack([x, y]),
           edge=False, shapes=(((3,), (3, 2)), ((2,), (2,)))),
    OpInfo("broadcast_tensors", lambda x, y: _np().stack(_np().broadcast_arrays(x, y)), 2, edge=False,
           call=lambda f, x, y: f.stack(f.broadcast_tensors(x, y)), shapes=(((3, 1), (4,)), ((2, 1, 4), (3, 1)))),
    OpInfo("meshgrid", lambda x, y, indexing="ij": _np().stack(_np().meshgrid(x, y, indexing=indexing)), 2,
           call=lambda f, x, y, **kw: f.stack(f.meshgrid(x, y, **kw)), edge=False, shapes=(((3,), (4,)),),
           kwargs=({"indexing": "ij"}, {"indexing": "xy"})),
    OpInfo("fliplr", lambda x: _np().fliplr(x), shapes=(((3, 4),), ((2, 3, 4),)), edge=False),
    OpInfo("flipud", lambda x: _np().flipud(x), shapes=(((3,),), ((2, 3, 4),)), edge=False),
    OpInfo("rot90", lambda x, k=1, dims=(0, 1): _np().rot90(x, k, dims), shapes=(((3, 4),), ((2, 3, 4),)),
           kwargs=({}, {"k": 2}, {"k": -1, "dims": (-1, -2)}), edge=False),
    OpInfo("deg2rad", lambda x: _np().deg2rad(x), domain=(-360, 360)),
    OpInfo("rad2deg", lambda x: _np().rad2deg(x)),
    OpInfo("logit", lambda x, eps=None: _np().log((p := x if eps is None else _np().clip(x, eps, 1 - eps)) / (1 - p)),
           domain=(0.05, 0.95), kwargs=({}, {"eps": 0.1})),
    OpInfo("aminmax", lambda x, dim=1: _np().stack([x.min(dim), x.max(dim)]), edge=False,
           call=lambda f, x, dim=1: f.stack(f.aminmax(x, dim=dim)), shapes=(((3, 4),), ((2, 3, 4),)), grad=False,
           kwargs=({"dim": 1}, {"dim": -1})),
    OpInfo("diff", lambda x, n=1, dim=-1: _np().diff(x, n, dim), shapes=(((5,),), ((3, 4),), ((2, 3, 4),)),
           kwargs=({}, {"n": 2, "dim": 0}), edge=False),
    OpInfo("nansum", lambda x, dim=None: _np().nansum(x, dim), shapes=(((3, 4),), ((2, 3, 4),)),
           kwargs=({}, {"dim": -1})),
    OpInfo("nanmean", lambda x, dim=None: _np().nanmean(x, dim), shapes=(((3, 4),), ((2, 3, 4),)),
           kwargs=({}, {"dim": 1}), edge=False),
    OpInfo("normalize", lambda x, dim=1: x / _np().maximum(_np().linalg.norm(x, axis=dim, keepdims=True), 1e-12),
           call=lambda f, x, **kw: f.nn.functional.normalize(x, **kw), shapes=(((3, 4),), ((2, 3, 4),)),
           kwargs=({}, {"dim": -1}), edge=False),
]

# -- torch.special's functions written in ops (_ops/special_functions) ----------------------------------------
OP_DB += [
    OpInfo("sinc", lambda x: _np().sinc(x)),
    OpInfo("entr", lambda x: _sp().entr(x), call=lambda f, x: f.special.entr(x), domain=(0.0, 3.0)),
    OpInfo("ndtr", lambda x: _sp().ndtr(x), call=lambda f, x: f.special.ndtr(x)),
    OpInfo("ndtri", lambda x: _sp().ndtri(x), call=lambda f, x: f.special.ndtri(x), domain=(0.05, 0.95),
           edge=False),
    OpInfo("log_ndtr", lambda x: _sp().log_ndtr(x), call=lambda f, x: f.special.log_ndtr(x)),
    OpInfo("xlog1py", lambda x, y: _sp().xlog1py(x, y), 2, call=lambda f, x, y: f.special.xlog1py(x, y),
           domain=(0.0, 3.0)),
]

# -- torch.special's one-kernel functions (_ops/special_kernels) and polygamma, multigammaln -------------------
def _sf(name: str) -> Callable[..., Any]:
    return lambda f, *a, **k: getattr(f.special, name)(*a, **k)


def _poly_ref(name: str) -> Callable[..., Any]:
    """SciPy's polynomial at n = floor(5 n) (0 for a negative n), the n the op's samples are called with."""
    def u(n: Any, x: Any) -> Any:  # U_n, with U_-1 = 0
        return _np().where(n < 0, 0.0, _sp().eval_chebyu(_np().maximum(n, 0), x))
    evals = {
        "chebyshev_polynomial_t": lambda n, x: _sp().eval_chebyt(n, x),
        "chebyshev_polynomial_u": u,
        "chebyshev_polynomial_v": lambda n, x: u(n, x) - u(n - 1, x),
        "chebyshev_polynomial_w": lambda n, x: u(n, x) + u(n - 1, x),
        "hermite_polynomial_h": lambda n, x: _sp().eval_hermite(n, x),
        "hermite_polynomial_he": lambda n, x: _sp().eval_hermitenorm(n, x),
        "laguerre_polynomial_l": lambda n, x: _sp().eval_laguerre(n, x),
        "legendre_polynomial_p": lambda n, x: _sp().eval_legendre(n, x),
    }
    shifted = name.startswith("shifted_")
    fn = evals[name.replace("shifted_", "")]

    def ref(x: Any, n: Any) -> Any:
        k = _np().floor(_np().asarray(n, dtype=float) * 5).astype(_np().int64)
        x = _np().asarray(x, dtype=float)
        x, k = _np().broadcast_arrays(2 * x - 1 if shifted else x, k)
        return _np().where(k < 0, 0.0, fn(_np().maximum(k, 0), x))
    return ref


_POLYS = ("chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v", "chebyshev_polynomial_w",
          "hermite_polynomial_h", "hermite_polynomial_he", "laguerre_polynomial_l", "legendre_polynomial_p")
OP_DB += [
    OpInfo("i0", lambda x: _sp().i0(x), call=_sf("i0"), gradgrad=True),
    OpInfo("i0e", lambda x: _sp().i0e(x), call=_sf("i0e")),
    OpInfo("i1", lambda x: _sp().i1(x), call=_sf("i1")),
    OpInfo("i1e", lambda x: _sp().i1e(x), call=_sf("i1e")),
    OpInfo("erfcx", lambda x: _sp().erfcx(x), call=_sf("erfcx")),
    *(OpInfo(n, lambda x, _f=f: getattr(_sp(), _f)(x), call=_sf(n), grad=False, domain=(0.1, 12.0))
      for n, f in (("modified_bessel_k0", "k0"), ("modified_bessel_k1", "k1"), ("scaled_modified_bessel_k0", "k0e"),
                   ("scaled_modified_bessel_k1", "k1e"), ("bessel_y0", "y0"), ("bessel_y1", "y1"))),
    *(OpInfo(n, lambda x, _f=f: getattr(_sp(), _f)(x), call=_sf(n), grad=False, domain=(-12.0, 12.0))
      for n, f in (("bessel_j0", "j0"), ("bessel_j1", "j1"))),
    OpInfo("airy_ai", lambda x: _sp().airy(x)[0], call=_sf("airy_ai"), grad=False, domain=(-12.0, 6.0)),
    OpInfo("spherical_bessel_j0", lambda x: _np().sinc(_np().where(_np().isinf(x), 0, x) / _np().pi)
           * ~_np().isinf(x), call=_sf("spherical_bessel_j0"), grad=False, domain=(-8.0, 8.0)),
    OpInfo("zeta", lambda x, q: _sp().zeta(x + 1, q), 2, call=lambda f, x, q: f.special.zeta(x + 1, q),
           domain=(0.5, 4.0), grad=False),
    OpInfo("gammainc", lambda a, x: _sp().gammainc(a, x), 2, call=_sf("gammainc"), domain=(0.5, 4.0), grad=False),
    OpInfo("gammaincc", lambda a, x: _sp().gammaincc(a, x), 2, call=_sf("gammaincc"), domain=(0.5, 4.0),
           grad=False),
    *(OpInfo(n, _poly_ref(n), 2, call=lambda f, x, k, _n=n: getattr(f.special, _n)(x, (k * 5).floor()),
             domain=(-1.2, 1.2), grad=False, rtol=1e-5, atol=1e-5)
      for n in (*_POLYS, *(f"shifted_{p}" for p in _POLYS[:4]))),
    OpInfo("polygamma", lambda x, n=1: _sp().polygamma(n, x), call=lambda f, x, n=1: f.special.polygamma(n, x),
           domain=(0.5, 4.0), kwargs=({"n": 0}, {"n": 1}, {"n": 3}), edge=False),
    OpInfo("multigammaln", lambda x, p=3: _sp().multigammaln(_np().asarray(x, dtype=float) + 2, p),
           call=lambda f, x, p=3: f.special.multigammaln(x + 2, p), domain=(0.0, 3.0), kwargs=({"p": 1}, {"p": 3}),
           edge=False),
]

# -- the rest of nn.functional's everyday losses and activations (_ops/nn_surface) -----------------------------
_PM1 = [[1.0, -1.0, 1.0], [-1.0, -1.0, 1.0], [1.0, 1.0, -1.0], [-1.0, 1.0, 1.0]]
OP_DB += [
    _nn("softmin", lambda x: _np().exp(_lsm(-x)), lambda f, F, x: F.softmin(x, 1)),
    _nn("hardshrink", lambda x: _np().where(_np().abs(x) > 0.5, x, 0), lambda f, F, x: F.hardshrink(x)),
    _nn("softshrink", lambda x: _np().where(x > 0.5, x - 0.5, _np().where(x < -0.5, x + 0.5, 0)),
        lambda f, F, x: F.softshrink(x)),
    _nn("soft_margin_loss", lambda x: _np().log1p(_np().exp(-_np().array(_PM1) * x)).mean(),
        lambda f, F, x: F.soft_margin_loss(x, _t(f, x, _PM1))),
    _nn("multilabel_soft_margin_loss", lambda x: (-(((_np().array(_PM1) + 1) / 2) * _np().log(1 / (1 + _np().exp(-x)))
                                                    + (1 - (_np().array(_PM1) + 1) / 2)
                                                    * _np().log(1 / (1 + _np().exp(x))))).mean(-1).mean(),
        lambda f, F, x: F.multilabel_soft_margin_loss(x, _t(f, x, [[(v + 1) / 2 for v in r] for r in _PM1]))),
    _nn("hinge_embedding_loss", lambda x: _np().where(_np().array(_PM1) > 0, x, _np().maximum(0, 1 - x)).mean(),
        lambda f, F, x: F.hinge_embedding_loss(x, _t(f, x, _PM1))),
    _nn("poisson_nll_loss", lambda x: (_np().exp(x) - 2 * x).mean(),
        lambda f, F, x: F.poisson_nll_loss(x, f.full_like(x, 2))),
    _nn("gaussian_nll_loss", lambda x: (0.5 * (_np().log(2.0) + (x - 1) ** 2 / 2)).mean(),
        lambda f, F, x: F.gaussian_nll_loss(x, f.full_like(x, 1), f.full_like(x, 2))),
    _nn("triplet_margin_loss", lambda x: _np().maximum(_np().linalg.norm(x - x[::-1] + 1e-6, axis=-1)
                                                       - _np().linalg.norm(x - x[:, ::-1] + 1e-6, axis=-1) + 1,
                                                       0).mean(),
        lambda f, F, x: F.triplet_margin_loss(x, x.flip(0), x.flip(1))),
    _nn("multi_margin_loss", lambda x: (_np().maximum(0, 1 - x[range(4), _T3][:, None] + x)
                                        * (_np().arange(3)[None, :] != _np().array(_T3)[:, None])).sum(1).mean() / 3,
        lambda f, F, x: F.multi_margin_loss(x, _t(f, x, _T3))),
    _nn("pixel_shuffle", lambda x: x.reshape(1, 2, 2, 2, 3, 2).transpose(0, 1, 4, 2, 5, 3).reshape(1, 2, 6, 4),
        lambda f, F, x: F.pixel_shuffle(x, 2), shapes=(((1, 8, 3, 2),),)),
    _nn("pixel_unshuffle", lambda x: x.reshape(1, 2, 2, 2, 2, 2).transpose(0, 1, 3, 5, 2, 4).reshape(1, 8, 2, 2),
        lambda f, F, x: F.pixel_unshuffle(x, 2), shapes=(((1, 2, 4, 4),),)),
]

# -- more of torch.linalg, written in ferro's linalg ops (_ops/linalg_more) -----------------------------------
_SQ = (((3, 3),), ((2, 3, 3),))
OP_DB += [
    OpInfo("linalg.vecdot", lambda x, y: (_np().conj(x) * y).sum(-1), 2, call=lambda f, x, y: f.linalg.vecdot(x, y),
           shapes=(((3, 4), (3, 4)), ((2, 1, 4), (3, 4))), edge=False),
    OpInfo("linalg.multi_dot", lambda a, b, c: a @ b @ c, 3, call=lambda f, a, b, c: f.linalg.multi_dot([a, b, c]),
           shapes=(((2, 3), (3, 4), (4, 2)), ((3,), (3, 4), (4,))), edge=False),
    OpInfo("linalg.matrix_power", lambda x, n=3: _np().linalg.matrix_power(x, n),
           call=lambda f, x, **kw: f.linalg.matrix_power(x, **kw), shapes=_SQ, edge=False,
           kwargs=({"n": 3}, {"n": 0}, {"n": 1})),
    OpInfo("linalg.matrix_exp", lambda x: _scipy_linalg().expm(x) if x.ndim == 2 else _np().stack(
        [_scipy_linalg().expm(m) for m in x]), call=lambda f, x: f.linalg.matrix_exp(x), shapes=_SQ, edge=False,
        domain=(-1.0, 1.0)),
    OpInfo("linalg.solve_triangular", lambda a, b: _np().linalg.solve(_np().triu(a), b), 2, domain=(1.0, 3.0),
           call=lambda f, a, b: f.linalg.solve_triangular(a, b, upper=True), shapes=(((3, 3), (3, 2)),), edge=False),
    OpInfo("linalg.matrix_rank", lambda x: _np().linalg.matrix_rank(x), call=lambda f, x: f.linalg.matrix_rank(x),
           shapes=(((3, 4),), ((2, 4, 3),)), grad=False, edge=False),
    OpInfo("linalg.cond", lambda x: _np().linalg.cond(x), call=lambda f, x: f.linalg.cond(x), shapes=_SQ, edge=False,
           rtol=1e-4, atol=1e-4),
    OpInfo("linalg.tensorsolve", lambda a, b: _np().linalg.tensorsolve(a + 3 * _np().eye(6).reshape(6, 2, 3), b), 2,
           call=lambda f, a, b: f.linalg.tensorsolve(a + 3 * f.eye(6, dtype=a.dtype, device=a.device).reshape(6, 2, 3),
                                                     b), shapes=(((6, 2, 3), (6,)),), edge=False),
    OpInfo("linalg.vander", lambda x: _np().vander(x, increasing=True), call=lambda f, x: f.linalg.vander(x),
           shapes=(((4,),),), edge=False),
    OpInfo("linalg.diagonal", lambda x: _np().diagonal(x, 0, -2, -1), call=lambda f, x: f.linalg.diagonal(x),
           shapes=(((3, 4),), ((2, 3, 4),)), edge=False),
    # shifted to be well conditioned, with linalg.inv's tolerance: NumPy inverts float32 in float64, a float32
    # solver (cuSOLVER) does not, and a random matrix's condition number (444 for one sample) is in its error
    OpInfo("linalg.tensorinv", lambda x: _np().linalg.tensorinv(x + 3 * _np().eye(6).reshape(6, 2, 3), 1),
           call=lambda f, x: f.linalg.tensorinv(x + 3 * f.eye(6, dtype=x.dtype, device=x.device).reshape(6, 2, 3), 1),
           shapes=(((6, 2, 3),),), edge=False, rtol=1e-4, atol=1e-4),
]

# -- torch.linalg's *_ex variants, lu_solve, householder_product, eig (_ops/linalg_solvers) --------------------
def _diag_dominant(x: Any) -> Any:
    return x + 4 * _np().eye(x.shape[-1])


def _lu_solve_ref(a: Any, b: Any) -> Any:
    return _np().linalg.solve(_diag_dominant(a), b)


def _lu_solve_call(f: Any, a: Any, b: Any) -> Any:
    """lu_solve from lu_factor (factored in float32 for 16-bit floats, which the CPU's LAPACK lacks)."""
    shifted = a + 4 * f.eye(3, dtype=a.dtype, device=a.device)
    half = a.dtype in (f.float16, f.bfloat16)
    lu, piv = f.linalg.lu_factor(shifted.float() if half else shifted)
    return f.linalg.lu_solve(lu.to(a.dtype), piv, b)


def _sym(x: Any) -> Any:
    """A symmetric, well-conditioned matrix made from ``x``."""
    return x + _np().swapaxes(x, -1, -2) + 8 * _np().eye(x.shape[-1])


def _ldl_inverse(f: Any, x: Any, name: str) -> Any:
    """The inverse of ``_sym(x)`` through ldl_factor(_ex) and ldl_solve."""
    a = x + x.mT + 8 * f.eye(x.shape[-1], dtype=x.dtype, device=x.device)
    ld, piv = getattr(f.linalg, name)(a)[:2]
    return f.linalg.ldl_solve(ld, piv, f.eye(x.shape[-1], dtype=x.dtype, device=x.device).expand(a.shape))


def _sorted_eigvals(x: Any) -> Any:
    w = _np().linalg.eigvals(x)
    return _np().sort_complex(w.reshape(-1, w.shape[-1])).reshape(w.shape)


def _householder_ref(a: Any, tau: Any) -> Any:
    np = _np()
    m, n = a.shape
    q = np.eye(m, dtype=np.result_type(a, tau))
    for i in range(tau.shape[-1]):
        v = np.concatenate([np.zeros(i), [1.0], a[i + 1:, i]])
        q = q - tau[i] * np.outer(q @ v, v.conj())
    return q[:, :n]


def _sort_c(f: Any, w: Any) -> Any:
    """Eigenvalues in NumPy's sort_complex order (real part, then imaginary), so they compare with the reference."""
    key = w.real * 1e6 + w.imag
    return w.gather(-1, key.argsort(-1))


OP_DB += [
    OpInfo("linalg.inv_ex", lambda x: _np().linalg.inv(_diag_dominant(x)), shapes=_SQ, edge=False,
           call=lambda f, x: f.linalg.inv_ex(x + 4 * f.eye(x.shape[-1], dtype=x.dtype, device=x.device)).inverse),
    OpInfo("linalg.solve_ex", _lu_solve_ref, 2, shapes=(((3, 3), (3, 2)), ((2, 3, 3), (2, 3, 1))), edge=False,
           call=lambda f, a, b: f.linalg.solve_ex(a + 4 * f.eye(3, dtype=a.dtype, device=a.device), b).result),
    OpInfo("linalg.cholesky_ex", lambda x: _np().linalg.cholesky(x @ _np().swapaxes(x, -1, -2) + _np().eye(3)),
           call=lambda f, x: f.linalg.cholesky_ex(x @ x.mT + f.eye(3, dtype=x.dtype, device=x.device)).L,
           shapes=_SQ, edge=False),
    OpInfo("linalg.lu_factor_ex", lambda x: _np().stack([_scipy_linalg().lu_factor(m)[0] for m in
                                                         _diag_dominant(x).reshape(-1, 3, 3)]).reshape(x.shape),
           call=lambda f, x: f.linalg.lu_factor_ex(x + 4 * f.eye(3, dtype=x.dtype, device=x.device)).LU,
           shapes=_SQ, edge=False),
    OpInfo("linalg.lu_solve", _lu_solve_ref, 2, shapes=(((3, 3), (3, 2)), ((2, 3, 3), (2, 3, 1))), edge=False,
           call=lambda f, a, b: _lu_solve_call(f, a, b)),
    OpInfo("linalg.householder_product", _householder_ref, 2, shapes=(((4, 3), (2,)), ((3, 3), (3,))), edge=False,
           call=lambda f, a, t: f.linalg.householder_product(a, t)),
    *(OpInfo(f"linalg.{n}", lambda x: _np().linalg.inv(_sym(x)), call=lambda f, x, _n=n: _ldl_inverse(f, x, _n),
             shapes=_SQ, edge=False, grad=False) for n in ("ldl_factor", "ldl_factor_ex")),
    OpInfo("linalg.ldl_solve", lambda a, b: _np().linalg.solve(_sym(a), b), 2, edge=False, grad=False,
           shapes=(((3, 3), (3, 2)), ((2, 3, 3), (2, 3, 1))),
           call=lambda f, a, b: f.linalg.ldl_solve(*f.linalg.ldl_factor(a + a.mT + 8 * f.eye(3, dtype=a.dtype,
                                                                                              device=a.device)), b)),
    OpInfo("linalg.eigvals", _sorted_eigvals, call=lambda f, x: _sort_c(f, f.linalg.eigvals(x)), shapes=_SQ,
           edge=False, grad=False),
    OpInfo("linalg.eig", _sorted_eigvals, call=lambda f, x: _sort_c(f, f.linalg.eig(x).eigenvalues), shapes=_SQ,
           edge=False, grad=False),
]

# -- PyTorch's elementwise functions written in other elementwise ops (_ops/elementwise_composites) -----------
OP_DB += [
    OpInfo("isposinf", lambda x: _np().isposinf(x), grad=False),
    OpInfo("isneginf", lambda x: _np().isneginf(x), grad=False),
    OpInfo("isreal", lambda x: _np().isreal(x), grad=False),
    OpInfo("signbit", lambda x: _np().signbit(x), grad=False),
    OpInfo("copysign", lambda x, y: _np().copysign(x, y), 2),
    OpInfo("float_power", lambda x, y: _np().float_power(x, y), 2, domain=(0.5, 2.0), edge=False),
    OpInfo("fmax", lambda x, y: _np().fmax(x, y), 2),
    OpInfo("fmin", lambda x, y: _np().fmin(x, y), 2),
    OpInfo("heaviside", lambda x, y: _np().heaviside(x, y), 2, grad=False),
    OpInfo("logaddexp2", lambda x, y: _np().logaddexp2(x, y), 2),
    OpInfo("ldexp", lambda x, y: x * 2.0 ** y, 2, edge=False),
]

# -- statistics and sequence helpers (_ops/statistics) --------------------------------------------------------
OP_DB += [
    OpInfo("std_mean", lambda x: _np().stack([x.std(1, ddof=1), x.mean(1)]), shapes=(((3, 4),), ((2, 3, 4),)),
           call=lambda f, x: f.stack(f.std_mean(x, 1)), edge=False),
    OpInfo("var_mean", lambda x: _np().stack([x.var(1, ddof=1), x.mean(1)]), shapes=(((3, 4),), ((2, 3, 4),)),
           call=lambda f, x: f.stack(f.var_mean(x, 1)), edge=False),
    OpInfo("cov", lambda x: _np().cov(x), shapes=(((3, 5),), ((4,),)), edge=False),
    OpInfo("corrcoef", lambda x: _np().corrcoef(x), shapes=(((3, 5),),), edge=False),
    OpInfo("dist", lambda x, y: _np().linalg.norm((x - y).ravel(), 3), 2, call=lambda f, x, y: f.dist(x, y, 3),
           shapes=(((3, 4), (3, 4)), ((3, 4), (4,))), edge=False),
    OpInfo("msort", lambda x: _np().sort(x, 0), shapes=(((5,),), ((4, 3),)), grad=False, edge=False),
    OpInfo("isin", lambda x, y: _np().isin(x, y), 2, shapes=(((3, 4), (5,)), ((6,), (2, 2))), grad=False,
           edge=False),
    OpInfo("trapezoid", lambda y: _np().trapezoid(y, axis=-1), shapes=(((5,),), ((3, 4),)), edge=False),
    OpInfo("cumulative_trapezoid", lambda y: _np().cumsum((y[..., 1:] + y[..., :-1]) / 2, -1),
           shapes=(((5,),), ((3, 4),)), edge=False),
    OpInfo("logdet", lambda x: _np().linalg.slogdet(x @ _np().swapaxes(x, -1, -2) + _np().eye(3))[1],
           call=lambda f, x: f.logdet(x @ x.mT + f.eye(3, dtype=x.dtype, device=x.device)),
           shapes=(((3, 3),), ((2, 3, 3),)), edge=False),
    OpInfo("hsplit", lambda x: _np().concatenate(_np().hsplit(x, [1]), -1),
           call=lambda f, x: f.cat(f.hsplit(x, [1]), -1), shapes=(((3, 4),),), edge=False),
    OpInfo("vsplit", lambda x: _np().concatenate(_np().vsplit(x, 2)[::-1]),
           call=lambda f, x: f.cat(f.vsplit(x, 2)[::-1]), shapes=(((4, 3),),), edge=False),
    OpInfo("dsplit", lambda x: _np().concatenate(_np().dsplit(x, [1])[::-1], -1),
           call=lambda f, x: f.cat(f.dsplit(x, [1])[::-1], -1), shapes=(((2, 3, 4),),), edge=False),
    OpInfo("split_with_sizes", lambda x: _np().concatenate(_np().split(x, [1], 1)[::-1], 1),
           call=lambda f, x: f.cat(f.split_with_sizes(x, [1, 3], 1)[::-1], 1), shapes=(((3, 4),),), edge=False),
    OpInfo("block_diag", lambda x, y: _sp_block_diag(x, y), 2, call=lambda f, x, y: f.block_diag(x, y),
           shapes=(((2, 3), (3, 2)), ((2,), (2, 2))), edge=False),
    OpInfo("cartesian_prod", lambda x, y: _np().stack([g.ravel() for g in _np().meshgrid(x, y, indexing="ij")], 1),
           2, shapes=(((3,), (2,)),), edge=False),
    OpInfo("diagflat", lambda x: _np().diagflat(x, 1), call=lambda f, x: f.diagflat(x, 1),
           shapes=(((3,),), ((2, 2),)), edge=False),
    OpInfo("argwhere", lambda x: _np().argwhere(x), shapes=(((3, 4),),), grad=False, edge=False),
]


def _sp_block_diag(*arrays: Any) -> Any:
    return _scipy_linalg().block_diag(*[a.reshape(1, -1) if a.ndim < 2 else a for a in arrays])

# -- the rest of nn.functional's random layers and a few deterministic ones (_ops/nn_dropouts) ----------------
OP_DB += [
    _rnd("dropout1d", lambda x: x * 0, lambda f, x: f.nn.functional.dropout1d(x, 1.0), shapes=(((2, 3, 4),),)),
    _rnd("dropout3d", lambda x: x * 0, lambda f, x: f.nn.functional.dropout3d(x, 1.0), shapes=(((2, 3, 2, 2, 2),),)),
    _rnd("alpha_dropout", lambda x: x, lambda f, x: f.nn.functional.alpha_dropout(x, 0.5, False)),
    _rnd("feature_alpha_dropout", lambda x: x, lambda f, x: f.nn.functional.feature_alpha_dropout(x, 0.5, False)),
    _nn("rrelu", lambda x: _np().where(x >= 0, x, x * (1 / 8 + 1 / 3) / 2), lambda f, F, x: F.rrelu(x)),
    _nn("channel_shuffle", lambda x: x.reshape(2, 2, 3, 2).swapaxes(1, 2).reshape(2, 6, 2),
        lambda f, F, x: F.channel_shuffle(x, 2), shapes=(((2, 6, 2),),)),
    _nn("adaptive_avg_pool1d", lambda x: x.reshape(*x.shape[:2], 2, 3).mean(-1),
        lambda f, F, x: F.adaptive_avg_pool1d(x, 2), shapes=(((2, 3, 6),),)),
    _nn("pdist", lambda x: _np().array([_np().linalg.norm(x[i] - x[j]) for i in range(4) for j in range(i + 1, 4)]),
        lambda f, F, x: F.pdist(x)),
]


# -- the sparse kernels' ops (_ops/sparse): a fixed 3 x 4 CSR matrix (an empty row) times the input ----------------
_CSR = ([0, 2, 2, 5], [0, 3, 1, 2, 3], [1.5, -2.0, 0.5, 3.0, -1.0])


def _csr_dense() -> Any:
    a = _np().zeros((3, 4))
    a[[0, 0, 2, 2, 2], _CSR[1]] = _CSR[2]
    return a


def _csr_call(name: str) -> Callable[..., Any]:
    def call(f: Any, x: Any) -> Any:
        crow, col = (f.tensor(v, device=x.device) for v in _CSR[:2])
        return getattr(f.ops, name)(crow, col, f.tensor(_CSR[2], dtype=x.dtype, device=x.device), x)
    return call


OP_DB += [
    OpInfo("spmm_csr", lambda x: _csr_dense() @ x, call=_csr_call("spmm_csr"), shapes=(((4, 5),),), dtypes=FLOATS,
           edge=False, gradgrad=True),
    OpInfo("spmv_csr", lambda x: _csr_dense() @ x, call=_csr_call("spmv_csr"), shapes=(((4,),),), dtypes=FLOATS,
           edge=False, gradgrad=True),
]
# -- the rest of nn.functional's window, sampling and sequence ops (_ops/nn_windows, nn_bags, nn_surface) -----


def _np_unfold(x: Any, k: int) -> Any:
    """im2col of (N, C, H, W) with a k x k kernel, stride 1."""
    n, c, h, w = x.shape
    oh, ow = h - k + 1, w - k + 1
    cols = [x[:, :, i:i + oh, j:j + ow].reshape(n, c, 1, oh * ow) for i in range(k) for j in range(k)]
    return _np().concatenate(cols, 2).reshape(n, c * k * k, oh * ow)


def _np_fold(cols: Any, size: int, k: int) -> Any:
    """col2im into (N, C, size, size) with a k x k kernel, stride 1."""
    n, ck, _length = cols.shape
    c, o = ck // (k * k), size - k + 1
    out = _np().zeros((n, c, size, size), dtype=cols.dtype)
    blocks = cols.reshape(n, c, k, k, o, o)
    for i in range(k):
        for j in range(k):
            out[:, :, i:i + o, j:j + o] += blocks[:, :, i, j]
    return out


def _np_ctc(lp: Any, target: list[int], blank: int = 0) -> Any:
    """The CTC loss of one (T, C) sequence by enumerating every path."""
    import itertools
    np = _np()
    total = []
    for path in itertools.product(range(lp.shape[1]), repeat=lp.shape[0]):
        collapsed = [p for i, p in enumerate(path) if p != blank and (i == 0 or p != path[i - 1])]
        if collapsed == target:
            total.append(sum(lp[t, p] for t, p in enumerate(path)))
    return -np.logaddexp.reduce(np.array(total))


def _np_multilabel(x: Any, y: Any) -> Any:
    np = _np()
    out = []
    for row, tgt in zip(x, y):
        labels = []
        for v in tgt:
            if v < 0:
                break
            labels.append(v)
        others = [i for i in range(len(row)) if i not in labels]
        out.append(sum(max(0.0, 1 - row[j] + row[i]) for j in labels for i in others) / len(row))
    return np.mean(out)


def _np_grid(theta: Any, h: int, w: int) -> Any:
    """affine_grid of (N, 2, 3) to (N, h, w, 2), align_corners=False."""
    np = _np()
    xs, ys = (np.arange(w) * 2 + 1) / w - 1, (np.arange(h) * 2 + 1) / h - 1
    base = np.stack([np.tile(xs, (h, 1)), np.tile(ys[:, None], (1, w)), np.ones((h, w))], -1)
    return base.reshape(1, h * w, 3) @ np.swapaxes(theta, 1, 2)


def _np_shape(nested: Any) -> tuple[int, ...]:
    return _np().asarray(nested).shape


def _np_unpool(x: Any, indices: Any, n: int) -> Any:
    np = _np()
    idx = np.asarray(indices)
    out_shape = tuple((s - 1) * 2 + 2 for s in idx.shape[2:])
    out = np.zeros((*idx.shape[:2], int(np.prod(out_shape))), dtype=x.dtype)
    np.put_along_axis(out, idx.reshape(*idx.shape[:2], -1), x.reshape(*idx.shape[:2], -1), 2)
    return out.reshape(idx.shape[:2] + out_shape)



def _np_fractional(x: Any, k: tuple[int, ...], out: tuple[int, ...], samples: Any) -> Any:
    """PyTorch's fractional max pooling with the given samples (per plane; a 2-d plane's are (w, h))."""
    import itertools
    np = _np()
    n = len(k)
    nb, c, *size = x.shape
    res = np.zeros((nb, c, *out), dtype=x.dtype)
    for b, ch in itertools.product(range(nb), range(c)):
        u = samples[b][ch][::-1] if n == 2 else samples[b][ch]
        starts = []
        for d in range(n):
            alpha = np.float32((size[d] - k[d]) / (out[d] - 1))
            seq = [int(np.float32((i + np.float32(u[d])) * alpha)) - int(np.float32(np.float32(u[d]) * alpha))
                   for i in range(out[d] - 1)]
            starts.append([*seq, size[d] - k[d]])
        for pos in itertools.product(*(range(o) for o in out)):
            window = tuple(slice(starts[d][pos[d]], starts[d][pos[d]] + k[d]) for d in range(n))
            res[(b, ch, *pos)] = x[(b, ch, *window)].max()
    return res


_UNPOOL = {1: [[[1, 2, 5]]], 2: [[[[0, 3], [9, 14]]]], 3: [[[[[0, 9], [19, 30]]]]]}
_ML = [[0, -1, 0], [1, 2, -1], [2, 0, 1], [-1, 0, 0]]
_IDENTITY = [[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]]
OP_DB += [
    _nn("nn.unfold", lambda x: _np_unfold(x, 2), lambda f, F, x: F.unfold(x, 2), shapes=(((1, 2, 3, 4),),)),
    _nn("nn.fold", lambda x: _np_fold(x, 3, 2), lambda f, F, x: F.fold(x, 3, 2), shapes=(((1, 8, 4),),)),
    _nn("lp_pool1d", lambda x: _np().sqrt(x[..., 0::2] ** 2 + x[..., 1::2] ** 2),
        lambda f, F, x: F.lp_pool1d(x, 2, 2), shapes=(((2, 3, 4),),), domain=(0.5, 2.0)),
    _nn("lp_pool2d", lambda x: _np().sqrt((x ** 2).reshape(1, 2, 2, 2, 2, 2).sum((3, 5))),
        lambda f, F, x: F.lp_pool2d(x, 2, 2), shapes=(((1, 2, 4, 4),),), domain=(0.5, 2.0)),
    _nn("lp_pool3d", lambda x: _np().sqrt((x ** 2).sum((2, 3, 4), keepdims=True)),
        lambda f, F, x: F.lp_pool3d(x, 2, 2), shapes=(((1, 2, 2, 2, 2),),), domain=(0.5, 2.0)),
    *(_nn(f"max_unpool{n}d", lambda x, _n=n: _np_unpool(x, _UNPOOL[_n], _n),
          lambda f, F, x, _n=n: getattr(F, f"max_unpool{_n}d")(x, _t(f, x, _UNPOOL[_n]), 2),
          shapes=((tuple(_np_shape(_UNPOOL[n])),),)) for n in (1, 2, 3)),
    _nn("adaptive_avg_pool3d", lambda x: x.reshape(1, 2, 2, 2, 2, 2, 2, 2).mean((3, 5, 7)),
        lambda f, F, x: F.adaptive_avg_pool3d(x, 2), shapes=(((1, 2, 4, 4, 4),),)),
    _nn("adaptive_max_pool3d", lambda x: x.reshape(1, 2, 2, 2, 2, 2, 2, 2).max((3, 5, 7)),
        lambda f, F, x: F.adaptive_max_pool3d(x, 2), shapes=(((1, 2, 4, 4, 4),),)),
    _nn("conv_transpose3d", lambda x: x.sum(1, keepdims=True) * 2,
        lambda f, F, x: F.conv_transpose3d(x, f.full((2, 1, 1, 1, 1), 2, device=x.device).to(x.dtype)),
        shapes=(((1, 2, 2, 3, 2),),)),
    _nn("affine_grid", lambda x: _np_grid(x, 2, 3).reshape(1, 2, 3, 2),
        lambda f, F, x: F.affine_grid(x, (1, 1, 2, 3), align_corners=False), shapes=(((1, 2, 3),),)),
    _nn("grid_sample", lambda x: x, lambda f, F, x: F.grid_sample(
        x, F.affine_grid(_w(f, x, _IDENTITY), (1, 1, 3, 4), align_corners=True), align_corners=True),
        shapes=(((1, 1, 3, 4),),)),
    _nn("prelu", lambda x: _np().where(x > 0, x, 0.25 * x), lambda f, F, x: F.prelu(x, _w(f, x, [0.25]))),
    _rnd("gumbel_softmax", lambda x: x * 0 + 1, lambda f, x: f.nn.functional.gumbel_softmax(x),
         shapes=(((4, 1),),)),
    _nn("multilabel_margin_loss", lambda x: _np_multilabel(x, _ML),
        lambda f, F, x: F.multilabel_margin_loss(x, _t(f, x, _ML))),
    _nn("triplet_margin_with_distance_loss",
        lambda x: _np().maximum(_np().linalg.norm(x - x[::-1] + 1e-6, axis=-1)
                                - _np().linalg.norm(x - x[:, ::-1] + 1e-6, axis=-1) + 1, 0).mean(),
        lambda f, F, x: F.triplet_margin_with_distance_loss(x, x.flip(0), x.flip(1))),
    _nn("linear_cross_entropy", lambda x: -_lsm(x @ _np().array(_W).T)[range(4), [0, 1, 1, 0]].mean(),
        lambda f, F, x: F.linear_cross_entropy(x, _w(f, x, _W), _t(f, x, [0, 1, 1, 0]))),
    _nn("embedding_bag", lambda x: _np().stack([x[[0, 1]].mean(0), x[[2, 3]].mean(0)]),
        lambda f, F, x: F.embedding_bag(_t(f, x, [[0, 1], [2, 3]]), x)),
    _nn("fractional_max_pool2d", lambda x: _np_fractional(x, (2, 2), (2, 3), [[[0.3, 0.7], [0.9, 0.1]]]),
        lambda f, F, x: F.fractional_max_pool2d(x, 2, (2, 3), _random_samples=_w(f, x, [[[0.3, 0.7], [0.9, 0.1]]])),
        shapes=(((1, 2, 5, 6),),)),
    _nn("fractional_max_pool3d", lambda x: _np_fractional(x, (2, 1, 2), (2, 3, 2), [[[0.3, 0.7, 0.5]]]),
        lambda f, F, x: F.fractional_max_pool3d(x, (2, 1, 2), (2, 3, 2), _random_samples=_w(f, x, [[[0.3, 0.7, 0.5]]])),
        shapes=(((1, 1, 4, 5, 4),),)),
    _nn("ctc_loss", lambda x: _np_ctc(x, [1, 2]),
        lambda f, F, x: F.ctc_loss(x, _t(f, x, [1, 2]), [4], [2], reduction="sum"), shapes=(((4, 3),),)),
]



# -- the rest of the torch / Tensor surface (_ops/elementwise_composites, statistics, scatter, numeric) ----------
def _frexp(x: Any) -> Any:
    m, e = _np().frexp(x)
    return _np().stack([m, e.astype(m.dtype)])


def _scattered(x: Any, where: Any, src: Any) -> Any:
    out = x.copy()
    out[where] = src
    return out


def _nonzero_static(x: Any, size: int = 5) -> Any:
    np = _np()
    idx = np.argwhere(x)[:size]
    return np.concatenate([idx, np.full((size - len(idx), x.ndim), -1)]) if len(idx) < size else idx


def _renorm(x: Any, p: float = 2.0, dim: int = 0, maxnorm: float = 1.0) -> Any:
    np = _np()
    other = tuple(i for i in range(x.ndim) if i != dim)
    norm = (np.abs(x) ** p).sum(other, keepdims=True) ** (1 / p)
    return x * np.where(norm > maxnorm, maxnorm / (norm + 1e-7), 1.0)


OP_DB += [
    OpInfo("frexp", _frexp, call=lambda f, x: f.stack([(r := f.frexp(x)).mantissa, r.exponent.to(x.dtype)]),
           grad=False),
    OpInfo("nextafter", lambda x, y: _np().nextafter(x, y), 2, grad=False, widen=False, edge=False),
    OpInfo("rsub", lambda x, y: y - 2 * x, 2, call=lambda f, x, y: f.rsub(x, y, alpha=2)),
    OpInfo("gcd", lambda x, y: _np().gcd(x, y), 2, grad=False),
    OpInfo("lcm", lambda x, y: _np().lcm(x, y), 2, grad=False, domain=(0, 6)),
    _mv("quantile", lambda x, q=0.3, interpolation="linear": _np().quantile(x, q, 1, method=interpolation),
        lambda f, x, **kw: f.quantile(x, dim=1, **kw), shapes=(((3, 4),), ((2, 3, 5),)),
        kwargs=({"q": 0.3}, {"q": 0.5, "interpolation": "lower"}, {"q": 0.75, "interpolation": "nearest"},
                {"q": 0.4, "interpolation": "midpoint"})),
    _mv("nanquantile", lambda x: _np().nanquantile(x, 0.3),
        lambda f, x: f.nanquantile(x, 0.3), shapes=(((3, 4),), ((5,),))),
    _mv("histogramdd", lambda x: _np().histogramdd(x.reshape(-1, 2), [2, 3], [(-3.0, 3.0), (-2.0, 2.0)])[0],
        lambda f, x: f.histogramdd(x, [2, 3], range=[-3.0, 3.0, -2.0, 2.0]).hist, grad=False,
        shapes=(((6, 2),), ((2, 3, 2),))),
    _mv("histogram", lambda x: _np().histogram(x, 4, (-3.0, 3.0))[0],
        lambda f, x: f.histogram(x, 4, range=(-3.0, 3.0)).hist, grad=False, shapes=(((3, 4),), ((7,),))),
    _mv("put", lambda x: _scattered(x.reshape(-1), [5, 0, -1], x[0, :3]).reshape(x.shape),
        lambda f, x: f.put(x, f.tensor([5, 0, -1], device=x.device), x[0, :3]), shapes=_S),
    _mv("select_scatter", lambda x: _scattered(x, (slice(None), 1), x[:, 0][::-1]),
        lambda f, x: f.select_scatter(x, x[:, 0].flip(0), 1, 1), shapes=_S),
    _mv("slice_scatter", lambda x: _scattered(x, (slice(None), slice(1, 4, 2)), x[:, :2]),
        lambda f, x: f.slice_scatter(x, x[:, :2], 1, 1, 4, 2), shapes=_S),
    _mv("diagonal_scatter", lambda x: _scattered(x, ([0, 1, 2], [1, 2, 3]), x[:, 0]),
        lambda f, x: f.diagonal_scatter(x, x[:, 0], 1), shapes=_S),
    _mv("as_strided_scatter", lambda x: _scattered(x.reshape(-1), [1, 3, 5], x[:, 0]).reshape(x.shape),
        lambda f, x: f.as_strided_scatter(x, x[:, 0], (3,), (2,), 1), shapes=_S),
    _mv("renorm", lambda x: _renorm(x), lambda f, x: f.renorm(x, 2, 0, 1.0), shapes=(((3, 4),), ((2, 3, 4),))),
    OpInfo("cross", lambda x, y: _np().cross(x, y), 2, call=lambda f, x, y: f.cross(x, y),
           shapes=(((4, 3), (4, 3)), ((2, 3), (3,))), edge=False),
    _mv("adjoint", lambda x: _np().conj(_np().swapaxes(x, -1, -2)), lambda f, x: f.adjoint(x),
        shapes=(((3, 4),), ((2, 3, 4),))),
    _mv("nonzero_static", _nonzero_static, lambda f, x: f.nonzero_static(x, size=5), grad=False,
        shapes=(((3, 4),), ((2,),))),
    _mv("gradient", lambda x, edge_order=1, spacing=1.0: _np().gradient(x, spacing, axis=-1, edge_order=edge_order),
        lambda f, x, **kw: f.gradient(x, dim=-1, **kw)[0], shapes=(((3, 4),), ((2, 3, 5),)),
        kwargs=({}, {"edge_order": 2, "spacing": 2.0})),
    _mv("vander", lambda x: _np().vander(x), lambda f, x: f.vander(x), shapes=(((4,),),)),
    _mv("fill", lambda x: _np().full_like(x, 2), lambda f, x: f.fill(x, 2), shapes=_S),
    _mv("combinations", lambda x: _np().array(list(__import__("itertools").combinations(x, 2))).reshape(-1, 2),
        lambda f, x: f.combinations(x), shapes=(((4,),),)),
    _mv("unravel_index", lambda x: _np().stack(_np().unravel_index(x, (2, 3))),
        lambda f, x: f.stack(f.unravel_index(x, (2, 3))), grad=False, domain=(0, 5), shapes=(((2, 3),), ((4,),))),
]
OP_DB += [
    _rnd("poisson", lambda x: x * 0, lambda f, x: f.poisson(x * 0)),
    _rnd("binomial", lambda x: _np().full_like(x, 3), lambda f, x: f.binomial(f.full_like(x, 3), f.ones_like(x))),
]
