"""Convolution, pooling and interpolation against torch.nn.functional: values and gradients."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import ferro
import ferro.nn.functional as F

torch = pytest.importorskip("torch")
TF = torch.nn.functional
rng = np.random.default_rng(0)
X2, X1, X3 = rng.standard_normal((2, 4, 7, 6)), rng.standard_normal((2, 4, 9)), rng.standard_normal((1, 2, 4, 5, 4))
XT = np.maximum(np.round(X2), 0)
A: dict[str, np.ndarray] = {
    "w2": rng.standard_normal((6, 2, 3, 2)), "b2": rng.standard_normal(6), "w1": rng.standard_normal((6, 4, 3)),
    "ws": rng.standard_normal((3, 4, 4, 3)), "w3": rng.standard_normal((3, 2, 2, 3, 2)),
    "wt": rng.standard_normal((4, 3, 3, 2)), "wtg": rng.standard_normal((4, 1, 2, 2)),
    "wt1": rng.standard_normal((4, 2, 3)),
}

CASES: dict[str, Callable[[Any, Callable[[np.ndarray], Any]], Any]] = {
    "conv2d stride pad dilation groups": lambda f, t: f.conv2d(t(X2), t(A["w2"]), t(A["b2"]), stride=(2, 1),
                                                               padding=1, dilation=(1, 2), groups=2),
    "conv2d same": lambda f, t: f.conv2d(t(X2), t(A["ws"]), padding="same"),
    "conv1d": lambda f, t: f.conv1d(t(X1), t(A["w1"]), stride=2, padding=2),
    "conv1d unbatched": lambda f, t: f.conv1d(t(X1[0]), t(A["w1"]), padding="valid"),
    "conv3d": lambda f, t: f.conv3d(t(X3), t(A["w3"]), padding=(1, 0, 1)),
    "conv_transpose2d": lambda f, t: f.conv_transpose2d(t(X2), t(A["wt"]), t(A["b2"][:3]), stride=2, padding=1,
                                                       output_padding=1),
    "conv_transpose2d groups dilation": lambda f, t: f.conv_transpose2d(t(X2), t(A["wtg"]), stride=(1, 2),
                                                                       groups=2, dilation=2),
    "conv_transpose1d": lambda f, t: f.conv_transpose1d(t(X1), t(A["wt1"]), stride=3),
    "max_pool2d": lambda f, t: f.max_pool2d(t(X2), (3, 2), stride=(2, 1), padding=1),
    "max_pool1d": lambda f, t: f.max_pool1d(t(X1), 2),
    "avg_pool2d": lambda f, t: f.avg_pool2d(t(X2), 2, padding=1),
    "avg_pool1d": lambda f, t: f.avg_pool1d(t(X1), 3, stride=2),
    "adaptive_avg_pool2d": lambda f, t: f.adaptive_avg_pool2d(t(X2), (3, 4)),
    "adaptive_max_pool2d": lambda f, t: f.adaptive_max_pool2d(t(X2), (2, 5)),
    # ties (ReLU's zeros, equal integers): the whole gradient goes to the first maximum of a window, as in torch
    "max_pool2d ties": lambda f, t: f.max_pool2d(t(XT), 2),
    "max_pool2d ties overlapping": lambda f, t: f.max_pool2d(t(XT), 3, stride=1, padding=1),
    "max_pool1d ties": lambda f, t: f.max_pool1d(t(XT[:, :, 0]), 2),
    "adaptive_max_pool2d ties": lambda f, t: f.adaptive_max_pool2d(t(XT), (3, 4)),
    "interpolate nearest": lambda f, t: f.interpolate(t(X2), size=(10, 4), mode="nearest"),
    "interpolate bilinear": lambda f, t: f.interpolate(t(X2), scale_factor=2, mode="bilinear", align_corners=False),
    "interpolate bilinear corners": lambda f, t: f.interpolate(t(X2), size=(5, 9), mode="bilinear",
                                                               align_corners=True),
}


@pytest.mark.parametrize("name", list(CASES))
def test_matches_torch(name: str) -> None:
    ours: list[Any] = []
    theirs: list[Any] = []

    def maker(lib: Any, store: list[Any]) -> Callable[[np.ndarray], Any]:
        def t(a: np.ndarray) -> Any:
            v = lib.tensor(a, requires_grad=True)
            store.append(v)
            return v
        return t

    got = CASES[name](F, maker(ferro, ours))
    ref = CASES[name](TF, maker(torch, theirs))
    assert tuple(got.shape) == tuple(ref.shape)
    np.testing.assert_allclose(got.detach().numpy(), ref.detach().numpy(), rtol=1e-7, atol=1e-9)
    g = rng.standard_normal(tuple(ref.shape))
    got.backward(ferro.tensor(g))
    ref.backward(torch.tensor(g))
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-7, atol=1e-9)


def test_errors_name_the_shapes() -> None:
    with pytest.raises(ferro.errors.ShapeError, match=r"4 channels .* weight \[6, 3, 3, 3\]"):
        F.conv2d(ferro.ones(1, 4, 5, 5), ferro.ones(6, 3, 3, 3))
    with pytest.raises(ferro.errors.ShapeError, match="larger than the padded input"):
        F.conv2d(ferro.ones(1, 1, 2, 2), ferro.ones(1, 1, 3, 3))
    with pytest.raises(ValueError, match="strided"):
        F.conv2d(ferro.ones(1, 1, 5, 5), ferro.ones(1, 1, 3, 3), stride=2, padding="same")
