"""``Bernoulli(probs=... | logits=...)``: 1 with probability ``probs``, else 0."""

from __future__ import annotations

from collections.abc import Sequence
from numbers import Number

from .. import _api as api
from .._api import Size, Tensor
from ..nn import functional as nnf
from . import constraints
from ._probs import BinaryParams
from .exp_family import ExponentialFamily
from .utils import broadcast_all, clamp_probs

__all__ = ["Bernoulli", "clamp_probs"]


class Bernoulli(BinaryParams, ExponentialFamily):
    """A coin that gives 1 with probability ``probs`` (or ``sigmoid(logits)``): give exactly one of them."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.boolean
    has_enumerate_support = True
    _mean_carrier_measure = 0

    def __init__(self, probs: Tensor | float | None = None, logits: Tensor | float | None = None,
                 validate_args: bool | None = None) -> None:
        self._set_binary(probs, logits)
        scalar = isinstance(probs if probs is not None else logits, Number)
        super().__init__(Size() if scalar else self._param.shape, validate_args=validate_args)

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
        value = self._checked(value)
        logits, value = broadcast_all(self.logits, value)
        return -nnf.binary_cross_entropy_with_logits(logits, value, reduction="none")

    def entropy(self) -> Tensor:
        return nnf.binary_cross_entropy_with_logits(self.logits, self.probs, reduction="none")

    def enumerate_support(self, expand: bool = True) -> Tensor:
        """The values 0 and 1 along a new first dim (broadcast over the batch with ``expand``)."""
        values = api.arange(2, dtype=self._param.dtype, device=self._param.device)
        values = values.reshape((2,) + (1,) * len(self._batch_shape))
        return values.expand((2, *self._batch_shape)) if expand else values

    @property
    def _natural_params(self) -> tuple[Tensor, ...]:
        return (self.logits,)

    def _log_normalizer(self, x: Tensor) -> Tensor:  # type: ignore[override]
        return x.exp().log1p()
