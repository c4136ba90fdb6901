"""The recording paths of autograd, against PyTorch: the one- and two-input recorders of elementwise ops (an
input of the output's shape and dtype keeps no edge metadata), cat / stack, the joint node of the fused
layer_norm (one formula for every input), the fused linear and batch_norm, and the node's hooks, retain_grad
and release, which live in fewer slots than before.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import ferro
import ferro.nn.functional as F
from ferro._core.node import JointNode, Node
from ferro.testing import assert_close

torch = pytest.importorskip("torch")
rng = np.random.default_rng(11)
DTYPES = ("float32", "float64")


def _pair(dtype: str, *arrays: np.ndarray, grad: tuple[bool, ...] | None = None) -> tuple[list[Any], list[Any]]:
    grad = grad or (True,) * len(arrays)
    return ([ferro.tensor(a, dtype=getattr(ferro, dtype), requires_grad=g) for a, g in zip(arrays, grad)],
            [torch.tensor(a, dtype=getattr(torch, dtype), requires_grad=g) for a, g in zip(arrays, grad)])


def _same_grads(ours: list[Any], theirs: list[Any], tol: float = 1e-5) -> None:
    for o, t in zip(ours, theirs):
        assert (o.grad is None) == (t.grad is None)
        if t.grad is not None:
            assert o.grad.dtype == getattr(ferro, str(t.grad.dtype).split(".")[1])
            assert tuple(o.grad.shape) == tuple(t.grad.shape)
            assert_close(np.asarray(o.grad), t.grad.numpy(), rtol=tol, atol=tol)


def _elementwise(lib: Any, a: Any, b: Any, c: Any) -> Any:
    y = a * 2.0            # a tensor and a number: no edge metadata
    y = 3.0 - y            # the number on the left
    y = y * b              # b broadcasts: its edge keeps (shape, dtype)
    y = y.tanh() + c       # c of another dtype: promoted, its gradient cast back
    y = (y / 1.5).exp().relu().sigmoid()
    y = y ** 2 + b.sum()
    return y.sum()


@pytest.mark.parametrize("dtype", DTYPES)
def test_elementwise_chain_with_numbers_broadcasting_and_promotion(dtype: str) -> None:
    arrays = rng.standard_normal((3, 4)), rng.standard_normal((4,)), rng.standard_normal((3, 4))
    ours, theirs = _pair(dtype, *arrays)
    other = "float64" if dtype == "float32" else "float32"
    ours[2] = ferro.tensor(arrays[2], dtype=getattr(ferro, other), requires_grad=True)
    theirs[2] = torch.tensor(arrays[2], dtype=getattr(torch, other), requires_grad=True)
    _elementwise(ferro, *ours).backward()
    _elementwise(torch, *theirs).backward()
    _same_grads(ours, theirs)


def test_a_node_beside_a_number_has_two_edges_as_torch() -> None:
    a = ferro.ones(2, requires_grad=True)
    for y in (a + 1.0, a * 2.0):
        assert len(y.grad_fn.next_functions) == 2
        assert y.grad_fn.next_functions[0][0] is a and y.grad_fn.next_functions[1][0] is None


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("join", ["cat", "stack"])
def test_cat_and_stack_with_inputs_that_do_not_require_grad(join: str, dtype: str) -> None:
    arrays = [rng.standard_normal((2, 3)) for _ in range(3)]
    ours, theirs = _pair(dtype, *arrays, grad=(True, False, True))
    w = rng.standard_normal((6, 3) if join == "cat" else (3, 2, 3))
    (getattr(ferro, join)([o * 1.0 for o in ours]) * ferro.tensor(w, dtype=getattr(ferro, dtype))).sum().backward()
    (getattr(torch, join)([t * 1.0 for t in theirs]) * torch.tensor(w, dtype=getattr(torch, dtype))).sum().backward()
    _same_grads(ours, theirs)


def test_a_view_changed_in_place_through_its_base_is_refreshed() -> None:
    arrays = rng.standard_normal((4, 3)), rng.standard_normal((3,))
    results = []
    for lib in (ferro, torch):
        x, b = (lib.tensor(a, requires_grad=True) for a in arrays)
        base = x * 1.0
        v = base[1]
        base.mul_(3.0)  # v's graph position is now stale
        (v * b + 2.0 * v).sum().backward()
        results.append((x, b))
    _same_grads(*results)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("wanted", [(True, True, True), (True, False, False), (False, True, False),
                                    (False, False, True)], ids=["all", "input", "weight", "bias"])
def test_linear_gradients_of_each_input(wanted: tuple[bool, ...], dtype: str) -> None:
    arrays = rng.standard_normal((5, 4)), rng.standard_normal((3, 4)), rng.standard_normal((3,))
    ours, theirs = _pair(dtype, *arrays, grad=wanted)
    y = F.linear(*ours)
    g = rng.standard_normal((5, 3))
    y.backward(ferro.tensor(g, dtype=getattr(ferro, dtype)))
    torch.nn.functional.linear(*theirs).backward(torch.tensor(g, dtype=getattr(torch, dtype)))
    _same_grads(ours, theirs)


def test_linear_double_backward_and_a_second_backward() -> None:
    arrays = rng.standard_normal((2, 4)), rng.standard_normal((3, 4)), rng.standard_normal((3,))
    ours, theirs = _pair("float64", *arrays)
    got = []
    for lib, (x, w, b) in ((ferro, ours), (torch, theirs)):
        y = (lib.nn.functional.linear(x, w, b) ** 2).sum()
        gx, gw = (lib.autograd.grad(y, [x, w], create_graph=True))
        (gx.sum() + (gw * gw).sum()).backward()
        got.append([x, w, b])
    _same_grads(*got, tol=1e-10)
    x, w, b = ours
    y = F.linear(x, w, b).sum()
    y.backward(retain_graph=True)
    y.backward()  # retained: runs again
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        y.backward()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("affine", [True, False])
def test_layer_norm_records_one_joint_node(affine: bool, dtype: str) -> None:
    arrays = [rng.standard_normal((4, 6))] + ([rng.standard_normal(6), rng.standard_normal(6)] if affine else [])
    ours, theirs = _pair(dtype, *arrays)
    g = rng.standard_normal((4, 6))
    y = F.layer_norm(ours[0], (6,), *ours[1:])
    assert type(y.grad_fn) is JointNode
    y.backward(ferro.tensor(g, dtype=getattr(ferro, dtype)))
    torch.nn.functional.layer_norm(theirs[0], (6,), *theirs[1:]).backward(torch.tensor(g, dtype=getattr(torch, dtype)))
    _same_grads(ours, theirs, 1e-4 if dtype == "float32" else 1e-10)


def test_layer_norm_double_backward() -> None:
    arrays = rng.standard_normal((3, 5)), rng.standard_normal(5), rng.standard_normal(5)
    ours, theirs = _pair("float64", *arrays)
    for lib, (x, w, b) in ((ferro, ours), (torch, theirs)):
        y = (lib.nn.functional.layer_norm(x, (5,), w, b) ** 3).sum()
        (gx,) = lib.autograd.grad(y, [x], create_graph=True)
        (gx * gx).sum().backward()
    _same_grads(ours, theirs, 1e-8)


def test_node_hooks_and_retain_grad_share_one_slot() -> None:
    results = []
    for lib in (ferro, torch):
        x = lib.tensor([1.0, -2.0, 3.0], requires_grad=True)
        y = x * 2.0
        y.retain_grad()
        y.register_hook(lambda g: g * 10)  # registered after retain_grad: PyTorch still retains the hooked value
        (y * y).sum().backward()
        results.append((x.grad.numpy().copy(), y.grad.numpy().copy()))
    for ours, theirs in zip(*results):
        np.testing.assert_allclose(ours, theirs)
    z = ferro.ones(2, requires_grad=True) + 1.0
    assert isinstance(z.grad_fn, Node) and z.grad_fn.hooks is None and z.grad_fn.retain is None
    z.retain_grad()
    assert z.grad_fn.retain() is z and z.grad_fn.hooks is None


def test_released_node_reports_it() -> None:
    x = ferro.tensor([1.0, 2.0], requires_grad=True)
    y = (x.exp() * x).sum()
    node = y.grad_fn.next_functions[0][0]
    assert not node.released
    y.backward()
    assert node.released
    with pytest.raises(RuntimeError, match="second time"):
        y.backward()
    z = (x + 1.0).sum()  # saves nothing: runs again, as in PyTorch
    z.backward()
    z.backward()
    v = np.array([1.0, 2.0])
    np.testing.assert_allclose(x.grad.numpy(), np.exp(v) * (1 + v) + 2.0, rtol=1e-6)  # (x e^x)' and twice 1


@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_gradients_and_running_statistics(training: bool) -> None:
    arrays = rng.standard_normal((4, 3, 5)), rng.standard_normal(3), rng.standard_normal(3)
    ours, theirs = _pair("float64", *arrays)
    stats = [(lib.zeros(3, dtype=lib.float64), lib.ones(3, dtype=lib.float64)) for lib in (ferro, torch)]
    y = F.batch_norm(ours[0], *stats[0], ours[1], ours[2], training=training)
    ty = torch.nn.functional.batch_norm(theirs[0], *stats[1], theirs[1], theirs[2], training=training)
    g = rng.standard_normal((4, 3, 5))
    y.backward(ferro.tensor(g))
    ty.backward(torch.tensor(g))
    _same_grads(ours, theirs, 1e-10)
    for a, b in zip(stats[0], stats[1]):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-12)
