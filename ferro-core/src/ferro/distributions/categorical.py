"""``Categorical(probs=... | logits=...)``: one of ``K`` classes, with probabilities along the last dim."""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import cached_property

from .. import _api as api
from .._api import Size, Tensor
from . import constraints
from .bernoulli import clamp_probs
from .distribution import Distribution

__all__ = ["Categorical"]


class Categorical(Distribution):
    """Class ``i`` with probability ``probs[..., i]`` (normalized to sum 1) or ``softmax(logits)[..., i]``;
    the dims before the last are the batch."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    has_enumerate_support = True

    def __init__(self, probs: Tensor | None = None, logits: Tensor | None = None,
                 validate_args: bool | None = None) -> None:
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            if probs.ndim < 1:
                raise ValueError("`probs` parameter must be at least one-dimensional.")
            self.probs = probs / probs.sum(-1, keepdim=True)
        else:
            assert logits is not None
            if logits.ndim < 1:
                raise ValueError("`logits` parameter must be at least one-dimensional.")
            self.logits = logits - logits.logsumexp(dim=-1, keepdim=True)
        self._param = self.probs if probs is not None else self.logits
        self._num_events = self._param.shape[-1]
        super().__init__(self._param.shape[:-1] if self._param.ndim > 1 else Size(), validate_args=validate_args)

    @cached_property
    def probs(self) -> Tensor:
        """The probability of each class."""
        return self.logits.softmax(-1)

    @cached_property
    def logits(self) -> Tensor:
        """The log-probability of each class."""
        return clamp_probs(self.probs).log()

    @property
    def support(self) -> constraints.Constraint:  # type: ignore[override]
        """The class indices ``0 .. K-1``."""
        return constraints.integer_interval(0, self._num_events - 1)

    @property
    def param_shape(self) -> Size:
        """The shape of the parameter given."""
        return self._param.shape

    @property
    def mean(self) -> Tensor:
        return api.full(self._extended_shape(), float("nan"), dtype=self.probs.dtype, device=self.probs.device)

    @property
    def mode(self) -> Tensor:
        return self.probs.argmax(-1)

    @property
    def variance(self) -> Tensor:
        return self.mean

    def sample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        with api.no_grad():
            probs_2d = self.probs.reshape(-1, self._num_events)
            drawn = api.multinomial(probs_2d, math.prod(sample_shape), True).t()
            return drawn.reshape(self._extended_shape(sample_shape))

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        value = value.long().unsqueeze(-1)
        shape = api.broadcast_shapes(value.shape, self.logits.shape)
        index = value.expand((*shape[:-1], 1))
        return self.logits.expand(shape).gather(-1, index).squeeze(-1)

    def entropy(self) -> Tensor:
        logits = self.logits.clamp(min=api.finfo(self.logits.dtype).min)
        return -(logits * self.probs).sum(-1)

    def enumerate_support(self, expand: bool = True) -> Tensor:
        """The class indices along a new first dim (broadcast over the batch with ``expand``)."""
        values = api.arange(self._num_events, device=self._param.device)
        values = values.reshape((-1,) + (1,) * len(self._batch_shape))
        return values.expand((-1, *self._batch_shape)) if expand else values
