"""``Uniform(low, high)``: uniform on ``[low, high)``, with reparameterized sampling."""

from __future__ import annotations

from collections.abc import Sequence

from .. import _api as api
from .._api import Tensor
from . import constraints
from .distribution import Distribution

__all__ = ["Uniform"]


class Uniform(Distribution):
    """The uniform distribution on the half-open interval ``[low, high)`` (``low < high``)."""

    has_rsample = True

    @property
    def arg_constraints(self) -> dict[str, constraints.Constraint]:  # type: ignore[override]
        """``low < high``, each checked against the other."""
        return {"low": constraints.less_than(self.high), "high": constraints.greater_than(self.low)}

    def __init__(self, low: Tensor | float, high: Tensor | float, validate_args: bool | None = None) -> None:
        self._set_params(validate_args, low=low, high=high)

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self) -> constraints.Constraint:
        """``[low, high]`` (``log_prob`` at ``high`` itself is -inf, as PyTorch)."""
        return constraints.interval(self.low, self.high)

    @property
    def mean(self) -> Tensor:
        return (self.high + self.low) / 2

    @property
    def mode(self) -> Tensor:
        return self.high * float("nan")

    @property
    def stddev(self) -> Tensor:
        return (self.high - self.low) / 12 ** 0.5

    @property
    def variance(self) -> Tensor:
        return (self.high - self.low).pow(2) / 12

    def rsample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        u = api.rand(self._extended_shape(sample_shape), dtype=self.low.dtype, device=self.low.device)
        return self.low + u * (self.high - self.low)

    def log_prob(self, value: Tensor) -> Tensor:
        value = self._checked(value)
        inside = (self.low <= value) & (self.high > value)
        return inside.to(self.low.dtype).log() - (self.high - self.low).log()

    def cdf(self, value: Tensor) -> Tensor:
        value = self._checked(value)
        return ((value - self.low) / (self.high - self.low)).clamp(min=0, max=1)

    def icdf(self, value: Tensor) -> Tensor:
        return value * (self.high - self.low) + self.low

    def entropy(self) -> Tensor:
        return (self.high - self.low).log()
