"""ferro-cpu's sigmoid and fused silu kernels (ferro_cpu/_sigmoid.py) against torch, counting that they run."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

import ferro
import ferro.nn.functional as F

from conftest import count_calls, functions_entered

torch = pytest.importorskip("torch")
TF = torch.nn.functional

RNG = np.random.default_rng(0)
NAMES = ("sigmoid", "silu", "silu_backward")
EXTREMES = [-np.inf, -1000.0, -100.0, -88.0, -20.0, -1e-30, -0.0, 0.0, 1e-30, 20.0, 88.0, 100.0, np.inf, np.nan]


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, int]]:
    yield count_calls(monkeypatch, ferro.tensor([0.0])._device, NAMES)


def _inputs(n: int, dtype: str) -> np.ndarray:
    """n values: normal ones and every extreme (±inf, NaN, -0.0, past exp's overflow both ways) up front."""
    x = (RNG.standard_normal(n) * 8).astype(dtype)
    x[:len(EXTREMES)] = EXTREMES
    return x


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("n", [50, 300_000])  # one pass at once; blocks of a large array
@pytest.mark.parametrize("fn", ["sigmoid", "silu"])
def test_values_and_gradients_as_torch(calls: dict[str, int], dtype: str, n: int, fn: str) -> None:
    x, g = _inputs(n, dtype), RNG.standard_normal(n).astype(dtype)
    fx, tx = ferro.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    f_op, t_op = (ferro.sigmoid, torch.sigmoid) if fn == "sigmoid" else (F.silu, TF.silu)
    got, ref = f_op(fx), t_op(tx)
    tol = 1e-6 if dtype == "float32" else 1e-14
    np.testing.assert_allclose(got.detach().numpy(), ref.detach().numpy(), rtol=tol, atol=0, equal_nan=True)
    a, b = got.detach().numpy(), ref.detach().numpy()
    np.testing.assert_array_equal(np.signbit(a[~np.isnan(b)]), np.signbit(b[~np.isnan(b)]))  # -0.0 as torch's
    got.backward(ferro.tensor(g))
    ref.backward(torch.tensor(g))
    # (1 - s) near s = 1 carries an ulp of 1 (exp's last bit differs between NumPy and torch): an absolute bound
    np.testing.assert_allclose(fx.grad.numpy(), tx.grad.numpy(), rtol=tol * 10, atol=tol, equal_nan=True)
    assert calls[fn] == 1
    if fn == "silu":
        assert calls["silu_backward"] == 1


def test_silu_gradient_of_a_summed_output(calls: dict[str, int]) -> None:
    # the gradient reaches the kernel as a broadcast view of one value
    x = RNG.standard_normal((64, 64)).astype(np.float32) * 4
    fx, tx = ferro.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    F.silu(fx).sum().backward()
    TF.silu(tx).sum().backward()
    np.testing.assert_allclose(fx.grad.numpy(), tx.grad.numpy(), rtol=1e-6, atol=1e-7)
    assert calls["silu"] == calls["silu_backward"] == 1


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_16_bit_inputs_compute_in_float32_as_torch(calls: dict[str, int], dtype: str) -> None:
    x = _inputs(2000, "float32")
    fx = ferro.tensor(x).to(getattr(ferro, dtype)).requires_grad_()
    tx = torch.tensor(x).to(getattr(torch, dtype)).requires_grad_()
    for f_op, t_op in ((ferro.sigmoid, torch.sigmoid), (F.silu, TF.silu)):
        got, ref = f_op(fx), t_op(tx)
        assert got.dtype is getattr(ferro, dtype)
        np.testing.assert_array_equal(got.detach().float().numpy(), ref.detach().float().numpy())
        got.backward(ferro.ones_like(got))
        ref.backward(torch.ones_like(ref))
    tol = 2e-3 if dtype == "float16" else 1e-2
    np.testing.assert_allclose(fx.grad.float().numpy(), tx.grad.float().numpy(), rtol=tol, atol=tol,
                               equal_nan=True)
    assert calls["sigmoid"] == calls["silu"] == calls["silu_backward"] == 1


def test_second_derivative_of_silu_through_the_decomposition(calls: dict[str, int]) -> None:
    x = RNG.standard_normal(20)
    fx, tx = ferro.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    (gx,) = ferro.autograd.grad(F.silu(fx).sum(), fx, create_graph=True)
    (ggx,) = ferro.autograd.grad(gx.sum(), fx)
    (tg,) = torch.autograd.grad(TF.silu(tx).sum(), tx, create_graph=True)
    (tgg,) = torch.autograd.grad(tg.sum(), tx)
    np.testing.assert_allclose(ggx.numpy(), tgg.numpy(), rtol=1e-10, atol=1e-12)
    assert calls["silu"] == 1 and calls["silu_backward"] == 0


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", [(64, 64), (50,), (3, 1, 7)])
def test_small_arrays_take_the_one_frame_path_as_torch(calls: dict[str, int], dtype: str,
                                                       shape: tuple[int, ...]) -> None:
    # under a megabyte, float32 / float64: 1 / (2 + expm1(-x)) in one frame, every extreme as PyTorch's
    x = (RNG.standard_normal(shape) * 8).astype(dtype)
    x.reshape(-1)[:min(x.size, len(EXTREMES))] = EXTREMES[:x.size]
    fx = ferro.tensor(x)
    got: list[ferro.Tensor] = []
    path = functions_entered(lambda: got.append(ferro.sigmoid(fx)), "ferro_cpu/_sigmoid.py")
    ref = torch.sigmoid(torch.tensor(x)).numpy()
    tol = 1e-6 if dtype == "float32" else 1e-14
    np.testing.assert_allclose(got[0].numpy(), ref, rtol=tol, atol=0, equal_nan=True)
    assert path == ["sigmoid_kernel", "small"] and calls["sigmoid"] == 1
