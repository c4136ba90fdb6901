"""nn.functional's everyday names that ferro gained, their modules, the in-place activations and PyTorch's
top-level aliases of functional ops, against torch with the keywords the NumPy references do not cover."""

from __future__ import annotations

import numpy as np
import pytest

import ferro
import ferro.nn.functional as F

torch = pytest.importorskip("torch")
TF = torch.nn.functional
RNG = np.random.default_rng(0)
A = RNG.normal(size=(4, 5))
PM1 = np.where(RNG.random((4, 5)) > 0.5, 1.0, -1.0)


def _both(v: np.ndarray) -> tuple[ferro.Tensor, object]:
    return ferro.tensor(v), torch.tensor(v)


def _same(mine: ferro.Tensor, theirs: object, rtol: float = 1e-10) -> None:
    np.testing.assert_allclose(mine.detach().numpy(), theirs.detach().numpy(), rtol=rtol, atol=1e-12)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_losses_match_torch(reduction: str) -> None:
    (x, t), (y, ty) = _both(A), _both(PM1)
    pos, tpos = _both(np.abs(A) + 0.1)
    cls, tcls = _both(np.array([0, 3, 1, 4]))
    w, tw = _both(np.linspace(0.5, 1.5, 5))
    r = {"reduction": reduction}
    _same(F.soft_margin_loss(x, y, **r), TF.soft_margin_loss(t, ty, **r))
    _same(F.multilabel_soft_margin_loss(x, (y + 1) / 2, weight=w, **r),
          TF.multilabel_soft_margin_loss(t, (ty + 1) / 2, weight=tw, **r))
    _same(F.hinge_embedding_loss(x, y, margin=0.5, **r), TF.hinge_embedding_loss(t, ty, margin=0.5, **r))
    for kw in ({}, {"log_input": False}, {"full": True}):
        _same(F.poisson_nll_loss(pos, pos.flip(0) * 3, **kw, **r),
              TF.poisson_nll_loss(tpos, tpos.flip(0) * 3, **kw, **r))
    for var, tvar in (_both(np.abs(A) + 1e-3), (0.5, 0.5), _both(np.abs(A[:, 0]) + 0.2)):
        _same(F.gaussian_nll_loss(x, x.flip(0), var, full=True, **r),
              TF.gaussian_nll_loss(t, t.flip(0), tvar, full=True, **r))
    for kw in ({}, {"margin": 0.3, "p": 1}, {"swap": True}):
        _same(F.triplet_margin_loss(x, x.flip(0), x.flip(1), **kw, **r),
              TF.triplet_margin_loss(t, t.flip(0), t.flip(1), **kw, **r))
    for kw in ({}, {"p": 2, "margin": 0.5}, {"weight": (w, tw)}):
        mk = {k: v[0] if isinstance(v, tuple) else v for k, v in kw.items()}
        tk = {k: v[1] if isinstance(v, tuple) else v for k, v in kw.items()}
        _same(F.multi_margin_loss(x, cls, **mk, **r), TF.multi_margin_loss(t, tcls, **tk, **r))


def test_loss_modules_match_torch() -> None:
    (x, t), (y, ty) = _both(A), _both(PM1)
    cls, tcls = _both(np.array([0, 3, 1, 4]))
    pairs = [("SoftMarginLoss", {}, (x, y), (t, ty)), ("HingeEmbeddingLoss", {"margin": 2.0}, (x, y), (t, ty)),
             ("MultiLabelSoftMarginLoss", {}, (x, (y + 1) / 2), (t, (ty + 1) / 2)),
             ("PoissonNLLLoss", {"full": True}, (x, x.abs() * 2), (t, t.abs() * 2)),
             ("GaussianNLLLoss", {"eps": 1e-3}, (x, x.flip(0), x.abs()), (t, t.flip(0), t.abs())),
             ("TripletMarginLoss", {"swap": True}, (x, x.flip(0), x.flip(1)), (t, t.flip(0), t.flip(1))),
             ("MultiMarginLoss", {"p": 2}, (x, cls), (t, tcls))]
    for name, kw, mine, theirs in pairs:
        _same(getattr(ferro.nn, name)(**kw)(*mine), getattr(torch.nn, name)(**kw)(*theirs))


def test_loss_gradients_match_torch() -> None:
    x = ferro.tensor(A, requires_grad=True)
    t = torch.tensor(A, requires_grad=True)
    cls, tcls = _both(np.array([0, 3, 1, 4]))
    (F.multi_margin_loss(x, cls, p=2) + F.triplet_margin_loss(x, x.flip(0), x.flip(1))
     + F.gaussian_nll_loss(x, x.flip(0) * 0.5, x.abs() + 0.1)).backward()
    (TF.multi_margin_loss(t, tcls, p=2) + TF.triplet_margin_loss(t, t.flip(0), t.flip(1))
     + TF.gaussian_nll_loss(t, t.flip(0) * 0.5, t.abs() + 0.1)).backward()
    _same(x.grad, t.grad, rtol=1e-9)


def test_activations_and_layout_match_torch() -> None:
    x, t = _both(A)
    for dim in (0, 1):
        _same(F.softmin(x, dim), TF.softmin(t, dim))
    for lambd in (0.2, 1.0):
        _same(F.hardshrink(x, lambd), TF.hardshrink(t, lambd))
        _same(F.softshrink(x, lambd), TF.softshrink(t, lambd))
        _same(ferro.nn.Hardshrink(lambd)(x), torch.nn.Hardshrink(lambd)(t))
    z, tz = _both(np.arange(2 * 18 * 2 * 3.0).reshape(2, 18, 2, 3))
    _same(F.pixel_shuffle(z, 3), TF.pixel_shuffle(tz, 3))
    _same(F.pixel_unshuffle(F.pixel_shuffle(z, 3), 3), tz)
    with pytest.raises(ferro.errors.ShapeError, match="pixel_shuffle"):
        F.pixel_shuffle(z, 4)
    with pytest.raises(ferro.errors.DTypeError, match="hardshrink"):
        F.hardshrink(ferro.ones(2, dtype=ferro.int64))


@pytest.mark.parametrize(("name", "args"), [("relu_", ()), ("elu_", (0.5,)), ("celu_", (2.0,)), ("selu_", ()),
                                            ("leaky_relu_", (0.2,)), ("hardtanh_", (-0.5, 0.5)),
                                            ("threshold_", (0.1, 20.0))])
def test_inplace_activations(name: str, args: tuple) -> None:
    x, t = _both(A.copy())
    out = getattr(F, name)(x, *args)
    assert out is x
    getattr(TF, name)(t, *args)
    _same(x, t)


@pytest.mark.parametrize("name", ["conv1d", "conv2d", "hardshrink", "pixel_shuffle", "selu", "celu", "threshold",
                                  "cosine_similarity", "pairwise_distance", "max_pool2d", "layer_norm", "group_norm",
                                  "dropout", "bilinear"])
def test_top_level_functional_names(name: str) -> None:
    assert getattr(ferro, name) is getattr(F, name)
    x4, t4 = _both(RNG.normal(size=(2, 4, 6, 6)))
    x3, t3 = _both(RNG.normal(size=(2, 4, 6)))
    w3, tw3 = _both(RNG.normal(size=(3, 4, 2)))
    w4, tw4 = _both(RNG.normal(size=(3, 4, 2, 2)))
    wb, twb = _both(RNG.normal(size=(3, 6, 6)))
    calls = {"conv1d": ((x3, w3), (t3, tw3)), "conv2d": ((x4, w4, None, 2), (t4, tw4, None, 2)),
             "hardshrink": ((x3, 0.3), (t3, 0.3)), "pixel_shuffle": ((x4, 2), (t4, 2)), "selu": ((x3,), (t3,)),
             "celu": ((x3, 1.5), (t3, 1.5)), "threshold": ((x3, 0.1, 5.0), (t3, 0.1, 5.0)),
             "cosine_similarity": ((x3, x3.flip(0)), (t3, t3.flip(0))),
             "pairwise_distance": ((x3, x3.flip(0)), (t3, t3.flip(0))), "max_pool2d": ((x4, 2), (t4, 2)),
             "layer_norm": ((x3, (6,)), (t3, (6,))), "group_norm": ((x3, 2), (t3, 2)),
             "dropout": ((x3, 0.5, False), (t3, 0.5, False)),
             "bilinear": ((x4[0, 0], x4[0, 1], wb), (t4[0, 0], t4[0, 1], twb))}
    mine, theirs = calls[name]
    _same(getattr(ferro, name)(*mine), getattr(torch, name)(*theirs), rtol=1e-9)


def test_random_layers_and_shuffles() -> None:
    x, t = _both(RNG.normal(size=(2, 6, 5)))
    _same(F.channel_shuffle(x, 3), TF.channel_shuffle(t, 3))
    _same(ferro.nn.ChannelShuffle(2)(x), torch.nn.ChannelShuffle(2)(t))
    _same(F.adaptive_avg_pool1d(x, 3), TF.adaptive_avg_pool1d(t, 3))
    _same(ferro.nn.AdaptiveAvgPool1d(4)(x), torch.nn.AdaptiveAvgPool1d(4)(t))
    for p in (1.0, 1.5):
        _same(F.pdist(x[0], p), TF.pdist(t[0], p))
    _same(F.rrelu(x), TF.rrelu(t))
    _same(ferro.nn.RReLU(0.1, 0.2).eval()(x), torch.nn.RReLU(0.1, 0.2).eval()(t))
    ferro.manual_seed(0)
    slopes = (F.rrelu(-ferro.ones(10000), 0.1, 0.3, training=True) / -1).numpy()
    assert slopes.min() >= 0.1 and slopes.max() <= 0.3 and abs(slopes.mean() - 0.2) < 0.005
    for name in ("AlphaDropout", "FeatureAlphaDropout"):
        _same(getattr(ferro.nn, name)(0.3).eval()(x), getattr(torch.nn, name)(0.3).eval()(t))
    ferro.manual_seed(0)
    z = ferro.randn(400, 500)
    out = F.alpha_dropout(z, 0.3, training=True)  # SELU's self-normalization: mean 0 and variance 1 kept
    assert abs(float(out.mean())) < 0.01 and abs(float(out.std()) - 1) < 0.01
    sat = -1.6732632423543772 * 1.0507009873554805
    a = 1 / np.sqrt((sat * sat * 0.3 + 1) * 0.7)
    dropped = np.isclose(out.numpy(), a * sat - a * sat * 0.3, atol=1e-6).mean()
    assert abs(dropped - 0.3) < 0.01
    for fn, shape in ((F.dropout1d, (8, 50, 3)), (F.dropout3d, (8, 50, 2, 2, 2))):
        y = fn(ferro.ones(*shape), 0.5, True)
        per_channel = y.reshape(8, 50, -1)
        assert ((per_channel == 0).all(-1) | (per_channel == 2).all(-1)).all()
    with pytest.raises(ValueError, match="probability"):
        F.alpha_dropout(x, 1.5)
