"""The cpu backend's accumulating index_put over rows (an embedding's backward) against torch, in both of its
ways of summing repeated rows: passes over the k-th repeats (rows repeated a few times) and one reduceat."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

import ferro
import ferro.nn.functional as F

from conftest import count_calls

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(0)


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, int]]:
    yield count_calls(monkeypatch, ferro.tensor([0.0])._device, ["index_put"])


@pytest.mark.parametrize("rows,shape", [(50, (6, 7)), (1000, (35, 20)), (3, (40,)), (2, (9, 2))],
                         ids=["few repeats", "language model", "many repeats", "one row twice each"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_embedding_gradient_matches_torch(calls: dict[str, int], rows: int, shape: tuple[int, ...],
                                          dtype: str) -> None:
    w = RNG.standard_normal((rows, 4)).astype(dtype)
    idx = RNG.integers(0, rows, shape)
    g = RNG.standard_normal((*shape, 4)).astype(dtype)
    fw, tw = ferro.tensor(w, requires_grad=True), torch.tensor(w, requires_grad=True)
    F.embedding(ferro.tensor(idx), fw).backward(ferro.tensor(g))
    torch.nn.functional.embedding(torch.tensor(idx), tw).backward(torch.tensor(g))
    tol = 1e-5 if dtype == "float32" else 1e-12
    np.testing.assert_allclose(fw.grad.numpy(), tw.grad.numpy(), rtol=tol, atol=tol)
    assert calls["index_put"] == 1


@pytest.mark.parametrize("repeats", [1, 3, 8, 9, 30])
def test_accumulating_index_put_with_negative_rows(repeats: int) -> None:
    """Negative indices count from the end; each row's sum over its repeats is exact in float64."""
    x = RNG.standard_normal((5, 3))
    idx = np.concatenate([RNG.permutation(np.arange(-5, 5))[:4]] * repeats)
    v = RNG.standard_normal((idx.size, 3))
    got = ferro.tensor(x).index_put_((ferro.tensor(idx),), ferro.tensor(v), accumulate=True)
    expected = torch.tensor(x).index_put_((torch.tensor(idx),), torch.tensor(v), accumulate=True)
    np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-12, atol=1e-12)
