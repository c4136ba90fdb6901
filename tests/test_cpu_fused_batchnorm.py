"""ferro-cpu's fused batch_norm kernels (ferro_cpu/_batchnorm.py) against torch and the decomposition.

Each test counts the calls of the CPU device's table entries, so a silent fall back to the decomposition fails
it (and a fused call where the decomposition should run fails the fall-back tests); values, gradients and the
running statistics are compared with torch's, second derivatives (``create_graph=True``) with the
decomposition's and by ``gradgradcheck``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import ferro
import ferro.nn.functional as F
from ferro._core.records import REGISTRY

from conftest import count_calls

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(0)
TOL = {"float32": {"rtol": 1e-4, "atol": 1e-4}, "float64": {"rtol": 1e-10, "atol": 1e-11}}
NAMES = ("batch_norm_forward", "batch_norm_backward")


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, int]]:
    """Counts of the fused kernels' calls on the cpu device during the test."""
    yield count_calls(monkeypatch, ferro.tensor([0.0])._device, NAMES)


def _run(lib: Any, arrays: dict[str, np.ndarray], training: bool, affine: bool, needs_x: bool = True) -> list[Any]:
    """batch_norm on ``lib`` (ferro or torch): output, running statistics and gradients, as NumPy arrays."""
    x = lib.tensor(arrays["x"], requires_grad=needs_x)
    w, b = ((lib.tensor(arrays[k], requires_grad=True) for k in ("w", "b")) if affine else (None, None))
    rm, rv = lib.tensor(arrays["rm"]), lib.tensor(arrays["rv"])
    y = lib.nn.functional.batch_norm(x, rm, rv, w, b, training, 0.3, 1e-3)
    y.backward(lib.tensor(arrays["g"]))
    grads = [t.grad for t in ((x, w, b) if affine else (x,)) if t.requires_grad]
    return [t.detach().numpy() for t in (y, rm, rv, *grads)]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("affine", [True, False])
@pytest.mark.parametrize("shape", [(16, 8, 6, 5), (10, 7), (4, 3, 9), (2, 3, 2, 3, 4), (1, 3, 6), (2, 3, 40, 30)])
def test_values_gradients_and_running_stats_match_torch(calls: dict[str, int], shape: tuple[int, ...], affine: bool,
                                                        training: bool, dtype: str) -> None:
    c = shape[1]
    arrays = {"x": RNG.standard_normal(shape) * 3 + 1, "g": RNG.standard_normal(shape), "w": RNG.standard_normal(c),
              "b": RNG.standard_normal(c), "rm": RNG.standard_normal(c), "rv": RNG.random(c) + 0.5}
    arrays = {k: v.astype(dtype) for k, v in arrays.items()}
    got, want = _run(ferro, arrays, training, affine), _run(torch, arrays, training, affine)
    assert calls == {"batch_norm_forward": 1, "batch_norm_backward": 1}
    for a, e in zip(got, want, strict=True):
        assert a.dtype == np.dtype(dtype) and a.shape == e.shape
        np.testing.assert_allclose(a, e, **TOL[dtype])


def test_module_training_and_eval(calls: dict[str, int]) -> None:
    """nn.BatchNorm2d in training (running statistics, cumulative momentum) then eval, as torch's module."""
    x = RNG.standard_normal((8, 4, 5, 5)).astype("float32")
    ours, theirs = ferro.nn.BatchNorm2d(4, momentum=None), torch.nn.BatchNorm2d(4, momentum=None)
    versions = []
    for step in range(3):
        versions.append(ours.running_mean._version)
        for m, lib in ((ours, ferro), (theirs, torch)):
            m.train(step < 2)
            m(lib.tensor(x + step)).sum().backward()
        for a, e in ((ours.running_mean, theirs.running_mean), (ours.running_var, theirs.running_var),
                     (ours.weight.grad, theirs.weight.grad), (ours.bias.grad, theirs.bias.grad)):
            np.testing.assert_allclose(a.numpy(), e.detach().numpy(), **TOL["float32"])
    assert calls == {"batch_norm_forward": 3, "batch_norm_backward": 3}
    # each update in place is counted (autograd's version checks see it), as the decomposition's mul_ / add_
    assert np.diff([*versions, ours.running_mean._version]).tolist() == [1, 1, 0]


@pytest.mark.parametrize("training", [True, False])
def test_create_graph_second_derivatives_exact(calls: dict[str, int], training: bool) -> None:
    """With create_graph=True the backward runs through the decomposition: the second derivatives are the
    decomposition's, and pass gradgradcheck."""
    x, w, b = RNG.standard_normal((4, 3, 2, 2)), RNG.standard_normal(3), RNG.standard_normal(3)
    rm, rv = RNG.standard_normal(3), RNG.random(3) + 0.5

    def run(fn: Any) -> list[np.ndarray]:
        leaves = [ferro.tensor(a, requires_grad=True) for a in (x, w, b)]
        y = fn(leaves[0], ferro.tensor(rm), ferro.tensor(rv), leaves[1], leaves[2], training, 0.1, 1e-5)
        before = calls["batch_norm_backward"]
        first = ferro.autograd.grad([(y * y * y).sum()], leaves, create_graph=True)
        assert calls["batch_norm_backward"] == before  # the recorded backward ran the decomposition
        total = sum(((g * g).sum() for g in first), ferro.tensor(0.0, dtype=ferro.float64))
        return [g.numpy() for g in ferro.autograd.grad([total], leaves)]

    fused = run(F.batch_norm)
    # (the second grad goes through y's node again, plainly: the fused backward)
    assert calls == {"batch_norm_forward": 1, "batch_norm_backward": 1}
    for got, want in zip(fused, run(REGISTRY["batch_norm"].decomposition), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)
    leaves = [ferro.tensor(a, requires_grad=True) for a in (x[:, :, :1], w, b)]
    assert ferro.autograd.gradgradcheck(
        lambda t, ww, bb: F.batch_norm(t, ferro.tensor(rm), ferro.tensor(rv), ww, bb, training), leaves)


def test_odd_cases_fall_back(calls: dict[str, int]) -> None:
    """float16, running statistics of another dtype, and bad shapes run the decomposition (and its errors)."""
    x = ferro.tensor(RNG.standard_normal((4, 3, 2)).astype("float32"))
    got = F.batch_norm(x.half(), None, None, training=True)
    want = torch.nn.functional.batch_norm(torch.tensor(x.numpy()), None, None, training=True)
    np.testing.assert_allclose(got.float().numpy(), want.numpy(), rtol=2e-2, atol=2e-2)
    F.batch_norm(x, ferro.zeros(3, dtype=ferro.float64), ferro.ones(3, dtype=ferro.float64), training=True)
    with pytest.raises(ferro.errors.ShapeError, match="running_mean"):
        F.batch_norm(x, ferro.zeros(4), ferro.ones(4), training=True)
    with pytest.raises(ValueError, match="more than 1 value per channel"):
        F.batch_norm(x[:1, :, :1], None, None, training=True)
    assert calls == {"batch_norm_forward": 0, "batch_norm_backward": 0}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", [(32, 64, 4, 4), (32, 32, 8, 8), (16, 16, 16, 16), (64, 16)])
def test_model_shapes_and_only_the_parameters_needing_grad(calls: dict[str, int], shape: tuple[int, ...],
                                                         dtype: str) -> None:
    """DCGAN's and the ResNet block's shapes (the sums over N and L as products with ones), and an input that
    needs no gradient (the first layer's): one backward kernel call gives the weight's and the bias's."""
    c = shape[1]
    arrays = {"x": RNG.standard_normal(shape) * 2 - 3, "g": RNG.standard_normal(shape), "w": RNG.standard_normal(c),
              "b": RNG.standard_normal(c), "rm": RNG.standard_normal(c), "rv": RNG.random(c) + 0.5}
    arrays = {k: v.astype(dtype) for k, v in arrays.items()}
    for training in (True, False):
        for needs_x in (True, False):
            got, want = (_run(lib, arrays, training, True, needs_x) for lib in (ferro, torch))
            for a, e in zip(got, want, strict=True):
                np.testing.assert_allclose(a, e, **TOL[dtype])
    assert calls == {"batch_norm_forward": 4, "batch_norm_backward": 4}


def test_retained_graph_runs_twice_and_partial_grads(calls: dict[str, int]) -> None:
    """backward twice through a retained graph gives the same gradients twice (accumulated), and
    ``autograd.grad`` of the weight alone runs the kernel once and leaves x's untouched."""
    x = ferro.tensor(RNG.standard_normal((6, 3, 4)).astype("float32"), requires_grad=True)
    m = ferro.nn.BatchNorm1d(3)
    y = m(x)
    g = ferro.tensor(RNG.standard_normal((6, 3, 4)).astype("float32"))
    y.backward(g, retain_graph=True)
    first = [t.grad.numpy().copy() for t in (x, m.weight, m.bias)]
    y.backward(g)
    for t, f in zip((x, m.weight, m.bias), first, strict=True):
        np.testing.assert_allclose(t.grad.numpy(), 2 * f, rtol=1e-6, atol=1e-6)
    (gw,) = ferro.autograd.grad([m(x)], [m.weight], [g])
    np.testing.assert_allclose(gw.numpy(), first[1], rtol=1e-5, atol=1e-5)
    assert calls == {"batch_norm_forward": 2, "batch_norm_backward": 3}


@pytest.mark.parametrize("shape", [(8, 6, 4, 4), (8, 6, 16, 16)])
def test_channels_last_input(calls: dict[str, int], shape: tuple[int, ...]) -> None:
    """An input whose memory is channels-last (a strided NCHW view): the short rows' products copy it once."""
    n, c, h, w = shape
    data = RNG.standard_normal((n, h, w, c)).astype("float32")
    g = RNG.standard_normal(shape).astype("float32")
    got = []
    for lib in (ferro, torch):
        x = lib.tensor(data).permute(0, 3, 1, 2).requires_grad_()
        m = lib.nn.BatchNorm2d(c)
        y = m(x)
        y.backward(lib.tensor(g))
        got.append([t.detach().numpy() for t in (y, x.grad, m.weight.grad, m.bias.grad, m.running_var)])
    for a, e in zip(*got, strict=True):
        np.testing.assert_allclose(a, e, **TOL["float32"])
    assert calls == {"batch_norm_forward": 1, "batch_norm_backward": 1}
