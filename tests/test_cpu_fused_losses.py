"""ferro-cpu's fused cross_entropy kernels (ferro_cpu/_losses.py) against torch, counting that they run."""

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
NAMES = ("cross_entropy_forward", "cross_entropy_backward")
# (input shape, target shape): one sample, a batch, and a batch of 3x2 maps (classes in dim 1)
SHAPES = [((5,), ()), ((8, 5), (8,)), ((4, 5, 3, 2), (4, 3, 2))]


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, int]]:
    yield count_calls(monkeypatch, ferro.tensor([0.0])._device, NAMES)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("shapes", SHAPES, ids=["one", "batch", "maps"])
def test_matches_torch_and_runs_the_kernels(calls: dict[str, int], shapes: Any, weighted: bool,
                                           reduction: str) -> None:
    xs, ts = shapes
    x, target, w = RNG.standard_normal(xs), RNG.integers(0, 5, ts), RNG.random(5)
    if ts:
        target.reshape(-1)[0] = -100  # an ignored sample
    fx, tx = ferro.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    got = F.cross_entropy(fx, ferro.tensor(target), ferro.tensor(w) if weighted else None, reduction=reduction)
    ref = TF.cross_entropy(tx, torch.tensor(target), torch.tensor(w) if weighted else None, reduction=reduction)
    np.testing.assert_allclose(got.detach().numpy(), ref.detach().numpy(), rtol=1e-12, atol=1e-12)
    g = RNG.standard_normal(tuple(ref.shape))
    got.backward(ferro.tensor(g))
    ref.backward(torch.tensor(g))
    np.testing.assert_allclose(fx.grad.numpy(), tx.grad.numpy(), rtol=1e-12, atol=1e-12)
    assert calls == {"cross_entropy_forward": 1, "cross_entropy_backward": 1}


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_low_precision_inputs_keep_their_dtype(calls: dict[str, int], dtype: str) -> None:
    x, target = RNG.standard_normal((16, 7)).astype(dtype), RNG.integers(0, 7, 16)
    fx, tx = ferro.tensor(x, requires_grad=True), torch.tensor(x.astype(np.float32), requires_grad=True)
    got = F.cross_entropy(fx, ferro.tensor(target))
    ref = TF.cross_entropy(tx, torch.tensor(target))
    got.backward()
    ref.backward()
    assert got.dtype is getattr(ferro, dtype) and fx.grad.dtype is getattr(ferro, dtype)
    tol = 2e-3 if dtype == "float16" else 1e-6
    np.testing.assert_allclose(got.detach().float().numpy(), ref.detach().numpy(), rtol=tol, atol=tol)
    np.testing.assert_allclose(fx.grad.float().numpy(), tx.grad.numpy(), rtol=tol, atol=tol)
    assert calls["cross_entropy_forward"] == 1


def test_a_target_out_of_range_raises_and_second_derivatives_use_the_decomposition(calls: dict[str, int]) -> None:
    x = ferro.tensor(RNG.standard_normal((3, 4)), requires_grad=True)
    with pytest.raises(IndexError, match="target 4 is out of bounds for 4 classes"):
        F.cross_entropy(x, ferro.tensor([0, 4, 1]))
    loss = F.cross_entropy(x, ferro.tensor([0, 3, 1]))
    (gx,) = ferro.autograd.grad(loss, x, create_graph=True)
    (ggx,) = ferro.autograd.grad(gx.sum(), x)  # through the decomposition: exact higher derivatives
    tx = torch.tensor(x.detach().numpy(), requires_grad=True)
    (tg,) = torch.autograd.grad(TF.cross_entropy(tx, torch.tensor([0, 3, 1])), tx, create_graph=True)
    (tgg,) = torch.autograd.grad(tg.sum(), tx)
    np.testing.assert_allclose(gx.detach().numpy(), tg.detach().numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(ggx.numpy(), tgg.numpy(), rtol=1e-10, atol=1e-12)
    assert calls == {"cross_entropy_forward": 2, "cross_entropy_backward": 0}  # the refused call counts too


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_a_reduced_loss_runs_no_core_op_after_the_kernel(monkeypatch: pytest.MonkeyPatch, calls: dict[str, int],
                                                         dtype: str, reduction: str) -> None:
    # 'mean' and 'sum' reduce the kernel's per-row losses with the device's sum / div / cast kernels straight:
    # no tensor method runs (each a core op of a few microseconds at a classifier's batch), same values
    x, target = RNG.standard_normal((16, 10)).astype(np.float32), RNG.integers(0, 10, 16)
    target[3] = -100
    fx = ferro.tensor(x).to(getattr(ferro, dtype)).requires_grad_()
    tx = torch.tensor(x).to(getattr(torch, dtype)).requires_grad_()
    ft = ferro.tensor(target)

    def refuse(*a: Any, **k: Any) -> None:
        raise AssertionError("a core op ran after the fused kernel")
    with monkeypatch.context() as m:
        for name in ("sum", "__truediv__", "to", "reshape", "div"):
            m.setattr(ferro.Tensor, name, refuse)
        got = F.cross_entropy(fx, ft, reduction=reduction)
    ref = TF.cross_entropy(tx, torch.tensor(target), reduction=reduction)
    assert got.dtype is fx.dtype and got.shape == () and got.grad_fn is not None
    tol = {"float32": 1e-6, "float64": 1e-12, "float16": 2e-3, "bfloat16": 1e-2}[dtype]
    np.testing.assert_allclose(got.detach().float().numpy(), ref.detach().float().numpy(), rtol=tol, atol=tol)
    got.backward()
    ref.backward()
    np.testing.assert_allclose(fx.grad.float().numpy(), tx.grad.float().numpy(), rtol=tol, atol=tol)
    assert calls == {"cross_entropy_forward": 1, "cross_entropy_backward": 1}


@pytest.mark.parametrize("ignore_index", [-100, 2, 7])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("tdtype", ["int64", "int32", "uint8"])
def test_every_row_counting_or_an_ignore_index_among_the_classes(calls: dict[str, int], ignore_index: int,
                                                                 weighted: bool, tdtype: str) -> None:
    # no row ignored (ignore_index outside the classes, all targets in range) takes the kernels' short path;
    # an ignore_index among the classes ignores the rows of that class
    x, target, w = RNG.standard_normal((12, 5)), RNG.integers(0, 5, 12).astype(tdtype), RNG.random(5)
    target[:3] = 2
    fx, tx = ferro.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    got = F.cross_entropy(fx, ferro.tensor(target), ferro.tensor(w) if weighted else None, ignore_index=ignore_index)
    ref = TF.cross_entropy(tx, torch.tensor(target.astype(np.int64)), torch.tensor(w) if weighted else None,
                           ignore_index=ignore_index)
    np.testing.assert_allclose(got.detach().numpy(), ref.detach().numpy(), rtol=1e-12, atol=1e-12)
    got.backward()
    ref.backward()
    np.testing.assert_allclose(fx.grad.numpy(), tx.grad.numpy(), rtol=1e-12, atol=1e-12)
    assert calls == {"cross_entropy_forward": 1, "cross_entropy_backward": 1}


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
@pytest.mark.parametrize("case", ["plain", "ignored", "weighted", "extreme", "strided", "large"])
def test_flat_rows_path_as_torch(calls: dict[str, int], dtype: str, case: str) -> None:
    # C-contiguous (N, C) scores (a classifier's): the row maxima by argmax, the targets' scores taken from x
    # flat, the row sums by BLAS, one value per row spread before the ufunc; a strided x takes the general steps.
    # Without the shift by the row maxima when every row's log-sum lies within +-16; otherwise ("extreme": inf,
    # NaN, an overflow; "large": logits of tens) shifted
    n, c = (64, 10) if case != "weighted" else (40, 600)
    x = (RNG.standard_normal((n, c)) * (30 if case == "large" else 3)).astype(np.float32 if dtype == "bfloat16"
                                                                            else dtype)
    target = RNG.integers(0, c, n)
    ignore = 3 if case == "ignored" else -100
    if case == "ignored":
        target[:5] = 3
    if case == "extreme":
        x[0, 1], x[1, :], x[2, 4], x[3, 0] = np.inf, -np.inf, np.nan, 1e4
    w = RNG.random(c).astype(x.dtype) if case == "weighted" else None
    leaf, fx, tx, fw, tw = ferro_torch_scores(x, w, dtype, case == "strided")
    got: list[ferro.Tensor] = []
    forward = functions_entered(
        lambda: got.append(F.cross_entropy(fx, ferro.tensor(target), fw, ignore_index=ignore)), "ferro_cpu/_losses.py")
    ref = TF.cross_entropy(tx, torch.tensor(target), tw, ignore_index=ignore)
    backward = functions_entered(lambda: got[0].backward(), "ferro_cpu/_rows.py")
    ref.backward()
    tol = {"float32": 1e-5, "float64": 1e-12, "float16": 4e-3, "bfloat16": 3e-2}[dtype]
    assert got[0].dtype is fx.dtype
    np.testing.assert_allclose(got[0].detach().float().numpy(), ref.detach().float().numpy(), rtol=tol, atol=tol,
                               equal_nan=True)
    grad = leaf.grad.t() if case == "strided" else leaf.grad
    np.testing.assert_allclose(grad.float().numpy(), tx.grad.float().numpy(), rtol=tol, atol=tol, equal_nan=True)
    flat = case != "strided"  # (a 16-bit strided input is widened in its own order: column-major too)
    assert ("row_sums" in forward) == flat and ("by_rows" in backward) == flat
    assert ("shifted_sums" in forward) == (flat and case in ("extreme", "large"))
    assert calls == {"cross_entropy_forward": 1, "cross_entropy_backward": 1}
