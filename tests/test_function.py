"""Custom differentiable ops: ferro.autograd.Function, as torch.autograd.Function."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import ferro
from ferro.autograd import Function, gradcheck, gradgradcheck

torch = pytest.importorskip("torch")


class Cube(Function):
    """x**3 * k with a non-tensor argument k; backward in ferro ops, so it differentiates again."""

    @staticmethod
    def forward(ctx: Any, x: ferro.Tensor, k: float) -> ferro.Tensor:
        ctx.save_for_backward(x)
        ctx.k = k
        ctx.seen_needs = ctx.needs_input_grad
        return x ** 3 * k

    @staticmethod
    def backward(ctx: Any, g: ferro.Tensor) -> tuple[ferro.Tensor, None]:
        (x,) = ctx.saved_tensors
        return 3 * x ** 2 * g * ctx.k, None


class MulAdd(Function):
    """x * y + z: needs_input_grad says which gradients to compute."""

    calls: list[tuple[bool, ...]] = []

    @staticmethod
    def forward(ctx: Any, x: ferro.Tensor, y: ferro.Tensor, z: ferro.Tensor) -> ferro.Tensor:
        ctx.save_for_backward(x, y)
        return x * y + z

    @staticmethod
    def backward(ctx: Any, g: ferro.Tensor) -> tuple[Any, Any, Any]:
        x, y = ctx.saved_tensors
        MulAdd.calls.append(tuple(ctx.needs_input_grad))
        need = ctx.needs_input_grad
        return (g * y if need[0] else None), (g * x if need[1] else None), (g if need[2] else None)


def test_forward_backward_and_node() -> None:
    x = ferro.tensor([1.0, 2.0], requires_grad=True)
    y = Cube.apply(x, 2.0)
    assert y.tolist() == [2.0, 16.0] and y.requires_grad and not y.is_leaf
    assert repr(y.grad_fn) == "<CubeBackward0>" and y.grad_fn.next_functions == ((x, 0), (None, 0))
    y.sum().backward()
    assert x.grad.tolist() == [6.0, 24.0]


def test_forward_runs_without_recording_and_sees_needs_input_grad() -> None:
    seen: list[Any] = []

    class Probe(Function):
        @staticmethod
        def forward(ctx: Any, x: ferro.Tensor, n: int, w: ferro.Tensor) -> ferro.Tensor:
            seen.append(((x * 2).requires_grad, ferro.is_grad_enabled(), ctx.needs_input_grad))
            return x * w * n

        @staticmethod
        def backward(ctx: Any, g: ferro.Tensor) -> tuple[Any, ...]:
            return g, None, None

    out = Probe.apply(ferro.ones(2, requires_grad=True), 3, ferro.ones(2))
    assert seen == [(False, False, (True, False, False))] and out.requires_grad and ferro.is_grad_enabled()


def test_needs_input_grad_and_unneeded_gradients() -> None:
    x = ferro.tensor([1.0, 2.0], requires_grad=True)
    y = ferro.tensor([3.0, 4.0])
    z = ferro.tensor([5.0, 6.0], requires_grad=True)
    MulAdd.calls.clear()
    MulAdd.apply(x, y, z).sum().backward()
    assert MulAdd.calls == [(True, False, True)]
    assert x.grad.tolist() == [3.0, 4.0] and y.grad is None and z.grad.tolist() == [1.0, 1.0]


def test_no_graph_when_nothing_requires_grad_or_under_no_grad() -> None:
    x = ferro.tensor([1.0, 2.0], requires_grad=True)
    assert not Cube.apply(ferro.tensor([1.0, 2.0]), 1.0).requires_grad
    with ferro.no_grad():
        out = Cube.apply(x, 1.0)
    assert not out.requires_grad and out.grad_fn is None


@pytest.mark.parametrize("returned, message", [
    (lambda g: (g, g), "returned 2 gradients, expected 1"),
    (lambda g: (), "returned 0 gradients, expected 1"),
    (lambda g: g.sum(), r"invalid gradient at index 0 - got \[\] but expected shape compatible with \[2\]"),
    (lambda g: ferro.ones(3), r"invalid gradient at index 0 - got \[3\] but expected shape compatible with \[2\]"),
    (lambda g: 2.0, "returned a float as the gradient at index 0"),
])
def test_backward_returning_the_wrong_gradients_is_an_error(returned: Any, message: str) -> None:
    class Bad(Function):
        @staticmethod
        def forward(ctx: Any, x: ferro.Tensor) -> ferro.Tensor:
            return x * 2

        @staticmethod
        def backward(ctx: Any, g: ferro.Tensor) -> Any:
            return returned(g)

    x = ferro.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match=message):
        Bad.apply(x).sum().backward()


def test_a_broadcast_gradient_is_summed_back() -> None:
    class Spread(Function):
        @staticmethod
        def forward(ctx: Any, x: ferro.Tensor) -> ferro.Tensor:
            return x * 1

        @staticmethod
        def backward(ctx: Any, g: ferro.Tensor) -> ferro.Tensor:
            return g.expand(3, 2)  # the input's shape broadcast: summed back, as torch does

    x = ferro.ones(2, requires_grad=True)
    Spread.apply(x).sum().backward()
    assert x.grad.tolist() == [3.0, 3.0]


def test_in_place_change_to_a_saved_tensor_is_caught() -> None:
    x = ferro.tensor([1.0, 2.0], requires_grad=True)
    h = x * 1
    out = Cube.apply(h, 1.0)
    h.mul_(2)
    with pytest.raises(RuntimeError, match=r"modified by an inplace operation.*CubeBackward0.*version 1; expected "
                                           "version 0"):
        out.sum().backward()


def test_second_backward_needs_retain_graph_when_tensors_were_saved() -> None:
    x = ferro.tensor([1.0, 2.0], requires_grad=True)
    y = Cube.apply(x, 1.0).sum()
    y.backward(retain_graph=True)
    y.backward()
    assert x.grad.tolist() == [6.0, 24.0]
    with pytest.raises(RuntimeError, match="second time"):
        y.backward()


def test_double_backward_through_a_function() -> None:
    x = ferro.tensor([1.0, 2.0], dtype=ferro.float64, requires_grad=True)
    (g,) = ferro.autograd.grad(Cube.apply(x, 2.0).sum(), x, create_graph=True)
    (gg,) = ferro.autograd.grad(g.sum(), x)
    assert g.tolist() == [6.0, 24.0] and gg.tolist() == [12.0, 24.0]
    assert gradgradcheck(lambda t: Cube.apply(t, 0.5), [x])


class Split(Function):
    """Two outputs (and an int one): backward gets one gradient per output, zeros where none flowed."""

    @staticmethod
    def forward(ctx: Any, x: ferro.Tensor) -> tuple[ferro.Tensor, ferro.Tensor, ferro.Tensor]:
        ctx.save_for_backward(x)
        return x * 2, x.sum() * 3, x.argmax()

    @staticmethod
    def backward(ctx: Any, ga: ferro.Tensor, gb: ferro.Tensor, gi: Any) -> ferro.Tensor:
        assert gi is None
        return ga * 2 + gb * 3


class TSplit(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, x: Any) -> Any:
        return x * 2, x.sum() * 3

    @staticmethod
    def backward(ctx: Any, ga: Any, gb: Any) -> Any:
        return ga * 2 + gb * 3


@pytest.mark.parametrize("use", ["both", "first", "second"])
def test_several_outputs(use: str) -> None:
    def loss(a: Any, b: Any) -> Any:
        return {"both": (a * a).sum() + b, "first": (a * a).sum(), "second": b * b}[use]

    x = ferro.tensor([1.0, 2.0], requires_grad=True)
    a, b, i = Split.apply(x)
    assert a.grad_fn is not None and b.grad_fn is not None and i.grad_fn is None and i.dtype is ferro.int64
    loss(a, b).backward()
    tx = torch.tensor([1.0, 2.0], requires_grad=True)
    loss(*TSplit.apply(tx)).backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy())


class Seen(Function):
    """Two float outputs of different dtypes; backward records what it got, ``materialize`` as the ctx flag."""

    materialize = True
    got: list[Any] = []

    @staticmethod
    def forward(ctx: Any, x: ferro.Tensor) -> tuple[ferro.Tensor, ferro.Tensor]:
        ctx.set_materialize_grads(Seen.materialize)
        return x * 2, (x * 3).to(ferro.float64).reshape(1, -1)

    @staticmethod
    def backward(ctx: Any, ga: Any, gb: Any) -> Any:
        Seen.got.append((ga, gb))
        total = ga * 2 if ga is not None else None
        if gb is not None:
            part = gb.reshape(-1).to(ferro.float32) * 3
            total = part if total is None else total + part
        return total


class TSeen(torch.autograd.Function):
    materialize = True
    got: list[Any] = []

    @staticmethod
    def forward(ctx: Any, x: Any) -> Any:
        ctx.set_materialize_grads(TSeen.materialize)
        return x * 2, (x * 3).double().reshape(1, -1)

    @staticmethod
    def backward(ctx: Any, ga: Any, gb: Any) -> Any:
        TSeen.got.append((ga, gb))
        total = ga * 2 if ga is not None else None
        if gb is not None:
            part = gb.reshape(-1).float() * 3
            total = part if total is None else total + part
        return total


@pytest.mark.parametrize("materialize", [True, False])
@pytest.mark.parametrize("use", ["both", "first", "second", "twice"])
def test_several_outputs_each_gradient_as_its_output(materialize: bool, use: str) -> None:
    """Each output's gradient reaches backward as is (its shape and dtype, summed over its uses); an output
    without one gets zeros of its shape and dtype, or None under ``set_materialize_grads(False)``, as torch's."""
    def loss(a: Any, b: Any) -> Any:
        return {"both": (a * a).sum() + b.sum() * 5, "first": (a * a).sum(), "second": (b * b).sum(),
                "twice": (a * a).sum() + a.sum() + b.sum()}[use]

    Seen.materialize = TSeen.materialize = materialize
    Seen.got, TSeen.got = [], []
    x = ferro.tensor([1.0, -2.0], requires_grad=True)
    loss(*Seen.apply(x)).backward()
    tx = torch.tensor([1.0, -2.0], requires_grad=True)
    loss(*TSeen.apply(tx)).backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy())
    ((ga, gb),), ((ta, tb),) = Seen.got, TSeen.got
    for g, t in ((ga, ta), (gb, tb)):
        assert (g is None) == (t is None)
        if g is not None:
            assert tuple(g.shape) == tuple(t.shape) and str(g.dtype)[6:] == str(t.dtype)[6:]
            np.testing.assert_array_equal(g.numpy(), t.numpy())


def test_an_input_returned_as_is_still_goes_through_backward() -> None:
    class Scaled(Function):
        @staticmethod
        def forward(ctx: Any, x: ferro.Tensor) -> ferro.Tensor:
            return x

        @staticmethod
        def backward(ctx: Any, g: ferro.Tensor) -> ferro.Tensor:
            return g * 5

    x = ferro.tensor([1.0, 2.0], requires_grad=True)
    y = Scaled.apply(x)
    assert y is not x and x.grad_fn is None and x.is_leaf
    (g,) = ferro.autograd.grad(y.sum(), x)
    assert g.tolist() == [5.0, 5.0]


def test_a_function_whose_other_consumer_gives_no_gradient() -> None:
    """A None gradient on one edge into a Function's node must not stop the gradient of the others."""
    class Blocked(Function):
        @staticmethod
        def forward(ctx: Any, x: ferro.Tensor) -> ferro.Tensor:
            return x * 1

        @staticmethod
        def backward(ctx: Any, g: ferro.Tensor) -> None:
            return None

    x = ferro.tensor([1.0, 2.0], requires_grad=True)
    y = Cube.apply(x, 1.0)
    ((y * 3).sum() + Blocked.apply(y).sum()).backward()
    assert x.grad.tolist() == [9.0, 36.0]


def test_gradcheck_passes_a_right_function() -> None:
    x = ferro.tensor([0.5, 1.5, -2.0], dtype=ferro.float64, requires_grad=True)
    y = ferro.tensor([1.0, -1.0, 2.0], dtype=ferro.float64, requires_grad=True)
    z = ferro.tensor([0.3, 0.2, 0.1], dtype=ferro.float64, requires_grad=True)
    assert gradcheck(lambda a: Cube.apply(a, 1.5), [x])
    assert gradcheck(MulAdd.apply, [x, y, z])


@pytest.mark.parametrize("wrong", ["factor", "swapped", "missing"])
def test_gradcheck_fails_on_a_wrong_backward(wrong: str) -> None:
    class Wrong(Function):
        @staticmethod
        def forward(ctx: Any, x: ferro.Tensor, y: ferro.Tensor) -> ferro.Tensor:
            ctx.save_for_backward(x, y)
            return x * x * y

        @staticmethod
        def backward(ctx: Any, g: ferro.Tensor) -> tuple[Any, Any]:
            x, y = ctx.saved_tensors
            right = (2 * x * y * g, x * x * g)
            if wrong == "factor":
                return 3 * x * y * g, right[1]  # d(x^2 y)/dx is 2xy
            if wrong == "swapped":
                return right[1], right[0]
            return right[0], None

    x = ferro.tensor([1.0, 2.0], dtype=ferro.float64, requires_grad=True)
    y = ferro.tensor([3.0, -1.0], dtype=ferro.float64, requires_grad=True)
    with pytest.raises(AssertionError, match="Jacobian mismatch for input"):
        gradcheck(Wrong.apply, [x, y])
    assert gradcheck(Wrong.apply, [x, y], raise_exception=False) is False
