"""Adaptive max pooling with ``return_indices`` (and the max pooling it shares its window maximum with)
against torch: values, indices (dtype too) and input gradients, with ties, which the first maximum wins."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import ferro
import ferro.nn.functional as F
from ferro import nn

torch = pytest.importorskip("torch")
TF = torch.nn.functional

rng = np.random.default_rng(0)


def tied(*shape: int) -> np.ndarray:
    """Random values rounded to one decimal, so that windows hold ties."""
    return np.round(rng.standard_normal(shape), 1)


#: (spatial dims, input shape, output_size): uneven and overlapping windows, None entries, outputs larger
#: than the input, unbatched inputs, 1-wide outputs.
CASES = [
    (2, (2, 3, 7, 9), (3, 4)),
    (2, (2, 3, 8, 8), 4),
    (2, (3, 5, 6), 2),
    (2, (1, 2, 5, 6), (None, 4)),
    (2, (2, 1, 3, 4), (5, 7)),
    (2, (1, 2, 5, 5), (1, 1)),
    (1, (2, 3, 11), 4),
    (1, (3, 10), 3),
    (1, (2, 2, 4), (6,)),
    (1, (1, 2, 7), 1),
]


def _both(n: int, x: np.ndarray, output_size: Any, functional: bool) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    """(input, values, indices) of ferro and of torch, by the module or the function."""
    fx, tx = ferro.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    if functional:
        fo, fi = getattr(F, f"adaptive_max_pool{n}d")(fx, output_size, return_indices=True)
        to, ti = getattr(TF, f"adaptive_max_pool{n}d")(tx, output_size, return_indices=True)
    else:
        fo, fi = getattr(nn, f"AdaptiveMaxPool{n}d")(output_size, return_indices=True)(fx)
        to, ti = getattr(torch.nn, f"AdaptiveMaxPool{n}d")(output_size, return_indices=True)(tx)
    return (fx, fo, fi), (tx, to, ti)


@pytest.mark.parametrize("functional", [False, True], ids=["module", "functional"])
@pytest.mark.parametrize(("n", "shape", "output_size"), CASES)
def test_adaptive_max_pool_indices_like_torch(n: int, shape: tuple[int, ...], output_size: Any,
                                              functional: bool) -> None:
    x = tied(*shape)
    (fx, fo, fi), (tx, to, ti) = _both(n, x, output_size, functional)
    assert tuple(fo.shape) == tuple(to.shape) and tuple(fi.shape) == tuple(ti.shape)
    np.testing.assert_array_equal(fo.detach().numpy(), to.detach().numpy())
    np.testing.assert_array_equal(fi.numpy(), ti.numpy())
    assert fi.dtype is ferro.int64 and not fi.requires_grad
    upstream = rng.standard_normal(tuple(to.shape))
    (fo * ferro.tensor(upstream)).sum().backward()
    (to * torch.tensor(upstream)).sum().backward()
    np.testing.assert_allclose(fx.grad.numpy(), tx.grad.numpy(), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize(("n", "shape", "output_size"), CASES)
def test_indices_gather_the_values(n: int, shape: tuple[int, ...], output_size: Any) -> None:
    x = tied(*shape)
    out, idx = getattr(F, f"adaptive_max_pool{n}d")(ferro.tensor(x), output_size, True)
    planes = ferro.tensor(x).flatten(-n)
    picked = planes.gather(-1, idx.flatten(-n)).reshape(*out.shape)
    np.testing.assert_array_equal(picked.numpy(), out.numpy())


@pytest.mark.parametrize(("n", "shape", "output_size"), CASES)
def test_without_indices_values_and_gradients(n: int, shape: tuple[int, ...], output_size: Any) -> None:
    x = rng.standard_normal(shape)  # no ties: the registry op shares a tie's gradient
    fx, tx = ferro.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    fo = getattr(nn, f"AdaptiveMaxPool{n}d")(output_size)(fx)
    to = getattr(torch.nn, f"AdaptiveMaxPool{n}d")(output_size)(tx)
    assert isinstance(fo, ferro.Tensor)
    np.testing.assert_array_equal(fo.detach().numpy(), to.detach().numpy())
    fo.sum().backward()
    to.sum().backward()
    np.testing.assert_array_equal(fx.grad.numpy(), tx.grad.numpy())


@pytest.mark.parametrize("output_size", [0, (0, 3)])
def test_empty_output(output_size: Any) -> None:
    x = rng.standard_normal((2, 3, 4, 5))
    for return_indices in (False, True):
        got = F.adaptive_max_pool2d(ferro.tensor(x), output_size, return_indices)
        want = TF.adaptive_max_pool2d(torch.tensor(x), output_size, return_indices)
        got, want = (got, want) if return_indices else ((got,), (want,))
        assert [tuple(t.shape) for t in got] == [tuple(t.shape) for t in want]


def test_wrong_inputs_are_refused() -> None:
    with pytest.raises(ValueError, match="expected 3D or 4D input"):
        F.adaptive_max_pool2d(ferro.ones(4, 4), 2, True)
    with pytest.raises(ValueError, match="expected 3D or 4D input"):
        nn.AdaptiveMaxPool2d(2)(ferro.ones(1, 1, 4, 4, 4))
    with pytest.raises(ValueError, match="expected 2D or 3D input"):
        F.adaptive_max_pool1d(ferro.ones(4), 2)
    with pytest.raises(ValueError, match="must not be negative"):
        F.adaptive_max_pool1d(ferro.ones(1, 4), -1, True)
    with pytest.raises(ferro.errors.ShapeError, match="output_size"):
        F.adaptive_max_pool1d(ferro.ones(1, 4), (2, 3))


def test_repr_like_torch() -> None:
    assert repr(nn.AdaptiveMaxPool2d((2, 3), True)) == repr(torch.nn.AdaptiveMaxPool2d((2, 3), True))
    assert repr(nn.AdaptiveMaxPool1d(3)) == repr(torch.nn.AdaptiveMaxPool1d(3))


@pytest.mark.parametrize("return_indices", [False, True])
def test_max_pool_ceil_mode_gradient_goes_to_the_first_maximum(return_indices: bool) -> None:
    # The shared window maximum gathers at the first maximum: a tie's whole gradient goes there, as in torch.
    x = np.zeros((1, 2, 5, 5))
    x[0, 1, 1:3, 1:3] = 1.0
    fx, tx = ferro.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    fo = nn.MaxPool2d(2, ceil_mode=True, return_indices=return_indices)(fx)
    to = torch.nn.MaxPool2d(2, ceil_mode=True, return_indices=return_indices)(tx)
    if return_indices:
        np.testing.assert_array_equal(fo[1].numpy(), to[1].numpy())
        fo, to = fo[0], to[0]
    fo.sum().backward()
    to.sum().backward()
    np.testing.assert_array_equal(fx.grad.numpy(), tx.grad.numpy())
