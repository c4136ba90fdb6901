"""Every elementwise op of the table in ``ferro._ops.elementwise`` against NumPy (values) and PyTorch (dtypes).

Values are computed by NumPy in float64 from the same inputs and compared in
the result's dtype; result dtypes (int inputs to float ops, promotion of
mixed operands) are PyTorch's. Inputs cover broadcasting, non-contiguous
views, empty tensors and inf / nan / -0.0.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from scipy import special

import ferro
from ferro._ops import REGISTRY
from ferro._ops.elementwise import BINARY, DECOMPOSITIONS, UNARY
from ferro.testing import assert_close

torch = pytest.importorskip("torch")
rng = np.random.default_rng(2)


def _name(d: Any) -> str:
    return str(d).removeprefix("torch.").removeprefix("ferro.")


def _fdt(name: str) -> ferro.DType:
    return ferro.bool_ if name == "bool" else getattr(ferro, name)


UNARY_REF: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "neg": np.negative, "positive": np.positive, "abs": np.abs, "sign": np.sign, "exp": np.exp, "log": np.log,
    "sqrt": np.sqrt, "sin": np.sin, "cos": np.cos, "tan": np.tan, "tanh": np.tanh,
    "sigmoid": lambda x: 1 / (1 + np.exp(-x)), "relu": lambda x: np.maximum(x, 0).astype(x.dtype),
    "square": np.square, "log1p": np.log1p, "expm1": np.expm1, "floor": np.floor, "ceil": np.ceil,
    "trunc": np.trunc, "round": np.rint, "asin": np.arcsin, "acos": np.arccos, "atan": np.arctan, "sinh": np.sinh,
    "cosh": np.cosh, "asinh": np.arcsinh, "acosh": np.arccosh, "atanh": np.arctanh, "log2": np.log2,
    "log10": np.log10, "erf": special.erf, "erfc": special.erfc, "erfinv": special.erfinv, "lgamma": special.gammaln,
    "digamma": special.digamma, "isnan": np.isnan, "isinf": np.isinf, "isfinite": np.isfinite,
    "logical_not": np.logical_not, "bitwise_not": np.invert, "reciprocal": lambda x: 1 / x,
    "rsqrt": lambda x: 1 / np.sqrt(x), "exp2": np.exp2, "frac": lambda x: x - np.trunc(x),
}
BINARY_REF: dict[str, Callable[[Any, Any], np.ndarray]] = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.true_divide, "pow": np.power,
    "maximum": np.maximum, "minimum": np.minimum, "atan2": np.arctan2, "floor_divide": np.floor_divide,
    "remainder": np.remainder, "hypot": np.hypot, "logaddexp": np.logaddexp, "eq": np.equal, "ne": np.not_equal,
    "lt": np.less, "le": np.less_equal, "gt": np.greater, "ge": np.greater_equal, "logical_and": np.logical_and,
    "logical_or": np.logical_or, "logical_xor": np.logical_xor, "bitwise_and": np.bitwise_and,
    "bitwise_or": np.bitwise_or, "bitwise_xor": np.bitwise_xor, "bitwise_left_shift": np.left_shift,
    "bitwise_right_shift": np.right_shift,
}
UNARY_NAMES = [n for n, *_ in UNARY] + [n for n, *_ in DECOMPOSITIONS]
BINARY_NAMES = [n for n, *_ in BINARY]

#: Domains: where the op is finite and well-conditioned, so float32 matches a float64 reference.
POSITIVE = {"log", "sqrt", "log1p", "rsqrt", "reciprocal", "log2", "log10", "lgamma", "digamma"}
UNIT = {"asin", "acos", "atanh", "erfinv"}
TOLERANCE = {"float32": (2e-5, 1e-6), "float64": (1e-10, 1e-12), "float16": (2e-3, 1e-3)}


def test_reference_tables_cover_the_registry() -> None:
    assert set(UNARY_REF) == set(UNARY_NAMES)
    assert set(BINARY_REF) == set(BINARY_NAMES)


def _unary_input(name: str, shape: tuple[int, ...], dtype: str) -> np.ndarray:
    if dtype == "bool":
        return rng.random(shape) > 0.5
    if dtype.startswith(("int", "uint")):
        lo = 1 if name in POSITIVE else (0 if name in UNIT or dtype == "uint8" else -4)
        return rng.integers(lo, 1 if name in UNIT else 5, shape).astype(dtype)
    x = rng.uniform(-3, 3, shape)
    if name in POSITIVE:
        x = np.abs(x) + 0.25
    elif name in UNIT:
        x = rng.uniform(-0.9, 0.9, shape)
    elif name == "acosh":
        x = np.abs(x) + 1.1
    elif name in ("tan",):
        x = rng.uniform(-1.2, 1.2, shape)
    return x.astype(dtype)


def _reference(fn: Callable[..., np.ndarray], *args: Any, dtype: str) -> np.ndarray:
    """``fn`` in float64 (in the inputs' integers for an integer result), cast to ``dtype``."""
    kinds = "fiub" if np.dtype(dtype).kind in "fc" else "f"
    wide = [a.astype(np.float64) if isinstance(a, np.ndarray) and a.dtype.kind in kinds else a for a in args]
    with np.errstate(all="ignore"):
        return np.asarray(fn(*wide)).astype(dtype)


def _check(got: ferro.Tensor, expected: np.ndarray) -> None:
    rtol, atol = TOLERANCE.get(got.dtype.name, (0.0, 0.0))
    assert_close(got, expected, rtol=rtol, atol=atol)


def _torch_dtype(fn: Callable[..., Any], *args: Any) -> str | None:
    """The dtype PyTorch gives, or None where PyTorch refuses the dtype too."""
    targs = [torch.from_numpy(np.ascontiguousarray(a)) if isinstance(a, np.ndarray) else a for a in args]
    try:
        return _name(fn(*targs).dtype)
    except (RuntimeError, TypeError, NotImplementedError):
        return None


# -- unary ------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64", "uint8", "bool"])
@pytest.mark.parametrize("name", UNARY_NAMES)
def test_unary_op_matches_numpy(name: str, dtype: str) -> None:
    fn = getattr(ferro, name)
    a = _unary_input(name, (4, 5), dtype)
    if _fdt(dtype) not in REGISTRY[name].table:
        with pytest.raises(ferro.errors.DTypeError, match=rf"{name}.*{dtype}"):
            fn(ferro.tensor(a))
        return
    got = fn(ferro.tensor(a))
    expected_dt = _torch_dtype(getattr(torch, name), a)
    if expected_dt is not None:
        assert got.dtype.name == expected_dt, "the result dtype is PyTorch's (int -> float for exp, log...)"
    _check(got, _reference(UNARY_REF[name], a, dtype=got.dtype.name))
    assert got.shape == (4, 5) and got.is_leaf
    # the method and the function are the same op
    _check(getattr(ferro.tensor(a), name)(), _reference(UNARY_REF[name], a, dtype=got.dtype.name))


FLOAT_UNARY = [n for n in UNARY_NAMES if ferro.float32 in REGISTRY[n].table]


@pytest.mark.parametrize("name", FLOAT_UNARY)
def test_unary_op_on_views_and_empty_tensors(name: str) -> None:
    fn = getattr(ferro, name)
    base = _unary_input(name, (6, 8), "float32")
    t = ferro.tensor(base)
    views = [(t.T, base.T), (t[::2, 1::3], base[::2, 1::3]), (t[:, 5], base[:, 5]), (t[1:4].T, base[1:4].T),
             (t.reshape(2, 24)[:, ::5], base.reshape(2, 24)[:, ::5])]
    for view, ref in views:
        _check(fn(view), _reference(UNARY_REF[name], ref, dtype=fn(view).dtype.name))
    for shape in [(0,), (0, 3), (2, 0, 4)]:
        out = fn(ferro.zeros(shape))
        assert out.shape == shape and out.dtype.name == _name(getattr(torch, name)(torch.zeros(shape)).dtype)
    scalar = fn(ferro.tensor(base[0, 0]))
    assert scalar.shape == ()
    _check(scalar, _reference(UNARY_REF[name], base[0, 0:1], dtype=scalar.dtype.name).reshape(()))


SPECIAL = np.array([np.inf, -np.inf, np.nan, -0.0, 0.0, 1.0, -1.0, 0.5, -0.5, 2.0, 1e-30, 88.0, -88.0, 1e30],
                   dtype=np.float64)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", FLOAT_UNARY)
def test_unary_op_on_inf_nan_and_signed_zero_matches_numpy(name: str, dtype: str) -> None:
    a = SPECIAL.astype(dtype)
    with np.errstate(all="ignore"):  # ferro-cpu leaves add / sub / mul unguarded: inf - inf may warn
        got = getattr(ferro, name)(ferro.tensor(a))
        ref = np.asarray(UNARY_REF[name](a))
    if name == "sigmoid":  # 1 / (1 + exp(-x)) in the input dtype overflows; compute it where it does not
        with np.errstate(all="ignore"):
            ref = np.where(a >= 0, 1 / (1 + np.exp(-a)), np.exp(a) / (1 + np.exp(a))).astype(dtype)
    if name == "lgamma":  # C99's lgamma and PyTorch give +inf at -inf (SciPy's gammaln: -inf)
        assert got.numpy()[1] == np.inf
        ref = np.where(a == -np.inf, np.inf, ref)
    if name == "erfinv":  # odd: erfinv(-0.0) is -0.0 in PyTorch (SciPy drops the sign)
        ref = np.copysign(ref, a)
    ref = ref.astype(got.dtype.name)
    rtol, atol = TOLERANCE[dtype] if name not in ("sin", "cos", "tan") else (1e-5, 1e-6)
    finite = ~np.isin(SPECIAL, [1e30]) if name in ("sin", "cos", "tan") else np.ones(a.shape, bool)
    assert_close(got.numpy()[finite], ref[finite], rtol=rtol, atol=atol, msg=name)
    g = got.numpy()
    if g.dtype.kind == "f":  # signed zeros (and the sign of infinities) as NumPy gives them
        same_sign = (np.signbit(g) == np.signbit(ref)) | np.isnan(ref) | (ref != 0) | ~finite
        if name == "relu":
            same_sign |= (a == 0)  # the sign of relu(-0.0) is not specified (erfinv(-0.0) is -0.0, as in PyTorch)
        assert same_sign.all(), f"{name}: signed zeros differ at {a[~same_sign]}"


# -- binary -----------------------------------------------------------------------------


def _binary_inputs(name: str, sa: tuple[int, ...], sb: tuple[int, ...], dtype: str) -> tuple[np.ndarray, np.ndarray]:
    if dtype == "bool":
        return np.asarray(rng.random(sa) > 0.5), np.asarray(rng.random(sb) > 0.5)
    if dtype.startswith(("int", "uint")):
        a = rng.integers(0 if dtype == "uint8" else -6, 7, sa).astype(dtype)
        b = rng.integers(1, 4 if name.startswith("bitwise_") or name == "pow" else 7, sb).astype(dtype)
        return a, b
    a, b = rng.uniform(-3, 3, sa).astype(dtype), rng.uniform(-3, 3, sb).astype(dtype)
    if name == "pow":
        a = np.abs(a) + 0.1
    if name in ("div", "floor_divide", "remainder"):
        b = np.where(np.abs(b) < 0.1, 0.5, b).astype(dtype)
    return a, b


SHAPES = [((3, 4), (3, 4)), ((3, 1, 4), (5, 4)), ((4,), (2, 3, 4)), ((2, 1), (1, 3)), ((), (3,)), ((0, 3), (3,))]


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64", "uint8", "bool"])
@pytest.mark.parametrize("name", BINARY_NAMES)
def test_binary_op_matches_numpy_with_broadcasting(name: str, dtype: str) -> None:
    fn = getattr(ferro, name)
    for sa, sb in SHAPES:
        a, b = _binary_inputs(name, sa, sb, dtype)
        if _fdt(dtype) not in REGISTRY[name].table:
            with pytest.raises(ferro.errors.DTypeError, match=rf"{name}.*{dtype}"):
                fn(ferro.tensor(a), ferro.tensor(b))
            return
        got = fn(ferro.tensor(a), ferro.tensor(b))
        expected_dt = _torch_dtype(getattr(torch, name), a, b)
        if expected_dt is not None:
            assert got.dtype.name == expected_dt, (sa, sb)
        assert tuple(got.shape) == np.broadcast_shapes(sa, sb)
        if name == "pow" and dtype in ("uint8",):
            _check(got, np.power(a, b))  # wraps in uint8, as NumPy does
        else:
            _check(got, _reference(BINARY_REF[name], a, b, dtype=got.dtype.name))


@pytest.mark.parametrize("name", [n for n in BINARY_NAMES if ferro.float32 in REGISTRY[n].table])
def test_binary_op_on_non_contiguous_views(name: str) -> None:
    fn = getattr(ferro, name)
    a, b = _binary_inputs(name, (6, 8), (8, 6), "float32")
    ta, tb = ferro.tensor(a), ferro.tensor(b)
    pairs = [((ta, tb.T), (a, b.T)), ((ta[::2, ::2], tb.T[1::2, ::2]), (a[::2, ::2], b.T[1::2, ::2])),
             ((ta[:, 3], tb[2]), (a[:, 3], b[2])), ((ta[:, :1], tb[0]), (a[:, :1], b[0]))]
    for (x, y), (rx, ry) in pairs:
        got = fn(x, y)
        _check(got, _reference(BINARY_REF[name], rx, ry, dtype=got.dtype.name))


SCALARS = [2, 2.5, True, -3]


@pytest.mark.parametrize("dtype", ["float32", "int32", "int64", "float64"])
@pytest.mark.parametrize("name", BINARY_NAMES)
def test_binary_op_with_python_scalars_on_either_side(name: str, dtype: str) -> None:
    fn = getattr(ferro, name)
    a, _ = _binary_inputs(name, (2, 3), (3,), dtype)
    if name == "pow":
        a = np.abs(a) + (1 if dtype.startswith("int") else 0)
    for s in SCALARS:
        for args, targs in (((ferro.tensor(a), s), (torch.from_numpy(a), s)),
                            ((s, ferro.tensor(a)), (s, torch.from_numpy(a)))):
            try:
                ref_t = getattr(torch, name)(*targs)
            except (RuntimeError, TypeError, NotImplementedError):
                continue  # PyTorch does not take this combination (e.g. a scalar first)
            if name in ("floor_divide", "remainder") and (s in (0, False) or 0 in a) and dtype.startswith("int"):
                continue
            if name == "pow" and dtype.startswith("int") and args[0] is s and s < 0:
                continue
            got = fn(*args)
            assert got.dtype.name == _name(ref_t.dtype), (s, "left" if args[0] is s else "right")
            np_args = [v if not isinstance(v, ferro.Tensor) else a for v in args]
            if name == "pow" and got.dtype.kind in "iu":
                expected = ref_t.numpy()
            else:
                expected = _reference(BINARY_REF[name], *[np.asarray(v) for v in np_args], dtype=got.dtype.name)
            _check(got, expected)


BINARY_SPECIAL = np.array([np.inf, -np.inf, np.nan, -0.0, 0.0, 1.0, -1.0, 2.5])


@pytest.mark.parametrize("name", ["add", "sub", "mul", "div", "pow", "maximum", "minimum", "atan2", "floor_divide",
                                  "remainder", "hypot", "logaddexp", "eq", "lt", "ge"])
def test_binary_op_on_inf_nan_and_signed_zero_matches_numpy(name: str) -> None:
    a = np.repeat(BINARY_SPECIAL, BINARY_SPECIAL.size).astype(np.float32)
    b = np.tile(BINARY_SPECIAL, BINARY_SPECIAL.size).astype(np.float32)
    with np.errstate(all="ignore"):  # ferro-cpu leaves add / sub / mul unguarded: inf - inf may warn
        got = getattr(ferro, name)(ferro.tensor(a), ferro.tensor(b))
        ref = np.asarray(BINARY_REF[name](a, b))
    if name == "remainder":  # PyTorch's (and Python's) x % y: x - floor(x / y) * y; NumPy's agrees but for inf
        keep = np.isfinite(a) & np.isfinite(b)
        got_v, ref = got.numpy()[keep], ref[keep]
    else:
        got_v = got.numpy()
    assert_close(got_v, ref.astype(got.dtype.name), rtol=1e-6, atol=0, msg=name)
    if got_v.dtype.kind == "f":
        zero = ref == 0
        assert (np.signbit(got_v[zero]) == np.signbit(ref[zero])).all(), f"{name}: signed zeros differ"


# -- promotion, where, errors --------------------------------------------------------------

MIXED = [("float32", "float64"), ("int32", "float32"), ("int64", "float16"), ("uint8", "int8"), ("bool", "int32"),
         ("bool", "float64"), ("int8", "int16"), ("float16", "bfloat16"), ("uint8", "bool"), ("int32", "int64")]


@pytest.mark.parametrize("da, db", MIXED, ids=str)
@pytest.mark.parametrize("name", ["add", "mul", "div", "maximum", "atan2", "eq", "lt", "pow", "sub"])
def test_mixed_dtypes_promote_like_torch(name: str, da: str, db: str) -> None:
    a = rng.integers(1, 4, (2, 3)).astype(np.float32)
    b = rng.integers(1, 4, (3,)).astype(np.float32)
    ta = torch.from_numpy(a).to(getattr(torch, da))
    tb = torch.from_numpy(b).to(getattr(torch, db))
    try:
        ref = getattr(torch, name)(ta, tb)
    except (RuntimeError, TypeError, NotImplementedError):
        with pytest.raises(ferro.errors.DTypeError, match=name):
            getattr(ferro, name)(ferro.tensor(a).to(_fdt(da)), ferro.tensor(b).to(_fdt(db)))
        return
    got = getattr(ferro, name)(ferro.tensor(a).to(_fdt(da)), ferro.tensor(b).to(_fdt(db)))
    assert got.dtype.name == _name(ref.dtype)
    assert_close(got.float(), ref.float().numpy(), rtol=2e-2 if "16" in da + db else 1e-6, atol=1e-6)


def test_where() -> None:
    c = rng.random((3, 4)) > 0.5
    a, b = rng.standard_normal((3, 4)).astype(np.float32), rng.standard_normal(4).astype(np.float64)
    tc = ferro.tensor(c)
    assert_close(ferro.where(tc, ferro.tensor(a), ferro.tensor(b)), np.where(c, a, b))
    assert_close(ferro.where(tc, ferro.tensor(a), 0.0), np.where(c, a, np.float32(0)))
    assert_close(ferro.where(tc, 1.5, ferro.tensor(a)), np.where(c, np.float32(1.5), a))
    assert_close(ferro.where(tc[0], ferro.tensor(a), ferro.tensor(b)), np.where(c[0], a, b))
    assert_close(ferro.where(tc.T, ferro.tensor(a).T, ferro.tensor(a[::-1].T.copy())), np.where(c.T, a.T, a[::-1].T))
    for x, y in ((1, 2), (1, 2.5), (True, False), (True, 2), (ferro.tensor(2, dtype=ferro.int8), 1.5)):
        got = ferro.where(tc, x, y)
        ref = torch.where(torch.from_numpy(c), torch.tensor(x.item(), dtype=torch.int8)
                          if isinstance(x, ferro.Tensor) else x, y)
        assert got.dtype.name == _name(ref.dtype), (x, y)
        assert_close(got, ref.numpy())
    with pytest.raises(TypeError, match="bool"):
        ferro.where(ferro.tensor([1, 0]), 1, 2)
    with pytest.raises(ferro.errors.ShapeError, match=r"\[3, 4\].*\[5\]"):
        ferro.where(tc, ferro.tensor(a), ferro.ones(5))


@pytest.mark.parametrize("name, dtype", [("bitwise_and", "float32"), ("bitwise_or", "float64"), ("sub", "bool"),
                                         ("bitwise_left_shift", "float32"), ("lt", "complex64"),
                                         ("floor_divide", "bool"), ("atan2", "complex64"), ("neg", "bool"),
                                         ("bitwise_not", "float16"), ("relu", "bool"), ("erf", "complex64")])
def test_dtype_error_names_the_op_and_dtype(name: str, dtype: str) -> None:
    x = ferro.ones(2, dtype=_fdt(dtype))
    args = (x,) if name in UNARY_NAMES else (x, x)
    with pytest.raises(ferro.errors.DTypeError, match=rf"{name}.*{dtype}") as info:
        getattr(ferro, name)(*args)
    assert isinstance(info.value, TypeError)
    assert REGISTRY[name].dtype_words in str(info.value), "the error says which dtypes the op takes"


@pytest.mark.parametrize("sa, sb", [((2, 3), (4,)), ((3, 1, 4), (2, 3)), ((5,), (0,))], ids=str)
@pytest.mark.parametrize("name", ["add", "mul", "eq", "maximum", "bitwise_and", "atan2"])
def test_broadcast_failure_is_a_shape_error_naming_both_shapes(name: str, sa: tuple[int, ...],
                                                               sb: tuple[int, ...]) -> None:
    dtype = ferro.int32 if name == "bitwise_and" else ferro.float32
    with pytest.raises(ferro.errors.ShapeError) as info:
        getattr(ferro, name)(ferro.ones(sa, dtype=dtype), ferro.ones(sb, dtype=dtype))
    msg = str(info.value)
    assert str(list(sa)) in msg and str(list(sb)) in msg and name in msg
    assert isinstance(info.value, ValueError)


def test_non_tensor_arguments() -> None:
    with pytest.raises(TypeError, match="Tensor"):
        ferro.exp(2.0)
    with pytest.raises(TypeError, match="at least one Tensor"):
        ferro.add(1, 2)


@pytest.mark.parametrize("dtype", ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16",
                                   "float32", "float64", "complex64", "complex128"])
def test_results_hold_data_of_their_declared_dtype(dtype: str) -> None:
    """``t.numpy().dtype`` is the tensor's dtype for every op, scalar operand and dtype (NumPy's
    kernels would widen float16 / bfloat16 in SciPy's functions, and integers in ``rint``)."""
    from ferro._core.host import numpy_dtype
    d = _fdt(dtype)
    x = ferro.ones(2, 3, dtype=d)
    results: list[tuple[str, ferro.Tensor]] = []
    for name in UNARY_NAMES:
        if d in REGISTRY[name].table:
            results.append((name, getattr(ferro, name)(x)))
    for name in BINARY_NAMES:
        for other in (x, 2, 2.5, True, ferro.ones((), dtype=ferro.float64)):
            for args in ((x, other), (other, x)):
                try:
                    results.append((f"{name}{args}", getattr(ferro, name)(*args)))
                except (ferro.errors.DTypeError, TypeError, ZeroDivisionError):
                    continue
    cond = ferro.tensor([True, False, True])
    for a, b in ((x, 2.5), (1, x), (x, x[0])):
        results.append(("where", ferro.where(cond, a, b)))
    for label, r in results:
        assert r.numpy().dtype == numpy_dtype(r.dtype), f"{label}: data {r.numpy().dtype}, dtype {r.dtype}"
