"""Autograd semantics, checked against PyTorch on the same data.

backward and autograd.grad (gradient=, retain_graph, create_graph, allow_unused,
non-leaf inputs), accumulation, grad modes (thread-local), detach and
requires_grad, retain_grad and hooks, node names, the version counter, in-place
ops on leaves, non-leaves and views, broadcasting and dtypes of gradients.
Custom Functions are in test_function.py, gradcheck over the op registry in
test_autograd_ops.py.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import ferro
from ferro.testing import assert_close

torch = pytest.importorskip("torch")
rng = np.random.default_rng(2)


def leaves(lib: Any, *arrays: np.ndarray) -> list[Any]:
    """``arrays`` as float64 leaves that require grad, in ``lib`` (ferro or torch)."""
    return [lib.tensor(a, dtype=lib.float64, requires_grad=True) for a in arrays]


def grads_of(lib: Any, fn: Callable[..., Any], arrays: tuple[np.ndarray, ...], seed: int = 0) -> tuple[Any, list[Any]]:
    """Run ``fn(lib, *leaves)``, backpropagate a fixed random gradient, return (output, leaves' grads) as NumPy."""
    xs = leaves(lib, *arrays)
    out = fn(lib, *xs)
    g = np.random.default_rng(seed).standard_normal(tuple(out.shape))
    out.backward(lib.tensor(g, dtype=out.dtype))
    return np.asarray(out.detach()), [None if x.grad is None else np.asarray(x.grad) for x in xs]


def assert_like_torch(fn: Callable[..., Any], *arrays: np.ndarray) -> None:
    """``fn`` gives the same output and gradients in ferro as in torch."""
    out, got = grads_of(ferro, fn, arrays)
    ref, want = grads_of(torch, fn, arrays)
    np.testing.assert_allclose(out, ref, rtol=1e-10, atol=1e-12)
    for i, (g, w) in enumerate(zip(got, want)):
        assert (g is None) == (w is None), f"input {i}: ferro grad {g}, torch grad {w}"
        if g is not None:
            np.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-12, err_msg=f"gradient of input {i}")


# -- the issue's example -----------------------------------------------------------------------------------


def test_the_issue_example_matches_torch() -> None:
    ferro.manual_seed(0)
    x = ferro.randn(64, 32, requires_grad=True)
    w = ferro.randn(32, 10, requires_grad=True)
    (x @ w).relu().sum().backward()
    tx = torch.tensor(x.detach().numpy(), requires_grad=True)
    tw = torch.tensor(w.detach().numpy(), requires_grad=True)
    (tx @ tw).relu().sum().backward()
    assert x.grad.shape == (64, 32) and w.grad.shape == (32, 10) and x.grad.dtype is ferro.float32
    assert_close(x.grad, tx.grad.numpy(), rtol=1e-5, atol=1e-5)
    assert_close(w.grad, tw.grad.numpy(), rtol=1e-5, atol=1e-5)


# -- gradients of expressions, against torch ----------------------------------------------------------------

A = rng.random((3, 4)) + 0.5
B = rng.random(4) + 0.5
C = rng.random((2, 1, 4)) + 0.5
EXPRESSIONS: dict[str, tuple[Callable[..., Any], tuple[np.ndarray, ...]]] = {
    "broadcast mul": (lambda L, p, q: p * q, (A, B)),
    "broadcast 3d": (lambda L, p, q: (p + q) * p, (A, C)),
    "broadcast scalar tensor": (lambda L, p, q: p * q.sum(), (A, B)),
    "div": (lambda L, p, q: p / q, (A, B)),
    "pow": (lambda L, p, q: p ** q, (A, B)),
    "reflected ops": (lambda L, p, q: 2 ** p - 3 / p + 1 - p, (A, B)),
    "matmul 2x1": (lambda L, p, q: p @ q, (A, B)),
    "matmul 2x2": (lambda L, p, q: p @ p.T, (A, B)),
    "matmul 1x2": (lambda L, p, q: q @ p.T, (A, B)),
    "matmul 1x1": (lambda L, p, q: q @ q, (A, B)),
    "batched matmul": (lambda L, p, q: p.reshape(3, 2, 2) @ q.reshape(2, 2), (A, B)),
    "reductions": (lambda L, p, q: p.mean(1) * p.sum(0, keepdim=True).sum(), (A, B)),
    "max over dim": (lambda L, p, q: p.max(1).values, (A, B)),
    "amax": (lambda L, p, q: p.amax(0), (A, B)),
    "advanced index with repeats": (lambda L, p, q: p[[0, 0, 2]][:, 1:], (A, B)),
    "boolean mask": (lambda L, p, q: p[p > 1.0], (A, B)),
    "cat": (lambda L, p, q: L.cat([p, q.reshape(1, 4)], 0) * 2, (A, B)),
    "stack": (lambda L, p, q: L.stack([p, p * 2], 1).exp(), (A, B)),
    "where": (lambda L, p, q: L.where(p > 1, p * p, q), (A, B)),
    "chain": (lambda L, p, q: (p.sigmoid() * p.tanh()).log().exp().sqrt(), (A, B)),
    "relu": (lambda L, p, q: (p - 1).relu(), (A, B)),
    "views": (lambda L, p, q: p.permute(1, 0).unsqueeze(0).expand(2, 4, 3).flatten(), (A, B)),
    "maximum with ties": (lambda L, p, q: L.maximum(p, p.detach()), (A, B)),
    "a tensor used many times": (lambda L, p, q: p * p * p + p.exp() * q, (A, B)),
    "softmax": (lambda L, p, q: L.softmax(p, 1) * q, (A, B)),
}


@pytest.mark.parametrize("name", list(EXPRESSIONS))
def test_gradients_match_torch(name: str) -> None:
    fn, arrays = EXPRESSIONS[name]
    assert_like_torch(fn, *arrays)


@pytest.mark.parametrize("shape_x, shape_y", [((3, 4), (4,)), ((3, 1), (1, 4)), ((2, 1, 4), (3, 1)), ((), (2, 3)),
                                              ((5,), ())])
def test_broadcast_gradients_reduce_to_the_input_shapes(shape_x: tuple[int, ...], shape_y: tuple[int, ...]) -> None:
    assert_like_torch(lambda L, p, q: p * q + q, rng.random(shape_x), rng.random(shape_y))
    _, grads = grads_of(ferro, lambda L, p, q: p * q, (rng.random(shape_x), rng.random(shape_y)))
    assert [g.shape for g in grads] == [shape_x, shape_y]


@pytest.mark.parametrize("dx, dy", [("float16", "float32"), ("float32", "float64"), ("bfloat16", "float32"),
                                    ("float64", "float16")])
def test_gradient_dtype_follows_each_input(dx: str, dy: str) -> None:
    x = ferro.tensor([1.0, 2.0], dtype=getattr(ferro, dx), requires_grad=True)
    y = ferro.ones(3, 2, dtype=getattr(ferro, dy), requires_grad=True)
    (x * y).sum().backward()
    assert x.grad.dtype is x.dtype and y.grad.dtype is y.dtype
    assert x.grad.shape == (2,) and x.grad.tolist() == [3.0, 3.0] and y.grad.tolist() == [[1.0, 2.0]] * 3


def test_an_int_tensor_in_the_graph_gets_no_gradient() -> None:
    x = ferro.tensor([1.0, 2.0], requires_grad=True)
    n = ferro.tensor([3, 4])
    (x * n).sum().backward()
    assert x.grad.tolist() == [3.0, 4.0] and n.grad is None and not n.requires_grad


# -- backward options ----------------------------------------------------------------------------------------


def test_backward_with_gradient_argument() -> None:
    x = ferro.tensor([1.0, 2.0, 3.0], requires_grad=True)
    (x * x).backward(gradient=ferro.tensor([1.0, 0.5, -1.0]))
    assert x.grad.tolist() == [2.0, 2.0, -6.0]
    with pytest.raises(RuntimeError, match=r"grad can be implicitly created only for scalar outputs.*\[3\]"):
        (x * 3).backward()
    with pytest.raises(RuntimeError, match=r"Mismatch in shape.*\[2\].*\[3\]"):
        (x * 3).backward(ferro.ones(2))
    with pytest.raises(RuntimeError, match="does not require grad"):
        ferro.ones(2).sum().backward()


def test_a_second_backward_needs_retain_graph() -> None:
    x = ferro.tensor([1.0, 2.0], requires_grad=True)
    y = (x * x).sum()
    y.backward(retain_graph=True)
    y.backward()
    assert x.grad.tolist() == [4.0, 8.0], "gradients accumulate into leaves"
    with pytest.raises(RuntimeError, match=r"backward through the graph a second time.*retain_graph=True"):
        y.backward()
    z = (x * x).sum()
    ferro.autograd.grad(z, x)
    with pytest.raises(RuntimeError, match="second time"):
        ferro.autograd.grad(z, x)


def test_a_graph_that_saved_nothing_can_run_twice_as_in_torch() -> None:
    for lib in (ferro, torch):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y = (x + 1).reshape(2, 1).expand(2, 2).sum()
        y.backward()
        y.backward()
        assert x.grad.tolist() == [4.0, 4.0], lib.__name__


def test_gradients_accumulate_across_backward_calls() -> None:
    x = ferro.tensor([1.0, 2.0], requires_grad=True)
    (x * 3).sum().backward()
    (x * x).sum().backward()
    assert x.grad.tolist() == [5.0, 7.0]
    x.grad = None
    (x * 3).sum().backward()
    assert x.grad.tolist() == [3.0, 3.0]


def test_leaf_grads_are_owned_not_aliases() -> None:
    """A .grad never shares storage with the user's gradient, another leaf's grad or a read-only broadcast."""
    a, b = ferro.ones(2, requires_grad=True), ferro.ones(2, requires_grad=True)
    g = ferro.tensor([1.0, 2.0])
    (a + b).backward(g)
    a.grad.mul_(10)
    assert b.grad.tolist() == [1.0, 2.0] and g.tolist() == [1.0, 2.0]
    c = ferro.ones(3, requires_grad=True)
    c.sum().backward()  # the gradient is an expanded (stride 0) view of a scalar
    c.grad.zero_()
    c.grad += 1
    assert c.grad.tolist() == [1.0, 1.0, 1.0]


# -- create_graph and double backward -------------------------------------------------------------------------

X = rng.random((3, 4)) + 0.5
W = rng.random((4, 2)) + 0.5
SECOND: dict[str, Callable[..., Any]] = {
    "x**3": lambda L, x, w: x ** 3,
    "sin": lambda L, x, w: x.sin(),
    "tanh": lambda L, x, w: x.tanh(),
    "sigmoid": lambda L, x, w: x.sigmoid(),
    "exp": lambda L, x, w: x.exp(),
    "log": lambda L, x, w: x.log(),
    "mul": lambda L, x, w: x * x.flip(0),
    "div": lambda L, x, w: x / (x.flip(1) + 1),
    "matmul": lambda L, x, w: (x @ w) ** 2,
    "sum": lambda L, x, w: x.sum(1) ** 2,
    "mean": lambda L, x, w: x.mean(0) ** 3,
    "pow x**x": lambda L, x, w: x ** x,
    "amax": lambda L, x, w: x.amax(1) ** 2,
}


@pytest.mark.parametrize("name", list(SECOND))
def test_double_backward_matches_torch(name: str) -> None:
    fn = SECOND[name]
    results = []
    for lib in (ferro, torch):
        x, w = leaves(lib, X, W)
        out = fn(lib, x, w)
        (g,) = lib.autograd.grad(out, x, lib.ones(tuple(out.shape), dtype=lib.float64), create_graph=True)
        assert g.requires_grad
        gg = lib.autograd.grad((g * g).sum(), [x, w], allow_unused=True)
        results.append([np.asarray(t.detach()) if t is not None else None for t in (g, *gg)])
    for got, want in zip(*results):
        assert (got is None) == (want is None)
        if got is not None:
            np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)


def test_double_backward_analytic_values() -> None:
    p = ferro.tensor([1.0, 2.0, 3.0], dtype=ferro.float64, requires_grad=True)
    (g,) = ferro.autograd.grad((p ** 3).sum(), p, create_graph=True)
    (gg,) = ferro.autograd.grad(g.sum(), p, create_graph=True)
    (ggg,) = ferro.autograd.grad(gg.sum(), p)
    assert g.tolist() == [3.0, 12.0, 27.0] and gg.tolist() == [6.0, 12.0, 18.0] and ggg.tolist() == [6.0] * 3
    s = ferro.tensor([0.5, 1.0], dtype=ferro.float64, requires_grad=True)
    (gs,) = ferro.autograd.grad(s.sin().sum(), s, create_graph=True)
    (ggs,) = ferro.autograd.grad(gs.sum(), s)
    assert_close(ggs, -np.sin([0.5, 1.0]))


def test_backward_with_create_graph_leaves_a_differentiable_grad() -> None:
    x = ferro.tensor([1.0, 2.0], dtype=ferro.float64, requires_grad=True)
    (x ** 3).sum().backward(create_graph=True)
    assert x.grad.requires_grad and x.grad.tolist() == [3.0, 12.0]
    (g2,) = ferro.autograd.grad(x.grad.sum(), x)
    assert g2.tolist() == [6.0, 12.0]


# -- autograd.grad ---------------------------------------------------------------------------------------------


def test_autograd_grad_non_leaf_inputs_and_allow_unused() -> None:
    x = ferro.tensor([1.0, 2.0], requires_grad=True)
    w = ferro.tensor([3.0, 4.0], requires_grad=True)
    u = ferro.ones(2, requires_grad=True)
    h = x * w
    gx, gh, gu = ferro.autograd.grad((h * h).sum(), [x, h, u], allow_unused=True)
    assert gx.tolist() == [18.0, 64.0] and gh.tolist() == [6.0, 16.0] and gu is None
    assert x.grad is None and w.grad is None, "autograd.grad does not touch .grad"
    with pytest.raises(RuntimeError, match=r"appears to not have been used in the graph.*allow_unused=True"):
        ferro.autograd.grad((x * 2).sum(), [x, u])
    with pytest.raises(RuntimeError, match="does not require grad"):
        ferro.autograd.grad((x * 2).sum(), [ferro.ones(2)])
    with pytest.raises(RuntimeError, match="non-empty inputs"):
        ferro.autograd.grad((x * 2).sum(), [])


def test_autograd_grad_grad_outputs_and_several_outputs() -> None:
    x = ferro.tensor([1.0, 2.0], requires_grad=True)
    a, b = x * 2, x * x
    (g,) = ferro.autograd.grad([a, b], x, grad_outputs=[ferro.ones(2), ferro.tensor([1.0, -1.0])])
    assert g.tolist() == [4.0, -2.0]


def test_autograd_grad_runs_only_the_part_of_the_graph_it_needs() -> None:
    """Differentiating with respect to a non-leaf neither runs nor frees the graph behind it (as torch)."""
    w = ferro.tensor([1.0, 2.0], requires_grad=True)
    z = w * w
    calls: list[Any] = []
    w.register_hook(lambda g: calls.append(g))
    (gz,) = ferro.autograd.grad((z * 3).sum(), z)
    assert gz.tolist() == [3.0, 3.0] and calls == []
    (gw,) = ferro.autograd.grad((z * 3).sum(), w)  # z's node was not freed by the first call
    assert gw.tolist() == [6.0, 12.0] and len(calls) == 1


def test_backward_inputs_accumulates_only_into_those() -> None:
    x = ferro.tensor([1.0, 2.0], requires_grad=True)
    y = ferro.tensor([3.0, 4.0], requires_grad=True)
    (x * y).sum().backward(inputs=[x])
    assert x.grad.tolist() == [3.0, 4.0] and y.grad is None


# -- grad modes ----------------------------------------------------------------------------------------------

MODES: dict[str, tuple[Callable[[], Any], bool]] = {
    "no_grad": (ferro.no_grad, False),
    "enable_grad": (ferro.enable_grad, True),
    "set_grad_enabled(False)": (lambda: ferro.set_grad_enabled(False), False),
    "set_grad_enabled(True)": (lambda: ferro.set_grad_enabled(True), True),
}


@pytest.mark.parametrize("name", list(MODES))
def test_grad_modes_as_context_managers_and_decorators(name: str) -> None:
    make, records = MODES[name]
    x = ferro.ones(2, requires_grad=True)
    outer = [False, True] if records else [True]
    for start in outer:
        with ferro.set_grad_enabled(start):
            with make():
                assert (x * 2).requires_grad is records and ferro.is_grad_enabled() is records
            assert ferro.is_grad_enabled() is start, "the mode before the block comes back"

    @make()
    def f(t: ferro.Tensor) -> ferro.Tensor:
        return t * 2

    for start in outer:
        with ferro.set_grad_enabled(start):
            assert ferro.is_grad_enabled() is start, "decorating does not change the mode"
            assert f(x).requires_grad is records
            assert ferro.is_grad_enabled() is start
    assert ferro.is_grad_enabled()


def test_set_grad_enabled_as_a_function_and_exceptions_restore_the_mode() -> None:
    ferro.set_grad_enabled(False)
    assert not ferro.is_grad_enabled()
    ferro.set_grad_enabled(True)
    with pytest.raises(ValueError), ferro.no_grad():
        raise ValueError
    assert ferro.is_grad_enabled()


def test_grad_mode_is_thread_local() -> None:
    x = ferro.ones(2, requires_grad=True)
    seen: list[bool] = []
    inside, checked = threading.Event(), threading.Event()

    def worker() -> None:
        with ferro.no_grad():
            inside.set()
            checked.wait(5)
            seen.append((x * 2).requires_grad)
        seen.append(ferro.is_grad_enabled())

    t = threading.Thread(target=worker)
    t.start()
    assert inside.wait(5)
    main_records = (x * 2).requires_grad and ferro.is_grad_enabled()
    checked.set()
    t.join()
    assert main_records and seen == [False, True]

    def fresh_thread() -> None:
        seen.append(ferro.is_grad_enabled())

    with ferro.no_grad():
        t = threading.Thread(target=fresh_thread)
        t.start()
        t.join()
    assert seen[-1] is True, "a new thread starts with grad enabled, whatever its parent's mode"


# -- leaves, detach, requires_grad ----------------------------------------------------------------------------


def test_detach_and_detach_() -> None:
    x = ferro.ones(2, requires_grad=True)
    y = x * 2
    d = y.detach()
    assert not d.requires_grad and d.grad_fn is None and d.is_leaf
    d[0] = 5.0
    assert y[0].item() == 5.0, "detach shares storage"
    y.detach_()
    assert y.grad_fn is None and not y.requires_grad and y.is_leaf
    z = x.detach().requires_grad_()
    assert z.is_leaf and z.requires_grad and z.grad_fn is None


@pytest.mark.parametrize("dtype", ["int64", "int32", "uint8", "bool_"])
def test_requires_grad_needs_a_floating_dtype(dtype: str) -> None:
    with pytest.raises(RuntimeError, match=f"only Tensors of floating point and complex dtype.*{dtype.rstrip('_')}"):
        ferro.zeros(2, dtype=getattr(ferro, dtype)).requires_grad_()
    with pytest.raises(RuntimeError, match="floating point"):
        ferro.zeros(2, dtype=getattr(ferro, dtype), requires_grad=True)


def test_requires_grad_flags_of_non_leaves_are_fixed() -> None:
    x = ferro.ones(2, requires_grad=True)
    y = x * 2
    assert not y.is_leaf and x.is_leaf and ferro.ones(2).is_leaf and (ferro.ones(2) * 2).is_leaf
    with pytest.raises(RuntimeError, match="leaf variables"):
        y.requires_grad_(False)
    y.requires_grad_(True)  # a no-op, as in torch
    with ferro.no_grad():
        z = x * 2
    assert z.is_leaf and not z.requires_grad


# -- node names --------------------------------------------------------------------------------------------

NAMED: dict[str, Callable[..., Any]] = {
    "mul": lambda L, x: x * 2, "add": lambda L, x: x + x, "sub": lambda L, x: x - x, "div": lambda L, x: x / x,
    "neg": lambda L, x: -x, "exp": lambda L, x: x.exp(), "log": lambda L, x: x.log(), "sin": lambda L, x: x.sin(),
    "tanh": lambda L, x: x.tanh(), "sigmoid": lambda L, x: x.sigmoid(), "relu": lambda L, x: x.relu(),
    "abs": lambda L, x: x.abs(), "sqrt": lambda L, x: x.sqrt(), "pow": lambda L, x: x ** 2,
    "sum": lambda L, x: x.sum(), "mean": lambda L, x: x.mean(), "amax": lambda L, x: x.amax(0),
    "permute": lambda L, x: x.permute(1, 0), "expand": lambda L, x: x[:1].expand(3, 2),
    "clone": lambda L, x: x.clone(), "cat": lambda L, x: L.cat([x, x]), "stack": lambda L, x: L.stack([x, x]),
    "where": lambda L, x: L.where(x > 1, x, x), "maximum": lambda L, x: L.maximum(x, x),
}


@pytest.mark.parametrize("name", list(NAMED))
def test_grad_fn_names_are_torchs(name: str) -> None:
    a = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    y = NAMED[name](ferro, *leaves(ferro, a))
    t = NAMED[name](torch, *leaves(torch, a))
    assert repr(y.grad_fn) == f"<{type(t.grad_fn).__name__}>"


def test_next_functions_point_at_producers_and_leaves() -> None:
    x = ferro.ones(2, requires_grad=True)
    y = x * 2
    m = y * ferro.ones(2)
    assert m.grad_fn.next_functions == ((y.grad_fn, 0), (None, 0))
    assert y.grad_fn.next_functions == ((x, 0), (None, 0))


# -- retain_grad and hooks ---------------------------------------------------------------------------------


def test_retain_grad_on_a_non_leaf_keeps_and_accumulates() -> None:
    x = ferro.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    y.retain_grad()
    assert y.retains_grad and not x.retains_grad
    loss = (y * y).sum()
    loss.backward(retain_graph=True)
    assert y.grad.tolist() == [4.0, 8.0]
    loss.backward()
    assert y.grad.tolist() == [8.0, 16.0], "as torch: retained grads accumulate"
    q = x * 3
    (q * 2).sum().backward()
    assert q.grad is None, "without retain_grad a non-leaf keeps no grad"
    with pytest.raises(RuntimeError, match="requires_grad=False"):
        ferro.ones(2).retain_grad()


def test_hooks_on_leaves_and_non_leaves() -> None:
    x = ferro.tensor([1.0, 2.0], requires_grad=True)
    seen: list[list[float]] = []
    h1 = x.register_hook(lambda g: seen.append(g.tolist()))
    h2 = x.register_hook(lambda g: g * 10)
    ((x * 2).sum() + (x * x).sum()).backward()
    assert seen == [[4.0, 6.0]], "a leaf's hook runs once, on its total gradient"
    assert x.grad.tolist() == [40.0, 60.0]
    h1.remove()
    h2.remove()
    h2.remove()  # removing twice is harmless
    x.grad = None
    q = x * 3
    q.retain_grad()
    hq = q.register_hook(lambda g: g * 2)
    q.sum().backward()
    assert q.grad.tolist() == [2.0, 2.0] and x.grad.tolist() == [6.0, 6.0]
    hq.remove()
    x.grad = None
    q2 = x * 3
    q2.register_hook(lambda g: g * 100).remove()
    q2.sum().backward()
    assert x.grad.tolist() == [3.0, 3.0]
    with pytest.raises(RuntimeError, match="doesn't require gradient"):
        ferro.ones(2).register_hook(lambda g: g)


def test_hooks_run_in_autograd_grad_too() -> None:
    for lib in (ferro, torch):
        w = lib.tensor([1.0, 2.0], requires_grad=True)
        w.register_hook(lambda g: g * 0 + 7)
        z = w * 1
        z.register_hook(lambda g: g * 10)
        (gz,) = lib.autograd.grad((z * 3).sum(), z, retain_graph=True)
        (gw,) = lib.autograd.grad((z * 3).sum(), w)
        assert gz.tolist() == [30.0, 30.0] and gw.tolist() == [7.0, 7.0], lib.__name__


# -- the version counter -------------------------------------------------------------------------------------

SAVING: dict[str, Callable[[Any], Any]] = {
    "sin": lambda a: a.sin(), "cos": lambda a: a.cos(), "log": lambda a: a.log(), "log1p": lambda a: a.log1p(),
    "exp": lambda a: a.exp(), "sigmoid": lambda a: a.sigmoid(), "tanh": lambda a: a.tanh(),
    "sqrt": lambda a: a.sqrt(), "relu": lambda a: a.relu(), "abs": lambda a: a.abs(), "square": lambda a: a * a,
    "pow": lambda a: a ** 3, "matmul": lambda a: a @ a, "amax": lambda a: a.amax(), "sum": lambda a: a.sum(),
    "reshape": lambda a: a.reshape(4), "add": lambda a: a + 1, "clone": lambda a: a.clone(),
    "mul by a number": lambda a: a * 2, "div by a number": lambda a: a / 2,
}


def _outcome(lib: Any, fn: Callable[[Any], Any], modify: str) -> str:
    x = lib.tensor([[1.5, 2.0], [0.5, 3.0]], requires_grad=True)
    a = x * 1
    b = fn(a)
    with lib.no_grad():
        (a if modify == "input" else b).mul_(2)
    try:
        b.sum().backward()
    except RuntimeError as e:
        assert "modified by an inplace operation" in str(e)
        return "raises"
    return "runs"


@pytest.mark.parametrize("modify", ["input", "output"])
@pytest.mark.parametrize("name", list(SAVING))
def test_in_place_change_to_a_saved_tensor_raises_where_torch_does(name: str, modify: str) -> None:
    assert _outcome(ferro, SAVING[name], modify) == _outcome(torch, SAVING[name], modify)


def test_version_counter_message_and_views() -> None:
    x = ferro.tensor([1.0, 2.0], requires_grad=True)
    a = x * 1
    b = a * a  # saves a
    assert a.version == 0
    a.add_(1)
    assert a.version == 1
    with pytest.raises(RuntimeError, match=r"modified by an inplace operation.*version 1; expected version 0"):
        b.sum().backward()
    c = x * 1
    d = c.sin()  # saves c
    c[0:1].mul_(3)  # through a view: the same storage, the same counter
    assert c.version == 1
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        d.sum().backward()


def test_in_place_on_a_leaf_that_requires_grad_raises() -> None:
    x = ferro.tensor([1.0, 2.0, 3.0], requires_grad=True)
    for fn in (lambda: x.add_(1), lambda: x.mul_(x), lambda: x.__setitem__(0, 1.0), lambda: x.zero_(),
               lambda: x.copy_(ferro.ones(3)), lambda: x[:2].mul_(2), lambda: x.view(3).add_(1)):
        with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
            fn()
    assert x.tolist() == [1.0, 2.0, 3.0] and x.version == 0
    with ferro.no_grad():
        x.add_(1)
        x[:1].mul_(2)
    assert x.tolist() == [4.0, 3.0, 4.0] and x.requires_grad and x.is_leaf


# -- in-place ops on non-leaves and views: torch's gradients ------------------------------------------------

def _inplace_add(L: Any, p: Any) -> Any:
    y = p * 2
    y.add_(1)
    return y


def _inplace_mixed(L: Any, p: Any) -> Any:
    q = p * 2
    q.add_(1)
    q.mul_(p)
    q[0] = p[1] * 3
    q.sub_(p.sin())
    q += p
    return q


def _setitem_scalar(L: Any, p: Any) -> Any:
    q = p.exp()
    q = q * 1
    q[1, 2] = 0.0
    q[:, 0] = 1.5
    return q


def _setitem_into_a_constant(L: Any, p: Any) -> Any:
    buf = L.zeros(4, 4, dtype=L.float64)
    buf[1:, :] = p * 2
    buf[0] = p[0].sin()
    return buf


def _view_inplace(L: Any, p: Any) -> Any:
    y = p * 1
    y[0].mul_(3)
    y[:, 1:3].add_(p[:, :2] ** 2)
    return y


def _view_of_view(L: Any, p: Any) -> Any:
    y = p * 1
    v = y.view(12)
    v[2:5].mul_(v[5:8].clone())
    return y


def _transposed_view(L: Any, p: Any) -> Any:
    y = p.exp()
    y = y * 1
    y.T[0].mul_(2)
    return y.sum(0)


def _base_changed_then_view_used(L: Any, p: Any) -> Any:
    y = p * 1
    v = y[1:]
    y.mul_(2)
    return v * v


def _view_changed_then_other_view_used(L: Any, p: Any) -> Any:
    y = p * 1
    a, b = y[0], y[:, 0]
    a.mul_(5)
    return b.unsqueeze(1) * y


def _view_of_a_constant_gets_a_gradient_value(L: Any, p: Any) -> Any:
    buf = L.zeros(3, 4, dtype=L.float64)
    buf[1].copy_(p[0] * 2)
    buf.view(12)[:4].add_(p[1])
    return buf * 1


def _stale_view_as_root(L: Any, p: Any) -> Any:
    y = p * 1
    v = y[:2]
    y.add_(p)
    return v


def _fill_through_a_view(L: Any, p: Any) -> Any:
    y = p * 1
    y[1].zero_()
    y[2].fill_(3.0)
    return y * p


def _reshape_copy_is_not_a_view(L: Any, p: Any) -> Any:
    y = p * 1
    r = y.T.reshape(12)  # not a view: a copy
    r.mul_(2)
    return r + y.reshape(12)


INPLACE: list[Callable[..., Any]] = [_inplace_add, _inplace_mixed, _setitem_scalar, _setitem_into_a_constant,
                                     _view_inplace, _view_of_view, _transposed_view, _base_changed_then_view_used,
                                     _view_changed_then_other_view_used, _view_of_a_constant_gets_a_gradient_value,
                                     _stale_view_as_root, _fill_through_a_view, _reshape_copy_is_not_a_view]


@pytest.mark.parametrize("fn", INPLACE, ids=[f.__name__.strip("_") for f in INPLACE])
def test_in_place_on_non_leaves_and_views_gives_torchs_gradients(fn: Callable[..., Any]) -> None:
    assert_like_torch(fn, rng.random((3, 4)) + 0.5)


def test_in_place_through_a_view_updates_the_base_graph() -> None:
    x = ferro.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 1
    v = y[1:]
    v.mul_(10)
    assert y.tolist() == [1.0, 20.0, 30.0] and repr(y.grad_fn) == "<CopySlicesBackward0>"
    y.sum().backward()
    assert x.grad.tolist() == [1.0, 10.0, 10.0]


@pytest.mark.parametrize("op", ["add_", "mul_", "__setitem__"])
def test_a_failed_in_place_op_leaves_values_version_and_graph(op: str) -> None:
    x = ferro.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    node = y.grad_fn
    bad = ferro.ones(3, 2)
    with pytest.raises((ferro.errors.ShapeError, ValueError)):
        if op == "__setitem__":
            y[:] = bad
        else:
            getattr(y, op)(bad)
    assert y.tolist() == [2.0, 4.0] and y.version == 0 and y.grad_fn is node
    n = ferro.tensor([1, 2])
    with pytest.raises(ferro.errors.DTypeError, match=r"float32 can't be cast to the desired output type ferro\.int64"):
        n.add_(ferro.tensor([0.5, 0.5]))
    assert n.tolist() == [1, 2] and n.version == 0
