"""ferro.nn.init against torch.nn.init: gains and fans, the distributions' bounds and statistics,
the deterministic fills, reproducibility with generators, and the layers' default initialization."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import ferro
from ferro import nn
from ferro.nn import init

torch = pytest.importorskip("torch")
scipy_stats = pytest.importorskip("scipy.stats")
tinit = torch.nn.init


@pytest.mark.parametrize(("nonlinearity", "param"), [
    ("linear", None), ("conv2d", None), ("conv_transpose2d", None), ("sigmoid", None), ("tanh", None),
    ("relu", None), ("leaky_relu", None), ("leaky_relu", 0.2), ("leaky_relu", math.sqrt(5)), ("selu", None),
])
def test_calculate_gain_matches_torch(nonlinearity: str, param: float | None) -> None:
    assert init.calculate_gain(nonlinearity, param) == pytest.approx(tinit.calculate_gain(nonlinearity, param))


def test_calculate_gain_errors() -> None:
    with pytest.raises(ValueError, match="Unsupported nonlinearity"):
        init.calculate_gain("swish")
    with pytest.raises(ValueError, match="not a valid number"):
        init.calculate_gain("leaky_relu", "x")  # type: ignore[arg-type]


@pytest.mark.parametrize("shape", [(5, 3), (4, 2, 3), (6, 2, 3, 5)])
def test_fans_match_torch(shape: tuple[int, ...]) -> None:
    assert init._calculate_fan_in_and_fan_out(ferro.empty(*shape)) == \
        tinit._calculate_fan_in_and_fan_out(torch.empty(*shape))


def test_fans_need_two_dims() -> None:
    with pytest.raises(ValueError, match="fewer than 2 dimensions"):
        init.xavier_uniform_(ferro.empty(5))
    with pytest.raises(ValueError, match="Mode fan_avg not supported"):
        init.kaiming_uniform_(ferro.empty(3, 3), mode="fan_avg")


SHAPE = (300, 200)  # 60000 draws: the sample moments are within ~1% of the true ones

#: name -> (fill, bound or None, expected std)
RANDOM: dict[str, tuple[Callable[[Any], Any], float | None, float]] = {
    "uniform_": (lambda t: init.uniform_(t, -0.5, 1.5), None, 2 / math.sqrt(12)),
    "normal_": (lambda t: init.normal_(t, 2.0, 0.3), None, 0.3),
    "xavier_uniform_": (lambda t: init.xavier_uniform_(t, gain=2.0), 2 * math.sqrt(6 / 500),
                        2 * math.sqrt(6 / 500) / math.sqrt(3)),
    "xavier_normal_": (lambda t: init.xavier_normal_(t), None, math.sqrt(2 / 500)),
    "kaiming_uniform_": (lambda t: init.kaiming_uniform_(t, a=math.sqrt(5)), 1 / math.sqrt(200),
                         1 / math.sqrt(200) / math.sqrt(3)),
    "kaiming_uniform_ fan_out relu": (lambda t: init.kaiming_uniform_(t, mode="fan_out", nonlinearity="relu"),
                                      math.sqrt(6 / 300), math.sqrt(2 / 300)),
    "kaiming_normal_": (lambda t: init.kaiming_normal_(t, nonlinearity="relu"), None, math.sqrt(2 / 200)),
}


@pytest.mark.parametrize("name", list(RANDOM))
def test_random_inits_bounds_and_spread(name: str) -> None:
    fill, bound, std = RANDOM[name]
    t = ferro.empty(*SHAPE, dtype=ferro.float64)
    assert fill(t) is t
    v = t.numpy()
    assert v.std() == pytest.approx(std, rel=0.02)
    if bound is not None:
        assert np.abs(v).max() <= bound
        assert np.abs(v).max() > 0.99 * bound
        assert abs(v.mean()) < 0.02 * bound


def test_random_inits_do_not_record_gradients() -> None:
    p = nn.Parameter(ferro.empty(3, 4))
    init.kaiming_normal_(p)
    init.orthogonal_(p)
    init.trunc_normal_(p)
    assert p.is_leaf and p.requires_grad and p.grad_fn is None


def test_trunc_normal_matches_scipy() -> None:
    t = init.trunc_normal_(ferro.empty(60000, dtype=ferro.float64), mean=1.0, std=2.0, a=-1.0, b=4.0)
    v = t.numpy()
    assert v.min() >= -1.0 and v.max() <= 4.0
    ref = scipy_stats.truncnorm((-1.0 - 1.0) / 2.0, (4.0 - 1.0) / 2.0, loc=1.0, scale=2.0)
    assert v.mean() == pytest.approx(ref.mean(), abs=0.03)
    assert v.std() == pytest.approx(ref.std(), rel=0.02)
    assert scipy_stats.kstest(v, ref.cdf).pvalue > 1e-4


@pytest.mark.parametrize("shape", [(6, 6), (8, 3), (3, 8), (4, 2, 3, 3)])
def test_orthogonal_rows_or_columns_are_orthonormal(shape: tuple[int, ...]) -> None:
    t = init.orthogonal_(ferro.empty(*shape, dtype=ferro.float64), gain=2.0)
    q = t.numpy().reshape(shape[0], -1) / 2.0
    gram = q.T @ q if q.shape[0] >= q.shape[1] else q @ q.T
    np.testing.assert_allclose(gram, np.eye(gram.shape[0]), atol=1e-12)
    with pytest.raises(ValueError, match="2 or more dimensions"):
        init.orthogonal_(ferro.empty(3))


@pytest.mark.parametrize("shape", [(8, 3), (3, 8)])
def test_orthogonal_runs_on_a_device_without_qr(shape: tuple[int, ...], dev: str) -> None:
    """A device without a QR kernel (opencl) factorizes on the CPU; the result lives on the device."""
    t = init.orthogonal_(ferro.empty(*shape, device=dev), gain=2.0)
    assert t.device == ferro.device(dev)
    q = t.cpu().numpy().astype(np.float64) / 2.0
    gram = q.T @ q if q.shape[0] >= q.shape[1] else q @ q.T
    np.testing.assert_allclose(gram, np.eye(gram.shape[0]), atol=1e-5)


@pytest.mark.parametrize(("fill", "shape"), [
    (lambda m, t: m.constant_(t, 0.25), (3, 4)),
    (lambda m, t: m.ones_(t), (2, 5)),
    (lambda m, t: m.zeros_(t), (2, 5)),
    (lambda m, t: m.eye_(t), (3, 5)),
    (lambda m, t: m.eye_(t), (4, 2)),
    (lambda m, t: m.dirac_(t), (4, 3, 3)),
    (lambda m, t: m.dirac_(t, groups=2), (4, 2, 3, 3)),
    (lambda m, t: m.dirac_(t), (2, 3, 1, 2, 3)),
])
def test_deterministic_fills_match_torch(fill: Callable[[Any, Any], Any], shape: tuple[int, ...]) -> None:
    t = ferro.full(shape, 7.0)
    ref = torch.full(shape, 7.0)
    fill(init, t)
    fill(tinit, ref)
    np.testing.assert_array_equal(t.numpy(), ref.numpy())


def test_deterministic_fill_errors() -> None:
    with pytest.raises(ValueError, match="2 dimensions"):
        init.eye_(ferro.empty(2, 2, 2))
    with pytest.raises(ValueError, match="3, 4, or 5 dimensions"):
        init.dirac_(ferro.empty(2, 2))


def test_sparse_zeroes_a_share_of_each_column() -> None:
    t = init.sparse_(ferro.empty(10, 6, dtype=ferro.float64), sparsity=0.3, std=0.5)
    v = t.numpy()
    assert ((v == 0).sum(0) == 3).all()
    assert 0.2 < v[v != 0].std() < 1.0


@pytest.mark.parametrize("fill", [
    lambda t, g: init.uniform_(t, generator=g), lambda t, g: init.normal_(t, generator=g),
    lambda t, g: init.xavier_normal_(t, generator=g), lambda t, g: init.kaiming_uniform_(t, generator=g),
    lambda t, g: init.orthogonal_(t, generator=g), lambda t, g: init.trunc_normal_(t, generator=g),
])
def test_generator_makes_inits_reproducible(fill: Callable[[Any, Any], Any]) -> None:
    a = fill(ferro.empty(4, 3), ferro.Generator().manual_seed(5)).numpy()
    ferro.rand(10)  # the global stream moves; the generator's does not care
    b = fill(ferro.empty(4, 3), ferro.Generator().manual_seed(5)).numpy()
    c = fill(ferro.empty(4, 3), ferro.Generator().manual_seed(6)).numpy()
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)


# -- the layers' default initialization (PyTorch's) -----------------------------------------------


@pytest.mark.parametrize(("build", "fan_in"), [
    (lambda: nn.Linear(400, 300), 400),
    (lambda: nn.Conv2d(16, 32, 5), 16 * 25),
    (lambda: nn.Conv1d(8, 64, 3, groups=4), 2 * 3),
    (lambda: nn.ConvTranspose2d(24, 16, 3), 16 * 9),  # fan_in of the (in, out, k, k) weight is out * k * k
])
def test_default_weights_and_biases_are_uniform_within_one_over_sqrt_fan_in(build: Callable[[], Any],
                                                                            fan_in: int) -> None:
    ferro.manual_seed(0)
    m = build()
    bound = 1 / math.sqrt(fan_in)
    w, b = m.weight.detach().numpy(), m.bias.detach().numpy()
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.95 * bound
    assert w.std() == pytest.approx(bound / math.sqrt(3), rel=0.05)
    assert np.abs(b).max() <= bound and len(np.unique(b)) == b.size


def test_default_inits_of_other_layers() -> None:
    e = nn.Embedding(500, 100).weight.detach().numpy()
    assert e.std() == pytest.approx(1.0, rel=0.02) and abs(e.mean()) < 0.02
    bl = nn.Bilinear(50, 20, 40).weight.detach().numpy()
    assert np.abs(bl).max() <= 1 / math.sqrt(50) and np.abs(bl).max() > 0.95 / math.sqrt(50)
    for norm in (nn.BatchNorm2d(4), nn.LayerNorm(4), nn.GroupNorm(2, 4)):
        assert (norm.weight.detach().numpy() == 1).all() and (norm.bias.detach().numpy() == 0).all()
    assert (nn.PReLU(3).weight.detach().numpy() == 0.25).all()


def test_manual_seed_reproduces_a_model() -> None:
    ferro.manual_seed(11)
    a = nn.Sequential(nn.Linear(3, 4), nn.Conv1d(1, 2, 2))
    ferro.manual_seed(11)
    b = nn.Sequential(nn.Linear(3, 4), nn.Conv1d(1, 2, 2))
    for (k, x), y in zip(a.state_dict().items(), b.state_dict().values()):
        np.testing.assert_array_equal(x.numpy(), y.numpy(), err_msg=k)
