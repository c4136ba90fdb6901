"""The autograd engine's hooks that DistributedDataParallel stands on: post-accumulate-grad hooks
that fire as soon as a leaf's gradient is complete (during backward), and callbacks queued for
the end of backward. Checked against PyTorch's ``register_post_accumulate_grad_hook``."""

from __future__ import annotations

import gc

import numpy as np
import pytest

import ferro
from ferro.autograd._engine import _post_hooks, queue_callback


def _chain(lib: object) -> tuple[object, object, object]:
    """loss = sum(relu(relu(x @ w1) @ w2)): w2's gradient is complete before w1's."""
    w1 = lib.tensor(np.linspace(-1, 1, 12).reshape(3, 4), requires_grad=True)
    w2 = lib.tensor(np.linspace(1, -1, 8).reshape(4, 2), requires_grad=True)
    x = lib.tensor(np.linspace(0, 1, 6).reshape(2, 3))
    return w1, w2, ((x @ w1).relu() @ w2).relu().sum() + (w1 * w1).sum()


def test_post_accumulate_hooks_fire_once_per_leaf_in_pytorchs_order_with_grad_stored() -> None:
    torch = pytest.importorskip("torch")
    orders = []
    for lib in (ferro, torch):
        w1, w2, loss = _chain(lib)
        seen: list[tuple[str, list]] = []
        w1.register_post_accumulate_grad_hook(lambda p: seen.append(("w1", p.grad.tolist())))
        w2.register_post_accumulate_grad_hook(lambda p: seen.append(("w2", p.grad.tolist())))
        loss.backward()
        assert [g for _, g in seen] == [dict(w1=w1, w2=w2)[n].grad.tolist() for n, _ in seen]
        orders.append([n for n, _ in seen])
    assert orders[0] == orders[1] == ["w2", "w1"], "w2 completes first; w1 waits for both of its uses"


def test_a_post_accumulate_hook_sees_the_accumulated_grad_and_can_be_removed() -> None:
    w = ferro.ones(3, requires_grad=True)
    got = []
    handle = w.register_post_accumulate_grad_hook(lambda p: got.append(p.grad.tolist()))
    (w * 2).sum().backward()
    (w * 3).sum().backward()
    assert got == [[2.0] * 3, [5.0] * 3]
    handle.remove()
    (w * 1).sum().backward()
    assert len(got) == 2 and w.grad.tolist() == [6.0] * 3


def test_post_accumulate_hooks_are_refused_on_non_leaves_and_forgotten_with_their_tensor() -> None:
    w = ferro.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf tensors that require grad"):
        (w * 2).register_post_accumulate_grad_hook(lambda p: None)
    with pytest.raises(RuntimeError, match="leaf tensors that require grad"):
        ferro.ones(2).register_post_accumulate_grad_hook(lambda p: None)
    before = len(_post_hooks)
    w.register_post_accumulate_grad_hook(lambda p: None)
    assert len(_post_hooks) == before + 1
    del w
    gc.collect()
    assert len(_post_hooks) == before


def test_queued_callbacks_run_once_after_every_leaf_is_stored() -> None:
    w1, w2, loss = _chain(ferro)
    log = []

    def hook(p: ferro.Tensor) -> None:
        if not log:
            queue_callback(lambda: log.append(("end", w1.grad is not None and w2.grad is not None)))
        log.append("hook")
    w2.register_post_accumulate_grad_hook(hook)
    loss.backward()
    assert log == ["hook", ("end", True)]
    loss2 = (w1 * 2).sum()
    loss2.backward()
    assert log == ["hook", ("end", True)], "a callback runs for the backward that queued it only"
    with pytest.raises(RuntimeError, match="no backward is running"):
        queue_callback(lambda: None)
