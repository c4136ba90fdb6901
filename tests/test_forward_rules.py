"""The op records' forward-mode rules (``OpDef.jvp``), checked by central finite differences in float64."""

from __future__ import annotations

import numpy as np
import pytest

import ferro
from ferro._core.node import OUT
from ferro._core.records import REGISTRY

#: Domains where each op is smooth (away from kinks, poles and branch cuts).
_DOMAIN = {"acosh": (1.5, 3.0), "log": (0.5, 3.0), "log2": (0.5, 3.0), "log10": (0.5, 3.0), "sqrt": (0.5, 3.0),
           "log1p": (0.5, 3.0), "asin": (-0.8, 0.8), "acos": (-0.8, 0.8), "atanh": (-0.8, 0.8), "rsqrt": (0.5, 3.0),
           "reciprocal": (0.5, 3.0), "lgamma": (0.5, 3.0), "digamma": (0.5, 3.0), "erfinv": (-0.8, 0.8),
           "tan": (-1.0, 1.0), "pow": (0.5, 2.0), "div": (0.5, 2.0), "remainder": (0.6, 0.9),
           "floor_divide": (0.6, 0.9)}
_OPS = sorted(n for n, op in REGISTRY.items() if op.jvp is not None)


def test_elementwise_ops_have_forward_rules():
    assert len(_OPS) >= 50 and {"exp", "mul", "pow", "atan2", "sigmoid"} <= set(_OPS)


@pytest.mark.parametrize("name", _OPS)
def test_forward_rule_matches_finite_differences(name):
    op = REGISTRY[name]
    rng = np.random.default_rng(0)
    lo, hi = _DOMAIN.get(name, (-2.0, 2.0))
    arity = 2 if op.kind == "binary" else 1
    xs = [rng.uniform(lo, hi, 5) for _ in range(arity)]
    if name in ("maximum", "minimum"):  # keep away from ties
        xs[1] = xs[0] + np.where(rng.random(5) > 0.5, 0.5, -0.5)
    ts = [rng.uniform(-1, 1, 5) for _ in range(arity)]
    f = op.fn
    args = [ferro.tensor(x, dtype=ferro.float64) for x in xs]
    out = f(*args)
    saved = tuple(out if s is OUT else args[s] for s in op.saves)
    h = 1e-6
    for i, rule in enumerate(op.jvp):
        if rule is None:
            continue
        tangent = rule(ferro.tensor(ts[i], dtype=ferro.float64), *saved)
        plus = [ferro.tensor(x + h * ts[i] if j == i else x, dtype=ferro.float64) for j, x in enumerate(xs)]
        minus = [ferro.tensor(x - h * ts[i] if j == i else x, dtype=ferro.float64) for j, x in enumerate(xs)]
        numeric = (f(*plus).numpy().astype(float) - f(*minus).numpy().astype(float)) / (2 * h)
        np.testing.assert_allclose(np.broadcast_to(tangent.numpy(), numeric.shape), numeric, rtol=1e-5, atol=1e-6,
                                   err_msg=f"{name}: the forward rule of input {i}")
