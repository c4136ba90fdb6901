"""ferro.distributions against torch.distributions: densities, entropies and moments to tolerance on every
available backend, sampling by its statistics (fixed seed, many draws), reparameterized gradients, and
PyTorch's argument validation."""

from __future__ import annotations

import numpy as np
import pytest

import ferro
from ferro import distributions as fd

torch = pytest.importorskip("torch")
td = torch.distributions

DEVICES = [d for d in ("cpu", "opencl") if d in ferro.backends.available()]
RNG = np.random.default_rng(0)
P = RNG.uniform(0.05, 0.95, (2, 3))
LOGITS = RNG.normal(size=(2, 4))
CAT_PROBS = RNG.uniform(0.1, 1.0, (3, 5))


def _pair(name: str, device: str, **params: object) -> tuple[object, object]:
    """The same distribution in ferro (on ``device``) and in torch; arrays become float32 tensors."""
    mine = {k: ferro.tensor(v, dtype=ferro.float32, device=device) if isinstance(v, np.ndarray) else v
            for k, v in params.items()}
    theirs = {k: torch.tensor(v, dtype=torch.float32) if isinstance(v, np.ndarray) else v for k, v in params.items()}
    return getattr(fd, name)(**mine), getattr(td, name)(**theirs)


CASES = [
    ("Normal", {"loc": RNG.normal(size=(2, 3)), "scale": RNG.uniform(0.5, 2, (2, 3))}, RNG.normal(size=(4, 2, 3))),
    ("Normal", {"loc": RNG.normal(size=(3,)), "scale": 1.5}, RNG.normal(size=(2, 3))),
    ("Normal", {"loc": 0.5, "scale": 2.0}, RNG.normal(size=(5,))),
    ("Uniform", {"low": RNG.uniform(-2, 0, (3,)), "high": RNG.uniform(0.5, 2, (3,))}, RNG.uniform(0, 0.4, (2, 3))),
    ("Uniform", {"low": -1.0, "high": 3.0}, np.array([-1.0, 0.0, 2.5])),
    ("Bernoulli", {"probs": P}, RNG.integers(0, 2, (4, 2, 3)).astype(np.float64)),
    ("Bernoulli", {"logits": LOGITS}, RNG.integers(0, 2, (2, 4)).astype(np.float64)),
    ("Bernoulli", {"probs": 0.3}, np.array([0.0, 1.0, 1.0])),
    ("Categorical", {"probs": CAT_PROBS}, RNG.integers(0, 5, (2, 3))),
    ("Categorical", {"logits": LOGITS}, RNG.integers(0, 4, (2,))),
    ("Categorical", {"logits": LOGITS[0]}, RNG.integers(0, 4, (6,))),
]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize(("name", "params", "value"), CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_values_match_torch(device: str, name: str, params: dict, value: np.ndarray) -> None:
    with ferro.use_backend(device):  # parameters given as numbers go to the current device
        _values_match_torch(device, name, params, value)


def _values_match_torch(device: str, name: str, params: dict, value: np.ndarray) -> None:
    mine, theirs = _pair(name, device, **params)
    assert tuple(mine.batch_shape) == tuple(theirs.batch_shape)
    assert tuple(mine.event_shape) == tuple(theirs.event_shape)
    assert mine.has_rsample == theirs.has_rsample
    dtype = (ferro.int64, torch.int64) if name == "Categorical" else (ferro.float32, torch.float32)
    v_mine, v_theirs = ferro.tensor(value, dtype=dtype[0], device=device), torch.tensor(value, dtype=dtype[1])
    np.testing.assert_allclose(mine.log_prob(v_mine).cpu().numpy(), theirs.log_prob(v_theirs).numpy(), rtol=1e-5,
                               atol=1e-6)
    np.testing.assert_allclose(mine.entropy().cpu().numpy(), theirs.entropy().numpy(), rtol=1e-5, atol=1e-6)
    for moment in ("mean", "variance", "stddev", "mode"):
        np.testing.assert_allclose(getattr(mine, moment).cpu().numpy(), getattr(theirs, moment).numpy(),
                                   rtol=1e-5, atol=1e-6, err_msg=moment)
    if name in ("Normal", "Uniform"):
        np.testing.assert_allclose(mine.cdf(v_mine).cpu().numpy(), theirs.cdf(v_theirs).numpy(), rtol=1e-5, atol=1e-6)
        q = np.array([0.1, 0.5, 0.8], dtype=np.float32).reshape((3,) + (1,) * len(mine.batch_shape))
        np.testing.assert_allclose(mine.icdf(ferro.tensor(q, device=device)).cpu().numpy(),
                                   theirs.icdf(torch.tensor(q)).numpy(), rtol=1e-4, atol=1e-5)
    if name in ("Bernoulli", "Categorical"):
        for expand in (True, False):
            np.testing.assert_array_equal(mine.enumerate_support(expand).cpu().numpy(),
                                          theirs.enumerate_support(expand).numpy())


@pytest.mark.parametrize("name", ["Normal", "Bernoulli", "Categorical"])
def test_log_prob_gradients_match_torch(name: str) -> None:
    params = {"Normal": {"loc": RNG.normal(size=(3,)), "scale": RNG.uniform(0.5, 2, (3,))},
              "Bernoulli": {"logits": LOGITS}, "Categorical": {"logits": LOGITS}}[name]
    value = {"Normal": RNG.normal(size=(3,)), "Bernoulli": RNG.integers(0, 2, (2, 4)).astype(np.float64),
             "Categorical": RNG.integers(0, 4, (2,))}[name]
    mine = {k: ferro.tensor(v, dtype=ferro.float64, requires_grad=True) for k, v in params.items()}
    theirs = {k: torch.tensor(v, dtype=torch.float64, requires_grad=True) for k, v in params.items()}
    fm, ft = getattr(fd, name)(**mine), getattr(td, name)(**theirs)
    vd = (ferro.int64, torch.int64) if name == "Categorical" else (ferro.float64, torch.float64)
    (fm.log_prob(ferro.tensor(value, dtype=vd[0])).sum() + fm.entropy().sum()).backward()
    (ft.log_prob(torch.tensor(value, dtype=vd[1])).sum() + ft.entropy().sum()).backward()
    for k in params:
        np.testing.assert_allclose(mine[k].grad.numpy(), theirs[k].grad.numpy(), rtol=1e-10, atol=1e-12)


def test_sampling_statistics() -> None:
    ferro.manual_seed(0)
    n = 40000
    normal = fd.Normal(ferro.tensor([0.0, 3.0]), ferro.tensor([1.0, 0.5])).sample((n,)).numpy()
    assert normal.shape == (n, 2)
    assert (np.abs(normal.mean(0) - [0.0, 3.0]) < 4 * np.array([1.0, 0.5]) / np.sqrt(n)).all()
    np.testing.assert_allclose(normal.std(0), [1.0, 0.5], rtol=0.02)
    uniform = fd.Uniform(ferro.tensor([-1.0]), ferro.tensor([3.0])).sample((n,)).numpy()
    assert uniform.min() >= -1.0 and uniform.max() < 3.0
    assert abs(uniform.mean() - 1.0) < 4 * (4 / np.sqrt(12)) / np.sqrt(n)
    assert np.histogram(uniform, bins=4, range=(-1, 3))[0].min() > n / 4 * 0.95
    p = np.array([0.1, 0.5, 0.9])
    bern = fd.Bernoulli(probs=ferro.tensor(p)).sample((n,)).numpy()
    assert set(np.unique(bern)) <= {0.0, 1.0}
    assert (np.abs(bern.mean(0) - p) < 4 * np.sqrt(p * (1 - p) / n)).all()
    probs = np.array([0.1, 0.2, 0.3, 0.4])
    cat = fd.Categorical(probs=ferro.tensor(probs * 7)).sample((n,)).numpy()  # unnormalized probs are normalized
    assert cat.dtype == np.int64 and cat.shape == (n,)
    freq = np.bincount(cat, minlength=4) / n
    assert (np.abs(freq - probs) < 4 * np.sqrt(probs * (1 - probs) / n)).all()
    batched = fd.Categorical(logits=ferro.zeros(2, 3, 6)).sample((7,))
    assert batched.shape == (7, 2, 3) and int(batched.max()) < 6


def test_sampling_is_seeded() -> None:
    draws = []
    for _ in range(2):
        ferro.manual_seed(5)
        draws.append(fd.Normal(0.0, 1.0).sample((4,)).numpy())
    np.testing.assert_array_equal(*draws)


def test_rsample_gradients() -> None:
    """d/dloc and d/dscale of sum(loc + eps * scale) are n and sum(eps); Uniform's likewise."""
    loc = ferro.tensor([0.5, -1.0], requires_grad=True)
    scale = ferro.tensor([2.0, 0.5], requires_grad=True)
    x = fd.Normal(loc, scale).rsample((50,))
    assert x.requires_grad
    x.sum().backward()
    eps = ((x.detach() - loc.detach()) / scale.detach()).numpy()
    np.testing.assert_allclose(loc.grad.numpy(), [50.0, 50.0])
    np.testing.assert_allclose(scale.grad.numpy(), eps.sum(0), rtol=1e-5, atol=1e-5)
    low, high = ferro.tensor(0.0, requires_grad=True), ferro.tensor(2.0, requires_grad=True)
    u = fd.Uniform(low, high).rsample((30,))
    u.sum().backward()
    frac = (u.detach().numpy() - 0.0) / 2.0
    np.testing.assert_allclose(high.grad.item(), frac.sum(), rtol=1e-5)
    np.testing.assert_allclose(low.grad.item(), (1 - frac).sum(), rtol=1e-5)
    assert not fd.Normal(loc, scale).sample((3,)).requires_grad
    with pytest.raises(NotImplementedError):
        fd.Bernoulli(probs=0.5).rsample()
    with pytest.raises(NotImplementedError):
        fd.Categorical(logits=ferro.zeros(3)).rsample()


BAD_ARGUMENTS = [
    ("Normal", {"loc": 0.0, "scale": -1.0}),
    ("Normal", {"loc": np.array([0.0, np.nan]), "scale": 1.0}),
    ("Uniform", {"low": 2.0, "high": 1.0}),
    ("Bernoulli", {"probs": np.array([0.5, 1.5])}),
    ("Bernoulli", {"probs": 0.5, "logits": 0.0}),
    ("Bernoulli", {}),
    ("Categorical", {"probs": np.array([0.5, -0.1, 0.6])}),
    ("Categorical", {"probs": np.array(0.5)}),
    ("Categorical", {"logits": np.array([0.0, np.nan])}),
]


@pytest.mark.parametrize(("name", "params"), BAD_ARGUMENTS, ids=[f"{c[0]}-{i}" for i, c in enumerate(BAD_ARGUMENTS)])
def test_bad_arguments_raise_as_torch(name: str, params: dict) -> None:
    with pytest.raises(ValueError) as theirs:
        getattr(td, name)(**{k: torch.tensor(v, dtype=torch.float32) if isinstance(v, np.ndarray) else v
                             for k, v in params.items()})
    with pytest.raises(ValueError) as mine:
        getattr(fd, name)(**{k: ferro.tensor(v, dtype=ferro.float32) if isinstance(v, np.ndarray) else v
                             for k, v in params.items()})
    first = str(theirs.value).split("(")[0].split(":")[0]
    assert str(mine.value).startswith(first), (str(mine.value), str(theirs.value))


BAD_VALUES = [
    ("Normal", {"loc": 0.0, "scale": 1.0}, np.array([np.nan])),
    ("Bernoulli", {"probs": 0.5}, np.array([0.0, 2.0])),
    ("Bernoulli", {"probs": 0.5}, np.array([0.5])),
    ("Categorical", {"logits": np.zeros(3)}, np.array([3])),
    ("Categorical", {"logits": np.zeros(3)}, np.array([-1])),
    ("Uniform", {"low": 0.0, "high": 1.0}, np.array([1.5])),
    ("Normal", {"loc": np.zeros(3), "scale": 1.0}, np.zeros(4)),
]


@pytest.mark.parametrize(("name", "params", "value"), BAD_VALUES, ids=[f"{c[0]}-{i}" for i, c in enumerate(BAD_VALUES)])
def test_log_prob_outside_the_support_raises_as_torch(name: str, params: dict, value: np.ndarray) -> None:
    mine, theirs = _pair(name, "cpu", **params)
    with pytest.raises(ValueError) as t_err:
        theirs.log_prob(torch.tensor(value))
    with pytest.raises(ValueError) as m_err:
        mine.log_prob(ferro.tensor(value))
    assert str(m_err.value).split("(")[0].split(":")[0] == str(t_err.value).split("(")[0].split(":")[0]
    off = getattr(fd, name)(**{k: ferro.tensor(v, dtype=ferro.float32) if isinstance(v, np.ndarray) else v
                               for k, v in params.items()}, validate_args=False)
    if name != "Categorical" and value.shape[-1:] != (4,):  # (a class out of range cannot be gathered)
        off.log_prob(ferro.tensor(value))  # no validation: no error


def test_validation_switch() -> None:
    fd.Distribution.set_default_validate_args(False)
    try:
        fd.Normal(0.0, -1.0)  # accepted, as PyTorch with validation off
    finally:
        fd.Distribution.set_default_validate_args(True)
    with pytest.raises(ValueError, match="scale"):
        fd.Normal(0.0, -1.0)
