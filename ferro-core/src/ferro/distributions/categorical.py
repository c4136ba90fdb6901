"""``Categorical(probs=... | logits=...)``: one of ``K`` classes, with probabilities along the last dim; and
its one-hot forms ``OneHotCategorical`` and ``OneHotCategoricalStraightThrough``."""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import cached_property

from .. import _api as api
from .._api import Size, Tensor
from ..nn import functional as nnf
from . import constraints
from ._probs import one_of
from .distribution import Distribution
from .utils import clamp_probs

__all__ = ["Categorical", "OneHotCategorical", "OneHotCategoricalStraightThrough"]


class Categorical(Distribution):
    """Class ``i`` with probability ``probs[..., i]`` (normalized to sum 1) or ``softmax(logits)[..., i]``;
    the dims before the last are the batch."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    has_enumerate_support = True

    def __init__(self, probs: Tensor | None = None, logits: Tensor | None = None,
                 validate_args: bool | None = None) -> None:
        self._given, value = one_of(probs, logits)
        if value.ndim < 1:
            raise ValueError(f"`{self._given}` parameter must be at least one-dimensional.")
        if probs is not None:
            self.probs = value / value.sum(-1, keepdim=True)
        else:
            self.logits = value - value.logsumexp(dim=-1, keepdim=True)
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
    def _param(self) -> Tensor:
        return self.__dict__[self._given]

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self) -> constraints.Constraint:
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
        value = self._checked(value).long().unsqueeze(-1)
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


class OverCategorical:
    """The parameters of a distribution built on a :class:`Categorical` (its ``_categorical``)."""

    _categorical: Categorical

    @property
    def probs(self) -> Tensor:
        """The probability of each class."""
        return self._categorical.probs

    @property
    def logits(self) -> Tensor:
        """The log-probability of each class."""
        return self._categorical.logits

    @property
    def param_shape(self) -> Size:
        """The shape of the parameter given."""
        return self._categorical.param_shape


class OneHotCategorical(OverCategorical, Distribution):
    """A :class:`Categorical` whose draws are one-hot vectors of length ``K`` (the event)."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.one_hot
    has_enumerate_support = True

    def __init__(self, probs: Tensor | None = None, logits: Tensor | None = None,
                 validate_args: bool | None = None) -> None:
        self._categorical = Categorical(probs, logits)
        super().__init__(self._categorical.batch_shape, self._categorical.param_shape[-1:], validate_args)

    def _expanded(self, source: Distribution, batch_shape: Size) -> None:
        self._categorical = self._categorical.expand(batch_shape)  # type: ignore[assignment]

    @property
    def _param(self) -> Tensor:
        return self._categorical._param

    @property
    def mean(self) -> Tensor:
        return self._categorical.probs

    @property
    def mode(self) -> Tensor:
        probs = self._categorical.probs
        return nnf.one_hot(probs.argmax(-1), probs.shape[-1]).to(probs.dtype)

    @property
    def variance(self) -> Tensor:
        return self._categorical.probs * (1 - self._categorical.probs)

    def sample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        probs = self._categorical.probs
        indices = self._categorical.sample(sample_shape)
        return nnf.one_hot(indices, self._categorical._num_events).to(probs.dtype)

    def log_prob(self, value: Tensor) -> Tensor:
        value = self._checked(value)
        return self._categorical.log_prob(value.argmax(-1))

    def entropy(self) -> Tensor:
        return self._categorical.entropy()

    def enumerate_support(self, expand: bool = True) -> Tensor:
        """The ``K`` one-hot vectors along a new first dim."""
        n = self._event_shape[0]
        values = api.eye(n, dtype=self._param.dtype, device=self._param.device)
        values = values.reshape((n,) + (1,) * len(self._batch_shape) + (n,))
        return values.expand((n, *self._batch_shape, n)) if expand else values


class OneHotCategoricalStraightThrough(OneHotCategorical):
    """:class:`OneHotCategorical` with the straight-through gradient: ``rsample`` is the one-hot draw in
    value and has the gradient of ``probs``."""

    has_rsample = True

    def rsample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        samples = self.sample(sample_shape)
        probs = self._categorical.probs
        return samples + (probs - probs.detach())
