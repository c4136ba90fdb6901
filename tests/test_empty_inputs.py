"""Valid input that is empty: a batch of 0 samples, a reduction over a dim of length 0 (issue 14).

PyTorch returns empty outputs (and zero-size gradients) or the reduction's identity; ferro must do the same
on every backend, values and gradients compared with torch's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import ferro
import ferro.nn.functional as F


def _pair(shapes: list[tuple[int, ...]], dev: str) -> tuple[list[ferro.Tensor], list[torch.Tensor]]:
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    return ([ferro.tensor(a, device=dev, requires_grad=True) for a in arrays],
            [torch.tensor(a, requires_grad=True) for a in arrays])


def _check(f: Callable[..., Any], tf: Callable[..., Any], shapes: list[tuple[int, ...]], dev: str) -> None:
    """Same output shapes and values as torch, and the same gradients (shapes included) for every input."""
    xs, ts = _pair(shapes, dev)
    got, want = f(*xs), tf(*ts)
    got = got if isinstance(got, tuple) else (got,)
    want = want if isinstance(want, tuple) else (want,)
    for g, w in zip(got, want, strict=True):
        assert tuple(g.shape) == tuple(w.shape)
        np.testing.assert_allclose(g.detach().cpu().numpy(), w.detach().numpy(), rtol=1e-5, atol=1e-5)
    if got[0].dtype.is_floating_point:
        (got[0].sum() * 1.0).backward()
        (want[0].sum() * 1.0).backward()
        for x, t in zip(xs, ts):
            gt = t.grad if t.grad is not None else torch.zeros_like(t)
            gx = x.grad if x.grad is not None else ferro.zeros(*x.shape)
            assert tuple(gx.shape) == tuple(gt.shape)
            np.testing.assert_allclose(gx.cpu().numpy(), gt.numpy(), rtol=1e-5, atol=1e-5)


BATCH0: dict[str, tuple[Callable[..., Any], Callable[..., Any], list[tuple[int, ...]]]] = {
    "conv1d": (F.conv1d, TF.conv1d, [(0, 3, 8), (4, 3, 3)]),
    "conv1d bias padding": (lambda x, w, b: F.conv1d(x, w, b, padding=1), lambda x, w, b: TF.conv1d(x, w, b, padding=1),
                            [(0, 3, 8), (4, 3, 3), (4,)]),
    "conv2d": (F.conv2d, TF.conv2d, [(0, 3, 6, 6), (4, 3, 3, 3)]),
    "conv2d groups stride": (lambda x, w: F.conv2d(x, w, stride=2, groups=3),
                             lambda x, w: TF.conv2d(x, w, stride=2, groups=3), [(0, 3, 6, 6), (6, 1, 3, 3)]),
    "conv3d": (F.conv3d, TF.conv3d, [(0, 2, 4, 4, 4), (3, 2, 2, 2, 2)]),
    "conv_transpose1d": (F.conv_transpose1d, TF.conv_transpose1d, [(0, 3, 5), (3, 2, 3)]),
    "conv_transpose2d": (F.conv_transpose2d, TF.conv_transpose2d, [(0, 3, 5, 5), (3, 4, 3, 3)]),
    "conv_transpose2d stride": (lambda x, w: F.conv_transpose2d(x, w, stride=2),
                                lambda x, w: TF.conv_transpose2d(x, w, stride=2), [(0, 3, 5, 5), (3, 4, 3, 3)]),
    "linear": (F.linear, TF.linear, [(0, 3), (4, 3), (4,)]),
    "max_pool1d": (lambda x: F.max_pool1d(x, 2), lambda x: TF.max_pool1d(x, 2), [(0, 3, 8)]),
    "max_pool2d": (lambda x: F.max_pool2d(x, 2), lambda x: TF.max_pool2d(x, 2), [(0, 3, 6, 6)]),
    "max_pool2d indices": (lambda x: F.max_pool2d(x, 2, return_indices=True, ceil_mode=True),
                           lambda x: TF.max_pool2d(x, 2, return_indices=True, ceil_mode=True), [(0, 3, 5, 5)]),
    "max_pool3d": (lambda x: F.max_pool3d(x, 2), lambda x: TF.max_pool3d(x, 2), [(0, 2, 4, 4, 4)]),
    "avg_pool1d": (lambda x: F.avg_pool1d(x, 2), lambda x: TF.avg_pool1d(x, 2), [(0, 3, 8)]),
    "avg_pool2d": (lambda x: F.avg_pool2d(x, 3, 2, 1, count_include_pad=False),
                   lambda x: TF.avg_pool2d(x, 3, 2, 1, count_include_pad=False), [(0, 3, 6, 6)]),
    "avg_pool3d": (lambda x: F.avg_pool3d(x, 2), lambda x: TF.avg_pool3d(x, 2), [(0, 2, 4, 4, 4)]),
    "adaptive_avg_pool2d": (lambda x: F.adaptive_avg_pool2d(x, 2), lambda x: TF.adaptive_avg_pool2d(x, 2),
                            [(0, 3, 6, 6)]),
    "batch_norm eval": (lambda x, m, v: F.batch_norm(x, m.detach(), v.detach().abs()),
                        lambda x, m, v: TF.batch_norm(x, m.detach(), v.detach().abs()), [(0, 3, 4), (3,), (3,)]),
    "layer_norm": (lambda x, w: F.layer_norm(x, (4,), w), lambda x, w: TF.layer_norm(x, (4,), w), [(0, 3, 4), (4,)]),
    "group_norm": (lambda x: F.group_norm(x, 1), lambda x: TF.group_norm(x, 1), [(0, 4, 3)]),
    "softmax": (lambda x: F.softmax(x, 1), lambda x: TF.softmax(x, 1), [(0, 5)]),
    "cross_entropy none": (lambda x: F.cross_entropy(x, ferro.zeros(0, dtype=ferro.int64, device=x.device),
                                                     reduction="none"),
                           lambda x: TF.cross_entropy(x, torch.zeros(0, dtype=torch.int64), reduction="none"),
                           [(0, 5)]),
}


def test_batch_norm_training_on_an_empty_batch_keeps_the_running_stats(dev: str) -> None:
    rm, rv = ferro.tensor([0.5, 1.0, 2.0], device=dev), ferro.tensor([1.0, 2.0, 3.0], device=dev)
    trm, trv = torch.tensor([0.5, 1.0, 2.0]), torch.tensor([1.0, 2.0, 3.0])
    x = ferro.zeros(0, 3, 4, device=dev, requires_grad=True)
    y = F.batch_norm(x, rm, rv, training=True)
    ty = TF.batch_norm(torch.zeros(0, 3, 4), trm, trv, training=True)
    assert tuple(y.shape) == tuple(ty.shape) and rm.tolist() == trm.tolist() and rv.tolist() == trv.tolist()
    y.sum().backward()
    assert tuple(x.grad.shape) == (0, 3, 4)
    with pytest.raises(ValueError, match=r"batch_norm: expected more than 1 value per channel when training"):
        F.batch_norm(ferro.ones(1, 3, device=dev), rm, rv, training=True)
    with pytest.raises(ValueError, match="more than 1 value per channel"):
        TF.batch_norm(torch.ones(1, 3), trm, trv, training=True)


@pytest.mark.parametrize("name", sorted(BATCH0))
def test_batch_of_zero(name: str, dev: str) -> None:
    f, tf, shapes = BATCH0[name]
    _check(f, tf, shapes, dev)


def test_batch_of_zero_in_modules(dev: str) -> None:
    torch.manual_seed(0)
    for make in (lambda nn: nn.Conv2d(3, 4, 3), lambda nn: nn.ConvTranspose2d(3, 4, 3), lambda nn: nn.MaxPool2d(2),
                 lambda nn: nn.Linear(3 * 6 * 6, 2)):
        t = make(torch.nn)
        m = make(ferro.nn)
        m.load_state_dict({k: ferro.tensor(v.detach().numpy()) for k, v in t.state_dict().items()})
        m.to(dev)
        x = torch.zeros(0, 3 * 6 * 6) if isinstance(t, torch.nn.Linear) else torch.zeros(0, 3, 6, 6)
        assert tuple(m(ferro.tensor(x.numpy(), device=dev)).shape) == tuple(t(x).shape)


#: reductions over an empty dim: name -> (ferro, torch), each f(x, dim)
REDUCTIONS: dict[str, tuple[Callable[..., Any], Callable[..., Any]]] = {
    "sum": (ferro.sum, torch.sum), "prod": (ferro.prod, torch.prod), "mean": (ferro.mean, torch.mean),
    "std": (ferro.std, torch.std), "var": (ferro.var, torch.var),
    "norm": (lambda x, d: ferro.norm(x, dim=d), lambda x, d: torch.norm(x, dim=d)),
    "norm p=1": (lambda x, d: ferro.norm(x, 1, d), lambda x, d: torch.norm(x, 1, d)),
    "logsumexp": (ferro.logsumexp, torch.logsumexp), "cumsum": (ferro.cumsum, torch.cumsum),
    "cumprod": (ferro.cumprod, torch.cumprod), "softmax": (ferro.softmax, torch.softmax),
    "log_softmax": (ferro.log_softmax, torch.log_softmax),
    "count_nonzero": (ferro.count_nonzero, torch.count_nonzero),
    "any": (ferro.any, torch.any), "all": (ferro.all, torch.all),
    "vector_norm": (lambda x, d: ferro.linalg.vector_norm(x, dim=d), lambda x, d: torch.linalg.vector_norm(x, dim=d)),
}


@pytest.mark.filterwarnings("ignore:std|var")
@pytest.mark.parametrize("name", sorted(REDUCTIONS))
@pytest.mark.parametrize(("shape", "dim"), [((2, 0), 1), ((0, 3), 0), ((0,), 0), ((0, 3), 1)])
def test_reduction_over_an_empty_dim(name: str, shape: tuple[int, ...], dim: int, dev: str) -> None:
    f, tf = REDUCTIONS[name]
    _check(lambda x: f(x, dim), lambda x: tf(x, dim), [shape], dev)


@pytest.mark.parametrize("name", ["amax", "amin", "argmax", "argmin", "max", "min"])
def test_reductions_without_identity_refuse_an_empty_dim_as_torch(name: str, dev: str) -> None:
    with pytest.raises(IndexError):
        getattr(torch, name)(torch.zeros(2, 0), 1)
    with pytest.raises(IndexError, match=rf"{name}.*dim 1.*\[2, 0\]"):
        getattr(ferro, name)(ferro.zeros(2, 0, device=dev), 1)
    assert tuple(getattr(ferro, name)(ferro.zeros(0, 3, device=dev), 1)[0].shape
                 if name in ("max", "min") else getattr(ferro, name)(ferro.zeros(0, 3, device=dev), 1).shape) == (0,)
