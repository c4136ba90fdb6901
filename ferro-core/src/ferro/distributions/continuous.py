"""Continuous distributions on the line sampled by inverting their cdf: Exponential, Laplace, Cauchy,
ContinuousBernoulli, GeneralizedPareto; and the circular VonMises (sampled by rejection)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import cached_property
from numbers import Number
from typing import Any

from .. import _api as api
from .._api import Size, Tensor
from ..nn import functional as nnf
from . import constraints
from ._samplers import until_accepted, widest_float
from .distribution import Distribution, LocCentered
from .exp_family import ExponentialFamily
from .utils import broadcast_all, clamp_probs, logits_to_probs, probs_to_logits

__all__ = ["Cauchy", "ContinuousBernoulli", "Exponential", "GeneralizedPareto", "Laplace", "VonMises"]

_NAN, _INF = float("nan"), float("inf")


def _uniform(d: Distribution, sample_shape: Sequence[int], low: float = 0.0) -> Tensor:
    """Uniform draws on ``[low, 1)`` of ``d``'s extended shape, dtype and device."""
    p = d._param_like()
    u = api.rand(d._extended_shape(sample_shape), dtype=p.dtype, device=p.device)
    return u if low == 0.0 else low + u * (1 - low)


class Exponential(ExponentialFamily):
    """The exponential distribution of rate ``rate`` (> 0): density ``rate * exp(-rate * x)`` on ``x >= 0``."""

    arg_constraints = {"rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    _mean_carrier_measure = 0

    def __init__(self, rate: Tensor | float, validate_args: bool | None = None) -> None:
        self._set_params(validate_args, rate=rate)

    @property
    def mean(self) -> Tensor:
        return self.rate.reciprocal()

    @property
    def mode(self) -> Tensor:
        return api.zeros_like(self.rate)

    @property
    def stddev(self) -> Tensor:
        return self.rate.reciprocal()

    @property
    def variance(self) -> Tensor:
        return self.rate.pow(-2)

    def rsample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        return -(-_uniform(self, sample_shape)).log1p() / self.rate

    def log_prob(self, value: Tensor) -> Tensor:
        value = self._checked(value)
        return self.rate.log() - self.rate * value

    def cdf(self, value: Tensor) -> Tensor:
        value = self._checked(value)
        return 1 - (-self.rate * value).exp()

    def icdf(self, value: Tensor) -> Tensor:
        return -(-value).log1p() / self.rate

    def entropy(self) -> Tensor:
        return 1.0 - self.rate.log()

    @property
    def _natural_params(self) -> tuple[Tensor, ...]:
        return (-self.rate,)

    def _log_normalizer(self, x: Tensor) -> Tensor:  # type: ignore[override]
        return -(-x).log()


class Laplace(LocCentered, Distribution):
    """The Laplace distribution of location ``loc`` and scale ``scale`` (> 0)."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, loc: Tensor | float, scale: Tensor | float, validate_args: bool | None = None) -> None:
        self._set_params(validate_args, loc=loc, scale=scale)

    @property
    def variance(self) -> Tensor:
        return 2 * self.scale.pow(2)

    @property
    def stddev(self) -> Tensor:
        return 2 ** 0.5 * self.scale

    def rsample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        eps = api.finfo(self.loc.dtype).eps
        u = 2 * _uniform(self, sample_shape) - 1
        u = u.clamp(min=eps - 1)  # (-1, 1): the log below stays finite
        return self.loc - self.scale * u.sign() * (-u.abs()).log1p()

    def log_prob(self, value: Tensor) -> Tensor:
        value = self._checked(value)
        return -(2 * self.scale).log() - (value - self.loc).abs() / self.scale

    def cdf(self, value: Tensor) -> Tensor:
        value = self._checked(value)
        return 0.5 - 0.5 * (value - self.loc).sign() * (-(value - self.loc).abs() / self.scale).expm1()

    def icdf(self, value: Tensor) -> Tensor:
        term = value - 0.5
        return self.loc - self.scale * term.sign() * (-2 * term.abs()).log1p()

    def entropy(self) -> Tensor:
        return 1 + (2 * self.scale).log()


class Cauchy(Distribution):
    """The Cauchy (Lorentz) distribution of median ``loc`` and half width ``scale`` (> 0)."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, loc: Tensor | float, scale: Tensor | float, validate_args: bool | None = None) -> None:
        self._set_params(validate_args, loc=loc, scale=scale)

    @property
    def mean(self) -> Tensor:
        return api.full(self._extended_shape(), _NAN, dtype=self.loc.dtype, device=self.loc.device)

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def variance(self) -> Tensor:
        return api.full(self._extended_shape(), _INF, dtype=self.loc.dtype, device=self.loc.device)

    def rsample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        return self.icdf(_uniform(self, sample_shape))

    def log_prob(self, value: Tensor) -> Tensor:
        value = self._checked(value)
        return -math.log(math.pi) - self.scale.log() - (((value - self.loc) / self.scale) ** 2).log1p()

    def cdf(self, value: Tensor) -> Tensor:
        value = self._checked(value)
        return ((value - self.loc) / self.scale).atan() / math.pi + 0.5

    def icdf(self, value: Tensor) -> Tensor:
        return (math.pi * (value - 0.5)).tan() * self.scale + self.loc

    def entropy(self) -> Tensor:
        return math.log(4 * math.pi) + self.scale.log()


class ContinuousBernoulli(ExponentialFamily):
    """The continuous Bernoulli on ``[0, 1]``, density proportional to ``p**x (1 - p)**(1 - x)``, given by
    ``probs`` or ``logits``; near ``p = 1/2`` (inside ``lims``) Taylor expansions keep it stable."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    has_rsample = True
    _mean_carrier_measure = 0

    def __init__(self, probs: Tensor | float | None = None, logits: Tensor | float | None = None,
                 lims: tuple[float, float] = (0.499, 0.501), validate_args: bool | None = None) -> None:
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        given = probs if probs is not None else logits
        (param,) = broadcast_all(given)
        if probs is not None:
            if validate_args is not None and not bool(self.arg_constraints["probs"].check(param).all()):
                raise ValueError("The parameter probs has invalid values")
            self.probs = clamp_probs(param)
        else:
            self.logits = param
        self._given, self._lims = "probs" if probs is not None else "logits", lims
        super().__init__(Size() if isinstance(given, Number) else param.shape, validate_args=validate_args)

    @cached_property
    def logits(self) -> Tensor:
        """The logits of ``probs``."""
        return probs_to_logits(self.probs, is_binary=True)

    @cached_property
    def probs(self) -> Tensor:
        """The parameter in ``(0, 1)``."""
        return clamp_probs(logits_to_probs(self.logits, is_binary=True))

    @property
    def _param(self) -> Tensor:
        return getattr(self, self._given)

    @property
    def param_shape(self) -> Size:
        """The shape of the parameter given."""
        return self._param.shape

    def _outside_unstable_region(self) -> Tensor:
        return (self.probs <= self._lims[0]) | (self.probs > self._lims[1])

    def _cut_probs(self) -> Tensor:
        return api.where(self._outside_unstable_region(), self.probs, self._lims[0])

    def _cont_bern_log_norm(self) -> Tensor:
        cut = self._cut_probs()
        below = api.where(cut <= 0.5, cut, 0.0)
        above = api.where(cut >= 0.5, cut, 1.0)
        log_norm = ((-cut).log1p() - cut.log()).abs().log() - api.where(
            cut <= 0.5, (-2.0 * below).log1p(), (2.0 * above - 1.0).log())
        x = (self.probs - 0.5).pow(2)
        taylor = math.log(2.0) + (4.0 / 3.0 + 104.0 / 45.0 * x) * x
        return api.where(self._outside_unstable_region(), log_norm, taylor)

    @property
    def mean(self) -> Tensor:
        cut = self._cut_probs()
        mus = cut / (2.0 * cut - 1.0) + 1.0 / ((-cut).log1p() - cut.log())
        x = self.probs - 0.5
        taylor = 0.5 + (1.0 / 3.0 + 16.0 / 45.0 * x.pow(2)) * x
        return api.where(self._outside_unstable_region(), mus, taylor)

    @property
    def variance(self) -> Tensor:
        cut = self._cut_probs()
        var = cut * (cut - 1.0) / (1.0 - 2.0 * cut).pow(2) + 1.0 / ((-cut).log1p() - cut.log()).pow(2)
        x = (self.probs - 0.5).pow(2)
        taylor = 1.0 / 12.0 - (1.0 / 15.0 - 128.0 / 945.0 * x) * x
        return api.where(self._outside_unstable_region(), var, taylor)

    def rsample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        return self.icdf(_uniform(self, sample_shape))

    def log_prob(self, value: Tensor) -> Tensor:
        value = self._checked(value)
        logits, value = broadcast_all(self.logits, value)
        return -nnf.binary_cross_entropy_with_logits(logits, value, reduction="none") + self._cont_bern_log_norm()

    def cdf(self, value: Tensor) -> Tensor:
        value = self._checked(value)
        cut = self._cut_probs()
        cdfs = (cut.pow(value) * (1.0 - cut).pow(1.0 - value) + cut - 1.0) / (2.0 * cut - 1.0)
        unbounded = api.where(self._outside_unstable_region(), cdfs, value)
        return api.where(value <= 0.0, 0.0, api.where(value >= 1.0, 1.0, unbounded))

    def icdf(self, value: Tensor) -> Tensor:
        cut = self._cut_probs()
        inv = ((-cut + value * (2.0 * cut - 1.0)).log1p() - (-cut).log1p()) / (cut.log() - (-cut).log1p())
        return api.where(self._outside_unstable_region(), inv, value)

    def entropy(self) -> Tensor:
        log_p0, log_p1 = (-self.probs).log1p(), self.probs.log()
        return self.mean * (log_p0 - log_p1) - self._cont_bern_log_norm() - log_p0

    @property
    def _natural_params(self) -> tuple[Tensor, ...]:
        return (self.logits,)

    def _log_normalizer(self, x: Tensor) -> Tensor:  # type: ignore[override]
        outside = (x <= self._lims[0] - 0.5) | (x > self._lims[1] - 0.5)
        cut = api.where(outside, x, self._lims[0] - 0.5)
        log_norm = cut.expm1().abs().log() - cut.abs().log()
        taylor = 0.5 * x + x.pow(2) / 24.0 - x.pow(4) / 2880.0
        return api.where(outside, log_norm, taylor)


class GeneralizedPareto(Distribution):
    """The generalized Pareto distribution of ``loc``, ``scale`` (> 0) and ``concentration``: Exponential
    at concentration 0, Pareto above, bounded below."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive, "concentration": constraints.real}
    has_rsample = True

    def __init__(self, loc: Tensor | float, scale: Tensor | float, concentration: Tensor | float,
                 validate_args: bool | None = None) -> None:
        self._set_params(validate_args, loc=loc, scale=scale, concentration=concentration)

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self) -> constraints.Constraint:
        """``[loc, loc - scale / concentration]`` for negative concentration, else ``[loc, inf]``."""
        upper = api.where(self.concentration < 0, self.loc - self.scale / self.concentration, _INF)
        return constraints.interval(self.loc, upper)

    def _safe(self) -> tuple[Tensor, Tensor]:
        zero = api.isclose(self.concentration, api.zeros_like(self.concentration))
        return zero, api.where(zero, 1.0, self.concentration)

    def rsample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        return self.icdf(_uniform(self, sample_shape))

    def log_prob(self, value: Tensor) -> Tensor:
        value = self._checked(value)
        z = (value - self.loc) / self.scale
        zero, conc = self._safe()
        y = 1 / conc + api.ones_like(z)
        nonzero = api.where(y == 0, y, y * (conc * z).log1p())
        return -self.scale.log() - api.where(zero, z, nonzero)

    def log_survival_function(self, value: Tensor) -> Tensor:
        """``log(1 - cdf(value))``."""
        value = self._checked(value)
        z = (value - self.loc) / self.scale
        zero, conc = self._safe()
        return api.where(zero, -z, -(conc * z).log1p() / conc)

    def log_cdf(self, value: Tensor) -> Tensor:
        """``log(cdf(value))``."""
        return (-self.log_survival_function(value).exp()).log1p()

    def cdf(self, value: Tensor) -> Tensor:
        return self.log_cdf(value).exp()

    def icdf(self, value: Tensor) -> Tensor:
        zero, conc = self._safe()
        logu = (-value).log1p()
        return api.where(zero, self.loc - self.scale * logu, self.loc + self.scale / conc * (-conc * logu).expm1())

    @property
    def mean(self) -> Tensor:
        valid = self.concentration < 1
        conc = api.where(valid, self.concentration, 0.5)
        return api.where(valid, self.loc + self.scale / (1 - conc), _NAN)

    @property
    def variance(self) -> Tensor:
        valid = self.concentration < 0.5
        conc = api.where(valid, self.concentration, 0.25)
        return api.where(valid, self.scale ** 2 / ((1 - conc) ** 2 * (1 - 2 * conc)), _NAN)

    @property
    def mode(self) -> Tensor:
        return self.loc

    def entropy(self) -> Tensor:
        return (self.scale.log() + self.concentration + 1).broadcast_to(self._batch_shape)


_I0_SMALL = (1.0, 3.5156229, 3.0899424, 1.2067492, 0.2659732, 0.360768e-1, 0.45813e-2)
_I0_LARGE = (0.39894228, 0.1328592e-1, 0.225319e-2, -0.157565e-2, 0.916281e-2, -0.2057706e-1, 0.2635537e-1,
             -0.1647633e-1, 0.392377e-2)
_I1_SMALL = (0.5, 0.87890594, 0.51498869, 0.15084934, 0.2658733e-1, 0.301532e-2, 0.32411e-3)
_I1_LARGE = (0.39894228, -0.3988024e-1, -0.362018e-2, 0.163801e-2, -0.1031555e-1, 0.2282967e-1, -0.2895312e-1,
             0.1787654e-1, -0.420059e-2)


def _poly(y: Tensor, coef: Sequence[float]) -> Tensor:
    result: Any = coef[-1]
    for c in reversed(coef[:-1]):
        result = c + y * result
    return result


def log_modified_bessel(x: Tensor, order: int = 0) -> Tensor:
    """``log(I_order(x))`` for ``x > 0`` and order 0 or 1 (Abramowitz and Stegun's polynomial fits, as
    PyTorch's von Mises)."""
    small = _poly((x / 3.75) ** 2, (_I0_SMALL, _I1_SMALL)[order])
    if order == 1:
        small = x.abs() * small
    large = x - 0.5 * x.log() + _poly(3.75 / x, (_I0_LARGE, _I1_LARGE)[order]).log()
    return api.where(x < 3.75, small.log(), large)


class VonMises(LocCentered, Distribution):
    """The circular von Mises distribution of mean angle ``loc`` and ``concentration`` (> 0); angles are
    taken modulo ``2 pi``."""

    arg_constraints = {"loc": constraints.real, "concentration": constraints.positive}
    support = constraints.real

    def __init__(self, loc: Tensor | float, concentration: Tensor | float, validate_args: bool | None = None) -> None:
        self.loc, self.concentration = broadcast_all(loc, concentration)
        super().__init__(self.loc.shape, (), validate_args)

    def log_prob(self, value: Tensor) -> Tensor:
        value = self._checked(value)
        return (self.concentration * (value - self.loc).cos() - math.log(2 * math.pi)
                - log_modified_bessel(self.concentration, 0))

    def sample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        """Best and Fisher's rejection sampler, in float64 where the device has it (in float32 small
        concentrations would take many rounds, as PyTorch notes)."""
        with api.no_grad():
            shape = tuple(self._extended_shape(sample_shape))
            wide = widest_float(self.loc)
            loc, kappa = self.loc.to(wide), self.concentration.to(wide)
            tau = 1 + (1 + 4 * kappa ** 2).sqrt()
            rho = (tau - (2 * tau).sqrt()) / (2 * kappa)
            r = api.where(kappa < 1e-5, 1 / kappa + kappa, (1 + rho ** 2) / (2 * rho))

            def propose() -> tuple[Tensor, Tensor]:
                u1, u2, u3 = api.rand((3, *shape), dtype=wide, device=loc.device).unbind(0)
                z = (math.pi * u1).cos()
                f = (1 + r * z) / (r + z)
                c = kappa * (r - f)
                accept = ((c * (2 - c) - u2) > 0) | ((c / u2).log() + 1 - c >= 0)
                return (u3 - 0.5).sign() * f.clamp(min=-1, max=1).acos(), accept

            x = until_accepted(shape, loc, propose)
            return ((x + math.pi + loc) % (2 * math.pi) - math.pi).to(self.loc.dtype)

    @cached_property
    def variance(self) -> Tensor:  # type: ignore[override]
        """The circular variance."""
        k = self.concentration
        return 1 - (log_modified_bessel(k, 1) - log_modified_bessel(k, 0)).exp()
