"""The CPU backend's planned relu (``ferro_cpu._fusion_into``): a captured relu whose result lives inside the step
writes the maximum with zeros made once per call site into its planned buffer, bitwise eager's relu (signed
zeros, NaN, infinities included), and runs the kernel itself for an input not laid out as captured."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import ferro


def _relu_calls(fn: Any) -> list[Any]:
    return [c for e in fn.cache.values() for g in e.graphs for c in g.calls()
            if c.name == "relu" and "_relu_into" in getattr(c.kernel, "__qualname__", "")]


@pytest.mark.parametrize("dtype", [ferro.float32, ferro.float64])
def test_planned_relu_is_eager_relu(dtype: Any) -> None:
    def f(x: ferro.Tensor) -> ferro.Tensor:
        return (x * 1.0).relu() * 2.0  # the product and the relu live inside the step: planned

    g = ferro.compile(f)
    rng = np.random.default_rng(0)
    special = np.array([0.0, -0.0, np.nan, np.inf, -np.inf, 1e-310, -1e-310, 3.0])
    for i in range(5):
        x = rng.standard_normal((4, 8))
        if i >= 3:
            x[1] = special
        xt = ferro.tensor(x, dtype=dtype)
        got, expected = g(xt).numpy(), f(xt).numpy()
        np.testing.assert_array_equal(got, expected)
        assert np.array_equal(np.signbit(got), np.signbit(expected))
    assert len(_relu_calls(g)) == 1  # captured once, replayed three times


def test_planned_relu_takes_a_transposed_input() -> None:
    w = ferro.randn(6, 6)

    def f(x: ferro.Tensor) -> ferro.Tensor:
        return ((x @ w).relu() + 1.0).sum(0)

    g = ferro.compile(f)
    x = ferro.randn(6, 6)
    for _ in range(3):
        g(x)
    assert _relu_calls(g)
    into = _relu_calls(g)[0].kernel
    a = np.random.default_rng(1).standard_normal((6, 6)).astype(np.float32)
    buf = np.empty((6, 6), np.float32)
    np.testing.assert_array_equal(into(buf, a.T), np.maximum(a.T, 0))  # not row-major: the kernel itself
    np.testing.assert_array_equal(into(buf, a), np.maximum(a, 0))
