"""ferro-cpu's relu kernel (ferro_cpu/_backend.py) against torch and against NumPy's ``maximum(x, 0)``.

The kernel's calls on the CPU device are counted, so a path that skips it fails the test. Values are
compared bit for bit: with NumPy's ``maximum(x, 0)`` (the kernel's formula: relu(-0.0) is +0.0) and with
torch's relu up to the sign of a zero (torch keeps -0.0), NaN, infinities, 0-d, empty and strided inputs
included.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

import ferro
import ferro.nn.functional as F

from conftest import count_calls

torch = pytest.importorskip("torch")


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, int]]:
    """Counts of the relu kernel's calls on the cpu device during the test."""
    yield count_calls(monkeypatch, ferro.tensor([0.0])._device, ("relu",))


def _inputs(dtype: str) -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    full = (rng.standard_normal((6, 5, 7)) * 50).astype(dtype)
    if np.dtype(dtype).kind == "f":
        full.flat[:8] = [0.0, -0.0, np.nan, -np.nan, np.inf, -np.inf, 1e-30, -1e-30]
    return [full, full[:, ::2, 1:].transpose(2, 0, 1), full[0, 0, :0], full[1, 2, 3].copy().reshape(())]


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64", "int8", "uint8", "int32", "int64"])
def test_values_match_numpy_and_torch(calls: dict[str, int], dtype: str) -> None:
    np_dtype = "float32" if dtype == "bfloat16" else dtype
    inputs = _inputs(np_dtype)
    for x in inputs:
        t = torch.tensor(x).to(getattr(torch, dtype))
        got = F.relu(ferro.tensor(x, dtype=getattr(ferro, dtype)))
        want = torch.relu(t)
        assert got.dtype == getattr(ferro, dtype) and tuple(got.shape) == x.shape
        if dtype == "bfloat16":  # compared in float32, exactly (relu only selects)
            got, want = got.float(), want.float()
        g, w = got.numpy(), want.numpy()
        if dtype == "bfloat16":  # (NaN's payload differs between the two float32 conversions)
            np.testing.assert_array_equal(g, w)
        elif g.dtype.kind == "f":
            # +0.0 for either zero (the kernel's maximum gives +0.0 for -0.0, torch -0.0)
            np.testing.assert_array_equal((g + 0).view(f"u{g.itemsize}"), (w + 0).view(f"u{w.itemsize}"))
            ref = np.maximum(x, np.zeros((), x.dtype))
            np.testing.assert_array_equal(g.view(f"u{g.itemsize}"), ref.view(f"u{ref.itemsize}"))
        else:
            np.testing.assert_array_equal(g, w)
    assert calls == {"relu": len(inputs)}


def test_gradient_matches_torch(calls: dict[str, int]) -> None:
    """The gradient reads the kernel's output (``g * (y > 0)``): torch's up to the sign of a zero. (At a NaN
    input torch passes ``g`` through, ferro gives 0: the NaN is left out here.)"""
    x = _inputs("float64")[0]
    x[np.isnan(x)] = 0.0
    g = np.random.default_rng(1).standard_normal(x.shape)
    ours, theirs = ferro.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    F.relu(ours).backward(ferro.tensor(g))
    torch.relu(theirs).backward(torch.tensor(g))
    np.testing.assert_array_equal((ours.grad.numpy() + 0).view("u8"), (theirs.grad.numpy() + 0).view("u8"))
    assert calls == {"relu": 1}
