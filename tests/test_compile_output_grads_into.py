"""``ferro.compile`` on the gradients from an output (``ferro/_ops/output_grads.py``): a captured backward records
the backend's ``relu_backward`` / ``tanh_backward`` / ``sigmoid_backward`` kernel, as eager runs it (not the formula
in ops), and the CPU backend's planned buffers (``ferro_cpu._fusion_into``) write its result into a buffer planned
once: gradients bitwise eager's (signed zeros, NaN, infinities included)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import ferro

OPS = {"relu_backward": ferro.relu, "tanh_backward": ferro.tanh, "sigmoid_backward": ferro.sigmoid}


def _planned(fn: Any, name: str) -> list[Any]:
    return [c for e in fn.cache.values() for g in e.graphs for c in g.calls()
            if c.name == name and "_function_into" in getattr(c.kernel, "__qualname__", "")]


def _recorded(fn: Any) -> set[str]:
    return {c.name for e in fn.cache.values() for g in e.graphs for c in g.calls()}


@pytest.mark.parametrize("name", sorted(OPS))
@pytest.mark.parametrize("dtype", [ferro.float32, ferro.float64])
def test_planned_output_grad_is_eager(name: str, dtype: Any) -> None:
    act = OPS[name]
    rng = np.random.default_rng(0)
    w0 = rng.standard_normal((4, 8))
    c = ferro.tensor(rng.standard_normal((4, 8)), dtype=dtype)
    c_special = c.numpy().copy()
    c_special[0, :3] = [np.inf, -np.inf, np.nan]

    def step(w: ferro.Tensor, x: ferro.Tensor, c: ferro.Tensor) -> ferro.Tensor:
        loss = (act(x * w) * c).sum()  # the activation's gradient, times x, lives inside the step
        loss.backward()
        return loss

    w = ferro.tensor(w0, dtype=dtype, requires_grad=True)
    compiled = ferro.compile(lambda x, c: step(w, x, c))
    special = np.array([0.0, -0.0, np.nan, np.inf, -np.inf, 1e-310, -1e-310, 3.0])
    for i in range(6):
        x = rng.standard_normal((4, 8))
        if i >= 3:
            x[1] = special
        cc = ferro.tensor(c_special, dtype=dtype) if i == 5 else c
        xt = ferro.tensor(x, dtype=dtype)
        ref = ferro.tensor(w0, dtype=dtype, requires_grad=True)
        w.grad = None
        with np.errstate(all="ignore"):  # (inf * 0 in the product's gradient)
            compiled(xt, cc)
            step(ref, xt, cc)
        got, expected = w.grad.numpy(), ref.grad.numpy()
        np.testing.assert_array_equal(got, expected)
        assert np.array_equal(np.signbit(got), np.signbit(expected))
    assert name in _recorded(compiled)  # the kernel, not the formula's ops
    assert "where" not in _recorded(compiled)
    calls = [c for e in compiled.cache.values() for g in e.graphs for c in g.calls() if c.name == name]
    assert compiled.captures == 1 and len(calls) == 1  # captured once, replayed four times
    assert len(_planned(compiled, name)) == 1


@pytest.mark.parametrize("name", sorted(OPS))
def test_into_runs_the_kernel_where_it_does_not_fit(name: str) -> None:
    kernel = ferro.device("cpu")._kernels[name]
    rng = np.random.default_rng(2)
    g, y = rng.standard_normal((3, 5)).astype(np.float32), rng.random((3, 5)).astype(np.float32)
    np.testing.assert_array_equal(kernel.into(g, y, out=np.empty((3, 5), np.float32)), kernel(g, y))
    buf = np.empty((3, 5), np.float64)  # another dtype than the operands': the kernel's own result
    assert kernel.into(g, y, out=buf).dtype == np.float32
    h = y.astype(np.float16)
    np.testing.assert_array_equal(kernel.into(g.astype(np.float16), h, out=np.empty((3, 5), np.float16)),
                                  kernel(g.astype(np.float16), h))
