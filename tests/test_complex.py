"""Complex tensors against PyTorch: real/imag views, conj, angle, sgn, complex, polar, view_as_real/complex,
and gradients in PyTorch's convention (conjugate Wirtinger) through elementwise ops, matmul and reductions."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch

import ferro
from ferro._ops import REGISTRY
from ferro.autograd import gradcheck, gradgradcheck
from ferro.errors import DTypeError, ShapeError

RNG = np.random.default_rng(0)


def _c(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)


def _np(t: Any) -> np.ndarray:
    return t.detach().resolve_conj().numpy() if isinstance(t, torch.Tensor) else t.detach().numpy()


def _lib(lib: Any, name: str) -> Any:
    return getattr(lib, name)


# -- values --------------------------------------------------------------------------------------------------

UNARY: dict[str, Callable[[Any, Any], Any]] = {
    "real": lambda m, x: m.real(x), "imag": lambda m, x: m.imag(x), "conj": lambda m, x: m.conj(x),
    "conj_physical": lambda m, x: m.conj_physical(x), "resolve_conj": lambda m, x: m.resolve_conj(x),
    "resolve_neg": lambda m, x: m.resolve_neg(x), "angle": lambda m, x: m.angle(x), "sgn": lambda m, x: m.sgn(x),
    "abs": lambda m, x: m.abs(x), "view_as_real": lambda m, x: m.view_as_real(x),
    "prop_real": lambda m, x: x.real, "prop_imag": lambda m, x: x.imag, "method_conj": lambda m, x: x.conj(),
    "method_angle": lambda m, x: x.angle(), "method_sgn": lambda m, x: x.sgn(),
}


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
@pytest.mark.parametrize("name", list(UNARY))
def test_unary_values_and_dtypes_match_torch(name: str, dtype: str) -> None:
    a = np.concatenate([_c(5), [0j, -2 + 0j, 3j]]).astype(dtype)
    out = UNARY[name](ferro, ferro.tensor(a))
    ref = UNARY[name](torch, torch.tensor(a))
    assert out.dtype.name == str(ref.dtype).split(".")[-1]
    np.testing.assert_allclose(_np(out), _np(ref), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_complex_polar_view_as_complex_match_torch(dtype: str) -> None:
    a, b = RNG.standard_normal((3, 1)).astype(dtype), RNG.standard_normal(4).astype(dtype)
    for name in ("complex", "polar"):
        out = getattr(ferro, name)(ferro.tensor(a), ferro.tensor(b))
        ref = getattr(torch, name)(torch.tensor(a), torch.tensor(b))
        assert out.dtype.name == str(ref.dtype).split(".")[-1]
        np.testing.assert_allclose(out.numpy(), ref.numpy(), rtol=1e-6)
    pairs = RNG.standard_normal((2, 3, 2)).astype(dtype)
    np.testing.assert_allclose(ferro.view_as_complex(ferro.tensor(pairs)).numpy(),
                               torch.view_as_complex(torch.tensor(pairs)).numpy())


def test_angle_of_real_tensors_matches_torch() -> None:
    a = np.array([-1.5, 0.0, -0.0, 2.0, np.nan, -np.inf, np.inf])
    for dt in ("float32", "float64"):
        out, ref = ferro.tensor(a).to(getattr(ferro, dt)).angle(), torch.tensor(a).to(getattr(torch, dt)).angle()
        assert out.dtype.name == dt
        np.testing.assert_array_equal(out.numpy(), ref.numpy())
    ints = ferro.tensor([-3, 0, 4]).angle()
    assert ints.dtype is ferro.float32
    np.testing.assert_allclose(ints.numpy(), torch.tensor([-3, 0, 4]).angle().numpy())


def test_real_tensors_pass_through_real_conj_resolve() -> None:
    x = ferro.tensor([1.0, -2.0])
    assert x.real is x and ferro.real(x) is x and x.conj() is x and ferro.resolve_conj(x) is x
    np.testing.assert_array_equal(x.sgn().numpy(), [1.0, -1.0])
    assert not x.is_complex() and ferro.tensor([1j]).is_complex() and ferro.is_complex(ferro.tensor([1j]))
    assert not ferro.is_conj(ferro.tensor([1j]).conj())


@pytest.mark.parametrize("call, err, match", [
    (lambda: ferro.tensor([1.0]).imag, DTypeError, "imag is not implemented for tensors with non-complex dtypes"),
    (lambda: ferro.complex(ferro.tensor([1.0]), ferro.tensor([1.0], dtype=ferro.float64)), DTypeError,
     "same dtype, got ferro.float32 and ferro.float64"),
    (lambda: ferro.complex(ferro.tensor([1]), ferro.tensor([2])), DTypeError, "got ferro.int64 and ferro.int64"),
    (lambda: ferro.complex([1.0], ferro.tensor([2.0])), TypeError, "expected Tensors"),
    (lambda: ferro.polar(ferro.tensor([1j]), ferro.tensor([1.0])), DTypeError, "float32 or float64"),
    (lambda: ferro.view_as_real(ferro.tensor([1.0])), DTypeError, "only supported for complex"),
    (lambda: ferro.view_as_complex(ferro.ones(3, 3)), ShapeError, "last dimension must have size 2"),
    (lambda: ferro.view_as_complex(ferro.ones(3, 2, dtype=ferro.int64)), DTypeError, "float32 and float64"),
    (lambda: ferro.real("x"), TypeError, "must be a Tensor"),
])
def test_bad_arguments_are_refused_clearly(call: Callable[[], Any], err: type, match: str) -> None:
    with pytest.raises(err, match=match):
        call()


# -- real and imag are views -----------------------------------------------------------------------------------


def test_writes_through_real_and_imag_change_the_tensor() -> None:
    a = np.array([1 + 2j, 3 - 1j])
    x, t = ferro.tensor(a), torch.tensor(a)
    x.real.mul_(10)
    t.real.mul_(10)
    x.imag[1] = 7.0
    t.imag[1] = 7.0
    np.testing.assert_array_equal(x.numpy(), t.numpy())
    x.real = ferro.tensor([0.5, 0.25], dtype=ferro.float64)
    x.imag = -1.0
    np.testing.assert_array_equal(x.numpy(), [0.5 - 1j, 0.25 - 1j])
    assert x.version == 4  # the views share the tensor's version counter


def test_a_saved_tensor_changed_through_real_is_caught() -> None:
    x = ferro.tensor([1 + 1j, 2 - 1j], requires_grad=True)
    y = x * 2
    z = y * y  # saves y
    y.real.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.sum().abs().backward()


@pytest.mark.parametrize("part", ["real", "imag"])
@pytest.mark.parametrize("how", ["mul_", "copy_slice"])
def test_gradients_through_in_place_writes_to_views_match_torch(part: str, how: str) -> None:
    a, w, v = _c(3), RNG.standard_normal(3), _c(3)
    grads = []
    for lib in (ferro, torch):
        x, s = lib.tensor(a, requires_grad=True), lib.tensor(w, requires_grad=True)
        y = x * 2
        view = getattr(y, part)
        if how == "mul_":
            view.mul_(s)
        else:
            view[1:].copy_(s[:2].exp())
        y.backward(lib.tensor(v))
        grads.append((_np(x.grad), _np(s.grad)))
    for got, want in zip(*grads):
        np.testing.assert_allclose(got, want, rtol=1e-12)


# -- gradients ---------------------------------------------------------------------------------------------


FUNCS: dict[str, tuple[Callable[..., Any], tuple[Any, ...]]] = {
    "mul": (lambda m, x, y: x * y, (_c(3), _c(3))),
    "mul_real_complex": (lambda m, x, y: x * y, (RNG.standard_normal(3), _c(3))),
    "div": (lambda m, x, y: x / y, (_c(3), _c(3))),
    "add_sub": (lambda m, x, y: x + 2 * y - x * 1j, (_c(3), _c(3))),
    "pow": (lambda m, x, y: x ** y, (_c(3), _c(3))),
    "pow_scalar": (lambda m, x: x ** 2.5 + 2 ** x, (_c(3),)),
    **{f: (lambda m, x, _f=f: getattr(x, _f)(), (_c(4),)) for f in (
        "exp", "log", "sqrt", "sin", "cos", "tan", "tanh", "sigmoid", "square", "log1p", "expm1", "asin", "acos",
        "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "log2", "log10", "reciprocal", "rsqrt", "abs", "angle",
        "sgn", "conj", "neg")},
    "real_imag": (lambda m, x: x.real * x.imag + x.real.exp(), (_c(4),)),
    "abs_squared": (lambda m, x: (x * x.conj()).real, (_c(4),)),
    "matmul": (lambda m, x, y: x @ y, (_c(2, 3), _c(3, 4))),
    "matvec": (lambda m, x, y: x @ y, (_c(2, 3), _c(3))),
    "vecmat": (lambda m, x, y: x @ y, (_c(3), _c(3, 2))),
    "dot": (lambda m, x, y: x @ y, (_c(3), _c(3))),
    "batched": (lambda m, x, y: m.matmul(x, y), (_c(2, 2, 3), _c(3, 2))),
    "vdot": (lambda m, x, y: m.vdot(x, y), (_c(3), _c(3))),
    "sum_mean": (lambda m, x: x.sum(0) + x.mean(1, keepdim=True), (_c(2, 3),)),
    "complex": (lambda m, x, y: m.complex(x, y), (RNG.standard_normal(3), RNG.standard_normal(3))),
    "polar": (lambda m, x, y: m.polar(x, y), (RNG.uniform(0.5, 2, 3), RNG.standard_normal(3))),
    "view_as_real": (lambda m, x: m.view_as_real(x), (_c(3),)),
    "view_as_complex": (lambda m, x: m.view_as_complex(x), (RNG.standard_normal((3, 2)),)),
    "where_cast": (lambda m, x, y: m.where(x.abs() > 1, x, y.to(x.dtype)), (_c(4), RNG.standard_normal(4))),
    "prod_cumprod": (lambda m, x: x.prod(-1).sum() + x.cumprod(1), (_c(2, 3),)),
    "cumprod_zero": (lambda m, x: x.cumprod(1) * 1, (np.array([[1 + 1j, 0j, 2 - 1j, 0.5j]]),)),
    "var_std": (lambda m, x: x.var(0) + x.std(1).sum(), (_c(3, 3),)),
    "norms": (lambda m, x: x.norm() + m.linalg.vector_norm(x, dim=-1).sum() + m.linalg.matrix_norm(x), (_c(3, 3),)),
    "einsum_outer_kron": (lambda m, x, y: m.einsum("ij,jk->ik", x, y).sum() + m.kron(x, y).sum() * 1j
                          + m.outer(x[0], y[0]).sum(), (_c(2, 2), _c(2, 2))),
    "inv": (lambda m, x: m.linalg.inv(x), (_c(2, 3, 3),)),
    "det": (lambda m, x: m.linalg.det(x), (_c(2, 3, 3),)),
    "logabsdet": (lambda m, x: m.linalg.slogdet(x).logabsdet, (_c(3, 3),)),
    "solve": (lambda m, x, y: m.linalg.solve(x, y), (_c(3, 3), _c(3, 2))),
}


def _grads(lib: Any, name: str) -> list[np.ndarray]:
    fn, arrays = FUNCS[name]
    xs = [lib.tensor(a, requires_grad=True) for a in arrays]
    out = fn(lib, *xs)
    v = np.random.default_rng(1).standard_normal(tuple(out.shape))
    if out.is_complex():
        v = v + 1j * np.random.default_rng(2).standard_normal(tuple(out.shape))
    out.backward(lib.tensor(v, dtype=out.dtype))
    return [_np(x.grad) for x in xs]


@pytest.mark.parametrize("name", list(FUNCS))
def test_gradients_match_torch(name: str) -> None:
    for got, want in zip(_grads(ferro, name), _grads(torch, name)):
        assert got.dtype == want.dtype  # a real input's gradient stays real
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("name", list(FUNCS))
def test_gradcheck_and_gradgradcheck(name: str) -> None:
    fn, arrays = FUNCS[name]
    assert gradcheck(lambda *xs: fn(ferro, *xs), [ferro.tensor(a, requires_grad=True) for a in arrays])
    assert gradgradcheck(lambda *xs: fn(ferro, *xs), [ferro.tensor(a, requires_grad=True) for a in arrays],
                         atol=1e-4)


def test_gradcheck_catches_a_missing_conjugate(monkeypatch: pytest.MonkeyPatch) -> None:
    """The complex gradient check is able to fail: mul's formula without the conjugate is caught."""
    monkeypatch.setattr(REGISTRY["mul"], "grads", (lambda g, x, y: g * y, lambda g, x, y: g * x))
    x, y = ferro.tensor(_c(3), requires_grad=True), ferro.tensor(_c(3))
    with pytest.raises(AssertionError, match="Jacobian mismatch for input 0"):
        gradcheck(lambda a: a * y, [x])


def test_gradcheck_perturbs_the_imaginary_part() -> None:
    """A function of the imaginary part: right, it passes; with a gradient blind to it, it fails."""
    assert gradcheck(lambda t: t.imag * t.imag, [ferro.tensor(_c(3), requires_grad=True)])
    with pytest.raises(AssertionError, match="Jacobian mismatch"):
        gradcheck(_wrong_imag, [ferro.tensor(_c(3), requires_grad=True)])


def _wrong_imag(t: Any) -> Any:
    """t.imag ** 2 with a gradient that forgets the imaginary direction (through a detached branch)."""
    return t.imag.detach() * t.imag.detach() + (t.real - t.real.detach())


def test_complex_leaf_grad_accumulates_and_is_complex() -> None:
    x = ferro.tensor([1 + 1j, 2 - 3j], requires_grad=True)
    (x * x.conj()).real.sum().backward()
    (x * x.conj()).real.sum().backward()
    assert x.grad.dtype is ferro.complex64
    np.testing.assert_allclose(x.grad.numpy(), 4 * np.array([1 + 1j, 2 - 3j]), rtol=1e-6)
