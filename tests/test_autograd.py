"""Autograd: backward, grad, double backward, hooks, modes, version counter, Function, gradcheck."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import ferro
from ferro.autograd import gradcheck, gradgradcheck
from ferro.testing import assert_close
from ferro.testing._opinfo import NOT_SAMPLED

torch = pytest.importorskip("torch")
rng = np.random.default_rng(2)


def both(fn: Callable[..., Any], tfn: Callable[..., Any] | None, *arrays: np.ndarray) -> None:
    """Run fn on ferro leaves and tfn on torch leaves; compare outputs and gradients."""
    xs = [ferro.tensor(a, requires_grad=True) for a in arrays]
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    out, ref = fn(*xs), (tfn or fn)(*ts)
    assert_close(out.detach(), ref.detach().numpy(), rtol=1e-6, atol=1e-8)
    g = rng.standard_normal(tuple(ref.shape))
    out.backward(ferro.tensor(g))
    ref.backward(torch.tensor(g))
    for x, t in zip(xs, ts):
        assert_close(x.grad, t.grad.numpy(), rtol=1e-6, atol=1e-8)


def test_the_issue_example_matches_torch() -> None:
    x = rng.standard_normal((64, 32)).astype(np.float32)
    w = rng.standard_normal((32, 10)).astype(np.float32)
    fx, fw = ferro.tensor(x, requires_grad=True), ferro.tensor(w, requires_grad=True)
    tx, tw = torch.tensor(x, requires_grad=True), torch.tensor(w, requires_grad=True)
    (fx @ fw).relu().sum().backward()
    (tx @ tw).relu().sum().backward()
    assert_close(fx.grad, tx.grad.numpy(), rtol=1e-4, atol=1e-4)
    assert_close(fw.grad, tw.grad.numpy(), rtol=1e-4, atol=1e-4)


A = rng.random((3, 4)) + 0.5
B = rng.random(4) + 0.5
CASES: list[tuple[str, Callable[..., Any], tuple[np.ndarray, ...]]] = [
    ("broadcast mul", lambda p, q: p * q, (A, B)),
    ("div", lambda p, q: p / q, (A, B)),
    ("pow", lambda p, q: p ** q, (A, B)),
    ("matmul 2x1", lambda p, q: p @ q, (A, B)),
    ("matmul 2x2", lambda p, q: p @ q.T, (A, A)),
    ("batched matmul", lambda p, q: p.reshape(3, 2, 2) @ q.reshape(2, 2), (A, B)),
    ("reductions", lambda p: p.mean(1) * p.sum(0, keepdim=True).sum(), (A,)),
    ("max dim", lambda p: p.max(1).values, (A,)),
    ("amax", lambda p: p.amax(0), (A,)),
    ("getitem adv dup", lambda p: p[[0, 0, 2]][:, 1:], (A,)),
    ("getitem mask", lambda p: p[p > 1.0], (A,)),
    ("cat", lambda p, q: ("cat", p, q), (A, B)),
    ("stack", lambda p: ("stack", p), (A,)),
    ("where", lambda p: ("where", p), (A,)),
    ("chain", lambda p: (p.sigmoid() * p.tanh()).log().exp().sqrt(), (A,)),
    ("relu", lambda p: (p - 1).relu(), (A,)),
    ("views", lambda p: p.permute(1, 0).unsqueeze(0).expand(2, 4, 3).flatten(), (A,)),
    ("scalars", lambda p: 2 ** p - 3 / p + p ** 2 * 0.5, (A,)),
    ("maximum ties", lambda p, q: ("maximum", p, q), (A, A)),
]


def _resolve(fn: Callable[..., Any], lib: Any) -> Callable[..., Any]:
    def run(*xs: Any) -> Any:
        r = fn(*xs)
        if not isinstance(r, tuple):
            return r
        kind, *args = r
        if kind == "cat":
            return lib.cat([args[0], args[1].reshape(1, 4)], 0) * 2
        if kind == "stack":
            return lib.stack([args[0], args[0] * 2], 1).exp()
        if kind == "where":
            return lib.where(args[0] > 1, args[0] * args[0], args[0])
        return lib.maximum(args[0], args[1])
    return run


@pytest.mark.parametrize("name, fn, arrays", CASES, ids=[c[0] for c in CASES])
def test_gradients_match_torch(name: str, fn: Callable[..., Any], arrays: tuple[np.ndarray, ...]) -> None:
    both(_resolve(fn, ferro), _resolve(fn, torch), *arrays)


def _sample(name: str) -> tuple[list[Any], Callable[..., Any]]:
    """float64 inputs and a call for the ops the conformance database does not sample."""
    x = ferro.tensor(rng.random((2, 3)) + 0.5, dtype=ferro.float64, requires_grad=True)
    y = ferro.tensor(rng.random((3,)) + 0.6, dtype=ferro.float64, requires_grad=True)
    calls: dict[str, tuple[list[Any], Callable[..., Any]]] = {
        "reshape": ([x], lambda a: a.reshape(3, 2)), "view": ([x], lambda a: a.view(6)),
        "permute": ([x], lambda a: a.permute(1, 0)), "expand": ([y], lambda a: a.expand(2, 3)),
        "contiguous": ([x], lambda a: a.T.contiguous()), "clone": ([x], lambda a: a.clone()),
        "cat": ([x, y], lambda a, b: ferro.cat([a, b.unsqueeze(0)])),
        "stack": ([x], lambda a: ferro.stack([a, a * 2])),
        "getitem": ([x], lambda a: a[[1, 1, 0], 1:]),
        "index_put": ([x, y], lambda a, b: a.index_put((ferro.tensor([1]),), b, accumulate=True)),
        "cast": ([x], lambda a: a.to(ferro.float32).to(ferro.float64)),
    }
    return calls[name]


# The other ops are checked by the conformance suite (ferro.testing.conformance), from its op database.
MOVEMENT = ["reshape", "view", "permute", "expand", "contiguous", "clone", "cat", "stack", "getitem", "index_put",
            "cast"]


def test_movement_ops_are_those_outside_the_database() -> None:
    assert set(MOVEMENT) <= set(NOT_SAMPLED)


@pytest.mark.parametrize("name", MOVEMENT)
def test_gradcheck_ops_outside_the_op_database(name: str) -> None:
    inputs, fn = _sample(name)
    # cast goes through float32, whose rounding swamps a float64-sized step
    eps, tol = (1e-3, 1e-3) if name == "cast" else (1e-6, 1e-5)
    assert gradcheck(fn, inputs, eps=eps, atol=tol, rtol=1e-4)


@pytest.mark.parametrize("name", ["reshape", "permute", "getitem", "expand", "cat"])
def test_gradgradcheck_movement(name: str) -> None:
    inputs, fn = _sample(name)
    assert gradgradcheck(lambda *xs: fn(*xs) ** 2, inputs, eps=1e-6, atol=1e-4, rtol=1e-3)


def test_gradcheck_can_fail() -> None:
    class Wrong(ferro.autograd.Function):
        @staticmethod
        def forward(ctx: Any, x: ferro.Tensor) -> ferro.Tensor:
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx: Any, g: ferro.Tensor) -> ferro.Tensor:
            (x,) = ctx.saved_tensors
            return 3 * x * g  # wrong on purpose: d(x^2)/dx is 2x

    x = ferro.tensor([1.0, 2.0], dtype=ferro.float64, requires_grad=True)
    with pytest.raises(AssertionError, match="Jacobian mismatch"):
        gradcheck(Wrong.apply, [x])


def test_double_backward_values() -> None:
    p = ferro.tensor([1.0, 2.0, 3.0], dtype=ferro.float64, requires_grad=True)
    (g,) = ferro.autograd.grad((p ** 3).sum(), p, create_graph=True)
    assert g.requires_grad
    (gg,) = ferro.autograd.grad(g.sum(), p)
    assert_close(g.detach(), 3 * np.array([1.0, 2.0, 3.0]) ** 2)
    assert_close(gg, 6 * np.array([1.0, 2.0, 3.0]))


def test_backward_options() -> None:
    x = ferro.tensor([1.0, 2.0], requires_grad=True)
    y = (x * x).sum()
    y.backward(retain_graph=True)
    y.backward()
    assert x.grad.tolist() == [4.0, 8.0], "gradients accumulate into leaves"
    with pytest.raises(RuntimeError, match="second time"):
        y.backward()
    z = x * 3
    with pytest.raises(RuntimeError, match="scalar outputs"):
        z.backward()
    x.grad = None
    z.backward(ferro.tensor([1.0, -1.0]))
    assert x.grad.tolist() == [3.0, -3.0]
    with pytest.raises(RuntimeError, match="does not require grad"):
        ferro.ones(2).sum().backward()


def test_autograd_grad() -> None:
    x = ferro.tensor([1.0, 2.0], requires_grad=True)
    w = ferro.tensor([3.0, 4.0], requires_grad=True)
    u = ferro.ones(2, requires_grad=True)
    h = x * w
    gx, gh, gu = ferro.autograd.grad((h * h).sum(), [x, h, u], allow_unused=True)
    assert gx.tolist() == [18.0, 64.0] and gh.tolist() == [6.0, 16.0] and gu is None
    assert x.grad is None, "autograd.grad does not touch .grad"
    with pytest.raises(RuntimeError, match="not have been used"):
        ferro.autograd.grad((x * 2).sum(), [x, u])


def test_grad_dtype_and_shape_follow_the_input() -> None:
    h = ferro.tensor([1.0, 2.0], dtype=ferro.float16, requires_grad=True)
    f = ferro.ones(3, 2, requires_grad=True)
    (h * f).sum().backward()
    assert h.grad.dtype is ferro.float16 and h.grad.shape == (2,) and h.grad.tolist() == [3.0, 3.0]


def test_modes() -> None:
    x = ferro.ones(2, requires_grad=True)
    with ferro.no_grad():
        assert not (x * 2).requires_grad
        with ferro.enable_grad():
            assert (x * 2).requires_grad
    assert (x * 2).requires_grad

    @ferro.no_grad()
    def f(t: ferro.Tensor) -> ferro.Tensor:
        return t * 2
    assert not f(x).requires_grad and ferro.is_grad_enabled()
    ferro.set_grad_enabled(False)
    assert not ferro.is_grad_enabled()
    ferro.set_grad_enabled(True)
    with ferro.set_grad_enabled(False):
        assert not (x + 1).requires_grad
    assert ferro.is_grad_enabled()


def test_grad_mode_is_thread_local() -> None:
    x = ferro.ones(2, requires_grad=True)
    seen: list[bool] = []
    started, release = threading.Event(), threading.Event()

    def worker() -> None:
        with ferro.no_grad():
            started.set()
            release.wait(5)
            seen.append((x * 2).requires_grad)

    t = threading.Thread(target=worker)
    t.start()
    started.wait(5)
    main_records = (x * 2).requires_grad
    release.set()
    t.join()
    assert main_records and seen == [False]


def test_detach_requires_grad_and_leaf_rules() -> None:
    x = ferro.ones(2, requires_grad=True)
    y = x * 2
    d = y.detach()
    assert not d.requires_grad and d.grad_fn is None
    d[0] = 5.0
    assert y[0].item() == 5.0, "detach shares storage"
    assert not y.is_leaf and y.grad_fn.name == "mul" and repr(y.grad_fn) == "<MulBackward0>"
    assert y.grad_fn.next_functions[0][0] is x
    with pytest.raises(RuntimeError, match="leaf"):
        x.add_(1)
    with pytest.raises(RuntimeError, match="floating point"):
        ferro.ones(2, dtype=ferro.int64).requires_grad_()
    with pytest.raises(RuntimeError, match="leaf"):
        y.requires_grad_(False)
    with ferro.no_grad():
        x.add_(1)
    assert x.tolist() == [2.0, 2.0]
    y.detach_()
    assert y.grad_fn is None and not y.requires_grad


def test_hooks_and_retain_grad() -> None:
    x = ferro.tensor([1.0, 2.0], requires_grad=True)
    handle = x.register_hook(lambda g: g * 10)
    (x * x).sum().backward()
    assert x.grad.tolist() == [20.0, 40.0]
    handle.remove()
    x.grad = None
    q = x * 3
    q.retain_grad()
    q.register_hook(lambda g: g * 2)
    q.sum().backward()
    assert q.grad.tolist() == [2.0, 2.0] and x.grad.tolist() == [6.0, 6.0]
    with pytest.raises(RuntimeError, match="doesn't require gradient"):
        ferro.ones(2).register_hook(lambda g: g)


def test_version_counter_catches_in_place_changes_to_saved_tensors() -> None:
    x = ferro.tensor([1.0, 2.0], requires_grad=True)
    a = x * 1
    b = a * a  # saves a
    a.add_(1)
    with pytest.raises(RuntimeError, match=r"modified by an inplace operation.*version 1; expected version 0"):
        b.sum().backward()
    e = (x * 1).exp()  # saves its output
    e.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        e.sum().backward()


def test_in_place_on_non_leaf_gives_torch_gradients() -> None:
    def fn(lib: Any, p: Any) -> Any:
        q = p * 2
        q.add_(1)
        q.mul_(p)
        q[0] = p[1] * 3
        q.sub_(p.sin())
        return q

    a = rng.random((3, 4))
    both(lambda p: fn(ferro, p), lambda p: fn(torch, p), a)


def test_custom_function() -> None:
    class MulConst(ferro.autograd.Function):
        @staticmethod
        def forward(ctx: Any, x: ferro.Tensor, k: float) -> ferro.Tensor:
            ctx.save_for_backward(x)
            ctx.k = k
            assert ctx.needs_input_grad == (True, False)
            return x * k

        @staticmethod
        def backward(ctx: Any, g: ferro.Tensor) -> tuple[ferro.Tensor, None]:
            return g * ctx.k, None

    x = ferro.tensor([1.0, 2.0], requires_grad=True)
    y = MulConst.apply(x, 3.0)
    assert y.grad_fn is not None and "MulConst" in y.grad_fn.name
    (y * y).sum().backward()
    assert x.grad.tolist() == [18.0, 36.0]

    class Bad(ferro.autograd.Function):
        @staticmethod
        def forward(ctx: Any, x: ferro.Tensor) -> ferro.Tensor:
            return x * 2

        @staticmethod
        def backward(ctx: Any, g: ferro.Tensor) -> tuple[Any, Any]:
            return g, g

    with pytest.raises(RuntimeError, match="returned 2 gradients, expected 1"):
        Bad.apply(x).sum().backward()

    class Saves(ferro.autograd.Function):
        @staticmethod
        def forward(ctx: Any, x: ferro.Tensor) -> ferro.Tensor:
            ctx.save_for_backward(x)
            return x.clone()

        @staticmethod
        def backward(ctx: Any, g: ferro.Tensor) -> ferro.Tensor:
            return g * ctx.saved_tensors[0]

    h = x * 1
    out = Saves.apply(h)
    h.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.sum().backward()
