"""The CPU backend's planned ``where`` (``ferro_cpu._fusion_into``): a captured where whose result lives inside the
step writes its selection into its planned buffer (in place over the chosen operand where the planner gives it
that operand's buffer), bitwise eager's where (signed zeros, NaN, infinities included), and runs the kernel itself
for an operand not laid out as captured."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import ferro


def _where_calls(fn: Any) -> list[Any]:
    return [c for e in fn.cache.values() for g in e.graphs for c in g.calls()
            if c.name == "where" and "_where_into" in getattr(c.kernel, "__qualname__", "")]


def _planned(fn: Any) -> list[Any]:
    return [c for e in fn.cache.values() for g in e.graphs for c in g.calls()
            if c.args and isinstance(c.args[0], np.ndarray) and isinstance(c.outs, int)]


FORMS = {
    "x dies here": lambda c, a, b: ferro.where(c, a * 2.0, b),  # in place over x's buffer
    "y dies here": lambda c, a, b: ferro.where(c, b, a * 2.0),  # in place over y's buffer
    "scalar y": lambda c, a, b: ferro.where(c, a * 2.0, 0.0),
    "broadcast x": lambda c, a, b: ferro.where(c, b[0], a * 2.0),
}


@pytest.mark.parametrize("form", sorted(FORMS))
@pytest.mark.parametrize("dtype", [ferro.float32, ferro.float64])
def test_planned_where_is_eager_where(form: str, dtype: Any) -> None:
    sel = FORMS[form]

    def f(a: ferro.Tensor, b: ferro.Tensor) -> ferro.Tensor:
        return sel(a > 0, a, b) * 3.0  # the where's result lives inside the step: planned

    g = ferro.compile(f)
    rng = np.random.default_rng(0)
    special = np.array([0.0, -0.0, np.nan, np.inf, -np.inf, 1e-310, -1e-310, 3.0])
    for i in range(5):
        a, b = rng.standard_normal((4, 8)), rng.standard_normal((4, 8))
        if i >= 3:
            a[1], b[2] = special, special[::-1]
        at, bt = ferro.tensor(a, dtype=dtype), ferro.tensor(b, dtype=dtype)
        got, expected = g(at, bt).numpy(), f(at, bt).numpy()
        np.testing.assert_array_equal(got, expected)
        assert np.array_equal(np.signbit(got), np.signbit(expected))
    assert g.captures == 1 and len(_where_calls(g)) == 1  # captured once, replayed three times
    if form.endswith("dies here"):  # written in place over the operand that dies there
        (entry,) = g.cache.values()
        buffers = {c.outs: c.args[0] for c in entry.graphs[0].calls() if c in _planned(g)}
        (call,) = _where_calls(g)
        operand = call.args[2 if form.startswith("x") else 3]
        assert buffers[operand.n] is call.args[0]


def test_planned_where_takes_a_transposed_operand() -> None:
    def f(a: ferro.Tensor, b: ferro.Tensor) -> ferro.Tensor:
        return ferro.where(a > 0, a * 2.0, b) * 3.0

    g = ferro.compile(f)
    a, b = ferro.randn(6, 6), ferro.randn(6, 6)
    for _ in range(3):
        g(a, b)
    (call,) = _where_calls(g)
    rng = np.random.default_rng(1)
    x, y = rng.standard_normal((2, 6, 6)).astype(np.float32)
    c = x > 0
    buf = np.empty((6, 6), np.float32)
    np.testing.assert_array_equal(call.kernel(buf, c.T, x, y), np.where(c.T, x, y))  # not row-major: the kernel
    np.testing.assert_array_equal(call.kernel(buf, c, x, y), np.where(c, x, y))
    x2 = x.copy()
    np.testing.assert_array_equal(call.kernel(x2, c, x2, y), np.where(c, x, y))  # in place over x
