"""Activation checkpointing: the same outputs and bit-identical gradients as the plain run, dropout included."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import ferro
import ferro.nn as nn
import ferro.nn.functional as F
from ferro.utils.checkpoint import checkpoint, checkpoint_sequential


def _same(a: ferro.Tensor | None, b: ferro.Tensor | None) -> bool:
    assert a is not None and b is not None
    return a.dtype is b.dtype and np.array_equal(a.detach().numpy(), b.detach().numpy())


def _grads(run: Any, leaves: list[ferro.Tensor], seed: int = 0) -> tuple[Any, list[Any]]:
    """Seed, run, backprop a fixed function of the output; the output and the leaves' gradients."""
    for t in leaves:
        t.grad = None
    ferro.manual_seed(seed)
    out = run()
    outs = out if isinstance(out, tuple) else (out,)
    sum((o * o).sum() * (i + 1) for i, o in enumerate(outs)).backward()
    return out, [t.grad for t in leaves]


@pytest.mark.parametrize("dtype", [ferro.float32, ferro.float64])
@pytest.mark.parametrize("use_reentrant", [True, False])
def test_gradients_with_dropout_equal_the_plain_run(device: ferro.device, dtype: ferro.DType,
                                                    use_reentrant: bool) -> None:
    ferro.manual_seed(1)
    x = ferro.randn(6, 5, dtype=dtype).to(device).requires_grad_()
    w1 = ferro.randn(5, 8, dtype=dtype).to(device).requires_grad_()
    w2 = ferro.randn(8, 3, dtype=dtype).to(device).requires_grad_()

    def block(a: ferro.Tensor, scale: float, *, bias: float = 0.0) -> ferro.Tensor:
        h = F.dropout((a @ w1).tanh() * scale + bias, 0.4)
        return F.dropout(h @ w2, 0.2)

    try:
        plain, g_plain = _grads(lambda: block(x, 2.0, bias=0.5), [x, w1, w2])
    except ferro.errors.UnsupportedOperationError as e:
        pytest.skip(f"{device}: {e}")
    ckpt, g_ckpt = _grads(lambda: checkpoint(block, x, 2.0, bias=0.5, use_reentrant=use_reentrant), [x, w1, w2])
    assert _same(plain, ckpt)
    assert all(_same(a, b) for a, b in zip(g_plain, g_ckpt))
    assert (plain == 0).any().item()  # dropout did drop something


def test_the_forward_keeps_no_graph_and_the_function_runs_again_in_backward() -> None:
    calls: list[bool] = []
    w = ferro.randn(4, 4, requires_grad=True)

    def fn(a: ferro.Tensor) -> ferro.Tensor:
        calls.append(ferro.is_grad_enabled())
        return ((a @ w).sigmoid() @ w).exp()

    x = ferro.randn(3, 4, requires_grad=True)
    y = checkpoint(fn, x, use_reentrant=False)
    assert calls == [False]  # no graph recorded inside
    assert y.grad_fn.name == "_Checkpoint" and all(not isinstance(n, ferro.autograd.Node) or n is None
                                                 for n in y.grad_fn.next)
    y.sum().backward()
    assert calls == [False, True]


def test_parameters_get_gradients_when_no_argument_requires_grad() -> None:
    ferro.manual_seed(0)
    layer = nn.Sequential(nn.Linear(5, 7), nn.ReLU(), nn.Dropout(0.3), nn.Linear(7, 2))
    data = ferro.randn(4, 5)
    params = list(layer.parameters())
    _, plain = _grads(lambda: layer(data), params)
    _, ckpt = _grads(lambda: checkpoint(layer, data, use_reentrant=False), params)
    assert all(_same(a, b) for a, b in zip(plain, ckpt))


def test_several_outputs_and_non_tensor_arguments() -> None:
    x = ferro.randn(3, 3, dtype=ferro.float64, requires_grad=True)
    y = ferro.randn(3, dtype=ferro.float64, requires_grad=True)

    def fn(a: ferro.Tensor, b: ferro.Tensor, power: int, label: str) -> tuple[ferro.Tensor, ferro.Tensor]:
        assert label == "two outputs"
        d = F.dropout(a, 0.5)
        return (d * b) ** power, d.sum(0) + b

    plain, g_plain = _grads(lambda: fn(x, y, 3, "two outputs"), [x, y])
    ckpt, g_ckpt = _grads(lambda: checkpoint(fn, x, y, 3, "two outputs"), [x, y])
    assert all(_same(a, b) for a, b in zip((*plain, *g_plain), (*ckpt, *g_ckpt)))
    # autograd.grad with respect to an argument: d(sum(dropout(x).sum(0)))/dx is the scaled mask
    ferro.manual_seed(5)
    gx = ferro.autograd.grad(checkpoint(fn, x, y, 3, "two outputs")[1].sum(), x)[0]
    ferro.manual_seed(5)
    mask = F.dropout(ferro.ones(3, 3, dtype=ferro.float64), 0.5)
    assert _same(gx, mask)


def test_gradcheck_through_checkpoint() -> None:
    w = ferro.randn(3, 3, dtype=ferro.float64, requires_grad=True)
    x = ferro.randn(2, 3, dtype=ferro.float64, requires_grad=True)
    assert ferro.autograd.gradcheck(lambda a, b: checkpoint(lambda p, q: (p @ q).sin() @ q, a, b), (x, w))


def test_without_preserving_the_rng_state_the_masks_differ() -> None:
    x = ferro.randn(200, requires_grad=True)
    _, g_plain = _grads(lambda: F.dropout(x, 0.5), [x])
    _, g_free = _grads(lambda: checkpoint(lambda a: F.dropout(a, 0.5), x, preserve_rng_state=False), [x])
    assert not _same(g_plain[0], g_free[0])
    # with it preserved, the recomputation leaves the RNG where the plain run left it
    ferro.manual_seed(3)
    F.dropout(x, 0.5).sum().backward()
    after_plain = ferro.rand(5)
    ferro.manual_seed(3)
    checkpoint(lambda a: F.dropout(a, 0.5), x).sum().backward()
    assert _same(ferro.rand(5), after_plain)


@pytest.mark.parametrize("segments", [1, 2, 3, 5])
def test_checkpoint_sequential_matches_the_plain_run(segments: int) -> None:
    ferro.manual_seed(2)
    model = nn.Sequential(*(m for _ in range(3) for m in (nn.Linear(6, 6), nn.Dropout(0.25), nn.Tanh())))
    x = ferro.randn(4, 6, requires_grad=True)
    leaves = [x, *model.parameters()]
    plain, g_plain = _grads(lambda: model(x), leaves)
    for functions in (model, list(model)):
        out, g = _grads(lambda fs=functions: checkpoint_sequential(fs, segments, x, use_reentrant=False), leaves)
        assert _same(out, plain)
        assert all(_same(a, b) for a, b in zip(g, g_plain))
    with pytest.raises(ValueError, match="segments"):
        checkpoint_sequential(model, 0, x)


def test_errors_and_no_grad() -> None:
    x = ferro.randn(3, requires_grad=True)
    with pytest.raises(TypeError, match="tensor or a tuple of tensors"):
        checkpoint(lambda a: {"out": a * 2}, x)
    y = checkpoint(lambda a: a * 2, x)
    with ferro.no_grad():
        x.add_(1.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()
    with ferro.no_grad():
        z = checkpoint(lambda a: a * 2, x)
    assert z.grad_fn is None and not z.requires_grad
    with pytest.raises(ValueError, match="determinism_check"):
        checkpoint(lambda a: a, x, determinism_check="always")
