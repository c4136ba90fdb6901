"""``axis=`` / ``keepdims=`` wherever an op takes ``dim`` / ``keepdim``, as PyTorch accepts them, on every device."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import ferro
from ferro._ops import REGISTRY

#: op -> whether it takes keepdim too; reductions and ops along a dimension, compared with torch
OPS = {"sum": True, "mean": True, "std": True, "var": True, "amax": True, "amin": True, "argmax": True,
       "logsumexp": True, "prod": True, "nansum": True, "softmax": False, "log_softmax": False, "cumsum": False}


@pytest.mark.parametrize("name", sorted(OPS))
def test_numpy_keywords_match_torch(name: str, dev: str) -> None:
    a = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
    kw = {"keepdims": True} if OPS[name] else {}
    got = getattr(ferro.tensor(a, device=dev), name)(axis=1, **kw)
    want = getattr(torch.tensor(a), name)(axis=1, **kw)
    assert tuple(got.shape) == tuple(want.shape)
    np.testing.assert_allclose(got.cpu().numpy(), want.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(getattr(ferro, name)(ferro.tensor(a, device=dev), axis=0).cpu().numpy(),
                               getattr(torch, name)(torch.tensor(a), axis=0).numpy(), rtol=1e-5, atol=1e-6)


def test_both_names_at_once_are_refused_naming_the_op() -> None:
    x = ferro.ones(2, 3)
    with pytest.raises(TypeError, match=r"mean\(\): got 'dim' and its alias 'axis'"):
        x.mean(dim=0, axis=1)


def test_ops_without_dim_do_not_take_axis() -> None:
    assert "exp" in REGISTRY
    with pytest.raises(TypeError):
        ferro.exp(ferro.ones(2), axis=0)


@pytest.mark.parametrize("name, kw", [("max", {"axis": 1, "keepdims": True}), ("min", {"axis": 0}),
                                      ("squeeze", {"axis": 0}), ("unsqueeze", {"axis": 1})])
def test_numpy_keywords_of_the_functions_that_are_not_op_entries(name: str, kw: dict, dev: str) -> None:
    a = np.random.default_rng(1).standard_normal((1, 3)).astype(np.float32)
    got = getattr(ferro.tensor(a, device=dev), name)(**kw)
    want = getattr(torch.tensor(a), name)(**kw)
    if isinstance(want, tuple):
        np.testing.assert_array_equal(got.indices.cpu().numpy(), want.indices.numpy())
        got, want = got.values, want.values
    assert tuple(got.shape) == tuple(want.shape)
    np.testing.assert_array_equal(got.cpu().numpy(), want.numpy())
