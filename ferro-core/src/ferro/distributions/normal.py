"""``Normal(loc, scale)``: the Gaussian, with reparameterized sampling."""

from __future__ import annotations

import math
from collections.abc import Sequence

from .. import _api as api
from .._api import Tensor
from . import constraints
from .distribution import LOG_SQRT_2PI, LocCentered
from .exp_family import ExponentialFamily

__all__ = ["Normal"]


class Normal(LocCentered, ExponentialFamily):
    """The normal distribution of mean ``loc`` and standard deviation ``scale`` (> 0)."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True
    _mean_carrier_measure = 0

    def __init__(self, loc: Tensor | float, scale: Tensor | float, validate_args: bool | None = None) -> None:
        self._set_params(validate_args, loc=loc, scale=scale)

    @property
    def stddev(self) -> Tensor:
        return self.scale

    @property
    def variance(self) -> Tensor:
        return self.scale.pow(2)

    def rsample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        eps = api.randn(self._extended_shape(sample_shape), dtype=self.loc.dtype, device=self.loc.device)
        return self.loc + eps * self.scale

    def log_prob(self, value: Tensor) -> Tensor:
        value = self._checked(value)
        return -((value - self.loc) ** 2) / (2 * self.scale.pow(2)) - self.scale.log() - LOG_SQRT_2PI

    def cdf(self, value: Tensor) -> Tensor:
        value = self._checked(value)
        return 0.5 * (1 + ((value - self.loc) / (self.scale * math.sqrt(2))).erf())

    def icdf(self, value: Tensor) -> Tensor:
        return self.loc + self.scale * (2 * value - 1).erfinv() * math.sqrt(2)

    def entropy(self) -> Tensor:
        return 0.5 + 0.5 * math.log(2 * math.pi) + self.scale.log()

    @property
    def _natural_params(self) -> tuple[Tensor, ...]:
        return (self.loc / self.scale.pow(2), -0.5 * self.scale.pow(2).reciprocal())

    def _log_normalizer(self, x: Tensor, y: Tensor) -> Tensor:  # type: ignore[override]
        return -0.25 * x.pow(2) / y + 0.5 * (-math.pi / y).log()
