"""ferro-cpu's fused gelu kernels (ferro_cpu/_erf.py) against torch and a float64 reference, counting that
they run."""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import ferro
import ferro.nn.functional as F
from ferro.autograd import gradcheck, gradgradcheck
from ferro_cpu._erf import BLOCK

from conftest import count_calls

torch = pytest.importorskip("torch")
TF = torch.nn.functional

RNG = np.random.default_rng(0)
NAMES = ("gelu", "gelu_backward")
APPROXIMATE = ("none", "tanh")
TOL = {"float32": {"rtol": 2e-6, "atol": 2e-6}, "float64": {"rtol": 1e-13, "atol": 1e-14},
       "float16": {"rtol": 1e-3, "atol": 1e-3}}
#: Gradients: where tanh saturates (x < -4), 1 - tanh**2 is a difference of numbers within an ulp of 1, so one
#: ulp of tanh (NumPy's and torch's differ by that) moves the gradient by ~x ulps of 1.
GRAD_TOL = {**TOL, "float32": {"rtol": 2e-6, "atol": 2e-5}, "float64": {"rtol": 1e-13, "atol": 1e-13}}


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, int]]:
    yield count_calls(monkeypatch, ferro.tensor([0.0])._device, NAMES)


def _fwd_bwd(lib: Any, x: np.ndarray, g: np.ndarray, approximate: str, prepare: Any = None) -> tuple[Any, Any]:
    """(gelu(x), d/dx of <gelu(x), g>) in lib (ferro or torch), as NumPy arrays."""
    leaf = lib.tensor(x, requires_grad=True)
    t = prepare(leaf) if prepare else leaf
    fn = F.gelu if lib is ferro else TF.gelu
    y = fn(t, approximate=approximate)
    y.backward(lib.tensor(g))
    return y.detach().numpy(), leaf.grad.numpy()


@pytest.mark.parametrize("approximate", APPROXIMATE)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", [(), (0, 3), (7,), (16, 33), (3, BLOCK // 2 + 5)],
                         ids=["0d", "empty", "vector", "matrix", "blocks"])
def test_matches_torch_and_runs_the_kernels(calls: dict[str, int], shape: tuple[int, ...], dtype: str,
                                           approximate: str) -> None:
    x = (RNG.standard_normal(shape) * 3).astype(dtype)
    g = RNG.standard_normal(shape).astype(dtype)
    (y, dx), (ty, tdx) = _fwd_bwd(ferro, x, g, approximate), _fwd_bwd(torch, x, g, approximate)
    assert y.dtype == dx.dtype == np.dtype(dtype) and y.shape == dx.shape == shape
    np.testing.assert_allclose(y, ty, **TOL[dtype])
    np.testing.assert_allclose(dx, tdx, **GRAD_TOL[dtype])
    assert calls == {"gelu": 1, "gelu_backward": 1}


@pytest.mark.parametrize("approximate", APPROXIMATE)
def test_strided_input(calls: dict[str, int], approximate: str) -> None:
    x, g = RNG.standard_normal((5, 6, 4)).astype("float32"), RNG.standard_normal((4, 6, 5)).astype("float32")
    got = _fwd_bwd(ferro, x, g, approximate, lambda t: t.permute(2, 1, 0))
    ref = _fwd_bwd(torch, x, g, approximate, lambda t: t.permute(2, 1, 0))
    for a, b, tol in zip(got, ref, (TOL, GRAD_TOL)):
        np.testing.assert_allclose(a, b, **tol["float32"])
    assert calls == {"gelu": 1, "gelu_backward": 1}


@pytest.mark.parametrize("approximate", APPROXIMATE)
def test_float16_computes_in_float32(calls: dict[str, int], approximate: str) -> None:
    x, g = (RNG.standard_normal((8, 9)) * 3).astype("float16"), RNG.standard_normal((8, 9)).astype("float16")
    (y, dx), (ty, tdx) = _fwd_bwd(ferro, x, g, approximate), _fwd_bwd(torch, x, g, approximate)
    assert y.dtype == dx.dtype == np.float16
    np.testing.assert_allclose(y.astype(float), ty.astype(float), **TOL["float16"])
    np.testing.assert_allclose(dx.astype(float), tdx.astype(float), **TOL["float16"])
    assert calls == {"gelu": 1, "gelu_backward": 1}


def _float32_grid() -> np.ndarray:
    """Every 613th float32 from the smallest subnormal to 12, both signs (about 3.5 million values)."""
    top = int(np.float32(12).view(np.uint32))
    pos = np.arange(1, top, 613, dtype=np.uint32).view(np.float32)
    return np.concatenate([pos, -pos])


def test_float32_erf_over_the_float32_range(calls: dict[str, int]) -> None:
    """The float32 kernel's Phi(x) = gelu(x) / x within 4 float32 ulps of 1 of the exact one, for every float32
    magnitude (subnormal, tiny, around 1, where erf saturates): the approximation's error is float32's."""
    x = _float32_grid()
    x = x[np.abs(x) >= np.finfo(np.float32).tiny]  # gelu of a subnormal x is x / 2, rounded: checked below
    with ferro.no_grad():
        y = F.gelu(ferro.tensor(x)).numpy().astype(np.float64)
    xd = x.astype(np.float64)
    phi = 0.5 * (1 + _erf(xd / math.sqrt(2)))
    exact = xd * phi
    err = np.abs(y - exact) / np.abs(xd)  # the error of Phi, as an absolute error
    assert err.max() <= 4 * np.finfo(np.float32).eps, (err.max(), x[np.argmax(err)])
    positive = xd > 0  # where Phi >= 0.5 the error is relative too: gelu within 8 ulps of itself
    assert (np.abs(y - exact)[positive] / exact[positive]).max() <= 8 * np.finfo(np.float32).eps
    sub = np.array([1e-45, -1e-45, 3e-39, -3e-39, 1e-38], np.float32)
    with ferro.no_grad():
        np.testing.assert_array_equal(F.gelu(ferro.tensor(sub)).numpy(), sub / np.float32(2))
    assert calls["gelu"] == 2


def _erf(x: np.ndarray) -> np.ndarray:
    """The exact erf in float64 (torch's, which is correctly rounded in float64 to well below float32's ulp)."""
    return torch.erf(torch.from_numpy(x)).numpy()


@pytest.mark.parametrize("approximate", APPROXIMATE)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_special_values(calls: dict[str, int], dtype: str, approximate: str) -> None:
    """NaN stays NaN, -inf gives NaN (-inf * 0, as torch and the decomposition), +inf gives +inf (the
    decomposition's; torch's erf form gives NaN there), -0.0 and large negatives give -0.0."""
    x = np.array([np.nan, -np.inf, np.inf, -0.0, 0.0, -30.0, 30.0, -1e30, 1e30], dtype)
    with ferro.no_grad():
        y = F.gelu(ferro.tensor(x), approximate=approximate).numpy()
    expected = np.array([np.nan, np.nan, np.inf, -0.0, 0.0, -0.0, 30.0, -0.0, 1e30], dtype)
    np.testing.assert_array_equal(y, expected)
    assert np.signbit(y[3]) and calls["gelu"] == 1


@pytest.mark.parametrize("approximate", APPROXIMATE)
def test_first_and_second_derivatives(calls: dict[str, int], approximate: str) -> None:
    """gradcheck on the kernels at float64; the double backward goes through the decomposition."""
    x = ferro.tensor(RNG.standard_normal((4, 5)) * 2, requires_grad=True)
    assert gradcheck(lambda t: F.gelu(t, approximate=approximate), (x,))
    assert calls["gelu"] >= 1 and calls["gelu_backward"] >= 1
    assert gradgradcheck(lambda t: F.gelu(t, approximate=approximate), (x,))


def test_nn_gelu_in_a_model_runs_the_kernels(calls: dict[str, int]) -> None:
    x = RNG.standard_normal((6, 5)).astype("float32")
    ours, theirs = ferro.nn.Sequential(ferro.nn.Linear(5, 8), ferro.nn.GELU()), torch.nn.Sequential(
        torch.nn.Linear(5, 8), torch.nn.GELU())
    ours.load_state_dict({k: ferro.tensor(v.detach().numpy()) for k, v in theirs.state_dict().items()})
    fx, tx = ferro.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    (ours(fx) ** 2).sum().backward()
    (theirs(tx) ** 2).sum().backward()
    np.testing.assert_allclose(fx.grad.numpy(), tx.grad.numpy(), **TOL["float32"])
    np.testing.assert_allclose(ours[0].weight.grad.numpy(), theirs[0].weight.grad.numpy(), rtol=1e-5, atol=1e-5)
    assert calls == {"gelu": 1, "gelu_backward": 1}


def test_bad_approximate_raises_and_records_nothing(calls: dict[str, int]) -> None:
    x = ferro.tensor(RNG.standard_normal(4), requires_grad=True)
    with pytest.raises(ValueError, match="gelu: approximate must be 'none' or 'tanh', got 'tan'"):
        F.gelu(x, approximate="tan")
    assert x.grad is None and x.grad_fn is None and x._version == 0


def test_bfloat16_as_torch(calls: dict[str, int]) -> None:
    """bfloat16 runs the kernels where the op hands them bfloat16 (in float32, rounded once), the decomposition
    otherwise; torch's values either way."""
    x = RNG.standard_normal(6)
    got = F.gelu(ferro.tensor(x, dtype=ferro.bfloat16)).float().numpy()
    ref = TF.gelu(torch.tensor(x, dtype=torch.bfloat16)).float().numpy()
    np.testing.assert_allclose(got, ref, rtol=1e-2, atol=1e-2)
    takes = ferro.bfloat16 in ferro.tensor([0.0])._device._ops["gelu"][1]
    assert calls == {"gelu": int(takes), "gelu_backward": 0}


def test_compiled_step_replays_the_kernels(calls: dict[str, int]) -> None:
    """ferro.compile records both kernels (as pure calls) and its replay gives eager's gradients."""
    x = ferro.tensor(RNG.standard_normal((8, 16)).astype("float32"), requires_grad=True)
    w = ferro.tensor(RNG.standard_normal((16, 16)).astype("float32"), requires_grad=True)

    def step(x: Any, w: Any) -> Any:
        y = F.gelu(x @ w).sum()
        y.backward()
        return y
    compiled = ferro.compile(step)
    for _ in range(3):
        x.grad = w.grad = None
        compiled(x, w)
    got = x.grad.numpy().copy(), w.grad.numpy().copy()
    before = dict(calls)
    x.grad = w.grad = None
    step(x, w)
    assert calls == {"gelu": before["gelu"] + 1, "gelu_backward": before["gelu_backward"] + 1}
    np.testing.assert_array_equal(got[0], x.grad.numpy())
    np.testing.assert_array_equal(got[1], w.grad.numpy())
    assert before["gelu"] >= 3 and before["gelu_backward"] >= 3
