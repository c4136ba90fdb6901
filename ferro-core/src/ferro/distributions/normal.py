"""``Normal(loc, scale)``: the Gaussian, with reparameterized sampling."""

from __future__ import annotations

import math
from collections.abc import Sequence
from numbers import Number
from typing import Any

from .. import _api as api
from .._api import Size, Tensor
from . import constraints
from .distribution import LOG_SQRT_2PI, Distribution, broadcast_all

__all__ = ["Normal"]


class Normal(Distribution):
    """The normal distribution of mean ``loc`` and standard deviation ``scale`` (> 0)."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, loc: Tensor | float, scale: Tensor | float, validate_args: bool | None = None) -> None:
        self.loc, self.scale = broadcast_all(loc, scale)
        batch = Size() if isinstance(loc, Number) and isinstance(scale, Number) else self.loc.shape
        super().__init__(batch, validate_args=validate_args)

    @property
    def mean(self) -> Tensor:
        return self.loc

    @property
    def mode(self) -> Tensor:
        return self.loc

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
        if self._validate_args:
            self._validate_sample(value)
        return -((value - self.loc) ** 2) / (2 * self.scale.pow(2)) - self.scale.log() - LOG_SQRT_2PI

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return 0.5 * (1 + ((value - self.loc) / (self.scale * math.sqrt(2))).erf())

    def icdf(self, value: Tensor) -> Tensor:
        return self.loc + self.scale * (2 * value - 1).erfinv() * math.sqrt(2)

    def entropy(self) -> Tensor:
        return 0.5 + 0.5 * math.log(2 * math.pi) + self.scale.log()

    def expand(self, batch_shape: Sequence[int], _instance: Any = None) -> Normal:
        """The same distribution broadcast to ``batch_shape``."""
        return Normal(self.loc.expand(batch_shape), self.scale.expand(batch_shape), validate_args=False)
