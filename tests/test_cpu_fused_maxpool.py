"""ferro-cpu's max_pool2d kernels (ferro_cpu/_maxpool.py): windows that tile the input, gathered into
window-major order, against torch (values and gradients, bitwise) and the decomposition (NaN, ties), counting
that the fused kernels ran."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

import ferro
import ferro.nn.functional as F
from ferro._core.records import REGISTRY

from conftest import count_calls

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(0)
NAMES = ("max_pool2d_forward", "max_pool2d_backward")


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, int]]:
    yield count_calls(monkeypatch, ferro.tensor([0.0])._device, NAMES)


CASES = {  # x shape, kernel, stride
    "digits CNN first": ((64, 16, 8, 8), 2, None),
    "digits CNN second": ((64, 32, 4, 4), 2, None),
    "3x3 tiles, rows left out": ((2, 3, 10, 11), 3, 3),
    "2x3 tiles": ((3, 2, 6, 9), (2, 3), None),
    "1x2 tiles": ((2, 2, 5, 8), (1, 2), None),
    "wide rows (strided planes)": ((2, 3, 6, 40), 2, None),
}


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
@pytest.mark.parametrize("ties", [False, True], ids=["random", "ties"])
@pytest.mark.parametrize("case", CASES)
def test_tiling_windows_match_torch_bitwise(calls: dict[str, int], case: str, ties: bool, dtype: str) -> None:
    shape, kernel, stride = CASES[case]
    x = RNG.standard_normal(shape)
    x = (np.maximum(np.round(x), 0) if ties else x).astype(dtype)  # ties: the first in window order takes it
    g = RNG.standard_normal(tuple(torch.nn.functional.max_pool2d(torch.tensor(x), kernel, stride).shape))
    got = []
    for lib in (ferro, torch):
        t = lib.tensor(x, requires_grad=True)
        y = lib.nn.functional.max_pool2d(t, kernel, stride)
        y.backward(lib.tensor(g.astype(dtype)))
        got.append((y.detach().numpy(), t.grad.numpy()))
    for a, e in zip(*got, strict=True):
        assert a.dtype == e.dtype
        np.testing.assert_array_equal(a, e)
    assert calls == {"max_pool2d_forward": 1, "max_pool2d_backward": 1}


def test_nan_and_a_transposed_input_as_the_decomposition(calls: dict[str, int]) -> None:
    """A NaN wins its window and takes the gradient (the first NaN); a non-contiguous input reads the same."""
    x = RNG.standard_normal((4, 3, 6, 6))
    x[0, 0, 1, 1] = x[0, 0, 1, 0] = x[1, 2, 4, 5] = np.nan
    x[2, 1, :2, :2] = np.inf
    x[3] = -np.inf
    for arr in (x, np.swapaxes(x, 2, 3)):
        leaves = [ferro.tensor(np.ascontiguousarray(arr), requires_grad=True) for _ in range(2)]
        src = leaves[0].transpose(2, 3).contiguous().transpose(2, 3) if arr is not x else leaves[0]
        got, want = F.max_pool2d(src, 3, 3), REGISTRY["max_pool2d"].decomposition(leaves[1], 3, 3)
        np.testing.assert_array_equal(got.detach().numpy(), want.detach().numpy())
        g = ferro.tensor(RNG.standard_normal(tuple(got.shape)))
        got.backward(g)
        want.backward(g)
        np.testing.assert_array_equal(leaves[0].grad.numpy(), leaves[1].grad.numpy())
    assert calls == {"max_pool2d_forward": 2, "max_pool2d_backward": 2}
