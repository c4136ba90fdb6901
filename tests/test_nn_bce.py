"""binary_cross_entropy against PyTorch: values and gradients, through its one-node path (a gradient of the
input only, float32/float64) and through the decomposition (the target's gradient)."""

from __future__ import annotations

import numpy as np
import pytest

import ferro

from conftest import count_calls

torch = pytest.importorskip("torch")

rng = np.random.default_rng(0)


def probs(*shape: int, dtype: str) -> np.ndarray:
    p = rng.uniform(0.02, 0.98, shape)
    p.flat[:3] = [0.0, 1.0, 1e-30]  # the edges: PyTorch clamps the logs at -100 and the gradient's divisor at 1e-12
    return p.astype(dtype)


def both(fn, *arrays: np.ndarray, grads: tuple[bool, ...]) -> list:
    """``fn`` over ferro and over torch tensors of ``arrays``; per library (output, its inputs)."""
    out = []
    for lib in (ferro, torch):
        ts = [lib.tensor(a, requires_grad=g) if a is not None else None for a, g in zip(arrays, grads)]
        out.append((fn(lib, *ts), ts))
    return out


def tol(dtype: str) -> dict:
    return {"rtol": 1e-5, "atol": 1e-6} if dtype == "float32" else {"rtol": 1e-12}


NAMES = ("binary_cross_entropy_forward", "binary_cross_entropy_backward")


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """Counts of the cpu device's fused binary_cross_entropy kernels' calls during the test."""
    return count_calls(monkeypatch, ferro.tensor([0.0])._device, NAMES)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("weighted", [False, True])
def test_bce_one_node_matches_torch(calls: dict[str, int], dtype: str, reduction: str, weighted: bool) -> None:
    x, t = probs(4, 5, dtype=dtype), rng.uniform(0, 1, (4, 5)).astype(dtype)
    w = rng.uniform(0.5, 2, (5,)).astype(dtype) if weighted else None
    g = rng.standard_normal((4, 5) if reduction == "none" else ()).astype(dtype)
    (fo, (fx, _, _)), (to, (tx, _, _)) = both(
        lambda lib, x, t, w: lib.nn.functional.binary_cross_entropy(x, t, w, reduction=reduction),
        x, t, w, grads=(True, False, False))
    assert repr(fo.grad_fn) == "<BinaryCrossEntropyBackward0>"  # the one node ran
    np.testing.assert_allclose(fo.detach().numpy(), to.detach().numpy(), **tol(dtype))
    fo.backward(ferro.tensor(g))
    to.backward(torch.tensor(g))
    assert fx.grad.dtype == fx.dtype
    np.testing.assert_allclose(fx.grad.numpy(), tx.grad.numpy(), **tol(dtype))
    assert calls == {"binary_cross_entropy_forward": 1, "binary_cross_entropy_backward": 1}


@pytest.mark.parametrize("wshape", [(1, 5), (4, 1), (), (5,)])
def test_bce_fused_broadcast_weight_and_no_grad(calls: dict[str, int], wshape: tuple[int, ...]) -> None:
    """A weight broadcast to the input's shape, and a forward without grad (the kernel alone), as torch's."""
    x, t = probs(4, 5, dtype="float32"), rng.uniform(0, 1, (4, 5)).astype("float32")
    w = rng.uniform(0.5, 2, wshape).astype("float32")
    for reduction in ("mean", "sum", "none"):
        (fo, (fx, _, _)), (to, (tx, _, _)) = both(
            lambda lib, x, t, w: lib.nn.functional.binary_cross_entropy(x, t, w, reduction=reduction),
            x, t, w, grads=(True, False, False))
        np.testing.assert_allclose(fo.detach().numpy(), to.detach().numpy(), **tol("float32"))
        fo.sum().backward()
        to.sum().backward()
        np.testing.assert_allclose(fx.grad.numpy(), tx.grad.numpy(), **tol("float32"))
    with ferro.no_grad():
        got = ferro.nn.BCELoss()(ferro.tensor(x), ferro.tensor(t))
    np.testing.assert_allclose(got.numpy(), torch.nn.BCELoss()(torch.tensor(x), torch.tensor(t)).numpy(), rtol=1e-6)
    assert calls == {"binary_cross_entropy_forward": 4, "binary_cross_entropy_backward": 3}


def test_bce_target_needing_grad_or_float16_takes_the_decomposition(calls: dict[str, int]) -> None:
    x, t = rng.uniform(0.05, 0.95, (2, 3)).astype("float32"), rng.uniform(0, 1, (2, 3)).astype("float32")
    (fo, (_, ft)), (to, (_, tt)) = both(
        lambda lib, x, t: lib.nn.functional.binary_cross_entropy(x, t), x, t, grads=(True, True))
    np.testing.assert_allclose(fo.detach().numpy(), to.detach().numpy(), **tol("float32"))
    fo.backward()
    to.backward()
    np.testing.assert_allclose(ft.grad.numpy(), tt.grad.numpy(), **tol("float32"))
    half = ferro.nn.functional.binary_cross_entropy(ferro.tensor(x).half(), ferro.tensor(t).half())
    want = torch.nn.functional.binary_cross_entropy(torch.tensor(x), torch.tensor(t))
    np.testing.assert_allclose(half.float().numpy(), want.numpy(), rtol=1e-2)
    assert calls == {"binary_cross_entropy_forward": 0, "binary_cross_entropy_backward": 0}


def test_bce_double_backward_matches_torch() -> None:
    x, t = rng.uniform(0.05, 0.95, (3, 4)), rng.uniform(0, 1, (3, 4))
    grads = []
    for lib in (ferro, torch):
        tx = lib.tensor(x, requires_grad=True)
        loss = lib.nn.functional.binary_cross_entropy(tx, lib.tensor(t))
        (gx,) = lib.autograd.grad(loss, tx, create_graph=True)
        (ggx,) = lib.autograd.grad((gx * gx).sum(), tx)
        grads.append((gx.detach().numpy(), ggx.numpy()))
    for f, tr in zip(*grads):
        np.testing.assert_allclose(f, tr, rtol=1e-10)


@pytest.mark.parametrize("x_grad", [True, False])
def test_bce_target_gradient_takes_the_decomposition(x_grad: bool) -> None:
    x, t, w = rng.uniform(0.05, 0.95, (2, 3)), rng.uniform(0, 1, (2, 3)), rng.uniform(0.5, 2, (2, 1))
    (fo, fts), (to, tts) = both(lambda lib, x, t, w: lib.nn.functional.binary_cross_entropy(x, t, w), x, t, w,
                                grads=(x_grad, True, False))
    assert repr(fo.grad_fn) != "<BinaryCrossEntropyBackward0>"
    np.testing.assert_allclose(fo.detach().numpy(), to.detach().numpy(), rtol=1e-12)
    fo.backward()
    to.backward()
    for f, tr in zip(fts, tts):
        if tr is not None and tr.requires_grad:
            np.testing.assert_allclose(f.grad.numpy(), tr.grad.numpy(), rtol=1e-10)
