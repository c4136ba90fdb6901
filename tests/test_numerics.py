"""Numerics at the edges, against PyTorch in float64: log_softmax and cross_entropy at large logits
(the decompositions and every fused kernel), 16-bit norms that need a wider accumulator, and special
functions at special values (inf, -inf, nan, signed zeros, poles), on cpu and opencl.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

import ferro
import ferro.nn.functional as F
from ferro._core.records import REGISTRY

torch = pytest.importorskip("torch")
TF = torch.nn.functional


#: Logit rows far from zero: float32 rounds a logsumexp there at about 1e-3.
LARGE = np.array([[-1e4] * 4, [1e4, 1e4 - 1, 1e4 - 2, 0.0], [3e4, 3e4 + 0.5, -3e4, 3e4 - 7.0],
                  [-5e3, -5e3 + 2.0, -5e3 + 1.0, -5e3 + 0.25]], dtype=np.float32)
TARGET = [1, 2, 0, 3]


def _ways(name: str) -> dict[str, Any]:
    """The op as users call it (a device's fused kernel where it has one) and its decomposition."""
    return {"op": getattr(F, name), "decomposition": REGISTRY[name].decomposition}


@pytest.mark.parametrize("way", ["op", "decomposition"])
def test_log_softmax_is_exact_at_large_logits(dev: str, way: str) -> None:
    got = _ways("log_softmax")[way](ferro.tensor(LARGE, device=dev), 1)
    want = TF.log_softmax(torch.tensor(LARGE, dtype=torch.float64), 1).numpy()
    np.testing.assert_allclose(np.array(got.tolist()), want, rtol=2e-7, atol=2e-6)
    assert got.tolist()[0][0] == pytest.approx(-math.log(4), abs=1e-6)  # was -1.38672


@pytest.mark.parametrize("way", ["op", "decomposition"])
@pytest.mark.parametrize("reduction", ["mean", "none"])
def test_cross_entropy_value_and_gradient_are_exact_at_large_logits(dev: str, way: str, reduction: str) -> None:
    x = ferro.tensor(LARGE, device=dev, requires_grad=True)
    loss = _ways("cross_entropy")[way](x, ferro.tensor(TARGET, device=dev), None, -100, reduction)
    loss.sum().backward()
    tx = torch.tensor(LARGE, dtype=torch.float64, requires_grad=True)
    tloss = TF.cross_entropy(tx, torch.tensor(TARGET), reduction=reduction)
    tloss.sum().backward()
    np.testing.assert_allclose(np.array(loss.tolist()), tloss.detach().numpy(), rtol=2e-7, atol=2e-6)
    # the softmax in the gradient: ~4e-4 relative off before, from exp(x - rounded logsumexp)
    np.testing.assert_allclose(np.array(x.grad.tolist()), tx.grad.numpy(), rtol=1e-6, atol=1e-8)


def test_the_fused_cross_entropy_kernels_run_here(dev: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The "op" cases above go through the device's fused kernels (cpu and opencl both have them)."""
    from conftest import count_calls
    d = ferro.ones(1, device=dev)._device
    counts = count_calls(monkeypatch, d, ["cross_entropy_forward", "cross_entropy_backward"])
    x = ferro.tensor(LARGE, device=dev, requires_grad=True)
    F.cross_entropy(x, ferro.tensor(TARGET, device=dev)).backward()
    assert counts == {"cross_entropy_forward": 1, "cross_entropy_backward": 1}


@pytest.mark.parametrize("data", [[-1000.0, 0.0, -1e4, 5.0, -math.inf, 7.0, 7.0, -3.0], [3e4, -3e4, 1.0],
                                  [-5.0] * 9, [2.5]])
def test_logcumsumexp_keeps_terms_far_below_the_maximum(dev: str, data: list[float]) -> None:
    x = ferro.tensor(data, device=dev, requires_grad=True)
    tx = torch.tensor(data, dtype=torch.float64, requires_grad=True)
    y, ty = ferro.logcumsumexp(x, 0), torch.logcumsumexp(tx, 0)
    np.testing.assert_allclose(np.array(y.tolist()), ty.detach().numpy(), rtol=1e-6)  # [-1000, 0]: was [-inf, 0]
    w = torch.arange(float(len(data)))
    (y * ferro.tensor(w.tolist(), device=dev)).sum().backward()
    (ty * w).sum().backward()
    np.testing.assert_allclose(np.array(x.grad.tolist()), tx.grad.numpy(), rtol=1e-5, atol=1e-6)


# -- 16-bit floats accumulate in float32 ---------------------------------------------------------------------

HALF_CASES = [
    ("vector_norm", lambda m, x: m.linalg.vector_norm(x)),
    ("vector_norm ord 3", lambda m, x: m.linalg.vector_norm(x, 3)),
    ("matrix_norm", lambda m, x: m.linalg.matrix_norm(x.reshape(1, 2))),
    ("norm", lambda m, x: m.norm(x)),
    ("var", lambda m, x: m.var(x)),
    ("std", lambda m, x: m.std(x - 3e4)),
]


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("label,fn", HALF_CASES, ids=[c[0] for c in HALF_CASES])
def test_16_bit_norms_accumulate_in_float32(dev: str, dtype: str, label: str, fn: Any) -> None:
    data = [3e4, 4e4]
    got = fn(ferro, ferro.tensor(data, dtype=getattr(ferro, dtype), device=dev))
    want = fn(torch, torch.tensor(data, dtype=getattr(torch, dtype)))
    assert got.dtype.name == dtype
    assert _same_float(got.item(), want.item()), (got.item(), want.item())


def _same_float(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or a == b or abs(a - b) <= 1e-2 * abs(b)


# -- special functions at special values ---------------------------------------------------------------------

SPECIAL = [math.inf, -math.inf, math.nan, 0.0, -0.0, -1.0, -2.0, -3.0, 1.0, 2.0, 0.5, -0.5, 1e-30, -1e-30,
           1e30, -1e30, 100.0, -100.5, 0.999, -0.999]
SPECIAL_OPS = ["lgamma", "digamma", "erfinv", "erf", "erfc", "expm1", "log1p", "exp", "log", "sqrt", "rsqrt",
               "tanh", "atanh", "asinh", "acosh", "asin", "acos", "atan", "trunc", "frac", "reciprocal",
               "sinh", "cosh", "exp2", "log2", "log10"]


def _agree(a: float, b: float, rtol: float) -> bool:
    """Equal, both NaN, or close; zeros and infinities must agree in sign."""
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    if a == 0 or b == 0 or math.isinf(a) or math.isinf(b):
        return a == b and math.copysign(1, a) == math.copysign(1, b)
    return abs(a - b) <= rtol * abs(b)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", SPECIAL_OPS)
def test_special_values_match_pytorch(dev: str, name: str, dtype: str) -> None:
    if not hasattr(torch, name) or not hasattr(ferro, name):
        pytest.fail(f"{name} is missing from torch or ferro")
    x = torch.tensor(SPECIAL, dtype=getattr(torch, dtype))
    want = getattr(torch, name)(x).tolist()
    got = getattr(ferro, name)(ferro.tensor(SPECIAL, dtype=getattr(ferro, dtype), device=dev)).tolist()
    rtol = 2e-5 if dtype == "float32" else 1e-10
    if name == "digamma":  # near its poles digamma loses digits in both libraries
        rtol = 1e-3 if dtype == "float32" else 1e-8
    bad = [(v, w, g) for v, w, g in zip(SPECIAL, want, got) if not _agree(g, w, rtol)]
    assert not bad, f"{name} ({dtype}): (input, torch, ferro) {bad}"
