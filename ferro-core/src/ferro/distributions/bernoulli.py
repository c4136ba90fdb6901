"""``Bernoulli(probs=... | logits=...)``: 1 with probability ``probs``, else 0."""

from __future__ import annotations

from collections.abc import Sequence
from functools import cached_property
from numbers import Number

from .. import _api as api
from .._api import Size, Tensor
from ..nn import functional as nnf
from . import constraints
from .distribution import Distribution, broadcast_all

__all__ = ["Bernoulli", "clamp_probs"]


def clamp_probs(probs: Tensor) -> Tensor:
    """``probs`` kept inside ``[eps, 1 - eps]`` of their dtype, so that their logits are finite."""
    eps = api.finfo(probs.dtype).eps
    return probs.clamp(min=eps, max=1 - eps)


class Bernoulli(Distribution):
    """A coin that gives 1 with probability ``probs`` (or ``sigmoid(logits)``): give exactly one of them."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.boolean
    has_enumerate_support = True

    def __init__(self, probs: Tensor | float | None = None, logits: Tensor | float | None = None,
                 validate_args: bool | None = None) -> None:
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            (self.probs,) = broadcast_all(probs)
        else:
            (self.logits,) = broadcast_all(logits)
        given = probs if probs is not None else logits
        self._param = self.probs if probs is not None else self.logits
        super().__init__(Size() if isinstance(given, Number) else self._param.shape, validate_args=validate_args)

    @cached_property
    def probs(self) -> Tensor:
        """The probability of 1."""
        return self.logits.sigmoid()

    @cached_property
    def logits(self) -> Tensor:
        """``log(p / (1 - p))``."""
        p = clamp_probs(self.probs)
        return p.log() - (-p).log1p()

    @property
    def param_shape(self) -> Size:
        """The shape of the parameter given."""
        return self._param.shape

    @property
    def mean(self) -> Tensor:
        return self.probs

    @property
    def mode(self) -> Tensor:
        mode = (self.probs >= 0.5).to(self.probs.dtype)
        return api.where(self.probs == 0.5, float("nan"), mode)

    @property
    def variance(self) -> Tensor:
        return self.probs * (1 - self.probs)

    def sample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        with api.no_grad():
            return api.bernoulli(self.probs.expand(self._extended_shape(sample_shape)))

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        return -nnf.binary_cross_entropy_with_logits(logits, value, reduction="none")

    def entropy(self) -> Tensor:
        return nnf.binary_cross_entropy_with_logits(self.logits, self.probs, reduction="none")

    def enumerate_support(self, expand: bool = True) -> Tensor:
        """The values 0 and 1 along a new first dim (broadcast over the batch with ``expand``)."""
        values = api.arange(2, dtype=self._param.dtype, device=self._param.device)
        values = values.reshape((2,) + (1,) * len(self._batch_shape))
        return values.expand((2, *self._batch_shape)) if expand else values
