"""ferro.fft against torch.fft: values, dtypes, arguments, errors, and gradients (torch.autograd and gradcheck)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch

import ferro
import ferro.fft as ffft
from ferro._ops import REGISTRY
from ferro.autograd import gradcheck, gradgradcheck
from ferro.errors import DTypeError, ShapeError, UnsupportedOperationError

RNG = np.random.default_rng(0)
ONE_D = ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft")
N_D = ("fft2", "ifft2", "rfft2", "irfft2", "fftn", "ifftn", "rfftn", "irfftn", "hfft2", "ihfft2", "hfftn", "ihfftn")
REAL_INPUT = ("rfft", "ihfft", "rfft2", "rfftn", "ihfft2", "ihfftn")
NORMS = (None, "backward", "ortho", "forward")


def _input(name: str, shape: tuple[int, ...]) -> np.ndarray:
    real = RNG.standard_normal(shape)
    return real if name in REAL_INPUT else real + 1j * RNG.standard_normal(shape)


def _np(t: Any) -> np.ndarray:
    return t.detach().resolve_conj().numpy() if isinstance(t, torch.Tensor) else t.detach().numpy()


def _both(name: str, a: np.ndarray, kw: dict[str, Any], grad: bool = False) -> tuple[Any, Any, Any, Any]:
    x = ferro.tensor(a, requires_grad=grad)
    tx = torch.tensor(a, requires_grad=grad)
    return getattr(ffft, name)(x, **kw), getattr(torch.fft, name)(tx, **kw), x, tx


CASES_1D = [(n, {"norm": norm, **extra}) for n in ONE_D for norm in NORMS
            for extra in ({}, {"n": 3}, {"n": 9}, {"dim": 0, "n": 6})]
CASES_ND = [(n, {"norm": norm, **extra}) for n in N_D for norm in NORMS
            for extra in ({}, {"s": (3, 7)}, {"s": (4, -1), "dim": (0, 2)}, {"dim": (-1, 0)})]
CASES = CASES_1D + CASES_ND
IDS = [f"{n}-{kw}" for n, kw in CASES]


@pytest.mark.parametrize("name, kw", CASES, ids=IDS)
def test_values_and_dtypes_match_torch(name: str, kw: dict[str, Any]) -> None:
    a = _input(name, (4, 3, 5))
    out, ref, _, _ = _both(name, a, kw)
    assert out.shape == tuple(ref.shape)
    assert str(out.dtype).split(".")[-1] == str(ref.dtype).split(".")[-1]
    np.testing.assert_allclose(_np(out), _np(ref), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("name, kw", CASES, ids=IDS)
def test_gradients_match_torch(name: str, kw: dict[str, Any]) -> None:
    a = _input(name, (4, 3, 5))
    out, ref, x, tx = _both(name, a, kw, grad=True)
    v = RNG.standard_normal(tuple(ref.shape))
    if ref.is_complex():
        v = v + 1j * RNG.standard_normal(tuple(ref.shape))
    ref.backward(torch.tensor(v))
    out.backward(ferro.tensor(v, dtype=out.dtype))
    assert x.grad.dtype is x.dtype
    np.testing.assert_allclose(_np(x.grad), _np(tx.grad), rtol=1e-10, atol=1e-10)


GRADCHECK = [(n, kw) for n, kw in CASES if kw.get("norm") in (None, "ortho") and "dim" not in kw]


@pytest.mark.parametrize("name, kw", GRADCHECK, ids=[f"{n}-{kw}" for n, kw in GRADCHECK])
def test_gradcheck(name: str, kw: dict[str, Any]) -> None:
    x = ferro.tensor(_input(name, (3, 4)), requires_grad=True)
    assert gradcheck(lambda t: getattr(ffft, name)(t, **kw), [x])


@pytest.mark.parametrize("name", ONE_D + N_D)
def test_gradgradcheck(name: str) -> None:
    kw = {"n": 5} if name in ONE_D else {"s": (2, 5)}
    x = ferro.tensor(_input(name, (2, 4)), requires_grad=True)
    assert gradgradcheck(lambda t: getattr(ffft, name)(t, norm="ortho", **kw), [x], atol=1e-4)


def test_real_input_reaches_a_real_gradient_through_complex_transforms() -> None:
    a = RNG.standard_normal((3, 6))
    x, tx = ferro.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    (ffft.ifft(ffft.fft(x) * ffft.fftfreq(6, dtype=ferro.float64)).real ** 2).sum().backward()
    (torch.fft.ifft(torch.fft.fft(tx) * torch.fft.fftfreq(6, dtype=torch.float64)).real ** 2).sum().backward()
    assert x.grad.dtype is ferro.float64
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("src, want", [(ferro.float32, ferro.complex64), (ferro.float64, ferro.complex128),
                                       (ferro.int64, ferro.complex64), (ferro.bool_, ferro.complex64),
                                       (ferro.complex64, ferro.complex64)])
def test_real_and_integer_inputs_are_promoted(src: ferro.DType, want: ferro.DType) -> None:
    x = ferro.tensor([1, 0, 1, 1]).to(src)
    out = ffft.fft(x)
    assert out.dtype is want
    tsrc = getattr(torch, "bool" if src is ferro.bool_ else src.name)
    np.testing.assert_allclose(out.numpy(), torch.fft.fft(torch.tensor([1, 0, 1, 1]).to(tsrc)).numpy(), rtol=1e-6)
    if not src.is_complex:
        r = ffft.rfft(x)
        assert r.dtype is want
        assert ffft.irfft(r, n=4).dtype is {ferro.complex64: ferro.float32}.get(want, ferro.float64)


def test_integers_follow_the_default_dtype() -> None:
    ferro.set_default_dtype(ferro.float64)
    try:
        assert ffft.fft(ferro.tensor([1, 2, 3])).dtype is ferro.complex128
        assert ffft.rfft(ferro.tensor([1, 2, 3])).dtype is ferro.complex128
        assert ffft.fftfreq(4).dtype is ferro.float64
    finally:
        ferro.set_default_dtype(ferro.float32)


@pytest.mark.parametrize("call, err, match", [
    (lambda: ffft.fft(ferro.ones(4, dtype=ferro.float16)), DTypeError, "float16 is not supported"),
    (lambda: ffft.rfft(ferro.ones(4, dtype=ferro.complex64)), DTypeError, "expects a real input"),
    (lambda: ffft.ihfft(ferro.ones(4, dtype=ferro.complex64)), DTypeError, "expects a real input"),
    (lambda: ffft.fft(ferro.ones(4), norm="sideways"), ValueError, "invalid normalization mode 'sideways'"),
    (lambda: ffft.fft(ferro.ones(4), n=0), ValueError, r"invalid number of data points \(0\)"),
    (lambda: ffft.irfft(ferro.ones(1)), ValueError, r"invalid number of data points \(0\)"),
    (lambda: ffft.fftn(ferro.ones(3, 4), s=(2, 2), dim=(0,)), ShapeError, "same length"),
    (lambda: ffft.fftn(ferro.ones(3, 4), dim=(0, -2)), ShapeError, "must be unique"),
    (lambda: ffft.fftn(ferro.ones(3, 4), s=(2, 2, 2)), ShapeError, "3 sizes in s for a 2-d input"),
    (lambda: ffft.fft(ferro.ones(4), dim=1), IndexError, "dimension out of range"),
    (lambda: ffft.fft(ferro.tensor(1.0)), ShapeError, "0-d tensor"),
    (lambda: ffft.fft([1.0, 2.0]), TypeError, "must be a Tensor"),
    (lambda: ffft.fftfreq(-1), ValueError, "non-negative integer"),
    (lambda: ffft.fftfreq(4, dtype=ferro.int64), DTypeError, "floating dtype"),
])
def test_bad_arguments_are_refused_clearly(call: Callable[[], Any], err: type, match: str) -> None:
    with pytest.raises(err, match=match):
        call()


@pytest.mark.parametrize("name", ["fftshift", "ifftshift"])
@pytest.mark.parametrize("dim", [None, 0, -1, (0, 2), [2, 0]])
def test_shifts_match_torch(name: str, dim: Any) -> None:
    a = RNG.standard_normal((4, 5, 3))
    x = ferro.tensor(a, requires_grad=True)
    out = getattr(ffft, name)(x, dim=dim)
    ref = getattr(torch.fft, name)(torch.tensor(a), dim=dim)
    np.testing.assert_array_equal(out.detach().numpy(), ref.numpy())
    assert gradcheck(lambda t: getattr(ffft, name)(t, dim=dim), [ferro.tensor(a[:2, :3, :2], requires_grad=True)])


def test_shift_undoes_itself() -> None:
    a = ferro.arange(7.0)
    np.testing.assert_array_equal(ffft.ifftshift(ffft.fftshift(a)).numpy(), a.numpy())


@pytest.mark.parametrize("n", [1, 2, 5, 8])
@pytest.mark.parametrize("d", [1.0, 0.25])
def test_frequencies_match_torch(n: int, d: float) -> None:
    for name in ("fftfreq", "rfftfreq"):
        out = getattr(ffft, name)(n, d, dtype=ferro.float64)
        ref = getattr(torch.fft, name)(n, d, dtype=torch.float64)
        assert out.dtype is ferro.float64
        np.testing.assert_allclose(out.numpy(), ref.numpy(), rtol=1e-15)
    assert ffft.fftfreq(n).dtype is ferro.float32
    assert ffft.rfftfreq(n, requires_grad=True).requires_grad


def test_a_failed_call_leaves_its_input_untouched() -> None:
    x = ferro.tensor([1.0, 2.0, 3.0])
    before = x.numpy().copy()
    with pytest.raises(ValueError):
        ffft.fft(x, norm="bad")
    np.testing.assert_array_equal(x.numpy(), before)
    assert x.version == 0


def test_every_function_is_a_registry_op() -> None:
    for name in ffft.__all__:
        op = REGISTRY[f"fft.{name}"]
        assert op.fn is getattr(ffft, name) and op.doc
    for prim in ("fft_c2c", "fft_r2c", "fft_c2r"):
        assert REGISTRY[prim].differentiable


def test_ferro_ops_lists_the_fft_ops() -> None:
    from ferro.cli import ops_matrix
    matrix = ops_matrix(["cpu"])
    assert "complex64" in matrix["fft.fft"]["cpu"] and "float32" in matrix["fft.fft"]["cpu"]
    assert "float64" in matrix["fft.rfft"]["cpu"] and "complex64" not in matrix["fft.rfft"]["cpu"]
    assert "float16" not in matrix["fft.fft"]["cpu"]


def _opencl() -> None:
    """Skip, with the reason, only where ferro-opencl is not installed or reports itself unavailable."""
    if "opencl" not in ferro.backends.installed():
        pytest.skip("ferro-opencl is not installed")
    avail = ferro.backends.get("opencl").availability()
    if not avail:
        pytest.skip(f"OpenCL is not available: {avail.reason}")


def test_opencl_says_fft_is_unsupported_with_a_reason() -> None:
    _opencl()
    x = ferro.ones(8, device="opencl")
    assert not x.device.backend.supports("fft.rfft", ferro.float32)
    with pytest.raises(UnsupportedOperationError, match=r"op 'fft.rfft' .*needs 'fft_r2c'.*Installed backends that "
                                                        r"have it: .*cpu"):
        ffft.rfft(x)
    with pytest.raises(UnsupportedOperationError, match=r"op 'fft.fft' .*complex64"):
        ffft.fft(x)
    np.testing.assert_array_equal(ffft.fftshift(ferro.arange(4.0, device="opencl")).numpy(), [2.0, 3.0, 0.0, 1.0])


@pytest.mark.parametrize("prim, args, dtype", [
    ("fft_c2c", ("backward", True), ferro.complex64), ("fft_r2c", ("backward",), ferro.float32),
    ("fft_c2r", ("backward", 6), ferro.complex64)])
@pytest.mark.parametrize("dim", [3, -2])
def test_primitives_refuse_a_dim_out_of_range_naming_it(prim: str, args: tuple[Any, ...], dtype: Any,
                                                        dim: int) -> None:
    """Called alone, a primitive names itself and the dimension (not a tuple's or NumPy's IndexError), as the
    public functions do where PyTorch raises IndexError."""
    x = ferro.ones(4, dtype=dtype)
    with pytest.raises(IndexError, match=rf"^{prim}: dimension out of range .* but got {dim}"):
        REGISTRY[prim].fn(x, (dim,), *args)
    with pytest.raises(IndexError):
        torch.fft.fft(torch.ones(4), dim=dim)
    with pytest.raises(IndexError, match="dimension out of range"):
        ffft.fft(ferro.ones(4), dim=dim)
