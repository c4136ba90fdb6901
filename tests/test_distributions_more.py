"""Every distribution of ferro.distributions against torch.distributions, in float64 on cpu and opencl:
log_prob at torch's own draws, cdf / icdf, entropy, mean, mode, variance and stddev (where torch raises
NotImplementedError, ferro must too), expand; kl_divergence for torch's registered pairs; draws checked
by their moments (fixed seed, 20k draws); rsample gradients against the gradient of the analytic mean;
and torch's ValueErrors for bad arguments."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import ferro
from ferro import distributions as fd

from conftest import run_json

torch = pytest.importorskip("torch")
td = torch.distributions

RNG = np.random.default_rng(7)


def _pos(*shape: int, lo: float = 0.5, hi: float = 3.0) -> np.ndarray:
    return RNG.uniform(lo, hi, shape)


def _real(*shape: int) -> np.ndarray:
    return RNG.normal(size=shape)


def _spd(n: int, batch: tuple[int, ...] = ()) -> np.ndarray:
    a = RNG.normal(size=(*batch, n, n))
    return a @ np.swapaxes(a, -1, -2) + n * np.eye(n)


def _tril(n: int, batch: tuple[int, ...] = ()) -> np.ndarray:
    return np.linalg.cholesky(_spd(n, batch))


P3 = RNG.uniform(0.1, 0.9, 3)
PROBS = RNG.dirichlet(np.ones(4), size=2)
SPD, TRIL = _spd(3, (2,)), _tril(3)

#: id -> factory(module, to_tensor): the same distribution in ferro (``fd``) and torch (``td``).
Factory = Callable[[Any, Callable[[Any], Any]], Any]
CASES: dict[str, Factory] = {
    "Normal": lambda m, t: m.Normal(t(_real(3)), t(_pos(3))),
    "Uniform": lambda m, t: m.Uniform(t(np.array([-1.0, 0.0, 2.0])), t(np.array([0.5, 3.0, 2.5]))),
    "Bernoulli": lambda m, t: m.Bernoulli(probs=t(P3)),
    "Categorical": lambda m, t: m.Categorical(probs=t(PROBS)),
    "Exponential": lambda m, t: m.Exponential(t(_pos(3))),
    "Laplace": lambda m, t: m.Laplace(t(_real(3)), t(_pos(3))),
    "Cauchy": lambda m, t: m.Cauchy(t(_real(3)), t(_pos(3))),
    "ContinuousBernoulli": lambda m, t: m.ContinuousBernoulli(probs=t(np.array([0.1, 0.4995, 0.5003, 0.8]))),
    "ContinuousBernoulli-logits": lambda m, t: m.ContinuousBernoulli(logits=t(np.array([-2.0, 0.001, 1.5]))),
    "ContinuousBernoulli-stable": lambda m, t: m.ContinuousBernoulli(probs=t(np.array([0.2, 0.7, 0.9]))),
    "GeneralizedPareto-nonzero": lambda m, t: m.GeneralizedPareto(t(_real(3)), t(_pos(3)), t(np.array([0.3, -0.2]))
                                                                  .reshape(2, 1)),
    "GeneralizedPareto": lambda m, t: m.GeneralizedPareto(t(_real(3)), t(_pos(3)), t(np.array([0.3, 0.0, -0.4]))),
    "VonMises": lambda m, t: m.VonMises(t(_real(3)), t(np.array([0.5, 2.0, 8.0]))),
    # (not at concentration 1: there torch's xlogy(0, y) has gradient 0 in its first argument, ferro's log(y))
    "Gamma": lambda m, t: m.Gamma(t(np.array([0.4, 1.2, 5.0])), t(_pos(3))),
    "Chi2": lambda m, t: m.Chi2(t(np.array([0.7, 3.0, 10.0]))),
    "Beta": lambda m, t: m.Beta(t(np.array([0.5, 2.0, 3.0])), t(np.array([0.7, 2.0, 1.5]))),
    "Dirichlet": lambda m, t: m.Dirichlet(t(_pos(2, 4))),
    "Dirichlet-small": lambda m, t: m.Dirichlet(t(np.array([[0.3, 0.5, 0.9], [2.0, 3.0, 0.5]]))),
    "StudentT": lambda m, t: m.StudentT(t(np.array([0.8, 1.5, 5.0])), t(_real(3)), t(_pos(3))),
    "FisherSnedecor": lambda m, t: m.FisherSnedecor(t(np.array([1.0, 3.0, 6.0])), t(np.array([1.5, 4.5, 9.0]))),
    "StudentT-finite": lambda m, t: m.StudentT(t(np.array([2.5, 4.0, 9.0])), t(_real(3)), t(_pos(3))),
    "FisherSnedecor-finite": lambda m, t: m.FisherSnedecor(t(np.array([2.0, 5.0])), t(np.array([8.0, 12.0]))),
    "InverseGamma-finite": lambda m, t: m.InverseGamma(t(np.array([3.0, 5.0])), t(_pos(2))),
    "Binomial": lambda m, t: m.Binomial(t(np.array([5.0, 10.0, 10.0])), probs=t(P3)),
    "Binomial-logits": lambda m, t: m.Binomial(8, logits=t(_real(3))),
    "Geometric": lambda m, t: m.Geometric(probs=t(P3)),
    "Poisson": lambda m, t: m.Poisson(t(np.array([0.5, 4.0, 30.0]))),
    "NegativeBinomial": lambda m, t: m.NegativeBinomial(t(np.array([1.0, 3.5, 10.0])), probs=t(P3)),
    "NegativeBinomial-logits": lambda m, t: m.NegativeBinomial(t(np.array([2.0, 3.0, 4.0])), logits=t(_real(3))),
    "Multinomial": lambda m, t: m.Multinomial(7, probs=t(PROBS)),
    "OneHotCategorical": lambda m, t: m.OneHotCategorical(probs=t(PROBS)),
    "OneHotCategoricalStraightThrough": lambda m, t: m.OneHotCategoricalStraightThrough(logits=t(_real(2, 4))),
    "LogNormal": lambda m, t: m.LogNormal(t(_real(3)), t(_pos(3))),
    "HalfNormal": lambda m, t: m.HalfNormal(t(_pos(3))),
    "HalfCauchy": lambda m, t: m.HalfCauchy(t(_pos(3))),
    "Gumbel": lambda m, t: m.Gumbel(t(_real(3)), t(_pos(3))),
    "Weibull": lambda m, t: m.Weibull(t(_pos(3)), t(np.array([0.7, 1.5, 3.0]))),
    "Pareto": lambda m, t: m.Pareto(t(_pos(3)), t(np.array([0.8, 1.5, 3.0]))),
    "Kumaraswamy": lambda m, t: m.Kumaraswamy(t(np.array([0.5, 2.0, 3.0])), t(np.array([0.8, 2.0, 4.0]))),
    "LogisticNormal": lambda m, t: m.LogisticNormal(t(_real(2, 3)), t(_pos(2, 3))),
    "InverseGamma": lambda m, t: m.InverseGamma(t(np.array([0.8, 1.5, 4.0])), t(_pos(3))),
    "RelaxedBernoulli": lambda m, t: m.RelaxedBernoulli(t(np.array(0.7)), probs=t(P3)),
    "RelaxedOneHotCategorical": lambda m, t: m.RelaxedOneHotCategorical(t(np.array(0.6)), probs=t(PROBS)),
    "Independent": lambda m, t: m.Independent(m.Normal(t(_real(2, 3)), t(_pos(2, 3))), 1),
    "MixtureSameFamily": lambda m, t: m.MixtureSameFamily(m.Categorical(probs=t(PROBS)),
                                                          m.Normal(t(_real(2, 4)), t(_pos(2, 4)))),
    "MultivariateNormal-tril": lambda m, t: m.MultivariateNormal(t(_real(2, 3)), scale_tril=t(TRIL)),
    "MultivariateNormal-cov": lambda m, t: m.MultivariateNormal(t(_real(3)), covariance_matrix=t(SPD)),
    "MultivariateNormal-prec": lambda m, t: m.MultivariateNormal(t(_real(2, 3)), precision_matrix=t(SPD)),
    "LowRankMultivariateNormal": lambda m, t: m.LowRankMultivariateNormal(t(_real(2, 4)), t(_real(2, 4, 2)),
                                                                          t(_pos(2, 4))),
    "Wishart": lambda m, t: m.Wishart(t(np.array([4.0, 6.5])), covariance_matrix=t(SPD)),
    "Wishart-tril": lambda m, t: m.Wishart(5.0, scale_tril=t(TRIL)),
    "LKJCholesky": lambda m, t: m.LKJCholesky(3, t(np.array([0.5, 1.0, 2.0]))),
    "TransformedDistribution": lambda m, t: m.TransformedDistribution(
        m.Normal(t(_real(3)), t(_pos(3))), [m.transforms.AffineTransform(t(_real(3)), t(_pos(3))),
                                           m.transforms.TanhTransform()]),
    "TransformedDistribution-stickbreaking": lambda m, t: m.TransformedDistribution(
        m.Normal(t(_real(2, 3)), t(_pos(2, 3))), [m.transforms.StickBreakingTransform()]),
    "TransformedDistribution-corrcholesky": lambda m, t: m.TransformedDistribution(
        m.Normal(t(_real(3)), t(_pos(3))), [m.transforms.CorrCholeskyTransform()]),
}

#: Whose draws are integer-valued in torch's own dtype of the value (class indices).
INT_VALUES = {"Categorical"}


def _build(case: str, device: str, dtype: str = "float64") -> tuple[Any, Any]:
    """The case in ferro (on ``device``) and torch, with the same parameters, of ``dtype``."""
    state = RNG.bit_generator.state
    mine = CASES[case](fd, lambda a: ferro.tensor(np.asarray(a, dtype=dtype), device=device))
    RNG.bit_generator.state = state  # the same random parameters for torch
    theirs = CASES[case](td, lambda a: torch.tensor(np.asarray(a, dtype=dtype)))
    return mine, theirs


def _np(x: Any) -> np.ndarray:
    return x.detach().cpu().numpy() if isinstance(x, ferro.Tensor) else x.detach().numpy()


def _outcome(fn: Callable[[], Any]) -> Any:
    """The value of ``fn()`` as an array, or the class NotImplementedError where it raises that."""
    try:
        return _np(fn())
    except NotImplementedError:
        return NotImplementedError


def _assert_same(mine: Callable[[], Any], theirs: Callable[[], Any], what: str, rtol: float = 1e-7,
                 atol: float = 1e-9) -> None:
    t = _outcome(theirs)
    m = _outcome(mine)
    if t is NotImplementedError:
        assert m is NotImplementedError, f"{what}: torch has none, ferro gives {m}"
        return
    assert m is not NotImplementedError, f"{what}: ferro raised NotImplementedError"
    np.testing.assert_allclose(m, t, rtol=rtol, atol=atol, err_msg=what)
    assert m.shape == t.shape, what


def _value(theirs: Any, case: str, device: str) -> tuple[Any, Any]:
    """Values in the support: torch's own draws (seeded)."""
    torch.manual_seed(3)
    v = theirs.sample((2,))
    return ferro.tensor(v.numpy(), device=device), v


@pytest.fixture
def torch_float64() -> Any:
    """torch's default dtype float64 for the test (its GeneralizedPareto compares with a default-dtype 0)."""
    before = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    yield
    torch.set_default_dtype(before)


@pytest.mark.parametrize("case", sorted(CASES))
def test_values_match_torch(case: str, dev: str, torch_float64: Any) -> None:
    mine, theirs = _build(case, dev)
    assert tuple(mine.batch_shape) == tuple(theirs.batch_shape)
    assert tuple(mine.event_shape) == tuple(theirs.event_shape)
    assert mine.has_rsample == theirs.has_rsample
    assert mine.has_enumerate_support == theirs.has_enumerate_support
    vm, vt = _value(theirs, case, dev)
    _assert_same(lambda: mine.log_prob(vm), lambda: theirs.log_prob(vt), "log_prob")
    _assert_same(lambda: mine.entropy(), lambda: theirs.entropy(), "entropy")
    for moment in ("mean", "mode", "variance", "stddev"):
        _assert_same(lambda m=moment: getattr(mine, m), lambda m=moment: getattr(theirs, m), moment)
    _assert_same(lambda: mine.cdf(vm), lambda: theirs.cdf(vt), "cdf")
    q = np.linspace(0.05, 0.95, 6).reshape((6,) + (1,) * len(theirs.batch_shape))
    _assert_same(lambda: mine.icdf(ferro.tensor(q, device=dev)), lambda: theirs.icdf(torch.tensor(q)), "icdf",
                 rtol=1e-6)
    if theirs.has_enumerate_support:
        _assert_same(lambda: mine.enumerate_support(), lambda: theirs.enumerate_support(), "enumerate_support")
    shape = (2, *theirs.batch_shape)
    em, et = mine.expand(shape), theirs.expand(shape)
    assert tuple(em.batch_shape) == tuple(et.batch_shape) and tuple(em.event_shape) == tuple(et.event_shape)
    _assert_same(lambda: em.log_prob(vm), lambda: et.log_prob(vt), "expand().log_prob")
    assert tuple(mine.sample((3,)).shape) == (3, *theirs.batch_shape, *theirs.event_shape)


def _kl_instances(m: Any, t: Callable[[Any], Any]) -> dict[str, Any]:
    """One instance of each type in torch's KL registry, batch shape (3,), parameters chosen so that the
    finite and the infinite divergences both occur."""
    r = RNG
    return {
        "Bernoulli": m.Bernoulli(probs=t(np.array([0.0, 0.3, 1.0]))),
        "Beta": m.Beta(t(r.uniform(0.5, 3, 3)), t(r.uniform(0.5, 3, 3))),
        "Binomial": m.Binomial(t(np.array([5.0, 5.0, 5.0])), probs=t(r.uniform(0.1, 0.9, 3))),
        "Categorical": m.Categorical(probs=t(np.array([[0.2, 0.8, 0.0], [0.3, 0.3, 0.4], [0.5, 0.5, 0.0]]))),
        "ContinuousBernoulli": m.ContinuousBernoulli(probs=t(r.uniform(0.1, 0.9, 3))),
        "Dirichlet": m.Dirichlet(t(r.uniform(0.5, 3, (3, 4)))),
        "Exponential": m.Exponential(t(r.uniform(0.5, 3, 3))),
        "Gamma": m.Gamma(t(r.uniform(0.5, 3, 3)), t(r.uniform(0.5, 3, 3))),
        "Gumbel": m.Gumbel(t(r.normal(size=3)), t(r.uniform(0.5, 3, 3))),
        "Geometric": m.Geometric(probs=t(r.uniform(0.1, 0.9, 3))),
        "HalfNormal": m.HalfNormal(t(r.uniform(0.5, 3, 3))),
        "Laplace": m.Laplace(t(r.normal(size=3)), t(r.uniform(0.5, 3, 3))),
        "LowRankMultivariateNormal": m.LowRankMultivariateNormal(t(r.normal(size=(3, 3))), t(r.normal(size=(3, 3, 2))),
                                                                 t(r.uniform(0.5, 2, (3, 3)))),
        "MultivariateNormal": m.MultivariateNormal(t(r.normal(size=(3, 3))), scale_tril=t(_tril(3, (3,)))),
        "Normal": m.Normal(t(r.normal(size=3)), t(r.uniform(0.5, 3, 3))),
        "OneHotCategorical": m.OneHotCategorical(probs=t(r.dirichlet(np.ones(4), 3))),
        "Pareto": m.Pareto(t(np.array([0.5, 1.0, 2.0])), t(np.array([0.8, 2.5, 3.0]))),
        "Poisson": m.Poisson(t(r.uniform(0.5, 3, 3))),
        "TransformedDistribution": m.TransformedDistribution(m.Normal(t(r.normal(size=3)), t(r.uniform(0.5, 2, 3))),
                                                             [m.transforms.ExpTransform()]),
        "Uniform": m.Uniform(t(np.array([-1.0, 0.1, 0.2])), t(np.array([0.5, 0.9, 4.0]))),
        "Independent": m.Independent(m.Normal(t(r.normal(size=(3, 2))), t(r.uniform(0.5, 2, (3, 2)))), 1),
        "Cauchy": m.Cauchy(t(r.normal(size=3)), t(r.uniform(0.5, 3, 3))),
    }


def _kl_pairs() -> list[tuple[str, str]]:
    return sorted((p.__name__, q.__name__) for p, q in td.kl._KL_REGISTRY
                  if p is not td.ExponentialFamily)


def test_kl_registry_has_torch_pairs() -> None:
    theirs = {(p.__name__, q.__name__) for p, q in td.kl._KL_REGISTRY}
    mine = {(p.__name__, q.__name__) for p, q in fd.kl._KL_REGISTRY}
    assert theirs == mine


@pytest.mark.parametrize(("p", "q"), _kl_pairs(), ids=[f"{p}-{q}" for p, q in _kl_pairs()])
def test_kl_divergence_matches_torch(p: str, q: str, dev: str) -> None:
    state = RNG.bit_generator.state
    mine = _kl_instances(fd, lambda a: ferro.tensor(np.asarray(a, dtype=np.float64), device=dev))
    RNG.bit_generator.state = state
    theirs = _kl_instances(td, lambda a: torch.tensor(np.asarray(a, dtype=np.float64)))
    _assert_same(lambda: fd.kl_divergence(mine[p], mine[q]), lambda: td.kl_divergence(theirs[p], theirs[q]),
                 f"KL({p} || {q})", rtol=1e-6)


def test_kl_exponential_family_by_bregman_divergence() -> None:
    """Gamma/Gamma through the generic exponential-family divergence (autograd of the log-normalizer)."""
    a, b = _pos(3), _pos(3)
    p, q = fd.Gamma(ferro.tensor(a), ferro.tensor(b)), fd.Gamma(ferro.tensor(b), ferro.tensor(a))
    generic = fd.kl._kl_expfamily_expfamily(p, q)
    np.testing.assert_allclose(generic.detach().numpy(), fd.kl_divergence(p, q).numpy(), rtol=1e-9)


def test_register_kl_picks_the_most_specific_pair() -> None:
    class MyNormal(fd.Normal):
        pass

    @fd.register_kl(MyNormal, fd.Normal)
    def _mine(p: Any, q: Any) -> Any:
        return ferro.zeros(p.batch_shape)

    try:
        assert float(fd.kl_divergence(MyNormal(0.0, 1.0), fd.Normal(1.0, 2.0))) == 0.0
        assert float(fd.kl_divergence(fd.Normal(0.0, 1.0), MyNormal(1.0, 2.0))) > 0.0
    finally:
        del fd.kl._KL_REGISTRY[MyNormal, fd.Normal]
        fd.kl._KL_MEMOIZE.clear()
    with pytest.raises(NotImplementedError, match="No KL"):
        fd.kl_divergence(fd.Cauchy(0.0, 1.0), fd.Normal(0.0, 1.0))


#: Draws checked by their moments: case -> (flattened mean, variance) from torch, 20k draws.
SAMPLED = sorted(c for c in CASES if c not in {"Cauchy", "HalfCauchy", "LKJCholesky"})


@pytest.mark.parametrize("case", SAMPLED)
def test_sampling_moments(case: str) -> None:
    """The mean of 20000 draws is within 5 standard errors of torch's mean (where mean and variance are
    finite), the draws lie in the support."""
    ferro.manual_seed(11)
    mine, theirs = _build(case, "cpu")
    n = 20000
    x = mine.sample((n,))
    assert tuple(x.shape) == (n, *theirs.batch_shape, *theirs.event_shape)
    assert bool(theirs.support.check(torch.tensor(_np(x))).all())
    try:
        mean, var = _np(theirs.mean), _np(theirs.variance)
    except NotImplementedError:  # torch has no moments for it: the shape and support checks above
        return
    draws = _np(x)
    finite = np.isfinite(mean) & np.isfinite(var) & (var < 1e6)
    if case.startswith("VonMises"):
        draws, mean = np.cos(draws - _np(theirs.loc)), 1 - var  # the circular mean resultant length
        finite = np.ones_like(mean, dtype=bool)
    err = np.abs(draws.mean(0) - mean)[finite]
    se = np.sqrt(var[finite] / n)
    assert (err <= 5 * se + 1e-12).all(), (err, se)


def test_sampling_runs_on_opencl(ocl: Any) -> None:
    """The samplers built of rejection loops (gamma, Poisson, binomial, von Mises) run on OpenCL and give
    the right means."""
    ferro.manual_seed(2)
    n = 20000
    for case in ("Gamma", "Poisson", "Binomial", "VonMises", "Beta"):
        mine, theirs = _build(case, "opencl:0")
        draws = mine.sample((n,))
        assert draws.device.type == "opencl"
        draws = _np(draws)
        mean, var = _np(theirs.mean), _np(theirs.variance)
        if case == "VonMises":
            draws, mean = np.cos(draws - _np(theirs.loc)), 1 - var
        assert (np.abs(draws.mean(0) - mean) <= 5 * np.sqrt(var / n)).all(), case


def test_sampling_large_means_statistics() -> None:
    """Poisson and binomial draws on both sides of the switch between inversion and rejection, and gamma
    below 1 (the boost): mean and variance."""
    ferro.manual_seed(5)
    n = 40000
    rate = np.array([0.01, 9.9, 10.0, 80.0, 2000.0])
    k = fd.Poisson(ferro.tensor(rate)).sample((n,)).numpy()
    assert (k == np.round(k)).all() and (k >= 0).all()
    np.testing.assert_array_less(np.abs(k.mean(0) - rate), 5 * np.sqrt(rate / n))
    np.testing.assert_allclose(k.var(0), rate, rtol=0.05, atol=0.01)
    count, p = np.array([1.0, 20.0, 30.0, 500.0, 500.0]), np.array([0.5, 0.45, 0.9, 0.3, 0.999])
    b = fd.Binomial(ferro.tensor(count), probs=ferro.tensor(p)).sample((n,)).numpy()
    assert (b >= 0).all() and (b <= count).all()
    np.testing.assert_array_less(np.abs(b.mean(0) - count * p), 5 * np.sqrt(count * p * (1 - p) / n) + 1e-9)
    alpha = np.array([0.05, 0.5, 50.0])
    g = fd.Gamma(ferro.tensor(alpha), 1.0).sample((n,)).numpy()
    assert (g > 0).all()
    np.testing.assert_array_less(np.abs(g.mean(0) - alpha), 5 * np.sqrt(alpha / n))


def _defined_part(case: str, g_m: np.ndarray, g_t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The part of two gradients of a matrix parameter that is defined: the lower triangle of a
    ``scale_tril`` (its upper part is held at 0), the symmetric part of a covariance or precision."""
    if g_t.ndim < 2 or g_t.shape[-1] != g_t.shape[-2] or g_t.shape[-1] == 1:
        return g_m, g_t
    if "tril" in case:
        return np.tril(g_m), np.tril(g_t)
    if "cov" in case or "prec" in case or case == "Wishart":
        return (g_m + np.swapaxes(g_m, -1, -2)) / 2, (g_t + np.swapaxes(g_t, -1, -2)) / 2
    return g_m, g_t


def _finite_moments(case: str) -> bool:
    """Whether torch gives the case a finite mean and variance (so that a sample mean has a standard error)."""
    theirs = _build(case, "cpu")[1]
    try:
        return bool(torch.isfinite(theirs.mean).all()) and bool(torch.isfinite(theirs.variance).all())
    except NotImplementedError:
        return False


#: Reparameterized, with a finite mean, and not at a point where the draw stops depending on a parameter
#: (ContinuousBernoulli near 1/2, GeneralizedPareto at concentration 0: there torch's is constant too).
#: The finite-difference test below covers the rest.
RSAMPLED = sorted(c for c in CASES if c not in {"Cauchy", "HalfCauchy", "OneHotCategoricalStraightThrough", "Pareto",
                                                "LogNormal",  # heavy-tailed: its sample mean is too noisy here
                                                "ContinuousBernoulli", "ContinuousBernoulli-logits",
                                                "GeneralizedPareto"}
                  and _build(c, "cpu")[1].has_rsample and _finite_moments(c))


@pytest.mark.parametrize("case", RSAMPLED)
def test_rsample_gradients_match_the_mean(case: str) -> None:
    """d/dtheta of the mean of 20000 reparameterized draws is close to d/dtheta of the analytic mean
    (torch's), for every parameter: the pathwise gradient is unbiased."""
    ferro.manual_seed(13)
    leaves_m: list[Any] = []
    leaves_t: list[Any] = []

    def grad_leaf(lst: list[Any], make: Callable[[np.ndarray], Any]) -> Callable[[Any], Any]:
        def t(a: Any) -> Any:
            leaf = make(np.asarray(a, dtype=np.float64))
            lst.append(leaf)
            return leaf
        return t

    state = RNG.bit_generator.state
    mine = CASES[case](fd, grad_leaf(leaves_m, lambda a: ferro.tensor(a, requires_grad=True)))
    RNG.bit_generator.state = state
    theirs = CASES[case](td, grad_leaf(leaves_t, lambda a: torch.tensor(a, requires_grad=True)))
    mean_t = theirs.mean
    weights = np.linspace(0.5, 1.5, mean_t.numel()).reshape(tuple(mean_t.shape))
    n = 20000
    x = mine.rsample((n,))
    (x.mean(0) * ferro.tensor(weights)).sum().backward()
    (mean_t * torch.tensor(weights)).sum().backward()
    for lm, lt in zip(leaves_m, leaves_t, strict=True):
        if lt.grad is None:
            continue
        g_m = lm.grad.numpy() if lm.grad is not None else np.zeros(tuple(lt.shape))
        g_m, g_t = _defined_part(case, g_m, lt.grad.numpy())
        scale = np.abs(g_t).max() + 1.0
        np.testing.assert_allclose(g_m, g_t, atol=0.06 * scale, err_msg=case)


#: Reparameterized by a fixed transformation of the noise (no rejection loop): the same seed gives the
#: same noise, so the draws are smooth functions of the parameters and finite differences apply.
SMOOTH = sorted(c for c in CASES if _build(c, "cpu")[1].has_rsample and not any(
    c.startswith(g) for g in ("Gamma", "Chi2", "Beta", "Dirichlet", "StudentT", "FisherSnedecor", "InverseGamma",
                              "Wishart", "OneHotCategoricalStraightThrough")))
SMOOTH = [c for c in SMOOTH if c not in ("GeneralizedPareto", "MultivariateNormal-cov", "MultivariateNormal-prec")]


@pytest.mark.parametrize("case", SMOOTH)
def test_rsample_gradients_by_finite_differences(case: str) -> None:
    """The autograd gradient of a weighted sum of 30 draws against central differences at the same seed."""
    leaves: list[Any] = []

    def make(a: Any) -> Any:
        leaf = ferro.tensor(np.asarray(a, dtype=np.float64), requires_grad=True)
        leaves.append(leaf)
        return leaf

    def total(values: list[np.ndarray] | None) -> Any:
        it = iter(values) if values is not None else None
        state = RNG.bit_generator.state
        d = CASES[case](fd, make if it is None else (lambda a: ferro.tensor(next(it))))
        RNG.bit_generator.state = state
        ferro.manual_seed(21)
        x = d.rsample((30,))
        return (x * ferro.tensor(np.linspace(0.5, 1.5, x.numel()).reshape(tuple(x.shape)))).sum()

    total(None).backward()
    base = [leaf.detach().numpy().copy() for leaf in leaves]
    h = 1e-6
    for i, leaf in enumerate(leaves):
        if leaf.grad is None:
            continue
        flat = base[i].reshape(-1)
        for j in range(flat.size):
            if case == "MultivariateNormal-tril" and i == 1 and flat[j] == 0:
                continue  # above the diagonal of scale_tril: held at 0 by its constraint
            hi = [b.copy() for b in base]
            lo = [b.copy() for b in base]
            hi[i].reshape(-1)[j] += h
            lo[i].reshape(-1)[j] -= h
            fd_grad = (float(total(hi)) - float(total(lo))) / (2 * h)
            got = leaf.grad.numpy().reshape(-1)[j]
            assert abs(got - fd_grad) <= 1e-4 * (1 + abs(fd_grad)), (case, i, j, got, fd_grad)


def test_gamma_reparameterized_gradient_matches_torch() -> None:
    """dx/dalpha at fixed draws: the series / saddle-point formula against torch's _standard_gamma_grad."""
    from ferro.distributions._samplers import _gamma_cdf_alpha_grad

    alpha = np.repeat([0.05, 0.3, 1.0, 3.0, 7.9, 8.5, 40.0, 300.0], 4)
    x = alpha * np.tile([0.2, 0.95, 1.04, 2.5], 8)
    mine = _gamma_cdf_alpha_grad(ferro.tensor(alpha), ferro.tensor(x)).numpy()
    theirs = torch._standard_gamma_grad(torch.tensor(alpha), torch.tensor(x)).numpy()
    np.testing.assert_allclose(mine, theirs, rtol=2e-3)


def test_straight_through_gradient() -> None:
    logits = ferro.tensor(_real(2, 4), requires_grad=True)
    d = fd.OneHotCategoricalStraightThrough(logits=logits)
    x = d.rsample((5,))
    assert set(np.unique(x.detach().numpy())) <= {0.0, 1.0}
    (x * ferro.arange(4.0)).sum().backward()
    t_logits = torch.tensor(logits.detach().numpy(), requires_grad=True)
    (5 * t_logits.softmax(-1) * torch.arange(4.0, dtype=torch.float64)).sum().backward()
    np.testing.assert_allclose(logits.grad.numpy(), t_logits.grad.numpy(), rtol=1e-10)


#: Bad arguments: torch raises ValueError with validation on; ferro must raise it in the same words.
BAD = {
    "Gamma-rate": lambda m, t: m.Gamma(t(np.array([1.0])), t(np.array([-1.0]))),
    "Beta": lambda m, t: m.Beta(t(np.array([0.0])), t(np.array([1.0]))),
    "Dirichlet": lambda m, t: m.Dirichlet(t(np.array([1.0, -0.5]))),
    "Dirichlet-0d": lambda m, t: m.Dirichlet(t(np.array(1.0))),
    "Exponential": lambda m, t: m.Exponential(t(np.array([-1.0]))),
    "Binomial-count": lambda m, t: m.Binomial(t(np.array([2.5])), probs=t(np.array([0.5]))),
    "Binomial-both": lambda m, t: m.Binomial(3, probs=t(np.array([0.5])), logits=t(np.array([0.0]))),
    "Geometric-zero": lambda m, t: m.Geometric(probs=t(np.array([0.0, 0.5]))),
    "Poisson": lambda m, t: m.Poisson(t(np.array([-0.5]))),
    "StudentT": lambda m, t: m.StudentT(t(np.array([0.0]))),
    "VonMises": lambda m, t: m.VonMises(t(np.array([0.0])), t(np.array([-1.0]))),
    "MultivariateNormal-0d": lambda m, t: m.MultivariateNormal(t(np.array(0.0)), t(np.eye(2))),
    "MultivariateNormal-two": lambda m, t: m.MultivariateNormal(t(np.zeros(2)), t(np.eye(2)), scale_tril=t(np.eye(2))),
    "MultivariateNormal-notpd": lambda m, t: m.MultivariateNormal(t(np.zeros(2)), t(np.array([[1.0, 2.0],
                                                                                            [2.0, 1.0]]))),
    "MultivariateNormal-tril": lambda m, t: m.MultivariateNormal(t(np.zeros(2)), scale_tril=t(np.array([[1.0, 1.0],
                                                                                                       [0.0, 1.0]]))),
    "LowRank-shape": lambda m, t: m.LowRankMultivariateNormal(t(np.zeros(3)), t(np.ones((2, 1))), t(np.ones(3))),
    "Wishart-df": lambda m, t: m.Wishart(t(np.array(0.5)), covariance_matrix=t(np.eye(2))),
    "LKJCholesky-dim": lambda m, t: m.LKJCholesky(1, 1.0),
    "Pareto": lambda m, t: m.Pareto(t(np.array([1.0])), t(np.array([0.0]))),
    "Weibull": lambda m, t: m.Weibull(t(np.array([-1.0])), t(np.array([1.0]))),
    "Kumaraswamy": lambda m, t: m.Kumaraswamy(t(np.array([1.0])), t(np.array([-1.0]))),
    "HalfNormal": lambda m, t: m.HalfNormal(t(np.array([0.0]))),
    "Laplace": lambda m, t: m.Laplace(t(np.array([np.nan])), t(np.array([1.0]))),
    "Chi2": lambda m, t: m.Chi2(t(np.array([-2.0]))),
    "Multinomial": lambda m, t: m.Multinomial(2, probs=t(np.array([0.5, -0.5, 1.0]))),
    "GeneralizedPareto": lambda m, t: m.GeneralizedPareto(t(np.array([0.0])), t(np.array([0.0])),
                                                          t(np.array([1.0]))),
    "TransformedDistribution": lambda m, t: m.TransformedDistribution(m.Normal(0.0, 1.0), "exp"),
    "MixtureSameFamily": lambda m, t: m.MixtureSameFamily(m.Categorical(probs=t(np.ones(3))),
                                                          m.Normal(t(np.zeros(2)), t(np.ones(2)))),
    "Independent": lambda m, t: m.Independent(m.Normal(t(np.zeros(2)), t(np.ones(2))), 2),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_arguments_raise_as_torch(case: str) -> None:
    with pytest.raises(ValueError) as theirs:
        BAD[case](td, lambda a: torch.tensor(a, dtype=torch.float64))
    with pytest.raises(ValueError) as mine:
        BAD[case](fd, lambda a: ferro.tensor(a, dtype=ferro.float64))
    first = str(theirs.value).split("(")[0].split(":")[0].split("=")[0]
    assert str(mine.value).startswith(first), (str(mine.value), str(theirs.value))


OUTSIDE = [
    ("Gamma", np.array([-1.0, 1.0, 1.0])),
    ("Beta", np.array([0.5, 1.5, 0.5])),
    ("Poisson", np.array([1.5, 1.0, 0.0])),
    ("Binomial", np.array([6.0, 1.0, 1.0])),
    ("Dirichlet", np.full((2, 4), 0.3)),
    ("OneHotCategorical", np.array([[1.0, 1.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0]])),
    ("LogNormal", np.array([-1.0, 1.0, 1.0])),
    ("Pareto", np.array([0.01, 50.0, 50.0])),
    ("MultivariateNormal-tril", np.zeros(4)),
    ("Wishart", np.array([[1.0, 2.0, 0.0], [2.0, 1.0, 0.0], [0.0, 0.0, 1.0]])),
]


@pytest.mark.parametrize(("case", "value"), OUTSIDE, ids=[c for c, _ in OUTSIDE])
def test_log_prob_outside_the_support_raises_as_torch(case: str, value: np.ndarray) -> None:
    mine, theirs = _build(case, "cpu")
    with pytest.raises(ValueError) as t_err:
        theirs.log_prob(torch.tensor(value))
    with pytest.raises(ValueError) as m_err:
        mine.log_prob(ferro.tensor(value))
    first = str(t_err.value).split("(")[0].split(":")[0]
    assert str(m_err.value).split("(")[0].split(":")[0] == first, (str(m_err.value), str(t_err.value))


TRANSFORMS = {
    "Exp": lambda m, t: m.ExpTransform(),
    "Sigmoid": lambda m, t: m.SigmoidTransform(),
    "Tanh": lambda m, t: m.TanhTransform(),
    "Softplus": lambda m, t: m.SoftplusTransform(),
    "Power": lambda m, t: m.PowerTransform(t(np.array([0.5, 2.0, 3.0]))),
    "Affine": lambda m, t: m.AffineTransform(t(_real(3)), t(np.array([-2.0, 0.5, 3.0]))),
    "Affine-event": lambda m, t: m.AffineTransform(t(_real(3)), t(np.array([-2.0, 0.5, 3.0])), event_dim=1),
    "StickBreaking": lambda m, t: m.StickBreakingTransform(),
    "Softmax": lambda m, t: m.SoftmaxTransform(),
    "CorrCholesky": lambda m, t: m.CorrCholeskyTransform(),
    "LowerCholesky": lambda m, t: m.LowerCholeskyTransform(),
    "Compose": lambda m, t: m.ComposeTransform([m.ExpTransform(), m.AffineTransform(1.0, t(np.array([2.0])))]),
    "Inverse": lambda m, t: m.SigmoidTransform().inv,
    "Independent": lambda m, t: m.IndependentTransform(m.ExpTransform(), 1),
    "Reshape": lambda m, t: m.ReshapeTransform((3,), (3, 1)),
    "Cat": lambda m, t: m.CatTransform([m.ExpTransform(), m.TanhTransform()], dim=-1, lengths=[1, 2]),
    "Stack": lambda m, t: m.StackTransform([m.ExpTransform(), m.TanhTransform(), m.SigmoidTransform()], dim=-1),
    "CDF": lambda m, t: m.CumulativeDistributionTransform((fd if m is fd.transforms else td).Normal(0.0, 1.0)),
}


@pytest.mark.parametrize("name", sorted(TRANSFORMS))
def test_transforms_match_torch(name: str, dev: str) -> None:
    state = RNG.bit_generator.state
    mine = TRANSFORMS[name](fd.transforms, lambda a: ferro.tensor(a, device=dev))
    RNG.bit_generator.state = state
    theirs = TRANSFORMS[name](td.transforms, lambda a: torch.tensor(a))
    x = _real(2, 3, 3) * 0.7 if name in ("LowerCholesky",) else np.abs(_real(2, 3)) + 0.1 if name == "Power" \
        else _real(2, 3)
    xm, xt = ferro.tensor(x, device=dev), torch.tensor(x)
    _assert_same(lambda: mine(xm), lambda: theirs(xt), "forward")
    ym, yt = mine(xm), theirs(xt)
    _assert_same(lambda: mine.log_abs_det_jacobian(xm, ym), lambda: theirs.log_abs_det_jacobian(xt, yt), "ladj")
    y = yt.detach().numpy()
    _assert_same(lambda: mine.inv(ferro.tensor(y, device=dev)), lambda: theirs.inv(torch.tensor(y)), "inverse",
                 rtol=1e-6, atol=1e-8)
    assert tuple(mine.forward_shape(x.shape)) == tuple(theirs.forward_shape(torch.Size(x.shape)))
    assert mine.bijective == theirs.bijective
    assert mine.domain.event_dim == theirs.domain.event_dim
    assert mine.codomain.event_dim == theirs.codomain.event_dim
    again_m = TRANSFORMS[name](fd.transforms, lambda a: ferro.tensor(a, device=dev))
    again_t = TRANSFORMS[name](td.transforms, lambda a: torch.tensor(a))
    assert mine == mine and (mine == again_m) == (theirs == again_t)


def test_transform_cache_returns_the_same_tensor() -> None:
    t = fd.transforms.ExpTransform().with_cache()
    x = ferro.randn(3)
    y = t(x)
    assert t(x) is y and t.inv(y) is x
    with pytest.raises(ValueError, match="cache_size"):
        fd.transforms.ExpTransform(cache_size=2)


CONSTRAINTS = ["real", "positive", "nonnegative", "unit_interval", "simplex", "lower_cholesky", "corr_cholesky",
               "positive_definite", "real_vector", "greater_than", "less_than", "interval"]


@pytest.mark.parametrize("name", CONSTRAINTS)
def test_biject_to_and_transform_to(name: str) -> None:
    """The transforms land in their constraint, and are torch's transforms."""
    made = {"greater_than": lambda c: c.greater_than(1.5), "less_than": lambda c: c.less_than(-2.0),
            "interval": lambda c: c.interval(-1.0, 3.0)}
    c_m = made[name](fd.constraints) if name in made else getattr(fd.constraints, name)
    c_t = made[name](td.constraints) if name in made else getattr(td.constraints, name)
    shape = (2, 3, 3) if name in ("lower_cholesky", "positive_definite") else (2, 3)
    x = _real(*shape)
    for reg_m, reg_t in ((fd.biject_to, td.biject_to), (fd.transform_to, td.transform_to)):
        try:
            tt = reg_t(c_t)
        except NotImplementedError:
            with pytest.raises(NotImplementedError):
                reg_m(c_m)
            continue
        tm = reg_m(c_m)
        assert type(tm).__name__ == type(tt).__name__
        y = tm(ferro.tensor(x))
        np.testing.assert_allclose(y.numpy(), tt(torch.tensor(x)).numpy(), rtol=1e-7, atol=1e-9)
        assert bool(c_m.check(y).all()) and bool(c_t.check(torch.tensor(y.numpy())).all())


def test_constraints_check_as_torch() -> None:
    values = [np.array([[1.0, 0.0], [0.5, 2.0]]), np.array([[1.0, 0.3], [0.5, 2.0]]),
              np.array([[1.0, 0.0], [0.0, -1.0]]), np.array([[2.0, 1.0], [1.0, 2.0]]),
              np.array([[1.0, 3.0], [3.0, 1.0]]), np.array([[1.0, 0.0], [0.6, 0.8]])]
    names = ["lower_triangular", "lower_cholesky", "corr_cholesky", "square", "symmetric", "positive_definite",
             "positive_semidefinite", "real_vector", "simplex", "one_hot", "boolean", "nonnegative_integer",
             "positive_integer", "positive", "nonnegative", "unit_interval"]
    for name in names:
        for v in values:
            got = getattr(fd.constraints, name).check(ferro.tensor(v)).numpy()
            want = getattr(td.constraints, name).check(torch.tensor(v)).numpy()
            np.testing.assert_array_equal(got, want, err_msg=name)
    assert repr(fd.constraints.real_vector) == repr(td.constraints.real_vector)
    assert fd.constraints.is_dependent(fd.Uniform.support) and fd.constraints.is_dependent(fd.constraints.dependent)
    assert fd.Uniform.support.event_dim == 0 and fd.Categorical.support.is_discrete


def test_lazy_import() -> None:
    """``import ferro`` does not import the distributions; the first use of ``ferro.distributions`` does."""
    out = run_json("import sys, json, ferro; a = 'ferro.distributions' in sys.modules; ferro.distributions.Normal; "
                   "print(json.dumps([a, 'ferro.distributions' in sys.modules]))")
    assert out == [False, True]


def test_perplexity_and_sample_n() -> None:
    d = fd.Gamma(ferro.tensor([2.0, 3.0], dtype=ferro.float64), 1.0)
    np.testing.assert_allclose(d.perplexity().numpy(), np.exp(d.entropy().numpy()))
    assert tuple(d.sample_n(4).shape) == (4, 2)
    assert math.isclose(float(fd.Chi2(4.0).df), 4.0)


def test_lkj_cholesky_draws() -> None:
    """The off-diagonal correlations of LKJ(eta) in dimension d have mean 0 and variance 1 / (2 eta + d - 1);
    the draws are Cholesky factors of correlation matrices."""
    ferro.manual_seed(4)
    n, d = 20000, 3
    eta = np.array([0.5, 1.0, 4.0])
    lower = fd.LKJCholesky(d, ferro.tensor(eta)).sample((n,))
    assert bool(fd.constraints.corr_cholesky.check(lower).all())
    corr = (lower @ lower.mT).numpy()[..., 1, 0]
    var = 1 / (2 * eta + d - 1)
    np.testing.assert_array_less(np.abs(corr.mean(0)), 5 * np.sqrt(var / n))
    np.testing.assert_allclose(corr.var(0), var, rtol=0.05)


def test_torch_submodule_paths() -> None:
    """``ferro.distributions.<module>`` holds what ``torch.distributions.<module>`` exports, for each of
    torch's submodules."""
    import importlib
    import pkgutil

    for info in pkgutil.iter_modules(td.__path__):
        theirs = importlib.import_module(f"torch.distributions.{info.name}")
        mine = importlib.import_module(f"ferro.distributions.{info.name}")
        for name in theirs.__all__:
            assert hasattr(mine, name), f"ferro.distributions.{info.name}.{name}"


@pytest.mark.parametrize("case", sorted(CASES))
def test_values_in_float32(case: str) -> None:
    """The same in float32 (on the CPU): results keep the dtype and agree with torch's to float32 precision."""
    mine, theirs = _build(case, "cpu", "float32")
    vm, vt = _value(theirs, case, "cpu")
    lp = mine.log_prob(vm)
    assert lp.dtype == ferro.float32
    _assert_same(lambda: lp, lambda: theirs.log_prob(vt), "log_prob", rtol=2e-4, atol=2e-4)
    _assert_same(lambda: mine.entropy(), lambda: theirs.entropy(), "entropy", rtol=2e-4, atol=2e-4)
    for moment in ("mean", "variance"):
        _assert_same(lambda m=moment: getattr(mine, m), lambda m=moment: getattr(theirs, m), moment, rtol=2e-4,
                     atol=2e-4)
    x = mine.sample((3,))
    assert x.dtype == (ferro.int64 if case in INT_VALUES else ferro.float32)


@pytest.mark.parametrize("case", sorted(CASES))
def test_log_prob_and_entropy_gradients_match_torch(case: str, dev: str, torch_float64: Any) -> None:
    """Gradients of ``log_prob(value).sum() + entropy().sum()`` with respect to every parameter, against
    torch's (the symmetric part for symmetric matrix parameters)."""
    leaves_m: list[Any] = []
    leaves_t: list[Any] = []

    def leaf(lst: list[Any], make: Callable[[np.ndarray], Any]) -> Callable[[Any], Any]:
        def t(a: Any) -> Any:
            x = make(np.asarray(a, dtype=np.float64))
            lst.append(x)
            return x
        return t

    state = RNG.bit_generator.state
    mine = CASES[case](fd, leaf(leaves_m, lambda a: ferro.tensor(a, device=dev, requires_grad=True)))
    RNG.bit_generator.state = state
    theirs = CASES[case](td, leaf(leaves_t, lambda a: torch.tensor(a, requires_grad=True)))
    torch.manual_seed(3)
    vt = theirs.sample((2,))
    vm = ferro.tensor(vt.numpy(), device=dev)
    loss_t = theirs.log_prob(vt).sum()
    loss_m = mine.log_prob(vm).sum()
    try:
        loss_t = loss_t + theirs.entropy().sum()
    except NotImplementedError:
        pass  # torch has no entropy for it: the log_prob alone
    else:
        loss_m = loss_m + mine.entropy().sum()
    loss_t.backward()
    loss_m.backward()
    for lm, lt in zip(leaves_m, leaves_t, strict=True):
        if lt.grad is None:
            continue
        g_m = _np(lm.grad) if lm.grad is not None else np.zeros(tuple(lt.shape))
        g_m, g_t = _defined_part(case, g_m, lt.grad.numpy())
        np.testing.assert_allclose(g_m, g_t, rtol=1e-6, atol=1e-8, err_msg=case)


def test_a_subclass_written_for_torch() -> None:
    """A distribution written as PyTorch's are (its own expand through _get_checked_instance) works."""
    from ferro.distributions import constraints
    from ferro.distributions.utils import broadcast_all

    class Shifted(fd.Distribution):
        arg_constraints = {"shift": constraints.real}
        support = constraints.real
        has_rsample = True

        def __init__(self, shift: Any, validate_args: Any = None) -> None:
            (self.shift,) = broadcast_all(shift)
            super().__init__(self.shift.shape, validate_args=validate_args)

        def expand(self, batch_shape: Any, _instance: Any = None) -> Any:
            new = self._get_checked_instance(Shifted, _instance)
            new.shift = self.shift.expand(batch_shape)
            super(Shifted, new).__init__(batch_shape, validate_args=False)
            return new

        def rsample(self, sample_shape: Any = ()) -> Any:
            return self.shift + ferro.randn(self._extended_shape(sample_shape), dtype=self.shift.dtype)

        def log_prob(self, value: Any) -> Any:
            return fd.Normal(self.shift, 1.0).log_prob(value)

    d = Shifted(ferro.tensor([0.0, 1.0])).expand((3, 2))
    assert tuple(d.batch_shape) == (3, 2) and tuple(d.sample((4,)).shape) == (4, 3, 2)
    with pytest.raises(ValueError, match="shift"):
        Shifted(ferro.tensor([float("nan")]))


def test_transform_cache_returns_the_partner_of_the_last_pair_as_torch() -> None:
    """``cache_size=1`` keeps the last (x, y): the same x gives the same y object, and y's inverse is x itself."""
    import torch

    from ferro.distributions.transforms import ExpTransform
    for lib, make in ((torch, torch.distributions.transforms.ExpTransform), (ferro, ExpTransform)):
        t = make(cache_size=1)
        x = lib.tensor([0.5, -1.0])
        y = t(x)
        assert t(x) is y and t.inv(y) is x
        x2 = t.inv(lib.tensor([2.0]))  # a new y: computed, and kept as the pair
        assert abs(float(t(x2)[0]) - 2.0) < 1e-6
        assert t.inv(y) is not x  # the first pair was replaced
        uncached = make()
        assert uncached(x) is not uncached(x)
