"""The gradients of relu, tanh and sigmoid by one kernel from the output (ferro/_ops/output_grads.py,
ferro_cpu/_output_grads.py), and the broadcast of sum / mean gradients (ferro/_ops/reduction.py), against torch.

The kernels' calls on the CPU device are counted, so a silent fall back to the formulas in ops fails the test;
NaN, infinities and signed zeros are compared bit for bit with torch's own backward kernels.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

import ferro

from conftest import count_calls

torch = pytest.importorskip("torch")

NAMES = ("relu_backward", "tanh_backward", "sigmoid_backward")
OPS = ("relu", "tanh", "sigmoid")
#: ferro's op -> torch's backward kernel from the output
TORCH_BACKWARD = {"relu": lambda g, y: torch.ops.aten.threshold_backward(g, y, 0),
                  "tanh": torch.ops.aten.tanh_backward, "sigmoid": torch.ops.aten.sigmoid_backward}
EDGES = [np.nan, -0.0, 0.0, np.inf, -np.inf, 1e-30, -1e-30, 25.0, -25.0]


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, int]]:
    """Counts of the backward kernels' calls on the cpu device during the test."""
    yield count_calls(monkeypatch, ferro.tensor([0.0])._device, NAMES)


def _inputs(dtype: str) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    x = rng.standard_normal(60) * 3
    g = rng.standard_normal(60)
    x[:len(EDGES)] = EDGES
    g[len(EDGES):2 * len(EDGES)] = [np.inf, -np.inf, np.nan, -0.0, 0.0, np.inf, -np.inf, np.nan, -0.0]
    x[len(EDGES):2 * len(EDGES)] = [0.0, -1.0, -0.0, 0.0, -2.0, 30.0, -30.0, 0.5, -0.5]
    return x.reshape(6, 10), g.reshape(6, 10)


def _torch(a: np.ndarray, dtype: str) -> torch.Tensor:
    return torch.tensor(a, dtype=getattr(torch, dtype))


def _bits(t: torch.Tensor) -> np.ndarray:
    return t.detach().to(torch.float64).numpy()


#: how far tanh / sigmoid may be from torch's kernels (relu's selection is exact): torch rounds 16-bit steps one
#: by one (the kernel rounds 16-bit results once) and fuses tanh's 1 - y * y in float32/float64
RTOL = {"float16": 2e-3, "bfloat16": 1.6e-2, "float32": 1e-5, "float64": 1e-13}


def _same(got: np.ndarray, want: np.ndarray, rtol: float = 0.0) -> None:
    # (an absolute part too: where tanh saturates, 1 - y * y cancels and its rounding is relative to 1, the
    # gradients here being about 1)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol)  # NaN and infinities in the same places
    zeros = want == 0
    assert (np.signbit(got) == np.signbit(want))[zeros].all(), "signed zeros differ"
    assert (got[zeros] == 0).all()


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
@pytest.mark.parametrize("name", OPS)
def test_the_kernel_gives_torchs_backward(calls: dict[str, int], name: str, dtype: str) -> None:
    """The gradient is torch's backward kernel at ferro's own output (relu's bit for bit; NaN, inf, -0.0 in the
    same places)."""
    x, g = _inputs(dtype)
    ours = ferro.tensor(x, dtype=getattr(ferro, dtype), requires_grad=True)
    y = getattr(ferro, name)(ours)
    y.backward(ferro.tensor(g, dtype=getattr(ferro, dtype)))
    assert calls[f"{name}_backward"] == 1
    assert ours.grad.dtype == getattr(ferro, dtype)
    y_t = _torch(y.detach().to(ferro.float64).numpy(), dtype)
    want = TORCH_BACKWARD[name](_torch(g, dtype), y_t)
    _same(ours.grad.to(ferro.float64).numpy(), _bits(want), 0.0 if name == "relu" else RTOL[dtype])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", OPS)
def test_gradients_match_torchs_autograd(calls: dict[str, int], name: str, dtype: str) -> None:
    x, g = _inputs(dtype)
    ours, theirs = ferro.tensor(x, requires_grad=True), _torch(x, dtype).requires_grad_()
    if dtype == "float32":
        ours = ferro.tensor(x.astype(np.float32), requires_grad=True)
    getattr(ferro, name)(ours).backward(ferro.tensor(g, dtype=getattr(ferro, dtype)))
    getattr(torch, name)(theirs).backward(_torch(g, dtype))
    assert calls[f"{name}_backward"] == 1
    tol = 1e-6 if dtype == "float32" else 1e-14
    np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=tol, atol=tol)


@pytest.mark.parametrize("name", OPS)
def test_double_backward_runs_the_formulas(calls: dict[str, int], name: str) -> None:
    """create_graph=True: the formulas in ops (exact second derivatives), not the kernel."""
    x = np.linspace(-2.5, 2.5, 12)
    ours, theirs = ferro.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    (d,) = ferro.autograd.grad(getattr(ferro, name)(ours).sum(), ours, create_graph=True)
    (td,) = torch.autograd.grad(getattr(torch, name)(theirs).sum(), theirs, create_graph=True)
    np.testing.assert_allclose(d.detach().numpy(), td.detach().numpy(), rtol=1e-12, atol=1e-12)
    assert calls == dict.fromkeys(NAMES, 0)
    if name != "relu":  # relu's second derivative is zero and torch's graph ends there
        (d * d).sum().backward()
        (td * td).sum().backward()
        np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-12, atol=1e-12)


def test_complex_and_zero_dim(calls: dict[str, int]) -> None:
    """Complex tanh keeps its formula (conjugated derivative); a 0-d input takes the kernel."""
    z = np.array([0.3 + 0.4j, -1.0 + 0.2j])
    ours, theirs = ferro.tensor(z, requires_grad=True), torch.tensor(z, requires_grad=True)
    ferro.tanh(ours).abs().sum().backward()
    torch.tanh(theirs).abs().sum().backward()
    np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-12)
    assert calls["tanh_backward"] == 0
    s = ferro.tensor(0.7, dtype=ferro.float64, requires_grad=True)
    ferro.sigmoid(s).backward()
    sig = 1 / (1 + np.exp(-0.7))
    assert s.grad.item() == pytest.approx(sig * (1 - sig), rel=1e-15)
    assert calls["sigmoid_backward"] == 1


@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("dim", [None, 0, 1, (0, 2), -1])
@pytest.mark.parametrize("op", ["sum", "mean"])
def test_reduction_gradients_match_torch(op: str, dim: object, keepdim: bool) -> None:
    x = np.random.default_rng(1).standard_normal((3, 4, 5))
    ours, theirs = ferro.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    kw = {} if dim is None else {"dim": dim, "keepdim": keepdim}
    w = np.random.default_rng(2).standard_normal(tuple(getattr(torch, op)(theirs, **kw).shape))
    (getattr(ferro, op)(ours, **kw) * ferro.tensor(w)).sum().backward()
    (getattr(torch, op)(theirs, **kw) * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-15, atol=0)
    # the gradient stored is the leaf's own memory: writing to it changes no other element
    ours.grad[0, 0, 0] = 100.0
    assert (ours.grad.numpy() == 100.0).sum() == 1


@pytest.mark.parametrize("op", ["sum", "mean"])
def test_reduction_double_backward(op: str) -> None:
    x = np.random.default_rng(3).standard_normal((4, 3))
    ours, theirs = ferro.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    (d,) = ferro.autograd.grad(getattr(ferro, op)(ours * ours, dim=1).sum(), ours, create_graph=True)
    (td,) = torch.autograd.grad(getattr(torch, op)(theirs * theirs, dim=1).sum(), theirs, create_graph=True)
    (d * d).sum().backward()
    (td * td).sum().backward()
    np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-14)
