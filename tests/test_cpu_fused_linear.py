"""ferro-cpu's fused linear kernels (ferro_cpu/_linear.py) against torch, counting that they run (or do not)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import ferro
import ferro.nn.functional as F
from ferro.autograd import gradcheck, gradgradcheck
from ferro.errors import ShapeError

from conftest import count_calls

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(0)
NAMES = ("linear_forward", "linear_backward")
TOL = {"float32": {"rtol": 1e-5, "atol": 1e-5}, "float64": {"rtol": 1e-12, "atol": 1e-12}}


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, int]]:
    yield count_calls(monkeypatch, ferro.tensor([0.0])._device, NAMES)


def _both(*arrays: np.ndarray, grad: tuple[bool, ...] | None = None) -> tuple[list[Any], list[Any]]:
    grad = grad or (True,) * len(arrays)
    return ([ferro.tensor(a, requires_grad=g) for a, g in zip(arrays, grad)],
            [torch.tensor(a, requires_grad=g) for a, g in zip(arrays, grad)])


def _close(got: Any, expected: Any, dtype: str) -> None:
    g, e = got.detach().numpy(), expected.detach().numpy()
    assert g.dtype == np.dtype(dtype) and g.shape == e.shape, (g.dtype, g.shape, e.shape)
    np.testing.assert_allclose(g, e, **TOL[dtype])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("shape", [(7,), (6, 7), (4, 3, 7), (2, 2, 3, 7)], ids=["vector", "matrix", "3d", "4d"])
def test_matches_torch_and_runs_the_kernels(calls: dict[str, int], shape: tuple[int, ...], bias: bool,
                                           dtype: str) -> None:
    arrays = [RNG.standard_normal(s).astype(dtype) for s in (shape, (5, 7), (5,))][:3 if bias else 2]
    (fx, fw, *fb), (tx, tw, *tb) = _both(*arrays)
    got, expected = F.linear(fx, fw, *fb), _torch_linear(tx, tw, *tb)
    _close(got, expected, dtype)
    g = RNG.standard_normal(expected.shape).astype(dtype)
    got.backward(ferro.tensor(g))
    expected.backward(torch.tensor(g))
    for ours, theirs in zip((fx, fw, *fb), (tx, tw, *tb)):
        _close(ours.grad, theirs.grad, dtype)
    assert calls == {"linear_forward": 1, "linear_backward": 1}


def _torch_linear(*args: Any) -> Any:
    return torch.nn.functional.linear(*args)


@pytest.mark.parametrize("wanted", [(False, True, True), (True, False, False), (False, False, True)],
                         ids=["weights only", "input only", "bias only"])
def test_only_the_wanted_gradients(calls: dict[str, int], wanted: tuple[bool, ...]) -> None:
    arrays = [RNG.standard_normal(s) for s in ((3, 4, 6), (2, 6), (2,))]
    (fx, fw, fb), (tx, tw, tb) = _both(*arrays, grad=wanted)
    F.linear(fx, fw, fb).sum().backward()
    _torch_linear(tx, tw, tb).sum().backward()
    for ours, theirs, w in zip((fx, fw, fb), (tx, tw, tb), wanted):
        assert (ours.grad is None) == (not w)
        if w:
            _close(ours.grad, theirs.grad, "float64")
    assert calls == {"linear_forward": 1, "linear_backward": 1}


def test_strided_input_and_nn_linear(calls: dict[str, int]) -> None:
    """A transposed (non-contiguous) input, through nn.Linear, in a two-layer model with a loss."""
    x = RNG.standard_normal((6, 5, 4)).astype("float32")
    ours, theirs = ferro.nn.Linear(6, 3), torch.nn.Linear(6, 3)
    ours.load_state_dict({k: ferro.tensor(v.detach().numpy()) for k, v in theirs.state_dict().items()})
    (fx,), (tx,) = _both(x)
    got, expected = ours(fx.permute(2, 1, 0)), theirs(tx.permute(2, 1, 0))
    _close(got, expected, "float32")
    (got * got).sum().backward()
    (expected * expected).sum().backward()
    _close(fx.grad, tx.grad, "float32")
    _close(ours.weight.grad, theirs.weight.grad, "float32")
    _close(ours.bias.grad, theirs.bias.grad, "float32")
    assert calls == {"linear_forward": 1, "linear_backward": 1}


def test_first_and_second_derivatives(calls: dict[str, int]) -> None:
    """gradcheck on the kernels; the double backward goes through the decomposition, exact to any order."""
    x, w, b = (ferro.tensor(RNG.standard_normal(s), requires_grad=True) for s in ((3, 4), (2, 4), (2,)))
    assert gradcheck(F.linear, (x, w, b))
    assert calls["linear_forward"] >= 1 and calls["linear_backward"] >= 1
    assert gradgradcheck(lambda x, w, b: F.linear(x, w, b) ** 2, (x, w, b))


@pytest.mark.parametrize("half", ["float16", "bfloat16"])
def test_16_bit_linear_is_float32_rounded_once(calls: dict[str, int], half: str) -> None:
    """16-bit inputs (autocast's) run the fused kernels in float32 and round each result once."""
    dt = getattr(ferro, half)
    x, w, b = (ferro.tensor(RNG.standard_normal(s), dtype=dt, requires_grad=True) for s in ((3, 4), (2, 4), (2,)))
    y = F.linear(x, w, b)
    wide = [t.detach().float().requires_grad_(True) for t in (x, w, b)]
    y32 = F.linear(*wide)
    assert y.dtype is dt and np.array_equal(y.detach().float().numpy(), y32.detach().to(dt).float().numpy())
    g = ferro.tensor(RNG.standard_normal((3, 2)), dtype=dt)
    y.backward(g)
    y32.backward(g.float())
    for t, t32 in zip((x, w, b), wide, strict=True):
        assert t.grad.dtype is dt and np.array_equal(t.grad.float().numpy(), t32.grad.to(dt).float().numpy())
    expected = _torch_linear(*(torch.tensor(t.detach().float().numpy()).to(getattr(torch, half)) for t in (x, w, b)))
    np.testing.assert_allclose(y.detach().float().numpy(), expected.float().numpy(), rtol=1e-2, atol=1e-2)
    assert calls == {"linear_forward": 2, "linear_backward": 2}


def test_other_arguments_run_the_decomposition(calls: dict[str, int]) -> None:
    """A 2-D bias (broadcast by the decomposition's add)."""
    x, w = RNG.standard_normal((3, 4)), RNG.standard_normal((2, 4))
    b2 = RNG.standard_normal((3, 2))
    _close(F.linear(ferro.tensor(x), ferro.tensor(w), ferro.tensor(b2)),
           _torch_linear(torch.tensor(x), torch.tensor(w), torch.tensor(b2)), "float64")
    assert calls == {"linear_forward": 0, "linear_backward": 0}


def test_bad_shapes_raise_the_ops_error_and_record_nothing(calls: dict[str, int]) -> None:
    x = ferro.tensor(RNG.standard_normal((3, 4)), requires_grad=True)
    with pytest.raises(ShapeError, match=r"linear: input .* has 4 features"):
        F.linear(x, ferro.tensor(RNG.standard_normal((2, 5)), requires_grad=True))
    with pytest.raises(ShapeError, match="linear: bias should have 2 elements"):
        F.linear(x, ferro.tensor(RNG.standard_normal((2, 4))), ferro.tensor(RNG.standard_normal(3)))
    assert x.grad is None and x.grad_fn is None
    assert calls == {"linear_forward": 0, "linear_backward": 0}


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
def test_without_grad_the_front_runs_the_forward_kernel(calls: dict[str, int], dtype: str) -> None:
    """``linear`` with nothing to record (plain tensors, nn.Linear's Parameters under no_grad, no bias, a
    batch of matrices) runs the forward kernel from its front, with torch's values; what it does not take
    (a mismatched bias, keywords) still gives the op's answer or error."""
    fd, td = getattr(ferro, dtype), getattr(torch, dtype)
    tol = {"rtol": 1e-2, "atol": 1e-2} if dtype in ("float16", "bfloat16") else TOL[dtype]
    x, w, b = (RNG.standard_normal(s) for s in ((2, 5, 7), (4, 7), (4,)))
    fx, fw, fb = (ferro.tensor(a, dtype=fd) for a in (x, w, b))
    tx, tw, tb = (torch.tensor(a, dtype=td) for a in (x, w, b))
    for args, targs in [((fx, fw, fb), (tx, tw, tb)), ((fx[0], fw), (tx[0], tw)), ((fx, fw, None), (tx, tw, None))]:
        got, want = F.linear(*args), torch.nn.functional.linear(*targs)
        assert got.dtype == fd and not got.requires_grad
        np.testing.assert_allclose(got.double().numpy(), want.double().numpy(), **tol)
    assert calls["linear_forward"] == 3 and calls["linear_backward"] == 0
    layer = ferro.nn.Linear(7, 4, dtype=fd)
    with ferro.no_grad():
        got = layer(fx)
    want = torch.nn.functional.linear(tx, torch.tensor(layer.weight.detach().double().numpy(), dtype=td),
                                      torch.tensor(layer.bias.detach().double().numpy(), dtype=td))
    np.testing.assert_allclose(got.double().numpy(), want.double().numpy(), **tol)
    assert calls["linear_forward"] == 4 and got.grad_fn is None
    np.testing.assert_allclose(F.linear(fx, weight=fw, bias=fb).double().numpy(),
                               torch.nn.functional.linear(tx, tw, tb).double().numpy(), **tol)
    with pytest.raises(ShapeError, match="linear"):
        F.linear(fx, fw, ferro.ones(5, dtype=fd))
    with pytest.raises(TypeError, match="linear"):
        F.linear(fx, fw, fb, scale=2)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
@pytest.mark.parametrize("wanted", [(True, True, True), (False, True, True), (True, False, False)])
def test_with_grad_the_front_records_the_node(calls: dict[str, int], monkeypatch: pytest.MonkeyPatch,
                                              dtype: str, wanted: tuple[bool, ...]) -> None:
    """``linear`` with a node to record makes it in its front (not through the entry and ``fused.run``): the
    same one node as the entry's, with torch's values and gradients; a call it does not take (a 2-D bias) still
    goes through the entry."""
    from ferro._ops import fused
    entered = []
    real_run = fused.run
    monkeypatch.setattr(fused, "run", lambda *a: entered.append(1) or real_run(*a))
    fd, td = getattr(ferro, dtype), getattr(torch, dtype)
    tol = {"rtol": 1e-2, "atol": 1e-2} if dtype == "float16" else TOL[dtype]
    arrays = [RNG.standard_normal(s) for s in ((6, 7), (5, 7), (5,))]
    fs = [ferro.tensor(a, dtype=fd, requires_grad=g) for a, g in zip(arrays, wanted)]
    ts = [torch.tensor(a, dtype=td, requires_grad=g) for a, g in zip(arrays, wanted)]
    got, want = F.linear(*fs), torch.nn.functional.linear(*ts)
    assert got.requires_grad and got.grad_fn is not None and got.grad_fn.name == "linear" and not entered
    np.testing.assert_allclose(got.detach().double().numpy(), want.detach().double().numpy(), **tol)
    g = RNG.standard_normal((6, 5))
    got.backward(ferro.tensor(g, dtype=fd))
    want.backward(torch.tensor(g, dtype=td))
    for f, t in zip(fs, ts, strict=True):
        assert (f.grad is None) == (t.grad is None)
        if t.grad is not None:
            np.testing.assert_allclose(f.grad.double().numpy(), t.grad.double().numpy(), **tol)
    assert calls == {"linear_forward": 1, "linear_backward": 1}
    wide_bias = RNG.standard_normal((6, 5))
    got = F.linear(fs[0], fs[1], ferro.tensor(wide_bias, dtype=fd, requires_grad=True))
    assert entered == [1] and got.requires_grad
    want = torch.nn.functional.linear(ts[0], ts[1], torch.tensor(wide_bias, dtype=td))
    np.testing.assert_allclose(got.detach().double().numpy(), want.detach().double().numpy(), **tol)
