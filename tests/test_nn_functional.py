"""ferro.nn.functional against torch.nn.functional, with options the op database does not vary."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import ferro
import ferro.nn.functional as F

torch = pytest.importorskip("torch")
TF = torch.nn.functional
rng = np.random.default_rng(0)
X = rng.standard_normal((4, 5))
W = rng.standard_normal((3, 5))
TGT, TGT_IGN = np.array([0, 2, 1, 2]), np.array([0, -100, 1, 2])
PROBS = rng.dirichlet(np.ones(3), 4)
CW = np.array([0.2, 1.0, 3.0])
IMG = np.linspace(-1, 1, 24).reshape(2, 3, 2, 2)

CASES: dict[str, Callable[[Any, Any, Callable[[Any], Any]], Any]] = {
    "linear": lambda m, f, t: f.linear(t(X), t(W), t(W[:, 0])),
    "ce index weight ignore": lambda m, f, t: f.cross_entropy(t(X[:, :3]), t(TGT_IGN), weight=t(CW)),
    "ce smoothing": lambda m, f, t: f.cross_entropy(t(X[:, :3]), t(TGT_IGN), weight=t(CW), label_smoothing=0.1),
    "ce probabilities": lambda m, f, t: f.cross_entropy(t(X[:, :3]), t(PROBS), label_smoothing=0.2),
    "ce none": lambda m, f, t: f.cross_entropy(t(X[:, :3]), t(TGT), reduction="none"),
    "ce spatial": lambda m, f, t: f.cross_entropy(t(IMG), t(np.array([[[0, 1], [2, 0]], [[1, 1], [0, 2]]]))),
    "nll weight": lambda m, f, t: f.nll_loss(f.log_softmax(t(X[:, :3]), 1), t(TGT), weight=t(CW)),
    "bce logits pos_weight": lambda m, f, t: f.binary_cross_entropy_with_logits(
        t(X), t((X > 0) * 1.0), pos_weight=t(np.full(5, 2.0))),
    "kl log_target": lambda m, f, t: f.kl_div(f.log_softmax(t(X), 1), f.log_softmax(t(X[::-1].copy()), 1),
                                              reduction="sum", log_target=True),
    "layer_norm affine": lambda m, f, t: f.layer_norm(t(X), (5,), t(np.arange(5.0)), t(np.ones(5))),
    "batch_norm eval": lambda m, f, t: f.batch_norm(t(X), t(np.zeros(5)), t(np.ones(5) * 2), training=False),
    "group_norm affine": lambda m, f, t: f.group_norm(t(IMG.reshape(2, 3, 4)[:, :2]), 2, t(np.ones(2)),
                                                      t(np.zeros(2))),
    "sdpa causal": lambda m, f, t: f.scaled_dot_product_attention(t(X.reshape(1, 4, 5)), t(X[::-1].copy().reshape(
        1, 4, 5)), t(X.reshape(1, 4, 5)), is_causal=True),
    "sdpa bool mask": lambda m, f, t: f.scaled_dot_product_attention(t(X.reshape(1, 4, 5)), t(X.reshape(1, 4, 5)),
                                                                    t(X.reshape(1, 4, 5)),
                                                                    attn_mask=t(np.tril(np.ones((4, 4), bool)))),
    "embedding padding": lambda m, f, t: f.embedding(t(TGT), t(X), padding_idx=2),
    "gelu tanh": lambda m, f, t: f.gelu(t(X), approximate="tanh"),
    "softplus beta": lambda m, f, t: f.softplus(t(X), beta=2.0, threshold=1.0),
    "leaky slope": lambda m, f, t: f.leaky_relu(t(X), 0.2),
    "elu alpha": lambda m, f, t: f.elu(t(X), 0.5),
    "hardtanh range": lambda m, f, t: f.hardtanh(t(X), -0.5, 0.5),
    "pad replicate 2d": lambda m, f, t: f.pad(t(IMG), (1, 0, 0, 2), mode="replicate"),
}


@pytest.mark.parametrize("name", list(CASES))
def test_matches_torch_values_and_gradients(name: str) -> None:
    fn = CASES[name]
    leaves: list[Any] = []

    def make(lib: Any) -> Callable[[Any], Any]:
        def t(a: Any) -> Any:
            # the first floating argument is the input whose gradient is compared
            if isinstance(a, np.ndarray) and a.dtype.kind == "f" and not leaves:
                v = lib.tensor(a, requires_grad=True)
                leaves.append(v)
                return v
            return lib.tensor(a)
        return t

    got = fn(ferro, F, make(ferro))
    ferro_leaves = list(leaves)
    leaves.clear()
    ref = fn(torch, TF, make(torch))
    np.testing.assert_allclose(got.detach().numpy(), ref.detach().numpy(), rtol=1e-6, atol=1e-8)
    g = rng.standard_normal(tuple(ref.shape))
    got.backward(ferro.tensor(g))
    ref.backward(torch.tensor(g))
    for a, b in zip(ferro_leaves, leaves):
        if b.grad is not None:
            np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-6, atol=1e-8)


def test_batch_norm_updates_running_statistics_like_torch() -> None:
    rm, rv = ferro.zeros(5, dtype=ferro.float64), ferro.ones(5, dtype=ferro.float64)
    trm, trv = torch.zeros(5, dtype=torch.float64), torch.ones(5, dtype=torch.float64)
    for _ in range(3):
        F.batch_norm(ferro.tensor(X), rm, rv, training=True, momentum=0.2)
        TF.batch_norm(torch.tensor(X), trm, trv, training=True, momentum=0.2)
    np.testing.assert_allclose(rm.numpy(), trm.numpy())
    np.testing.assert_allclose(rv.numpy(), trv.numpy())


def test_dropout() -> None:
    ferro.manual_seed(0)
    x = ferro.ones(20000)
    y = F.dropout(x, 0.3)
    assert abs((y == 0).float().mean().item() - 0.3) < 0.02, "about p of the elements are dropped"
    assert abs(y.mean().item() - 1.0) < 0.03, "the rest are scaled by 1 / (1 - p)"
    np.testing.assert_allclose(np.unique(y.numpy()), [0.0, 1 / 0.7], rtol=1e-6)
    assert F.dropout(x, 0.3, training=False) is x
    ferro.manual_seed(0)
    assert (F.dropout(x, 0.3) == y).all().item(), "the same seed gives the same mask"
    c = F.dropout2d(ferro.ones(8, 16, 3, 3), 0.5)
    per_channel = c.reshape(8, 16, 9)
    assert ((per_channel == 0).all(-1) | (per_channel != 0).all(-1)).all().item(), "whole channels are dropped"
    with pytest.raises(ValueError, match="between 0 and 1"):
        F.dropout(x, 1.5)


def test_errors() -> None:
    with pytest.raises(ferro.errors.ShapeError, match="features"):
        F.linear(ferro.ones(2, 3), ferro.ones(4, 5))
    with pytest.raises(ferro.errors.DTypeError, match="class indices"):
        F.nll_loss(ferro.ones(2, 3), ferro.ones(2))
    with pytest.raises(ValueError, match="reduction"):
        F.mse_loss(ferro.ones(2), ferro.ones(2), reduction="avg")
