"""ferro-cpu's fused nll_loss kernels (ferro_cpu/_nll.py) against torch, counting that they run."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import ferro
import ferro.nn.functional as F

from conftest import count_calls, ferro_torch_scores, functions_entered

torch = pytest.importorskip("torch")
TF = torch.nn.functional

RNG = np.random.default_rng(0)
NAMES = ("nll_loss_forward", "nll_loss_backward")
# (input shape, target shape): one sample, a batch, and a batch of 3x2 maps (classes in dim 1)
SHAPES = [((5,), ()), ((8, 5), (8,)), ((4, 5, 3, 2), (4, 3, 2))]
TOL = {"float64": 1e-12, "float32": 1e-6}


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, int]]:
    yield count_calls(monkeypatch, ferro.tensor([0.0])._device, NAMES)


def _pair(x: np.ndarray) -> tuple[Any, Any]:
    return ferro.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("ignore_index", [-100, 2])
@pytest.mark.parametrize("shapes", SHAPES, ids=["one", "batch", "maps"])
def test_matches_torch_and_runs_the_kernels(calls: dict[str, int], shapes: Any, ignore_index: int, weighted: bool,
                                           reduction: str, dtype: str) -> None:
    xs, ts = shapes
    x = np.log(RNG.dirichlet(np.ones(5), size=int(np.prod(ts)))).astype(dtype)
    x = np.moveaxis(x.reshape(*xs[:1], *xs[2:], 5), -1, 1) if len(xs) > 1 else x.reshape(5)
    target, w = RNG.integers(0, 5, ts), RNG.random(5).astype(dtype)
    if ts:
        target.reshape(-1)[0] = -100  # an ignored sample (with ignore_index=2, an error: see below)
        target.reshape(-1)[-1] = 2
    if ignore_index != -100 and ts:
        target.reshape(-1)[0] = 1
    fx, tx = _pair(np.ascontiguousarray(x))
    kw = {"ignore_index": ignore_index, "reduction": reduction}
    got = F.nll_loss(fx, ferro.tensor(target), ferro.tensor(w) if weighted else None, **kw)
    ref = TF.nll_loss(tx, torch.tensor(target), torch.tensor(w) if weighted else None, **kw)
    assert got.dtype is getattr(ferro, dtype) and tuple(got.shape) == tuple(ref.shape)
    np.testing.assert_allclose(got.detach().numpy(), ref.detach().numpy(), rtol=TOL[dtype], atol=TOL[dtype])
    g = RNG.standard_normal(tuple(ref.shape)).astype(dtype)
    got.backward(ferro.tensor(g))
    ref.backward(torch.tensor(g))
    assert fx.grad.dtype is getattr(ferro, dtype)
    np.testing.assert_allclose(fx.grad.numpy(), tx.grad.numpy(), rtol=TOL[dtype], atol=TOL[dtype])
    assert calls == {"nll_loss_forward": 1, "nll_loss_backward": 1}


def test_the_language_model_step_log_softmax_then_nll_loss(calls: dict[str, int]) -> None:
    x = RNG.standard_normal((35, 50)).astype(np.float32)
    target = RNG.integers(0, 50, 35)
    fx, tx = _pair(x)
    got = F.nll_loss(F.log_softmax(fx, dim=1), ferro.tensor(target))
    ref = TF.nll_loss(TF.log_softmax(tx, dim=1), torch.tensor(target))
    got.backward()
    ref.backward()
    np.testing.assert_allclose(got.item(), ref.item(), rtol=1e-6)
    np.testing.assert_allclose(fx.grad.numpy(), tx.grad.numpy(), rtol=1e-5, atol=1e-7)
    assert calls == {"nll_loss_forward": 1, "nll_loss_backward": 1}


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_16_bit_inputs_keep_their_dtype(calls: dict[str, int], dtype: str) -> None:
    x, target = np.log(RNG.dirichlet(np.ones(7), size=16)).astype(np.float32), RNG.integers(0, 7, 16)
    fx = ferro.tensor(x, requires_grad=True).to(getattr(ferro, dtype)).detach().requires_grad_()
    tx = torch.tensor(x).to(getattr(torch, dtype)).requires_grad_()
    got = F.nll_loss(fx, ferro.tensor(target))
    ref = TF.nll_loss(tx, torch.tensor(target))
    got.backward()
    ref.backward()
    assert got.dtype is getattr(ferro, dtype) and fx.grad.dtype is getattr(ferro, dtype)
    tol = 1e-2
    np.testing.assert_allclose(got.float().item(), ref.float().item(), rtol=tol, atol=tol)
    np.testing.assert_allclose(fx.grad.float().numpy(), tx.grad.float().numpy(), rtol=tol, atol=1e-4)
    assert calls == {"nll_loss_forward": 1, "nll_loss_backward": 1}


@pytest.mark.parametrize("bad", [5, -1])
def test_a_target_out_of_range_raises_once_and_changes_nothing(calls: dict[str, int], bad: int) -> None:
    x = ferro.tensor(RNG.standard_normal((3, 5)), requires_grad=True)
    before = x.detach().numpy().copy()
    target = ferro.tensor([0, bad, 1])
    with pytest.raises(IndexError, match=rf"nll_loss: target {bad} is out of bounds for 5 classes"):
        F.nll_loss(x, target)
    np.testing.assert_array_equal(x.detach().numpy(), before)
    assert x.grad is None and x.grad_fn is None and target.tolist() == [0, bad, 1]
    assert calls == {"nll_loss_forward": 1, "nll_loss_backward": 0}
    with pytest.raises(IndexError, match="nll_loss: target 7 is out of bounds"):  # an ignored -100 beside it
        F.nll_loss(x, ferro.tensor([-100, 7, 1]))


def test_second_derivatives_and_a_weight_that_requires_grad_use_the_decomposition(calls: dict[str, int]) -> None:
    x = np.log(RNG.dirichlet(np.ones(4), size=3))
    fx, tx = _pair(x)
    w = RNG.random(4)
    fw = ferro.tensor(w, requires_grad=True)
    loss = F.nll_loss(fx * fx, ferro.tensor([0, 3, 1]), ferro.tensor(w))
    (gx,) = ferro.autograd.grad(loss, fx, create_graph=True)
    (ggx,) = ferro.autograd.grad(gx.sum(), fx)  # through the decomposition: exact higher derivatives
    (tg,) = torch.autograd.grad(TF.nll_loss(tx * tx, torch.tensor([0, 3, 1]), torch.tensor(w)), tx,
                                create_graph=True)
    (tgg,) = torch.autograd.grad(tg.sum(), tx)
    np.testing.assert_allclose(gx.detach().numpy(), tg.detach().numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(ggx.numpy(), tgg.numpy(), rtol=1e-10, atol=1e-12)
    assert calls == {"nll_loss_forward": 1, "nll_loss_backward": 0}
    loss = F.nll_loss(fx, ferro.tensor([0, 3, 0]), fw)  # (torch refuses a weight that requires grad)
    loss.backward()
    total = w[0] * 2 + w[3]
    want = np.zeros(4)  # dL/dw_c: the samples of class c, (-x[i, c] - L) / total each
    for i, c in enumerate([0, 3, 0]):
        want[c] += (-x[i, c] - loss.item()) / total
    np.testing.assert_allclose(fw.grad.numpy(), want, rtol=1e-12, atol=1e-12)
    assert calls["nll_loss_forward"] == 1  # the weight's gradient: the decomposition's


def test_no_grad_runs_the_forward_kernel_alone(calls: dict[str, int]) -> None:
    x = ferro.tensor(np.log(RNG.dirichlet(np.ones(6), size=4)), requires_grad=True)
    with ferro.no_grad():
        got = F.nll_loss(x, ferro.tensor([0, 1, 2, 5]), reduction="sum")
    assert got.grad_fn is None and not got.requires_grad
    ref = TF.nll_loss(torch.tensor(x.detach().numpy()), torch.tensor([0, 1, 2, 5]), reduction="sum")
    np.testing.assert_allclose(got.item(), ref.item(), rtol=1e-12)
    assert calls == {"nll_loss_forward": 1, "nll_loss_backward": 0}


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("shapes", [((0, 4), (0,)), ((3, 4, 0), (3, 0))], ids=["no samples", "empty maps"])
def test_empty_batches_match_torch(calls: dict[str, int], shapes: Any, reduction: str) -> None:
    xs, ts = shapes
    fx, tx = _pair(np.zeros(xs))
    got = F.nll_loss(fx, ferro.tensor(np.zeros(ts, np.int64)), reduction=reduction)
    ref = TF.nll_loss(tx, torch.zeros(ts, dtype=torch.int64), reduction=reduction)
    np.testing.assert_allclose(got.detach().numpy(), ref.detach().numpy())  # nan for the mean of nothing
    got.sum().backward()
    ref.sum().backward()
    np.testing.assert_array_equal(fx.grad.numpy(), tx.grad.numpy())
    assert calls == {"nll_loss_forward": 1, "nll_loss_backward": 1}


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
@pytest.mark.parametrize("case", ["plain", "ignored", "weighted", "none", "strided"])
def test_flat_rows_path_as_torch(calls: dict[str, int], dtype: str, case: str) -> None:
    # C-contiguous (N, C) log-probabilities: the targets' entries taken from x flat, the gradient put into dx flat
    x = RNG.standard_normal((64, 10)).astype(np.float32 if dtype == "bfloat16" else dtype)
    target = RNG.integers(0, 10, 64)
    ignore = 3 if case == "ignored" else -100
    w = RNG.random(10).astype(x.dtype) if case == "weighted" else None
    reduction = "none" if case == "none" else "mean"
    leaf, fx, tx, fw, tw = ferro_torch_scores(x, w, dtype, case == "strided")
    got: list[ferro.Tensor] = []
    forward = functions_entered(lambda: got.append(F.nll_loss(fx, ferro.tensor(target), fw, ignore_index=ignore,
                                                              reduction=reduction)), "ferro_cpu/_rows.py")
    ref = TF.nll_loss(tx, torch.tensor(target), tw, ignore_index=ignore, reduction=reduction)
    g = RNG.standard_normal(tuple(ref.shape)).astype(np.float32)
    backward = functions_entered(lambda: got[0].backward(ferro.tensor(g).to(fx.dtype)), "ferro_cpu/_rows.py")
    ref.backward(torch.tensor(g).to(tx.dtype))
    tol = {"float32": 1e-6, "float64": 1e-12, "float16": 2e-3, "bfloat16": 2e-2}[dtype]
    np.testing.assert_allclose(got[0].detach().float().numpy(), ref.detach().float().numpy(), rtol=tol, atol=tol)
    grad = leaf.grad.t() if case == "strided" else leaf.grad
    np.testing.assert_allclose(grad.float().numpy(), tx.grad.float().numpy(), rtol=tol, atol=tol)
    # (a 16-bit strided input is widened in its own order: column-major too; the backward writes a new dx: flat
    # whenever every sample counts)
    assert ("starts" in forward) == (case != "strided") and ("starts" in backward) == (case != "ignored")
    assert calls == {"nll_loss_forward": 1, "nll_loss_backward": 1}
