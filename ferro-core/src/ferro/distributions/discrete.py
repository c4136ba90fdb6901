"""Counting distributions: Binomial, Geometric, Poisson, NegativeBinomial, Multinomial (draws from
``_samplers``: Poisson and binomial by Hormann's rejection, negative binomial as a gamma-Poisson mixture)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from numbers import Number

from .. import _api as api
from .._api import Size, Tensor
from ..nn import functional as nnf
from . import constraints
from ._probs import BinaryParams
from ._samplers import binomial, poisson
from .categorical import Categorical, OverCategorical
from .distribution import Distribution
from .exp_family import ExponentialFamily
from .gamma import Gamma
from .utils import broadcast_all

__all__ = ["Binomial", "Geometric", "Multinomial", "NegativeBinomial", "Poisson"]


class Binomial(BinaryParams, Distribution):
    """The number of successes in ``total_count`` trials of success probability ``probs`` (or
    ``sigmoid(logits)``)."""

    arg_constraints = {"total_count": constraints.nonnegative_integer, "probs": constraints.unit_interval,
                       "logits": constraints.real}
    has_enumerate_support = True

    def __init__(self, total_count: Tensor | int = 1, probs: Tensor | float | None = None,
                 logits: Tensor | float | None = None, validate_args: bool | None = None) -> None:
        (count,) = self._set_binary(probs, logits, total_count)
        self.total_count = count.to(self._param.dtype)
        super().__init__(self._param.shape, validate_args=validate_args)

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self) -> constraints.Constraint:
        """``0 .. total_count``."""
        return constraints.integer_interval(0, self.total_count)

    @property
    def mean(self) -> Tensor:
        return self.total_count * self.probs

    @property
    def mode(self) -> Tensor:
        return ((self.total_count + 1) * self.probs).floor().minimum(self.total_count)

    @property
    def variance(self) -> Tensor:
        return self.total_count * self.probs * (1 - self.probs)

    def sample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        return binomial(self.total_count.expand(shape), self.probs.expand(shape))

    def log_prob(self, value: Tensor) -> Tensor:
        value = self._checked(value)
        n, logits = self.total_count, self.logits
        normalize = n * logits.clamp(min=0) + n * (-logits.abs()).exp().log1p() - (n + 1).lgamma()
        return value * logits - (value + 1).lgamma() - (n - value + 1).lgamma() - normalize

    def _homogeneous_count(self, what: str) -> int:
        total = int(self.total_count.max())
        if int(self.total_count.min()) != total:
            raise NotImplementedError(f"Inhomogeneous total count not supported by `{what}`.")
        return total

    def entropy(self) -> Tensor:
        self._homogeneous_count("entropy")
        log_prob = self.log_prob(self.enumerate_support(False))
        return -(log_prob.exp() * log_prob).sum(0)

    def enumerate_support(self, expand: bool = True) -> Tensor:
        """``0 .. total_count`` along a new first dim (the count must be the same across the batch)."""
        total = self._homogeneous_count("enumerate_support")
        values = api.arange(1 + total, dtype=self._param.dtype, device=self._param.device)
        values = values.reshape((-1,) + (1,) * len(self._batch_shape))
        return values.expand((-1, *self._batch_shape)) if expand else values


class Geometric(BinaryParams, Distribution):
    """The number of failures before the first success, of success probability ``probs`` (> 0)."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(self, probs: Tensor | float | None = None, logits: Tensor | float | None = None,
                 validate_args: bool | None = None) -> None:
        self._set_binary(probs, logits)
        scalar = isinstance(probs if probs is not None else logits, Number)
        batch = Size() if scalar else self._param.shape
        if probs is not None and (validate_args if validate_args is not None else self._validate_args):
            value = self.probs
            valid = value > 0
            if not bool(valid.all()):
                raise ValueError(f"Expected parameter probs ({type(value).__name__} of shape {tuple(value.shape)}) "
                                 f"of distribution {self!r} to be positive but found invalid values:\n"
                                 f"{value[~valid]}")
        super().__init__(batch, validate_args=validate_args)

    @property
    def mean(self) -> Tensor:
        return 1.0 / self.probs - 1.0

    @property
    def mode(self) -> Tensor:
        return api.zeros_like(self.probs)

    @property
    def variance(self) -> Tensor:
        return (1.0 / self.probs - 1.0) / self.probs

    def sample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        with api.no_grad():
            p = self.probs
            tiny = api.finfo(p.dtype).tiny
            u = api.rand(self._extended_shape(sample_shape), dtype=p.dtype, device=p.device).clamp(min=tiny)
            return (u.log() / (-p).log1p()).floor()

    def log_prob(self, value: Tensor) -> Tensor:
        value = self._checked(value)
        value, probs = broadcast_all(value, self.probs)
        probs = api.where((probs == 1) & (value == 0), 0.0, probs)
        return value * (-probs).log1p() + self.probs.log()

    def entropy(self) -> Tensor:
        return nnf.binary_cross_entropy_with_logits(self.logits, self.probs, reduction="none") / self.probs


class Poisson(ExponentialFamily):
    """The Poisson distribution of mean ``rate`` (>= 0)."""

    arg_constraints = {"rate": constraints.nonnegative}
    support = constraints.nonnegative_integer

    def __init__(self, rate: Tensor | float, validate_args: bool | None = None) -> None:
        self._set_params(validate_args, rate=rate)

    @property
    def mean(self) -> Tensor:
        return self.rate

    @property
    def mode(self) -> Tensor:
        return self.rate.floor()

    @property
    def variance(self) -> Tensor:
        return self.rate

    def sample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        return poisson(self.rate.expand(self._extended_shape(sample_shape)))

    def log_prob(self, value: Tensor) -> Tensor:
        value = self._checked(value)
        rate, value = broadcast_all(self.rate, value)
        return api.xlogy(value, rate) - rate - (value + 1).lgamma()

    @property
    def _natural_params(self) -> tuple[Tensor, ...]:
        return (self.rate.log(),)

    def _log_normalizer(self, x: Tensor) -> Tensor:  # type: ignore[override]
        return x.exp()


class NegativeBinomial(BinaryParams, Distribution):
    """The number of successes (of probability ``probs``) before ``total_count`` failures."""

    arg_constraints = {"total_count": constraints.greater_than_eq(0),
                       "probs": constraints.half_open_interval(0.0, 1.0), "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(self, total_count: Tensor | float, probs: Tensor | float | None = None,
                 logits: Tensor | float | None = None, validate_args: bool | None = None) -> None:
        (count,) = self._set_binary(probs, logits, total_count)
        self.total_count = count.to(self._param.dtype)
        super().__init__(self._param.shape, validate_args=validate_args)

    @property
    def mean(self) -> Tensor:
        return self.total_count * self.logits.exp()

    @property
    def mode(self) -> Tensor:
        return ((self.total_count - 1) * self.logits.exp()).floor().clamp(min=0.0)

    @property
    def variance(self) -> Tensor:
        return self.mean / (-self.logits).sigmoid()

    def sample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        with api.no_grad():
            rate = Gamma(self.total_count, (-self.logits).exp(), validate_args=False).sample(sample_shape)
            return poisson(rate)

    def log_prob(self, value: Tensor) -> Tensor:
        value = self._checked(value)
        n = self.total_count
        unnormalized = n * nnf.logsigmoid(-self.logits) + value * nnf.logsigmoid(self.logits)
        normalization = -(n + value).lgamma() + (1.0 + value).lgamma() + n.lgamma()
        normalization = api.where(n + value == 0.0, 0.0, normalization)
        return unnormalized - normalization


class Multinomial(OverCategorical, Distribution):
    """Counts of ``total_count`` draws from a :class:`Categorical` of ``probs`` / ``logits`` (the event is the
    last dim)."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}

    def __init__(self, total_count: int = 1, probs: Tensor | None = None, logits: Tensor | None = None,
                 validate_args: bool | None = None) -> None:
        if not isinstance(total_count, int):
            raise NotImplementedError("inhomogeneous total_count is not supported")
        self.total_count = total_count
        self._categorical = Categorical(probs=probs, logits=logits)
        self._binomial = Binomial(total_count=total_count, probs=self.probs)
        super().__init__(self._categorical.batch_shape, self._categorical.param_shape[-1:], validate_args)

    def _expanded(self, source: Distribution, batch_shape: Size) -> None:
        self._categorical = self._categorical.expand(batch_shape)  # type: ignore[assignment]
        self._binomial = self._binomial.expand(tuple(batch_shape) + tuple(self._event_shape))  # type: ignore

    @constraints.dependent_property(is_discrete=True, event_dim=1)
    def support(self) -> constraints.Constraint:
        """Non-negative counts summing to at most ``total_count``."""
        return constraints.multinomial(self.total_count)

    @property
    def mean(self) -> Tensor:
        return self.probs * self.total_count

    @property
    def variance(self) -> Tensor:
        return self.total_count * self.probs * (1 - self.probs)

    def sample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        with api.no_grad():
            samples = self._categorical.sample((self.total_count, *sample_shape))
            samples = samples.movedim(0, -1)
            counts = api.zeros(self._extended_shape(sample_shape), dtype=api.int64, device=samples.device)
            counts = counts.scatter_add(-1, samples, api.ones_like(samples))
            return counts.to(self.probs.dtype)

    def entropy(self) -> Tensor:
        n = float(self.total_count)
        term1 = n * self._categorical.entropy() - math.lgamma(n + 1)
        support = self._binomial.enumerate_support(expand=False)[1:]
        binomial_probs = self._binomial.log_prob(support).exp()
        weights = (support + 1).lgamma()
        return term1 + (binomial_probs * weights).sum(0).sum(-1)

    def log_prob(self, value: Tensor) -> Tensor:
        value = self._checked(value)
        logits, value = broadcast_all(self.logits, value)
        log_factorial_n = (value.sum(-1) + 1).lgamma()
        log_factorial_xs = (value + 1).lgamma().sum(-1)
        logits = api.where((value == 0) & (logits == -float("inf")), 0.0, logits)
        return log_factorial_n - log_factorial_xs + (logits * value).sum(-1)
