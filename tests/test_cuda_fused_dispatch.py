"""The fused-kernel path of composite ops, as the CUDA backend uses it, exercised on the CPU.

A backend whose table has a kernel by a composite op's name and its
``<name>_backward`` (the CUDA backend has them for activations, softmax,
layer_norm and cross_entropy) gets them run instead of the decomposition.
Here a plugin gives the cpu backend NumPy kernels with the CUDA launchers'
signatures (``docs/cuda.md``), counting their calls, in a fresh interpreter
(plugins register once per process). Checked: the fused kernels run (once
forward, once backward), values and gradients equal PyTorch's, double
backward goes through the decomposition and passes gradgradcheck, and
arguments a kernel does not take leave the op to its decomposition.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import pytest

from conftest import run_json

CALLS: dict[str, int] = {}


def _count(name: str, fn: Any) -> Any:
    def kernel(*args: Any, **kwargs: Any) -> Any:
        CALLS[name] = CALLS.get(name, 0) + 1
        return fn(*args, **kwargs)
    return kernel


def _sigmoid(x: Any) -> Any:
    return 1 / (1 + np.exp(-x))


def _softmax(x: Any, dim: int = -1) -> Any:
    e = np.exp(x - x.max(dim, keepdims=True))
    return e / e.sum(dim, keepdims=True)


def _ln_forward(x: Any, shape: Any, w: Any, b: Any, eps: float) -> Any:
    dims = tuple(range(x.ndim - len(shape), x.ndim))
    mean = x.mean(dims, keepdims=True)
    rstd = 1 / np.sqrt(((x - mean) ** 2).mean(dims, keepdims=True) + eps)
    y = (x - mean) * rstd
    y = y if w is None else y * w
    return (y if b is None else y + b), mean, rstd


def _ln_backward(g: Any, x: Any, shape: Any, w: Any, mean: Any, rstd: Any) -> Any:
    dims = tuple(range(x.ndim - len(shape), x.ndim))
    lead = tuple(range(x.ndim - len(shape)))
    xhat = (x - mean) * rstd
    gw = g if w is None else g * w
    dx = rstd * (gw - gw.mean(dims, keepdims=True) - xhat * (gw * xhat).mean(dims, keepdims=True))
    return dx, None if w is None else (g * xhat).sum(lead), g.sum(lead)


def _ce_forward(x: Any, t: Any, w: Any, ignore: int) -> Any:
    rows = np.moveaxis(x, 1, -1).reshape(-1, x.shape[1]) if x.ndim > 1 else x.reshape(1, -1)
    t = t.reshape(-1)
    lse = np.log(np.exp(rows - rows.max(1, keepdims=True)).sum(1)) + rows.max(1)
    safe = np.where(t == ignore, 0, t)
    roww = np.where(t == ignore, 0.0, 1.0 if w is None else w[safe]).astype(x.dtype)
    return roww * (lse - rows[np.arange(len(t)), safe]), lse, roww


def _ce_backward(g: Any, x: Any, t: Any, w: Any, lse: Any, ignore: int) -> Any:
    rows = np.moveaxis(x, 1, -1).reshape(-1, x.shape[1]) if x.ndim > 1 else x.reshape(1, -1)
    t = t.reshape(-1)
    safe = np.where(t == ignore, 0, t)
    roww = np.where(t == ignore, 0.0, 1.0 if w is None else w[safe])
    d = np.exp(rows - lse[:, None])
    d[np.arange(len(t)), safe] -= 1
    d = d * (g * roww)[:, None]
    if x.ndim == 1:
        return d.reshape(x.shape)
    return np.moveaxis(d.reshape((x.shape[0], *x.shape[2:], x.shape[1])), -1, 1)


KERNELS = {
    "silu": lambda x: x * _sigmoid(x),
    "silu_backward": lambda g, x: g * _sigmoid(x) * (1 + x * (1 - _sigmoid(x))),
    "softmax": _softmax,
    "softmax_backward": lambda g, y, dim=-1: y * (g - (g * y).sum(dim, keepdims=True)),
    "layer_norm_forward": _ln_forward, "layer_norm_backward": _ln_backward,
    "cross_entropy_forward": _ce_forward, "cross_entropy_backward": _ce_backward,
}


def register() -> None:
    """In the subprocess: give the cpu backend the counted NumPy kernels."""
    import ferro
    from ferro.backends import PLUGIN_API_VERSION, hookimpl

    class Fused:
        @hookimpl
        def ferro_plugin_api_version(self) -> int:
            return PLUGIN_API_VERSION

        @hookimpl
        def ferro_register_kernels(self, backend: Any) -> dict[str, Any] | None:
            if backend.name != "cpu":
                return None
            return {name: _count(name, fn) for name, fn in KERNELS.items()}

    ferro.backends.installed()
    assert ferro.backends.register_plugin(Fused(), "fused-numpy")


def scenario() -> dict[str, Any]:
    """In the subprocess: every check, with the call counts it produced."""
    import torch

    import ferro
    import ferro.nn.functional as F
    register()
    out: dict[str, Any] = {}
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 6))
    g = rng.standard_normal((4, 6))

    def grads(fn: Any, tfn: Any, *arrays: Any) -> tuple[float, float]:
        fx = [ferro.tensor(a, requires_grad=True) for a in arrays]
        tx = [torch.tensor(a, requires_grad=True) for a in arrays]
        fy, ty = fn(*fx), tfn(*tx)
        gy = rng.standard_normal(tuple(ty.shape))
        fy.backward(ferro.tensor(gy))
        ty.backward(torch.tensor(gy))
        value = float(np.abs(fy.detach().numpy() - ty.detach().numpy()).max())
        grad = max(float(np.abs(f.grad.numpy() - t.grad.numpy()).max()) for f, t in zip(fx, tx, strict=True))
        return value, grad

    CALLS.clear()
    out["silu"] = grads(F.silu, torch.nn.functional.silu, x)
    out["silu_calls"] = dict(CALLS)
    CALLS.clear()
    out["softmax"] = grads(lambda t: F.softmax(t, dim=0), lambda t: torch.softmax(t, 0), x)
    out["softmax_calls"] = dict(CALLS)
    CALLS.clear()
    w, b = rng.standard_normal(6), rng.standard_normal(6)
    out["layer_norm"] = grads(lambda t, w, b: F.layer_norm(t, (6,), w, b),
                              lambda t, w, b: torch.nn.functional.layer_norm(t, (6,), w, b), x, w, b)
    out["layer_norm_calls"] = dict(CALLS)
    target = np.array([1, -100, 5, 0])
    cw = rng.uniform(0.5, 2, 6)
    for reduction in ("mean", "sum", "none"):
        CALLS.clear()
        out[f"ce_{reduction}"] = grads(
            lambda t: F.cross_entropy(t, ferro.tensor(target), ferro.tensor(cw), reduction=reduction),
            lambda t: torch.nn.functional.cross_entropy(t, torch.tensor(target), torch.tensor(cw),
                                                        reduction=reduction), x)
        out[f"ce_{reduction}_calls"] = dict(CALLS)
    # No grad: only the forward kernel.
    CALLS.clear()
    with ferro.no_grad():
        F.silu(ferro.tensor(x, requires_grad=True))
    out["no_grad_calls"] = dict(CALLS)
    # Double backward: through the decomposition, exact.
    CALLS.clear()
    xs = ferro.tensor(x, requires_grad=True)
    out["gradgrad_silu"] = ferro.autograd.gradgradcheck(F.silu, [xs])
    out["gradgrad_softmax"] = ferro.autograd.gradgradcheck(lambda t: F.softmax(t, -1), [xs])
    out["gradgrad_calls"] = dict(CALLS)
    (d,) = ferro.autograd.grad([F.silu(xs).sum()], [xs], create_graph=True)
    (dd,) = ferro.autograd.grad([d.sum()], [xs])
    tx = torch.tensor(x, requires_grad=True)
    (td,) = torch.autograd.grad(torch.nn.functional.silu(tx).sum(), tx, create_graph=True)
    (tdd,) = torch.autograd.grad(td.sum(), tx)
    out["second_derivative"] = float(np.abs(dd.numpy() - tdd.numpy()).max())
    # What the kernels do not take: the decomposition, no kernel call.
    CALLS.clear()
    F.cross_entropy(ferro.tensor(x), ferro.tensor(target), label_smoothing=0.1)
    F.cross_entropy(ferro.tensor(x), ferro.tensor(_softmax(g)))  # probabilities as the target
    F.softmax(ferro.tensor(x.astype(np.int64)).float(), -1)  # float32 is taken: counted
    F.silu(ferro.tensor(x).to(ferro.complex128))  # complex: not taken
    out["declined_calls"] = dict(CALLS)
    return out


@pytest.fixture(scope="module")
def result() -> dict[str, Any]:
    here = os.path.dirname(os.path.abspath(__file__))
    return run_json(f"""
        import json, sys, warnings
        warnings.simplefilter('ignore')
        sys.path.insert(0, {here!r})
        import test_cuda_fused_dispatch as t
        print(json.dumps(t.scenario()))
    """)


@pytest.mark.parametrize("op", ["silu", "softmax", "layer_norm", "ce_mean", "ce_sum", "ce_none"])
def test_fused_values_and_gradients_match_torch(result: dict[str, Any], op: str) -> None:
    value, grad = result[op]
    assert value < 1e-12 and grad < 1e-12, (op, value, grad)


def test_each_fused_kernel_runs_once_forward_and_once_backward(result: dict[str, Any]) -> None:
    assert result["silu_calls"] == {"silu": 1, "silu_backward": 1}
    assert result["softmax_calls"] == {"softmax": 1, "softmax_backward": 1}
    assert result["layer_norm_calls"] == {"layer_norm_forward": 1, "layer_norm_backward": 1}
    for r in ("mean", "sum", "none"):
        assert result[f"ce_{r}_calls"] == {"cross_entropy_forward": 1, "cross_entropy_backward": 1}, r
    assert result["no_grad_calls"] == {"silu": 1}


def test_double_backward_goes_through_the_decomposition(result: dict[str, Any]) -> None:
    assert result["gradgrad_silu"] is True and result["gradgrad_softmax"] is True
    assert result["second_derivative"] < 1e-12
    calls = result["gradgrad_calls"]
    assert calls["silu"] > 0 and calls["softmax"] > 0, "the forward kernels ran"
    assert "silu_backward" not in calls and "softmax_backward" not in calls, "create_graph: no backward kernel"


def test_arguments_the_kernels_do_not_take_run_the_decomposition(result: dict[str, Any]) -> None:
    # label smoothing and probability targets: no cross_entropy kernel; log_softmax has none here either.
    assert result["declined_calls"] == {"softmax": 1}
