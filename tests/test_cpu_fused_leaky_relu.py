"""ferro-cpu's fused leaky_relu kernels (ferro_cpu/_rectifiers.py) against torch.

The kernels' calls on the CPU device are counted, so a silent fall back to the decomposition fails the test;
values and gradients are compared with torch's, ties at 0 and NaN included.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

import ferro
import ferro.nn.functional as F

from conftest import count_calls

torch = pytest.importorskip("torch")

NAMES = ("leaky_relu", "leaky_relu_backward")


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, int]]:
    """Counts of the fused kernels' calls on the cpu device during the test."""
    yield count_calls(monkeypatch, ferro.tensor([0.0])._device, NAMES)


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
@pytest.mark.parametrize("slope", [0.01, 0.2, 1.0, 1.5, -0.5, 0.0])
def test_values_and_gradients_match_torch(calls: dict[str, int], slope: float, dtype: str) -> None:
    _compare(calls, slope, dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_a_slope_whose_complement_rounds_takes_the_bitwise_select(calls: dict[str, int], dtype: str) -> None:
    _compare(calls, 1e20, dtype)  # 1e20 + (1 - 1e20) is 0, not 1: the gradient's factor would not be exact


def _compare(calls: dict[str, int], slope: float, dtype: str) -> None:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((6, 5, 7)).astype(dtype)
    x.flat[:4] = [0.0, -0.0, np.nan, -np.inf]
    g = rng.standard_normal(x.shape).astype(dtype)
    ours, theirs = ferro.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    y, ty = F.leaky_relu(ours, slope), torch.nn.functional.leaky_relu(theirs, slope)
    y.backward(ferro.tensor(g))
    ty.backward(torch.tensor(g))
    assert calls == {"leaky_relu": 1, "leaky_relu_backward": 1}
    for a, e in ((y, ty), (ours.grad, theirs.grad)):
        got, want = a.detach().numpy(), e.detach().numpy()
        assert got.dtype == np.dtype(dtype)
        np.testing.assert_array_equal(got, want)


def test_module_in_place(calls: dict[str, int]) -> None:
    """nn.LeakyReLU(inplace=True) after another op: the fused kernels, the result written into the input."""
    x = np.linspace(-2, 2, 24, dtype=np.float32).reshape(2, 3, 4)
    ours, theirs = ferro.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    y = ferro.nn.LeakyReLU(0.2, inplace=True)(ours * 3)
    ty = torch.nn.LeakyReLU(0.2, inplace=True)(theirs * 3)
    (y * y).sum().backward()
    (ty * ty).sum().backward()
    assert calls == {"leaky_relu": 1, "leaky_relu_backward": 1}
    np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), rtol=1e-6)
    np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-6)


def test_zero_dim(calls: dict[str, int]) -> None:
    for v in (-1.5, 2.0):
        x = ferro.tensor(v, dtype=ferro.float64, requires_grad=True)
        F.leaky_relu(x, 0.1).backward()
        assert x.grad.item() == (1.0 if v > 0 else 0.1)
    assert calls == {"leaky_relu": 2, "leaky_relu_backward": 2}
